"""Run recsql's query on MySQL 8 / MariaDB >= 10.4 through a PyMySQL (or compatible DB-API)
connection. Text id columns are compared with the binary collation utf8mb4_bin (see
recsql/dialects.py), so ids differing only in case stay distinct as on every other engine.

recsql's statements run in the user's open transaction when there is one (a failed statement does not
abort a MySQL transaction); otherwise the transaction the server opened for them is rolled back."""
from __future__ import annotations

from functools import cached_property
from typing import Any, Callable

import pandas as pd

from ..dialects import dialect
from .base import DBAPIRunner

# MySQL protocol column type codes -> names (the families recsql/validate.py tells apart)
_IN_TRANS = 1  # SERVER_STATUS_IN_TRANS in the server's status flags
_TYPE_NAMES = {0: "DECIMAL", 1: "TINYINT", 2: "SMALLINT", 3: "INT", 4: "FLOAT", 5: "DOUBLE", 8: "BIGINT",
               9: "MEDIUMINT", 246: "DECIMAL", 15: "VARCHAR", 253: "VARCHAR", 254: "CHAR", 252: "TEXT",
               245: "JSON", 10: "DATE", 12: "DATETIME", 7: "TIMESTAMP", 16: "BIT"}


class MySQLRunner(DBAPIRunner):
    name = "MySQL/MariaDB"
    dialect = "mysql"

    def type_name(self, description: Any) -> str:
        """The type's name; a DECIMAL with its precision and scale, so that it is ranked exactly
        (validate.order_type). PyMySQL gives the display length (the digits, a point, a sign) as the
        precision: never fewer than the digits, which is all the order key needs."""
        name = _TYPE_NAMES.get(description[1], f"TYPE{description[1]}")
        length, scale = description[4], description[5]
        if name == "DECIMAL" and length:
            return f"DECIMAL({min(length, 65)},{scale or 0})"
        return name

    def guard(self, cursor: Any) -> Callable[[Any], None]:
        status = getattr(self.con, "server_status", None)
        if status is None or status & _IN_TRANS:  # the user's transaction (or unknown): leave it open
            return lambda cursor: None
        return lambda cursor: self.con.rollback()

    def fetch_whole(self, sql: str) -> pd.DataFrame:
        """The rows of ``sql``, run as one statement with the dialect's session settings."""
        with self.settings_applied():
            return super().fetch_whole(sql)

    @property
    def in_steps(self) -> bool:  # type: ignore[override]
        """On MariaDB, which plans a CTE anew at each read (MySQL 8 cannot read a temporary table twice in one
        statement: "Can't reopen table")."""
        return self._mariadb

    @property
    def long_in_steps(self) -> bool:  # type: ignore[override]
        """On MariaDB, a statement of more CTEs, or nesting more SELECTs through them, than one statement holds
        (rendered for :attr:`statement_dialect`; recsql/dialects.py: at most 64 CTEs, each step nesting at
        most 8) runs in steps."""
        return self._mariadb

    def materialize(self, name: str, sql: str) -> None:
        """A ``TEMPORARY`` table of the session, Aria (not transactional, so recsql's rollback of its statements
        keeps its rows)."""
        try:
            with self.settings_applied():
                self._execute(f"CREATE TEMPORARY TABLE `{name}` ENGINE = Aria AS {sql}")
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None

    def release(self, name: str) -> None:
        self._execute(f"DROP TEMPORARY TABLE IF EXISTS `{name}`")

    @cached_property
    def _mariadb(self) -> bool:
        with self.con.cursor() as cursor:
            cursor.execute("SELECT VERSION()")
            return "mariadb" in str(cursor.fetchall()[0][0]).lower()

    def query_settings(self) -> dict[str, str]:
        """On MariaDB, the dialect's settings (hash joins; recsql/dialects.py says why), for the query alone;
        MySQL refuses to parse a variable it does not have."""
        return dict(dialect(self.dialect).settings) if self._mariadb else {}

    def needs_setting(self, name: str, current: str, wanted: str) -> bool:
        return int(current) < int(wanted)  # a session already at a higher level keeps it

    def read_settings(self, names: list[str]) -> dict[str, str]:
        with self.con.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(f"@@SESSION.{name}" for name in names))
            return {name: str(value) for name, value in zip(names, cursor.fetchall()[0])}

    def write_settings(self, values: dict[str, str]) -> None:
        with self.con.cursor() as cursor:
            for name, value in values.items():
                cursor.execute(f"SET SESSION {name} = {int(value)}")
