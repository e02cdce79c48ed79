"""The portable integer mixer behind :func:`recsql.compare`'s resampling (``sql/_compare_draws.sql``).

Bootstrap weights and sign flips must be the same on every engine, so they cannot come from an
engine's random() or hash (SQLite has no hash; the others' differ). They come from integer
arithmetic that every engine does exactly: everything is reduced modulo the prime
P = 2^31 − 1, so a product of two reduced numbers stays below 2^62 (no 64-bit overflow, which
SQLite would turn into a float, PostgreSQL and DuckDB into an error). The mixing step is
x ↦ x^5 mod P, a permutation of 0..P−1 because gcd(5, P − 1) = 1 (a permutation polynomial:
Lidl & Niederreiter, *Finite Fields*, 1997, ch. 7); as a polynomial of degree 5 over a prime
field, its values on any arithmetic progression are equidistributed up to O(√P·log P) (Weil's
bound), which is what uniform draws need.

>>> mix(2), mix(P - 1)
(32, 2147483646)
>>> poisson_thresholds()[:3]
[790015084, 1580030168, 1975037710]
"""
from __future__ import annotations

from decimal import Decimal, localcontext
from functools import lru_cache
from typing import TYPE_CHECKING

from sqlglot import exp

if TYPE_CHECKING:  # numpy is imported where draws are made: composing compare's SQL needs none
    import numpy as np

P = 2_147_483_647  # 2^31 − 1, prime
# Steps of the affine maps in front of each MIX (any numbers in 1..P−1; fixed, so a seed means one stream).
SEED_STEP = 1_103_515_245
B_STEP = 48_271
USER_STEP = 69_621
USER_SHIFT = 12_345
# one stream of draws per use: compare's (sql/_compare_draws.sql), and the simulated comparisons of the
# Wilcoxon and randomization tests' power (recsql/power_simulation.py)
STREAMS = {"weights": 1, "flips": 2, "shuffles": 3, "simulated_users": 4, "simulated_flips": 5}
RUN_STEP = 16_807  # run shuffles: the run's step in front of its MIX (sql/_compare_tukey.sql)
MAX_RESAMPLES = 10_000  # resamples are numbered from four digit tables (sql/_compare_draws.sql)


def mix(x: int) -> int:
    """x^5 mod P, the mixing permutation (as ``MIX(x)`` in the SQL)."""
    return pow(x, 5, P)


def mix_array(x: np.ndarray) -> np.ndarray:
    """:func:`mix` of every element of an int64 array of numbers below P (the products stay below 2^62)."""
    square = x * x % P
    return square * square % P * x % P


def draws(seed: int, stream: str, rows: int, columns: int) -> np.ndarray:
    """The ``rows`` × ``columns`` uniform draws on 0..P−1 of one stream, as sql/_compare_draws.sql makes
    compare's (row b = 1.. the resample's key, column i = 1.. the user's): u = MIX((key_b + key_i) mod P),
    key_b = MIX((stream key + b·B_STEP) mod P), key_i = MIX((i·USER_STEP + USER_SHIFT) mod P)."""
    import numpy as np
    row_keys = mix_array((stream_key(seed, stream) + np.arange(1, rows + 1, dtype=np.int64) * B_STEP) % P)
    column_keys = mix_array((np.arange(1, columns + 1, dtype=np.int64) * USER_STEP + USER_SHIFT) % P)
    return mix_array((row_keys[:, None] + column_keys[None, :]) % P)


def stream_key(seed: int, stream: str) -> int:
    """The key of one stream of draws for a seed: MIX((seed·SEED_STEP + stream) mod P)."""
    return mix((seed * SEED_STEP + STREAMS[stream]) % P)


@lru_cache(maxsize=1)
def poisson_thresholds() -> list[int]:
    """c_j = ceil(F(j)·P) for the Poisson(1) CDF F, j = 0, 1, ... while c_j < P: a draw u uniform
    on 0..P−1 has the weight #{j : u ≥ c_j}, so P(weight ≥ j + 1) = (P − c_j)/P ≈ 1 − F(j).
    Computed in 40-digit decimal arithmetic, so every threshold is exact."""
    with localcontext() as context:
        context.prec = 40
        term = total = Decimal(-1).exp()  # P(X = 0) = e^-1
        out: list[int] = []
        j = 0
        while True:
            scaled = total * P
            c = int(scaled) + (0 if scaled == int(scaled) else 1)
            if c >= P:
                return out
            out.append(c)
            j += 1
            term = term / j
            total += term


def _mix_sql(x: exp.Expression) -> exp.Expression:
    """``MIX(x)`` in SQL: x^5 mod P as three products of reduced numbers (x must be a column, read 5 times)."""
    p = bigint(P)

    def mod(a: exp.Expression) -> exp.Expression:
        return exp.Paren(this=exp.Mod(this=a, expression=p.copy()))

    square = mod(exp.Mul(this=x.copy(), expression=x.copy()))
    fourth = mod(exp.Mul(this=square, expression=square.copy()))
    return mod(exp.Mul(this=fourth, expression=x.copy()))


def _poisson_sql(u: exp.Expression) -> exp.Expression:
    """``POISSON(u)``: the Poisson(1) weight of a draw u, by its thresholds."""
    ifs = [exp.If(this=exp.LT(this=u.copy(), expression=bigint(c)), true=bigint(j))
           for j, c in enumerate(poisson_thresholds())]
    return exp.Case(ifs=ifs, default=bigint(len(poisson_thresholds())))


MACROS = {"MIX": _mix_sql, "POISSON": _poisson_sql}


def expand_macros(tree: exp.Expression) -> exp.Expression:
    """Replace the mixer's macros (``MIX(x)``, ``POISSON(u)``) by their SQL."""
    def expand(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and str(node.this).upper() in MACROS:
            return MACROS[str(node.this).upper()](node.expressions[0])
        return node
    return tree.transform(expand)


def bigint(value: int) -> exp.Expression:
    """An integer literal typed BIGINT, so that no engine narrows it (ClickHouse types 48271 UInt16)."""
    return exp.cast(exp.Literal.number(value), "BIGINT")


def draw_parameters(seed: int, resamples: int) -> dict[str, int]:
    """The parameters of ``sql/_compare_draws.sql`` for a seed."""
    return {"P": P, "resamples": resamples, "weight_key": stream_key(seed, "weights"),
            "flip_key": stream_key(seed, "flips"), "shuffle_key": stream_key(seed, "shuffles"), "b_step": B_STEP,
            "user_step": USER_STEP, "user_shift": USER_SHIFT, "run_step": RUN_STEP}
