"""Comparing a result read back from an engine or dbt with ``recsql.evaluate``'s, value by value."""
from __future__ import annotations

import math

import pytest


def assert_same_values(actual, expected, where: object) -> None:
    """Each column of ``expected`` equals ``actual``'s row by row: missing stays missing, text is equal
    as text, numbers to 1e-9 absolute. ``where`` names the case in a failure."""
    assert len(actual) == len(expected), where
    for column in expected.columns:
        for got, want in zip(actual[column], expected[column]):
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert got is None or (isinstance(got, float) and math.isnan(got)), (where, column, got)
            elif isinstance(want, str):
                assert str(got) == want, (where, column, got, want)
            else:
                assert float(got) == pytest.approx(float(want), abs=1e-9, rel=0), (where, column, got, want)
