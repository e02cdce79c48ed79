"""From a comparison's paired differences to decisions: the power of the paired t-test, the smallest
difference it detects and the users it needs; non-inferiority and equivalence (TOST) against a margin.

Everything here is a function of a pair's number of users n, its mean per-user difference m (run −
baseline) and the standard deviation s of those differences (n − 1 in the denominator), which
:func:`recsql.compare` computes in SQL; the standard error is s/√n and the t distribution has n − 1
degrees of freedom. :class:`recsql.Comparison`'s ``power``, ``noninferiority`` and ``equivalence``
apply them to every pair of a comparison (docs/guide/decisions.md).

>>> round(t_power(0.5, 34, 0.05), 4)   # Cohen's d = 0.5 with 34 users: about 0.8
0.8078
>>> round(users_needed(0.5, 0.05, 0.8), 2)
33.37
"""
from __future__ import annotations

import math

MAX_USERS = 10.0 ** 12  # the search for users_needed stops here (a difference that small is "not reachable")


def t_power(d: float, n: float, alpha: float) -> float:
    """The power of the two-sided paired t-test at level ``alpha`` with ``n`` users when the true mean
    difference is ``d`` standard deviations (Cohen's d_z): with c = t_{1−α/2, n−1} and the noncentral t
    of n − 1 degrees of freedom and noncentrality d·√n, power = P(T' > c) + P(T' < −c) (as statsmodels'
    ``TTestPower().power(d, n, alpha)``). Cohen, Statistical Power Analysis, 2nd ed., 1988, ch. 2."""
    from scipy.special import ndtr, stdtrit  # what scipy.stats.t evaluates, without importing scipy.stats
    df = n - 1
    critical = -float(stdtrit(df, alpha / 2))
    nc = d * math.sqrt(n)
    upper = 1.0 - _nct_cdf(df, nc, critical)
    # P(T' < −c) ≤ Φ(−nc) for nc ≥ 0 (T' < −c < 0 needs Z < −nc); below a quarter of the upper tail's last place
    # it cannot change the sum's double, so its integral (scipy's own is NaN in such far tails) is skipped
    if nc >= 0 and float(ndtr(-nc)) < upper * 2.0 ** -55:
        return upper
    return upper + _nct_cdf(df, nc, -critical)


def _nct_cdf(df: float, nc: float, x: float) -> float:
    """P(T' ≤ x) for the noncentral t: scipy's ``nctdtr`` (what ``scipy.stats.nct.cdf`` evaluates), and
    where that is NaN (some far tails) the integral of its definition (:func:`_far_tail`)."""
    from scipy.special import nctdtr
    value = float(nctdtr(df, nc, x))
    return _far_tail(df, nc, x) if math.isnan(value) else value


def _far_tail(df: float, nc: float, x: float) -> float:
    """P(T' < x) for the noncentral t (df, nc) where scipy gives NaN, from its definition T' = (Z + nc)/√(V/df),
    V ~ χ²(df): ∫ Φ(x·√(v/df) − nc) f_V(v) dv, integrated numerically: to about 1e-14 relative where the
    value can move a power, and to 1e-3 relative only below 1e-40 (tests/test_decisions.py, against mpmath)."""
    import warnings
    from scipy.integrate import IntegrationWarning, quad
    from scipy.special import ndtr
    log_scale = -(df / 2) * math.log(2) - math.lgamma(df / 2)

    def integrand(v: float) -> float:
        if v <= 0:
            return 0.0
        return float(ndtr(x * math.sqrt(v / df) - nc)) * math.exp((df / 2 - 1) * math.log(v) - v / 2 + log_scale)
    spread = 12 * math.sqrt(2 * df)
    edges = [0.0, max(df - spread, 0.0) / 2, max(df - spread, 0.0), df, df + spread, 2 * (df + spread)]
    with warnings.catch_warnings():  # a tail below 1e-40 may not reach 1e-12: it moves no power
        warnings.simplefilter("ignore", IntegrationWarning)
        pieces = [quad(integrand, a, b, epsabs=0, epsrel=1e-12, limit=400)[0]
                  for a, b in [*zip(edges, edges[1:]), (edges[-1], math.inf)] if b > a]
    return float(sum(pieces))


def _root(f, low: float, high: float, xtol: float) -> float:
    """The root of an increasing ``f`` with f(low) < 0 ≤ f(high), by bisection, to within ``xtol`` plus 4 units
    in the last place of the root (about 60 halvings; each costs one of scipy's special functions, so no solver,
    and not ``scipy.optimize``, 0.4 s to import, is needed)."""
    while high - low > xtol + 4 * math.ulp(high):
        middle = low + (high - low) / 2
        if middle <= low or middle >= high:  # no double between them
            break
        low, high = (middle, high) if f(middle) < 0 else (low, middle)
    return high


def detectable(n: int, alpha: float, power: float) -> float:
    """The smallest standardized difference d > 0 that the two-sided paired t-test with ``n`` users
    detects with probability ``power`` at level ``alpha`` (the root of :func:`t_power`); NaN below two
    users."""
    if n < 2:
        return math.nan
    high = 1.0
    while t_power(high, n, alpha) < power:
        high *= 2
    return _root(lambda d: t_power(d, n, alpha) - power, 1e-12, high, xtol=1e-15)


def users_needed(d: float, alpha: float, power: float) -> float:
    """The number of users (a real number; round it up) at which the two-sided paired t-test detects
    a standardized difference ``d`` with probability ``power`` at level ``alpha`` (the root of
    :func:`t_power` in n ≥ 2, as statsmodels' ``TTestPower().solve_power(d, None, alpha, power)``);
    2 when two users already reach it, inf beyond :data:`MAX_USERS` or for d = 0."""
    d = abs(d)
    if d == 0 or math.isnan(d):
        return math.inf if d == 0 else math.nan
    if t_power(d, 2, alpha) >= power:
        return 2.0
    high = 4.0
    while t_power(d, high, alpha) < power:
        high *= 2
        if high > MAX_USERS:
            return math.inf
    return _root(lambda n: t_power(d, n, alpha) - power, high / 2, high, xtol=1e-12)


def one_sided_t(n: int, mean: float, sd: float, bound: float, greater: bool) -> tuple[float, float]:
    """The paired t-test of H0: μ ≤ ``bound`` against H1: μ > ``bound`` (``greater``), or of H0: μ ≥
    ``bound`` against H1: μ < ``bound``: t = (m − bound)/(s/√n) and its one-sided p-value (as
    ``scipy.stats.ttest_1samp(d, bound, alternative="greater" | "less")``). NaN below two users; a
    zero spread gives t = ±inf (p 0 or 1) for m ≠ bound, NaN for m = bound."""
    if n < 2 or math.isnan(mean) or math.isnan(sd):
        return math.nan, math.nan
    from scipy.special import stdtr
    se = sd / math.sqrt(n)
    gap = mean - bound
    if se == 0:
        t = math.nan if gap == 0 else math.copysign(math.inf, gap)
    else:
        t = gap / se
    if math.isnan(t):
        return t, math.nan
    return t, float(stdtr(n - 1, -t) if greater else stdtr(n - 1, t))


def t_quantile(n: int, level: float) -> float:
    """t_{level, n−1}, the quantile of Student's t with n − 1 degrees of freedom."""
    from scipy.special import stdtrit
    return float(stdtrit(n - 1, level)) if n >= 2 else math.nan
