"""The expected-exposure rows of a stochastic run (``sql/_ranked.sql``'s ``ee_*`` CTEs): a run that gives several
sampled rankings per user (``sample_col``) is one policy, its samples gathered under the run's keys without the
sample, and its lists written once, on its first sample (expected exposure, Diaz et al., CIKM 2020)."""
from __future__ import annotations

from sqlglot import exp

from ..trees import nodes
from .plan import RUN_KEYS, Plan, internal_runs, policy_runs
from .rewrite import drop_joins, expand_run_keys


SAMPLE_KEY = "sample_key"  # sql/_ranked.sql's word for the sample's run key in the expected-exposure CTEs


def gather_samples(plan: Plan, ctes: dict[str, exp.CTE]) -> None:
    """The expected-exposure rows gather a stochastic run's samples: they are keyed by the run's keys without
    the sample (:func:`recsql.compose.plan.policy_runs`) and written on its first sample alone. Without a
    sample column each run is its own one sample (every run key a policy key, no first sample to pick);
    with no run keys at all there is one run of one sample."""
    policy, keys = policy_runs(plan), internal_runs(plan)
    sample = keys[-1] if plan.sampled else None
    exposure = next(q for q in nodes(ctes["ee_rows"].this, exp.Select)
                    if any(j.this.alias_or_name == "s" for j in q.args.get("joins") or []))
    levels = ctes["ee_levels"].this
    if sample is None:  # no first sample to pick: every run's truth, and no sample key to write
        drop_joins(levels, {"s"})
        for select in (ctes["ee_samples"].this, exposure):
            select.set("expressions", [e for e in select.expressions if e.alias_or_name not in ("first_sample", SAMPLE_KEY)])
    if not plan.run_cols:  # one run of one sample
        for column in nodes(exposure, exp.Column):
            if column.table == "s":
                column.replace(exp.Literal.number(1))
        drop_joins(exposure, {"s"})
    for join in [*(exposure.args.get("joins") or []), *(levels.args.get("joins") or [])]:
        _policy_join(join, policy)
    for name in ("ee_samples", "ee_listed"):
        ctes[name].set("this", expand_run_keys(ctes[name].this, policy))
    if not policy:  # one stochastic run: its samples are every run
        ctes["ee_samples"].this.set("group", None)
    expand_run_keys(exposure, policy)  # its lists' keys: the run's without the sample, then the first sample
    for node in [n for tree in (ctes["ee_samples"].this, levels, exposure) for n in nodes(tree, exp.Column, exp.Alias)]:
        if isinstance(node, exp.Column) and node.name == SAMPLE_KEY:
            node.set("this", exp.to_identifier(sample))
        elif isinstance(node, exp.Alias) and node.alias == SAMPLE_KEY:
            node.set("alias", exp.to_identifier(sample))


def _policy_join(join: exp.Join, policy: list[str]) -> None:
    """A join on ``a.run_keys = b.run_keys`` (and more) made on the policy keys: a CROSS JOIN when there are
    none and nothing more."""
    on = join.args["on"]
    pairs = list(on.flatten()) if isinstance(on, exp.And) else [on]
    keyed = next(c for c in pairs if isinstance(c, exp.EQ) and c.this.name == RUN_KEYS)
    conditions = [exp.column(k, table=keyed.this.table).eq(exp.column(k, table=keyed.expression.table)) for k in policy]
    conditions += [c for c in pairs if c is not keyed]
    if conditions:
        join.set("on", exp.and_(*conditions))
    else:
        join.set("on", None)
        join.set("kind", "CROSS")
