"""The ``recsql`` console command's entry point: imports the command line (and, for the asked
subcommand, pandas, DuckDB, sqlglot: a noticeable moment) so that Ctrl-C during that import ends
like Ctrl-C during a run, with one line and status 130 instead of a traceback.

Until the command line installs its own handlers (:func:`recsql.cli.main`), a Ctrl-C ends the
process at once: nothing has run that needs undoing, and ending there is what keeps an interrupted
import from surfacing as another error (a Ctrl-C inside numpy's initialisation is reported by pandas
as ``ImportError: Unable to import required dependency numpy``) or as a traceback from a handler that
fired just as it was installed."""
from __future__ import annotations

import os
import signal
import sys


def _interrupted(signum: int, frame: object) -> None:
    sys.stderr.write("recsql: interrupted\n")
    sys.stderr.flush()
    os._exit(128 + signal.SIGINT)


def _show_warning(message: object, category: type, filename: str, lineno: int, file: object = None,
                  line: str | None = None) -> None:
    """A warning on the terminal: recsql's own as ``recsql: warning: <message>`` (the file and line of
    recsql's code that raised it mean nothing to the command's user), any other in Python's display; every
    character that could drive the terminal (a name's escape sequence, carriage return, direction
    override) shown as its escape."""
    import warnings

    from .errors import RecsqlWarning
    from .safe_text import for_terminal
    if issubclass(category, RecsqlWarning):
        text = f"recsql: warning: {message}\n"
    else:
        text = warnings.formatwarning(message, category, filename, lineno, line)  # type: ignore[arg-type]
    try:
        (file or sys.stderr).write(for_terminal(text))
    except (OSError, ValueError, AttributeError):  # stderr closed: as Python's own display, nothing
        pass


def main() -> int:
    import warnings
    previous = signal.signal(signal.SIGINT, _interrupted)
    shown = warnings.showwarning
    warnings.showwarning = _show_warning  # the console command only: in-process callers keep their own
    try:
        from .cli import main as run
        return run()
    finally:
        warnings.showwarning = shown
        signal.signal(signal.SIGINT, previous)
