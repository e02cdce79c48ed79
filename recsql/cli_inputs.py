"""The options the commands share: the inputs (RECS and TRUTH or TREC files, metrics, items and
the other side inputs, segments) and the input columns and definitions (``--user-col``, ...,
``--convention``), each added to a parser by one function, and the keywords they give the Python
entry points."""
from __future__ import annotations

import argparse
import sys

from .errors import RecsqlError
from .options import add, add_group, values


def columns(parser: argparse.ArgumentParser) -> None:
    """The input columns and definitions (``--user-col``, ..., ``--duplicates``: recsql/options.py)."""
    add_group(parser.add_argument_group("input columns and definitions"), "columns")


def metric_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--metric", action="append", dest="metrics", required=True,
                        help="metric, e.g. ndcg@10 or 'ndcg(gain=exponential)@10'; repeat for several")


def column_kwargs(args: argparse.Namespace) -> dict:
    return values(args, "columns")


def side_inputs(parser: argparse.ArgumentParser, runs_compared: bool = False) -> None:
    """The inputs of the beyond-accuracy metrics (paths or tables), beside --items (``runs_compared``:
    compare's and report's, where ``--baseline`` names the run compared against)."""
    add_group(parser, "inputs", but=("items",))
    old = "--baseline-recs" if runs_compared else "--baseline"  # its old name (--baseline names the run in compare)
    parser.add_argument(old, dest="old_expected_recs", help=argparse.SUPPRESS)


def side_kwargs(args: argparse.Namespace) -> dict:
    return values(args, "inputs")


# Options renamed, kept one release: (the command line's word for it, its parser destination, the new option).
RENAMED = ((("--baseline", "--baseline-recs"), "old_expected_recs", "--expected-recs"),
           (("--out",), "old_summary_table", "--summary-table"),
           (("--out-per-user",), "old_per_user_table", "--per-user-table"))


def renamed_options(args: argparse.Namespace, argv: list[str]) -> None:
    """Options given by their old names: one line of warning each on stderr, and the value moved to
    the new name (both given: an error)."""
    for spellings, dest, new in RENAMED:
        value = getattr(args, dest, None)
        if value is None:
            continue
        words = {word.split("=")[0] for word in argv}  # the longest first: compare's --baseline names a run
        old = next((flag for flag in sorted(spellings, key=len, reverse=True) if flag in words), spellings[0])
        target = new[2:].replace("-", "_")
        if getattr(args, target, None) is not None:
            raise RecsqlError(f"{old} is the old name of {new}: pass {new} only")
        print(f"recsql: warning: {old} is renamed {new}; {old} will be removed in the next release", file=sys.stderr)
        setattr(args, target, value)


def add_segments(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--segments``: evaluate's, sql's and compare's (each with its own help)."""
    add(parser, "segments", help)


def add_segment_col(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--segment-col`` (repeatable): evaluate's, sql's, compare's and report's."""
    add(parser, "segment_cols", help)


def add_min_ess_share(parser: argparse.ArgumentParser) -> None:
    """``--min-ess-share``: the threshold of the warning on the off-policy estimators' weights (evaluate's,
    compare's and report's; recsql/weights_warning.py)."""
    from .weights_warning import MIN_ESS_SHARE
    parser.add_argument("--min-ess-share", type=float, default=MIN_ESS_SHARE,
                        help=f"warn when an off-policy estimator's weights have an effective sample size below this "
                             f"share of the logged impressions (default {MIN_ESS_SHARE}: ESS < n/10; 0: never)")


def segment_kwargs(args: argparse.Namespace) -> dict:
    return values(args, "segments")


def recs_and_truth(args: argparse.Namespace) -> tuple[object, object]:
    """The two inputs: RECS TRUTH, with either one given as a TREC file instead (--run / --qrels);
    truth may be missing (novelty, diversity, coverage, ... need none: the API names the metric that does)."""
    from .trec import trec_qrels, trec_run
    positional = [p for p in (args.recs, args.truth) if p is not None]
    recs = trec_run(args.run) if args.run else (positional.pop(0) if positional else None)
    truth = trec_qrels(args.qrels) if args.qrels else (positional.pop(0) if positional else None)
    if positional or recs is None:
        raise RecsqlError("name each input once: recsql evaluate RECS TRUTH -m ..., or --run RUN_FILE --qrels QRELS_FILE "
                          "(either may replace its positional argument; TRUTH may be left out for metrics that need none)")
    return recs, truth


def inputs(parser: argparse.ArgumentParser, runs_compared: bool = False) -> None:
    """The inputs of ``evaluate`` and ``compare``: RECS and TRUTH (or TREC files), metrics, items and
    the other side inputs."""
    parser.add_argument("recs", nargs="?", help="recommendations: Parquet/CSV/JSON path or glob, or a table in --db")
    parser.add_argument("truth", nargs="?", help="truth: Parquet/CSV/JSON path or glob, or a table in --db")
    parser.add_argument("--run", help="recommendations as a TREC run file (qid Q0 docno rank score tag), instead of RECS")
    parser.add_argument("--qrels", help="truth as a TREC qrels file (qid 0 docno relevance), instead of TRUTH")
    metric_option(parser)
    add(parser, "items")
    side_inputs(parser, runs_compared)
