"""Run recsql's query on PostgreSQL through a psycopg (3) connection."""
from __future__ import annotations

from typing import Any

from .base import DBAPIRunner


class PostgresRunner(DBAPIRunner):
    name = "PostgreSQL"
    dialect = "postgres"

    def type_name(self, description: Any) -> str:
        known = self.con.adapters.types.get(description.type_code)
        return known.name if known else str(description.type_code)

    def finish(self) -> None:
        self.con.rollback()  # recsql only reads: end the transaction psycopg opened
