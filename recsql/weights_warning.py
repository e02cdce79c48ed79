"""The warning on the importance weights of the off-policy estimators (docs/guide/logs.md, "Diagnostics").

Whenever :func:`recsql.evaluate` computes an off-policy estimator that weighs the impressions (``family:
off_policy``: ips, snips, dr, switch_dr; not dm, which reads no weight, nor the slate estimators, whose weights
are per slate), it also computes the effective
sample size of the same target's weights in the same statement (:func:`diagnostics`: ``ess`` with that
``target=``, left out of the result when it was not asked; it reads the stage rows the estimator reads, so
it costs one more aggregate), and the logged impressions n (the checks' count of the logs). A run whose

    ESS = (Σ_i w_i)² / Σ_i w_i²  <  min_ess_share · n

(ESS NULL, every weight 0, counted as 0) gets a :class:`recsql.RecsqlWarning` naming the run, the ESS, n
and the estimators: their value rests on a few impressions, whatever their formula. ``min_ess_share``
defaults to :data:`MIN_ESS_SHARE`; 0 (or None) turns the warning off.

ESS/n is Kong's relative efficiency of importance sampling against sampling the target directly (Kong,
Technical report 348, University of Chicago 1992; Owen, Monte Carlo theory, methods and examples, 2013,
§9.3): ESS = n/10 means the n logged impressions estimate as well as n/10 impressions of the new policy
would. The maximum weight is not a second trigger: a weight that carries the estimate makes the ESS
small already ((Σ w)² / Σ w² ≤ Σ w / max w).

>>> from recsql.metrics import parse_metric
>>> [str(m) for m in diagnostics([parse_metric("ips"), parse_metric("dr(target=scores)")], 0.1)]
['ess', 'ess(target=scores)']
>>> diagnostics([parse_metric("ips"), parse_metric("ess")], 0.1), diagnostics([parse_metric("ips")], 0)
([], [])
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from .errors import RecsqlError, RecsqlWarning
from .metrics import Metric
from .run_labels import label, plain

MIN_ESS_SHARE = 0.1  # the default threshold: warn when ESS < n/10
ESS = "ess"
ESTIMATORS_FAMILY = "off_policy"
UNWEIGHED = (ESS, "max_weight", "dm")  # the diagnostics, and the direct method (no weight)


def checked_share(value: Any) -> float:
    """``min_ess_share`` as a number in [0, 1] (None: 0, the warning off)."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise RecsqlError(f"min_ess_share={value!r}: the share of the logged impressions below which the effective "
                          f"sample size of the weights is warned about must be a number in [0, 1] (default "
                          f"{MIN_ESS_SHARE}; 0 turns the warning off; CLI: --min-ess-share)")
    return float(value)


def _estimators(metrics: Sequence[Metric]) -> dict[str, list[Metric]]:
    """target -> the off-policy estimators asked with it that weigh the impressions (not dm, nor the diagnostics
    ess and max_weight)."""
    found: dict[str, list[Metric]] = {}
    for m in metrics:
        if m.spec.family == ESTIMATORS_FAMILY and m.name not in UNWEIGHED and not _slate(m):
            found.setdefault(m.all_options()["target"], []).append(m)
    return found


def weighing(metrics: Sequence[Metric]) -> list[Metric]:
    """The off-policy estimators of ``metrics`` that weigh the impressions: those the warning is about."""
    return [m for estimators in _estimators(metrics).values() for m in estimators]


def _slate(m: Metric) -> bool:
    """A slate estimator: its weights are per slate or per prefix of one, not the impressions' that ``ess`` reads
    (no warning for them yet)."""
    return "log_slates" in m.spec.features(m.all_options())


def _ess(target: str) -> Metric:
    return Metric(ESS, target=target)


def diagnostics(metrics: Sequence[Metric], share: float) -> list[Metric]:
    """The ``ess`` metrics to compute beside ``metrics`` for the warning: one per target of the estimators
    asked, when ``metrics`` lacks it (none when ``share`` is 0)."""
    if not share:
        return []
    return [_ess(t) for t in _estimators(metrics) if _ess(t) not in metrics]


def warn_weights(summary: Any, metrics: Sequence[Metric], n: int | dict[tuple, int], share: float,
                 run_cols: Sequence[str], logs_run_cols: Sequence[str] = ()) -> None:
    """A :class:`RecsqlWarning` per run and target of ``summary`` (every metric of ``metrics``, the
    :func:`diagnostics` too, one column each) whose ESS is below ``share`` · ``n``: the logged impressions, or
    with logs per run, the impressions of the run's own logs (``n`` by the values of ``logs_run_cols``; a run
    without logs is not warned about: its estimates are NULL)."""
    if not share or not n:
        return
    columns = {m: m.column for m in metrics}
    for target, estimators in _estimators(metrics).items():
        column = next(c for m, c in columns.items() if m == _ess(target))
        for _, row in summary.iterrows():
            logged = n.get(tuple(plain(row[c]) for c in logs_run_cols), 0) if isinstance(n, dict) else n
            if not logged:
                continue
            value = row[column]
            ess = 0.0 if value is None or value != value else float(value)
            if ess >= share * logged:
                continue
            values = [plain(row[c]) for c in run_cols]
            run = (f"run {label(values, run_cols) if len(run_cols) > 1 else values[0]!r}: " if run_cols else "")
            warnings.warn(f"{run}the effective sample size of the importance weights (target={target}) is "
                          f"{ess:.4g}, below {share:g} of the n = {logged} logged impressions: "
                          f"the estimates {', '.join(m.column for m in estimators)} rest on a few impressions (the new "
                          f"policy mostly shows what the logging policy rarely did), and are noisy whatever their "
                          f"formula; min_ess_share (CLI: --min-ess-share) sets the threshold, 0 turns this off",
                          RecsqlWarning, stacklevel=4)  # evaluate's caller (through suggest_keywords)
