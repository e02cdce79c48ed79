"""The options the commands share: the inputs (RECS and TRUTH or TREC files, metrics, items and
the other side inputs, segments) and the input columns and definitions (``--user-col``, ...,
``--convention``), each added to a parser by one function, and the keywords they give the Python
entry points."""
from __future__ import annotations

import argparse
import sys

from .errors import RecsqlError


def columns(parser: argparse.ArgumentParser) -> None:
    from .arguments import DUPLICATE_POLICIES
    from .compose import POPULATIONS, TIES
    from .conventions import CONVENTIONS
    group = parser.add_argument_group("input columns and definitions")
    group.add_argument("--user-col", default="user_id", help="user column (default: user_id)")
    group.add_argument("--item-col", default="item_id", help="item column (default: item_id)")
    group.add_argument("--score-col", default="score", help="score column, higher is better (default: score)")
    group.add_argument("--rank-col", default=None, help="rank column, 1 is best (instead of a score)")
    group.add_argument("--relevance-col", default="relevance",
                       help="truth relevance column (default: relevance; absent with only key columns beside it: every "
                            "truth row has relevance 1)")
    group.add_argument("--no-relevance", dest="relevance_col", action="store_const", const=None,
                       help="no relevance column: every truth row is relevant (other columns of truth are ignored)")
    group.add_argument("--price-col", default="price", help="items price column (default: price)")
    group.add_argument("--probability-col", default="probability", help="items probability column (novelty p=items)")
    group.add_argument("--category-col", default="category", help="items category column (diversity)")
    group.add_argument("--features-col", default="features", help="items feature-vector array column (DuckDB)")
    group.add_argument("--feature-col", default="feature", help="--item-features feature column (default: feature)")
    group.add_argument("--value-col", default="value", help="--item-features value column (default: value)")
    group.add_argument("--run-col", action="append", default=[], dest="run_cols",
                       help="run key column of recs (model, experiment, ...); repeat for several")
    group.add_argument("--threshold", type=float, default=None,
                       help="relevant iff relevance >= threshold (default 1; trec_eval's -l)")
    group.add_argument("--population", choices=POPULATIONS, default=None,
                       help="users averaged over (default: the convention's; recsql: relevant)")
    group.add_argument("--convention", choices=sorted(CONVENTIONS), default="recsql",
                       help="reproduce another tool's numbers: tie rule, denominators, gains, population "
                            "(default: recsql)")
    group.add_argument("--ties", choices=TIES, default=None,
                       help="equal scores: item_id (ascending), item_id_desc, or average (expected value over "
                            "every order; default: the convention's)")
    group.add_argument("--duplicates", choices=DUPLICATE_POLICIES, default="error",
                       help="duplicate keys: error (default), best / max to keep the best row")


def metric_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--metric", action="append", dest="metrics", required=True,
                        help="metric, e.g. ndcg@10 or 'ndcg(gain=exponential)@10'; repeat for several")


def column_kwargs(args: argparse.Namespace) -> dict:
    return dict(user_col=args.user_col, item_col=args.item_col, score_col=args.score_col,
                rank_col=args.rank_col, relevance_col=args.relevance_col, price_col=args.price_col,
                run_cols=args.run_cols, threshold=args.threshold, population=args.population,
                duplicates=args.duplicates, convention=args.convention, ties=args.ties,
                probability_col=args.probability_col, category_col=args.category_col, features_col=args.features_col,
                feature_col=args.feature_col, value_col=args.value_col)


def side_inputs(parser: argparse.ArgumentParser, runs_compared: bool = False) -> None:
    """The inputs of the beyond-accuracy metrics (paths or tables), beside --items (``runs_compared``:
    compare's and report's, where ``--baseline`` names the run compared against)."""
    parser.add_argument("--interactions", help="training interactions (user, item): path or table (novelty, "
                                               "surprisal, arp, serendipity)")
    parser.add_argument("--catalog", help="catalog items (item): path or table (coverage, gini; default: --items, "
                                          "else every item of truth and recs)")
    parser.add_argument("--expected-recs", help="another recommender's lists, columns like recs (unexpectedness, "
                                                "serendipity)")
    parser.add_argument("--item-features", help="item feature vectors as rows (item, feature, value) (diversity)")
    old = "--baseline-recs" if runs_compared else "--baseline"  # its old name (--baseline names the run in compare)
    parser.add_argument(old, dest="old_expected_recs", help=argparse.SUPPRESS)


def side_kwargs(args: argparse.Namespace) -> dict:
    return dict(items=args.items, interactions=args.interactions, catalog=args.catalog,
                expected_recs=args.expected_recs, item_features=args.item_features)


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
        old = next((word.split("=")[0] for word in argv if word.split("=")[0] in spellings), spellings[0])
        target = new[2:].replace("-", "_")
        if getattr(args, target, None) is not None:
            raise RecsqlError(f"{old} is the old name of {new}: pass {new} only")
        print(f"recsql: warning: {old} is renamed {new}; {old} will be removed in the next release", file=sys.stderr)
        setattr(args, target, value)


SEGMENTS_HELP = ("each user's segment (user column and segment columns, one row per user): path or table; each run "
                 "is evaluated within each segment (the population taken within it)")
SEGMENT_COL_HELP = "a segment column of --segments (default: every column but the user); repeat for several"


def add_segments(parser: argparse.ArgumentParser, help: str = SEGMENTS_HELP) -> None:
    """``--segments``: evaluate's, sql's and compare's (each with its own help)."""
    parser.add_argument("--segments", help=help)


def add_segment_col(parser: argparse.ArgumentParser, help: str = SEGMENT_COL_HELP) -> None:
    """``--segment-col`` (repeatable): evaluate's, sql's and report's."""
    parser.add_argument("--segment-col", action="append", default=[], dest="segment_cols", help=help)


def segment_kwargs(args: argparse.Namespace) -> dict:
    return dict(segments=args.segments, segment_cols=args.segment_cols or None)


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
    parser.add_argument("--items", help="items (item_id, price, probability, category, ...): path or table")
    side_inputs(parser, runs_compared)
