"""``recsql dbt generate``: write (or, with ``--check``, verify) the models a dbt project's
``recsql.yml`` lists (:mod:`recsql.dbt.project`).

    recsql dbt generate [--project DIR] [--check]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _shown(path: Path) -> str:
    """The path as the user would write it: relative to the current folder when inside it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``dbt`` subcommand; imports nothing of recsql.dbt until it runs."""
    parser = sub.add_parser(
        "dbt", help="write the dbt models a project's recsql.yml lists (or check they are current)",
        description="Write a model and its YAML (input-check tests) for every evaluation listed in the dbt "
                    "project's recsql.yml, into its models_dir (default models/recsql). Files recsql did not "
                    "write are never overwritten. --check writes nothing and fails when a model is stale.")
    parser.add_argument("action", choices=("generate",), help="generate: write the models")
    parser.add_argument("--project", default=".", help="the dbt project's folder, holding dbt_project.yml and "
                                                       "recsql.yml (default: .)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a generated file is missing, stale or left over")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .project import generate
    changed, leftover = generate(Path(args.project), check=args.check)
    if args.check:
        for path in changed:
            print(f"stale: {_shown(path)}")
        for path in leftover:
            print(f"left over: {_shown(path)}")
        if changed or leftover:
            print("recsql: run `recsql dbt generate` and commit the result", file=sys.stderr)
            return 1
        print("recsql: every generated dbt model is current", file=sys.stderr)
        return 0
    for path in changed:
        print(f"wrote {_shown(path)}")
    for path in leftover:
        print(f"removed {_shown(path)}")
    if not changed and not leftover:
        print("recsql: every generated dbt model is already current", file=sys.stderr)
    return 0
