"""The ``recsql`` command: ``evaluate``, ``sql``, ``metrics``, ``compare``, ``report`` and ``dbt``.

    recsql evaluate recs.parquet truth.parquet -m ndcg@10 -m map@10
    recsql sql -m ndcg@10 --recs db.recs --truth db.truth
    recsql metrics [NAME ...]

Only the asked subcommand's code is imported (:data:`COMMANDS`): ``recsql --version`` and
``recsql metrics`` start without pandas or DuckDB, and an optional dependency (PyYAML for ``dbt``,
matplotlib for ``report``) is needed only by its own subcommand.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import Callable, Sequence

from .errors import RecsqlError
from .extras import missing_extra
from .safe_text import for_terminal

FORMATS: dict[str, Callable[[pd.DataFrame], str]] = {
    "table": lambda df: for_terminal(df.to_string(index=False, float_format=lambda v: f"{v:.6f}")),  # for reading
    "csv": lambda df: df.to_csv(index=False).rstrip("\n"),
    "json": lambda df: _to_json(df),  # every digit of each double (as csv), NaN as null
}
WRITERS: dict[str, Callable[[pd.DataFrame, str], None]] = {
    ".csv": lambda df, p: df.to_csv(p, index=False),
    ".parquet": lambda df, p: df.to_parquet(p, index=False),
    ".json": lambda df, p: Path(p).write_text(_to_json(df) + "\n", encoding="utf-8"),
}


def _to_json(df: pd.DataFrame) -> str:
    from .output import to_json
    return to_json(df)


def _columns(parser: argparse.ArgumentParser) -> None:
    from .api import DUPLICATE_POLICIES
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


def _metrics(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--metric", action="append", dest="metrics", required=True,
                        help="metric, e.g. ndcg@10 or 'ndcg(gain=exponential)@10'; repeat for several")


def _column_kwargs(args: argparse.Namespace) -> dict:
    return dict(user_col=args.user_col, item_col=args.item_col, score_col=args.score_col,
                rank_col=args.rank_col, relevance_col=args.relevance_col, price_col=args.price_col,
                run_cols=args.run_cols, threshold=args.threshold, population=args.population,
                duplicates=args.duplicates, convention=args.convention, ties=args.ties,
                probability_col=args.probability_col, category_col=args.category_col, features_col=args.features_col,
                feature_col=args.feature_col, value_col=args.value_col)


def _side_inputs(parser: argparse.ArgumentParser) -> None:
    """The inputs of the beyond-accuracy metrics (paths or tables), beside --items."""
    parser.add_argument("--interactions", help="training interactions (user, item): path or table (novelty, "
                                               "surprisal, arp, serendipity)")
    parser.add_argument("--catalog", help="catalog items (item): path or table (coverage, gini; default: --items, "
                                          "else every item of truth and recs)")
    parser.add_argument("--baseline", help="another recommender's lists, columns like recs (unexpectedness, "
                                           "serendipity)")
    parser.add_argument("--item-features", help="item feature vectors as rows (item, feature, value) (diversity)")


def _side_kwargs(args: argparse.Namespace) -> dict:
    return dict(items=args.items, interactions=args.interactions, catalog=args.catalog, baseline=args.baseline,
                item_features=args.item_features)


SEGMENTS_HELP = ("each user's segment (user column and segment columns, one row per user): path or table; each run "
                 "is evaluated within each segment (the population taken within it)")
SEGMENT_COL_HELP = "a segment column of --segments (default: every column but the user); repeat for several"


def add_segments(parser: argparse.ArgumentParser, help: str = SEGMENTS_HELP) -> None:
    """``--segments``: evaluate's, sql's and compare's (each with its own help)."""
    parser.add_argument("--segments", help=help)


def add_segment_col(parser: argparse.ArgumentParser, help: str = SEGMENT_COL_HELP) -> None:
    """``--segment-col`` (repeatable): evaluate's, sql's and report's."""
    parser.add_argument("--segment-col", action="append", default=[], dest="segment_cols", help=help)


def _segment_kwargs(args: argparse.Namespace) -> dict:
    return dict(segments=args.segments, segment_cols=args.segment_cols or None)


def _recs_and_truth(args: argparse.Namespace) -> tuple[object, object]:
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


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse every output that cannot be written, or would replace an input, before anything is
    read: --out/--out-per-user tables against the input names, --per-user against the input files
    (and the --db file), by the files they are."""
    from .output import check_outputs
    if (args.out or args.out_per_user) and not args.db:
        raise RecsqlError("--out/--out-per-user write tables into the --db database; pass --db FILE.duckdb")
    if args.per_user:
        if Path(args.per_user).is_dir():
            raise RecsqlError(f"--per-user {args.per_user!r} is a directory; name a .csv, .parquet or .json file "
                              "in it")
        if Path(args.per_user).suffix.lower() not in WRITERS:
            raise RecsqlError(f"--per-user {args.per_user!r}: write to a .csv, .parquet or .json file")
    positional = [p for p in (args.recs, args.truth) if p is not None]  # as _recs_and_truth reads them
    inputs = dict(zip([role for role, given in (("RECS", not args.run), ("TRUTH", not args.qrels)) if given], positional))
    tables = list(inputs.values()) + [name for name in [*_side_kwargs(args).values(), args.segments] if name]
    inputs.update({"--run": args.run, "--qrels": args.qrels, "--items": args.items, "--interactions": args.interactions,
                   "--catalog": args.catalog, "--baseline": args.baseline, "--item-features": args.item_features,
                   "--segments": args.segments})
    check_outputs({"--out": args.out, "--out-per-user": args.out_per_user}, {"--per-user": args.per_user},
                  tables, {**inputs, "--db": args.db}, db=args.db)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from . import api
    from .files import write_file
    _check_outputs(args)
    recs, truth = _recs_and_truth(args)
    result = api.evaluate(recs, truth, args.metrics, con=args.db, progress=_is_terminal(sys.stdout),
                          **_side_kwargs(args), **_segment_kwargs(args), **_column_kwargs(args))
    # outputs first: a closed stdout (`| head -1`) or a failed print must not lose them
    if args.out or args.out_per_user:
        result.write(args.db, summary=args.out, per_user=args.out_per_user)
    if args.per_user:
        writer = WRITERS[Path(args.per_user).suffix.lower()]
        write_file(args.per_user, lambda path: writer(result.per_user, path), "--per-user")
    print(FORMATS[args.format](result.summary), flush=True)
    print(f"recsql: {len(result.metrics)} metric(s), {_counted(result)}, {result.rows_in:,} recommendation rows, "
          f"{result.seconds:.3f} s", file=sys.stderr)
    return 0


def _counted(result) -> str:
    """The users evaluated, said as what they are: the runs, the distinct users, and with several
    runs the (run, user) rows of the per-user table (any asked metric's population)."""
    runs, rows = len(result.summary), len(result.per_user)
    users = result.per_user[result.user_col].nunique() if rows else 0
    return f"{runs} run(s), {users} user(s)" + (f", {rows} (run, user) rows" if runs > 1 else "")


def cmd_sql(args: argparse.Namespace) -> int:
    from . import api
    print(api.to_sql(args.metrics, recs=args.recs, truth=args.truth, output=args.output, **_side_kwargs(args),
                     dialect=args.dialect, text_ids=args.text_ids,
                     truth_has_run_cols=args.truth_has_run_cols, **_segment_kwargs(args), **_column_kwargs(args)))
    return 0


def _option_line(p) -> str:
    """``name = default (what it means; choices: ...)``, every word from the metric's header."""
    if p.kind == "number":
        number = "a number" if p.interval == "(-inf, inf)" else f"a number in {p.interval}"
        choices = f"auto | {number}" if p.default == "auto" else number
    else:
        choices = " | ".join(p.choices) + (" | a SQL expression in rank" if p.kind == "discount" else "")
    return f"{p.name} = {p.default} ({'; '.join(filter(None, [p.meaning, f'choices: {choices}']))})"


def cmd_metrics(args: argparse.Namespace) -> int:
    from . import names
    from .metrics import registry
    specs = [_metric_named(name) for name in args.names] if args.names else list(registry().values())
    for spec in {spec.name: spec for spec in specs}.values():
        cutoff = {"required": "@k", "optional": "[@k]", "none": ""}[spec.k_rule]
        aliases = f"  (aliases: {', '.join(spec.aliases)})" if spec.aliases else ""
        print(f"{spec.name}{cutoff}{aliases}")
        print(f"    {spec.formula}")
        for p in spec.params.values():
            print(f"    option {_option_line(p)}")
        print(f"    cite: {spec.cite}")
    if not args.names:
        print(names.listing())  # trec_eval's and ir_measures' names (recsql/names.py)
    return 0


def _metric_named(name: str):
    """The metric a ``recsql metrics NAME`` asks for: recsql's name or alias (``ndcg``, ``hr``; a
    cutoff or options are ignored: ``ndcg@10``) or another tool's (``P_10``); an unknown name is
    refused with the close matches."""
    from .metrics import parse_metric, resolve_name
    try:
        return resolve_name(name.split("@")[0].split("(")[0].strip())
    except RecsqlError as unknown:
        try:
            return parse_metric(name).spec
        except RecsqlError:
            raise RecsqlError(str(unknown).replace("Run `recsql metrics`", "Run `recsql metrics` without a name"))\
                from None


def inputs(parser: argparse.ArgumentParser) -> None:
    """The inputs of ``evaluate`` and ``compare``: RECS and TRUTH (or TREC files), metrics, items and
    the other side inputs."""
    parser.add_argument("recs", nargs="?", help="recommendations: Parquet/CSV/JSON path or glob, or a table in --db")
    parser.add_argument("truth", nargs="?", help="truth: Parquet/CSV/JSON path or glob, or a table in --db")
    parser.add_argument("--run", help="recommendations as a TREC run file (qid Q0 docno rank score tag), instead of RECS")
    parser.add_argument("--qrels", help="truth as a TREC qrels file (qid 0 docno relevance), instead of TRUTH")
    _metrics(parser)
    parser.add_argument("--items", help="items (item_id, price, probability, category, ...): path or table")
    _side_inputs(parser)


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("evaluate", help=COMMANDS["evaluate"][0])
    inputs(ev)
    ev.add_argument("--db", help="a .duckdb file holding the tables (opened read-only)")
    ev.add_argument("--per-user", help="also write per-user rows to this .csv/.parquet/.json file")
    ev.add_argument("--format", choices=sorted(FORMATS), default="table", help="summary format (default: table)")
    ev.add_argument("--out", help="also write the summary as this table in --db (atomic; never over an input)")
    ev.add_argument("--out-per-user", help="also write the per-user rows as this table in --db")
    add_segments(ev)
    add_segment_col(ev)
    _columns(ev)
    ev.set_defaults(func=cmd_evaluate)


def add_sql(sub: argparse._SubParsersAction) -> None:
    from .dialects import DIALECTS
    sq = sub.add_parser("sql", help=COMMANDS["sql"][0])
    _metrics(sq)
    sq.add_argument("--recs", default="recs", help="recommendations table name or path (default: recs)")
    sq.add_argument("--truth", default="truth", help="truth table name or path (default: truth)")
    sq.add_argument("--no-truth", dest="truth", action="store_const", const=None,
                    help="no truth input (metrics that need none: novelty, diversity, coverage, ...)")
    sq.add_argument("--items", help="items table name or path")
    _side_inputs(sq)
    sq.add_argument("--output", choices=("summary", "per_user"), default="summary")
    sq.add_argument("--dialect", default="duckdb", help=f"target SQL dialect: {', '.join(sorted(DIALECTS))} (default duckdb)")
    sq.add_argument("--text-id", action="append", default=[], dest="text_ids",
                    help="an id column holding strings (binary collation where the dialect needs one); repeatable")
    sq.add_argument("--truth-has-run-cols", action="store_true", help="truth carries the run key columns too")
    add_segments(sq, "segments table name or path (user column and segment columns, one row per user); name its "
                     "segment columns with --segment-col")
    add_segment_col(sq, "a segment column of --segments (required with it); repeat for several")
    _columns(sq)
    sq.set_defaults(func=cmd_sql)


def add_metrics(sub: argparse._SubParsersAction) -> None:
    me = sub.add_parser("metrics", help=COMMANDS["metrics"][0])
    me.add_argument("names", nargs="*", metavar="NAME",
                    help="only these metrics (a name or alias: ndcg, hr, P_10); default: every metric and the other "
                         "tools' names")
    me.set_defaults(func=cmd_metrics)


def add_dbt(sub: argparse._SubParsersAction) -> None:
    """``recsql dbt`` (recsql/dbt/cli.py), imported only when it is the command: it needs PyYAML."""
    from .dbt.cli import add_parser
    add_parser(sub)


# Each subcommand: its help line and the function that adds its parser ("module:function"), imported
# only when it is the command, so that one subcommand's dependencies never slow or break another.
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("evaluate recommendations against truth (DuckDB)", "recsql.cli:add_evaluate"),
    "sql": ("print the SQL query", "recsql.cli:add_sql"),
    "metrics": ("list every metric (or the named ones) with its formula and options", "recsql.cli:add_metrics"),
    "compare": ("paired tests and bootstrap intervals between runs (DuckDB or --db)",
                "recsql.comparison_cli:add_parser"),
    "report": ("one self-contained HTML report: summary with intervals and tests, metric@k curves, distributions, "
               "segments, definitions, SQL", "recsql.report.cli:add_parser"),
    "dbt": ("write the dbt models a project's recsql.yml lists (or check they are current)",
            "recsql.cli:add_dbt"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with ``command``'s options (the others are listed by name and help
    only; None: none's)."""
    from . import __version__
    parser = argparse.ArgumentParser(prog="recsql", description="Recommender and ranking metrics as SQL.")
    parser.add_argument("--version", action="version", version=f"recsql {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for name, (summary, where) in COMMANDS.items():
        if name == command:
            module, function = where.split(":")
            getattr(importlib.import_module(module), function)(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    interrupted: list[int] = []

    def on_signal(signum: int, frame: object) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    def stopped() -> int:
        """One line and the shell's code for the signal (130 for SIGINT, 143 for SIGTERM), after the
        ``finally`` blocks and exit handlers have removed what the run made (spill directory,
        temporary files)."""
        terminated = signal.SIGTERM in interrupted
        _say("recsql: terminated" if terminated else "recsql: interrupted")
        return 128 + (signal.SIGTERM if terminated else signal.SIGINT)

    # SIGTERM (kill, a scheduler's timeout) ends the run like Ctrl-C instead of killing the process
    # outright, so nothing is left behind; installed inside the try, so that a signal arriving just
    # as its handler is installed is caught like any other
    previous: dict[int, object] = {}
    argv = sys.argv[1:] if argv is None else list(argv)
    given = sys.stdout
    sys.stdout = _Stdout(given)
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = _install(signum, on_signal)
        try:
            args = build_parser(_command(argv)).parse_args(argv)  # imports the command's code: also interruptible
        except SystemExit:  # --help, --version, a usage error: what argparse printed must have reached stdout
            sys.stdout.flush()
            raise
        status = args.func(args)
        sys.stdout.flush()  # what is still buffered: a full disk is an error here, not at exit
        return status
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        return stopped()
    except StdoutError as err:  # `> /dev/full`, `>&-`: the results were not printed; say so, and fail
        _silence_stdout()
        _say(f"recsql: error: {err}")
        return 1
    except RecsqlError as err:
        if interrupted:
            return stopped()
        _say(f"recsql: error: {_in_flags(str(err), argv)}")
        return 2
    except ModuleNotFoundError as err:  # an optional dependency: one line naming the extra that installs it
        if interrupted:
            return stopped()
        message = missing_extra(err, f"recsql {_command(argv)}")
        if message is None:
            raise
        _say(f"recsql: error: {message}")
        return 2
    except BrokenPipeError:  # e.g. `recsql metrics | head`: the reader has what it wanted
        _silence_stdout()
        return 0
    except Exception:
        if interrupted:  # DuckDB turns Ctrl-C during a query into its own error ("Query interrupted")
            return stopped()
        raise
    finally:
        sys.stdout = given
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)


class StdoutError(OSError):
    """Standard output cannot be written (closed, a full disk, an I/O error): the results are lost."""


class _Stdout:
    """The command's standard output: writes go to ``stream``; a failure to write them (but a reader
    that went away, :class:`BrokenPipeError`: it has what it wanted) is a :class:`StdoutError` that
    says so, and a closed standard output (``>&-``, where Python's ``sys.stdout`` is None and a print
    would write nothing) is one at the first write, never a silent success."""

    def __init__(self, stream: object) -> None:
        self._stream, self._lost = stream, None  # _lost: the error of a write that failed
        if stream is None:  # fd 1 closed: hold it with /dev/null, so no file the run opens becomes "stdout"
            with contextlib.suppress(OSError):
                if _closed(1):
                    fd = os.open(os.devnull, os.O_WRONLY)
                    if fd != 1:
                        os.close(fd)

    def write(self, text: str) -> int:
        return self._call("write", text)

    def flush(self) -> None:
        """Flush; a write that failed before (and was swallowed, as argparse does) fails here again."""
        if self._lost is not None:
            raise self._lost
        if self._stream is not None:
            self._call("flush")

    def _call(self, method: str, *args: object) -> object:
        if self._stream is None:
            self._lost = StdoutError("standard output is closed (>&-), so nothing could be printed; redirect it "
                                     "to a file or to /dev/null instead")
            raise self._lost
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as err:  # ValueError: a file Python itself has closed
            reason = getattr(err, "strerror", None) or str(err)
            self._lost = StdoutError(f"standard output could not be written ({reason}); the results were not "
                                     "printed in full")
            raise self._lost from None

    def isatty(self) -> bool:
        return _is_terminal(self._stream)

    def __getattr__(self, name: str) -> object:
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
        return False
    except OSError:
        return True


def _in_flags(message: str, argv: Sequence[str]) -> str:
    """An error message in the command line's words: each Python keyword of recsql.evaluate,
    to_sql and compare that the command has an option for, as that option (recsql/flags.py)."""
    from .flags import flag_table, python_keywords, to_flags
    command = _command(argv)
    if command not in COMMANDS:
        return message
    chosen = next(a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction))
    return to_flags(message, flag_table(chosen.choices[command], python_keywords()))


def _install(signum: int, handler: Callable) -> object:
    """Install a signal handler (only the main thread may); the previous one, or None."""
    try:
        return signal.signal(signum, handler)
    except ValueError:  # not the main thread
        return None


def _is_terminal(stream: object) -> bool:
    """Whether a stream is a terminal (False for a closed or missing stdout: `recsql ... >&-`)."""
    try:
        return bool(stream is not None and stream.isatty())  # type: ignore[attr-defined]
    except (ValueError, OSError, AttributeError):
        return False


def _say(line: str) -> None:
    """One line to stderr, every character that could drive the terminal (a name's escape sequence,
    carriage return or direction override) shown as its escape."""
    try:
        print(for_terminal(line), file=sys.stderr, flush=True)
    except (BrokenPipeError, ValueError, OSError):
        pass


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture stdout)
        pass


if __name__ == "__main__":
    sys.exit(main())
