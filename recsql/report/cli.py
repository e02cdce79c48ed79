"""``recsql report``: evaluate, compare and write one self-contained HTML page.

    recsql report recs.parquet truth.parquet -m ndcg@10 -m recall@20 --run-col model --baseline popular \\
        [--segments users.parquet] [--segment-col cohort] [--out report.html]

Without ``--out`` the page is ``recsql-report.html`` in the current directory, never over an
existing file unless ``--force`` is given.

Takes ``recsql compare``'s inputs and options; ``--segment-col`` names segment columns of
``--segments`` (default: all of them) or, without ``--segments``, of TRUTH. A progress bar goes to
stderr when it is a terminal (``--quiet``: none).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TextIO

from ..errors import RecsqlError
from ..extras import import_ahead
from ..safe_text import for_terminal
from .data import MAX_K

DEFAULT_OUT = "recsql-report.html"  # --out's default, in the current directory


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``report`` subcommand, with compare's inputs and options."""
    from .. import comparison_cli
    from ..cli_inputs import add_segment_col, inputs
    from ..cli_inputs import columns as _columns
    rp = sub.add_parser("report", help="one self-contained HTML report: summary with intervals and tests, "
                                       "metric@k curves, distributions, segments, definitions, SQL",
                        conflict_handler="resolve")
    inputs(rp, runs_compared=True)
    comparison_cli.options(rp)
    rp.add_argument("--out", help=f"the HTML file to write (atomic; never over an input; default: {DEFAULT_OUT} in "
                                  "the current directory, which is never replaced unless --force is given)")
    rp.add_argument("--force", action="store_true", help=f"replace an existing {DEFAULT_OUT} (without --out)")
    add_segment_col(rp, "a segment column of --segments (default: every column but the user), or of TRUTH when "
                        "--segments is not given; repeat for several")
    rp.add_argument("--max-k", type=int, default=MAX_K,
                    help=f"the curves' largest cutoff (default {MAX_K}; each curve runs to its metric's largest "
                         "asked cutoff)")
    rp.add_argument("--no-curves", action="store_true", help="no metric@k curves (only the asked cutoffs)")
    rp.add_argument("--title", default=None, help="the page's title (default: recsql report)")
    rp.add_argument("--quiet", action="store_true", help="no progress bar")
    rp.add_argument("--date", action="store_true", help="put the current UTC date and time on the page (default: "
                                                        "no date, so the same results give the same page, byte for "
                                                        "byte)")
    _columns(rp)
    rp.set_defaults(func=cmd_report)


class Progress:
    """A one-line progress bar on a terminal: ``[####------] 2/5 comparing runs``."""

    def __init__(self, total: int, stream: TextIO | None) -> None:
        self.total, self.stream, self.done, self.width = total, stream, 0, 0

    def step(self, label: str) -> None:
        self.done = min(self.done + 1, self.total)
        self._draw(label)

    def finish(self, label: str) -> None:
        self.done = self.total
        self._draw(label)
        if self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, label: str) -> None:
        if self.stream is None:
            return
        filled = round(20 * self.done / self.total)
        line = f"recsql report [{'#' * filled}{'-' * (20 - filled)}] {self.done}/{self.total} {label}"[:200]
        self.stream.write("\r" + line.ljust(self.width))  # spaces over the rest of a longer previous line
        self.width = max(self.width, len(line))
        self.stream.flush()


def _check_out(args: argparse.Namespace) -> None:
    """Refuse an --out that is not an .html file or that is one of the inputs, and the default
    --out when it exists (without --force), before anything is read."""
    from ..cli_inputs import side_kwargs as _side_kwargs
    from ..output import check_outputs
    if args.out is None:
        if os.path.exists(DEFAULT_OUT) and not args.force:
            raise RecsqlError(f"{DEFAULT_OUT} exists in the current directory; pass --force to replace it, or "
                              "--out FILE.html to write the report elsewhere")
        args.out = DEFAULT_OUT
    if os.path.splitext(args.out)[1].lower() not in (".html", ".htm"):
        raise RecsqlError(f"--out {args.out!r}: write the report to an .html file")
    if os.path.isdir(args.out):
        raise RecsqlError(f"--out {args.out!r} is a directory; name an .html file in it")
    files = {"RECS": args.recs, "TRUTH": args.truth, "--run": args.run, "--qrels": args.qrels, "--items": args.items,
             "--segments": args.segments, "--db": args.db,
             **{f"--{k.replace('_', '-')}": v for k, v in _side_kwargs(args).items() if k != "items"}}
    check_outputs({}, {"--out": args.out}, [], files, db=args.db)


# Imported ahead, while the engine computes (:func:`recsql.extras.import_ahead`): the special functions of the
# tests' tails and of the detectable differences the page shows (recsql.decisions, whose root is found by
# bisection; scipy.integrate is imported only for a noncentral t's far tail, where scipy's own is NaN).
AHEAD = ("scipy.special",)


def cmd_report(args: argparse.Namespace) -> int:
    from ..cli_inputs import recs_and_truth as _recs_and_truth
    from ..cli_output import is_terminal as _is_terminal
    from ..comparison_cli import keywords
    from . import report as make_report
    _check_out(args)
    import_ahead(AHEAD)
    recs, truth = _recs_and_truth(args)
    started = time.perf_counter()
    segmented = bool(args.segments or args.segment_cols)
    bar = Progress(4 + segmented, None if args.quiet or not _is_terminal(sys.stderr) else sys.stderr)
    report = make_report(recs, truth, args.metrics, segments=args.segments, segment_cols=args.segment_cols or None,
                          curves=not args.no_curves, max_k=args.max_k, title=args.title, progress=bar.step,
                          date=True if args.date else None,
                          **keywords(args))
    report.write(args.out, "--out")
    bar.finish("written")
    data = report.data
    print(f"recsql: report {for_terminal(args.out)} ({os.path.getsize(args.out) / 1024:,.0f} KB): {len(data.asked)} metric(s), "
          f"{len(data.runs_order)} run(s), fingerprint {data.fingerprint}, {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return 0
