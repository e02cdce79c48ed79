"""The ``recsql`` console command's entry point: imports the command line (pandas, DuckDB, sqlglot:
a noticeable moment) so that Ctrl-C during that import ends like Ctrl-C during a run, with one
line and status 130 instead of a traceback."""
from __future__ import annotations

import sys


def main() -> int:
    try:
        from .cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("recsql: interrupted\n")
        return 130
    return run()
