"""Student's t quantiles for the gates that test (``not noninferior by``, ``significant loss``) in dbt,
where warehouse SQL has no t distribution. The level is known when ``recsql dbt generate`` runs (from
the gates' ``alpha``), the degrees of freedom ν = n − 1 only in the data, so each level is written as

- a table of t_{level, ν} for ν = 1..N (scipy.special.stdtrit), in the generated model
  ``recsql_t_quantiles`` (one per project: level, df, quantile), and
- beyond N, the Cornish–Fisher expansion of the t quantile in 1/ν around the normal quantile z
  (Abramowitz & Stegun 26.7.5; Hill, "Algorithm 396: Student's t-quantiles", CACM 13(10), 1970):
  t ≈ z + g1(z)/ν + g2(z)/ν² + g3(z)/ν³ + g4(z)/ν⁴, with
  g1 = (z³ + z)/4, g2 = (5z⁵ + 16z³ + 3z)/96, g3 = (3z⁷ + 19z⁵ + 17z³ − 15z)/384,
  g4 = (79z⁹ + 776z⁷ + 1482z⁵ − 1920z³ − 945z)/92160; the g's are numbers written into the test.

N is the least ν from which the expansion is within :data:`TOLERANCE` (relative) of scipy for every
larger ν up to :data:`CHECKED` (the expansion's error falls as 1/ν⁵; tests/test_dbt_generate.py
checks the SQL against scipy.stats.t.ppf for ν up to 100,000): about 160 rows for a one-sided 5%
level, 300 for 0.5%.
"""
from __future__ import annotations

from functools import lru_cache

from ..errors import RecsqlError

TOLERANCE = 1e-12  # the expansion's largest relative error beyond the table, against scipy
CHECKED = 100_000  # the degrees of freedom the expansion is checked up to when N is chosen
MAX_TABLE = 5_000  # a level needing more rows than this is refused (its expansion converges too slowly)
MODEL = "recsql_t_quantiles"  # the generated model holding the table


def _expansion_terms(z: float) -> list[float]:
    return [z, (z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
            (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
            (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160]


@lru_cache(maxsize=None)
def expansion(level: float) -> tuple[float, ...]:
    """(z, g1, g2, g3, g4) of the Cornish–Fisher expansion of t_{level, ν} in 1/ν."""
    from scipy.special import ndtri
    return tuple(_expansion_terms(float(ndtri(level))))


def expanded(level: float, df: "float | object") -> "float | object":
    """The expansion's t_{level, df} (df a number or a numpy array)."""
    z, g1, g2, g3, g4 = expansion(level)
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


@lru_cache(maxsize=None)
def table_size(level: float) -> int:
    """N: the expansion is within TOLERANCE of scipy for every ν from N + 1 to CHECKED."""
    import numpy as np
    from scipy.special import stdtrit
    df = np.arange(1, CHECKED + 1, dtype=float)
    exact = stdtrit(df, level)
    error = np.abs(expanded(level, df) - exact) / np.abs(exact)
    beyond = np.nonzero(error >= TOLERANCE)[0]
    size = int(df[beyond[-1]]) if len(beyond) else 0
    if size > MAX_TABLE:
        raise RecsqlError(f"the t quantile at level {level:g} needs {size} tabled degrees of freedom; choose a "
                          f"larger alpha for the gates")
    return size


def table(level: float) -> list[tuple[int, float]]:
    """(ν, t_{level, ν}) for ν = 1..N."""
    from scipy.special import stdtrit
    return [(df, float(stdtrit(df, level))) for df in range(1, table_size(level) + 1)]


def level_key(level: float) -> str:
    """A level as the table's text key (text, so the join is exact on every warehouse)."""
    return repr(float(level))


def quantile_argument(level: float) -> dict[str, object]:
    """What a test needs of one level: its key, N and the expansion's numbers."""
    return {"level": level_key(level), "df_max": table_size(level), "expansion": [float(v) for v in expansion(level)]}


def model_text(levels: list[float], header: list[str]) -> str:
    """The ``recsql_t_quantiles`` model: one row per (level, ν ≤ N), a ``union all`` of plain SELECTs
    (every warehouse has those; BigQuery and Redshift have no VALUES table), typed by dbt's own
    cross-database types."""
    if not levels:
        raise RecsqlError("no t quantile level to write")
    rows = [(level_key(level), df, value) for level in sorted(set(levels)) for df, value in table(level)]
    (level, df, value), rest = rows[0], rows[1:]
    first = (f"select cast('{level}' as {{{{ dbt.type_string() }}}}) as level, cast({df} as {{{{ dbt.type_int() }}}}) "
             f"as df, cast({value!r} as {{{{ dbt.type_float() }}}}) as quantile")
    lines = [first, *(f"union all select '{level}', {df}, {value!r}" for level, df, value in rest)]
    return "\n".join([*header,
                      "-- Student's t quantiles t_{level, df} (scipy.special.stdtrit) for the recsql.gate tests that test;",
                      "-- beyond each level's last df they use the Cornish-Fisher expansion in 1/df (recsql.dbt.quantiles)",
                      "{{ config(materialized='table') }}", *lines, ""])
