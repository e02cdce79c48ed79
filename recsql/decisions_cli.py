"""``recsql compare``'s decisions: the power table (``--power``), non-inferiority or equivalence against
a margin (``--margin``), and gates that fail the command (``--fail-if``, exit status 1), each line
naming the condition and the pair (docs/guide/decisions.md).

    recsql compare recs.parquet truth.parquet -m ndcg@10 --run-col model --baseline popular \\
        --fail-if 'ndcg@10 not noninferior by 1%'
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from .errors import RecsqlError
from .gates import GATE_FORMS, Gate, parse_margin


def add_options(cp: argparse.ArgumentParser) -> None:
    cp.add_argument("--power", type=float, metavar="P",
                    help="also print, per pair, the smallest difference the paired t-test detects with power P "
                         "(e.g. 0.8) at --alpha, divided by the number of pairs under a correction")
    cp.add_argument("--power-test", choices=("t", "wilcoxon", "randomization"), default="t",
                    help="with --power: the test whose power is asked; wilcoxon and randomization are simulated from "
                         "the per-user differences of the runs compared (default: t, computed exactly)")
    cp.add_argument("--simulations", type=int, default=1000, metavar="S",
                    help="with --power-test wilcoxon or randomization: the simulated comparisons (default 1000)")
    cp.add_argument("--difference", type=float, metavar="D",
                    help="with --power: the power to detect a difference D now and the users it needs")
    cp.add_argument("--margin", metavar="M",
                    help="also print non-inferiority tests against a margin M in the metric's units, or with %% "
                         "a share of the baseline's mean (e.g. 0.01 or 2%%): is each run no worse than its baseline "
                         "by more than M?")
    cp.add_argument("--equivalence", action="store_true",
                    help="with --margin: equivalence within ±M (two one-sided tests) instead of non-inferiority")
    cp.add_argument("--lower-is-better", action="append", default=[], metavar="METRIC",
                    help="a metric where lower values are better (for --margin and --fail-if); repeat for several")
    cp.add_argument("--fail-if", action="append", default=[], metavar="CONDITION",
                    help="exit with status 1 when a condition holds for a pair: " + "; ".join(GATE_FORMS) +
                         "; MARGIN in the metric's units or with %% a share of the baseline's mean; repeat for "
                         "several")


def _margin(text: str) -> tuple[float, bool]:
    try:
        return parse_margin(text)
    except ValueError:
        raise RecsqlError(f"--margin {text!r}: pass a positive number, or a percentage of the baseline's mean "
                          "(e.g. --margin 0.01 or --margin 2%)") from None


def decide(args: argparse.Namespace, result, show, pilot: Callable[[], Any]) -> int:
    """Print the asked decision tables with ``show`` and check the gates: 1 when one fails, else 0.
    ``pilot``: evaluates the compared runs per user (the simulated power's pilot), called only then."""
    gates = [Gate.parse(text) for text in args.fail_if]  # a mistyped gate is refused before anything prints
    if args.difference is not None and args.power is None:
        raise RecsqlError("--difference needs --power (the power to detect it), e.g. --power 0.8")
    if args.equivalence and args.margin is None:
        raise RecsqlError("--equivalence needs --margin (equivalent within ± the margin), e.g. --margin 0.01")
    if args.power_test != "t" and args.power is None:
        raise RecsqlError(f"--power-test {args.power_test} needs --power (the power asked), e.g. --power 0.8")
    if args.power is not None:
        simulated = {} if args.power_test == "t" else {"pilot": pilot(), "simulations": args.simulations}
        try:
            table = result.power(args.power, args.alpha, args.difference, test=args.power_test, **simulated)
        except RecsqlError as error:  # the library's words for the simulation's options, as flags
            raise RecsqlError(str(error).replace("simulations=", "--simulations ")) from None
        show("power", table)
    if args.margin is not None:
        margin, relative = _margin(args.margin)
        if args.equivalence:
            show("equivalence", result.equivalence(margin, relative=relative, alpha=args.alpha))
        else:
            show("noninferiority", result.noninferiority(margin, relative=relative, alpha=args.alpha,
                                                          lower_is_better=args.lower_is_better))
    failures = []
    if gates:
        from .comparison_decisions import gate_failures  # the decisions' tables, with pandas: when a gate is asked
        failures = gate_failures(result, gates, args.alpha, args.lower_is_better)
    for line in failures:
        print(f"recsql: --fail-if {line}", file=sys.stderr)
    if gates and not failures:
        print(f"recsql: --fail-if: {len(gates)} condition(s) hold for none of the {len(result.tests)} comparison(s)",
              file=sys.stderr)
    return 1 if failures else 0
