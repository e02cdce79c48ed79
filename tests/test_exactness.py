"""Order keys rank by their exact value and ids compare by value, bytewise, on every executed engine
(docs/guide/safety.md): a score a DOUBLE cannot hold never ties silently, a collation never makes 'A'
match 'a', a category code never orders ids."""
from __future__ import annotations

from contextlib import ExitStack

import re
import sqlite3

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import recsql
from support.capabilities import engines_with
from support.engines import ENGINES, start

BIG = 2**53  # the first integer after it is the first a DOUBLE cannot hold


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    with ExitStack() as stack:
        yield start(request.param, stack)


def test_wide_integer_scores_rank_exactly(engine):
    """2^53 + 1 ranks above 2^53 (as DOUBLEs they are equal, and the tie rule would put item 1 first)."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [BIG, BIG + 1]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [2], "relevance": [1]})
    got = recsql.evaluate(engine.load(recs), engine.load(truth), ["ndcg@1", "mrr"], con=engine.con)
    assert got.summary[["ndcg@1", "mrr"]].iloc[0].tolist() == [1.0, 1.0]


def test_wide_integer_ranks_rank_exactly(engine):
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "pos": [BIG + 1, BIG]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [2], "relevance": [1]})
    got = recsql.evaluate(engine.load(recs), engine.load(truth), ["hit_rate@1"], rank_col="pos", con=engine.con)
    assert got.summary["hit_rate@1"].iloc[0] == 1.0


@pytest.mark.parametrize("kind", ["DECIMAL(20, 4)", "UBIGINT", "HUGEINT"])
def test_wide_decimal_and_unsigned_scores_rank_exactly_on_duckdb(kind):
    con = duckdb.connect()
    high = "1234567890123456.0001" if kind.startswith("DECIMAL") else str(BIG + 1)
    low = "1234567890123456.0000" if kind.startswith("DECIMAL") else str(BIG)
    con.execute(f"CREATE TABLE recs AS SELECT * FROM (VALUES (1, 1, CAST('{low}' AS {kind})), "
                f"(1, 2, CAST('{high}' AS {kind}))) t(user_id, item_id, score)")
    con.execute("CREATE TABLE truth AS SELECT 1 AS user_id, 2 AS item_id, 1 AS relevance")
    got = recsql.evaluate("recs", "truth", ["ndcg@1"], con=con)
    assert got.summary["ndcg@1"].iloc[0] == 1.0


@pytest.mark.parametrize("order_type,literal", [("BIGINT", str(BIG + 1)), ("DECIMAL(38, 4)", "1234567890123456.0001")])
def test_rendered_sql_ranks_exactly_with_order_type(order_type, literal):
    """to_sql has no column types to read: order_type= says how to rank; DOUBLE (the default) ties them."""
    con = duckdb.connect()
    kind = "BIGINT" if order_type == "BIGINT" else "DECIMAL(20, 4)"
    low = str(BIG) if order_type == "BIGINT" else "1234567890123456.0000"
    con.execute(f"CREATE TABLE recs AS SELECT * FROM (VALUES (1, 1, CAST('{low}' AS {kind})), "
                f"(1, 2, CAST('{literal}' AS {kind}))) t(user_id, item_id, score)")
    con.execute("CREATE TABLE truth AS SELECT 1 AS user_id, 2 AS item_id, 1 AS relevance")
    exact = con.execute(recsql.to_sql(metrics=["ndcg@1"], order_type=order_type)).df()
    rounded = con.execute(recsql.to_sql(metrics=["ndcg@1"])).df()
    assert exact["ndcg@1"].iloc[0] == 1.0 and rounded["ndcg@1"].iloc[0] == 0.0


# ---------------------------------------------------------------- ids compare by value, bytewise

RECS = pd.DataFrame({"user_id": [1, 1], "item_id": [2, 1], "score": [1.0, 1.0]})  # a tie: item 1 first
TRUTH = pd.DataFrame({"user_id": [1], "item_id": [1], "relevance": [1]})


def test_float_ids_match_integers_exactly(engine):
    """A DOUBLE id matches the integer it equals (1.0 = 1) and never a different one (2^53 vs 2^53 + 1,
    which a DOUBLE join would merge)."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1.0, float(BIG)], "score": [2.0, 1.0]})
    truth = pd.DataFrame({"user_id": [1, 1], "item_id": [1, BIG + 1], "relevance": [1, 1]})
    got = recsql.evaluate(engine.load(recs), engine.load(truth), ["hit_rate@1", "precision@2"], con=engine.con)
    assert got.summary[["hit_rate@1", "precision@2"]].iloc[0].tolist() == [1.0, 0.5]


def test_float_ids_that_are_not_whole_are_refused(engine):
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1.5, 2.0], "score": [2.0, 1.0]})
    with pytest.raises(recsql.RecsqlError, match=r"recs column 'item_id' holds floating-point ids, 1 of them not a whole"):
        recsql.evaluate(engine.load(recs), engine.load(TRUTH), ["hit_rate@1"], con=engine.con)


def test_a_run_is_a_key_present_in_the_recommendations(engine):
    """Truth rows of a run the recommendations do not hold add no summary row."""
    recs = pd.DataFrame({"model": ["A", "A"], "user_id": [1, 2], "item_id": [1, 1], "score": [1.0, 1.0]})
    truth = pd.DataFrame({"model": ["A", "B", "B"], "user_id": [1, 1, 3], "item_id": [1, 1, 1], "relevance": [1, 1, 1]})
    got = recsql.evaluate(engine.load(recs), engine.load(truth), ["hit_rate@1"], run_cols="model", con=engine.con)
    assert got.summary["model"].tolist() == ["A"]
    assert got.summary[["n_users", "hit_rate@1"]].iloc[0].tolist() == [1, 1.0]


def test_relevance_too_large_for_exponential_gains_is_refused(engine):
    truth = TRUTH.assign(relevance=[2000])
    r, t = engine.load(RECS), engine.load(truth)
    for metric in ("ndcg(gain=exponential)@2", "err@2"):
        with pytest.raises(recsql.RecsqlError, match="above 1000, too large for the exponential gains"):
            recsql.evaluate(r, t, [metric], con=engine.con)
    assert recsql.evaluate(r, t, ["ndcg@2"], con=engine.con).summary["ndcg@2"].iloc[0] == 1.0


def _duckdb_ids(con, kind: str) -> None:
    con.execute(f"CREATE TABLE recs (user_id INTEGER, item_id {kind}, score DOUBLE)")
    con.execute("INSERT INTO recs VALUES (1, 'b', 1.0), (1, 'a', 1.0), (1, 'A', 0.5)")
    con.execute(f"CREATE TABLE truth (user_id INTEGER, item_id {kind}, relevance INTEGER)")
    con.execute("INSERT INTO truth VALUES (1, 'A', 1)")


@pytest.mark.parametrize("kind", ["VARCHAR COLLATE NOCASE", "ENUM('b', 'a', 'A')"])
def test_duckdb_ids_compare_by_value_bytewise(kind):
    """'a' does not match 'A' under a NOCASE column; the tie of 'b' and 'a' is broken by value ('a'
    first), not by an enum's category order."""
    con = duckdb.connect()
    _duckdb_ids(con, kind)
    got = recsql.evaluate("recs", "truth", ["hit_rate@1", "mrr"], con=con).summary
    assert got[["hit_rate@1", "mrr"]].iloc[0].tolist() == [0.0, 1 / 3]


def test_duckdb_default_collation_is_not_applied_to_ids():
    con = duckdb.connect(config={"default_collation": "nocase"})
    _duckdb_ids(con, "VARCHAR")
    assert recsql.evaluate("recs", "truth", ["mrr"], con=con).summary["mrr"].iloc[0] == 1 / 3


def test_categorical_ids_order_by_value():
    """A pandas Categorical (DuckDB reads it as an ENUM) whose categories are not in sorted order."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": pd.Categorical(["b", "a"], categories=["b", "a"]),
                         "score": [1.0, 1.0]})
    truth = pd.DataFrame({"user_id": [1], "item_id": ["a"], "relevance": [1]})
    assert recsql.evaluate(recs, truth, ["hit_rate@1"]).summary["hit_rate@1"].iloc[0] == 1.0


def test_sqlite_nocase_ids_compare_bytewise():
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE recs (user_id INTEGER, item_id TEXT COLLATE NOCASE, score REAL)")
    con.execute("INSERT INTO recs VALUES (1, 'b', 1.0), (1, 'a', 1.0), (1, 'A', 0.5)")
    con.execute("CREATE TABLE truth (user_id INTEGER, item_id TEXT COLLATE NOCASE, relevance INTEGER)")
    con.execute("INSERT INTO truth VALUES (1, 'A', 1)")
    assert recsql.evaluate("recs", "truth", ["mrr"], con=con).summary["mrr"].iloc[0] == 1 / 3


def test_sqlite_columns_are_typed_from_every_row():
    """An untyped column whose first row is a number and a later one text is refused (1 and '1' never
    match); integers and reals together compare by value."""
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE recs (user_id, item_id, score)")
    con.execute("INSERT INTO recs VALUES (1, 1, 2.0), (1, 2, 1)")
    con.execute("CREATE TABLE truth (user_id, item_id, relevance)")
    con.execute("INSERT INTO truth VALUES (1, 1, 1), (1, 'x', 1)")
    with pytest.raises(recsql.RecsqlError, match=r"truth column 'item_id' holds values of several types \(integer, text\)"):
        recsql.evaluate("recs", "truth", ["hit_rate@1"], con=con)
    con.execute("CREATE TABLE scores (user_id, item_id, score)")
    con.execute("INSERT INTO scores VALUES (1, 1, 2.0), (1, 2, 'high')")
    with pytest.raises(recsql.RecsqlError, match=r"recs column 'score' holds values of several types"):
        recsql.evaluate("scores", "truth", ["hit_rate@1"], con=con)
    con.execute("CREATE TABLE mixed_truth (user_id, item_id, relevance)")
    con.execute("INSERT INTO mixed_truth VALUES (1, 1, 1), (1, 2.0, 1)")
    got = recsql.evaluate("recs", "mixed_truth", ["precision@2"], con=con).summary["precision@2"].iloc[0]
    assert got == 1.0


def test_postgres_uuid_date_and_case_insensitive_ids():
    with ExitStack() as stack:
        con = start("postgres", stack).con
        with con.cursor() as cur:
            cur.execute("CREATE TABLE u_recs (user_id uuid, item_id date, score float8)")
            cur.execute("INSERT INTO u_recs VALUES ('00000000-0000-0000-0000-000000000001', '2024-01-02', 1), "
                        "('00000000-0000-0000-0000-000000000001', '2024-01-01', 1)")
            cur.execute("CREATE TABLE u_truth (user_id uuid, item_id date, relevance int)")
            cur.execute("INSERT INTO u_truth VALUES ('00000000-0000-0000-0000-000000000001', '2024-01-01', 1)")
            cur.execute("CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
            cur.execute('CREATE TABLE c_recs (user_id int, item_id text COLLATE ci, score float8)')
            cur.execute("INSERT INTO c_recs VALUES (1, 'b', 1), (1, 'a', 1), (1, 'A', 0.5)")
            cur.execute('CREATE TABLE c_truth (user_id int, item_id text COLLATE ci, relevance int)')
            cur.execute("INSERT INTO c_truth VALUES (1, 'A', 1)")
        con.commit()
        assert recsql.evaluate("u_recs", "u_truth", ["hit_rate@1"], con=con).summary["hit_rate@1"].iloc[0] == 1.0
        assert recsql.evaluate("c_recs", "c_truth", ["mrr"], con=con).summary["mrr"].iloc[0] == 1 / 3


@pytest.mark.parametrize("frame,words", [
    (pd.DataFrame({"user_id": [1], "item_id": [1], "score": [1 + 2j]}), "recs column 'score' holds complex"),
])
def test_unreadable_frame_types_are_refused(frame, words):
    with pytest.raises(recsql.RecsqlError, match=words):
        recsql.evaluate(frame, TRUTH, ["hit_rate@1"])


def test_polars_int128_is_refused():
    import polars as pl
    recs = pl.DataFrame({"user_id": pl.Series([1], dtype=pl.Int128), "item_id": [1], "score": [1.0]})
    for given in (recs, recs.lazy()):
        with pytest.raises(recsql.RecsqlError, match="recs column 'user_id' holds Int128 values"):
            recsql.evaluate(given, TRUTH, ["hit_rate@1"])


# ---------------------------------------------------------------- fuzzing id types

from hypothesis import given, settings, strategies as st  # noqa: E402

_ID_FORMS = {
    # form -> (how the ids are stored, the plain form it must equal)
    "int": (lambda ids: pd.Series(ids, dtype="int64"), "int"),
    "float": (lambda ids: pd.Series(ids, dtype="float64"), "int"),
    "nullable int": (lambda ids: pd.Series(ids, dtype="Int64"), "int"),
    "text": (lambda ids: pd.Series([f"i{i}" for i in ids], dtype="object"), "text"),
    "categorical": (lambda ids: pd.Series(pd.Categorical([f"i{i}" for i in ids],
                                                         categories=sorted({f"i{i}" for i in ids}, reverse=True))),
                    "text"),
    "time": (lambda ids: pd.Series(pd.to_datetime(ids, unit="D")), "time"),  # TIMESTAMP: never equals text or numbers
    "date": (lambda ids: pd.Series([d.date() for d in pd.to_datetime(ids, unit="D")], dtype="object"), "time"),
}


@st.composite
def _lists(draw):
    rows = draw(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 12), st.sampled_from([0.5, 1.0, 2.0])),
                         min_size=1, max_size=14, unique_by=lambda r: r[:2]))
    truth = draw(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 12), st.integers(0, 2)),
                          min_size=1, max_size=10, unique_by=lambda r: r[:2]))
    return rows, truth


@settings(max_examples=40, deadline=None)
@given(_lists(), st.sampled_from(sorted(_ID_FORMS)), st.sampled_from(sorted(_ID_FORMS)))
def test_ids_of_any_type_compare_by_value(data, recs_form, truth_form):
    """Item ids stored as int, float, nullable int, text, a Categorical with reversed category order,
    a timestamp or a date give the numbers of their plain form (ties broken by value), or a clear
    refusal when the two inputs' ids are of different kinds (numbers, text, dates and times)."""
    rows, judged = data
    store_r, plain_r = _ID_FORMS[recs_form]
    store_t, plain_t = _ID_FORMS[truth_form]
    recs = pd.DataFrame({"user_id": [r[0] for r in rows], "item_id": store_r([r[1] for r in rows]),
                         "score": [r[2] for r in rows]})
    truth = pd.DataFrame({"user_id": [t[0] for t in judged], "item_id": store_t([t[1] for t in judged]),
                          "relevance": [t[2] for t in judged]})
    metrics = ["ndcg@3", "map@5", "mrr", "precision@2"]
    if plain_r != plain_t:
        with pytest.raises(recsql.RecsqlError, match="item ids differ in type"):
            recsql.evaluate(recs, truth, metrics)
        return
    plain = _ID_FORMS[plain_r][0]
    want = recsql.evaluate(recs.assign(item_id=plain([r[1] for r in rows])),
                           truth.assign(item_id=plain([t[1] for t in judged])), metrics).per_user
    got = recsql.evaluate(recs, truth, metrics).per_user
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-12)


@pytest.mark.parametrize("column,value,words", [
    ("price", float("nan"), "items column 'price' has 1 invalid value(s): a price must be a finite number >= 0"),
    ("price", float("inf"), "items column 'price' has 1 invalid value(s)"),
    ("price", -2.0, "items column 'price' has 1 invalid value(s)"),
    ("probability", 1.5, "items column 'probability' has 1 invalid value(s): a probability must be in [0, 1]"),
    ("probability", -0.1, "items column 'probability' has 1 invalid value(s)"),
])
def test_item_values_out_of_range_are_refused(column, value, words):
    metric = "money_precision@2" if column == "price" else "novelty(p=items)@2"
    items = pd.DataFrame({"item_id": [1, 2], column: [value, 0.5]})
    arrow = pa.table({"item_id": [1, 2], column: pa.array([value, 0.5], from_pandas=False)})  # a NaN, not a NULL
    with pytest.raises(recsql.RecsqlError) as info:
        recsql.evaluate(RECS, TRUTH, [metric], items=arrow)
    assert words in str(info.value)
    fine = items.assign(**{column: [None, 0.5]}).astype({column: "Float64"})  # NULL: the item adds nothing
    assert recsql.evaluate(RECS, TRUTH, [metric], items=fine).summary[metric].notna().all()



# Decimal scores on the servers whose own DECIMAL is wider than DuckDB's: PostgreSQL's numeric(p, s)
# (up to 1000 digits) and unconstrained numeric (any digits), MySQL/MariaDB's DECIMAL(p, s) (up to 65).
# Each pair differs in its last digit only, which the order key must keep.
DECIMAL_PAIRS = {
    "postgres": [("numeric", "0.1231", "0.1234"), ("numeric", "1234567890123456789.5", "1234567890123456789.6"),
                 ("numeric", "0.12345678901234567890123456789012345678901", "0.12345678901234567890123456789012345678902"),
                 ("numeric(10, 4)", "0.1231", "0.1234"), ("numeric(30, 10)", "12345678901234567890.0000000001",
                                                          "12345678901234567890.0000000002"),
                 ("numeric(60, 0)", "1" + "0" * 58, "1" + "0" * 57 + "1"), ("decimal(50, 45)", "1." + "0" * 44 + "1",
                                                                            "1." + "0" * 44 + "2")],
    "mysql": [("DECIMAL(10, 4)", "0.1231", "0.1234"), ("DECIMAL(30, 10)", "12345678901234567890.0000000001",
                                                      "12345678901234567890.0000000002"),
              ("DECIMAL(65, 0)", "1" + "0" * 63, "1" + "0" * 62 + "1"), ("DECIMAL(65, 30)", "1." + "0" * 29 + "1",
                                                                       "1." + "0" * 29 + "2"),
              ("DECIMAL(20, 2) UNSIGNED", "123456789012345678.01", "123456789012345678.02")],
}


@pytest.mark.parametrize("name", engines_with("wide_decimals"))
def test_server_decimal_scores_rank_exactly(name):
    """hit_rate@1 is 1: the larger of two decimals that differ in their last digit ranks first, with no
    overflow for numbers of any size the column holds (DECIMAL(18, 3) tied 0.1231 and 0.1234 and failed
    on 1e15)."""
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(pd.DataFrame({"user_id": [1], "item_id": [2], "relevance": [1]}), name="truth")
        for i, (kind, low, high) in enumerate(DECIMAL_PAIRS[name]):
            for order in ((low, high), (high, low)):  # the larger first and last in the table
                table = f"dec{i}_{int(order[0] == high)}"
                engine.execute(f"CREATE TABLE {table} (user_id INT, item_id INT, score {kind})")
                items = (1, 2) if order[1] == high else (2, 1)
                engine.execute(f"INSERT INTO {table} VALUES (1, {items[0]}, {order[0]}), (1, {items[1]}, {order[1]})")
                got = recsql.evaluate(table, "truth", ["hit_rate@1"], con=engine.con).summary["hit_rate@1"].iloc[0]
                assert got == 1.0, (kind, order)


def test_the_summary_has_the_same_bits_on_every_call():
    """evaluate finishes its per-user rows into the summary in recsql's own DuckDB with FSUM/FAVG
    (recsql/dialects.py: _duckdb_exact_sums), whose result does not depend on the order in which
    DuckDB's threads add, so the same inputs give the same means to the last bit (and a report the
    same page byte for byte)."""
    from recsql.compose import Plan
    from recsql.metrics import parse_metrics
    from recsql.statements import finalize_sql
    metrics = parse_metrics(["ndcg@10", "recall@20", "coverage@10"])
    for output in ("summary", "per_user"):
        sql = finalize_sql(Plan(recs="r", truth="t"), metrics, output)
        assert not re.search(r"\b(SUM|AVG)\(", sql.upper().replace("FSUM(", "").replace("FAVG(", "")), sql
    assert "FAVG(" in finalize_sql(Plan(recs="r", truth="t"), metrics, "summary")
    rng = np.random.default_rng(5)
    users, items = 60_000, 40
    recs = pd.DataFrame({"user_id": np.repeat(np.arange(users), 10), "item_id": rng.integers(0, items, users * 10),
                         "score": rng.random(users * 10)}).drop_duplicates(["user_id", "item_id"])
    truth = pd.DataFrame({"user_id": np.arange(users), "item_id": rng.integers(0, items, users), "relevance": 1})
    first = recsql.evaluate(recs, truth, ["ndcg@10", "recall@20"]).summary
    for _ in range(4):
        again = recsql.evaluate(recs, truth, ["ndcg@10", "recall@20"]).summary
        assert [float(again[c].iloc[0]).hex() for c in ("ndcg@10", "recall@20")] == \
            [float(first[c].iloc[0]).hex() for c in ("ndcg@10", "recall@20")]
