"""The warning on the importance weights of the off-policy estimators (docs/guide/logs.md, "Diagnostics").

Whenever :func:`recsql.evaluate` computes an off-policy estimator that weighs the impressions or slates (``family:
off_policy``: ips, snips, dr, switch_dr and the slate estimators; not dm, which reads no weight, nor pbm_ips,
whose weights are ratios of examination probabilities), it also computes the effective sample size of the same
weights in the same statement (:func:`diagnostics`: ``ess`` with the estimator's ``target=``, or
``weights=slate`` for the estimators of the joint slate propensity and ``weights=cascade`` for those of the
cascade one, left out of the result when it was not asked; it reads the stage rows the estimator reads, so
it costs one more aggregate), and the logged impressions n (the checks' count of the logs; the logged slates, by
one small query, for ``weights=slate``). A run whose

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
>>> [str(m) for m in diagnostics([parse_metric("slate_snips"), parse_metric("slate_iips"), parse_metric("pbm_ips")], 0.1)]
['ess(weights=slate)', 'ess']
>>> diagnostics([parse_metric("ips"), parse_metric("ess")], 0.1), diagnostics([parse_metric("ips")], 0)
([], [])
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from .errors import RecsqlError, warn
from .metrics import Metric
from .run_labels import named, plain

MIN_ESS_SHARE = 0.1  # the default threshold: warn when ESS < n/10


class Counts(NamedTuple):
    """The logged rows (impressions) and slates (contexts) a run's estimators read."""

    rows: int
    slates: int
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


def _weights_of(m: Metric) -> Metric | None:
    """The ``ess`` of the weights the estimator ``m`` reads: the impressions' of its target (the bandit estimators,
    and slate_iips and slate_sniips, whose weights are the same per row), the slates' (``weights=slate``: the
    estimators reading the joint slate propensity) or the cascade ones (``weights=cascade``: those reading the
    cascade propensity); None for dm, the diagnostics and pbm_ips (its weights are examination ratios)."""
    if m.spec.family != ESTIMATORS_FAMILY or m.name in UNWEIGHED:
        return None
    options = m.all_options()
    if "log_slates" not in m.spec.features(options):
        return Metric(ESS, target=options["target"])
    needs = m.spec.requires(options)
    kind = "slate" if "slate_propensity" in needs else "cascade" if "cascade_propensity" in needs else "impression"
    if "log_pbm" in m.spec.features(options):
        return None
    if kind == "impression":  # slate_iips and slate_sniips: their target's weights (target=positions: the recs')
        return Metric(ESS) if options.get("target", "list") == "list" else Metric(ESS, target=options["target"])
    return Metric(ESS, weights=kind, target="slates") if options.get("target") == "slates" else Metric(ESS, weights=kind)


def _estimators(metrics: Sequence[Metric]) -> dict[Metric, list[Metric]]:
    """The ``ess`` of each kind of weights -> the off-policy estimators asked that read them."""
    found: dict[Metric, list[Metric]] = {}
    for m in metrics:
        ess = _weights_of(m)
        if ess is not None:
            found.setdefault(ess, []).append(m)
    return found


def weighing(metrics: Sequence[Metric]) -> list[Metric]:
    """The off-policy estimators of ``metrics`` that weigh the impressions or slates: those the warning is about."""
    return [m for estimators in _estimators(metrics).values() for m in estimators]


def per_slate(metrics: Sequence[Metric]) -> bool:
    """Whether the warning on ``metrics`` reads a count of slates (an ``ess(weights=slate)`` among its diagnostics)."""
    return any(ess.all_options()["weights"] == "slate" for ess in _estimators(metrics))


def diagnostics(metrics: Sequence[Metric], share: float) -> list[Metric]:
    """The ``ess`` metrics to compute beside ``metrics`` for the warning: one per kind of weights the estimators
    asked read, when ``metrics`` lacks it (none when ``share`` is 0)."""
    if not share:
        return []
    return [ess for ess in _estimators(metrics) if ess not in metrics]


def warn_weights(summary: Sequence[dict[str, Any]], metrics: Sequence[Metric], n: Counts | dict[tuple, Counts], share: float,
                 run_cols: Sequence[str], logs_run_cols: Sequence[str] = ()) -> None:
    """A :class:`RecsqlWarning` per run and kind of weights of ``summary`` (its rows; every metric of ``metrics``, the
    :func:`diagnostics` too, one column each) whose ESS is below ``share`` · ``n``: the logged impressions (the
    logged slates for the slate weights), or with logs per run, those of the run's own logs (``n`` by the values of
    ``logs_run_cols``; a run without logs is not warned about: its estimates are NULL)."""
    if not share or not n:
        return
    columns = {m: m.column for m in metrics}
    for ess, estimators in _estimators(metrics).items():
        column = next(c for m, c in columns.items() if m == ess)  # as asked, or as diagnostics added it
        kind = ess.all_options()["weights"]
        units = "slates" if kind == "slate" else "impressions"
        what = f"target={ess.all_options()['target']}" if kind == "impression" else f"weights={kind}"
        for row in summary:
            counts = n.get(tuple(plain(row[c]) for c in logs_run_cols), Counts(0, 0)) if isinstance(n, dict) else n
            logged = counts.slates if kind == "slate" else counts.rows
            if not logged:
                continue
            value = row[column]
            found = 0.0 if value is None or value != value else float(value)
            if found >= share * logged:
                continue
            run = f"run {named([row[c] for c in run_cols], run_cols)}: " if run_cols else ""
            warn(f"{run}the effective sample size of the importance weights ({what}) is "
                 f"{found:.4g}, below {share:g} of the n = {logged} logged {units}: "
                 f"the estimates {', '.join(m.column for m in estimators)} rest on a few {units} (the new "
                 f"policy mostly shows what the logging policy rarely did), and are noisy whatever their "
                 f"formula; min_ess_share (CLI: --min-ess-share) sets the threshold, 0 turns this off")
