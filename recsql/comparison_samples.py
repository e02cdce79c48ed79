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

The global metrics compare counts from item exposure (coverage, gini, personalization: recsql/comparison_global.py)
are not computed per sample yet: refused for a sampled run (:func:`refuse_counted`), naming the metric.

>>> over_samples(exp.select("_run0 AS cmp_key", "x").from_("t"), ["cmp_key"], ["_run1"]).sql()
'SELECT _run0 AS cmp_key, AVG(x) AS x FROM t GROUP BY _run0'
"""
from __future__ import annotations

from typing import Any

from sqlglot import exp

from .compose.plan import internal_runs, staged
from .errors import RecsqlError
from .metrics import Metric

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


def refuse_counted(plan: Any, metrics: list[Metric], counted: list[int]) -> None:
    """A global metric counted from item exposure (positions ``counted`` of ``metrics``) of a sampled run: refused,
    naming the metric and what compare does compute."""
    if plan.sample_col is None or not counted:
        return
    first = metrics[min(counted)]
    raise RecsqlError(f"compare: metric {str(first)!r} is global (one number per run) and compare resamples it "
                      f"through each item's count of lists, which it does not do per sample yet (evaluate gives "
                      f"its mean over the samples); with sample_col={plan.sample_col!r} compare resamples the "
                      f"per-user metrics and the exposure, long-tail and popularity-bias global metrics "
                      f"(exposure_gini, lt_coverage, pop_rsp, ...): compare those, or one sample (a filter of "
                      f"recs) without sample_col", metric=str(first))
