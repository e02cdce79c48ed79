"""Run recsql's query on DuckDB: an in-memory database, a user's connection, or a ``.duckdb`` file
opened read-only. The runner works on its own cursor, so nothing it registers stays on the
user's connection, and never writes to the database."""
from __future__ import annotations

import os
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import RecsqlError
from ..sources import Source


class DuckDBRunner:
    """Owns one cursor for one evaluation; use as a context manager."""

    dialect = "duckdb"

    def __init__(self, con: Any = None, *, progress: bool = False) -> None:
        self._owned = None
        if con is None:
            self._owned = duckdb.connect()
            base = self._owned
        elif isinstance(con, (str, os.PathLike)):
            path = os.fspath(con)
            if not os.path.isfile(path):
                raise RecsqlError(f"con: database file {path!r} does not exist; pass an existing .duckdb file")
            try:
                self._owned = duckdb.connect(path, read_only=True)
            except duckdb.Error as err:
                raise RecsqlError(f"con: cannot open {path!r} as a DuckDB database read-only: {err}") from None
            base = self._owned
        elif isinstance(con, duckdb.DuckDBPyConnection):
            base = con
        else:
            raise RecsqlError(f"con: expected a DuckDB connection or a .duckdb file path, got {type(con).__name__}")
        self.cursor = base.cursor()
        if progress:
            self.cursor.execute("SET enable_progress_bar = true")

    def __enter__(self) -> "DuckDBRunner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.cursor.close()
        if self._owned is not None:
            self._owned.close()

    def describe(self, source: Source) -> dict[str, str]:
        """Column name -> DuckDB type of a bound input; a clear error when it cannot be read."""
        sql = f"DESCRIBE SELECT * FROM {source.relation.sql('duckdb')}"
        try:
            rows = self.cursor.execute(sql).fetchall()
        except duckdb.CatalogException:
            raise RecsqlError(f"{source.role}: {source.described} does not exist in the database; "
                              "check the name, or pass a file path or a DataFrame") from None
        except duckdb.Error as err:
            first = str(err).splitlines()[0]
            raise RecsqlError(f"{source.role}: cannot read {source.described}: {first}") from None
        return {name: typ for name, typ, *_ in rows}

    def fetch(self, sql: str) -> pa.Table:
        """Run one statement and return its rows as an Arrow table."""
        relation = self.cursor.sql(sql)
        to_arrow = getattr(relation, "to_arrow_table", None) or relation.arrow  # DuckDB 2 / DuckDB 1
        return to_arrow()

    def fetch_rows(self, sql: str) -> list[tuple]:
        return self.cursor.execute(sql).fetchall()
