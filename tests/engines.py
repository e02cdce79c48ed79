"""Test harness: load small pandas tables into each real engine and hand out its connection.

Each engine class creates tables with explicit column types (BIGINT / DOUBLE / text) from a
DataFrame and returns the name to pass to ``recsql.evaluate(..., con=engine.con)``."""
from __future__ import annotations

import itertools
import sqlite3
from contextlib import ExitStack
from typing import Any

import duckdb
import pandas as pd

_names = itertools.count()


def sql_type(series: pd.Series, kinds: dict[str, str]) -> str:
    if pd.api.types.is_bool_dtype(series):
        return kinds["int"]
    if pd.api.types.is_integer_dtype(series):
        return kinds["int"]
    if pd.api.types.is_float_dtype(series):
        return kinds["float"]
    return kinds["text"]


def literal(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value.item() if hasattr(value, "item") else value)


class Engine:
    """Base: ``load`` creates a table from a DataFrame and returns its name."""

    name = "engine"
    kinds = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR"}
    quote = '"'

    def __init__(self, con: Any) -> None:
        self.con = con

    def new_name(self) -> str:
        return f"t{next(_names)}"

    def create(self, name: str, frame: pd.DataFrame, text: str | None = None) -> None:
        q = self.quote
        cols = ", ".join(f"{q}{c}{q} {text if text and sql_type(frame[c], self.kinds) == self.kinds['text'] else sql_type(frame[c], self.kinds)}"
                         for c in frame.columns)
        self.execute(f"CREATE TABLE {name} ({cols})")
        if len(frame):
            rows = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in frame.itertuples(index=False))
            self.execute(f"INSERT INTO {name} VALUES {rows}")

    def load(self, frame: pd.DataFrame, text: str | None = None) -> str:
        name = self.new_name()
        self.create(name, frame, text)
        return name

    def execute(self, sql: str) -> None:
        self.con.execute(sql)


class DuckDBEngine(Engine):
    name = "duckdb"


class SQLiteEngine(Engine):
    name = "sqlite"
    kinds = {"int": "INTEGER", "float": "REAL", "text": "TEXT"}


class PostgresEngine(Engine):
    name = "postgres"
    kinds = {"int": "BIGINT", "float": "DOUBLE PRECISION", "text": "TEXT"}

    def execute(self, sql: str) -> None:
        with self.con.cursor() as cursor:
            cursor.execute(sql)
        self.con.commit()


class MariaDBEngine(Engine):
    name = "mysql"
    kinds = {"int": "BIGINT", "float": "DOUBLE", "text": "VARCHAR(255)"}
    quote = "`"

    def execute(self, sql: str) -> None:
        with self.con.cursor() as cursor:
            cursor.execute(sql)
        self.con.commit()


class SparkEngine(Engine):
    name = "spark"

    def load(self, frame: pd.DataFrame, text: str | None = None) -> str:
        from pyspark.sql import types as T
        kinds = {"int": T.LongType(), "float": T.DoubleType(), "text": T.StringType()}
        schema = T.StructType([T.StructField(c, kinds[{v: k for k, v in self.kinds.items()}[sql_type(frame[c], self.kinds)]])
                               for c in frame.columns])
        rows = [tuple(v.item() if hasattr(v, "item") else v for v in row) for row in frame.itertuples(index=False)]
        name = self.new_name()
        self.con.createDataFrame(rows, schema).createOrReplaceTempView(name)
        return name


class ClickHouseEngine(Engine):
    name = "clickhouse"
    kinds = {"int": "Int64", "float": "Float64", "text": "String"}

    def create(self, name: str, frame: pd.DataFrame, text: str | None = None) -> None:
        cols = ", ".join(f'"{c}" {sql_type(frame[c], self.kinds)}' for c in frame.columns)
        self.execute(f"CREATE TABLE {name} ({cols}) ENGINE = Memory")
        if len(frame):
            rows = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in frame.itertuples(index=False))
            self.execute(f"INSERT INTO {name} VALUES {rows}")

    def execute(self, sql: str) -> None:
        self.con.query(sql)


class DataFusionEngine(Engine):
    name = "datafusion"

    def load(self, frame: pd.DataFrame, text: str | None = None) -> str:
        import pyarrow as pa
        name = self.new_name()
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
        from servers import postgres_server
        con = psycopg.connect(**stack.enter_context(postgres_server()))
        stack.callback(con.close)
        return PostgresEngine(con)
    if name == "mysql":
        import pymysql
        from servers import mariadb_server
        con = pymysql.connect(**stack.enter_context(mariadb_server()))
        stack.callback(con.close)
        return MariaDBEngine(con)
    if name == "spark":
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[2]").appName("recsql-tests")
                 .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        stack.callback(spark.stop)
        return SparkEngine(spark)
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
