"""The cutoffs a report's curves are drawn at: every cutoff 1..K of each asked metric that has one, one
curve per metric family. Chosen before anything is evaluated, so this module needs neither pandas nor an
engine (``recsql report`` imports pandas, for the page, while the engine computes)."""
from __future__ import annotations

from typing import Sequence

from ..errors import RecsqlError
from ..metrics import Metric

MAX_K = 100  # the largest cutoff a metric@k curve is drawn to (every cutoff 1..K is a column of the query)


def family_of(metric: Metric) -> tuple:
    """What makes cutoffs of one metric one curve: the name, the options and which options were written."""
    return metric.name, metric.options, metric.explicit


def family_label(metric: Metric) -> str:
    """The curve's name: the metric as asked, without its cutoff (``ndcg``, ``ndcg(gain=exponential)``)."""
    suffix = f"@{metric.k}"
    if metric.column.endswith(suffix):
        return metric.column[:-len(suffix)]
    return str(metric).removesuffix(suffix)  # another tool's spelling (P_10): recsql's name


def curve_metrics(asked: Sequence[Metric], max_k: int = MAX_K) -> list[Metric]:
    """Every cutoff 1..K of each asked metric that has one (K = the largest cutoff asked of the
    metric, at most ``max_k``), with the options the user wrote kept as written, so that a
    convention fills in the same defaults as for the asked metric."""
    if isinstance(max_k, bool) or not isinstance(max_k, int) or max_k < 1:
        raise RecsqlError(f"max_k={max_k!r}: the curves' largest cutoff must be a whole number >= 1 (default {MAX_K})")
    largest: dict[tuple, tuple[Metric, int]] = {}
    for m in asked:
        if m.k is not None:
            key = family_of(m)
            largest[key] = (m, max(m.k, largest.get(key, (m, 0))[1]))
    extra = []
    for m, top in largest.values():
        written = {o: m.all_options()[o] for o in m.explicit}
        extra += [Metric(m.name, k, **written) for k in range(1, min(top, max_k) + 1)]
    return extra
