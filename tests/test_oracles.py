"""External oracles: hand-checkable cases from ranx, pytrec_eval and ir_measures test suites
(../shared/oracles/*/cases.md, transcribed to fixtures/oracles/*.json with the recsql variant that
matches each tool's definition)."""
from __future__ import annotations

import math

import pytest

from cases import load, metric_of, per_user, run

CASES = [c for name in ("ranx", "pytrec_eval", "ir_measures") for c in load(f"oracles/{name}.json")]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_oracle_case(case):
    result = run(case)
    metric = metric_of(case)
    tol = case.get("tolerance", 1e-6)
    assert case["expected"] is not None or case["expected_per_user"], "case asserts nothing"
    if case["expected"] is not None:
        assert math.isclose(result.summary[str(metric)].iloc[0], case["expected"], abs_tol=tol)
    got = per_user(result, metric)
    for user, value in (case.get("expected_per_user") or {}).items():
        assert math.isclose(got.get(user, 0.0) if user not in got else got[user], value, abs_tol=tol), user
