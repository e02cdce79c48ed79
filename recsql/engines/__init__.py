"""One small runner per engine, all with the interface of :class:`recsql.engines.base.Runner`.

:func:`runner_for` picks the runner from the connection's type; engines are imported lazily, so
only DuckDB is a hard dependency.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

from ..errors import RecsqlError
from .base import Runner

# top-level module of the connection object's class -> (runner module, runner class)
ENGINES: dict[str, tuple[str, str]] = {
    "duckdb": ("duckdb", "DuckDBRunner"),
    "sqlite3": ("sqlite", "SQLiteRunner"),
    "psycopg": ("postgres", "PostgresRunner"),
    "pymysql": ("mysql", "MySQLRunner"),
    "MySQLdb": ("mysql", "MySQLRunner"),
    "mariadb": ("mysql", "MySQLRunner"),
    "pyspark": ("spark", "SparkRunner"),
    "chdb": ("clickhouse", "ClickHouseRunner"),
    "datafusion": ("datafusion", "DataFusionRunner"),
}


def _unwrapped(con: Any) -> Any:
    """The DuckDB connection inside dbt-duckdb's cursor wrapper (the ``session`` of a dbt-duckdb Python
    model: README, "dbt"), else ``con`` itself."""
    if type(con).__module__.startswith("dbt.adapters.duckdb."):
        inner = getattr(con, "_cursor", None)
        if type(inner).__module__.split(".")[0].lstrip("_") == "duckdb":
            return inner
    return con


def runner_for(con: Any, *, progress: bool = False) -> Runner:
    """The runner for ``con``: None or a ``.duckdb`` path -> DuckDB; else by the connection's type."""
    from .duckdb import DuckDBRunner
    if con is None or isinstance(con, (str, os.PathLike)):
        return DuckDBRunner(con, progress=progress)
    con = _unwrapped(con)
    top = type(con).__module__.split(".")[0].lstrip("_")  # DuckDB's class lives in `_duckdb`
    if top not in ENGINES:
        known = "a DuckDB connection or .duckdb path, sqlite3, psycopg, PyMySQL/MariaDB, SparkSession, chdb session, DataFusion SessionContext"
        raise RecsqlError(f"con: recsql cannot run on a {type(con).__module__}.{type(con).__name__}; it takes {known}")
    module, cls = ENGINES[top]
    runner_cls = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    if module == "duckdb":
        return runner_cls(con, progress=progress)
    try:  # a closed connection or stopped session fails on its first statement: say so, not "table missing"
        runner = runner_cls(con)
        runner.fetch_rows("SELECT 1")
    except Exception as err:  # noqa: BLE001 - every driver's own "closed" error
        if isinstance(err, RecsqlError) and str(err).startswith("con:"):  # the runner named the connection's state
            raise
        message = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise RecsqlError(f"con: the {top}.{type(con).__name__} cannot be used ({message}); pass an open "
                          "connection") from None
    return runner
