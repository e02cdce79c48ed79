"""Tie rules and conventions against the plain-Python reference (tests/support/reference.py), on random
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
from recsql.conventions import CONVENTIONS as DECLARED
from support.reference import ranked_groups, reference
from support.strategies import ACCURACY, TEXT_ORDER_ITEMS, check, frame, metrics, python_options, recs_rows, truth_rows

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

EVERY_ROW_RELEVANT = -1.7976931348623157e308  # RePlay and MSR read no relevance: every truth row is relevant

# convention -> (reference switches, {metric: option defaults}, {metric or metric@k: its own switches});
# written from each tool's source (the README's conventions table cites the files).
TEXT = dict(id_order="text")  # the tool compares ids as text: 10 before 9
# ir_measures serves RR@k from its msmarco provider and Judged from its judged provider: docno ascending,
# negative judgments read as judged (the population stays the convention's)
IR_PYTHON_PROVIDER = dict(ties="item_id", negative_unjudged=False, population_negative_unjudged=True)
CONVENTIONS = {
    "recsql": ({}, {}, {}),
    "trec": (dict(ties="item_id_desc", population="judged", negative_unjudged=True, **TEXT),
             {"map": {"denominator": "relevant"}, "rbp": {"p": 0.9}}, {}),
    "ir_measures": (dict(ties="item_id_desc", population="judged", negative_unjudged=True, **TEXT),
                    {"map": {"denominator": "relevant"}, "judged": {"denominator": "list"}},
                    {"mrr@k": IR_PYTHON_PROVIDER, "judged": IR_PYTHON_PROVIDER}),
    "ranx": (dict(ties="item_id", population="judged", gain_relevant_only=True, **TEXT),
             {"map": {"denominator": "relevant"}}, {}),
    "replay": (dict(ties="item_id_desc", population="relevant", threshold=EVERY_ROW_RELEVANT),
               {"ndcg": {"ideal": "binary"}, "map": {"denominator": "min"}}, {}),
    # MSR's ndcg_at_k averages over every rating_true user, its other measures over users in both inputs
    "msr": (dict(ties="item_id", population="intersection", threshold=EVERY_ROW_RELEVANT),
            {"ndcg": {"ideal": "binary"}, "map": {"denominator": "min"}}, {"ndcg": dict(population="relevant")}),
}


def switches_for(name: str, metric: recsql.Metric) -> dict:
    """The reference switches of convention ``name`` for ``metric``: its own where the tool has them."""
    switches, _, own = CONVENTIONS[name]
    key = f"{metric.name}@k" if metric.k is not None and f"{metric.name}@k" in own else metric.name
    return {**switches, **own.get(key, {})}


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


@pytest.mark.parametrize("name", sorted(CONVENTIONS))
@settings(max_examples=20)
@given(recs=recs_rows(items=TEXT_ORDER_ITEMS), truth=truth_rows(items=TEXT_ORDER_ITEMS), asked=ASKED)
def test_convention_matches_reference(recs, truth, asked, name):
    """Integer ids whose text order is not their order (trec_eval compares docnos as text), and each
    convention's per-measure rules (ir_measures' providers, msr's ndcg population)."""
    _, defaults, _ = CONVENTIONS[name]
    result = recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                             frame(truth, ["user_id", "item_id", "relevance"]), asked, convention=name)
    for metric in asked:
        options = {**defaults.get(metric.name, {}), **python_options(metric)}
        check(result, metric, reference(recs, truth, metric.name, metric.k, options, **switches_for(name, metric)))


def test_conventions_are_restated_here():
    """Every convention, and every per-measure rule of one, has its restatement above."""
    assert set(CONVENTIONS) == set(DECLARED)
    for name, conv in DECLARED.items():
        assert set(conv.measures) == set(CONVENTIONS[name][2]), name
        assert all(rule.why for rule in conv.measures.values()), name


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


def test_text_tie_order_renders_for_every_dialect():
    """Under conventions whose tools compare ids as text, tied ids are cast to a bytewise text type
    (with the dialect's binary collation: PostgreSQL "C", SQL Server BIN2; MySQL BINARY) unless they
    are text ids already; the statement parses back, and rendered for DuckDB, SQLite, PostgreSQL or
    Spark gives the same numbers as DuckDB's own (the executed engines: tests/test_engines.py)."""
    import duckdb
    import sqlglot

    from recsql.dialects import DIALECTS
    asked = ["map", "ndcg@3", "RR", "RR@3", "Judged@2", "bpref"]
    recs = frame([{"user_id": u, "item_id": i, "score": 1.0 if i in (9, 10, 100) else 0.5}
                  for u in (1, 2) for i in (9, 10, 100, 2)], ["user_id", "item_id", "score"])
    truth = frame([{"user_id": 1, "item_id": 9, "relevance": 1.0}, {"user_id": 1, "item_id": 100, "relevance": -1.0},
                   {"user_id": 2, "item_id": 10, "relevance": 2.0}, {"user_id": 2, "item_id": 2, "relevance": 0.0}],
                  ["user_id", "item_id", "relevance"])
    con = duckdb.connect()
    con.register("recs", recs)
    con.register("truth", truth)
    want = recsql.evaluate(recs, truth, asked, convention="ir_measures").summary
    cast = {"postgres": 'AS VARCHAR) COLLATE "C"', "mysql": "AS BINARY)", "tsql": "AS VARCHAR(8000)) COLLATE Latin1_General_BIN2",
            "duckdb": "AS TEXT)", "spark": "AS STRING)", "clickhouse": "AS Nullable(String))", "oracle": "AS VARCHAR2(4000))"}
    for dialect, spec in DIALECTS.items():
        sql = recsql.to_sql(metrics=asked, dialect=dialect, convention="ir_measures")
        assert len(sqlglot.parse(sql, read=spec.sqlglot)) == 1, dialect
        if dialect in cast:
            assert f"CAST(item_id {cast[dialect]}" in sql, dialect
        assert "CAST(item_id" not in recsql.to_sql(metrics=asked, dialect=dialect, convention="ir_measures", text_ids=["item_id"])
        if dialect in ("duckdb", "sqlite", "postgres", "spark"):
            got = con.execute(sqlglot.transpile(sql, read=spec.sqlglot, write="duckdb")[0]).df()
            assert got[list(want.columns)].iloc[0].tolist() == pytest.approx(want.iloc[0].tolist()), dialect
    assert "CAST(item_id" not in recsql.to_sql(metrics=asked, convention="msr")  # Microsoft Recommenders: the ids' own order
