"""Test settings: hypothesis is derandomized in CI so a red build can be reproduced exactly.

CI does not shrink failing examples: shrinking an engine-backed example can take minutes per test,
and a red build must report within CI's time limit. The first failing example is printed with its
reproduction blob; run the test locally (without CI set) to get the shrunk example.

recsql's on-disk statement cache (recsql/statements.py) goes to a fresh directory per test session,
inherited by the processes the tests start: the tests neither read statements an earlier session
left in the user's cache nor fill it.

The tests run in two pytest-xdist workers (pyproject.toml). Tests marked ``longest`` (the dbt
builds on real adapters, minutes each) are collected first, so the workers start on them: started
last, they would set the suite's length."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          phases=[p for p in Phase if p not in (Phase.shrink, Phase.explain)],
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")

if "RECSQL_CACHE_DIR" not in os.environ:
    os.environ["RECSQL_CACHE_DIR"] = tempfile.mkdtemp(prefix="recsql-test-cache-")
    atexit.register(shutil.rmtree, os.environ["RECSQL_CACHE_DIR"], ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``longest`` tests first (a stable sort: the others keep their order)."""
    items.sort(key=lambda item: item.get_closest_marker("longest") is None)

# Run by tests/test_logs_obp.py in obp's own virtual environment, never imported by the test run (nor by
# --doctest-modules): it imports obp, which this environment does not have.
collect_ignore = ["support/obp_cases.py"]
