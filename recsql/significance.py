"""What :func:`recsql.compare` finishes in Python: tail probabilities and multiple-testing corrections.

The engine computes every sum (``sql/_compare_*.sql``); no SQL engine has the t or normal
distribution, so the p-values are finished here with scipy, from the sums alone: its special functions
``stdtr`` and ``ndtr``, which ``scipy.stats.t.sf`` and ``scipy.stats.norm.sf`` evaluate (the same numbers,
without importing ``scipy.stats``, most of a second on a cold start). The corrections
work on those p-values, so they are here too. numpy is imported in the functions that compute: composing
compare's SQL (to_sql, dbt) imports this module for the corrections' names and needs no numpy.

>>> [round(p, 6) for p in holm([0.01, 0.04, 0.03])]
[0.03, 0.06, 0.06]
"""
from __future__ import annotations

import math
from typing import Callable, Sequence


def difference_sd(n: int, ss: float) -> float:
    """The standard deviation of ``n`` paired differences from their sum of squared deviations ``ss``:
    √(ss / (n − 1)) (negative rounding of ss taken as 0); NaN below two users."""
    return math.sqrt(max(ss, 0.0) / (n - 1)) if n >= 2 and not math.isnan(ss) else math.nan


def paired_t(n: int, mean: float, ss: float) -> tuple[float, float, float]:
    """Student's paired t (as ``scipy.stats.ttest_rel``): t = mean / (sd / √n), sd² = ss / (n − 1),
    two-sided p = 2·P(T_{n−1} > |t|); and Cohen's d_z = mean / sd. NaN below two users; a zero
    spread gives t = ±inf (p = 0) for a non-zero mean and NaN for a zero one, as numpy divides.
    Student, Biometrika 6(1), 1908; Cohen 1988 (d_z)."""
    import numpy as np
    if n < 2:
        return math.nan, math.nan, math.nan
    sd = difference_sd(n, ss)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.float64(mean) / np.float64(sd / math.sqrt(n)))
        effect = float(np.float64(mean) / np.float64(sd))
    from scipy.special import stdtr  # imported when a test runs: the command line starts without it
    p = math.nan if math.isnan(t) else float(2 * stdtr(n - 1, -abs(t)))  # 2·t.sf(|t|, n − 1)
    return t, p, effect


def wilcoxon_p(n_nonzero: int, r_plus: float, ties_term: float) -> float:
    """Two-sided p of the Wilcoxon signed-rank test by the tie-corrected normal approximation without
    continuity correction, zero differences dropped (``scipy.stats.wilcoxon(d, zero_method="wilcox",
    correction=False, method="approx")``): z = (r_plus − n(n + 1)/4) / √((n(n + 1)(2n + 1) − Σ(t³ − t)/2) / 24).
    NaN when every difference is zero. Wilcoxon, Biometrics Bulletin 1(6), 1945."""
    if not n_nonzero:
        return math.nan
    n = float(n_nonzero)
    variance = (n * (n + 1) * (2 * n + 1) - ties_term / 2) / 24
    z = (r_plus - n * (n + 1) / 4) / math.sqrt(variance)
    from scipy.special import ndtr
    return float(min(1.0, 2 * ndtr(-abs(z))))  # 2·norm.sf(|z|)


def randomization_p(extreme: int, resamples: int) -> float:
    """Fisher's randomization test by sign flips: p = (1 + #{|flipped mean| ≥ |observed mean|}) / (B + 1),
    the observed arrangement counted once (Phipson & Smyth 2010), so p is never 0."""
    return (1 + extreme) / (resamples + 1)


def bonferroni(p: Sequence[float]) -> list[float]:
    """min(1, m·p) (as statsmodels' ``multipletests(method="bonferroni")``). Bonferroni 1936; Dunn 1961."""
    m = len(p)
    return [min(1.0, m * v) for v in p]


def holm(p: Sequence[float]) -> list[float]:
    """Holm's step-down: the i-th smallest p becomes max_{j ≤ i} min(1, (m − j + 1)·p_(j))
    (as ``multipletests(method="holm")``). Holm, Scandinavian Journal of Statistics 6(2), 1979."""
    import numpy as np
    order = np.argsort(p, kind="stable")
    ranked = np.asarray(p, dtype=float)[order] * np.arange(len(p), 0, -1)
    adjusted = np.minimum(np.maximum.accumulate(ranked), 1.0)
    out = np.empty(len(p))
    out[order] = adjusted
    return out.tolist()


def benjamini_hochberg(p: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg: the i-th smallest p becomes min_{j ≥ i} min(1, m·p_(j) / j)
    (as ``multipletests(method="fdr_bh")``). Benjamini & Hochberg, JRSS B 57(1), 1995."""
    import numpy as np
    m = len(p)
    order = np.argsort(p, kind="stable")
    ranked = np.asarray(p, dtype=float)[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(ranked[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()


CORRECTIONS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "holm": holm, "bonferroni": bonferroni, "bh": benjamini_hochberg}


def corrected(p: Sequence[float], method: str | None) -> list[float]:
    """``p`` adjusted by ``method`` over every defined (non-NaN) value together; NaN stays NaN;
    ``None`` leaves the values as they are."""
    if method is None:
        return list(p)
    defined = [i for i, v in enumerate(p) if not math.isnan(v)]
    out = [math.nan] * len(p)
    for i, v in zip(defined, CORRECTIONS[method]([p[i] for i in defined]) if defined else []):
        out[i] = v
    return out
