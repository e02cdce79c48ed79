"""Run recsql's query on PostgreSQL through a psycopg (3) connection."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..sources import Source
from .base import Runner, frame_from_cursor


class PostgresRunner(Runner):
    name = "PostgreSQL"
    dialect = "postgres"

    def describe(self, source: Source) -> dict[str, str]:
        sql = f"SELECT * FROM {source.relation.sql('postgres')} LIMIT 0"
        try:
            with self.con.cursor() as cursor:
                cursor.execute(sql)
                described = cursor.description
        except Exception as err:  # noqa: BLE001 - any driver error: the input cannot be read
            self.con.rollback()
            raise self.missing(source, err) from None
        types = self.con.adapters.types
        return {d.name: (types.get(d.type_code).name if types.get(d.type_code) else str(d.type_code)) for d in described}

    def fetch(self, sql: str) -> pd.DataFrame:
        try:
            with self.con.cursor() as cursor:
                cursor.execute(sql)
                frame = frame_from_cursor(cursor)
            self.con.rollback()  # read-only: end the transaction the query opened
            return frame
        except Exception as err:  # noqa: BLE001
            self.con.rollback()
            raise self.failed(err) from None
