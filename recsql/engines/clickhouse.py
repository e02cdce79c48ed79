"""Run recsql's query on ClickHouse in-process through a chdb session (``chdb.session.Session``).
The rendered query carries ``SETTINGS join_use_nulls = 1`` (recsql/dialects.py): without it
ClickHouse fills unmatched LEFT JOIN columns with 0 / '' instead of NULL. The session parses statements up to
16 MB (``max_query_size``) for recsql's statements alone, set back after."""
from __future__ import annotations

import pandas as pd

from sqlglot import exp

from ..dialects import dialect
from ..sources import Source
from .base import Runner


class ClickHouseRunner(Runner):
    name = "ClickHouse (chdb)"
    dialect = "clickhouse"

    in_steps = True  # it writes every CTE out where it is read
    long_in_steps = True  # and nests subqueries only to a depth (recsql/dialects.py)

    def materialize(self, name: str, sql: str) -> None:
        try:
            with self.settings_applied():
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

    def fetch_whole(self, sql: str) -> pd.DataFrame:
        """The rows of ``sql``, run as one statement (ClickHouse's limit on nested subqueries, which the
        intent-aware metrics' greedy ideal list passes past @20, sends a longer one to steps: :meth:`Runner.fetch`)."""
        try:
            with self.settings_applied():
                return self.con.query(sql, "DataFrame")
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None

    def query_settings(self) -> dict[str, str]:
        """The dialect's settings (a longer statement than ClickHouse parses by default: recsql/dialects.py), on
        the user's session for the query alone."""
        return dict(dialect(self.dialect).settings)

    def needs_setting(self, name: str, current: str, wanted: str) -> bool:
        return int(current) < int(wanted)  # a session that already parses longer statements keeps its size

    def read_settings(self, names: list[str]) -> dict[str, str]:
        listed = ", ".join(f"'{name}'" for name in names)
        rows = self.con.query(f"SELECT name, value FROM system.settings WHERE name IN ({listed})", "DataFrame")
        return dict(zip(rows["name"], rows["value"].astype(str)))

    def write_settings(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self.con.query(f"SET {name} = {int(value)}")


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("clickhouse")
