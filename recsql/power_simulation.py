"""The power of the Wilcoxon signed-rank and randomization tests, by simulation from a pilot's paired
per-user differences (:meth:`recsql.Comparison.power` with ``test="wilcoxon"`` or ``"randomization"``).

Neither test has a closed-form power for an unknown distribution of differences, so the pilot stands for
the population (the bootstrap's model), moved so that the test's null hypothesis holds, then shifted by
the true difference Δ (a location shift): a user's difference is D = d_U − c + Δ, d_U a pilot user's
difference (U uniform over the pilot's users), c the pilot's center for the test (:func:`center`: the
mean for the randomization test, which tests the mean; the Hodges–Lehmann estimate for Wilcoxon's,
which tests symmetry about 0). For symmetric differences the two centers agree and Δ is the mean
difference for both; for skewed ones (many users unchanged, say) Wilcoxon's Δ shifts its
pseudo-median, not the mean. A simulated comparison draws n users' differences and applies the test as
:func:`recsql.compare` does:

- differences on the grid of 1/GRAIN (``q = ROUND(D·GRAIN)``, sql/_compare_observed.sql);
- Wilcoxon: zero differences dropped, |q| ranked with ties averaged, the tie-corrected normal
  approximation without continuity correction (:func:`recsql.significance.wilcoxon_p`);
- randomization: B sign flips (B = the comparison's resamples), extreme = #{b : |Σ s_b·D| ≥ |Σ D| −
  1e-9·Σ|D|}, p = (1 + extreme)/(B + 1) (:func:`recsql.significance.randomization_p`).

The power is the share of S simulations whose p is below the level (two-sided), with its Monte Carlo
standard error √(power·(1 − power)/S). Every Δ of one search reuses the same simulated users and sign
flips (common random numbers), so the power grows with Δ without noise between the steps. The draws
are recsql's portable ones (:func:`recsql.resampling.draws`: the mixer of compare's resampling, streams
of their own, seeded by the comparison's seed), so the same call gives the same table anywhere; and a
simulation's first n users are the same for every n, so the search for the users needed moves smoothly.
Simulating from pilot data: Efron & Tibshirani, An Introduction to the Bootstrap, 1993, §25 (power
by the bootstrap); Urbano, Lima & Hanjalic, SIGIR 2019 (simulating IR evaluation data from a pilot).

>>> d = np.array([0.1, -0.05, 0.2, 0.0, 0.15, -0.1, 0.05, 0.3])
>>> round(simulated_power(d, 0.1, 8, 0.05, "wilcoxon", 400, 0), 2) > round(simulated_power(d, 0.0, 8, 0.05, "wilcoxon", 400, 0), 2)
True
"""
from __future__ import annotations

import math

import numpy as np

from .resampling import P, draws

GRAIN = 1e12  # as recsql.comparison_sql.GRAIN: differences are compared on a grid of 1/GRAIN
TOLERANCE = 1e-9  # as recsql.comparison_sql.TOLERANCE: a flipped sum this share of Σ|D| below counts as extreme
TESTS = ("wilcoxon", "randomization")
CELLS = 4_000_000  # simulated differences held at once (a block of simulations × users)
MAX_USERS = 100_000  # users_needed searches up to here; beyond it the answer is NaN ("not simulated")
RESOLUTION = 1e-4  # the detectable difference is bisected until its bracket is this share of it


def _wilcoxon_p(d: np.ndarray) -> np.ndarray:
    """Per row of ``d`` (simulations × users): the Wilcoxon p-value as recsql.compare computes it."""
    from scipy.special import ndtr  # scipy on first use: importing this module (every comparison) stays light
    from scipy.stats import rankdata
    q = np.round(d * GRAIN)
    a = np.abs(q)
    n_nonzero = (a > 0).sum(axis=1)
    zeros = a.shape[1] - n_nonzero
    ranks = rankdata(a, axis=1) - zeros[:, None]  # the zeros hold the lowest ranks: the others' ranks among themselves
    r_plus = np.where(q > 0, ranks, 0.0).sum(axis=1)
    ordered = np.sort(a, axis=1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    flat = starts.ravel()
    group = np.cumsum(flat) - 1
    sizes = np.bincount(group).astype(float)
    first = np.flatnonzero(flat)
    nonzero_group = ordered.ravel()[first] > 0
    ties = np.bincount(first // a.shape[1], weights=np.where(nonzero_group, sizes ** 3 - sizes, 0.0),
                       minlength=a.shape[0])
    n = n_nonzero.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (r_plus - n * (n + 1) / 4) / np.sqrt((n * (n + 1) * (2 * n + 1) - ties / 2) / 24)
    return np.where(n_nonzero > 0, np.minimum(1.0, 2 * ndtr(-np.abs(z))), np.nan)


def _randomization_p(d: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Per row of ``d``: the sign-flip p-value with the flips ``signs`` (B × users of ±1, int8)."""
    observed = np.abs(d.sum(axis=1))
    slack = TOLERANCE * np.abs(d).sum(axis=1)
    flipped = np.zeros((d.shape[0], signs.shape[0]))
    width = max(1, CELLS // signs.shape[0])
    for start in range(0, d.shape[1], width):  # the flips a block of users at a time, as doubles
        flipped += d[:, start:start + width] @ signs[:, start:start + width].T.astype(float)
    extreme = (np.abs(flipped) >= (observed - slack)[:, None]).sum(axis=1)
    return (1 + extreme) / (signs.shape[0] + 1)


def center(d: np.ndarray, test: str) -> float:
    """Where the test's null hypothesis puts the pilot's differences: their mean for the randomization test
    (of the mean); for Wilcoxon's (symmetry about 0), the c at which the signed-rank statistic of d − c
    changes sign (the Hodges–Lehmann estimate, found by bisection to 1e-12 of the differences' range)."""
    if test == "randomization":
        return float(np.mean(d))
    from scipy.stats import rankdata
    low, high = float(np.min(d)), float(np.max(d))
    while high - low > 1e-12 * max(1.0, high - low, abs(low), abs(high)):
        middle = (low + high) / 2
        x = d - middle
        signed = np.sum(np.sign(x) * rankdata(np.abs(x)))  # > 0: most of the rank mass above c
        if signed > 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


class Simulation:
    """S simulated comparisons of ``n`` users drawn from the pilot's differences ``d``, and the flips
    (for the randomization test), fixed once so that every Δ reuses them (common random numbers)."""

    def __init__(self, d: np.ndarray, n: int, test: str, simulations: int, seed: int, flips: int) -> None:
        d = np.asarray(d, dtype=float)
        self.centered = d - center(d, test)
        # pilot user ⌊u·n₀/P⌋ for the draw u of (simulation, position); flip +1 for an even u, as compare's
        self.users = draws(seed, "simulated_users", simulations, n) * len(d) // P
        self.test = test
        self.signs = (1 - 2 * (draws(seed, "simulated_flips", flips, n) % 2)).astype(np.int8) \
            if test == "randomization" else None

    def detectable(self, alpha: float, target: float) -> float:
        """The smallest true difference Δ ≥ 0 whose power reaches ``target``: the bisection of the
        (common-random-numbers) power in Δ, to RESOLUTION of Δ (finer than the Monte Carlo error of a
        power from S simulations); NaN when the pilot's differences are all equal (no spread to scale a
        search by)."""
        spread = float(np.std(self.centered))
        if not spread > 0:
            return math.nan
        low, high = 0.0, spread
        while self.power(high, alpha) < target:
            low, high = high, 2 * high
            if high > 1e6 * spread:
                return math.inf
        while high - low > RESOLUTION * high:
            middle = (low + high) / 2
            if self.power(middle, alpha) >= target:
                high = middle
            else:
                low = middle
        return high

    def power(self, shift: float, alpha: float) -> float:
        """The share of the simulations whose p-value is below ``alpha`` when the true difference is ``shift``."""
        block = max(1, CELLS // self.users.shape[1])
        rejected = 0
        for start in range(0, self.users.shape[0], block):
            d = self.centered[self.users[start:start + block]] + shift
            p = _wilcoxon_p(d) if self.test == "wilcoxon" else _randomization_p(d, self.signs)
            rejected += int(np.sum(p < alpha))
        return rejected / self.users.shape[0]


def simulated_power(d: np.ndarray, shift: float, n: int, alpha: float, test: str, simulations: int, seed: int,
                    flips: int = 1000) -> float:
    """The power of ``test`` at level ``alpha`` with ``n`` users when the true mean difference is ``shift``."""
    return Simulation(d, n, test, simulations, seed, flips).power(shift, alpha)


def detectable(d: np.ndarray, n: int, alpha: float, target: float, test: str, simulations: int, seed: int,
               flips: int = 1000) -> float:
    """The smallest true difference Δ ≥ 0 whose simulated power with ``n`` users reaches ``target``
    (:meth:`Simulation.detectable`)."""
    return Simulation(d, n, test, simulations, seed, flips).detectable(alpha, target)


def users_needed(d: np.ndarray, shift: float, alpha: float, target: float, test: str, simulations: int, seed: int,
                 flips: int = 1000) -> float:
    """The least number of users whose simulated power to detect ``shift`` reaches ``target`` (doubling,
    then bisection over whole numbers; each n its own simulations, seeded by n); NaN beyond MAX_USERS."""
    def reaches(n: int) -> bool:
        return Simulation(d, n, test, simulations, seed, flips).power(shift, alpha) >= target

    low, high = 1, 2
    while not reaches(high):
        low, high = high, 2 * high
        if high > MAX_USERS:
            return math.nan
    while high - low > 1:
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return float(high)
