"""Run recsql's query on ClickHouse in-process through a chdb session (``chdb.session.Session``).
The rendered query carries ``SETTINGS join_use_nulls = 1`` (recsql/dialects.py): without it
ClickHouse fills unmatched LEFT JOIN columns with 0 / '' instead of NULL."""
from __future__ import annotations

import pandas as pd

from sqlglot import exp

from ..sources import Source
from .base import Runner


class ClickHouseRunner(Runner):
    name = "ClickHouse (chdb)"
    dialect = "clickhouse"

    in_steps = True  # it writes every CTE out where it is read

    def materialize(self, name: str, sql: str) -> None:
        try:
            self.con.query(f"CREATE TEMPORARY TABLE {_quoted(name)} ENGINE = Memory AS {sql}")
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None

    def release(self, name: str) -> None:
        self.con.query(f"DROP TEMPORARY TABLE IF EXISTS {_quoted(name)}")

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


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("clickhouse")
