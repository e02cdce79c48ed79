"""Run recsql's query on PostgreSQL through a psycopg (3) connection.

Inside the user's open transaction, every statement of recsql's runs after a savepoint and is rolled
back to it: a failure does not abort the user's transaction, and nothing recsql sets (``SET LOCAL``)
outlives it. Outside one, the transaction psycopg opens for the statement is rolled back."""
from __future__ import annotations

from typing import Any, Callable

from ..errors import RecsqlError
from .base import DBAPIRunner

_SAVEPOINT = "recsql_read"


class PostgresRunner(DBAPIRunner):
    name = "PostgreSQL"
    dialect = "postgres"

    def type_name(self, description: Any) -> str:
        """The column's type with its modifier, as PostgreSQL writes it: ``numeric(20,4)``, ``numeric``."""
        known = self.con.adapters.types.get(description.type_code)
        name = known.name if known else str(description.type_code)
        if name == "numeric" and description.precision is not None:
            return f"numeric({description.precision},{description.scale or 0})"
        return name

    def guard(self, cursor: Any) -> Callable[[Any], None]:
        from psycopg.pq import TransactionStatus
        status = self.con.info.transaction_status
        if status == TransactionStatus.INERROR:
            raise RecsqlError("con: the transaction open on the PostgreSQL connection has failed (an earlier "
                              "statement raised an error); roll it back (con.rollback()) before evaluating")
        if status == TransactionStatus.INTRANS:
            cursor.execute(f"SAVEPOINT {_SAVEPOINT}")

            def back(cursor: Any) -> None:
                cursor.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                cursor.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            return back
        return lambda cursor: self.con.rollback()  # end the transaction psycopg opened for recsql's statement
