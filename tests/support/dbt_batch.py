"""Run several dbt commands in one Python process, one after another, through dbt's programmatic
entry point (``dbt.cli.main.dbtRunner``), as the ``dbt`` command would run each one.

Run by dbt's own interpreter (its virtual environment; tests/test_dbt.py), never imported by the tests::

    python dbt_batch.py '[["--warn-error", "parse"], ["compile", "--target", "trino", ...]]'

Each command is a list of the ``dbt`` command line's arguments and gets a fresh ``dbtRunner``, so it
reads the project, the profile and its target again (no manifest is carried from one to the next);
what the process saves is dbt's start-up (importing dbt and its adapters), several seconds a command.
The commands stop at the first that fails; the exit status is then the ``dbt`` command's (1: the
command failed, 2: dbt raised), with the failing command named on stderr; 0 when all succeeded.
"""
from __future__ import annotations

import json
import sys
import traceback


def main(commands: list[list[str]]) -> int:
    from dbt.cli.main import dbtRunner
    for args in commands:
        result = dbtRunner().invoke(args)
        if not result.success:
            print(f"dbt_batch: `dbt {' '.join(args)}` failed", file=sys.stderr)
            if result.exception is not None:
                traceback.print_exception(result.exception, file=sys.stderr)
                return 2
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
