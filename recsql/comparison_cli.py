"""``recsql compare``: paired tests and bootstrap intervals between runs, on the command line.

    recsql compare recs.parquet truth.parquet -m ndcg@10 -m recall@20 --run-col model --baseline popular

The table format prints each run's mean with its interval, then the tests; csv and json print the
tests (or, with ``--runs``, the runs) with every digit.
"""
from __future__ import annotations

import argparse
import sys

from . import comparison
from .errors import RecsqlError
from .significance import CORRECTIONS


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``compare`` subcommand, with evaluate's inputs and column options."""
    from .cli import FORMATS, _columns, inputs
    cp = sub.add_parser("compare", help="paired tests and bootstrap intervals between runs (DuckDB or --db)",
                        conflict_handler="resolve")
    inputs(cp)
    options(cp)
    cp.add_argument("--format", choices=sorted(FORMATS), default="table", help="output format (default: table)")
    cp.add_argument("--runs", action="store_true", help="csv/json: print each run's mean and interval instead "
                                                        "of the tests")
    _columns(cp)
    cp.set_defaults(func=cmd_compare)


def options(cp: argparse.ArgumentParser) -> None:
    """compare's own options (baseline run, segments, tests, interval, resampling, correction, --db),
    shared by ``recsql compare`` and ``recsql report``."""
    cp.add_argument("--baseline-recs", help="another recommender's lists, columns like recs (unexpectedness, "
                                            "serendipity; evaluate's --baseline)")
    cp.add_argument("--baseline", help="the run every other run is compared with (its run column's value; "
                                       "col=value/col=value for several run columns); default: every pair")
    cp.add_argument("--segments", help="each user's segment (user column and segment columns, one row per user): "
                                       "path or table; runs are compared within each segment")
    cp.add_argument("--test", action="append", dest="tests", choices=comparison.ALL_TESTS,
                    help="a test to run (default: t, wilcoxon and randomization; tukey: randomized Tukey HSD); "
                         "repeat for several")
    cp.add_argument("--ci", type=float, default=0.95, help="bootstrap interval level (default 0.95)")
    cp.add_argument("--resamples", type=int, default=1000,
                    help="bootstrap resamples and sign-flip permutations (default 1000)")
    cp.add_argument("--seed", type=int, default=0, help="resampling seed (default 0: the same numbers every time)")
    cp.add_argument("--correction", choices=[*CORRECTIONS, "none"], default="holm",
                    help="multiple-testing correction over every row, per test (default holm)")
    cp.add_argument("--db", help="a .duckdb file holding the tables (opened read-only)")


def keywords(args: argparse.Namespace) -> dict:
    """compare's keywords from the parsed options (but the inputs RECS and TRUTH, metrics and
    segments): evaluate's column options and side inputs, the baseline run and the tests' settings."""
    from .cli import _column_kwargs, _side_kwargs
    side = {k: v for k, v in _side_kwargs(args).items() if k != "baseline"}  # --baseline names a run here
    return dict(baseline=args.baseline, tests=args.tests or comparison.TESTS, ci=args.ci, resamples=args.resamples,
                seed=args.seed, correction=None if args.correction == "none" else args.correction,
                baseline_recs=args.baseline_recs, con=args.db, **_column_kwargs(args), **side)


def cmd_compare(args: argparse.Namespace) -> int:
    from .cli import FORMATS, _recs_and_truth
    recs, truth = _recs_and_truth(args)
    if not args.run_cols:
        raise RecsqlError("compare needs runs: name the run key column of RECS with --run-col (e.g. --run-col model)")
    result = comparison.compare(recs, truth, args.metrics, segments=args.segments, **keywords(args))
    if args.format == "table":  # p-values as small as they are: 6 significant digits
        table = lambda df: df.to_string(index=False, float_format=lambda v: f"{v:.6g}")  # noqa: E731
        print(f"runs (mean and {result.settings.ci:.0%} bootstrap interval over users)")
        print(table(result.runs))
        print(f"\ntests (correction: {result.settings.correction or 'none'})")
        print(table(result.tests), flush=True)
    else:
        print(FORMATS[args.format](result.runs if args.runs else result.tests), flush=True)
    print(f"recsql: {len(result.metrics)} metric(s), {result.runs['run'].nunique()} run(s), {len(result.tests)} "
          f"comparison(s), {result.settings.resamples} resamples, {result.seconds:.3f} s", file=sys.stderr)
    return 0
