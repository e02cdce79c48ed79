"""Rendered SQL for every supported dialect: golden snapshots (fixtures/sql/<dialect>/<case>.sql),
each parses back with sqlglot, and — translated back to DuckDB and executed — gives the numbers
recsql gives on DuckDB (a rewrite that changed the meaning would show here).

Update the snapshots after an intended change with:  RECSQL_UPDATE_SNAPSHOTS=1 pytest tests/test_dialects.py
"""
from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import sqlglot

import recsql
from recsql.dialects import DIALECTS

SNAPSHOTS = Path(__file__).resolve().parent.parent / "fixtures" / "sql"
DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
CASES = {
    "core": dict(metrics=["ndcg@10", "map@10", "recall@50", "precision@5"], run_cols=["model"]),
    "variants": dict(metrics=["ndcg(gain=exponential,ideal=list)@5", "ndcg(ideal=k_slots)@5", "r_precision",
                              "money_precision@10", "mrr@10", "f1@5"], items="analytics.items", duplicates="best",
                     run_cols=["model"]),
    "beyond": dict(metrics=["novelty@10", "surprisal@10", "arp@10", "unexpectedness@10", "serendipity@10",
                            "diversity@10", "coverage@10", "gini@10", "personalization@10", "auc@10", "accuracy@10",
                            "err@10", "pfound@5", "spearman@5", "kendall@5"],
                   items="analytics.items", interactions="analytics.truth", expected_recs="analytics.recs",
                   duplicates="best", run_cols=["model"]),
    # the off-policy estimators composed with a metric of truth into the one statement (tables: analytics())
    "logs": dict(metrics=["ndcg@10", "ips", "ips(cap=5)", "snips", "dm", "dr(cap=5)", "switch_dr(tau=5)", "ess",
                          "max_weight", "ips(target=scores)", "dm(target=scores)"],
                 logs="analytics.logs", reward_model="analytics.reward_model", run_cols=["model"]),
    # the slate estimators: the logged slates' windows and their joint and cascade propensities
    "slates": dict(metrics=["slate_ips", "slate_iips", "slate_rips", "slate_snips", "slate_sniips", "slate_snrips", "pbm_ips", "pbm_ips(examination=1 / rank, logging=ranking)"], logs="analytics.logs", run_cols=["model"],
                   slate_propensity_col="slate_propensity", cascade_propensity_col="cascade_propensity"),
}


def rendered(dialect: str, case: str, **extra) -> str:
    options = dict(CASES[case])
    metrics = options.pop("metrics")
    return recsql.to_sql(metrics=metrics, recs="analytics.recs", truth="analytics.truth", dialect=dialect,
                         **options, **extra)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_snapshot(dialect, case):
    sql = rendered(dialect, case, text_ids=("item_id",) if case == "variants" else ())
    path = SNAPSHOTS / dialect / f"{case}.sql"
    if os.environ.get("RECSQL_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sql + "\n", encoding="utf-8")
    assert path.is_file(), f"no snapshot {path}; run RECSQL_UPDATE_SNAPSHOTS=1 pytest {__file__}"
    assert sql + "\n" == path.read_text(encoding="utf-8"), f"{dialect}/{case}.sql changed; review and update"


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_parses_back(dialect):
    for case in CASES:
        statements = sqlglot.parse(rendered(dialect, case), read=DIALECTS[dialect].sqlglot)
        assert len(statements) == 1 and isinstance(statements[0], sqlglot.exp.Query)


@pytest.fixture(scope="module")
def analytics():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA analytics")
    for name in ("recs", "truth", "items"):
        con.execute(f"CREATE TABLE analytics.{name} AS SELECT * FROM read_parquet('{DATA / (name + '.parquet')}')")
    # logged impressions of the truth's items (positions 1-3, propensities 0.2-0.6, the relevance as reward; a
    # user's rows its slate, with joint and cascade propensities) and a reward model predicting every (user, item)
    # of recs and truth
    con.execute("CREATE TABLE analytics.logs AS SELECT user_id, item_id, 1 + item_id % 3 AS position, "
                "0.2 + 0.1 * (item_id % 5) AS propensity, CAST(relevance AS DOUBLE) AS reward, "
                "0.01 + 0.01 * (user_id % 4) AS slate_propensity, 0.4 - 0.1 * (item_id % 3) AS cascade_propensity "
                "FROM analytics.truth")
    con.execute("CREATE TABLE analytics.reward_model AS SELECT user_id, item_id, 0.1 * (item_id % 7) AS reward FROM "
                "(SELECT user_id, item_id FROM analytics.recs UNION SELECT user_id, item_id FROM analytics.truth)")
    yield con
    con.close()


@pytest.mark.parametrize("dialect", sorted(set(DIALECTS) - {"clickhouse", "oracle"}))
@pytest.mark.parametrize("case", sorted(CASES))
def test_translated_back_to_duckdb_gives_the_same_numbers(analytics, dialect, case):
    expected = analytics.execute(rendered("duckdb", case)).df()
    tree = sqlglot.parse_one(rendered(dialect, case), read=DIALECTS[dialect].sqlglot)
    if dialect == "tsql":  # T-SQL FLOAT is 64-bit; sqlglot reads it back as DuckDB's 32-bit FLOAT
        for dtype in tree.find_all(sqlglot.exp.DataType):
            if dtype.this == sqlglot.exp.DataType.Type.FLOAT:
                dtype.set("this", sqlglot.exp.DataType.Type.DOUBLE)
    for dtype in tree.find_all(sqlglot.exp.DataType):  # VARCHAR(MAX) (Redshift, T-SQL) has no DuckDB spelling
        if dtype.this in (sqlglot.exp.DataType.Type.VARCHAR, sqlglot.exp.DataType.Type.NVARCHAR):
            dtype.set("expressions", [])
    got = analytics.execute(tree.sql("duckdb")).df()
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, atol=1e-9, rtol=0)


def test_clickhouse_keeps_nulls_in_left_joins():
    assert rendered("clickhouse", "core").rstrip().endswith("SETTINGS join_use_nulls = 1")


def test_oracle_selects_from_dual_and_has_no_boolean_literals():
    sql = rendered("oracle", "variants")
    assert "FROM DUAL" in sql and " FALSE" not in sql and " TRUE" not in sql


@pytest.mark.parametrize("dialect,collation", [("postgres", 'COLLATE "C"'), ("mysql", "COLLATE utf8mb4_bin"),
                                               ("tsql", "COLLATE Latin1_General_BIN2")])
def test_text_ids_get_a_binary_collation(dialect, collation):
    assert collation in rendered(dialect, "core", text_ids=("user_id", "item_id"))
    assert "COLLATE" not in rendered(dialect, "core")


def test_unknown_text_id_column_is_refused():
    with pytest.raises(recsql.RecsqlError, match="'sku' is not an id column"):
        rendered("postgres", "core", text_ids=("sku",))


def test_what_sqlglot_cannot_write_is_a_clear_error(monkeypatch):
    """Without recsql's override for window NULL placement, MySQL cannot express DuckDB's NULLS LAST
    in a window with a frame (bpref's running count of non-relevant items): that must surface as a
    RecsqlError naming the dialect, never as silent SQL."""
    from collections import OrderedDict

    import recsql.dialects as dialects
    import recsql.statements as statements
    monkeypatch.setattr(dialects, "_native_window_nulls", lambda tree, target: tree)
    monkeypatch.setattr(statements, "_cache", OrderedDict())  # compose anew, not the memoised text
    monkeypatch.setenv("RECSQL_CACHE_DIR", "off")  # nor the text kept on disk
    with pytest.raises(recsql.RecsqlError, match="cannot be written in mysql: 'NULLS LAST'"):
        recsql.to_sql("analytics.recs", "analytics.truth", ["bpref@10"], dialect="mysql")


FIVE = ["ndcg@10", "map@10", "recall@10", "novelty@10", "gini@10"]


@pytest.mark.parametrize("metrics, refused", [(["alpha_ndcg@100"], True), (["nnrbp@63"], True), (["nnrbp@62"], False),
                                              (["alpha_ndcg@51", *FIVE], True), (["alpha_ndcg@50", *FIVE], False)])
def test_a_statement_nesting_more_selects_than_mariadb_runs_is_refused_with_the_cutoff(metrics, refused):
    """MariaDB and MySQL run at most 64 SELECTs nested one in another ("Too high level of nesting for
    select", error 1473) and MariaDB at most 64 CTEs; the intent-aware metrics' greedy ideal list is one
    CTE per position, so at a large cutoff the CTEs past 64 nest. Such a statement is refused with the
    cutoff and what runs (tests/test_user_connection.py runs the largest one allowed on MariaDB, and @100 in
    steps through evaluate and compare), never a RecursionError from sqlglot nor the server's error."""
    from recsql.dialects import MARIADB_SELECT_NESTING, _select_depth
    others = {role: role for role in ("items", "interactions", "expected_recs", "item_features")}
    inputs = {"intents": "intents", **(others if len(metrics) > 1 else {})}
    if refused:
        with pytest.raises(recsql.RecsqlError, match=r"nests \d+ SELECTs, more than the 64 they run; .*largest "
                                                     r"cutoff, \d+ here.*62 on their own.*"
                                                     r"on a MariaDB connection run it in steps"):
            recsql.to_sql("recs", "truth", metrics, dialect="mysql", **inputs)
    else:
        sql = recsql.to_sql("recs", "truth", metrics, dialect="mysql", **inputs)
        assert 60 < _select_depth(sqlglot.parse_one(sql, read="mysql")) <= MARIADB_SELECT_NESTING
