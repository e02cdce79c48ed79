"""Fairness of exposure (exposure_disparity, exposure_gini, exposure_entropy, lt_coverage) against the tools
that define it. FairRankTune 0.0.7 (a test dependency) computes the groups' exposure as recsql does:

- its EXP is exposure_disparity with weight=log: each position r of every ranking gives its item's group
  1/log2(r + 1), summed over the rankings and divided by the group's size in the item-to-group map (every
  item of the items input: groups with no listed item count, at 0);
- its AWRF is weight=geometric with its p = 1 − patience, scaled by 100 (attention 100·p·(1 − p)^(r − 1)):
  its ratios equal recsql's, its differences, L2 and deviations are 100×, its variance 10⁴×;
- its EXPU is target=merit given each listed item's relevance as 0/1 (relevant in truth or not): its group
  means of exposure and of relevance share the divisor, so the ratio is recsql's exposure per relevant
  listing; a group without a relevant listing makes FairRankTune divide by zero (inf or nan), and recsql
  return NULL.

Its seven combinations are recsql's `combine` (its Variance the population variance, LTwo the L2 norm); a
ratio of a zero (max_min_ratio with a group never shown) is inf or nan there and NULL in recsql.
FairRankTune needs every listed item in the map (a KeyError otherwise); recsql leaves an item without a
category out, so the cases here give every item one. LensKit's exposure Gini and rank-biased entropy, and
Elliot's short head, are checked in the worked examples (fixtures/worked/beyond.json) from their code.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from FairRankTune.Metrics import AWRF, EXP, EXPU
from hypothesis import given, settings
from scipy.spatial.distance import jensenshannon
from hypothesis import strategies as st

import recsql

COMBOS = {"min_max_ratio": "MinMaxRatio", "max_min_ratio": "MaxMinRatio", "max_min_diff": "MaxMinDiff",
          "max_abs_dev": "MaxAbsDiff", "mean_abs_dev": "MeanAbsDev", "l2": "LTwo", "variance": "Variance"}
# FairRankTune's AWRF attention is 100× recsql's geometric weight: each combination's factor
AWRF_SCALE = {"min_max_ratio": 1, "max_min_ratio": 1, "max_min_diff": 100, "max_abs_dev": 100, "mean_abs_dev": 100,
              "l2": 100, "variance": 10_000}
DATA = "fixtures/data"


def _rankings(recs: pd.DataFrame, k: int) -> tuple[pd.DataFrame, dict]:
    """Each user's top k (score descending, ties by item id) as FairRankTune's columns, and the lists."""
    ranked = recs.sort_values(["user_id", "score", "item_id"], ascending=[True, False, True])
    lists = {u: list(g["item_id"])[:k] for u, g in ranked.groupby("user_id")}
    return pd.DataFrame({u: pd.Series(items, dtype=object) for u, items in lists.items()}), lists


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def _same(got: float, theirs: float) -> bool:
    """Equal, or both undefined: FairRankTune's ratio of a zero (inf, or nan for 0/0) is recsql's NULL."""
    if not np.isfinite(theirs):
        return pd.isna(got)
    return _close(got, theirs)


def _check(recs: pd.DataFrame, truth: pd.DataFrame, items: pd.DataFrame, k: int, patience: float) -> None:
    groups = dict(zip(items["item_id"], items["category"]))
    frame, lists = _rankings(recs, k)
    relevant = {(u, i) for u, i, r in truth[["user_id", "item_id", "relevance"]].itertuples(index=False) if r >= 1}
    utility = pd.DataFrame({u: pd.Series([1.0 if (u, i) in relevant else 0.0 for i in its]) for u, its in lists.items()})
    names = [f"exposure_disparity(combine={c})@{k}" for c in COMBOS]
    names += [f"exposure_disparity(weight=geometric,patience={patience},combine={c})@{k}" for c in COMBOS]
    names += [f"exposure_disparity(target=merit,combine={c})@{k}" for c in ("min_max_ratio", "l2")]
    got = recsql.evaluate(recs, truth, names, items=items).summary.iloc[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        for combo, theirs in COMBOS.items():
            assert _same(got[f"exposure_disparity(combine={combo})@{k}"], EXP(frame, groups, theirs)[0]), combo
            awrf = AWRF(frame, groups, 1 - patience, theirs)[0] / AWRF_SCALE[combo]
            assert _same(got[f"exposure_disparity(weight=geometric,patience={patience},combine={combo})@{k}"], awrf), combo
        for combo in ("min_max_ratio", "l2"):
            value, per_group = EXPU(frame, groups, utility, COMBOS[combo])
            mine = got[f"exposure_disparity(target=merit,combine={combo})@{k}"]
            if all(np.isfinite(v) for v in per_group.values()):
                assert _close(mine, value), combo
            else:  # a group without a relevant listing: FairRankTune divides by zero
                assert pd.isna(mine), combo


@pytest.mark.parametrize("model", ["popular", "personal"])
def test_exposure_disparity_equals_fairranktune_on_the_fixture(model):
    recs = pd.read_parquet(f"{DATA}/recs.parquet")
    recs = recs[recs["model"] == model].drop(columns="model")
    items = pd.read_parquet(f"{DATA}/items.parquet")[["item_id", "category"]]
    assert set(recs["item_id"]) <= set(items["item_id"])
    _check(recs, pd.read_parquet(f"{DATA}/truth.parquet"), items, 10, 0.5)


@st.composite
def cases(draw):
    n_items = draw(st.integers(2, 8))
    categories = [draw(st.sampled_from("abc")) for _ in range(n_items)]
    rows, truth = [], []
    for user in range(draw(st.integers(1, 5))):
        listed = draw(st.lists(st.integers(0, n_items - 1), unique=True, min_size=1, max_size=n_items))
        for item in listed:
            rows.append({"user_id": user, "item_id": item, "score": float(draw(st.integers(0, 3)))})
            if draw(st.booleans()):
                truth.append({"user_id": user, "item_id": item, "relevance": 1.0})
    items = pd.DataFrame({"item_id": range(n_items), "category": categories})
    truth = pd.DataFrame(truth, columns=["user_id", "item_id", "relevance"]).astype(
        {"user_id": "int64", "item_id": "int64", "relevance": "float64"})
    return pd.DataFrame(rows), truth, items, draw(st.integers(1, 6)), draw(st.sampled_from([0.5, 0.8, 0.25]))


@settings(max_examples=40, deadline=None)
@given(cases())
def test_exposure_disparity_equals_fairranktune_on_random_cases(case):
    recs, truth, items, k, patience = case
    if truth.empty:
        truth = pd.DataFrame({"user_id": [0], "item_id": [-1], "relevance": [1.0]})
    _check(recs, truth, items, k, patience)


def test_exposure_gini_uniform_is_gini_and_exposure_disparity_needs_categories():
    recs = pd.read_parquet(f"{DATA}/recs.parquet")
    recs = recs[recs["model"] == "personal"].drop(columns="model")
    got = recsql.evaluate(recs, None, ["gini@10", "exposure_gini(weight=uniform)@10"]).summary.iloc[0]
    assert _close(got["gini@10"], got["exposure_gini(weight=uniform)@10"])
    with pytest.raises(recsql.RecsqlError, match="items"):
        recsql.evaluate(recs, None, ["exposure_disparity@10"])


def _trec_discount(n: int) -> np.ndarray:
    """TREC Fair Ranking's discount(n), as written there."""
    ranks = np.maximum(np.arange(1, n + 1, dtype="f4"), 2)
    return np.reciprocal(np.log2(ranks))


def _trec_awrf(qrun: list, page_align: pd.DataFrame, qtgt: np.ndarray) -> float:
    """TREC Fair Ranking 2021's qr_awrf, as written there (float32 discount, scipy's natural log)."""
    n = len(qrun)
    disc = _trec_discount(n)
    ralign = page_align.reindex(qrun)
    ralign = ralign.multiply(disc, axis=0)
    ralign = ralign.sum(axis=0) / np.sum(disc)
    dist = jensenshannon(ralign, qtgt)
    return 1 - dist * dist


@settings(max_examples=40, deadline=None)
@given(cases(), st.booleans())
def test_awrf_equals_trec_fair_ranking(case, uniform):
    recs, _, items, k, _ = case
    items = items.iloc[: max(1, len(items) - 1)]  # an item without a group: left out (NaN rows in TREC's code)
    align = pd.get_dummies(items.set_index("item_id")["category"]).astype(float)
    target = (np.full(align.shape[1], 1 / align.shape[1]) if uniform else align.sum().to_numpy() / len(items))
    _, lists = _rankings(recs, k)
    name = f"awrf(target={'uniform' if uniform else 'items'})@{k}"
    got = recsql.evaluate(recs, None, [name], items=items).per_user.set_index("user_id")[name]
    for user, qrun in lists.items():
        if not set(qrun) & set(items["item_id"]):
            assert pd.isna(got[user])
            continue
        # the float32 discount of TREC's code: equal to 1e-6
        assert math.isclose(got[user], _trec_awrf(qrun, align, target), rel_tol=1e-6, abs_tol=1e-6), user


@pytest.mark.parametrize("name", ["pop_rsp@10", "pop_reo@10"])
def test_popularity_parity_needs_truth_and_interactions(name):
    recs = pd.read_parquet(f"{DATA}/recs.parquet")
    interactions = pd.read_parquet(f"{DATA}/truth.parquet")[["user_id", "item_id"]]
    with pytest.raises(recsql.RecsqlError, match="needs truth"):
        recsql.evaluate(recs, None, [name], run_cols="model", interactions=interactions)
    with pytest.raises(recsql.RecsqlError, match="needs training interactions: pass interactions="):
        recsql.evaluate(recs, pd.read_parquet(f"{DATA}/truth.parquet"), [name], run_cols="model")
