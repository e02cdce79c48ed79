"""The ``recsql`` command: ``evaluate``, ``sql``, ``metrics``, ``compare``, ``report`` and ``dbt``.

    recsql evaluate recs.parquet truth.parquet -m ndcg@10 -m map@10
    recsql sql -m ndcg@10 --recs db.recs --truth db.truth
    recsql metrics [NAME ...]

Only the asked subcommand's code is imported (:data:`COMMANDS`): ``recsql --version`` and
``recsql metrics`` start without pandas or DuckDB, and an optional dependency (PyYAML for ``dbt``,
the engines' drivers) is needed only by its own use.
"""
from __future__ import annotations

import argparse
import importlib
import signal
import sys
from pathlib import Path
from typing import Callable, Sequence

from .cli_inputs import (add_min_ess_share, add_segment_col, add_segments, column_kwargs, columns, inputs, metric_option, recs_and_truth,
                         renamed_options, segment_kwargs, side_inputs, side_kwargs)
from .cli_output import FORMATS, WRITERS, Stdout, StdoutError, is_terminal, say, silence_stdout, summary_text
from .errors import RecsqlError
from .options import add as add_option
from .extras import missing_extra
from .files import signals_received, stop_if_signalled, write_file


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse every output that cannot be written, or would replace an input, before anything is
    read: --summary-table/--per-user-table tables against the input names, --per-user against the
    input files (and the --db file), by the files they are."""
    from .output import check_outputs
    if (args.summary_table or args.per_user_table) and not args.db:
        raise RecsqlError("--summary-table/--per-user-table write tables into the --db database; pass --db "
                          "FILE.duckdb")
    if args.per_user:
        if Path(args.per_user).is_dir():
            raise RecsqlError(f"--per-user {args.per_user!r} is a directory; name a .csv, .parquet or .json file "
                              "in it")
        if Path(args.per_user).suffix.lower() not in WRITERS:
            raise RecsqlError(f"--per-user {args.per_user!r}: write to a .csv, .parquet or .json file")
    positional = [p for p in (args.recs, args.truth) if p is not None]  # as recs_and_truth reads them
    inputs = dict(zip([role for role, given in (("RECS", not args.run), ("TRUTH", not args.qrels)) if given], positional))
    tables = list(inputs.values()) + [name for name in [*side_kwargs(args).values(), args.segments] if name]
    inputs.update({"--run": args.run, "--qrels": args.qrels, "--items": args.items, "--interactions": args.interactions,
                   "--catalog": args.catalog, "--expected-recs": args.expected_recs, "--item-features": args.item_features,
                   "--intents": args.intents, "--logs": args.logs, "--reward-model": args.reward_model,
                   "--segments": args.segments})
    check_outputs({"--summary-table": args.summary_table, "--per-user-table": args.per_user_table},
                  {"--per-user": args.per_user},
                  tables, {**inputs, "--db": args.db}, db=args.db, replace=args.replace)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from . import api
    _check_outputs(args)
    recs, truth = recs_and_truth(args)
    result = api.evaluate(recs, truth, args.metrics, con=args.db, progress=is_terminal(sys.stdout),
                          min_ess_share=args.min_ess_share, **side_kwargs(args), **segment_kwargs(args), **column_kwargs(args))
    stop_if_signalled()  # a signal during the evaluation: no output, however its KeyboardInterrupt fared
    # outputs first: a closed stdout (`| head -1`) or a failed print must not lose them
    if args.summary_table or args.per_user_table:
        result.write(args.db, summary=args.summary_table, per_user=args.per_user_table, replace=args.replace)
    if args.per_user:
        writer = WRITERS[Path(args.per_user).suffix.lower()]
        write_file(args.per_user, lambda path: writer(result.per_user, path), "--per-user")
    print(summary_text(result, args.format), flush=True)
    print(f"recsql: {len(result.metrics)} metric(s), {_counted(result)}, {result.rows_in:,} recommendation rows, "
          f"{result.seconds:.3f} s", file=sys.stderr)
    return 0


def _counted(result) -> str:
    """The users evaluated, said as what they are: the runs, the distinct users, and with several
    runs the (run, user) rows of the per-user table (any asked metric's population)."""
    runs, rows = result.rows.arrow("summary").num_rows, result.rows.arrow("per_user").num_rows  # no pandas to count
    users = result.rows.distinct("per_user", result.user_col) if rows else 0
    return f"{runs} run(s), {users} user(s)" + (f", {rows} (run, user) rows" if runs > 1 else "")


def cmd_sql(args: argparse.Namespace) -> int:
    from .sql_text import to_sql
    print(to_sql(args.recs, args.truth, args.metrics, output=args.output, **side_kwargs(args),
                 dialect=args.dialect, text_ids=args.text_ids,
                 truth_has_run_cols=args.truth_has_run_cols, logs_run_cols=args.logs_run_cols,
                 **segment_kwargs(args), **column_kwargs(args)))
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


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("evaluate", help=COMMANDS["evaluate"][0])
    inputs(ev)
    ev.add_argument("--db", help="a .duckdb file holding the tables (opened read-only)")
    ev.add_argument("--per-user", help="also write per-user rows to this .csv/.parquet/.json file")
    ev.add_argument("--format", choices=sorted(FORMATS), default="table", help="summary format (default: table)")
    ev.add_argument("--summary-table", help="also write the summary as this table in --db (atomic; never over an "
                                            "input)")
    ev.add_argument("--per-user-table", help="also write the per-user rows as this table in --db")
    ev.add_argument("--replace", action="store_true", help="let --summary-table/--per-user-table replace a table "
                                                           "in --db that recsql did not write (never an input)")
    add_min_ess_share(ev)
    ev.add_argument("--out", dest="old_summary_table", help=argparse.SUPPRESS)  # --summary-table's old name
    ev.add_argument("--out-per-user", dest="old_per_user_table", help=argparse.SUPPRESS)
    add_segments(ev)
    add_segment_col(ev)
    columns(ev)
    ev.set_defaults(func=cmd_evaluate)


def add_sql(sub: argparse._SubParsersAction) -> None:
    from .dialects import DIALECTS
    sq = sub.add_parser("sql", help=COMMANDS["sql"][0])
    metric_option(sq)
    sq.add_argument("--recs", default="recs", help="recommendations table name or path (default: recs)")
    sq.add_argument("--truth", default="truth", help="truth table name or path (default: truth)")
    sq.add_argument("--no-truth", dest="truth", action="store_const", const=None,
                    help="no truth input (metrics that need none: novelty, diversity, coverage, ...)")
    add_option(sq, "items", "items table name or path")
    side_inputs(sq)
    sq.add_argument("--output", choices=("summary", "per_user"), default="summary")
    sq.add_argument("--dialect", default="duckdb", help=f"target SQL dialect: {', '.join(sorted(DIALECTS))} (default duckdb)")
    add_option(sq, "text_ids")
    add_option(sq, "truth_has_run_cols")
    add_option(sq, "logs_run_cols")
    add_segments(sq, "segments table name or path (user column and segment columns, one row per user); name its "
                     "segment columns with --segment-col")
    add_segment_col(sq, "a segment column of --segments (required with it); repeat for several")
    columns(sq)
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


class _Version(argparse.Action):
    """``--version``: argparse's, reading the version (the package's metadata, 20-30 ms cold) only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, default: object = argparse.SUPPRESS,
                 help: str = "show program's version number and exit") -> None:  # noqa: A002 - argparse's keyword
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: object, values: object,
                 option_string: str | None = None) -> None:
        from . import __version__
        sys.stdout.write(f"recsql {__version__}\n")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with ``command``'s options (the others are listed by name and help
    only; None: none's)."""
    parser = argparse.ArgumentParser(prog="recsql", description="Recommender and ranking metrics as SQL.")
    parser.add_argument("--version", action=_Version)
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
    interrupted = signals_received  # recsql.files commits no file once a signal has arrived
    interrupted.clear()

    def on_signal(signum: int, frame: object) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    def unraisable(report: object) -> None:
        """Python's report of an exception it cannot raise (one in a weakref callback, such as the import
        system's module-lock cleanup), less the KeyboardInterrupt of a signal recsql received there: the
        run still ends as interrupted (``stop_if_signalled``), with its one line and no "Exception
        ignored in" traceback before it."""
        if not (interrupted and isinstance(getattr(report, "exc_value", None), KeyboardInterrupt)):
            given_hook(report)

    def stopped() -> int:
        """One line and the shell's code for the signal (130 for SIGINT, 143 for SIGTERM), after the
        ``finally`` blocks and exit handlers have removed what the run made (spill directory,
        temporary files)."""
        terminated = signal.SIGTERM in interrupted
        say("recsql: terminated" if terminated else "recsql: interrupted")
        return 128 + (signal.SIGTERM if terminated else signal.SIGINT)

    # SIGTERM (kill, a scheduler's timeout) ends the run like Ctrl-C instead of killing the process
    # outright, so nothing is left behind; installed inside the try, so that a signal arriving just
    # as its handler is installed is caught like any other
    previous: dict[int, object] = {}
    argv = sys.argv[1:] if argv is None else list(argv)
    given, given_hook = sys.stdout, sys.unraisablehook
    sys.stdout = Stdout(given)
    sys.unraisablehook = unraisable
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = _install(signum, on_signal)
        try:
            args = build_parser(_command(argv)).parse_args(argv)  # imports the command's code: also interruptible
        except SystemExit:  # --help, --version, a usage error: what argparse printed must have reached stdout
            sys.stdout.flush()
            raise
        renamed_options(args, argv)
        status = args.func(args)
        stop_if_signalled()  # a signal whose KeyboardInterrupt something swallowed still ends the run as one
        sys.stdout.flush()  # what is still buffered: a full disk is an error here, not at exit
        return status
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        return stopped()
    except StdoutError as err:  # `> /dev/full`, `>&-`: the results were not printed; say so, and fail
        silence_stdout()
        say(f"recsql: error: {err}")
        return 1
    except RecsqlError as err:
        if interrupted:
            return stopped()
        say(f"recsql: error: {_in_flags(str(err), argv)}")
        return 2
    except ModuleNotFoundError as err:  # an optional dependency: one line naming the extra that installs it
        if interrupted:
            return stopped()
        message = missing_extra(err, f"recsql {_command(argv)}")
        if message is None:
            raise
        say(f"recsql: error: {message}")
        return 2
    except BrokenPipeError:  # e.g. `recsql metrics | head`: the reader has what it wanted
        silence_stdout()
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
        sys.unraisablehook = given_hook


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


if __name__ == "__main__":
    sys.exit(main())
