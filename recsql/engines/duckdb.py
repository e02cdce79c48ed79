"""Run recsql's query on DuckDB: an in-memory database, a user's connection, or a ``.duckdb`` file
opened read-only. The runner works on its own cursor, so nothing it registers stays on the
user's connection, and never writes to the database."""
from __future__ import annotations

import os
import uuid
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from ..database import open_database, shared
from ..errors import RecsqlError
from ..sources import Source
from ..trees import quoted_name
from .base import Runner


class DuckDBRunner(Runner):
    """Owns one cursor for one evaluation; use as a context manager."""

    name = "DuckDB"
    dialect = "duckdb"
    reads_files = True

    def __init__(self, con: Any = None, *, progress: bool = False) -> None:
        self._owned = None
        self._shared_cursor = None
        # A database recsql opens spills to recsql's own temporary directory, never next to the
        # user's file or into the working directory.
        if con is None:
            self._shared_cursor = base = shared.acquire()
        elif isinstance(con, (str, os.PathLike)):
            path = os.fspath(con)
            if not os.path.isfile(path):
                raise RecsqlError(f"con: database file {path!r} does not exist; pass an existing .duckdb file")
            self._owned = open_database(path)
            base = self._owned
        elif isinstance(con, duckdb.DuckDBPyConnection):
            base = con
        else:
            raise RecsqlError(f"con: expected a DuckDB connection or a .duckdb file path, got {type(con).__name__}")
        super().__init__(base)
        try:
            self.cursor = base.cursor()
        except duckdb.ConnectionException as err:  # a closed connection
            raise RecsqlError(f"con: the DuckDB connection cannot be used ({str(err).splitlines()[0]}); pass an "
                              "open connection (duckdb.connect(...)), a .duckdb path, or None") from None
        if progress:
            self.cursor.execute("SET enable_progress_bar = true")

    def close(self) -> None:
        self.cursor.close()
        if self._owned is not None:
            self._owned.close()
        if self._shared_cursor is not None:
            shared.release(self._shared_cursor)

    def bind_frame(self, role: str, frame: Any) -> Source:
        """Register a pandas/polars DataFrame, an Arrow table or dataset on the runner's cursor for this run."""
        arrow = type(frame).__module__.startswith("pyarrow")  # tables, datasets: columns are the schema's names
        if len(frame.schema.names if arrow else getattr(frame, "columns", ())) == 0:
            raise RecsqlError(f"{role}: the {type(frame).__name__} has no columns; it needs at least "
                              "the user and item columns (see the README's input contract)")
        name = f"__recsql_{role}_{uuid.uuid4().hex[:12]}"
        data = frame.to_arrow() if type(frame).__module__.startswith("polars") else frame
        self.cursor.register(name, data)
        return Source(role, exp.Table(this=exp.to_identifier(name, quoted=True)),
                      cleanup=lambda: self.cursor.unregister(name), described=type(frame).__name__)

    def is_table(self, relation: exp.Expression | None) -> bool:
        if relation is None:
            return False
        try:
            # DuckDB's replacement scan reads "data/recs"."csv" as the file data/recs.csv: only a
            # table or view of the catalog counts. The catalog is asked first, so that a name no
            # table has is not described (which would read, or sniff, the file it names).
            if not self.cursor.execute(
                    "SELECT 1 FROM (SELECT table_name AS name FROM duckdb_tables() UNION ALL "
                    "SELECT view_name FROM duckdb_views()) WHERE lower(name) = lower(?) LIMIT 1",
                    [relation.name]).fetchall():
                return False
            self.cursor.execute(f"DESCRIBE {relation.sql('duckdb')}").fetchall()
            return True
        except duckdb.Error:
            return False

    def describe(self, source: Source) -> dict[str, str]:
        sql = f"DESCRIBE SELECT * FROM {quoted_name(source.relation) or source.relation.sql('duckdb')}"
        try:
            rows = self.cursor.execute(sql).fetchall()
        except duckdb.CatalogException:
            raise RecsqlError(f"{source.role}: {source.described} does not exist in the database; "
                              "check the name, or pass a file path or a DataFrame") from None
        except duckdb.Error as err:
            raise RecsqlError(f"{source.role}: cannot read {source.described}: {str(err).splitlines()[0]}") from None
        return {name: typ for name, typ, *_ in rows}

    def failed(self, error: Exception) -> RecsqlError:
        if isinstance(error, duckdb.OutOfMemoryException):
            return RecsqlError(
                f"DuckDB ran out of memory ({str(error).splitlines()[0]}); raise its memory_limit, give it a "
                "temp_directory with free disk space, and on your own connection SET preserve_insertion_order "
                "= false (recsql does so on the databases it opens), which lets DuckDB spill")
        return super().failed(error)

    def fetch(self, sql: str) -> pa.Table:
        try:
            relation = self.cursor.sql(sql)
            to_arrow = getattr(relation, "to_arrow_table", None) or relation.arrow  # DuckDB 2 / DuckDB 1
            return to_arrow()
        except duckdb.Error as err:
            raise self.failed(err) from None

    def fetch_rows(self, sql: str) -> list[tuple]:
        try:
            return self.cursor.execute(sql).fetchall()
        except duckdb.Error as err:
            raise self.failed(err) from None
