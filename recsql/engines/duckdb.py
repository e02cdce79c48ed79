"""Run recsql's query on DuckDB: an in-memory database, a user's connection, or a ``.duckdb`` file
opened read-only. On a user's connection the runner works on the connection itself, so it sees what
the user's own ``SELECT`` would (the current database and schema, temporary tables, registered
frames, an open transaction); what it registers is unregistered and what it sets is set back
afterwards. It never writes to the database."""
from __future__ import annotations

import os
import threading
import uuid
import warnings
import weakref
from contextlib import nullcontext
from typing import Any

import duckdb
import pyarrow as pa
from sqlglot import exp

from ..database import in_transaction, open_database, shared
from ..errors import RecsqlError
from ..sources import Source
from ..trees import relation_text
from .base import Runner


# DuckDB 2 reads a statement given to ``con.sql`` as a relation, tokenising and binding it in Python
# first: 0.03-0.08 s for one of recsql's statements (20-35 KB of SQL), more than the whole query takes on a
# small input. recsql runs its statements with ``execute`` and converts the result to Arrow (:func:`_arrow`);
# the "extra copy" DuckDB warns of there is of the result (a row per user or per metric).
_DBAPI_ARROW = "Arrow output on a DB-API result makes an extra copy"
_quiet = threading.Lock()  # warnings.catch_warnings is not thread-safe: recsql's threads take turns in it


def _arrow(result: Any) -> pa.Table:
    """The rows of an executed statement as an Arrow table, without DuckDB 2's warning about the copy
    (under a user's ``-W error`` too); DuckDB 1 names the method ``fetch_arrow_table``."""
    to_arrow = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
    with _quiet, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_DBAPI_ARROW, category=UserWarning)
        return to_arrow()


# A DuckDB connection takes one call at a time ("connection is busy with another call"): evaluations
# sharing a user's connection take turns statement by statement, one lock per connection.
_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_locks_lock = threading.Lock()


def _lock_for(con: duckdb.DuckDBPyConnection) -> threading.RLock:
    with _locks_lock:
        lock = _locks.get(con)
        if lock is None:
            lock = _locks[con] = threading.RLock()
        return lock


class DuckDBRunner(Runner):
    """Owns one cursor for one evaluation; use as a context manager."""

    name = "DuckDB"
    dialect = "duckdb"
    reads_files = True

    def __init__(self, con: Any = None, *, progress: bool = False) -> None:
        self._owned = None
        self._shared_cursor = None
        self._user = False
        self._restore: dict[str, str] = {}  # settings to set back on the user's connection
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
            base, self._user = con, True
        else:
            raise RecsqlError(f"con: expected a DuckDB connection or a .duckdb file path, got {type(con).__name__}")
        super().__init__(base)
        try:
            # the user's connection itself (its cursors would not see its temporary tables, registered
            # frames, current schema or open transaction); a cursor of a database recsql opened
            self.cursor = base.cursor()
            if self._user:
                self.cursor.close()
                self.cursor = base
        except duckdb.ConnectionException as err:  # a closed connection
            raise RecsqlError(f"con: the DuckDB connection cannot be used ({str(err).splitlines()[0]}); pass an "
                              "open connection (duckdb.connect(...)), a .duckdb path, or None") from None
        self._lock = _lock_for(base) if self._user else nullcontext()
        if self._user:
            self._check_free()
        if progress:  # for the runner's life, set back on close (Runner.apply_settings)
            with self._lock:
                self._restore = self.apply_settings({"enable_progress_bar": "true"})

    def read_settings(self, names: list[str]) -> dict[str, str]:
        values = self.cursor.execute("SELECT " + ", ".join(f"current_setting('{n}')" for n in names)).fetchall()[0]
        return {name: str(value).lower() if isinstance(value, bool) else str(value)
                for name, value in zip(names, values)}

    def write_settings(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self.cursor.execute(f"SET {name} = {value}")

    def _check_free(self) -> None:
        """A statement on the user's connection, fetched to its end: DuckDB (>= 2) refuses registrations
        while the connection holds a result not fetched to its end (the count of an ``execute("UPDATE
        ...")``), which any statement ends, as the user's own next statement would."""
        try:
            with self._lock:
                self.cursor.execute("SELECT 1").fetchall()
        except duckdb.Error as err:
            raise RecsqlError(f"con: the DuckDB connection cannot run recsql's statements now "
                              f"({str(err).splitlines()[0]}); if another thread is using it, evaluate on "
                              "con.cursor() (which sees the database but not the connection's temporary tables, "
                              "registered frames or open transaction)") from None

    def close(self) -> None:
        if self._user:  # the user's connection stays open, its settings as they were
            if self._restore:
                with self._lock:
                    self.write_settings(self._restore)
            return
        self.cursor.close()
        if self._owned is not None:
            self._owned.close()
        if self._shared_cursor is not None:
            shared.release(self._shared_cursor)

    def _in_transaction(self) -> bool:
        """Whether the user's connection has a transaction open (two statements, one transaction id)."""
        if not self._user:
            return False
        with self._lock:
            return in_transaction(self.cursor)

    def _aborted(self) -> str:
        """After an engine error: what it did to the user's open transaction (DuckDB has no savepoints, so
        a failed statement aborts the transaction it runs in), else ''."""
        if not self._user:
            return ""
        try:
            with self._lock:
                self.cursor.execute("SELECT 1").fetchall()
            return ""
        except duckdb.TransactionException:
            return (" (DuckDB aborted the transaction open on your connection, as it does on any failed "
                    "statement: roll it back with con.rollback())")

    def _catalog_kind(self, relation: exp.Expression) -> str | None:
        """'table' or 'view' when the catalog holds a relation of this name (its schema and database
        too, when given), else None."""
        parts = [relation.args.get(k) for k in ("catalog", "db", "this")]
        names = [p.name if p is not None else None for p in parts]
        with self._lock:
            row = self.cursor.execute(
                "SELECT kind FROM (SELECT 'table' AS kind, database_name AS d, schema_name AS s, table_name AS n "
                "FROM duckdb_tables() UNION ALL SELECT 'view', database_name, schema_name, view_name FROM "
                "duckdb_views()) WHERE lower(n) = lower($3) AND ($2 IS NULL OR lower(s) = lower($2)) "
                "AND ($1 IS NULL OR lower(d) = lower($1)) ORDER BY kind LIMIT 1", names).fetchall()
        return row[0][0] if row else None

    def bind_frame(self, role: str, frame: Any) -> Source:
        """Register a pandas/polars DataFrame, an Arrow table or dataset on the runner's cursor for this run."""
        arrow = type(frame).__module__.startswith("pyarrow")  # tables, datasets: columns are the schema's names
        if len(frame.schema.names if arrow else getattr(frame, "columns", ())) == 0:
            raise RecsqlError(f"{role}: the {type(frame).__name__} has no columns; it needs at least "
                              "the user and item columns (see the README's input contract)")
        name = f"__recsql_{role}_{uuid.uuid4().hex[:12]}"
        data = frame.to_arrow() if type(frame).__module__.startswith("polars") else frame
        with self._lock:
            self.cursor.register(name, data)

        def unregister() -> None:
            with self._lock:
                self.cursor.unregister(name)
        return Source(role, exp.Table(this=exp.to_identifier(name, quoted=True)), cleanup=unregister,
                      described=type(frame).__name__)

    def is_table(self, relation: exp.Expression | None) -> bool:
        if relation is None:
            return False
        try:
            # DuckDB's replacement scan reads "data/recs"."csv" as the file data/recs.csv: only a
            # table or view of the catalog counts. The catalog is asked first, so that a name no
            # table has is not described (which would read, or sniff, the file it names).
            if self._catalog_kind(relation) is None:
                return False
            with self._lock:
                self.cursor.execute(f"DESCRIBE {relation.sql('duckdb')}").fetchall()
            return True
        except duckdb.Error:
            return False

    def describe(self, source: Source) -> dict[str, str]:
        sql = f"DESCRIBE SELECT * FROM {relation_text(source.relation) or source.relation.sql('duckdb')}"
        kind = self._catalog_kind(source.relation) if source.table is not None else None
        missing = RecsqlError(f"{source.role}: {source.described} does not exist in the database; "
                              "check the name, or pass a file path or a DataFrame")
        if source.table is not None and kind is None and self._in_transaction():
            raise missing  # asked of the catalog only: a failed DESCRIBE would abort the user's transaction
        try:
            with self._lock:
                rows = self.cursor.execute(sql).fetchall()
        except duckdb.Error as err:
            first = str(err).splitlines()[0]
            if kind == "view":  # the view exists but its query no longer runs
                raise RecsqlError(f"{source.role}: view {source.table!r} is broken, its query fails: {first}; "
                                  f"recreate the view (CREATE OR REPLACE VIEW){self._aborted()}") from None
            if isinstance(err, duckdb.CatalogException):
                raise RecsqlError(f"{missing}{self._aborted()}") from None
            raise RecsqlError(f"{source.role}: cannot read {source.described}: {first}{self._aborted()}") from None
        return {name: typ for name, typ, *_ in rows}

    def failed(self, error: Exception) -> RecsqlError:
        if isinstance(error, duckdb.OutOfMemoryException):
            return RecsqlError(
                f"DuckDB ran out of memory ({str(error).splitlines()[0]}); raise its memory_limit, give it a "
                "temp_directory with free disk space, and on your own connection SET preserve_insertion_order "
                "= false (recsql does so on the databases it opens), which lets DuckDB spill")
        failed = super().failed(error)
        return RecsqlError(f"{failed}{self._aborted()}")

    def fetch_whole(self, sql: str) -> pa.Table:
        try:
            with self._lock:
                return _arrow(self.cursor.execute(sql))  # not cursor.sql(sql), which parses it in Python first
        except duckdb.Error as err:
            raise self.failed(err) from None

    def fetch_rows(self, sql: str) -> list[tuple]:
        try:
            with self._lock:
                return self.cursor.execute(sql).fetchall()
        except duckdb.Error as err:
            raise self.failed(err) from None
