"""Global metrics in :func:`recsql.compare` recomputed by their own templates over weighted lists:
exposure_disparity, exposure_gini, exposure_entropy, lt_coverage, pop_rsp, pop_reo, and any global metric
whose stage rows count each user's list by its weight (:func:`recsql.compose.exposure.weighted_refusal`).

Their formulas read more than the exposure counts of :mod:`recsql.comparison_global` (positions, the
items' categories, truth, the short head), so compare does not recount them: it evaluates them again,
in the same statement, over lists in which each resample and each randomized side is one more run.
``sql/_compare_weighted.sql`` writes those lists (``cmp_wrecs``: each user's top k of each run with
its Poisson weight, sides 3; each pair's lists swapped by the users' signs, sides 1 and 2); the
composer stages them as runs keyed (run, baseline, segment, resample, side), with the weight as each list's
``list_weight`` (``sql/_ranked.sql``), so the metric's own template computes its value per resample;
``sql/_compare_weighted_stats.sql`` reads those values into the rows the global tests read
(``sql/_compare_global_tests.sql``). The bootstrap distribution is the statistic recomputed on the
resampled users: everything derived from those users' lists and truth is recomputed, the catalog-level
inputs (catalog, items' categories, popularity in interactions, so the short head) stay fixed.
Within segments each unit's lists are those of one segment's users (``cmp_wlists`` carries each user's
segment, ``cmp_global_units`` numbers (run, baseline, segment)), so a segment's value is the metric over its
users, as evaluate's within the segment, and its metric id segment·M + metric, as the counted metrics'.
With truth per run each list is judged by the truth of the run it came from: ``sql/_compare_weighted_truth.sql``
writes ``cmp_wtruth`` (for every key of ``cmp_wrecs`` and user, that run's truth rows of the user, swapped with the
user's list on the randomized sides, as a per-user metric's randomization swaps the user's values), the weighted
evaluation's truth, keyed by the same run key. Of the six, pop_rsp, pop_reo (their users with truth, relevant
items, hits) and exposure_disparity(target=merit) (its merit) read truth; the others read none, but
``cmp_wtruth`` is written whenever truth is per run, one path whatever the metrics read (its cost: truth rows
once per key, as the lists). With shared truth the statement is as it was (truth read once per user).

>>> from recsql.metrics import parse_metric
>>> weighted({0: parse_metric("gini@5"), 2: parse_metric("exposure_gini@5"), 3: parse_metric("pop_rsp@5")})
[2, 3]
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from sqlglot import exp

from .comparison_global import stat_expression, stats_ctes
from .comparison_logged import global_ctes as logged_ctes
from .comparison_logged import logged, positions_cte
from .comparison_samples import counted_ctes, over_samples, sample_cols
from .compose import compose, metric_columns
from .compose.exposure import resampling_refusal
from .compose.plan import Plan, internal_runs
from .compose.rewrite import rename_relations
from .errors import RecsqlError
from .metrics import Metric
from .resampling import bigint

GLOBAL_TEMPLATE = "_compare_global"  # global metrics (population: global) counted: recsql/comparison_global.py
GLOBAL_PAIRS_TEMPLATE = "_compare_global_pairs"  # the pairs their randomization swaps lists between
WEIGHTED_TEMPLATE = "_compare_weighted"  # global metrics recomputed over weighted lists: this module
WEIGHTED_STATS_TEMPLATE = "_compare_weighted_stats"
WEIGHTED_TRUTH_TEMPLATE = "_compare_weighted_truth"  # with truth per run: each list's truth, keyed as cmp_wrecs
GLOBAL_TESTS_TEMPLATE = "_compare_global_tests"  # the global metrics' bootstrap and randomization
RUN_COLS = ("cmp_key",)  # cmp_wrecs' run key: (run, baseline, segment, resample, side) in one integer
WEIGHT_COL = "cmp_weight"
RANK_COL = "cmp_rank"
TRUTH_RELEVANCE = "relevance"  # cmp_wtruth's relevance, as the evaluation's truth_in holds it
PREFIX = "cmpw_"  # the weighted evaluation's CTEs, beside the evaluation's own
LAST = "per_user_raw"  # the weighted evaluation's CTE read: each run's global row (_is_global = 1)


def weighted(found: dict[int, Metric]) -> list[int]:
    """The positions among ``found`` (the global metrics, by position) of those recomputed over weighted
    lists: the ones whose expression reads more than the exposure sums."""
    return [i for i, m in found.items() if resampling_refusal(m.name) is not None and m.spec.family != "off_policy"]


def refuse_unsupported(metrics: list[Metric], recomputed: list[int], segmented: bool, truth_per_run: bool) -> None:
    """An off-policy estimator, recomputed by its own template over resampled logs, is not compared with truth per
    run nor within segments (evaluate computes none within segments): refused, with the way to compare it. The
    global metrics recomputed over weighted lists are compared within segments (each segment's users' lists) and with truth per run (each
    list judged by its own run's truth: ``sql/_compare_weighted_truth.sql``)."""
    estimator = next((metrics[i] for i in recomputed if metrics[i].spec.family == "off_policy"), None)
    if truth_per_run and estimator is not None:
        raise RecsqlError(f"compare: metric {str(estimator)!r} is global (one number per run) and compare recomputes "
                          f"it over resampled logs, which it does not do yet with truth per run; compare it with truth "
                          f"shared by the runs (without the run columns)", metric=str(estimator))
    if segmented and estimator is not None:
        raise RecsqlError(f"compare: metric {str(estimator)!r} is global (one number per run) and compare recomputes "
                          f"it over resampled logs, which it does not do yet within segments (nor does evaluate "
                          f"compute an off-policy estimator within segments); compare it without segments=, or on "
                          f"each segment apart (a filter of recs and logs to its users)", metric=str(estimator))


def plan_for(plan: Plan, catalog: bool) -> Plan:
    """The weighted evaluation's plan: ``cmp_wrecs`` as recs (its run key :data:`RUN_COLS`, ranked by its
    rank, 1..k, as the evaluation ranked them; weighed by its weight), the other inputs as given; the catalog (``catalog``: the evaluation has
    one) read from the evaluation's own ``catalog_items`` (``cmp_catalog_items``), so that it stays the
    catalog of the runs compared, never the items of a resample's lists; truth per run (``plan.truth_has_runs``)
    read from ``cmp_wtruth``, keyed by the same run key (each list's own run's truth); a sampled run's sample one
    more run key (recsql/comparison_samples.py), each (draw, sample) evaluated as a run."""
    runs = (*RUN_COLS, *sample_cols(plan))
    columns = [*runs, RANK_COL, WEIGHT_COL]
    ids = ("user_id", "item_id")

    def renamed(relation: str, alias: str, *extra: str) -> exp.Subquery:  # internal ids as the plan names them
        named = [exp.alias_(exp.column(i), exp.to_identifier(n, quoted=True)) for i, n in zip(ids, (plan.user_col,
                                                                                                     plan.item_col))]
        return exp.select(*extra, *named).from_(relation).subquery(alias)

    items = exp.select(exp.alias_(exp.column("item_id"), exp.to_identifier(plan.item_col, quoted=True))) \
        .from_("cmp_catalog_items").subquery("cmp_catalog")
    truth = dict(truth=renamed("cmp_wtruth", "cmp_wtruth", *RUN_COLS, TRUTH_RELEVANCE),
                 relevance_col=TRUTH_RELEVANCE) if plan.truth_has_runs else {}
    return dataclasses.replace(
        plan, recs=renamed("cmp_wrecs", "cmp_wrecs", *columns), run_cols=runs, score_col=None, rank_col=RANK_COL,
        ord_type="BIGINT", weight_col=WEIGHT_COL, catalog=items if catalog else plan.catalog, topk=None,
        ties="item_id", duplicates="error", id_casts={key: cast for key, cast in plan.id_casts.items() if key[1] in ids},
        text_ids=frozenset(plan.text_ids) & frozenset(ids), sample_col=None, sampled=False,
        segments=None, segment_cols=(), inline=(), **truth)


def lists_ctes(metrics: dict[int, Metric], runs: list[str], lists: str, catalog: bool,
               truth_per_run: bool = False, sample: str | None = None) -> list[exp.CTE]:
    """``cmp_wlists(run, segment, user_idx, user_id, item_id, rank, sample)``: each user's top max k (of the weighted
    metrics) in each run, with the user's segment, from ``lists`` (the ranked stage's list rows: run columns
    ``runs``, user_id, item_id, rank) joined to ``cmp_keyed`` (a user without a segment left out, as by the
    counted metrics: that comparison is refused), in each sample (``sample``: the lists' sample key; 0 unsampled);
    ``cmp_weighted_metrics(metric)``: their positions;
    ``cmp_catalog_items`` (with ``catalog``): the evaluation's catalog, which the weighted evaluation reads;
    ``cmp_wtruth_rows(run, segment, user_idx, user_id, item_id, relevance)`` (with ``truth_per_run``): each run's
    truth rows (the evaluation's ``truth_in``) of the users of ``cmp_keyed``, the same way."""
    def keyed(relation: str, *columns: tuple[str, str]) -> exp.Select:  # relation's rows of cmp_keyed's (run, user)
        on = exp.and_(*[exp.column(r, "l").eq(exp.column(f"_k{i}", "p")) for i, r in enumerate(runs)],
                      exp.column("user_id", "l").eq(exp.column("cmp_user", "p")))
        return exp.select(*[exp.alias_(exp.column(c, t), c) for t, c in (("p", "run"), ("p", "segment"),
                                                                          ("p", "user_idx"), *columns)]) \
            .from_(exp.alias_(exp.to_table(relation), "l")) \
            .join(exp.alias_(exp.to_table("cmp_keyed"), "p"), on=on)

    rows = keyed(lists, ("l", "user_id"), ("l", "item_id"), ("l", "rank")) \
        .select(exp.alias_(exp.column(sample, "l") if sample else bigint(0), "sample")) \
        .where(exp.and_(exp.column("rank", "l") <= bigint(max(int(m.k) for m in metrics.values())),
                        exp.column("segment", "p") >= 0))
    ctes = [exp.CTE(this=rows, alias=exp.to_identifier("cmp_wlists")), positions_cte(metrics, "cmp_weighted_metrics")]
    if catalog:
        ctes.append(exp.CTE(this=exp.select("item_id").from_("catalog_items"),
                            alias=exp.to_identifier("cmp_catalog_items")))
    if truth_per_run:
        truth = keyed("truth_in", ("l", "user_id"), ("l", "item_id"), ("l", TRUTH_RELEVANCE)) \
            .where(exp.column("segment", "p") >= 0)
        ctes.append(exp.CTE(this=truth, alias=exp.to_identifier("cmp_wtruth_rows")))
    return ctes


def evaluation_ctes(plan: Plan, metrics: dict[int, Metric], prefix: str = PREFIX,
                    name: str = "cmp_weighted_values") -> list[exp.CTE]:
    """The weighted evaluation (:func:`plan_for`'s plan, already made) of ``metrics`` as CTEs named
    ``cmpw_...`` (``prefix``), up to its per-user rows, and ``cmp_weighted_values(cmp_key, x_i)`` (``name``):
    each of its runs' global row, one column ``x_i`` per metric position i; of a sampled run's, the mean over
    its samples (:func:`recsql.comparison_samples.over_samples`)."""
    ordered = list(metrics.values())
    statement = compose(plan, ordered, output="per_user")
    ctes = list(statement.args["with_"].expressions)
    ctes = ctes[:next(i for i, c in enumerate(ctes) if c.alias == LAST) + 1]
    rename_relations(ctes, {c.alias: prefix + c.alias for c in ctes})
    runs = internal_runs(plan)
    values = exp.select(*[exp.alias_(exp.column(r), name) for r, name in zip(runs, RUN_COLS)],
                        *[exp.alias_(exp.column(c), f"x_{i}") for i, c in zip(metrics, metric_columns(ordered))]) \
        .from_(prefix + LAST).where(exp.column("_is_global").eq(1))
    values = over_samples(values, list(RUN_COLS), runs[len(RUN_COLS):])
    return [*ctes, exp.CTE(this=values, alias=exp.to_identifier(name))]


def counted_kinds(found: dict[int, Metric]) -> dict[int, Metric]:
    """The global metrics resampled through exposure counts (recsql/comparison_global.py)."""
    recomputed = weighted(found) + logged(found)
    return {i: m for i, m in found.items() if i not in recomputed}


def global_ctes(values: Any, parameters: dict[str, Any], template: Callable[..., list[exp.CTE]]) -> list[exp.CTE]:
    """The global metrics' CTEs: the pairs, the counted metrics' counts, the weighted metrics' lists and
    evaluation, their values together and the tests over them. ``values``: the comparison's Values
    (recsql/comparison_sql.py); ``template``: its reader of a template's CTEs (name, parameters, slots)."""
    counted = counted_kinds(values.global_kinds)
    recomputed = {i: values.global_kinds[i] for i in weighted(values.global_kinds)}
    estimators = logged(values.global_kinds)
    parameters = {**parameters, "n_metrics": len(values.metrics)}  # a metric id within segments: segment·M + metric
    segments = exp.select("segment").from_("cmp_segments") if values.segments is not None \
        else exp.select(exp.alias_(bigint(0), "segment"))  # the units' segments (cmp_global_units), read cheaply
    ctes = [exp.CTE(this=segments, alias=exp.to_identifier("cmp_unit_segments")),
            *template(GLOBAL_PAIRS_TEMPLATE, parameters)]
    if not (recomputed or estimators):  # the units serve the recomputed metrics alone: not written unread
        ctes = [c for c in ctes if c.alias not in ("cmp_unit_segments", "cmp_global_units")]
    if counted:
        ctes += template(GLOBAL_TEMPLATE, {**parameters, "stat": stat_expression(counted)})
        ctes += counted_ctes() if values.sample else []  # a sampled run's: the means over its samples
    if recomputed:
        truth_per_run = values.weighted_plan.truth_has_runs  # each list judged by its run's truth: cmp_wtruth
        ctes += lists_ctes(recomputed, values.runs, values.lists, values.catalog, truth_per_run,
                           values.sample)
        ctes += template(WEIGHTED_TEMPLATE, parameters)
        ctes += template(WEIGHTED_TRUTH_TEMPLATE, parameters) if truth_per_run else []
        ctes += evaluation_ctes(values.weighted_plan, recomputed)
        ctes += template(WEIGHTED_STATS_TEMPLATE, parameters, tuple(recomputed))
    if estimators:
        ctes += logged_ctes(values, parameters, template, evaluation_ctes)
    return [*ctes, *stats_ctes(bool(counted), bool(recomputed), bool(estimators), bool(values.sample)),
            *template(GLOBAL_TESTS_TEMPLATE, parameters)]
