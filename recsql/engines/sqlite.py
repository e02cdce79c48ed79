"""Run recsql's query on SQLite through Python's ``sqlite3`` (window functions: SQLite >= 3.25;
LN/POWER: SQLite's math functions, registered from Python when the library lacks them)."""
from __future__ import annotations

import math
import sqlite3
from typing import Any

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
        sql = f"SELECT * FROM {source.relation.sql('sqlite')} LIMIT 1"
        try:
            cursor = self.con.execute(sql)
            row = cursor.fetchone()
        except sqlite3.Error as err:
            raise self.missing(source, err) from None
        names = [d[0] for d in cursor.description]
        # SQLite columns have no fixed type: take each column's storage class on a sample row.
        kinds = {int: "INTEGER", float: "REAL", str: "TEXT", bytes: "BLOB", type(None): "NULL"}
        return {n: kinds.get(type(v), "TEXT") for n, v in zip(names, row or [None] * len(names))}

    def fetch(self, sql: str) -> pd.DataFrame:
        try:
            return frame_from_cursor(self.con.execute(sql))
        except sqlite3.Error as err:
            raise self.failed(err) from None
