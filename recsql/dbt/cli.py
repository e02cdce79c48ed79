"""``recsql dbt``: write a dbt model for a metric list, or regenerate the package in ``dbt/``.

    recsql dbt model NAME -m ndcg@10 -m map@10 --run-col model --project . [--adapter duckdb ...]
    recsql dbt --regenerate [--package dbt]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from .adapters import ADAPTERS
from .model import _OPTIONS, ROLES, ModelSpec, write_model
from .package import regenerate


def add_parser(sub: argparse._SubParsersAction, columns) -> None:
    """The ``dbt`` subcommand (``columns``: adds the CLI's shared column and definition options)."""
    parser = sub.add_parser("dbt", help="write a dbt model (macro per adapter, model, schema.yml), or regenerate the dbt package")
    parser.add_argument("--regenerate", action="store_true", help="regenerate the dbt package (--package) and exit")
    parser.add_argument("--package", default="dbt", help="the package folder to regenerate (default: dbt)")
    parser.add_argument("action", nargs="?", choices=("model",), help="model: write a model for the metrics")
    parser.add_argument("name", nargs="?", help="the model's name (a lower-case identifier)")
    parser.add_argument("--project", default=".", help="the dbt project to write into (default: .)")
    parser.add_argument("--adapter", action="append", default=[], dest="adapters",
                        help=f"an adapter to write SQL for ({', '.join(ADAPTERS)}); repeatable; default: all")
    parser.add_argument("--output", choices=("summary", "per_user"), default="summary")
    parser.add_argument("--column-names", choices=("safe", "as_asked"), default="safe",
                        help="result column names: safe (ndcg_at_10, default) or as_asked (ndcg@10)")
    for role in ROLES:
        default = {"recs": "ref('recs')", "truth": "ref('truth')"}.get(role)
        parser.add_argument(f"--{role.replace('_', '-')}", default=default, dest=f"input_{role}",
                            help=f"the {role} relation as dbt writes it, e.g. \"ref('{role}')\""
                                 + (f" (default: {default})" if default else ""))
    parser.add_argument("--no-truth", dest="input_truth", action="store_const", const=None, help="no truth input")
    parser.add_argument("--text-id", action="append", default=[], dest="text_ids",
                        help="an id column holding strings (binary collation where the warehouse needs one)")
    parser.add_argument("-m", "--metric", action="append", dest="metrics", default=[],
                        help="metric, e.g. ndcg@10 or 'ndcg(gain=exponential)@10'; repeat for several")
    columns(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import RecsqlError
    if args.regenerate:
        for path in regenerate(Path(args.package)):
            print(path)
        return 0
    if args.action != "model" or not args.name or not args.metrics:
        raise RecsqlError("write `recsql dbt model NAME -m METRIC ...` or `recsql dbt --regenerate`")
    options = {name: getattr(args, name) for name in _OPTIONS if hasattr(args, name)}
    inputs = {role: getattr(args, f"input_{role}") for role in ROLES if getattr(args, f"input_{role}")}
    spec = ModelSpec(args.name, list(args.metrics), inputs=inputs, output=args.output,
                     column_names=args.column_names, options=options, text_ids=tuple(args.text_ids))
    for path in write_model(spec, Path(args.project), args.adapters or None):
        print(path)
    return 0
