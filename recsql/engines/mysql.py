"""Run recsql's query on MySQL 8 / MariaDB >= 10.4 through a PyMySQL (or compatible DB-API)
connection. Text id columns are compared with the binary collation utf8mb4_bin (see
recsql/dialects.py), so ids differing only in case stay distinct as on every other engine."""
from __future__ import annotations

import pandas as pd

from ..sources import Source
from .base import Runner, frame_from_cursor

_TYPE_NAMES = {0: "DECIMAL", 1: "TINYINT", 2: "SMALLINT", 3: "INT", 4: "FLOAT", 5: "DOUBLE", 8: "BIGINT",
               9: "MEDIUMINT", 246: "DECIMAL", 15: "VARCHAR", 253: "VARCHAR", 254: "CHAR", 252: "TEXT",
               245: "JSON", 10: "DATE", 12: "DATETIME", 7: "TIMESTAMP", 16: "BIT"}


class MySQLRunner(Runner):
    name = "MySQL/MariaDB"
    dialect = "mysql"

    def describe(self, source: Source) -> dict[str, str]:
        sql = f"SELECT * FROM {source.relation.sql('mysql')} LIMIT 0"
        try:
            with self.con.cursor() as cursor:
                cursor.execute(sql)
                described = cursor.description
        except Exception as err:  # noqa: BLE001 - any driver error: the input cannot be read
            raise self.missing(source, err) from None
        return {d[0]: _TYPE_NAMES.get(d[1], f"TYPE{d[1]}") for d in described}

    def fetch(self, sql: str) -> pd.DataFrame:
        try:
            with self.con.cursor() as cursor:
                cursor.execute(sql)
                return frame_from_cursor(cursor)
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None
