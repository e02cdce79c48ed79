"""recsql's own DuckDB: the in-memory database it evaluates on when no connection is given, where
evaluate finishes its result frames and custom discounts are checked (:data:`shared`), and how it
opens a ``.duckdb`` file (:func:`open_database`). Not an engine runner (recsql/engines/duckdb.py runs
statements on it and on users' connections): it composes and runs nothing itself."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from functools import lru_cache
from typing import Iterator

import duckdb

from .errors import RecsqlError


@lru_cache(maxsize=1)
def _spill_directory() -> str:
    """One spill directory for every database recsql opens in this process (DuckDB refuses two
    connections to one file with different settings), removed when the process exits."""
    path = tempfile.mkdtemp(prefix="recsql-spill-")
    atexit.register(shutil.rmtree, path, True)
    return path


def in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` has a transaction open: two statements outside one run in two transactions,
    inside one they share its id."""
    first = con.execute("SELECT txid_current()").fetchall()
    return first == con.execute("SELECT txid_current()").fetchall()


def open_database(path: str | None) -> duckdb.DuckDBPyConnection:
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
                self._database = open_database(None)
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
