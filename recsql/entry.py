"""The ``recsql`` console command's entry point: imports the command line (pandas, DuckDB, sqlglot:
a noticeable moment) so that Ctrl-C during that import ends like Ctrl-C during a run, with one
line and status 130 instead of a traceback.

A Ctrl-C that lands inside an extension module's initialisation can surface as another error (numpy's
``ImportError: Unable to import required dependency numpy``, raised by pandas), so the import runs
under a SIGINT handler of its own that remembers the signal: any failure of the import after a
Ctrl-C is the interruption."""
from __future__ import annotations

import signal
import sys


def main() -> int:
    interrupted = []

    def on_sigint(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        from .cli import main as run
    except BaseException:
        if not interrupted:
            raise
        sys.stderr.write("recsql: interrupted\n")
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
    return run()
