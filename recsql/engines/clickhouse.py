"""Run recsql's query on ClickHouse in-process through a chdb session (``chdb.session.Session``).
The rendered query carries ``SETTINGS join_use_nulls = 1`` (recsql/dialects.py): without it
ClickHouse fills unmatched LEFT JOIN columns with 0 / '' instead of NULL."""
from __future__ import annotations

import pandas as pd

from ..sources import Source
from .base import Runner


class ClickHouseRunner(Runner):
    name = "ClickHouse (chdb)"
    dialect = "clickhouse"

    def describe(self, source: Source) -> dict[str, str]:
        try:
            rows = self.con.query(f"DESCRIBE (SELECT * FROM {source.relation.sql('clickhouse')})", "DataFrame")
        except Exception as err:  # noqa: BLE001
            raise self.missing(source, err) from None
        return dict(zip(rows["name"], rows["type"]))

    def fetch(self, sql: str) -> pd.DataFrame:
        try:
            return self.con.query(sql, "DataFrame")
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None
