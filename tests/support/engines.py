"""Test harness: load small pandas tables into each real engine and hand out its connection.

Each engine class creates tables with explicit column types (BIGINT / DOUBLE / text / timestamp)
from a DataFrame and returns the name to pass to ``recsql.evaluate(..., con=engine.con)``. How each
engine is reached, loaded, listed and held in a transaction lives here, in its class; what each can
do is in support/capabilities.py (``engine.can(flag)``)."""
from __future__ import annotations

import itertools
import math
import sqlite3
from contextlib import ExitStack
from datetime import datetime
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from support.capabilities import ENGINES, has

_names = itertools.count()


def sql_type(series: pd.Series, kinds: dict[str, str]) -> str:
    if isinstance(series.dtype, pd.StringDtype):
        return kinds["text"]
    if isinstance(series.dtype, pd.BooleanDtype):  # pandas' nullable booleans: the engine's boolean type, if any
        return kinds.get("bool", kinds["int"])
    if pd.api.types.is_bool_dtype(series):
        return kinds["int"]
    if pd.api.types.is_integer_dtype(series):
        return kinds["int"]
    if pd.api.types.is_float_dtype(series):
        return kinds["float"]
    if pd.api.types.is_datetime64_any_dtype(series):
        return kinds["time"]
    return kinds["text"]


SPECIAL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def literal(value: Any, floats: dict[str, str] | None = None) -> str:
    """A SQL literal; NaN/±inf use the engine's spelling (``floats``), None is NULL."""
    if value is None or value is pd.NA:
        return "NULL"
    if isinstance(value, float) and not math.isfinite(value):
        key = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        if not floats or key not in floats:
            raise ValueError(f"this engine cannot store {key}")
        return floats[key]
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime):  # pandas' Timestamp too
        return value.strftime("'%Y-%m-%d %H:%M:%S'")
    return repr(value.item() if hasattr(value, "item") else value)


class Engine:
    """Base: ``load`` creates a table from a DataFrame and returns its name."""

    name = "engine"
    dialect = "duckdb"
    kinds = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR", "time": "TIMESTAMP", "bool": "BOOLEAN"}
    floats: dict[str, str] = {"nan": "CAST('NaN' AS DOUBLE)", "inf": "CAST('Infinity' AS DOUBLE)",
                              "-inf": "CAST('-Infinity' AS DOUBLE)"}

    def __init__(self, con: Any) -> None:
        self.con = con

    def can(self, flag: str) -> bool:
        """Whether this engine has capability ``flag`` (support/capabilities.py)."""
        return has(self.name, flag)

    def new_name(self) -> str:
        return f"t{next(_names)}"

    def ident(self, name: str) -> str:
        """A quoted identifier in this engine's dialect (any characters)."""
        from sqlglot import exp
        return exp.to_identifier(name, quoted=True).sql(self.dialect)

    def column_type(self, series: pd.Series, text: str | None) -> str:
        kind = sql_type(series, self.kinds)
        return text if text and kind == self.kinds["text"] else kind

    def rows(self, frame: pd.DataFrame) -> str:
        return ", ".join("(" + ", ".join(literal(v, self.floats) for v in row) + ")"
                         for row in frame.astype(object).itertuples(index=False))

    table_options = ""  # after CREATE TABLE's column list (ClickHouse: the table engine)

    def create(self, name: str, frame: pd.DataFrame, text: str | None = None) -> None:
        cols = ", ".join(f"{self.ident(c)} {self.column_type(frame[c], text)}" for c in frame.columns)
        self.execute(f"CREATE TABLE {self.ident(name)} ({cols}){self.table_options}")
        if len(frame):
            self.execute(f"INSERT INTO {self.ident(name)} VALUES {self.rows(frame)}")

    def load(self, frame: pd.DataFrame, text: str | None = None, name: str | None = None) -> str:
        name = name or self.new_name()
        self.create(name, frame, text)
        return name

    def drop(self, name: str) -> None:
        self.execute(f"DROP TABLE {self.ident(name)}")

    def exists(self, name: str) -> bool:
        from recsql.engines import runner_for
        from recsql.sources import Source, table_relation
        with runner_for(self.con) as runner:
            try:
                runner.describe(Source("t", table_relation(name)))
                return True
            except Exception:  # noqa: BLE001
                return False

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def execute_uncommitted(self, sql: str) -> None:
        """A statement of the user's open transaction, not committed ("transactions")."""
        self.con.execute(sql)

    def tables(self) -> list:
        """The tables and views there are, sorted: to tell that recsql left nothing behind."""
        return self.con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()

    def frame(self, frame: pd.DataFrame) -> Any:
        """``frame`` as this engine's own DataFrame, for the engines with "dataframes"."""
        raise NotImplementedError(f"{self.name} takes no DataFrames")


class DuckDBEngine(Engine):
    name = "duckdb"
    dialect = "duckdb"

    def frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame

    def begin(self) -> None:
        self.con.begin()

    def in_transaction(self) -> bool:
        """One transaction id for two statements."""
        return self.con.execute("SELECT txid_current()").fetchone() == self.con.execute("SELECT txid_current()").fetchone()

    def drop_temporary(self, name: str) -> None:
        self.execute(f"DROP TABLE temp.{name}")


class SQLiteEngine(Engine):
    name = "sqlite"
    dialect = "sqlite"
    kinds = {"int": "INTEGER", "float": "REAL", "text": "TEXT", "time": "TEXT"}  # no date type: dates are text
    floats = {"nan": "NULL", "inf": "9e999", "-inf": "-9e999"}  # SQLite itself stores a NaN as NULL

    def tables(self) -> list:
        return self.con.execute("SELECT name FROM sqlite_master ORDER BY 1").fetchall()

    def begin(self) -> None:
        self.con.commit()  # the test's own inserts opened one
        self.con.execute("BEGIN")

    def in_transaction(self) -> bool:
        return self.con.in_transaction

    def drop_temporary(self, name: str) -> None:
        self.execute(f"DROP TABLE temp.{name}")


class DBAPIEngine(Engine):
    """A server reached through a DB-API driver: every statement committed."""

    def execute(self, sql: str) -> None:
        with self.con.cursor() as cursor:
            cursor.execute(sql)
        self.con.commit()

    def execute_uncommitted(self, sql: str) -> None:
        with self.con.cursor() as cursor:
            cursor.execute(sql)

    def tables(self) -> list:
        with self.con.cursor() as cursor:
            cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema NOT IN "
                           "('information_schema', 'pg_catalog', 'mysql', 'performance_schema', 'sys') ORDER BY 1")
            return cursor.fetchall()

    def begin(self) -> None:
        """psycopg and PyMySQL open a transaction with the first statement."""


class PostgresEngine(DBAPIEngine):
    name = "postgres"
    dialect = "postgres"
    kinds = {"int": "BIGINT", "float": "DOUBLE PRECISION", "text": "TEXT", "time": "timestamp", "bool": "BOOLEAN"}
    floats = {"nan": "'NaN'::float8", "inf": "'Infinity'::float8", "-inf": "'-Infinity'::float8"}
    loose_text = 'TEXT COLLATE "und-x-icu"'  # a locale collation ("collations")

    def tables(self) -> list:
        rows = super().tables()
        self.con.rollback()
        return rows

    def in_transaction(self) -> bool:
        return self.con.info.transaction_status.name == "INTRANS"

    def drop_temporary(self, name: str) -> None:
        self.execute(f"DROP TABLE pg_temp.{name}")


class MariaDBEngine(DBAPIEngine):
    name = "mysql"
    dialect = "mysql"
    kinds = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR(255)", "time": "DATETIME", "bool": "BOOLEAN"}
    floats: dict[str, str] = {}  # MariaDB cannot store NaN or infinity
    loose_text = "VARCHAR(255) COLLATE utf8mb4_general_ci"  # case-insensitive ("collations")

    def in_transaction(self) -> bool:
        with self.con.cursor() as cursor:
            cursor.execute("SELECT @@in_transaction")
            return cursor.fetchone()[0] == 1

    def drop_temporary(self, name: str) -> None:
        self.execute(f"DROP TEMPORARY TABLE {name}")


class SparkEngine(Engine):
    name = "spark"
    dialect = "spark"

    def execute(self, sql: str) -> None:
        self.con.sql(sql)

    def drop(self, name: str) -> None:
        self.con.catalog.dropTempView(name)

    def tables(self) -> list:
        return sorted(t.name for t in self.con.catalog.listTables())

    def frame(self, frame: pd.DataFrame) -> Any:
        return self.con.createDataFrame(frame)

    def load(self, frame: pd.DataFrame, text: str | None = None, name: str | None = None) -> str:
        from pyspark.sql import types as T
        kinds = {"int": T.LongType(), "float": T.DoubleType(), "text": T.StringType(), "time": T.TimestampType(),
                 "bool": T.BooleanType()}
        schema = T.StructType([T.StructField(c, kinds[{v: k for k, v in self.kinds.items()}[sql_type(frame[c], self.kinds)]])
                               for c in frame.columns])
        rows = [tuple(None if v is pd.NA else v.item() if hasattr(v, "item") else v for v in row)
                for row in frame.astype(object).itertuples(index=False)]
        name = name or self.new_name()
        self.con.createDataFrame(rows, schema).createOrReplaceTempView(name)
        return name


class ClickHouseEngine(Engine):
    name = "clickhouse"
    dialect = "clickhouse"
    kinds = {"int": "Int64", "float": "Float64", "text": "String", "time": "DateTime", "bool": "Bool"}
    floats = {"nan": "nan", "inf": "inf", "-inf": "-inf"}

    table_options = " ENGINE = Memory"

    def tables(self) -> list:
        return self.con.query("SHOW TABLES", "DataFrame").values.tolist()

    def column_type(self, series: pd.Series, text: str | None) -> str:
        kind = sql_type(series, self.kinds)
        return f"Nullable({kind})" if series.isna().any() else kind

    def execute(self, sql: str) -> None:
        self.con.query(sql)


class DataFusionEngine(Engine):
    name = "datafusion"
    dialect = "postgres"

    def drop(self, name: str) -> None:
        self.con.deregister_table(name)

    def tables(self) -> list:
        return sorted(self.con.catalog().schema().names())

    def load(self, frame: pd.DataFrame, text: str | None = None, name: str | None = None) -> str:
        import pyarrow as pa
        name = name or self.new_name()
        table = pa.Table.from_pandas(frame, preserve_index=False)
        self.con.register_record_batches(name, [table.to_batches() or [pa.RecordBatch.from_pandas(frame, preserve_index=False)]])
        return name


def start(name: str, stack: ExitStack) -> Engine:
    """Start (or connect to) engine ``name``; everything started is closed by ``stack``."""
    if name == "duckdb":
        con = duckdb.connect()
        stack.callback(con.close)
        return DuckDBEngine(con)
    if name == "sqlite":
        con = sqlite3.connect(":memory:")
        stack.callback(con.close)
        return SQLiteEngine(con)
    if name == "postgres":
        import psycopg
        from support.servers import postgres_server
        con = psycopg.connect(**stack.enter_context(postgres_server()))
        stack.callback(con.close)
        return PostgresEngine(con)
    if name == "mysql":
        import pymysql
        from support.servers import mariadb_server
        con = pymysql.connect(**stack.enter_context(mariadb_server()))
        stack.callback(lambda: con.open and con.close())  # PyMySQL refuses a second close: a test may close it
        return MariaDBEngine(con)
    if name == "spark":
        from support.servers import spark_session
        return SparkEngine(stack.enter_context(spark_session("recsql-tests", 2)))
    if name == "clickhouse":
        from chdb import session
        sess = session.Session()
        stack.callback(sess.close)
        return ClickHouseEngine(sess)
    if name == "datafusion":
        import datafusion
        return DataFusionEngine(datafusion.SessionContext())
    raise ValueError(name)


__all__ = ["ENGINES", "Engine", "start"]
