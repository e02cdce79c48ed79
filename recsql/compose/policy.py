"""What the recs are to the off-policy estimators' target (docs/guide/logs.md, "The target policy"), from
the ``target`` option of the estimators asked:

- ``target=list`` (the default): lists, ranked as every metric ranks them; π_e(a | x, k) is 1 where the
  context's list puts item a at position k, else 0 (Plan.policy None);
- ``target=scores``: the score column is a stochastic policy's probability π_e(a | x) of each (context,
  item), one slot (Plan.policy "scores");
- ``target=positions``: each recs row (context, item, position, score) is a stochastic ranking policy's
  probability π_e(a at k | x) of showing the item at that position; the position is the recs' column of the
  logs' name (``position_col``). Such recs are no list, so no other metric reads them (Plan.policy
  "positions").

The checks read the probabilities (recsql/compose/checks.py): a score outside [0, 1] is an invalid recs
row, and ``recs_policy_excess`` counts the contexts (and for ``positions`` the context's positions and
items) whose probabilities sum above 1: a policy shows at most one item per slot, and an item at most once.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from sqlglot import exp

from ..errors import RecsqlError
from ..metrics import Metric
from .log_checks import invalid_log_value
from .plan import Plan

POLICIES = ("scores", "positions")  # the target option's values that read the recs as probabilities
EXCESS = 1e-9  # a sum of probabilities above 1 + EXCESS is no policy (rounding of the user's own sums aside)


def _target(m: Metric) -> str | None:
    """An off-policy estimator's target option (None for every other metric)."""
    return m.all_options().get("target") if m.spec.family == "off_policy" else None


def target_policy(metrics: Sequence[Metric]) -> str | None:
    """Plan.policy for ``metrics``: "scores" or "positions" when an estimator reads the recs so, else None;
    refused when the metrics read the recs two ways at once, naming both."""
    policies = {t: m for m in metrics if (t := _target(m)) in POLICIES}
    if len(policies) > 1:
        raise RecsqlError(f"metrics {str(policies['scores'])!r} and {str(policies['positions'])!r} read the recs' "
                          "scores as two different policies (target=scores: one probability per context and item; "
                          "target=positions: one per context, item and position): evaluate them in two calls")
    if "positions" in policies:
        other = next((m for m in metrics if _target(m) != "positions"), None)
        if other is not None:
            raise RecsqlError(f"metric {str(other)!r} reads the recs as lists, and {str(policies['positions'])!r} as a "
                              "policy per position (target=positions: an item may be on several rows, one per "
                              "position): evaluate it in another call, on the lists, or give it target=positions "
                              "too if it is an off-policy estimator that takes it")
    return next(iter(policies), None)


def with_policy(plan: Plan, metrics: Sequence[Metric]) -> Plan:
    """``plan`` with its :func:`target_policy` for ``metrics``."""
    policy = target_policy(metrics)
    return plan if policy == plan.policy else dataclasses.replace(plan, policy=policy)


def invalid_probability(plan: Plan) -> exp.Expression | None:
    """A recs row of recs_in whose score is no probability of the target policy (outside [0, 1]; ``ord``
    is -score), or for a policy per position whose position is not a whole number >= 1; None without one."""
    if plan.policy is None:
        return None
    invalid = exp.condition("NOT (ord <= 0 AND ord >= -1)")
    if plan.policy == "positions":  # the logs' rule for a position (recsql/compose/log_checks.py)
        invalid = exp.or_(invalid, invalid_log_value("position"))
    return invalid


def policy_excess(plan: Plan, runs: list[str]) -> exp.Select:
    """One row, ``recs_policy_excess``: the groups of recs_in whose probabilities sum above 1: per context
    (target=scores); per context and position, and per context and item (target=positions)."""
    groups = [[*runs, "user_id"]] if plan.policy == "scores" else [[*runs, "user_id", "position"],
                                                                    [*runs, "user_id", "item_id"]]
    over = [exp.select(exp.alias_(exp.Literal.number(1), "g")).from_("recs_in").group_by(*keys)
            .having(exp.condition(f"SUM(-ord) > 1 + {EXCESS}")) for keys in groups]
    union = over[0] if len(over) == 1 else exp.union(*over, distinct=False)
    return exp.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), "recs_policy_excess")) \
        .from_(union.subquery("o"))
