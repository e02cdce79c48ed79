"""The input checks travel inside the one query: the summary's diagnostic columns.

The SQL that ``to_sql`` renders counts, in the same statement as the metrics, the rows with a NULL
key, order or relevance or a non-finite number (``*_invalid_rows``) and the extra copies of a key
(``*_duplicate_rows``); ``evaluate`` raises from those counts. Checks and metrics read one
snapshot, so a writer changing the tables while evaluations run never yields a number computed
from rows the checks did not see."""
from __future__ import annotations

import threading
from contextlib import ExitStack

import duckdb
import pandas as pd
import pytest

import recsql
from support.engines import ENGINES, start
from recsql.compose import DIAGNOSTICS
from recsql.engines import runner_for

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

RECS = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [1, 2, 1, 2], "score": [0.5, 0.4, 0.3, 0.2]})
TRUTH = pd.DataFrame({"user_id": [1, 2, 2], "item_id": [1, 2, 3], "relevance": [1.0, 1.0, 2.0]})
ASKED = ["ndcg@3", "precision@3"]


def dirty_recs() -> pd.DataFrame:
    """User 2's item 1 twice (a duplicate within the top 3) and one NULL score."""
    out = pd.concat([RECS, RECS.iloc[[2]]], ignore_index=True).astype({"score": "Float64"})
    out.loc[3, "score"] = pd.NA
    return out


def dirty_truth() -> pd.DataFrame:
    """User 2's item 3 twice and one NULL relevance."""
    out = pd.concat([TRUTH, TRUTH.iloc[[2]]], ignore_index=True).astype({"relevance": "Float64"})
    out.loc[1, "relevance"] = pd.NA
    return out


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    with ExitStack() as stack:
        yield start(request.param, stack)


def summary_in_engine(engine, recs: pd.DataFrame, truth: pd.DataFrame, **kw) -> dict:
    r, t = engine.load(recs), engine.load(truth)
    with runner_for(engine.con) as runner:
        fetched = runner.fetch(recsql.to_sql(r, t, ASKED, dialect=runner.dialect, **kw))
    frame = fetched.to_pandas() if hasattr(fetched, "to_pandas") else fetched
    assert len(frame) == 1
    return frame.iloc[0].to_dict()


def test_rendered_summary_counts_dirty_input_in_every_engine(engine):
    row = summary_in_engine(engine, dirty_recs(), dirty_truth())
    got = {name: int(row[name]) for name in DIAGNOSTICS if name in row}
    assert got == {"recs_invalid_rows": 1, "recs_duplicate_rows": 1, "truth_invalid_rows": 1,
                   "truth_duplicate_rows": 1}, row


def test_rendered_summary_counts_zero_for_clean_input_in_every_engine(engine):
    row = summary_in_engine(engine, RECS, TRUTH)
    assert {name: int(row[name]) for name in DIAGNOSTICS if name in row} == {
        "recs_invalid_rows": 0, "recs_duplicate_rows": 0, "truth_invalid_rows": 0, "truth_duplicate_rows": 0}
    assert float(row["precision@3"]) == pytest.approx(1 / 3)


def test_a_de_duplicating_policy_counts_no_duplicates(engine):
    row = summary_in_engine(engine, pd.concat([RECS, RECS.iloc[[2]]], ignore_index=True),
                            pd.concat([TRUTH, TRUTH.iloc[[2]]], ignore_index=True), duplicates="best")
    assert int(row["recs_duplicate_rows"]) == 0 and int(row["truth_duplicate_rows"]) == 0
    assert float(row["precision@3"]) == pytest.approx(1 / 3)


def test_recs_duplicates_are_counted_where_a_metric_reads_them():
    """A copy beyond the largest k changes no @k metric and is not counted; a metric reading the
    whole list counts it. A duplicated truth row is truth's, not a recs duplicate."""
    recs = pd.concat([RECS, pd.DataFrame({"user_id": [1], "item_id": [1], "score": [0.1]})], ignore_index=True)
    con = duckdb.connect()
    con.register("r", recs)
    con.register("t", pd.concat([TRUTH, TRUTH.iloc[[0]]], ignore_index=True))
    at_1 = con.execute(recsql.to_sql("r", "t", ["precision@1"])).df()
    assert at_1[["recs_duplicate_rows", "truth_duplicate_rows"]].iloc[0].tolist() == [0, 1]
    whole = con.execute(recsql.to_sql("r", "t", ["auc"])).df()
    assert whole["recs_duplicate_rows"].iloc[0] == 1


def test_per_user_sql_has_no_diagnostics():
    sql = recsql.to_sql(metrics=ASKED, output="per_user")
    assert not any(name in sql for name in DIAGNOSTICS)


def test_evaluate_raises_from_the_diagnostics():
    """evaluate's summary leaves the checks out: they are all 0 whenever it returns."""
    summary = recsql.evaluate(RECS, TRUTH, ASKED).summary
    assert not set(DIAGNOSTICS) & set(summary.columns)
    with pytest.raises(recsql.RecsqlError, match=r"recs column 'score' has 1 NULL"):
        recsql.evaluate(dirty_recs(), TRUTH, ASKED)
    with pytest.raises(recsql.RecsqlError, match=r"truth has 1 duplicated \(user_id, item_id\) row\(s\).*"
                                                 r"user_id=2, item_id=3.*duplicates='max'"):
        recsql.evaluate(RECS, pd.concat([TRUTH, TRUTH.iloc[[2]]]), ASKED)


def test_global_only_and_empty_inputs_still_work():
    result = recsql.evaluate(RECS, TRUTH, ["coverage@2"])
    assert result.rows_in == 4
    empty = recsql.evaluate(RECS.iloc[:0], TRUTH.iloc[:0], ["ndcg@3", "coverage@2"])
    assert empty.rows_in == 0


def test_items_duplicates_are_refused_or_de_duplicated():
    """A repeated item in items used to duplicate list rows and double precision."""
    items = pd.DataFrame({"item_id": [1, 2, 3], "price": [1.0, 2.0, 3.0]})
    repeated = pd.concat([items, items.iloc[[0]]], ignore_index=True)
    asked = ["precision@2", "money_precision@2"]
    with pytest.raises(recsql.RecsqlError, match=r"items has 1 duplicated \(item_id\) row\(s\).*item_id=1"):
        recsql.evaluate(RECS, TRUTH, asked, items=repeated)
    clean = recsql.evaluate(RECS, TRUTH, asked, items=items).summary
    best = recsql.evaluate(RECS, TRUTH, asked, items=repeated, duplicates="best").summary
    pd.testing.assert_frame_equal(best, clean)


def test_item_features_duplicates_are_refused_or_de_duplicated():
    features = pd.DataFrame({"item_id": [1, 1, 2, 2], "feature": ["a", "b", "a", "b"], "value": [1.0, 0.0, 0.0, 1.0]})
    repeated = pd.concat([features, features.iloc[[0]]], ignore_index=True)
    asked = ["diversity(by=features)@2"]
    with pytest.raises(recsql.RecsqlError, match=r"item_features has 1 duplicated \(item_id, feature\)"):
        recsql.evaluate(RECS, None, asked, item_features=repeated)
    clean = recsql.evaluate(RECS, None, asked, item_features=features).summary
    best = recsql.evaluate(RECS, None, asked, item_features=repeated, duplicates="best").summary
    pd.testing.assert_frame_equal(best, clean)


def test_a_concurrent_writer_never_slips_rows_past_the_checks(tmp_path):
    """A writer keeps adding and removing duplicates that would inflate precision; every evaluation
    either refuses them or gives the clean numbers (checks and metrics read one snapshot)."""
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE recs AS SELECT * FROM RECS")
    con.execute("CREATE TABLE truth AS SELECT * FROM TRUTH")
    clean = recsql.evaluate("recs", "truth", ASKED, con=con).summary
    stop = threading.Event()

    def writer():
        cur = con.cursor()
        while not stop.is_set():
            cur.execute("BEGIN")
            cur.execute("INSERT INTO recs VALUES (1, 1, 0.9)")  # a relevant item again, at the top
            cur.execute("INSERT INTO truth VALUES (2, 2, 1.0)")  # a relevant judgment again
            cur.execute("COMMIT")
            cur.execute("BEGIN")
            cur.execute("DELETE FROM recs WHERE score = 0.9")
            cur.execute("DELETE FROM truth WHERE rowid = (SELECT MAX(rowid) FROM truth) AND user_id = 2 AND item_id = 2")
            cur.execute("COMMIT")
        cur.close()

    thread = threading.Thread(target=writer)
    thread.start()
    refused = agreed = 0
    try:
        for _ in range(40):
            try:
                result = recsql.evaluate("recs", "truth", ASKED, con=con)
            except recsql.RecsqlError as err:
                assert "duplicated" in str(err), err
                refused += 1
            else:
                pd.testing.assert_frame_equal(result.summary, clean)
                agreed += 1
    finally:
        stop.set()
        thread.join()
        con.close()
    assert refused + agreed == 40, (refused, agreed)
    print("concurrency:", refused, "refused,", agreed, "clean")


def test_rendered_summary_counts_invalid_item_values_in_every_engine(engine):
    """Items whose price a metric reads: two negative prices are invalid rows (a NULL price is no
    price), a duplicated item a duplicate row; without a metric reading prices, prices are not
    checked. (NaN and infinite prices: tests/test_exactness.py, on the engines that store them.)"""
    items = pd.DataFrame({"item_id": [1, 2, 3, 3, 4], "price": [-1.0, 2.0, None, 4.0, -0.5]}
                         ).astype({"price": "Float64"})
    r, t, i = engine.load(RECS), engine.load(TRUTH), engine.load(items)
    with runner_for(engine.con) as runner:
        def run(metrics: list[str]) -> dict:
            fetched = runner.fetch(recsql.to_sql(r, t, metrics, items=i, dialect=runner.dialect))
            frame = fetched.to_pandas() if hasattr(fetched, "to_pandas") else fetched
            return {name: int(v) for name, v in frame.iloc[0].items() if name.startswith("items_")}
        assert run(["money_precision@3"]) == {"items_invalid_rows": 2, "items_duplicate_rows": 1}
        assert run(["coverage@3"]) == {"items_invalid_rows": 0, "items_duplicate_rows": 1}
    with pytest.raises(recsql.RecsqlError, match=r"items column 'price' has 2 invalid value\(s\): a price must be"):
        recsql.evaluate(r, t, ["money_precision@3"], items=i, con=engine.con)


def test_rendered_summary_counts_invalid_history_weights_in_every_engine(engine):
    """interaction_weight_col (miscalibration's history weights): a negative or NULL weight is an invalid
    interactions row (0 is a weight: the interaction adds nothing); without the option no weight is
    read, so none is checked; evaluate refuses naming the column."""
    items = pd.DataFrame({"item_id": [1, 2, 3], "category": ["a", "b", "a"]})
    seen = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [1, 2, 3, 1], "weight": [-1.0, None, 2.0, 0.0]}
                        ).astype({"weight": "Float64"})
    r, i, s = engine.load(RECS), engine.load(items), engine.load(seen)
    with runner_for(engine.con) as runner:
        def run(**kw) -> dict:
            fetched = runner.fetch(recsql.to_sql(r, None, ["miscalibration@2"], items=i, interactions=s,
                                                 dialect=runner.dialect, **kw))
            frame = fetched.to_pandas() if hasattr(fetched, "to_pandas") else fetched
            return {name: int(v) for name, v in frame.iloc[0].items() if name.startswith("interactions_")}
        assert run(interaction_weight_col="weight") == {"interactions_invalid_rows": 2}
        assert run() == {}
    with pytest.raises(recsql.RecsqlError, match=r"interactions column 'weight' \(interaction_weight_col\) has 2 "
                                                 r"invalid weight\(s\)"):
        recsql.evaluate(r, None, ["miscalibration@2"], items=i, interactions=s, interaction_weight_col="weight",
                        con=engine.con)
