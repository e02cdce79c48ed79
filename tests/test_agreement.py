"""Run agreement (rbo, intersection, jaccard) against the tools that define it, installed as test
dependencies: the ``rbo`` package (RankingSimilarity.rbo_ext, Webber et al.'s equation 32) and RecTools'
Intersection. Both are installed without their dependencies (.ci/engines.sh): rbo declares numpy < 2,
RecTools numpy < 2 and pandas < 3, and neither module imports anything recsql's tests lack.

- rbo_ext takes the two lists as given; recsql cuts both at k first (recs' and expected_recs' top k,
  ties by item id), so the package is given those cut lists. A user without an expected list scores 0
  in both (one empty list).
- RecTools' Intersection@k is its Recall@ref_k of the reference lists against the list's top k: the
  share of L that E holds, #(L ∩ E) / #L, every user of the list kept (0 without a reference list).
  It reads a rank column, so it is given recsql's ranks (score descending, ties by item id).
- Jaccard has no tool of its own here; it is checked against the set formula on the same cases.
"""
from __future__ import annotations

import math

import pandas as pd
import pytest
import rbo
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rectools.metrics import Intersection

import recsql
from support.strategies import recs_rows

RECS = {"user_id": "int64", "item_id": "int64", "score": "float64"}
FIXTURE = "fixtures/data/recs.parquet"


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(RECS)).astype(RECS)


def _ranked(frame: pd.DataFrame) -> pd.DataFrame:
    """The lists in recsql's order (score descending, ties by item id) with their rank 1..n."""
    out = frame.sort_values(["user_id", "score", "item_id"], ascending=[True, False, True]).copy()
    out["rank"] = out.groupby("user_id").cumcount() + 1
    return out


def _lists(frame: pd.DataFrame, k: int) -> dict:
    ranked = _ranked(frame)
    ranked = ranked[ranked["rank"] <= k]
    return {u: list(g["item_id"]) for u, g in ranked.groupby("user_id")}


def _evaluate(recs: pd.DataFrame, expected: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    return recsql.evaluate(recs, None, metrics, expected_recs=expected).per_user.set_index("user_id")


def _check_against_tools(recs: pd.DataFrame, expected: pd.DataFrame, k: int, p: float) -> None:
    names = [f"rbo(p={p})@{k}", f"intersection@{k}", f"jaccard@{k}"]
    got = _evaluate(recs, expected, names)
    mine, theirs = _lists(recs, k), _lists(expected, k)
    assert set(got.index) == set(mine)
    ranked = _ranked(recs)
    reference = _ranked(expected)
    tool = Intersection(k=k).calc_per_user(ranked[["user_id", "item_id", "rank"]],
                                           reference[["user_id", "item_id", "rank"]]) if len(reference) else None
    for user, items in mine.items():
        other = theirs.get(user, [])
        want_rbo = rbo.RankingSimilarity(items, other).rbo_ext(p=p) if other else 0.0
        assert math.isclose(got.at[user, names[0]], want_rbo, rel_tol=1e-12, abs_tol=1e-12), (user, items, other)
        want_int = float(tool.get(user, 0.0)) if tool is not None else 0.0
        assert math.isclose(got.at[user, names[1]], want_int, rel_tol=1e-12, abs_tol=1e-12), (user, items, other)
        union = set(items) | set(other)
        assert math.isclose(got.at[user, names[2]], len(set(items) & set(other)) / len(union), abs_tol=1e-12)


@settings(max_examples=60, deadline=None)
@given(recs=recs_rows(), expected=recs_rows(), k=st.integers(1, 6), p=st.sampled_from([0.5, 0.9, 0.98]))
def test_agreement_equals_rbo_and_rectools_on_random_runs(recs, expected, k, p):
    assume(recs)
    _check_against_tools(_frame(recs), _frame(expected), k, p)


@pytest.mark.parametrize("k,p", [(10, 0.9), (5, 0.98), (3, 0.5)])
def test_agreement_equals_rbo_and_rectools_on_the_fixture(k, p):
    """The fixture's two models (a popularity model and a personal one, 300 users), one as the
    reference run of the other, and the personal model against a reordering of itself that shares
    part of each list (so every overlap depth occurs)."""
    both = pd.read_parquet(FIXTURE)
    personal = both[both.model == "personal"].drop(columns="model").reset_index(drop=True)
    popular = both[both.model == "popular"].drop(columns="model").reset_index(drop=True)
    reordered = personal.copy()
    reordered["score"] = (reordered["item_id"] * 7919 % 101) / 101.0
    reordered = reordered[reordered["item_id"] % 3 != 0]
    _check_against_tools(personal, popular, k, p)
    _check_against_tools(personal, reordered, k, p)


def test_rbo_of_identical_lists_is_one_and_of_disjoint_lists_zero():
    same = _frame([{"user_id": 1, "item_id": i, "score": -i} for i in range(1, 6)])
    other = _frame([{"user_id": 1, "item_id": i, "score": -i} for i in range(6, 11)])
    assert _evaluate(same, same, ["rbo@5"]).iloc[0, 0] == pytest.approx(1.0, abs=1e-15)
    assert _evaluate(same, other, ["rbo@5"]).iloc[0, 0] == 0.0


def test_rbo_beyond_the_generated_depths_is_refused():
    one = _frame([{"user_id": 1, "item_id": 1, "score": 1.0}])
    with pytest.raises(recsql.RecsqlError, match="rbo supports k <= 10000"):
        _evaluate(one, one, ["rbo@10001"])
