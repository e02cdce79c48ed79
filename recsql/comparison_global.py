"""Global metrics in :func:`recsql.compare`: one number per run (coverage, Gini, personalization, and any
metric whose header says ``population: global``).

They have no per-user values to pair, so they are resampled through their item exposure counts:
each user's list weighted by the user's Poisson weight for the bootstrap, and each user's lists
swapped between the two runs (the user's sign) for the randomization test; the counting is in
``sql/_compare_global.sql``. A global metric's formula is its own template's expression over the
exposure sums (``sql/_exposure.sql``, :mod:`recsql.compose.exposure`): compare puts the sums of its
weighted counts into that same expression (:func:`stat_expression`), so there is no list of the
metrics compare knows and no second copy of a formula. A global metric whose expression reads more
than the sums is refused, with the reason (:func:`global_metrics`).

This module builds the template's inputs from the evaluation query: ``cmp_lists`` (each user's top k
of each global metric, from the ranked stage's ``list_rows``) and ``cmp_global_metrics`` (each
global metric's slot, cutoff and catalog size), and the unions through which the result reads
per-user and global units alike.

>>> from recsql.metrics import parse_metric
>>> sorted(global_metrics([parse_metric("ndcg@10"), parse_metric("gini@5")]))
[1]
"""
from __future__ import annotations

from typing import Sequence

import sqlglot
from sqlglot import exp

from .comparison_samples import per_sample, sample_ctes
from .compose import union_all
from .compose.exposure import resampling_refusal, weighted_refusal, weighted_sums
from .compose.expressions import metric_expression
from .errors import RecsqlError
from .metrics import Metric
from .resampling import bigint


def global_metrics(metrics: Sequence[Metric]) -> dict[int, Metric]:
    """Position in ``metrics`` -> the metric, for each global metric; one that compare cannot resample
    (its expression reads more than the exposure sums, and its stage rows do not count weighted lists:
    :mod:`recsql.comparison_weighted`) is refused with the reason."""
    found = {}
    for i, m in enumerate(metrics):
        if m.spec.population != "global":
            continue
        if m.spec.family == "off_policy":  # resampled over the logged contexts (slates too): recsql/comparison_logged.py
            found[i] = m
            continue
        reason = resampling_refusal(m.name)
        weights = weighted_refusal(m) if reason else None
        if reason and weights:
            raise RecsqlError(f"compare: metric {str(m)!r} is global (one number per run) and has no resampled "
                              f"form: compare resamples a global metric through each item's count of lists "
                              f"(coverage, gini, personalization) or by its own template over weighted lists "
                              f"(the exposure, long-tail and popularity-bias metrics); evaluate computes it, "
                              f"compare cannot (in detail: {reason}; and {weights})", metric=str(m))
        found[i] = m
    return found


def stat_expression(metrics: dict[int, Metric]) -> exp.Expression:
    """``CASE slot WHEN i THEN <metric i's expression over compare's exposure sums> END``: each global
    metric's value from the columns of ``cmp_global_terms`` (``sql/_compare_global.sql``'s ``$stat``)."""
    return exp.Case(this=exp.column("slot"),
                    ifs=[exp.If(this=bigint(i), true=metric_expression(m, sums=weighted_sums()))
                         for i, m in metrics.items()])


def list_ctes(found: dict[int, Metric], n_metrics: int, runs: list[str], lists: str, catalog: bool,
              segmented: bool, sample: str | None = None) -> list[exp.CTE]:
    """``cmp_lists(run, user_idx, lists, item_id, in_catalog)``: the top k of every user of ``cmp_keyed``
    (its ``cmp_user`` column) for each cutoff of the global metrics, read from ``lists`` (the ranked
    stage's list rows: run columns ``runs``, user_id, item_id, rank); ``cmp_global_metrics(metric,
    lists, slot, n_catalog)``: each global metric's id, the id of the lists it reads, its position
    (slot: the keys of ``found``) and the catalog's size. The global metrics with the same cutoff read
    the same lists, counted once. ``catalog``: the statement has ``catalog_items`` / ``catalog_size``;
    ``segmented``: metric ids are segment·M + metric and list ids segment·K + cutoff's index
    (``cmp_segments``); ``sample``: the list rows' sample key of a sampled run, whose each set of lists is one
    per sample, id lists·S + sample (recsql/comparison_samples.py)."""
    cuts = list(dict.fromkeys(int(m.k) for m in found.values()))
    ks = union_all([exp.select(exp.alias_(bigint(i), "metric"), exp.alias_(bigint(cuts.index(int(m.k))), "lists"))
                    for i, m in found.items()])
    cut_rows = union_all([exp.select(exp.alias_(bigint(j), "lists"), exp.alias_(bigint(k), "k"))
                          for j, k in enumerate(cuts)])
    keys = [f"_k{i}" for i in range(len(runs))]
    on = exp.and_(*[exp.column(r, "l").eq(exp.column(k, "p")) for r, k in zip(runs, keys)],
                  exp.column("user_id", "l").eq(exp.column("cmp_user", "p")))
    in_catalog = (sqlglot.parse_one("CASE WHEN c.item_id IS NULL THEN 0 ELSE 1 END") if catalog else bigint(1))

    def within(segment: exp.Expression, count: int, column: exp.Expression) -> exp.Expression:
        return exp.Add(this=exp.Mul(this=segment, expression=bigint(count)), expression=column)

    def of_sample(lists_id: exp.Expression) -> exp.Expression:  # a sampled run's set of lists: one per sample
        return per_sample(lists_id) if sample else lists_id

    rows = exp.select(exp.alias_(exp.column("run", "p"), "run"), exp.alias_(exp.column("user_idx", "p"), "user_idx"),
                      exp.alias_(of_sample(within(exp.column("segment", "p"), len(cuts), exp.column("lists", "g"))),
                                 "lists"),
                      exp.alias_(exp.column("item_id", "l"), "item_id"),
                      exp.alias_(exp.cast(in_catalog, "BIGINT"), "in_catalog")) \
        .from_(exp.alias_(exp.to_table(lists), "l")) \
        .join(exp.alias_(exp.to_table("cmp_keyed"), "p"), on=on) \
        .join(exp.alias_(exp.to_table("cmp_global_cuts"), "g"), on=exp.column("rank", "l") <= exp.column("k", "g")) \
        .where(exp.column("segment", "p") >= 0)
    if sample:
        rows = rows.join(exp.alias_(exp.to_table("cmp_global_samples"), "q"),
                         on=exp.column(sample, "l").eq(exp.column("sample", "q")))
    if catalog:
        rows = rows.join(exp.alias_(exp.to_table("catalog_items"), "c"), join_type="left",
                         on=exp.column("item_id", "l").eq(exp.column("item_id", "c")))
    size = exp.column("n_catalog", "z") if catalog else bigint(0)
    segment = exp.column("segment", "s") if segmented else bigint(0)
    metrics = exp.select(exp.alias_(within(segment, n_metrics, exp.column("metric", "g")), "metric"),
                         exp.alias_(of_sample(within(segment.copy(), len(cuts), exp.column("lists", "g"))), "lists"),
                         exp.alias_(exp.column("metric", "g"), "slot"),
                         exp.alias_(exp.cast(size, "BIGINT"), "n_catalog")) \
        .from_(exp.alias_(exp.to_table("cmp_global_ks"), "g"))
    if segmented:
        metrics = metrics.join(exp.alias_(exp.to_table("cmp_segments"), "s"), join_type="cross")
    if catalog:
        metrics = metrics.join(exp.alias_(exp.to_table("catalog_size"), "z"), join_type="cross")
    if sample:
        metrics = metrics.join(exp.alias_(exp.to_table("cmp_global_samples"), "q"), join_type="cross")
    return [*(sample_ctes(lists, sample) if sample else []), exp.CTE(this=ks, alias=exp.to_identifier("cmp_global_ks")),
            exp.CTE(this=cut_rows, alias=exp.to_identifier("cmp_global_cuts")),
            exp.CTE(this=rows, alias=exp.to_identifier("cmp_lists")),
            exp.CTE(this=metrics, alias=exp.to_identifier("cmp_global_metrics"))]


def _null(kind: str) -> exp.Expression:
    return exp.cast(exp.null(), kind)


def stats_ctes(counted: bool, weighted: bool, logged: bool = False, sampled: bool = False) -> list[exp.CTE]:
    """``cmp_global_group_stats`` and ``cmp_global_pair_users``, read by ``sql/_compare_global_tests.sql``:
    the values of the global metrics counted from exposure (``cmp_global_counted``, ``counted``), of
    those recomputed over weighted lists (``cmp_global_weighted``, ``weighted``) and of the off-policy
    estimators recomputed over resampled logs (``cmp_global_logged``, ``logged``), together; of a sampled run
    (``sampled``) the counted metrics' means over the samples (``cmp_global_counted_means``)."""
    unit = ["run", "baseline", "metric"]
    kinds = (("counted", counted), ("weighted", weighted), ("logged", logged))
    source = {"counted": "cmp_global_counted_means"} if sampled else {}
    stats = [exp.select(*unit, "resample", "side", "stat", "w1").from_(source.get(kind, f"cmp_global_{kind}"))
             for kind, kept in kinds if kept]
    users = [exp.select(*unit, "n").from_(f"cmp_global_{kind}_users") for kind, kept in kinds if kept]
    return [exp.CTE(this=union_all(stats), alias=exp.to_identifier("cmp_global_group_stats")),
            exp.CTE(this=union_all(users), alias=exp.to_identifier("cmp_global_pair_users"))]


def union_ctes(with_global: bool) -> list[exp.CTE]:
    """The relations the result reads, per-user units and (``with_global``) global ones together:
    ``cmp_bootstrap`` (the resampled statistics, read by ``sql/_compare_interval.sql``) and
    ``cmp_units_observed`` (each unit's observed sums and randomization count ``extreme``). Each
    relation before them is read once here (Spark plans a CTE once per read)."""
    unit = ["run", "baseline", "metric"]
    observed = ["n", "mean", "sum_v", "wins", "ties", "losses"]
    bootstrap: list[exp.Select] = [exp.select(*unit, "resample", "stat").from_("cmp_resampled")]
    per_user = exp.select(*[exp.column(c, "o") for c in (*unit, *observed)], exp.column("extreme", "z")) \
        .from_(exp.alias_(exp.to_table("cmp_observed"), "o")) \
        .join(exp.alias_(exp.to_table("cmp_randomization"), "z"), join_type="left",
              on=exp.and_(*[exp.column(c, "o").eq(exp.column(c, "z")) for c in unit]))
    units: list[exp.Select] = [per_user]
    if with_global:
        bootstrap.append(exp.select(*unit, "resample", "stat").from_("cmp_global_bootstrap"))
        units.append(exp.select(*unit, "n", "mean", exp.alias_(_null("DOUBLE"), "sum_v"),
                                *[exp.alias_(_null("BIGINT"), c) for c in ("wins", "ties", "losses")], "extreme")
                     .from_("cmp_global_observed"))
    return [exp.CTE(this=union_all(bootstrap), alias=exp.to_identifier("cmp_bootstrap")),
            exp.CTE(this=union_all(units), alias=exp.to_identifier("cmp_units_observed"))]
