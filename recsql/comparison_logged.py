"""The off-policy estimators in :func:`recsql.compare` (``family: off_policy``: ips, snips, dm, dr, switch_dr, ess,
max_weight, the slate estimators and pbm_ips; docs/guide/logs.md), recomputed by their own templates over resampled
traffic.

An estimator is one number per run, a sum over the logged impressions; its bootstrap unit is the logged
context (the logs' user, the recs' user). ``sql/_compare_logged.sql`` writes, for each resample and each
randomized side, the logs with each context's impressions repeated its Poisson weight times (every sum of the
estimator, numerator and denominator, counts them that often; each copy numbered, a slate of its own for the slate
estimators) and the lists of the contexts drawn; the
composer evaluates them as runs keyed (run, baseline, resample, side) with logs that carry the run key
(``Plan.logs_has_runs``), so the estimator's own template gives each value: no second formula. The values go
through ``sql/_compare_weighted_stats.sql`` (its relations renamed ``cmp_logged_*``) into the rows the global
tests read (``sql/_compare_global_tests.sql``): an interval per run, and for a pair of runs, estimated on the
same logs and so paired by context, an interval of the difference and a randomization p-value (each context's
lists swapped between the two runs). The reward model and the propensities stay as logged.

>>> from recsql.metrics import parse_metric
>>> logged({0: parse_metric("gini@5"), 2: parse_metric("ips"), 3: parse_metric("ess(target=scores)")})
[2, 3]
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

from sqlglot import exp

from .compose.plan import Plan
from .compose.policy import PER_POSITION
from .compose.rewrite import rename_relations, union_all
from .metrics import Metric
from .resampling import bigint, poisson_thresholds

FAMILY = "off_policy"
TEMPLATE = "_compare_logged"
STATS_TEMPLATE = "_compare_weighted_stats"  # read with its relations renamed (RENAMED)
RUN_COL = "cmp_key"  # cmp_orecs' and cmp_ologs' run key, as sql/_compare_weighted.sql writes it
SCORE_COL = "cmp_score"  # −ord: the evaluation's order as a score (target=scores reads it as π_e)
PREFIX = "cmpo_"  # the resampled evaluation's CTEs, beside the evaluation's own
RENAMED = {"cmp_weighted_values": "cmp_logged_values", "cmp_weighted_metrics": "cmp_logged_metrics", "cmp_weighted_run_users": "cmp_logged_run_users",
           "cmp_weighted_decoded": "cmp_logged_decoded", "cmp_global_weighted": "cmp_global_logged"}


def logged(found: dict[int, Metric]) -> list[int]:
    """The positions among ``found`` (the global metrics, by position) of the off-policy estimators."""
    return [i for i, m in found.items() if m.spec.family == FAMILY]


def plan_for(plan: Plan) -> Plan:
    """The resampled evaluation's plan: ``cmp_orecs`` as recs (run key :data:`RUN_COL`, scored by −ord, the
    evaluation's own order, under its tie rule, so each list is the one evaluate ranked, and target=scores
    reads the score it read; target=positions and target=slates the position too) and ``cmp_ologs`` as logs carrying that key; the reward model as the evaluation
    read it. The ids are read from the evaluation's input CTEs, already cast; no other input (the estimators
    read none)."""
    recs = exp.select(exp.alias_(exp.column(RUN_COL), RUN_COL), "user_id", "item_id",
                      exp.alias_(exp.Neg(this=exp.column("ord")), SCORE_COL),
                      *(["position"] if plan.policy in PER_POSITION else [])).from_("cmp_orecs").subquery("cmp_orecs")
    logs = exp.select(exp.alias_(exp.column(RUN_COL), RUN_COL), "user_id", "item_id", "position", "propensity",
                      "reward", "slate_propensity", "cascade_propensity", "copy").from_("cmp_ologs").subquery("cmp_ologs")
    model = exp.select("user_id", "item_id", "reward").from_("cmp_model").subquery("cmp_model") \
        if plan.reward_model is not None else None
    return dataclasses.replace(
        plan, recs=recs, truth=None, run_cols=(RUN_COL,), truth_has_runs=False, user_col="user_id", item_col="item_id",
        score_col=SCORE_COL, rank_col=None, relevance_col=None, logs=logs, logs_has_runs=True, logs_run_cols=(), reward_model=model,
        position_col="position", recs_position_col="position" if plan.policy in PER_POSITION else None,
        propensity_col="propensity", reward_col="reward", model_reward_col="reward",
        slate_propensity_col="slate_propensity" if plan.slate_propensity_col else None,
        cascade_propensity_col="cascade_propensity" if plan.cascade_propensity_col else None, logs_copy_col="copy",
        items=None, interactions=None, catalog=None, expected_recs=None, item_features=None, intents=None,
        topk=None, duplicates="error", id_casts={}, text_ids=frozenset(plan.text_ids) & {"user_id", "item_id"},
        sample_col=None, sampled=False, segments=None, segment_cols=(), inline=(), weight_col=None)


def contexts_cte() -> exp.CTE:
    """``cmp_contexts(user_id, user_idx)``: each logged context (logs_in's users) with its draw index, the
    user's of ``cmp_keyed`` when it has a list, else one after the last of them (a context of no list in any
    run: its impressions weigh 0 in every run, and count in n)."""
    select = exp.select(
        exp.alias_(exp.column("user_id", "c"), "user_id"),
        exp.alias_(exp.cast(exp.Coalesce(this=exp.column("user_idx", "k"), expressions=[
            exp.Add(this=exp.column("top", "t"), expression=exp.Window(
                this=exp.Anonymous(this="ROW_NUMBER"),
                partition_by=[exp.column("user_idx", "k").is_(exp.null())],
                order=exp.Order(expressions=[exp.Ordered(this=exp.column("user_id", "c"))])))]), "BIGINT"),
            "user_idx")) \
        .from_(exp.select("user_id").distinct().from_("logs_in").subquery("c")) \
        .join(exp.select("cmp_user", "user_idx").distinct().from_("cmp_keyed").subquery("k"), join_type="left",
              on=exp.column("user_id", "c").eq(exp.column("cmp_user", "k"))) \
        .join(exp.select(exp.alias_(exp.Coalesce(this=exp.Max(this=exp.column("user_idx")),
                                                 expressions=[bigint(0)]), "top")).from_("cmp_keyed").subquery("t"),
              join_type="cross")
    return exp.CTE(this=select, alias=exp.to_identifier("cmp_contexts"))


def lists_ctes(metrics: dict[int, Metric], runs: list[str], model: bool, positions: bool = False) -> list[exp.CTE]:
    """``cmp_olists(run, user_idx, user_id, item_id, ord, position)``: each logged context's list in each run (with
    ``positions``, the target policy's rows per position: target=positions; else position NULL), from the
    evaluation's ``recs_in`` (run columns ``runs``) joined to ``cmp_runs``; ``cmp_logged_metrics(metric)``:
    the estimators' positions; with ``model``, ``cmp_model``: the evaluation's reward_model_in, under a name
    the resampled evaluation's own CTEs do not take."""
    on = exp.and_(*[exp.column(r, "r").eq(exp.column(f"_k{i}", "u")) for i, r in enumerate(runs)])
    rows = exp.select(exp.alias_(exp.column("run", "u"), "run"), exp.alias_(exp.column("user_idx", "c"), "user_idx"),
                      *[exp.alias_(exp.column(c, "r"), c) for c in ("user_id", "item_id", "ord")],
                      exp.alias_(exp.column("position", "r") if positions else exp.cast(exp.null(), "DOUBLE"), "position")) \
        .from_(exp.alias_(exp.to_table("recs_in"), "r")) \
        .join(exp.alias_(exp.to_table("cmp_runs"), "u"), on=on) \
        .join(exp.alias_(exp.to_table("cmp_contexts"), "c"), on=exp.column("user_id", "r").eq(exp.column("user_id", "c")))
    model_rows = [exp.CTE(this=exp.select("user_id", "item_id", "reward").from_("reward_model_in"),
                          alias=exp.to_identifier("cmp_model"))] if model else []
    return [exp.CTE(this=rows, alias=exp.to_identifier("cmp_olists")),
            positions_cte(metrics, "cmp_logged_metrics"), *model_rows]


def positions_cte(positions: Iterable[int], name: str) -> exp.CTE:
    """``name(metric)``: the metric ``positions``, one row each (the metrics a template reads)."""
    return exp.CTE(this=union_all([exp.select(exp.alias_(bigint(i), "metric")) for i in positions]),
                   alias=exp.to_identifier(name))


def global_ctes(values: Any, parameters: dict[str, Any], template: Callable[..., list[exp.CTE]],
                evaluation: Callable[..., list[exp.CTE]]) -> list[exp.CTE]:
    """The estimators' CTEs: their lists and resampled logs, their evaluation (``evaluation``:
    :func:`recsql.comparison_weighted.evaluation_ctes`) and their values per (run, baseline, resample, side)
    as ``cmp_global_logged`` (and ``cmp_global_logged_users``)."""
    found = {i: values.global_kinds[i] for i in logged(values.global_kinds)}
    ctes = lists_ctes(found, values.runs, values.logged_plan.reward_model is not None,
                      values.logged_plan.policy in PER_POSITION)
    ctes += template(TEMPLATE, {**parameters, "max_draw": len(poisson_thresholds())})
    ctes += evaluation(values.logged_plan, found, PREFIX, "cmp_logged_values")
    return ctes + rename_relations(template(STATS_TEMPLATE, parameters, tuple(found)), RENAMED)
