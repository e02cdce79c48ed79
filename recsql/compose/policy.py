"""What the recs are to the off-policy estimators' target (docs/guide/logs.md, "The target policy"), from
the ``target`` option of the estimators asked:

- ``target=list`` (the default): lists, ranked as every metric ranks them; π_e(a | x, k) is 1 where the
  context's list puts item a at position k, else 0 (Plan.policy None);
- ``target=scores``: the score column is a stochastic policy's probability π_e(a | x) of each (context,
  item), one slot (Plan.policy "scores");
- ``target=positions``: each recs row (context, item, position, score) is a stochastic ranking policy's
  probability π_e(a at k | x) of showing the item at that position; the position is the recs' column of the
  logs' name (``position_col``). Such recs are no list, so no other metric reads them (Plan.policy
  "positions");
- ``target=slates`` (the whole-slate and cascade estimators): each recs row (context, item, position, score) is
  the target policy's probability π_e(a_{s,1..k} | x) of the logged slate's items at positions 1..k, one row per
  logged row (Plan.policy "slates"); the cascade estimators read it per row, the slate ones at the slate's last
  position (Saito et al. 2021, obp's ``evaluation_policy_pscore_cascade``).

The checks read the probabilities (recsql/compose/checks.py): a score outside [0, 1] is an invalid recs
row, and ``recs_policy_excess`` counts the contexts (and for ``positions`` the context's positions and
items) whose probabilities sum above 1: a policy shows at most one item per slot, and an item at most once;
for ``slates`` the rows whose probability exceeds that of a shorter prefix of their slate (a prefix is never
likelier than a shorter one), and ``recs_slate_mismatch`` the logged rows without their recs row (same
context, position and item) and the recs rows without their logged row.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from sqlglot import exp

from ..errors import RecsqlError
from ..metrics import Metric
from ..trees import parse
from .log_checks import invalid_log_value
from .plan import Plan, logs_runs
from .rewrite import drop_joins

POLICIES = ("scores", "positions", "slates")  # the target option's values that read the recs as probabilities
EXCESS = 1e-9  # a sum of probabilities above 1 + EXCESS is no policy (rounding of the user's own sums aside)
PER_POSITION = ("positions", "slates")  # the policies whose recs rows are keyed by the position too


def _target(m: Metric) -> str | None:
    """An off-policy estimator's target option (None for every other metric)."""
    return m.all_options().get("target") if m.spec.family == "off_policy" else None


def target_policy(metrics: Sequence[Metric]) -> str | None:
    """Plan.policy for ``metrics``: "scores", "positions" or "slates" when an estimator reads the recs so, else
    None; refused when the metrics read the recs two ways at once, naming both."""
    policies = {t: m for m in metrics if (t := _target(m)) in POLICIES}
    if len(policies) > 1:
        (a, first), (b, second) = list(policies.items())[:2]
        raise RecsqlError(f"metrics {str(first)!r} and {str(second)!r} read the recs' scores as two different "
                          f"policies ({_MEANING[a]}; {_MEANING[b]}): evaluate them in two calls")
    for policy in PER_POSITION:
        if policy in policies:
            other = next((m for m in metrics if _target(m) != policy), None)
            if other is not None:
                raise RecsqlError(f"metric {str(other)!r} reads the recs as lists, and {str(policies[policy])!r} as "
                                  f"{_MEANING[policy]}: evaluate it in another call, on the lists, or give it "
                                  f"target={policy} too if it is an off-policy estimator that takes it")
    return next(iter(policies), None)


_MEANING = {"scores": "target=scores: one probability per context and item",
            "positions": "a policy per position (target=positions: one probability per context, item and position; "
                         "an item may be on several rows, one per position)",
            "slates": "the probabilities of the logged slates' prefixes (target=slates: one per logged row, "
                      "π_e(a_1..a_k | x) at its position k)"}


def with_policy(plan: Plan, metrics: Sequence[Metric]) -> Plan:
    """``plan`` with its :func:`target_policy` for ``metrics``."""
    policy = target_policy(metrics)
    return plan if policy == plan.policy else dataclasses.replace(plan, policy=policy)


def _per_position(ctes: dict[str, exp.CTE]) -> None:
    """A target policy per position (Plan.policy "positions"): log_rows reads the recs' probability of the logged
    item at the logged position (join ``c``), and log_policy's value of the target per context and position,
    Σ_a π_e(a at k | x) q̂(x, a), at the logged position (join ``p``)."""
    policy = ctes["log_policy"].this
    policy.set("expressions", [*policy.expressions, exp.column("position", table="r")])
    policy.set("group", exp.Group(expressions=[*policy.args["group"].expressions, exp.column("position", table="r")]))
    for join in ctes["log_rows"].this.args["joins"]:
        if join.alias_or_name in ("c", "p"):
            join.set("on", exp.and_(join.args["on"], exp.column("position", table=join.alias_or_name)
                                    .eq(exp.column("position", table="l"))))


def _slate_target(select: exp.Select) -> None:
    """The probabilities of the logged slates' prefixes (Plan.policy "slates"): log_rows' cascade probability is the
    recs' score of the row's own (context, position, item), π_e(a_1..a_k | x) (join ``c``), and its slate
    probability that score at the slate's last logged position, π_e(slate | x)."""
    for projection in select.expressions:
        if projection.alias == "log_pe_cascade":
            projection.set("this", parse("CAST(COALESCE(-c.ord, 0) AS DOUBLE)", read="duckdb"))
        elif projection.alias == "log_pe_slate":
            projection.set("this", parse("CAST(FIRST_VALUE(COALESCE(-c.ord, 0)) OVER (PARTITION BY runs.run_keys, "
                                         "l.user_id ORDER BY l.position DESC) AS DOUBLE)", read="duckdb"))


def target_rows(plan: Plan, ctes: dict[str, exp.CTE]) -> None:
    """The stage's log_rows (and log_policy) for a stochastic target read per position: target=positions and
    target=slates join the recs on the logged position too; target=slates reads its prefix probabilities, and no
    list: the join to the ranked rows (``s``, by item) goes, as a slate may show an item at two positions."""
    if plan.policy in PER_POSITION:
        _per_position(ctes)
    if plan.policy == "slates":
        _slate_target(ctes["log_rows"].this)
        drop_joins(ctes["log_rows"].this, {"s"})


def invalid_probability(plan: Plan) -> exp.Expression | None:
    """A recs row of recs_in whose score is no probability of the target policy (outside [0, 1]; ``ord``
    is -score), or for a policy per position whose position is not a whole number >= 1; None without one."""
    if plan.policy is None:
        return None
    invalid = exp.condition("NOT (ord <= 0 AND ord >= -1)")
    if plan.policy in PER_POSITION:  # the logs' rule for a position (recsql/compose/log_checks.py)
        invalid = exp.or_(invalid, invalid_log_value("position"))
    return invalid


def policy_excess(plan: Plan, runs: list[str]) -> exp.Select:
    """One row, ``recs_policy_excess``: the groups of recs_in whose probabilities sum above 1: per context
    (target=scores); per context and position, and per context and item (target=positions); for target=slates
    the rows whose probability exceeds, beyond EXCESS, the smallest of their slate's earlier positions."""
    if plan.policy == "slates":
        keys = ", ".join([*runs, "user_id"])
        return parse(f"SELECT CAST(COUNT(*) AS BIGINT) AS recs_policy_excess FROM (SELECT -ord AS p, MIN(-ord) OVER "
                     f"(PARTITION BY {keys} ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) "
                     f"AS shorter FROM recs_in) AS o WHERE p > shorter + {EXCESS}", read="duckdb")
    groups = [[*runs, "user_id"]] if plan.policy == "scores" else [[*runs, "user_id", "position"],
                                                                    [*runs, "user_id", "item_id"]]
    over = [exp.select(exp.alias_(exp.Literal.number(1), "g")).from_("recs_in").group_by(*keys)
            .having(exp.condition(f"SUM(-ord) > 1 + {EXCESS}")) for keys in groups]
    union = over[0] if len(over) == 1 else exp.union(*over, distinct=False)
    return exp.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), "recs_policy_excess")) \
        .from_(union.subquery("o"))


def slate_mismatch(plan: Plan, runs: list[str]) -> exp.Select:
    """One row, ``recs_slate_mismatch`` (target=slates): the logged rows, per run of recs (and of the logs' own
    run keys, when they have some), without a recs row of the same context, position and item, plus the recs
    rows without such a logged row. A missing row is refused, never read as probability 0."""
    same = "r.user_id = l.user_id AND r.position = l.position AND r.item_id = l.item_id"
    logged_runs = " AND ".join(f"l.{k} = r.{k}" for k in logs_runs(plan))
    unlogged = (f"SELECT 1 AS g FROM recs_in AS r WHERE NOT EXISTS (SELECT 1 FROM logs_in AS l WHERE {same}"
                f"{' AND ' + logged_runs if logged_runs else ''})")
    in_run = " AND ".join([same, *(f"r.{k} = u.{k}" for k in runs)])
    run_rows = f" CROSS JOIN (SELECT DISTINCT {', '.join(runs)} FROM recs_in) AS u" if runs else ""
    of_run = " AND ".join(f"l.{k} = u.{k}" for k in logs_runs(plan))
    unmatched = (f"SELECT 1 AS g FROM logs_in AS l{run_rows} WHERE {of_run + ' AND ' if of_run else ''}"
                 f"NOT EXISTS (SELECT 1 FROM recs_in AS r WHERE {in_run})")
    return parse(f"SELECT CAST(COUNT(*) AS BIGINT) AS recs_slate_mismatch FROM ({unlogged} UNION ALL {unmatched}) AS m",
                 read="duckdb")
