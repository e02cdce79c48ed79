"""Bad input gets a RecsqlError (a ValueError) naming the input, the column and the fix —
never a raw DuckDB traceback. One row per mistake."""
from __future__ import annotations

import pandas as pd
import pytest

import recsql

RECS = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [1, 2, 1], "score": [0.5, 0.4, 0.3]})
TRUTH = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 3], "relevance": [1, 2]})


def run(recs=RECS, truth=TRUTH, metrics=("ndcg@5",), **kw):
    return recsql.evaluate(recs, truth, metrics, **kw)


CATALOGUE = [
    ("missing user column", dict(recs=RECS.rename(columns={"user_id": "uid"})),
     ["recs", "'user_id'", "user_col="]),
    ("missing score column", dict(recs=RECS.drop(columns="score")), ["recs", "'score'", "score_col="]),
    ("missing rank column", dict(rank_col="pos"), ["recs", "'pos'", "rank_col="]),
    ("missing relevance column named", dict(relevance_col="grade"), ["truth", "'grade'", "relevance_col="]),
    ("text score", dict(recs=RECS.assign(score=["a", "b", "c"])), ["recs", "'score'", "must be a number", "CAST"]),
    ("text relevance", dict(truth=TRUTH.assign(relevance=["hi", "lo"])), ["truth", "'relevance'", "must be a number"]),
    ("id types differ", dict(truth=TRUTH.assign(item_id=["1", "3"])), ["item ids differ", "Cast one side"]),
    ("k is zero", dict(metrics=["ndcg@0"]), ["'ndcg'", "k must be >= 1"]),
    ("k is negative", dict(metrics=["map@-3"]), ["'map'", "k must be >= 1"]),
    ("k is not a number", dict(metrics=["map@ten"]), ["whole number"]),
    ("k missing", dict(metrics=["precision"]), ["needs a cutoff", "precision@10"]),
    ("unknown metric", dict(metrics=["ndgc@10"]), ["unknown metric 'ndgc'", "did you mean 'ndcg'", "valid metrics"]),
    ("unknown option", dict(metrics=["ndcg(gian=exponential)@10"]), ["unknown option 'gian'", "did you mean 'gain'"]),
    ("bad option value", dict(metrics=["map(denominator=R)@10"]), ["denominator='R'", "min, relevant, hits, k"]),
    ("unsafe discount", dict(metrics=["dcg(discount=rank; DROP TABLE truth)@3"]), ["discount"]),
    ("metrics None", dict(metrics=None), ["metrics must be a metric name or a list", "ndcg@10"]),
    ("metrics a number", dict(metrics=10), ["metrics must be a metric name or a list"]),
    ("option given twice", dict(metrics=["ndcg(gain=exponential,gain=linear)@3"]), ["'gain' is given twice"]),
    ("rbp persistence 1", dict(metrics=["rbp(p=1)"]), ["p='1'", "out of range", "(0, 1)"]),
    ("rbp persistence 0", dict(metrics=["rbp(p=0)@5"]), ["p='0'", "out of range", "(0, 1)"]),
    ("pfound p_break 1", dict(metrics=["pfound(p_break=1)@5"]), ["p_break='1'", "[0, 1)"]),
    ("err max_grade negative", dict(metrics=["err(max_grade=-1)@5"]), ["max_grade='-1'", "(0, inf)"]),
    ("set_f beta 0", dict(metrics=["set_f(beta=0)"]), ["beta='0'", "(0, inf)"]),
    ("discount reading another column", dict(metrics=["dcg(discount=1/relevance)@3"]), ["only `rank` is allowed"]),
    ("duplicate recs", dict(recs=pd.concat([RECS, RECS.iloc[:1]])),
     ["recs has 1 duplicated", "user_id=1, item_id=1", "duplicates='best'"]),
    ("duplicate truth", dict(truth=pd.concat([TRUTH, TRUTH])), ["truth has 2 duplicated", "duplicates='max'"]),
    ("money metric without items", dict(metrics=["money_precision@5"]), ["needs item prices", "items="]),
    ("bad population", dict(population="all"), ["population='all'", "relevant, intersection"]),
    ("bad duplicates policy", dict(duplicates="drop"), ["duplicates='drop'", "error, best, max"]),
    ("bad threshold", dict(threshold=float("nan")), ["threshold must be a finite number"]),
    ("missing file", dict(recs="no/such/recs.parquet"), ["recs", "does not exist", "no/such/recs.parquet"]),
    ("missing table", dict(truth="truth_table"), ["truth", "'truth_table'", "does not exist"]),
    ("unknown file type", dict(recs="data/recs.xlsx"), ["cannot tell the file type", ".parquet"]),
    ("unreadable input", dict(recs=42), ["recs", "cannot read a int"]),
    ("empty metric list", dict(metrics=[]), ["no metrics asked"]),
    ("missing database file", dict(con="no/such.duckdb"), ["con", "does not exist"]),
]


@pytest.mark.parametrize("kwargs,words", [c[1:] for c in CATALOGUE], ids=[c[0] for c in CATALOGUE])
def test_bad_input_gets_a_clear_error(kwargs, words):
    with pytest.raises(recsql.RecsqlError) as info:
        run(**kwargs)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert "Traceback" not in message and "Binder Error" not in message


def test_user_data_is_not_changed():
    recs, truth = RECS.copy(), TRUTH.copy()
    run(recs, truth, ["ndcg@5", "map@5"], duplicates="best")
    pd.testing.assert_frame_equal(recs, RECS)
    pd.testing.assert_frame_equal(truth, TRUTH)


def test_to_sql_refuses_dialects_it_cannot_vouch_for():
    with pytest.raises(recsql.RecsqlError, match="dialect 'druid' is not supported: recsql renders for athena, bigquery"):
        recsql.to_sql(["ndcg@10"], dialect="druid")


def test_hostile_table_names_are_quoted_identifiers():
    hostile = 'recs"; DROP TABLE truth; --'
    sql = recsql.to_sql(["ndcg@10"], recs=hostile, truth="truth")
    import sqlglot
    from sqlglot import exp
    statements = sqlglot.parse(sql, read="duckdb")
    assert len(statements) == 1 and isinstance(statements[0], exp.Select)
    assert not list(statements[0].find_all(exp.Drop))
    assert hostile in {t.name for t in statements[0].find_all(exp.Table)}
