"""Sampled runs (``sample_col``, docs/guide/metrics.md, "Sampled rankings") in :func:`recsql.compare`'s global
metrics: evaluate gives a sampled run's global metric as the mean over the run's samples of each sample's value
(``recsql/compose/statement.py``'s ``sample_means``), so compare's statistic is the same mean, per draw:

    stat(run, resample b, side) = (1 / |S_b|) · Σ_{j ∈ S_b} metric(the weighted lists of sample j)

where sample j's lists are its users' lists weighted as in an unsampled run (bootstrap: user u's Poisson weight
w_u of resample b, shared by all the run's samples, so a user drawn twice is drawn with all its samples; the
randomization's sides: sample j of a pair's side 1 holds the run's sample-j list of each user whose sign is +1
and the baseline's sample-j list of the others), and S_b the samples with a defined value (AVG skips the NULLs:
a sample whose users all weigh 0 is no run, as in evaluate a sample without lists). Resample 0 (every w_u = 1)
is evaluate's value. The sample is one more run key of the weighted evaluation (``cmp_sample`` beside
``cmp_key``: ``sql/_compare_weighted.sql``), whose per-sample global rows are averaged per ``cmp_key``
(:func:`over_samples`): the metric's own template, evaluated per (draw, sample) as evaluate's per (run, sample).
Cite: the bootstrap of a statistic of the resampled users, Efron & Tibshirani 1993, ch. 6; expected metrics
over a stochastic ranker's samples, Diaz et al., CIKM 2020.

The global metrics compare counts from item exposure (coverage, gini, personalization: recsql/comparison_global.py,
``sql/_compare_global.sql``) take the same mean, with the sample one more key of their lists: each sample of the
list rows is numbered 0..S−1 (:func:`sample_ctes`, ``cmp_global_samples``) and a set of lists of one cutoff (within
one segment) becomes one per sample, ``lists·S + sample`` (in ``cmp_lists`` and ``cmp_global_metrics``), so the
counts, the exposure sums and the metric's value come out per (run, sample, resample, side) by the template as it
is; :func:`counted_ctes` then averages each draw's values over the samples (``cmp_global_counted_means``):

    stat(run, resample b, side) = (1 / |S_b|) · Σ_{j ∈ S_b} metric(C_i, D_i, W, W2 of sample j under w_b)

A sample's users are its users with a list in that sample (W, W2, the U of personalization's U(U − 1)), as in
evaluate, which computes each sample's value as that of a run made of the sample's lists; the catalog and its size
are the run's, the same for every sample. The ``n`` compare reports is the run's users with a list in any sample
(a pair: in either run), as for the metrics recomputed over weighted lists.

>>> over_samples(exp.select("_run0 AS cmp_key", "x").from_("t"), ["cmp_key"], ["_run1"]).sql()
'SELECT _run0 AS cmp_key, AVG(x) AS x FROM t GROUP BY _run0'
"""
from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from .compose.plan import internal_runs, staged

SAMPLE_COL = "cmp_sample"  # the weighted lists' sample key (sql/_compare_weighted.sql's cmp_wrecs)


def sample_key(plan: Any) -> str | None:
    """The internal name of the sample key in the evaluation's staged rows (``list_rows``: the run keys, then the
    sample), or None when the runs are not sampled."""
    return internal_runs(staged(plan))[-1] if plan.sample_col is not None else None


def sample_cols(plan: Any) -> tuple[str, ...]:
    """The weighted evaluation's run keys after its ``cmp_key``: the sample's (:data:`SAMPLE_COL`) for a sampled
    run, none otherwise."""
    return (SAMPLE_COL,) if plan.sample_col is not None else ()


def over_samples(select: exp.Select, keys: list[str], samples: list[str]) -> exp.Select:
    """``select`` (the weighted evaluation's global rows: its run keys ``keys``, the metrics' values) averaged over
    the samples (the run keys ``samples`` after them, unselected): one row per ``keys``, each value the AVG of
    the samples' defined ones. Without samples, ``select`` as it is."""
    if not samples:
        return select
    grouped = [e.unalias().copy() for e in select.expressions if e.alias_or_name in keys]
    select.set("expressions", [e if e.alias_or_name in keys else exp.alias_(exp.Avg(this=e.unalias()), e.alias_or_name)
                               for e in select.expressions])
    return select.group_by(*grouped)


def sample_ctes(lists: str, sample: str) -> list[exp.CTE]:
    """``cmp_global_sample_values(sample)``: the samples of the list rows ``lists`` (their sample key ``sample``);
    ``cmp_global_samples(sample, sample_no, n_samples)``: each numbered 0..S−1 in order, and S."""
    values = exp.select(exp.alias_(exp.column(sample), "sample")).distinct().from_(lists)
    number = exp.Sub(this=exp.Window(this=exp.Anonymous(this="DENSE_RANK"),
                                     order=exp.Order(expressions=[exp.Ordered(this=exp.column("sample", "v"))])),
                     expression=exp.Literal.number(1))
    count = exp.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), "n_samples")) \
        .from_("cmp_global_sample_values")
    numbered = exp.select(exp.alias_(exp.column("sample", "v"), "sample"), exp.alias_(exp.cast(number, "BIGINT"), "sample_no"),
                          exp.alias_(exp.column("n_samples", "c"), "n_samples")) \
        .from_(exp.alias_(exp.to_table("cmp_global_sample_values"), "v")) \
        .join(count.subquery("c"), join_type="cross")
    return [exp.CTE(this=values, alias=exp.to_identifier("cmp_global_sample_values")),
            exp.CTE(this=numbered, alias=exp.to_identifier("cmp_global_samples"))]


def per_sample(lists: exp.Expression, alias: str = "q") -> exp.Expression:
    """A set of lists' id ``lists`` within one sample (``alias``: the row of ``cmp_global_samples``):
    ``lists·S + sample_no``."""
    return exp.Add(this=exp.Mul(this=exp.Paren(this=lists), expression=exp.column("n_samples", alias)),
                   expression=exp.column("sample_no", alias))


def counted_ctes() -> list[exp.CTE]:
    """``cmp_global_sample_users(run, metric, w1)``: a run's users with a list in any sample, per metric (its sets
    of lists, one per sample); ``cmp_global_counted_means(run, baseline, metric, resample, side, stat, w1)``:
    ``sql/_compare_global.sql``'s ``cmp_global_counted`` (one row per sample) averaged over the samples, AVG
    skipping a sample whose value is undefined (a sample without a row in a draw is none of its runs), w1 the
    run's users (read for a run's own value, side 3)."""
    users = sqlglot.parse_one(
        "SELECT l.run AS run, m.metric AS metric, CAST(COUNT(DISTINCT l.user_idx) AS BIGINT) AS w1 "
        "FROM cmp_lists AS l JOIN cmp_global_metrics AS m ON l.lists = m.lists GROUP BY l.run, m.metric")
    means = sqlglot.parse_one(
        "SELECT c.run AS run, c.baseline AS baseline, c.metric AS metric, c.resample AS resample, c.side AS side, "
        "AVG(c.stat) AS stat, CAST(MAX(u.w1) AS BIGINT) AS w1 FROM cmp_global_counted AS c "
        "LEFT JOIN cmp_global_sample_users AS u ON c.run = u.run AND c.metric = u.metric "
        "GROUP BY c.run, c.baseline, c.metric, c.resample, c.side")
    return [exp.CTE(this=users, alias=exp.to_identifier("cmp_global_sample_users")),
            exp.CTE(this=means, alias=exp.to_identifier("cmp_global_counted_means"))]
