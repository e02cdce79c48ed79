"""What the command writes: the result formats (:data:`FORMATS` for stdout, :data:`WRITERS` for
``--per-user`` files), a standard output whose failed writes are said (:class:`Stdout`), and one
line to stderr that cannot drive the terminal (:func:`say`)."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any, Callable

from .safe_text import for_terminal
from .table_text import table_text

FORMATS: dict[str, Callable[[pd.DataFrame], str]] = {
    "table": lambda df: for_terminal(df.to_string(index=False, float_format=lambda v: f"{v:.6f}")),  # for reading
    "csv": lambda df: df.to_csv(index=False).rstrip("\n"),
    "json": lambda df: _to_json(df),  # every digit of each double (as csv), NaN as null
}
WRITERS: dict[str, Callable[[pd.DataFrame, str], None]] = {
    ".csv": lambda df, p: df.to_csv(p, index=False),
    ".parquet": lambda df, p: df.to_parquet(p, index=False),
    ".json": lambda df, p: Path(p).write_text(_to_json(df) + "\n", encoding="utf-8"),
}


def summary_text(result: Any, form: str) -> str:
    """An evaluation's summary in the format ``form``: the table from its Arrow rows when :func:`table_text` writes
    them (the text pandas would write, without loading pandas), else by :data:`FORMATS` from its DataFrame."""
    text = table_text(result.rows.arrow("summary")) if form == "table" else None
    return for_terminal(text) if text is not None else FORMATS[form](result.summary)


def _to_json(df: pd.DataFrame) -> str:
    from .output import to_json
    return to_json(df)


class StdoutError(OSError):
    """Standard output cannot be written (closed, a full disk, an I/O error): the results are lost."""


class Stdout:
    """The command's standard output: writes go to ``stream``; a failure to write them (but a reader
    that went away, :class:`BrokenPipeError`: it has what it wanted) is a :class:`StdoutError` that
    says so, and a closed standard output (``>&-``, where Python's ``sys.stdout`` is None and a print
    would write nothing) is one at the first write, never a silent success."""

    def __init__(self, stream: object) -> None:
        self._stream, self._lost = stream, None  # _lost: the error of a write that failed
        if stream is None:  # fd 1 closed: hold it with /dev/null, so no file the run opens becomes "stdout"
            with contextlib.suppress(OSError):
                if _closed(1):
                    fd = os.open(os.devnull, os.O_WRONLY)
                    if fd != 1:
                        os.close(fd)

    def write(self, text: str) -> int:
        return self._call("write", text)

    def flush(self) -> None:
        """Flush; a write that failed before (and was swallowed, as argparse does) fails here again."""
        if self._lost is not None:
            raise self._lost
        if self._stream is not None:
            self._call("flush")

    def _call(self, method: str, *args: object) -> object:
        if self._stream is None:
            self._lost = StdoutError("standard output is closed (>&-), so nothing could be printed; redirect it "
                                     "to a file or to /dev/null instead")
            raise self._lost
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as err:  # ValueError: a file Python itself has closed
            reason = getattr(err, "strerror", None) or str(err)
            self._lost = StdoutError(f"standard output could not be written ({reason}); the results were not "
                                     "printed in full")
            raise self._lost from None

    def isatty(self) -> bool:
        return is_terminal(self._stream)

    def __getattr__(self, name: str) -> object:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
        return False
    except OSError:
        return True


def is_terminal(stream: object) -> bool:
    """Whether a stream is a terminal (False for a closed or missing stdout: `recsql ... >&-`)."""
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except (ValueError, OSError, AttributeError):
        return False


def say(line: str) -> None:
    """One line to stderr, every character that could drive the terminal (a name's escape sequence,
    carriage return or direction override) shown as its escape."""
    try:
        print(for_terminal(line), file=sys.stderr, flush=True)
    except (BrokenPipeError, ValueError, OSError):
        pass


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture stdout)
        pass
