"""``recsql compare``: paired tests and bootstrap intervals between runs, on the command line.

    recsql compare recs.parquet truth.parquet -m ndcg@10 -m recall@20 --run-col model --baseline popular

The table format prints each run's mean with its interval, then one line per comparison: the
difference with its interval, each test's corrected p-value and a verdict at ``--alpha``; ``--wide``
prints every column. csv and json print the tests (or, with ``--runs``, the runs) with every digit.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from . import comparison, decisions_cli
from .cli_inputs import (add_min_ess_share, add_segment_col, add_segments, column_kwargs, columns, inputs, recs_and_truth,
                         side_kwargs)
from .cli_output import FORMATS
from .errors import RecsqlError
from .extras import import_ahead
from .safe_text import for_terminal
from .table_text import lists_text
from .comparison_settings import GLOBAL_INTERVAL_BIAS, excludes, resampled_globals
from .significance import CORRECTIONS

P_FLOOR = 1e-16  # a smaller p-value (0.0 included, where a tail probability underflows) prints as "< 1e-16"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``compare`` subcommand, with evaluate's inputs and column options."""
    cp = sub.add_parser("compare", help="paired tests and bootstrap intervals between runs (DuckDB or --db)",
                        conflict_handler="resolve")
    inputs(cp, runs_compared=True)
    options(cp)
    cp.add_argument("--format", choices=sorted(FORMATS), default="table", help="output format (default: table)")
    cp.add_argument("--runs", action="store_true", help="csv/json: print each run's mean and interval instead "
                                                        "of the tests")
    cp.add_argument("--wide", action="store_true", help="table: every column (statistics, each p-value before and "
                                                        "after the correction, effect size, wins/ties/losses)")
    cp.add_argument("--alpha", type=float, default=0.05,
                    help="table: the level of the verdict (default 0.05): higher / lower when every test's corrected "
                         "p-value is below it, else not significant")
    add_segment_col(cp, "a segment column of --segments to compare within (repeat for several; default: every "
                        "column but the user's)")
    decisions_cli.add_options(cp)
    columns(cp)
    cp.set_defaults(func=cmd_compare)


def options(cp: argparse.ArgumentParser) -> None:
    """compare's own options (the baseline run, segments, tests, interval, resampling, correction, --db),
    shared by ``recsql compare`` and ``recsql report``."""
    cp.add_argument("--baseline", help="the run every other run is compared with (its run column's value; "
                                       "col=value/col=value for several run columns); default: every pair")
    add_segments(cp, "each user's segment (user column and segment columns, one row per user): path or table; runs "
                     "are compared within each segment")
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
    add_min_ess_share(cp)


def keywords(args: argparse.Namespace) -> dict:
    """compare's keywords from the parsed options (but the inputs RECS and TRUTH, metrics and
    segments): evaluate's column options and side inputs, the baseline run and the tests' settings."""
    return dict(baseline=args.baseline, tests=args.tests or comparison.TESTS, ci=args.ci, resamples=args.resamples,
                seed=args.seed, correction=None if args.correction == "none" else args.correction,
                con=args.db, min_ess_share=args.min_ess_share, **column_kwargs(args), **side_kwargs(args))


def cmd_compare(args: argparse.Namespace) -> int:
    recs, truth = recs_and_truth(args)
    if not args.run_cols:
        raise RecsqlError("compare needs runs: name the run key column of RECS with --run-col (e.g. --run-col model)")
    import_ahead(("scipy.special",))  # the p-values' tails, imported while the statement runs
    result = comparison.compare(recs, truth, args.metrics, segments=args.segments, segment_cols=args.segment_cols,
                                **keywords(args))
    if not 0 < args.alpha < 1:
        raise RecsqlError(f"--alpha {args.alpha}: the verdict's level must be between 0 and 1, e.g. --alpha 0.05")
    if args.format == "table":
        print(for_terminal(tables(result, args.alpha, args.wide)), flush=True)  # names cannot drive the terminal
    else:
        print(FORMATS[args.format](result.runs if args.runs else result.tests), flush=True)

    def show(name: str, table) -> None:
        if args.format == "table":
            text = table.to_string(index=False, float_format=lambda v: f"{v:.6g}")
            print(for_terminal(f"\n{name}\n{text}"), flush=True)
        else:
            print(FORMATS[args.format](table), flush=True)
    def pilot():  # the compared runs' per-user values, for a simulated power
        from .api import evaluate
        return evaluate(recs, truth, args.metrics, con=args.db, **column_kwargs(args), **side_kwargs(args))
    status = decisions_cli.decide(args, result, show, pilot)
    runs, tests = (table.rows for table in result.tables)
    print(f"recsql: {len(result.metrics)} metric(s), {len({r['run'] for r in runs})} run(s), {len(tests)} "
          f"comparison(s), {result.settings.resamples} resamples, {result.seconds:.3f} s", file=sys.stderr)
    return status


def p_text(p: float, digits: int = 2) -> str:
    """A p-value as printed: ``digits`` significant digits, ``< 1e-16`` below :data:`P_FLOOR` (never 0).

    >>> p_text(0.0), p_text(3.2e-70), p_text(0.04567), p_text(0.04567, 6), p_text(float("nan"))
    ('< 1e-16', '< 1e-16', '0.046', '0.04567', 'NaN')
    """
    return "NaN" if p != p else f"< {P_FLOOR:g}" if p < P_FLOOR else f"{p:.{digits}g}"


def _interval(low: float, high: float) -> str:
    return f"[{low:.6f}, {high:.6f}]"


def _p_columns(result: comparison.Comparison) -> dict[str, str]:
    """Each asked test -> its p-value column: the corrected one when there is one."""
    columns = {test: comparison.TEST_COLUMNS[test][-1] for test in result.settings.tests}
    return {test: f"{c}_adj" if f"{c}_adj" in result.tables[1].columns else c for test, c in columns.items()}


def _verdict(row, p_columns: list[str], alpha: float) -> str:
    """higher / lower when every test's p-value is below alpha, else not significant."""
    if not all(row[c] < alpha for c in p_columns):  # NaN: never significant
        return "not significant"
    return "higher" if row["mean_diff"] > 0 else "lower"


def compact(result: comparison.Comparison, alpha: float) -> tuple[dict[str, list], dict[str, list]]:
    """The runs and the tests, one short line each (column -> cells; the key columns' cells as they are, the
    others text): mean or difference with its interval, each test's corrected p-value and the verdict at
    ``alpha``."""
    level = f"{result.settings.ci:.0%} interval"
    runs, tests = result.tables
    short_runs = {k: [r[k] for r in runs.rows] for k in runs.columns[:runs.columns.index("mean")]}
    short_runs["mean"] = [f"{r['mean']:.6f}" for r in runs.rows]
    short_runs[level] = [_interval(r["ci_low"], r["ci_high"]) for r in runs.rows]
    p_columns = _p_columns(result)
    short_tests = {k: [r[k] for r in tests.rows] for k in tests.columns[:tests.columns.index("n")]}
    short_tests["difference"] = [f"{r['mean_diff']:+.6f}" for r in tests.rows]
    short_tests[level] = [_interval(r["ci_low"], r["ci_high"]) for r in tests.rows]
    for test, column in p_columns.items():
        short_tests[f"p({test})"] = [p_text(r[column]) for r in tests.rows]
    short_tests["verdict"] = [_verdict(r, list(p_columns.values()), alpha) for r in tests.rows]
    return short_runs, short_tests


def _text(columns: dict[str, list], frame: Callable[[], Any], first: str) -> str:
    """``columns`` as pandas writes them: by :func:`recsql.table_text.lists_text` when it writes them (no
    pandas), else pandas' own text of the result's DataFrame ``frame()``, its key columns (those before the
    column ``first``) with the text columns of ``columns`` after them."""
    text = lists_text(columns)
    if text is not None:
        return text
    whole = frame()
    keys = list(whole.columns[:whole.columns.get_loc(first)])
    return whole[keys].assign(**{c: cells for c, cells in columns.items() if c not in keys}).to_string(index=False)


def tables(result: comparison.Comparison, alpha: float, wide: bool) -> str:
    """The table format: the runs, then the tests (compact, or every column with ``wide``)."""
    correction = result.settings.correction or "none"
    if wide:  # p-values as small as they are: 6 significant digits, but never 0
        p_formats = {c: lambda p: p_text(p, 6) for c in result.tests.columns if c.startswith("p_")}
        runs = result.runs.to_string(index=False, float_format=lambda v: f"{v:.6g}")
        tests = result.tests.to_string(index=False, float_format=lambda v: f"{v:.6g}", formatters=p_formats)
        heading = f"tests (correction: {correction})"
    else:
        short_runs, short_tests = compact(result, alpha)
        runs, tests = _text(short_runs, lambda: result.runs, "mean"), _text(short_tests, lambda: result.tests, "n")
        heading = (f"tests (run minus baseline; p-values corrected: {correction}; verdict at alpha {alpha:g}, every "
                   "test below it; --wide: every column)")
    return (f"runs (mean and {result.settings.ci:.0%} bootstrap interval over users)\n{runs}\n{excluded(result)}\n"
            f"{heading}\n{tests}")


def excluded(result: comparison.Comparison) -> str:
    """A note under the runs' table naming each global metric (one number per run: coverage, gini,
    personalization) whose interval excludes its value, and why; empty when none does."""
    glob = resampled_globals(result.metrics)
    runs = result.tables[0]
    keys = runs.columns[:runs.columns.index("metric")]  # the run's (and segment's) key columns
    outside = [f"{r['metric']} of {'/'.join(str(r[k]) for k in keys)}" for r in runs.rows if r["metric"] in glob
               and excludes(r["mean"], r["ci_low"], r["ci_high"])]
    return f"note: the interval excludes the value for {', '.join(outside)}: {GLOBAL_INTERVAL_BIAS}\n" if outside else ""
