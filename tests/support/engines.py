"""Test harness: load small pandas tables into each real engine and hand out its connection.

Each engine class creates tables with explicit column types (BIGINT / DOUBLE / text) from a
DataFrame and returns the name to pass to ``recsql.evaluate(..., con=engine.con)``."""
from __future__ import annotations

import itertools
import math
import sqlite3
from contextlib import ExitStack
from typing import Any

import duckdb
import pandas as pd

_names = itertools.count()


def sql_type(series: pd.Series, kinds: dict[str, str]) -> str:
    if isinstance(series.dtype, pd.StringDtype):
        return kinds["text"]
    if pd.api.types.is_bool_dtype(series):
        return kinds["int"]
    if pd.api.types.is_integer_dtype(series):
        return kinds["int"]
    if pd.api.types.is_float_dtype(series):
        return kinds["float"]
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
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value.item() if hasattr(value, "item") else value)


class Engine:
    """Base: ``load`` creates a table from a DataFrame and returns its name."""

    name = "engine"
    dialect = "duckdb"
    kinds = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR"}
    floats: dict[str, str] = {"nan": "CAST('NaN' AS DOUBLE)", "inf": "CAST('Infinity' AS DOUBLE)",
                              "-inf": "CAST('-Infinity' AS DOUBLE)"}

    def __init__(self, con: Any) -> None:
        self.con = con

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


class DuckDBEngine(Engine):
    name = "duckdb"
    dialect = "duckdb"


class SQLiteEngine(Engine):
    name = "sqlite"
    dialect = "sqlite"
    kinds = {"int": "INTEGER", "float": "REAL", "text": "TEXT"}
    floats = {"nan": "NULL", "inf": "9e999", "-inf": "-9e999"}  # SQLite itself stores a NaN as NULL


class DBAPIEngine(Engine):
    """A server reached through a DB-API driver: every statement committed."""

    def execute(self, sql: str) -> None:
        with self.con.cursor() as cursor:
            cursor.execute(sql)
        self.con.commit()


class PostgresEngine(DBAPIEngine):
    name = "postgres"
    dialect = "postgres"
    kinds = {"int": "BIGINT", "float": "DOUBLE PRECISION", "text": "TEXT"}
    floats = {"nan": "'NaN'::float8", "inf": "'Infinity'::float8", "-inf": "'-Infinity'::float8"}


class MariaDBEngine(DBAPIEngine):
    name = "mysql"
    dialect = "mysql"
    kinds = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR(255)"}
    floats: dict[str, str] = {}  # MariaDB cannot store NaN or infinity


class SparkEngine(Engine):
    name = "spark"
    dialect = "spark"

    def execute(self, sql: str) -> None:
        self.con.sql(sql)

    def drop(self, name: str) -> None:
        self.con.catalog.dropTempView(name)

    def load(self, frame: pd.DataFrame, text: str | None = None, name: str | None = None) -> str:
        from pyspark.sql import types as T
        kinds = {"int": T.LongType(), "float": T.DoubleType(), "text": T.StringType()}
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
    kinds = {"int": "Int64", "float": "Float64", "text": "String"}
    floats = {"nan": "nan", "inf": "inf", "-inf": "-inf"}

    table_options = " ENGINE = Memory"

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
        stack.callback(con.close)
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


ENGINES = ["duckdb", "sqlite", "postgres", "mysql", "spark", "clickhouse", "datafusion"]
