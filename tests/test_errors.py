"""Bad input gets a RecsqlError (a ValueError) naming the input, the column and the fix —
never a raw DuckDB traceback. One row per mistake."""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
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
    ("text score", dict(recs=RECS.assign(score=["a", "b", "c"])),
     ["recs", "'score'", "(3 of its 3 values are not a number, e.g. 'a')", "must be a number", "replace or drop"]),
    ("score of numbers as text", dict(recs=RECS.assign(score=["0.5", "0.4", "x"])),
     ["(1 of its 3 values is not a number, e.g. 'x')"]),
    ("score of numbers written as text", dict(recs=RECS.assign(score=["0.5", "0.4", "0.3"])),
     ["'score' holds VARCHAR (numbers written as text)", "must be a number", "CAST(score AS DOUBLE)"]),
    ("text score with infinity", dict(recs=RECS.assign(score=["inf", "0.4", "-Infinity"])),
     ["(numbers written as text, 2 of them NaN or infinite, e.g. '-Infinity')", "must be a finite number",
      "replace those values with finite numbers or drop those rows, then cast the column (e.g. CAST(score AS DOUBLE))"]),
    ("text relevance", dict(truth=TRUTH.assign(relevance=["hi", "lo"])),
     ["truth", "'relevance'", "(2 of its 2 values are not a number, e.g. 'hi')", "must be a number"]),
    ("id types differ", dict(truth=TRUTH.assign(item_id=["1", "3"])), ["item ids differ", "Cast one side"]),
    ("k is zero", dict(metrics=["ndcg@0"]), ["'ndcg'", "k must be >= 1"]),
    ("k is negative", dict(metrics=["map@-3"]), ["'map'", "k must be >= 1"]),
    ("k is not a number", dict(metrics=["map@ten"]), ["whole number"]),
    ("two metrics in one string", dict(metrics=["ndcg(gain=exponential)@10,map@5"]),
     ["one whole number", "['ndcg(gain=exponential)@10', 'map@5']", "-m once for each"]),
    ("two cutoffs in one string", dict(metrics=["ndcg@5, 10"]), ["one whole number", "['ndcg@5', 'ndcg@10']"]),
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
    ("user column None", dict(user_col=None), ["user_col must be a column name", "got None", "user_col='user_id'"]),
    ("item column an integer", dict(item_col=2), ["item_col must be a column name", "got 2", "item_col='item_id'"]),
    ("score column an integer", dict(score_col=0), ["score_col must be a column name", "got 0"]),
    ("relevance column an integer", dict(relevance_col=1), ["relevance_col must be a column name", "got 1"]),
    ("price column None", dict(price_col=None), ["price_col must be a column name", "price_col='price'"]),
    ("probability column an integer", dict(probability_col=3), ["probability_col must be a column name"]),
    ("user and item one column", dict(recs=RECS.assign(id=RECS.item_id), truth=TRUTH.assign(id=TRUTH.item_id),
                                      user_col="id", item_col="id"),
     ["user_col and item_col both name the recs column 'id'", "its own column"]),
    ("user and item one column in any case", dict(user_col="ID", item_col="id"), ["user_col and item_col", "'id'"]),
    ("score is the item column", dict(score_col="item_id"), ["item_col and score_col both name", "'item_id'"]),
    ("relevance is the item column", dict(relevance_col="item_id"), ["item_col and relevance_col", "truth column"]),
    ("run column is the user column", dict(recs=RECS, run_cols="user_id"), ["user_col and run_cols", "'user_id'"]),
    ("run column named like a diagnostic", dict(recs=RECS.assign(expected_recs_invalid_rows="a"),
                                                  run_cols="expected_recs_invalid_rows"),
     ["run column 'expected_recs_invalid_rows' is named like a column recsql adds", "rename it"]),
    ("run column named n_users", dict(recs=RECS.assign(n_users="a"), run_cols="n_users"),
     ["run column 'n_users' is named like a column recsql adds", "rename it"]),
    ("run column named like a metric", dict(recs=RECS.assign(**{"ndcg@2": "a"}), run_cols=["ndcg@2"]),
     ["run column 'ndcg@2'", "a metric such as", "rename it"]),
    ("run column named users_without_recs", dict(recs=RECS.assign(users_without_recs="a"),
                                                 run_cols="users_without_recs"), ["'users_without_recs'", "rename it"]),
    ("closed DuckDB connection", dict(con="closed"), ["con", "Connection already closed", "pass an open connection"]),
    ("header-only CSV as recs", dict(recs="header-only.csv"), ["recs", "has no rows", "nothing to evaluate"]),
]


@pytest.mark.parametrize("kwargs,words", [c[1:] for c in CATALOGUE], ids=[c[0] for c in CATALOGUE])
def test_bad_input_gets_a_clear_error(kwargs, words, tmp_path):
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("con"), str) and kwargs["con"] == "closed":
        kwargs["con"] = duckdb.connect()
        kwargs["con"].close()
    if isinstance(kwargs.get("recs"), str) and kwargs["recs"] == "header-only.csv":  # a header and no rows: every column would be text
        kwargs["recs"] = str(tmp_path / "header-only.csv")
        Path(kwargs["recs"]).write_text("user_id,item_id,score\n")
    with pytest.raises(recsql.RecsqlError) as info:
        run(**kwargs)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert "Traceback" not in message and "Binder Error" not in message


def test_a_csv_score_column_with_infinity_names_the_values_and_the_fix(tmp_path):
    """DuckDB's CSV reader takes a column holding 'inf' for text: the error says so at once, and the fix it names
    (the file's values made finite) is the one that works, where casting would only meet the NaN check next."""
    recs = tmp_path / "recs.csv"
    recs.write_text("user_id,item_id,score\n1,1,inf\n1,2,0.5\n2,1,0.3\n")
    with pytest.raises(recsql.RecsqlError) as info:
        run(recs=str(recs))
    message = str(info.value)
    assert ("recs column 'score' holds VARCHAR (numbers written as text, 1 of them NaN or infinite, e.g. 'inf', which a "
            "CSV reader leaves as text), but the score (higher is better) must be a finite number; replace those values "
            "with finite numbers or drop those rows; the file's column is then read as numbers") == message
    recs.write_text("user_id,item_id,score\n1,1,0.9\n1,2,0.5\n2,1,0.3\n")  # the fix named
    assert run(recs=str(recs)).summary["n_users"].iloc[0] == 2


def test_user_data_is_not_changed():
    recs, truth = RECS.copy(), TRUTH.copy()
    run(recs, truth, ["ndcg@5", "map@5"], duplicates="best")
    pd.testing.assert_frame_equal(recs, RECS)
    pd.testing.assert_frame_equal(truth, TRUTH)


def test_to_sql_refuses_dialects_it_cannot_vouch_for():
    with pytest.raises(recsql.RecsqlError, match="dialect 'druid' is not supported: recsql renders for athena, bigquery"):
        recsql.to_sql(metrics=["ndcg@10"], dialect="druid")


def test_hostile_table_names_are_quoted_identifiers():
    hostile = 'recs"; DROP TABLE truth; --'
    sql = recsql.to_sql(hostile, "truth", ["ndcg@10"])
    import sqlglot
    from sqlglot import exp
    statements = sqlglot.parse(sql, read="duckdb")
    assert len(statements) == 1 and isinstance(statements[0], exp.Select)
    assert not list(statements[0].find_all(exp.Drop))
    assert hostile in {t.name for t in statements[0].find_all(exp.Table)}


def test_to_sql_argument_mistakes_are_clear_errors():
    with pytest.raises(recsql.RecsqlError, match="dialect must be a dialect's name .* got None"):
        recsql.to_sql(metrics=["ndcg@10"], dialect=None)
    with pytest.raises(recsql.RecsqlError, match="dialect must be a dialect's name"):
        recsql.to_sql(metrics=["ndcg@10"], dialect=3)
    with pytest.raises(recsql.RecsqlError, match="user_col must be a column name"):
        recsql.to_sql(metrics=["ndcg@10"], user_col=None)
    with pytest.raises(recsql.RecsqlError, match="text_ids: 'score' is not an id column"):
        recsql.to_sql(metrics=["ndcg@10"], text_ids="score")


def test_a_plain_string_text_ids_is_one_column():
    one = recsql.to_sql(metrics=["ndcg@10"], dialect="postgres", text_ids="item_id")
    assert one == recsql.to_sql(metrics=["ndcg@10"], dialect="postgres", text_ids=["item_id"])
    assert one != recsql.to_sql(metrics=["ndcg@10"], dialect="postgres")


@pytest.mark.parametrize("threshold", [np.int64(2), np.int32(2), np.float64(2.0), np.float32(2.0), 2, 2.0])
def test_numpy_numbers_are_numbers(threshold):
    got = run(threshold=threshold)
    assert got.summary["n_users"].tolist() == [1]  # only user 2's relevance 2 is >= 2
    plain = threshold.item() if isinstance(threshold, np.generic) else threshold  # the same Python number
    assert recsql.to_sql(metrics=["ndcg@10"], threshold=threshold) == recsql.to_sql(metrics=["ndcg@10"], threshold=plain)


def test_numpy_bool_is_not_a_threshold():
    with pytest.raises(recsql.RecsqlError, match="threshold must be a finite number"):
        run(threshold=np.bool_(True))


@pytest.mark.parametrize("spelling", ["RELEVANCE", "Relevance"])
def test_relevance_column_resolves_case_insensitively(spelling):
    """A warehouse's upper-cased RELEVANCE column is the relevance column under the default
    option: it is not silently ignored (which would make every truth row relevant)."""
    truth = TRUTH.rename(columns={"relevance": spelling})
    expected = run(threshold=2).summary
    got = run(truth=truth, threshold=2).summary
    assert got["n_users"].tolist() == expected["n_users"].tolist() == [1]
    assert got["ndcg@5"].tolist() == expected["ndcg@5"].tolist()
    assert run(truth=truth, relevance_col="relevance", threshold=2).summary["n_users"].tolist() == [1]
    assert run(truth=TRUTH, relevance_col=spelling, threshold=2).summary["n_users"].tolist() == [1]


def _inputs():
    import polars as pl
    import pyarrow as pa
    import pyarrow.dataset as ds
    table = pa.Table.from_pandas(RECS, preserve_index=False)
    return {"polars LazyFrame": lambda: pl.from_pandas(RECS).lazy(),
            "pyarrow RecordBatchReader": lambda: table.to_reader(max_chunksize=1),
            "pyarrow dataset": lambda: ds.dataset(table)}


@pytest.mark.parametrize("kind", list(_inputs()))
def test_lazy_and_streaming_arrow_inputs_are_read_on_duckdb(kind):
    import polars as pl
    import pyarrow as pa
    import pyarrow.dataset as ds
    make = _inputs()[kind]
    expected = run(metrics=["ndcg@5", "map@5"]).summary
    got = run(recs=make(), truth=TRUTH, metrics=["ndcg@5", "map@5"]).summary
    pd.testing.assert_frame_equal(got, expected)
    truth = {"polars LazyFrame": lambda: pl.from_pandas(TRUTH).lazy(),
             "pyarrow RecordBatchReader": lambda: pa.Table.from_pandas(TRUTH, preserve_index=False).to_reader(),
             "pyarrow dataset": lambda: ds.dataset(pa.Table.from_pandas(TRUTH, preserve_index=False))}[kind]
    both = run(recs=make(), truth=truth(), metrics=["ndcg@5", "map@5"]).summary  # the truth too, read twice
    pd.testing.assert_frame_equal(both, expected)
