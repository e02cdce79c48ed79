"""Run recsql's query on SQLite through Python's ``sqlite3`` (window functions: SQLite >= 3.25;
LN/POWER: SQLite's math functions, registered from Python when the library lacks them)."""
from __future__ import annotations

import math
import sqlite3

import pandas as pd

from ..sources import Source
from .base import Runner, frame_from_cursor


class SQLiteRunner(Runner):
    name = "SQLite"
    dialect = "sqlite"

    def __init__(self, con: sqlite3.Connection) -> None:
        super().__init__(con)
        try:
            con.execute("SELECT LN(2), POWER(2, 3)").fetchall()
        except sqlite3.OperationalError:  # a SQLite built without math functions
            con.create_function("LN", 1, math.log, deterministic=True)
            con.create_function("POWER", 2, math.pow, deterministic=True)

    def describe(self, source: Source) -> dict[str, str]:
        """SQLite columns have no fixed type: each column's storage class on a sample row, else its
        declared type's affinity (SQLite's rules: INT -> INTEGER, CHAR/CLOB/TEXT -> TEXT, REAL/FLOA/DOUB -> REAL)."""
        sql = f"SELECT * FROM {source.relation.sql('sqlite')} LIMIT 1"
        try:
            cursor = self.con.execute(sql)
            row = cursor.fetchone()
        except sqlite3.Error as err:
            raise self.missing(source, err) from None
        names = [d[0] for d in cursor.description]
        declared = self._declared(source)
        kinds = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB"}
        values = row or [None] * len(names)
        return {n: kinds.get(type(v)) or _affinity(declared.get(n, "")) for n, v in zip(names, values)}

    def _declared(self, source: Source) -> dict[str, str]:
        table = source.relation
        schema = table.args.get("db")
        pragma = f"PRAGMA {schema.sql('sqlite') + '.' if schema else ''}table_xinfo({table.this.sql('sqlite')})"
        try:
            return {row[1]: row[2] or "" for row in self.con.execute(pragma).fetchall()}
        except sqlite3.Error:
            return {}

    def fetch(self, sql: str) -> pd.DataFrame:
        try:
            return frame_from_cursor(self.con.execute(sql))
        except sqlite3.Error as err:
            raise self.failed(err) from None


def _affinity(declared: str) -> str:
    upper = declared.upper()
    if "INT" in upper:
        return "INTEGER"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC" if upper else "UNKNOWN"
