"""An evaluation's result rows, finished when first asked for: the engine's raw per-user rows (an Arrow
table or a DataFrame) and the statements that finish them (:func:`recsql.statements.finalize_sql`: the
per-user rows, the summary), run on a cursor of recsql's own in-memory DuckDB.

A pandas DataFrame is made only when one is read (``Evaluation.summary``, ``.per_user``), by the same
statement on the same rows as always (DuckDB's ``.df()``), so it is the frame evaluate returned before
it waited; an Arrow table serves those who need no pandas (the command line's table, its row counts),
and importing pandas costs a command about a third of a second. Each result is computed once; once every
DataFrame is made, the raw rows are let go (an Arrow table asked for after that is made from its DataFrame).

>>> import pyarrow as pa
>>> rows = ResultFrames(pa.table({"u": [1, 2, 2]}), {"users": "SELECT DISTINCT u FROM per_user ORDER BY u"})
>>> rows.arrow("users").column("u").to_pylist(), rows.frame("users")["u"].tolist()
([1, 2], [1, 2])
"""
from __future__ import annotations

import threading
from typing import Any, Mapping, Sequence

from .database import shared

RAW = "per_user"  # the name the finishing statements read the raw rows by


class ResultFrames:
    """``raw`` (the engine's rows), the statements by result name, and per result the columns to leave
    out (``drop``: the diagnostics computed only for a warning)."""

    def __init__(self, raw: Any, statements: Mapping[str, str], drop: Mapping[str, Sequence[str]] | None = None):
        self._raw, self._statements, self._drop = raw, dict(statements), dict(drop or {})
        self._arrow: dict[str, Any] = {}
        self._frames: dict[str, Any] = {}
        self._lock = threading.Lock()

    def query(self, sql: str) -> list[tuple]:
        """The rows of ``sql`` over the raw rows (named ``per_user``), as Python tuples."""
        with self._lock, shared.cursor() as con:
            con.register(RAW, self._raw)
            return con.execute(sql).fetchall()

    def distinct(self, name: str, column: str) -> int:
        """The distinct values (NULL not one) of ``column`` in result ``name``."""
        table = self.arrow(name)
        with self._lock, shared.cursor() as con:
            con.register("result", table)
            return con.execute(f'SELECT COUNT(DISTINCT "{column.replace(chr(34), chr(34) * 2)}") FROM result').fetchone()[0]

    def arrow(self, name: str, whole: bool = False) -> Any:
        """Result ``name`` as an Arrow table (``whole``: with the columns it drops)."""
        with self._lock:
            if name not in self._arrow and name not in self._statements:  # its DataFrame made (or unpickled)
                import pyarrow as pa
                self._arrow[name] = pa.Table.from_pandas(self._frames[name], preserve_index=False)
            elif name not in self._arrow:
                with shared.cursor() as con:
                    con.register(RAW, self._raw)
                    self._arrow[name] = con.sql(self._statements[name]).to_arrow_table()
            table = self._arrow[name]
        return table if whole else table.drop_columns([c for c in self._drop.get(name, ()) if c in table.column_names])

    def frame(self, name: str) -> Any:
        """Result ``name`` as a pandas DataFrame."""
        with self._lock:
            if name not in self._frames:
                with shared.cursor() as con:
                    con.register(RAW, self._raw)
                    frame = con.execute(self._statements[name]).df()
                self._frames[name] = frame.drop(columns=list(self._drop.get(name, ())))
                if all(made in self._frames for made in self._statements):  # every DataFrame made: the raw rows go
                    self._raw, self._statements, self._arrow = None, {}, {}
            return self._frames[name]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with every DataFrame made (and no lock), as an evaluation was before it waited."""
        for name in self._statements:
            self.frame(name)
        return {"frames": self._frames}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._raw, self._statements, self._drop, self._arrow = None, {}, {}, {}
        self._frames, self._lock = state["frames"], threading.Lock()
