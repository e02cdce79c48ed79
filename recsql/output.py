"""Writing results into a DuckDB database: all tables in one transaction (CREATE OR REPLACE), and
never over a table the evaluation read.

>>> import duckdb, pandas as pd
>>> con = duckdb.connect()
>>> write_tables(con, {"metrics": pd.DataFrame({"ndcg@10": [0.5]})}, protected=("recs",))
>>> con.execute("SELECT * FROM metrics").fetchall()
[(0.5,)]
"""
from __future__ import annotations

import os
import uuid
from typing import Any, Iterable

import duckdb
import pandas as pd

from .errors import RecsqlError
from .sources import table_relation


def _key(name: str) -> tuple[str, str]:
    """(schema, table) of a name, lower-cased, DuckDB's default schema filled in."""
    parts = [p.lower() for p in name.split(".")]
    return ("main", parts[0]) if len(parts) == 1 else (parts[-2], parts[-1])


def write_tables(con: Any, tables: dict[str, pd.DataFrame], protected: Iterable[str] = ()) -> None:
    """``CREATE OR REPLACE TABLE name AS <frame>`` for every entry, in one transaction."""
    guarded = {_key(p) for p in protected}
    for name in tables:
        if _key(name) in guarded:
            raise RecsqlError(f"output table {name!r} is an input of this evaluation; choose another name "
                              "(recsql never replaces its inputs)")
    owned = None
    if isinstance(con, (str, os.PathLike)):
        owned = con = duckdb.connect(os.fspath(con))
    cursor = con.cursor()
    try:
        cursor.execute("BEGIN TRANSACTION")
        try:
            for name, frame in tables.items():
                view = f"__recsql_out_{uuid.uuid4().hex[:12]}"
                cursor.register(view, frame)
                cursor.execute(f"CREATE OR REPLACE TABLE {table_relation(name).sql('duckdb')} AS SELECT * FROM {view}")
                cursor.unregister(view)
            cursor.execute("COMMIT")
        except duckdb.Error as err:
            cursor.execute("ROLLBACK")
            raise RecsqlError(f"could not write {', '.join(map(repr, tables))}: {str(err).splitlines()[0]}; "
                              "nothing was written") from None
    finally:
        cursor.close()
        if owned is not None:
            owned.close()
