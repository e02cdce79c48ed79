"""Worked examples (fixtures/worked/seeds.json and recsql.json): small hand-worked examples, inputs
written out, the arithmetic in each case's ``note``."""
from __future__ import annotations

import math

import pytest

from support.cases import load, metric_of, per_user, run

CASES = [c for c in load("worked/seeds.json") if c["issue"] == 2] + load("worked/recsql.json")


def test_every_accuracy_example_is_here():
    assert len(CASES) >= 46


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_worked_example(case):
    result = run(case)
    metric = metric_of(case)
    assert math.isclose(result.summary[metric.column].iloc[0], case["expected"], rel_tol=1e-12, abs_tol=1e-12)
    if case.get("expected_per_user"):
        got = per_user(result, metric)
        for user, value in case["expected_per_user"].items():
            assert math.isclose(got[user], value, rel_tol=1e-12, abs_tol=1e-12), user
