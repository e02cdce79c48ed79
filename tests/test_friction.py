"""What a new user trips over first, in the Python API: one run column given as a string, the
version, JSON numbers written with every digit, published citations and readable defaults."""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import recsql
from recsql import RecsqlError
from recsql.output import to_json

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")


def test_one_run_column_as_a_string_is_one_column():
    as_list = recsql.evaluate(RECS, TRUTH, ["ndcg@10", "map@10"], run_cols=["model"]).summary
    as_string = recsql.evaluate(RECS, TRUTH, ["ndcg@10", "map@10"], run_cols="model").summary
    pd.testing.assert_frame_equal(as_string, as_list)
    assert as_string.columns[0] == "model" and sorted(as_string["model"]) == ["personal", "popular"]


def test_to_sql_takes_one_run_column_as_a_string():
    for truth_has_run_cols in (False, True):
        as_list = recsql.to_sql(metrics=["ndcg@10"], run_cols=["model"], truth_has_run_cols=truth_has_run_cols)
        assert recsql.to_sql(metrics=["ndcg@10"], run_cols="model", truth_has_run_cols=truth_has_run_cols) == as_list
    assert '"model"' in as_list and '"m"' not in as_list
    assert recsql.to_sql(metrics=["ndcg@10"], run_cols=None) == recsql.to_sql(metrics=["ndcg@10"])  # None: no run keys


@pytest.mark.parametrize("bad", [1, 2.5, b"model", {"model": 1}, [1], ["model", None], [""]])
def test_run_columns_that_are_not_names_are_refused_with_the_fix(bad):
    for call in (lambda: recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols=bad),
                 lambda: recsql.to_sql(metrics=["ndcg@10"], run_cols=bad)):
        with pytest.raises(RecsqlError) as err:
            call()
        assert "run_cols" in str(err.value) and "run_cols='model'" in str(err.value)


def test_version_is_pyprojects():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert recsql.__version__ == pyproject["project"]["version"]


def test_json_round_trips_every_double_exactly():
    values = [0.1 + 0.2, 1 / 3, 2 / 3, 1e-300, 123456789.12345678, 5e-324]
    frame = pd.DataFrame({"model": ["a"] * 6, "n_users": np.arange(6, dtype="int64"), "ndcg@10": values})
    rows = json.loads(to_json(frame))
    assert [r["ndcg@10"] for r in rows] == values  # exact, not approximately
    assert [r["n_users"] for r in rows] == list(range(6)) and all(type(r["n_users"]) is int for r in rows)
    assert "0.30000000000000004" in to_json(frame)


def test_json_writes_null_for_nan_null_and_infinity():
    frame = pd.DataFrame({"x": [float("nan"), None, float("inf"), -float("inf"), 0.5],
                          "d": pd.to_datetime(["2024-01-02", None, "2024-01-03", "2024-01-04", "2024-01-05"])})

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    rows = json.loads(to_json(frame), parse_constant=refuse)
    assert [r["x"] for r in rows] == [None, None, None, None, 0.5]
    assert rows[0]["d"] == "2024-01-02T00:00:00" and rows[1]["d"] is None


def test_every_metric_cites_a_published_source():
    for spec in recsql.registry().values():
        assert spec.cite.strip(), f"{spec.name}: no citation"
        assert not re.search(r"seed|spec\b|notebook", spec.cite, re.IGNORECASE), f"{spec.name}: {spec.cite}"


def test_every_auto_default_says_what_it_means():
    autos = [(spec.name, p) for spec in recsql.registry().values() for p in spec.params.values() if p.default == "auto"]
    assert {name for name, _ in autos} >= {"err", "pfound"}
    assert all(p.meaning for _, p in autos)
    assert recsql.registry()["err"].params["max_grade"].meaning == "the largest relevance in truth"


def test_json_keeps_every_column_type_readable():
    frame = pd.DataFrame({"model": ["a", None, "a"], "n_users": np.array([1, 2, 3], dtype="uint32"),
                          "flag": [True, False, True], "users": pd.array([1, None, 3], dtype="Int64"),
                          "date": pd.to_datetime(["2024-01-02", None, "2024-01-03"]),
                          "p@{k}": np.float32([0.1, np.nan, 2])})
    text = to_json(frame)
    rows = json.loads(text)
    assert rows[0] == {"model": "a", "n_users": 1, "flag": True, "users": 1, "date": "2024-01-02T00:00:00",
                       "p@{k}": float(np.float32(0.1))}
    assert rows[1] == {"model": None, "n_users": 2, "flag": False, "users": None, "date": None, "p@{k}": None}
    assert text == json.dumps(rows, indent=2)  # laid out as json.dumps lays it out
    assert to_json(frame.iloc[:0]) == "[]"
