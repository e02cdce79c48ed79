"""Global metrics in :func:`recsql.compare`: coverage, Gini and personalization, one number per run.

They have no per-user values to pair, so they are resampled through their item exposure counts:
each user's list weighted by the user's Poisson weight for the bootstrap, and each user's lists
swapped between the two runs (the user's sign) for the randomization test; the formulas are in
``sql/_compare_global.sql``. This module builds that template's inputs from the evaluation
query: ``cmp_lists`` (each user's top k of each global metric, from the ranked stage's
``list_rows``) and ``cmp_global_metrics`` (each global metric's kind, cutoff and catalog size),
and the unions through which the result reads per-user and global units alike.

>>> [kind for kind in GLOBAL_KINDS]
['coverage', 'gini', 'personalization']
"""
from __future__ import annotations

from typing import Sequence

import sqlglot
from sqlglot import exp

from .compose import union_all
from .errors import RecsqlError
from .metrics import Metric
from .resampling import bigint

# The global metrics compare resamples, by name: the kind number sql/_compare_global.sql switches on.
GLOBAL_KINDS = {"coverage": 1, "gini": 2, "personalization": 3}
# Metrics whose exposure counts read the catalog (in_catalog, n_catalog).
CATALOG_KINDS = {"coverage", "gini"}


def global_metrics(metrics: Sequence[Metric]) -> dict[int, tuple[int, int]]:
    """Position in ``metrics`` -> (kind, k) of each global metric; a global metric without a
    resampled form is refused by name."""
    found = {}
    for i, m in enumerate(metrics):
        if m.spec.population != "global":
            continue
        if m.name not in GLOBAL_KINDS:
            raise RecsqlError(f"compare: metric {str(m)!r} is global (one number per run) and recsql has no "
                              f"resampled form of it; global metrics compare supports: {', '.join(GLOBAL_KINDS)}")
        found[i] = (GLOBAL_KINDS[m.name], int(m.k))
    return found


def list_ctes(kinds: dict[int, tuple[int, int]], n_metrics: int, runs: list[str], lists: str, catalog: bool,
              segmented: bool) -> list[exp.CTE]:
    """``cmp_lists(run, user_idx, metric, item_id, in_catalog, first)``: the top k of every user of
    ``cmp_keyed`` (its ``cmp_user`` column) for each global metric, read from ``lists`` (the ranked
    stage's list rows: run columns ``runs``, user_id, item_id, rank); ``cmp_global_metrics(metric,
    kind, k, n_catalog)``. ``catalog``: the statement has ``catalog_items`` / ``catalog_size``;
    ``segmented``: metric ids are segment·M + metric (``cmp_segments``)."""
    ks = union_all([exp.select(exp.alias_(bigint(i), "metric"), exp.alias_(bigint(kind), "kind"),
                            exp.alias_(bigint(k), "k")) for i, (kind, k) in kinds.items()])
    keys = [f"_k{i}" for i in range(len(runs))]
    on = exp.and_(*[exp.column(r, "l").eq(exp.column(k, "p")) for r, k in zip(runs, keys)],
                  exp.column("user_id", "l").eq(exp.column("cmp_user", "p")))
    in_catalog = (sqlglot.parse_one("CASE WHEN c.item_id IS NULL THEN 0 ELSE 1 END") if catalog else bigint(1))
    metric = exp.Add(this=exp.Mul(this=exp.column("segment", "p"), expression=bigint(n_metrics)),
                     expression=exp.column("metric", "g"))
    rows = exp.select(exp.alias_(exp.column("run", "p"), "run"), exp.alias_(exp.column("user_idx", "p"), "user_idx"),
                      exp.alias_(metric, "metric"), exp.alias_(exp.column("item_id", "l"), "item_id"),
                      exp.alias_(exp.cast(in_catalog, "BIGINT"), "in_catalog"),
                      exp.alias_(sqlglot.parse_one("CAST(CASE WHEN l.rank = 1 THEN 1 ELSE 0 END AS BIGINT)"), "first")) \
        .from_(exp.alias_(exp.to_table(lists), "l")) \
        .join(exp.alias_(exp.to_table("cmp_keyed"), "p"), on=on) \
        .join(exp.alias_(exp.to_table("cmp_global_ks"), "g"), on=exp.column("rank", "l") <= exp.column("k", "g")) \
        .where(exp.column("segment", "p") >= 0)
    if catalog:
        rows = rows.join(exp.alias_(exp.to_table("catalog_items"), "c"), join_type="left",
                         on=exp.column("item_id", "l").eq(exp.column("item_id", "c")))
    size = exp.column("n_catalog", "z") if catalog else bigint(0)
    segment = exp.column("segment", "s") if segmented else bigint(0)
    metrics = exp.select(exp.alias_(exp.Add(this=exp.Mul(this=segment, expression=bigint(n_metrics)),
                                            expression=exp.column("metric", "g")), "metric"),
                         exp.alias_(exp.column("kind", "g"), "kind"), exp.alias_(exp.column("k", "g"), "k"),
                         exp.alias_(exp.cast(size, "BIGINT"), "n_catalog")) \
        .from_(exp.alias_(exp.to_table("cmp_global_ks"), "g"))
    if segmented:
        metrics = metrics.join(exp.alias_(exp.to_table("cmp_segments"), "s"), join_type="cross")
    if catalog:
        metrics = metrics.join(exp.alias_(exp.to_table("catalog_size"), "z"), join_type="cross")
    return [exp.CTE(this=ks, alias=exp.to_identifier("cmp_global_ks")),
            exp.CTE(this=rows, alias=exp.to_identifier("cmp_lists")),
            exp.CTE(this=metrics, alias=exp.to_identifier("cmp_global_metrics"))]


def _null(kind: str) -> exp.Expression:
    return exp.cast(exp.null(), kind)


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
