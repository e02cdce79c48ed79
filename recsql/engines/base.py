"""What every engine runner provides; see :mod:`recsql.engines` for the registry."""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..dialects import for_steps
from ..errors import RecsqlError
from ..sources import Source
from . import steps

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


class Runner:
    """Runs recsql's statements on one engine connection, for one evaluation.

    Subclasses set ``name`` (shown to users), ``dialect`` (a key of :data:`recsql.dialects.DIALECTS`)
    and implement :meth:`describe` and :meth:`fetch_whole`. Runners never create tables in the user's
    database; inputs must already be tables there, except where :meth:`bind_frame` says otherwise.
    """

    name = "engine"
    dialect = "duckdb"
    reads_files = False  # can it read Parquet/CSV paths itself?

    def __init__(self, con: Any) -> None:
        self.con = con

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release what the runner opened (never the user's connection)."""

    def bind_frame(self, role: str, frame: Any) -> Source:
        raise RecsqlError(f"{role}: a {type(frame).__name__} cannot be evaluated on {self.name}; "
                          f"load it into a table there and pass the table name, or evaluate it with DuckDB (con=None)")

    def is_table(self, relation: Any) -> bool:
        """Whether a name that looks like a path is in fact a table (only engines reading files ask)."""
        return False

    def describe(self, source: Source) -> dict[str, str]:
        """Column name -> the engine's type name, for a bound input."""
        raise NotImplementedError

    def fetch(self, sql: str) -> pd.DataFrame | pa.Table:
        """Run one statement; return its rows. Where :attr:`long_in_steps`, a statement of more CTEs, or
        nesting more SELECTs through them, than one statement may hold on the engine (its dialect's
        ``step_ctes`` and ``step_depth``, recsql/dialects.py) runs in steps (recsql/engines/steps.py)."""
        tree = steps.oversized(sql, self.dialect) if self.long_in_steps else None
        return self.fetch_whole(sql) if tree is None else steps.fetch_in_steps(self, tree)

    def fetch_whole(self, sql: str) -> pd.DataFrame | pa.Table:
        """Run one statement as it is; return its rows."""
        raise NotImplementedError

    # ------------------------------------------------------------ a long statement in steps (engines/steps.py)
    in_steps = False  # does compare's statement with global metrics run here one CTE at a time?
    long_in_steps = False  # does a statement too large for one on the engine run here in steps?

    @property
    def statement_dialect(self) -> str:
        """The dialect evaluate's and compare's statements are rendered for: :attr:`dialect`, without its
        whole-statement limits where this runner runs a statement in steps (:func:`recsql.dialects.for_steps`:
        on MariaDB a statement of more than 64 CTEs runs in steps, where one statement would nest too deeply)."""
        return for_steps(self.dialect) if self.in_steps else self.dialect

    def materialize(self, name: str, sql: str) -> None:
        """Make ``sql``'s rows the session's temporary table ``name`` (engines that run :attr:`in_steps`)."""
        raise NotImplementedError

    def release(self, name: str) -> None:
        """Drop the temporary table ``name`` :meth:`materialize` made."""
        raise NotImplementedError

    # ------------------------------------------------------------ session settings, set and set back
    def query_settings(self) -> dict[str, str]:
        """The session settings recsql's statements need on this connection (name -> value), set for
        each statement and set back after (:meth:`settings_applied`); none by default."""
        return {}

    def needs_setting(self, name: str, current: str, wanted: str) -> bool:
        """Whether the session's ``current`` value of ``name`` must become ``wanted`` (by default: when
        it differs)."""
        return current != wanted

    def read_settings(self, names: list[str]) -> dict[str, str]:
        """The session's values of ``names`` (engines with :meth:`query_settings` implement it)."""
        raise NotImplementedError

    def write_settings(self, values: dict[str, str]) -> None:
        """Set each of ``values`` on the session."""
        raise NotImplementedError

    def apply_settings(self, wanted: dict[str, str]) -> dict[str, str]:
        """Set those of ``wanted`` the session needs (:meth:`needs_setting`); returns the values they
        had, for :meth:`write_settings` to set back."""
        if not wanted:
            return {}
        before = self.read_settings(list(wanted))
        changed = {name: value for name, value in wanted.items() if self.needs_setting(name, before[name], value)}
        if changed:
            self.write_settings(changed)
        return {name: before[name] for name in changed}

    @contextmanager
    def settings_applied(self) -> Iterator[None]:
        """The block run with :meth:`query_settings`, the session's own values set back after, also
        after a failure or an interruption; a setting already as needed is not touched."""
        before = self.apply_settings(self.query_settings())
        try:
            yield
        finally:
            if before:
                self.write_settings(before)

    def fetch_rows(self, sql: str) -> list[tuple]:
        frame = self.fetch(sql)
        if hasattr(frame, "column_names"):  # an Arrow table: NULL as None, as DB-API drivers give it
            return list(zip(*(column.to_pylist() for column in frame.columns)))
        return [tuple(row) for row in frame.itertuples(index=False, name=None)]

    def missing(self, source: Source, error: Exception) -> RecsqlError:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return RecsqlError(f"{source.role}: cannot read {source.described} on {self.name}: {first}. "
                           "Check that the table exists and the name is spelled as in the database")

    def failed(self, error: Exception) -> RecsqlError:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return RecsqlError(f"the evaluation query failed on {self.name}: {first}. "
                           "Check the input columns' contents (ids, scores, relevance); where they are as the "
                           "input guide describes, this is a limit of the engine's: ask for fewer metrics at a "
                           "time, or evaluate on DuckDB")


def frame_from_cursor(cursor: Any) -> pd.DataFrame:
    """A DB-API cursor's result as a DataFrame."""
    import pandas as pd  # the DB-API engines' rows: a frame (DuckDB's own runner returns Arrow, without pandas)
    columns = [d[0] for d in cursor.description]
    return pd.DataFrame.from_records(cursor.fetchall(), columns=columns)


class DBAPIRunner(Runner):
    """A runner over a DB-API connection whose cursors are context managers (psycopg, PyMySQL).

    recsql's statements run on the user's connection itself, so they see what the user's own
    ``SELECT`` would (search path, current database, temporary tables, an open transaction), and
    leave it as it was: subclasses name the columns' types (:meth:`type_name`) and say how a
    statement is wrapped (:meth:`guard`)."""

    def type_name(self, description: Any) -> str:
        raise NotImplementedError

    def guard(self, cursor: Any) -> Callable[[Any], None]:
        """Called before recsql's statements on ``cursor``; returns what undoes their effect on the
        connection's state, called afterwards, also after a failure. By default nothing."""
        return lambda cursor: None

    @contextmanager
    def statements(self) -> Iterator[Any]:
        """A cursor of the user's connection for recsql's statements, guarded by :meth:`guard`."""
        with self.con.cursor() as cursor:
            undo = self.guard(cursor)
            try:
                yield cursor
            finally:
                undo(cursor)

    def _execute(self, sql: str) -> tuple[Any, pd.DataFrame | None]:
        with self.statements() as cursor:
            cursor.execute(sql)
            rows = frame_from_cursor(cursor) if cursor.description else None
            return cursor.description, rows

    def describe(self, source: Source) -> dict[str, str]:
        try:
            described, _ = self._execute(f"SELECT * FROM {source.relation.sql(self.dialect)} LIMIT 0")
        except RecsqlError:
            raise
        except Exception as err:  # noqa: BLE001 - any driver error: the input cannot be read
            raise self.missing(source, err) from None
        return {d[0]: self.type_name(d) for d in described}

    def fetch_whole(self, sql: str) -> pd.DataFrame:
        try:
            return self._execute(sql)[1]
        except RecsqlError:
            raise
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None
