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


def main() -> int:
    previous = signal.signal(signal.SIGINT, _interrupted)
    try:
        from .cli import main as run
        return run()
    finally:
        signal.signal(signal.SIGINT, previous)
