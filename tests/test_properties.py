"""recsql == the plain-Python reference (tests/support/reference.py) on random inputs, plus invariants."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from support.reference import reference
from support.strategies import ACCURACY, check, frame, metrics, python_options, recs_rows, truth_rows

BOUNDED = {"hit_rate", "precision", "recall", "f1", "map", "mrr", "r_precision", "money_precision", "money_recall"}
# Random inputs often have no relevant truth at all: the empty-population warning is expected here
# (tests/test_inputs.py checks that it is raised).
pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")


def prices() -> dict[int, float]:
    """Prices of items 1..8 (item 9 has none: a missing price counts as 0)."""
    return {item: float(item * 7 % 11) for item in range(1, 9)}


@settings(max_examples=60)
@given(
    recs=recs_rows(),
    truth=truth_rows(),
    asked=st.lists(metrics(), min_size=1, max_size=8, unique_by=str),
    threshold=st.sampled_from([1, 2, 0.5]),
    population=st.sampled_from(["relevant", "intersection"]),
)
def test_every_metric_matches_reference(recs, truth, asked, threshold, population):
    items = pd.DataFrame({"item_id": list(prices()), "price": list(prices().values())})
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), asked,
                             items=items, threshold=threshold, population=population)
    for metric in asked:
        expected = reference(recs, truth, metric.name, metric.k, python_options(metric), items=prices(),
                             threshold=threshold, population=population)
        check(result, metric, expected)


@settings(max_examples=25)
@given(recs=recs_rows(use_rank=True), truth=truth_rows(), asked=st.lists(metrics(), min_size=1, max_size=5, unique_by=str))
def test_rank_column_with_gaps_and_ties(recs, truth, asked):
    asked = [m for m in asked if "price" not in m.spec.needs] or [recsql.Metric("ndcg", 3)]
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "rank"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), asked, rank_col="rank")
    for metric in asked:
        check(result, metric, reference(recs, truth, metric.name, metric.k, python_options(metric), use_rank=True))


@settings(max_examples=20)
@given(recs_a=recs_rows(), recs_b=recs_rows(), truth=truth_rows(), metric=metrics(["ndcg", "map", "recall", "mrr"]))
def test_runs_are_evaluated_independently_in_one_query(recs_a, recs_b, truth, metric):
    runs = pd.concat([frame(recs_a, ["user_id", "item_id", "score"]).assign(model="a"),
                      frame(recs_b, ["user_id", "item_id", "score"]).assign(model="b")])
    result = recsql.evaluate(runs, frame(truth, ["user_id", "item_id", "relevance"]), [metric], run_cols=["model"])
    for model, rows in (("a", recs_a), ("b", recs_b)):
        if not rows:
            assert model not in set(result.summary["model"])  # a run is a key combination present in recs
            continue
        expected = reference(rows, truth, metric.name, metric.k, python_options(metric))
        per_user = result.per_user[result.per_user["model"] == model]
        got = dict(zip(per_user["user_id"], per_user[metric.column]))
        assert got.keys() == expected.keys()
        assert all(math.isclose(got[u], v, abs_tol=1e-12) for u, v in expected.items())


def _per_run(result: recsql.Evaluation, asked: list, model: str | None = None) -> dict:
    """{(metric, user): value} of one run of ``result`` (all of it when ``model`` is None), NULLs dropped."""
    rows = result.per_user if model is None else result.per_user[result.per_user["model"] == model]
    return {(m.column, u): v for m in asked for u, v in zip(rows["user_id"], rows[m.column]) if not pd.isna(v)}


@settings(max_examples=30, deadline=None)
@given(recs_a=recs_rows(), recs_b=recs_rows(), truth_a=truth_rows(), truth_b=truth_rows(),
       asked=st.lists(metrics(["ndcg", "map", "mrr", "recall", "bpref", "judged", "r_precision", "hit_rate"]),
                      min_size=1, max_size=4, unique_by=str),
       convention=st.sampled_from(["recsql", "trec", "ir_measures", "ranx", "msr"]), shared=st.booleans(),
       ties=st.sampled_from([None, "average"]))
def test_each_run_of_one_query_scores_as_if_evaluated_alone(recs_a, recs_b, truth_a, truth_b, asked, convention,
                                                           shared, ties):
    """Runs in one query give each run exactly the values it gets evaluated alone: with truth shared
    by the runs (the lists are judged against it once per user, not once per run) or carrying the
    run key (each run judged by its own), under every convention (ir_measures ranks RR@k and
    Judged@k a second way) and with tie-averaged scores."""
    if ties == "average":
        asked = [m for m in asked if m.spec.supports_ties("average", m.all_options())] or [recsql.Metric("ndcg", 3)]
    truth_b = truth_a if shared else truth_b
    columns = ["user_id", "item_id", "score"]
    recs = pd.concat([frame(recs_a, columns).assign(model="a"), frame(recs_b, columns).assign(model="b")])
    truth_columns = ["user_id", "item_id", "relevance"]
    truth = (frame(truth_a, truth_columns) if shared else
             pd.concat([frame(truth_a, truth_columns).assign(model="a"), frame(truth_b, truth_columns).assign(model="b")]))
    together = recsql.evaluate(recs, truth, asked, run_cols=["model"], convention=convention, ties=ties)
    for model, rows, own in (("a", recs_a, truth_a), ("b", recs_b, truth_b)):
        if not rows:
            continue
        alone = recsql.evaluate(frame(rows, columns), frame(own, truth_columns), asked, convention=convention, ties=ties)
        got, want = _per_run(together, asked, model), _per_run(alone, asked)
        assert got.keys() == want.keys(), (model, [str(m) for m in asked])
        assert all(math.isclose(got[key], want[key], rel_tol=1e-12, abs_tol=1e-15) for key in want), (model, got, want)


@settings(max_examples=20)
@given(recs=recs_rows(), extra=st.lists(st.sampled_from([1, 2, 3, 4, 5, 6]), max_size=6), truth=truth_rows(),
       metric=metrics())
def test_duplicates_best_keeps_the_best_ranked_row(recs, extra, truth, metric):
    if "price" in metric.spec.needs:
        metric = recsql.Metric("ndcg", metric.k or 3)
    dupes = [dict(r, score=r["score"] - 0.05) for r in recs[: len(extra)]]  # worse copies of some rows
    result = recsql.evaluate(frame(recs + dupes, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), [metric], duplicates="best")
    check(result, metric, reference(recs, truth, metric.name, metric.k, python_options(metric)))


@settings(max_examples=30)
@given(recs=recs_rows(), truth=truth_rows(), asked=st.lists(metrics(sorted(BOUNDED - {"money_precision", "money_recall"})),
                                                            min_size=1, max_size=6, unique_by=str))
def test_bounded_metrics_lie_in_unit_interval(recs, truth, asked):
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), asked)
    for metric in asked:
        values = result.per_user[metric.column]
        assert ((values >= 0) & (values <= 1)).all(), str(metric)


@settings(max_examples=30)
@given(truth=truth_rows(), k=st.integers(1, 6), gain=st.sampled_from(["linear", "exponential"]))
def test_the_ideal_list_scores_one(truth, k, gain):
    """Recommending every truth item in relevance order gives nDCG = 1 for every user with gain."""
    recs = [{"user_id": r["user_id"], "item_id": r["item_id"], "score": float(r["relevance"])} for r in truth]
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), [recsql.Metric("ndcg", k, gain=gain)])
    for value in result.per_user[f"ndcg{'(gain=exponential)' if gain == 'exponential' else ''}@{k}"]:
        assert math.isclose(value, 1.0)


@settings(max_examples=30)
@given(recs=recs_rows(), truth=truth_rows(), asked=st.lists(metrics([n for n in ACCURACY if n != "r_precision"]),
                                                            min_size=1, max_size=6, unique_by=str))
def test_rows_below_rank_k_change_nothing(recs, truth, asked):
    """Appending worse-scored items below every list changes no metric at k when lists are k long
    (metrics asked without a cutoff score the whole list, so they are left out)."""
    asked = [m for m in asked if "price" not in m.spec.needs and m.k is not None] or [recsql.Metric("map", 2)]
    users = {r["user_id"] for r in recs}
    lengths = {u: sum(r["user_id"] == u for r in recs) for u in users}
    k_max = max(m.k for m in asked)
    full = [r for r in recs if lengths[r["user_id"]] >= k_max]
    tail = [{"user_id": u, "item_id": 100 + i, "score": -1.0 - i} for u in {r["user_id"] for r in full}
            for i in range(3)]
    before = recsql.evaluate(frame(full, ["user_id", "item_id", "score"]), frame(truth, ["user_id", "item_id", "relevance"]), asked)
    after = recsql.evaluate(frame(full + tail, ["user_id", "item_id", "score"]), frame(truth, ["user_id", "item_id", "relevance"]), asked)
    pd.testing.assert_frame_equal(before.per_user, after.per_user)


@given(metric=metrics(sorted(recsql.registry())))
def test_metric_names_round_trip(metric):
    assert recsql.parse_metric(str(metric)) == metric
    assert str(recsql.parse_metric(str(metric))) == str(metric)
