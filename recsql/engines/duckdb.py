"""Run recsql's query on DuckDB: an in-memory database, a user's connection, or a ``.duckdb`` file
opened read-only. The runner works on its own cursor, so nothing it registers stays on the
user's connection, and never writes to the database."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import uuid
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Iterator

import duckdb
import pyarrow as pa
from sqlglot import exp

from ..errors import RecsqlError
from ..sources import Source
from .base import Runner


@lru_cache(maxsize=1)
def _spill_directory() -> str:
    """One spill directory for every database recsql opens in this process (DuckDB refuses two
    connections to one file with different settings), removed when the process exits."""
    path = tempfile.mkdtemp(prefix="recsql-spill-")
    atexit.register(shutil.rmtree, path, True)
    return path


def _open(path: str | None) -> duckdb.DuckDBPyConnection:
    # recsql orders its results explicitly, so DuckDB need not keep insertion order: that lets it
    # stream and spill (100M recommendation rows fit a 4 GB memory limit only this way).
    config = {"temp_directory": _spill_directory(), "preserve_insertion_order": False}
    if path is None:
        return duckdb.connect(config=config)
    try:
        return duckdb.connect(path, read_only=True, config=config)
    except duckdb.ConnectionException:  # already open in this process with other settings
        try:
            return duckdb.connect(path, read_only=True)
        except duckdb.Error as err:
            raise RecsqlError(f"con: {path!r} is already open in this process with other settings ({err}); "
                              "pass that connection itself as con=") from None
    except duckdb.Error as err:
        raise RecsqlError(f"con: cannot open {path!r} as a DuckDB database read-only: {err}") from None


class _Shared:
    """recsql's own in-memory database, opened once per process (opening one costs 20-40 ms): the
    runner's when ``con`` is None, and where evaluate finishes its result frames. Each use works on
    a cursor of its own (:meth:`cursor`), whose registrations and settings no other cursor sees;
    nothing is ever created in the database itself.

    A child forked while a DuckDB database is open hangs when it opens one (the parent's worker
    threads do not survive the fork), so the database is closed before a fork when no cursor is in
    use, and reopened on the next use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._database: duckdb.DuckDBPyConnection | None = None
        self._users = 0
        if hasattr(os, "register_at_fork"):  # POSIX
            os.register_at_fork(before=self._close_if_idle, after_in_child=self._forget)

    def acquire(self) -> duckdb.DuckDBPyConnection:
        """A new cursor of the database (opened if needed); give it back with :meth:`release`."""
        with self._lock:
            if self._database is None:
                self._database = _open(None)
            cursor = self._database.cursor()
            self._users += 1
        return cursor

    def release(self, cursor: duckdb.DuckDBPyConnection) -> None:
        cursor.close()
        with self._lock:
            self._users -= 1

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cursor = self.acquire()
        try:
            yield cursor
        finally:
            self.release(cursor)

    def _close_if_idle(self) -> None:
        if self._lock.acquire(blocking=False):
            try:
                if self._users == 0 and self._database is not None:
                    self._database.close()
                    self._database = None
            finally:
                self._lock.release()

    def _forget(self) -> None:  # the child's copy of the parent's database is unusable: open anew
        self._lock = threading.Lock()
        self._database, self._users = None, 0


shared = _Shared()


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
            self._owned = _open(path)
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
        from ..statements import quoted_name
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
