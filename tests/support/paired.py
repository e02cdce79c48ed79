"""Paired per-user values for the comparison tests (tests/test_compare.py, tests/test_decisions.py): a
hypothesis strategy of two runs' values user by user, and the comparison of a result with the value an
outside tool gives."""
from __future__ import annotations

import math

import pandas as pd
from hypothesis import strategies as st


def close(a, b, tol=1e-9) -> bool:
    """Equal to ``tol`` relative (1e-12 absolute), both NaN, or the same infinity."""
    if isinstance(a, float) and isinstance(b, float) and math.isinf(a) and math.isinf(b):
        return a == b
    return (pd.isna(a) and pd.isna(b)) or math.isclose(float(a), float(b), rel_tol=tol, abs_tol=1e-12)


# Per-user values on a grid of 1/64: differences are exact, so ties are ties for scipy too (README:
# recsql compares differences on a 1e-12 grid, which equals exact comparison here).
grid_values = st.integers(0, 64).map(lambda k: k / 64)


@st.composite
def paired(draw, min_users=2, max_users=40):
    """Two runs' values for the same n users (run B's, then run A's)."""
    n = draw(st.integers(min_users, max_users))
    x = draw(st.lists(grid_values, min_size=n, max_size=n))
    y = draw(st.lists(grid_values, min_size=n, max_size=n))
    return x, y
