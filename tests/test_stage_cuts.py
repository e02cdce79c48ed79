"""The ranked-rows stage computes only what the asked metrics read (sql/_ranked.sql): MAP's running
count of hits only when map is asked, bpref's running count of judged non-relevant items only when
bpref is, the list cut at the largest cutoff of the metrics on it. These tests put metrics that read
different parts in ONE query, under each tie rule, with negative judgments unjudged or not, and
compare every user's value with the plain-Python reference (tests/support/reference.py), which ranks whole
lists and never cuts; and they check in the SQL that a running count nobody reads is not there."""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import sqlglot
from sqlglot import exp

import recsql
from support.reference import reference
from support.strategies import check, frame, metrics, python_options, recs_rows, truth_rows

# the metrics that read the stage's cut parts, and neighbours that read none of them
READERS = ["map", "bpref", "ndcg", "idcg", "money_recall", "mrr", "dcg", "recall"]
PRICES = {item: float(item * 7 % 11) for item in range(1, 9)}


def _evaluate(recs, truth, asked, **options):
    items = pd.DataFrame({"item_id": list(PRICES), "price": list(PRICES.values())})
    return recsql.evaluate(frame(recs, ["user_id", "item_id", "score"]),
                           frame(truth, ["user_id", "item_id", "relevance"]), asked, items=items, **options)


@st.composite
def deep_metrics(draw) -> recsql.Metric:
    """A reader metric with random options, its cutoff 1..12 (lists hold up to 8 items) or none."""
    metric = draw(metrics(READERS))
    if metric.k is not None and draw(st.booleans()):
        metric = recsql.Metric(metric.name, draw(st.integers(8, 12)), **dict(metric.options))
    return metric


@settings(max_examples=60, deadline=None)
@given(recs=recs_rows(), truth=truth_rows(), asked=st.lists(deep_metrics(), min_size=1, max_size=5, unique_by=str),
       ties=st.sampled_from(["item_id", "item_id_desc", "average"]), threshold=st.sampled_from([1, 2]))
def test_metrics_reading_the_cut_stage_match_reference(recs, truth, asked, ties, threshold):
    if ties == "average":  # only the metrics with an exact expected value (map, mrr and ideal=list have none)
        asked = [m for m in asked if m.spec.supports_ties("average", m.all_options())] or [recsql.Metric("ndcg", 3)]
    result = _evaluate(recs, truth, asked, ties=ties, threshold=threshold)
    for metric in asked:
        check(result, metric, reference(recs, truth, metric.name, metric.k, python_options(metric), items=PRICES,
                                        ties=ties, threshold=threshold))


@settings(max_examples=30, deadline=None)
@given(recs=recs_rows(), truth=truth_rows(), k=st.integers(1, 10),
       other=st.sampled_from(["mrr@1", "recall@2", "money_recall@1", "ndcg@1", "idcg(ideal=binary)@2", "map@1"]))
def test_ideal_dcg_is_cut_at_its_own_k_beside_shallower_metrics(recs, truth, k, other):
    """ndcg@k beside a metric that reads less (or all) of the truth: each keeps its own value."""
    asked = [recsql.Metric("ndcg", k), recsql.Metric("ndcg", None, gain="exponential"), recsql.parse_metric(other)]
    result = _evaluate(recs, truth, asked)
    for metric in asked:
        check(result, metric, reference(recs, truth, metric.name, metric.k, python_options(metric), items=PRICES))


@settings(max_examples=30, deadline=None)
@given(recs=recs_rows(), truth=truth_rows(), k=st.integers(1, 10),
       denominator=st.sampled_from(["min", "relevant", "hits", "k"]))
def test_map_under_trec_reads_negative_judgments_as_unjudged(recs, truth, k, denominator):
    """trec's convention: ties by item id descending, negative relevance unjudged, ideal from truth."""
    asked = [recsql.Metric("map", k, denominator=denominator), recsql.Metric("ndcg", k)]
    result = _evaluate(recs, truth, asked, convention="trec", population="relevant")
    for metric in asked:
        check(result, metric, reference(recs, truth, metric.name, metric.k, python_options(metric), items=PRICES,
                                        ties="item_id_desc", negative_unjudged=True, id_order="text"))


def test_users_without_recommendations_stay_when_no_metric_reads_truth_rows():
    """mrr alone keeps one truth row per user (the ideal order is read by nobody): a truth user
    without recommendations is still counted, with 0, as the reference says."""
    recs = [{"user_id": 1, "item_id": 1, "score": 0.5}]
    truth = [{"user_id": 1, "item_id": 1, "relevance": 1.0}, {"user_id": 2, "item_id": 3, "relevance": 2.0},
             {"user_id": 2, "item_id": 4, "relevance": 1.0}]
    result = _evaluate(recs, truth, [recsql.Metric("mrr", 5)])
    assert dict(zip(result.per_user["user_id"], result.per_user["mrr@5"])) == {1: 1.0, 2: 0.0}
    assert result.summary["users_without_recs"].iloc[0] == 1


@pytest.mark.parametrize("dialect", ["duckdb", "spark"])
@pytest.mark.parametrize("asked, windows", [
    (["ndcg@10", "mrr@10", "recall@10"], 0),
    (["map@10", "ndcg@10"], 1),
    (["bpref@10"], 1),
    (["map@10", "bpref"], 2),
])
def test_a_running_count_nobody_reads_is_not_computed(asked, windows, dialect):
    """MAP's running count of hits only for map, bpref's running count of judged non-relevant items
    only for bpref: each is a window over the whole list."""
    sql = recsql.to_sql("recs", "truth", asked, dialect=dialect)
    assert sql.count("ROWS BETWEEN UNBOUNDED PRECEDING") == windows, sql


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark"])
@pytest.mark.parametrize("truth_has_run_cols", [False, True])
def test_lists_are_judged_against_truth_as_it_is(dialect, truth_has_run_cols):
    """With run keys, truth shared by the runs judges the lists once per user: list_judged joins
    truth as it is (truth_in, for truth_judged passes it on unchanged: no copy per run) on user and
    item only; truth carrying the run keys joins on them too. The counts per run (truth_users) still
    read shared truth copied to every run."""
    sql = recsql.to_sql(metrics=["map@10", "ndcg@10"], run_cols=["model"], dialect=dialect,
                        truth_has_run_cols=truth_has_run_cols)
    ctes = {c.alias: c.this for c in sqlglot.parse_one(sql, read=dialect).find_all(exp.CTE)}
    (join,) = ctes["list_judged"].args["joins"]
    assert join.this.name == "truth_in"
    keys = {c.name for c in join.args["on"].find_all(exp.Column)}
    assert keys == ({"_run0", "user_id", "item_id"} if truth_has_run_cols else {"user_id", "item_id"})
    assert "truth_judged" not in ctes and not ctes["truth_in"].args.get("joins")
    assert [j.this.name for j in ctes["truth_runs"].args["joins"]] == ["runs"]


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark"])
@pytest.mark.parametrize("asked, cut", [
    (["ndcg@5", "map@10", "idcg(ideal=binary)@3"], 10),
    (["ndcg@5", "ndcg"], None),  # ndcg over the whole truth order
    (["ndcg@5", "money_recall@5"], None),  # money_recall reads every truth row's item (stage feature truth_rows)
])
def test_the_truth_order_is_cut_where_no_metric_reads_further(asked, cut, dialect):
    """The ideal order keeps the first k positions of each user's truth (k: the largest cutoff) when
    every metric has a cutoff and none reads every truth row; on DuckDB those come from a per-user
    heap of the largest relevances (MAX(relevance, k)) instead of ROW_NUMBER over all of truth. The
    numbers are those of the uncut order: tests above against the reference, and tests/test_engines.py
    across engines that run the portable SQL."""
    items = "items" if any(m.startswith("money") for m in asked) else None
    sql = recsql.to_sql(metrics=asked, dialect=dialect, items=items)
    ctes = {c.alias: c.this for c in sqlglot.parse_one(sql, read=dialect).find_all(exp.CTE)}
    # uncut, truth_rows passes truth_ordered on unchanged, and the stage reads truth_ordered itself
    where = ctes["truth_rows"].args.get("where") if "truth_rows" in ctes else None
    heap = [f.args["count"].sql() for f in ctes["truth_ordered"].find_all(exp.Max) if f.args.get("count")]
    windows = list(ctes["truth_ordered"].find_all(exp.Window))
    if cut is None:
        assert where is None and not heap and len(windows) == 1
        return
    assert where is not None and where.this.sql(dialect) == f"t.ideal_rank <= {cut}"
    if dialect == "duckdb":
        assert not windows and heap == [str(cut)]
    else:
        assert len(windows) == 1 and not heap


def test_the_truth_heap_gives_the_sorted_orders_gains_with_ties_and_runs():
    """Many equal relevances, truth per run, shared truth: DuckDB's heap (no item ids on the ideal
    rows) and SQLite's ROW_NUMBER over all of truth give every user the same ndcg and idcg."""
    truth = pd.DataFrame({"model": ["a"] * 12 + ["b"] * 12, "user_id": [1] * 6 + [2] * 6 + [1] * 6 + [2] * 6,
                          "item_id": list(range(6)) * 4,
                          "relevance": [2, 1, 2, 0, 1, 2, 1, 1, 1, 1, 3, 0, 0, 2, 2, 1, 1, 3, 2, 2, 2, 2, 2, 2]})
    recs = pd.DataFrame({"model": ["a"] * 8 + ["b"] * 8, "user_id": [1, 1, 1, 1, 2, 2, 2, 2] * 2,
                         "item_id": [5, 3, 1, 0, 4, 0, 2, 1] * 2, "score": [0.9, 0.8, 0.8, 0.1] * 4})
    asked = ["ndcg@3", "idcg@2", "ndcg(gain=exponential)@4", "idcg(ideal=binary)@4"]
    import sqlite3
    for shared in (False, True):
        t = truth[truth["model"] == "a"].drop(columns="model") if shared else truth
        heap = recsql.evaluate(recs, t, asked, run_cols="model").per_user
        con = sqlite3.connect(":memory:")
        recs.to_sql("recs", con, index=False)
        t.to_sql("truth", con, index=False)
        portable = recsql.evaluate("recs", "truth", asked, run_cols="model", con=con).per_user
        assert "ROW_NUMBER" in _cte_sql(recsql.to_sql(metrics=asked, dialect="sqlite", run_cols="model",
                                                      truth_has_run_cols=not shared), "truth_ordered", "sqlite")
        pd.testing.assert_frame_equal(heap.sort_values(["model", "user_id"]).reset_index(drop=True),
                                      portable.sort_values(["model", "user_id"]).reset_index(drop=True),
                                      check_dtype=False, rtol=1e-12)


def _cte_sql(sql: str, name: str, dialect: str) -> str:
    return next(c.this.sql(dialect) for c in sqlglot.parse_one(sql, read=dialect).find_all(exp.CTE) if c.alias == name)


# recs rows (run, user, item, score) for the heap's checks; None is SQL NULL
_KEY = st.one_of(st.none(), st.integers(1, 3))
_SCORE = st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.3, float("nan"), float("inf"), float("-inf")]))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b", None]), _KEY, st.one_of(st.none(), st.integers(1, 4)),
                               _SCORE), min_size=1, max_size=30),
       k=st.integers(1, 4), clean=st.booleans(), ranked=st.booleans())
def test_the_heaps_count_recs_invalid_rows_and_duplicates_as_the_rows_do(rows, k, clean, ranked):
    """DuckDB ranks each list by a per-user heap (stage CTE list_heads) and counts recs' invalid rows,
    rows and duplicate keys from the heaps, in the one scan of recs; plain Python counts them from the
    rows: invalid = a NULL run, user, item or score, or a score NaN or ±inf; duplicates = Σ (n - 1)
    over the (run, user, item) keys among each list's first k rows (score descending, item ascending),
    counted on recs without invalid rows (where the order is defined). ``ranked``: the score column given as
    a rank (ascending). Either way the heaps are on the order alone (sql/_topk_split.duckdb.sql, and list_tops'
    lists)."""
    def invalid(row) -> bool:
        return None in row or row[3] != row[3] or abs(row[3]) == float("inf")
    if clean:
        rows = [r for r in rows if not invalid(r)]
        if not rows:
            return
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 2], "relevance": [1.0, 1.0]})
    asked = [f"ndcg@{k}", f"map@{k}"]
    order = {"rank_col": "score"} if ranked else {}
    sql = recsql.to_sql(metrics=asked, dialect="duckdb", run_cols="model", **order)
    assert "list_heads" in sql and "recs_in AS NOT MATERIALIZED" in sql and "list_tops" in sql
    con = duckdb.connect()
    con.execute("CREATE TABLE recs (model VARCHAR, user_id BIGINT, item_id BIGINT, score DOUBLE)")
    con.executemany("INSERT INTO recs VALUES (?, ?, ?, ?)", [list(r) for r in rows])
    con.register("truth", truth)
    summary = con.execute(sql).df()
    assert set(summary["recs_invalid_rows"]) == {sum(map(invalid, rows))}
    if clean:
        copies = 0
        for key in {(r[0], r[1]) for r in rows}:
            top = sorted((r for r in rows if (r[0], r[1]) == key), key=lambda r: (r[3] if ranked else -r[3], r[2]))[:k]
            items = [r[2] for r in top]
            copies += len(items) - len(set(items))
        assert set(summary["recs_duplicate_rows"]) == {copies}


def _ranked_rows(rows: list[tuple], k: int, by: str = "rank") -> list[tuple]:
    """DuckDB's ranked rows (list_ranked: the run key, user, item, rank) of recs ``rows`` (run, user, item, value),
    inserted in their order, for metrics cut at ``k``: ``by`` "rank", the value is a given rank (ascending);
    "score", a score (descending)."""
    order = {"rank_col": "given"} if by == "rank" else {"score_col": "given"}
    sql = recsql.to_sql(metrics=[f"ndcg@{k}"], dialect="duckdb", run_cols="model", **order)
    sql = sqlglot.parse_one(sql, read="duckdb")
    ranked = exp.select("*").from_("list_ranked")
    ranked.set("with_" if "with_" in sql.args else "with", sql.args.get("with_") or sql.args.get("with"))
    assert "list_tops" in ranked.sql("duckdb")  # the heaps on the order alone (sql/_topk_split.duckdb.sql)
    con = duckdb.connect()
    con.execute("CREATE TABLE recs (model VARCHAR, user_id BIGINT, item_id BIGINT, given DOUBLE)")
    con.executemany("INSERT INTO recs VALUES (?, ?, ?, ?)", [list(r) for r in rows])
    con.register("truth", pd.DataFrame({"user_id": [1], "item_id": [1], "relevance": [1.0]}))
    return sorted(con.execute(ranked.sql("duckdb")).fetchall())


@settings(max_examples=120, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(1, 3), st.integers(1, 12),
                               st.sampled_from([1.0, 2.0, 2.5, 0.0, -0.0])), min_size=1, max_size=60),
       k=st.integers(1, 6), order=st.sampled_from(["drawn", "largest items first", "shuffled"]), rng=st.randoms(),
       by=st.sampled_from(["rank", "score"]))
def test_the_heaps_rank_each_list_as_sorting_it_does_ties_across_the_cut_included(rows, k, order, rng, by):
    """DuckDB's main list, ranked by a given rank column or by scores, from heaps on the order alone, k + 1
    deep (sql/_topk_split.duckdb.sql), with a few values only (0.0 and -0.0 among them, which compare equal),
    so most lists tie across the cut (which recs read again settles): each (run, user)'s ranked rows are plain
    Python's sort of its rows, rank ascending (score descending) then item ascending, cut at k, duplicates kept
    as rows. Rows inserted as drawn, with the largest items first or shuffled (which tied rows a heap keeps
    depends on the order it meets them)."""
    if order == "largest items first":
        rows = sorted(rows, key=lambda r: -r[2])
    elif order == "shuffled":
        rng.shuffle(rows)
    sign = 1 if by == "rank" else -1
    want = sorted((run, user, r[2], rank) for run, user in {(r[0], r[1]) for r in rows}
                  for rank, r in enumerate(sorted((r for r in rows if (r[0], r[1]) == (run, user)),
                                                  key=lambda r: (sign * r[3], r[2]))[:k], start=1))
    assert _ranked_rows(rows, k, by) == want


@pytest.mark.parametrize("by, value", [("rank", 2.0), ("score", 0.5)])
def test_a_tie_across_the_cut_is_settled_by_the_item_id(by, value):
    """Worked example: items 5, 4, 3, 2, 1 all ranked 2 (or scored 0.5), then item 9 ranked 1 (scored 0.9),
    inserted in that order. Cut at 2, the list is items 1 and 2 (a heap of 3 on the order alone held 3, 4
    and 5); cut at 3, item 9 and then 1 and 2."""
    rows = [("a", 1, item, value) for item in (5, 4, 3, 2, 1)]
    best = 1.0 if by == "rank" else 0.9
    assert _ranked_rows(rows, 2, by) == [("a", 1, 1, 1), ("a", 1, 2, 2)]
    assert _ranked_rows([*rows, ("a", 1, 9, best)], 3, by) == [("a", 1, 1, 2), ("a", 1, 2, 3), ("a", 1, 9, 1)]


@pytest.mark.parametrize("dialect, copies", [("duckdb", 1), ("sqlite", 3)])
def test_rows_with_a_null_item_are_invalid_and_the_heaps_do_not_rank_them(dialect, copies):
    """Worked example: a list of six rows, the first three with a NULL item, then item 5 twice. All
    engines count the 3 NULL items as invalid rows (which the metrics refuse). DuckDB's heaps leave
    the NULL items out of the ranking (MIN_BY skips NULL values), so the rows its metrics read hold
    one duplicate (item 5); the portable SQL ranks them, and counts 2 + 1 copies among its first five."""
    import sqlite3
    rows = [(1, None, 0.9), (1, None, 0.8), (1, None, 0.7), (1, 5, 0.6), (1, 5, 0.5), (1, 6, 0.1)]
    con = duckdb.connect() if dialect == "duckdb" else sqlite3.connect(":memory:")
    con.execute("CREATE TABLE recs (user_id BIGINT, item_id BIGINT, score DOUBLE)")
    con.executemany("INSERT INTO recs VALUES (?, ?, ?)", rows)
    con.execute("CREATE TABLE truth (user_id BIGINT, item_id BIGINT, relevance DOUBLE)")
    con.execute("INSERT INTO truth VALUES (1, 5, 1.0)")
    sql = recsql.to_sql(metrics=["ndcg@5", "precision@5"], dialect=dialect)
    assert ("list_heads" in sql) == (dialect == "duckdb")
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    summary = dict(zip(names, cursor.fetchall()[0]))
    assert (summary["recs_invalid_rows"], summary["recs_duplicate_rows"]) == (3, copies)
