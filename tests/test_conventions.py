"""Tie rules and conventions against the plain-Python reference (tests/reference.py), on random
inputs with tied scores, graded and negative relevance and users missing from either input.

Each convention is restated here, independently of recsql/conventions.py, as the reference's
switches plus the metric options it implies; recsql with ``convention=<name>`` must equal the
reference run with those switches. The real tools are compared in tests/test_differential.py.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import recsql
from reference import ranked_groups, reference
from strategies import ACCURACY, check, frame, metrics, python_options, recs_rows, truth_rows

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

EVERY_ROW_RELEVANT = -1.7976931348623157e308  # RePlay and MSR read no relevance: every truth row is relevant

# convention -> (reference switches, {metric: option defaults}); written from each tool's source
# (the README's conventions table cites the files).
CONVENTIONS = {
    "recsql": ({}, {}),
    "trec": (dict(ties="item_id_desc", population="judged", negative_unjudged=True),
             {"map": {"denominator": "relevant"}, "rbp": {"p": 0.9}}),
    "ir_measures": (dict(ties="item_id_desc", population="judged", negative_unjudged=True),
                    {"map": {"denominator": "relevant"}, "judged": {"denominator": "list"}}),
    "ranx": (dict(ties="item_id", population="judged", gain_relevant_only=True),
             {"map": {"denominator": "relevant"}}),
    "replay": (dict(ties="item_id_desc", population="relevant", threshold=EVERY_ROW_RELEVANT),
               {"ndcg": {"ideal": "binary"}, "map": {"denominator": "min"}}),
    "msr": (dict(ties="item_id", population="intersection", threshold=EVERY_ROW_RELEVANT),
            {"ndcg": {"ideal": "binary"}, "map": {"denominator": "min"}}),
}


def orderings_count(recs: list[dict]) -> int:
    """How many orders ties="average" enumerates in the reference (the product of the tie groups' m!)."""
    return math.prod(math.factorial(len(g)) for groups in ranked_groups(recs).values() for g in groups)


ASKED = st.lists(metrics([n for n in ACCURACY if "price" not in recsql.registry()[n].needs]),
                 min_size=1, max_size=6, unique_by=str)


@settings(max_examples=40)
@given(recs=recs_rows(), truth=truth_rows(), asked=ASKED, threshold=st.sampled_from([1, 2]))
def test_ties_item_id_desc_matches_reference(recs, truth, asked, threshold):
    check_against_reference(recs, truth, asked, threshold=threshold, ties="item_id_desc")


def check_against_reference(recs: list[dict], truth: list[dict], asked: list, **switches) -> None:
    """recsql with these switches equals the reference run with the same switches, metric by metric."""
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), asked, **switches)
    for metric in asked:
        check(result, metric, reference(recs, truth, metric.name, metric.k, python_options(metric), **switches))


AVERAGED = sorted(n for n, spec in recsql.registry().items() if spec.ties)


@settings(max_examples=40)
@given(recs=recs_rows(), truth=truth_rows(), asked=st.lists(metrics(AVERAGED), min_size=1, max_size=6, unique_by=str),
       threshold=st.sampled_from([1, 2]))
def test_ties_average_is_the_mean_over_every_order(recs, truth, asked, threshold):
    """ties="average" equals the metric averaged over every permutation of every tie group."""
    assume(orderings_count(recs) <= 2000)
    asked = [m for m in asked if m.spec.supports_ties("average", m.all_options())] or [recsql.Metric("ndcg", 3)]
    check_against_reference(recs, truth, asked, threshold=threshold, ties="average")


def test_ties_average_by_hand():
    """Two tied items, one relevant: P@1 = 1/2, hit_rate@1 = 1/2, DCG@2 = (1 + 1/log2 3) / 2."""
    recs = frame([{"user_id": 1, "item_id": 1, "score": 0.5}, {"user_id": 1, "item_id": 2, "score": 0.5}],
                 ["user_id", "item_id", "score"])
    truth = frame([{"user_id": 1, "item_id": 2, "relevance": 1.0}], ["user_id", "item_id", "relevance"])
    got = recsql.evaluate(recs, truth, ["precision@1", "hit_rate@1", "dcg@2", "recall@1"], ties="average").summary
    assert got[["precision@1", "hit_rate@1", "recall@1"]].iloc[0].tolist() == [0.5, 0.5, 0.5]
    assert math.isclose(got["dcg@2"].iloc[0], (1 + 1 / math.log2(3)) / 2)


@pytest.mark.parametrize("name", ["map@3", "mrr@3", "bpref", "ndcg(ideal=list)@3", "r_precision", "judged@3"])
def test_ties_average_refuses_metrics_without_an_exact_expectation(name):
    recs = frame([{"user_id": 1, "item_id": 1, "score": 0.5}], ["user_id", "item_id", "score"])
    truth = frame([{"user_id": 1, "item_id": 1, "relevance": 1.0}], ["user_id", "item_id", "relevance"])
    if recsql.parse_metric(name).spec.supports_ties("average", recsql.parse_metric(name).all_options()):
        pytest.fail(f"{name} claims ties='average'; move it to the property test")
    with pytest.raises(recsql.RecsqlError, match="ties='average'"):
        recsql.evaluate(recs, truth, [name], ties="average")


@settings(max_examples=30)
@given(recs=recs_rows(), truth=truth_rows(), asked=ASKED, name=st.sampled_from(sorted(CONVENTIONS)))
def test_convention_matches_reference(recs, truth, asked, name):
    switches, defaults = CONVENTIONS[name]
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), asked, convention=name)
    for metric in asked:
        options = {**defaults.get(metric.name, {}), **python_options(metric)}
        check(result, metric, reference(recs, truth, metric.name, metric.k, options, **switches))


def test_explicit_option_and_tie_rule_win_over_the_convention():
    recs = frame([{"user_id": 1, "item_id": i, "score": s} for i, s in [(1, 0.5), (2, 0.5), (3, 0.1)]],
                 ["user_id", "item_id", "score"])
    truth = frame([{"user_id": 1, "item_id": 1, "relevance": 1.0}, {"user_id": 1, "item_id": 9, "relevance": 1.0}],
                  ["user_id", "item_id", "relevance"])
    # trec: docno descending puts item 2 first; AP ÷ R = (1/2) / 2
    trec = recsql.evaluate(recs, truth, ["map@2", "map(denominator=hits)@2"], convention="trec").summary
    assert trec[["map@2", "map(denominator=hits)@2"]].iloc[0].tolist() == [0.25, 0.5]
    asc = recsql.evaluate(recs, truth, ["map@2"], convention="trec", ties="item_id").summary
    assert asc["map@2"].iloc[0] == 0.5  # item 1 first: (1/1) / R


def test_unknown_convention_is_a_clear_error():
    with pytest.raises(recsql.RecsqlError, match="convention='trec_eval' is not valid; choose one of recsql, trec"):
        recsql.evaluate("recs.parquet", "truth.parquet", ["map@10"], convention="trec_eval")
