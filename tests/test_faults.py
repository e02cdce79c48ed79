"""Faults and fuzzing: concurrent evaluations, DuckDB memory limits, a database connection that
drops mid-run, atomic output tables, and hypothesis over identifiers and malformed frames."""
from __future__ import annotations

import hashlib
import math
import threading
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import recsql
from support.reference import mean, reference

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")
DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
METRICS = ["ndcg@10", "map@10", "recall@20"]


@pytest.fixture()
def database(tmp_path) -> Path:
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    for name in ("recs", "truth"):
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet('{DATA / (name + '.parquet')}')")
    con.close()
    return path


def test_concurrent_evaluations_on_one_file_and_one_connection(database):
    want = recsql.evaluate("recs", "truth", METRICS, con=str(database), run_cols=["model"]).summary
    shared = duckdb.connect(str(database), read_only=True)
    results, errors = [], []

    def work(con):
        try:
            results.append(recsql.evaluate("recs", "truth", METRICS, con=con, run_cols=["model"]).summary)
        except Exception as err:  # noqa: BLE001 - collected and reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(str(database) if i % 2 else shared,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared.close()
    assert not errors, errors
    assert len(results) == 6
    for got in results:
        pd.testing.assert_frame_equal(got, want)


def test_over_a_memory_limit_duckdb_spills_or_fails_cleanly(tmp_path):
    n_users, per_user = 100_000, 20
    rng = np.random.default_rng(3)
    recs = pd.DataFrame({"user_id": np.repeat(np.arange(n_users), per_user),
                         "item_id": np.tile(np.arange(per_user), n_users) * 7 + 1,
                         "score": rng.random(n_users * per_user)})
    truth = recs.sample(frac=0.1, random_state=1)[["user_id", "item_id"]]
    want = recsql.evaluate(recs, truth, METRICS).summary
    con = duckdb.connect(config={"memory_limit": "40MB", "threads": "1", "temp_directory": str(tmp_path / "spill")})
    try:
        got = recsql.evaluate(recs, truth, METRICS, con=con).summary
    except recsql.RecsqlError as err:  # failing is allowed, but cleanly and saying what to do
        assert "ran out of memory" in str(err) and "preserve_insertion_order" in str(err), err
    else:
        pd.testing.assert_frame_equal(got, want)
    con.close()


def test_no_files_left_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recs = pd.read_parquet(DATA / "recs.parquet")
    recsql.evaluate(recs, str(DATA / "truth.parquet"), METRICS, run_cols=["model"])
    with pytest.raises(recsql.RecsqlError):
        recsql.evaluate(recs, str(DATA / "truth.parquet"), METRICS)  # duplicates: several runs, no run_cols
    assert list(tmp_path.iterdir()) == []


def test_a_connection_dropped_mid_run_is_a_clear_error():
    import psycopg
    from support.servers import postgres_server
    from recsql.engines.postgres import PostgresRunner
    with postgres_server() as params, psycopg.connect(**params) as admin, psycopg.connect(**params) as con:
        admin.autocommit = True
        admin.execute("CREATE TABLE recs (user_id BIGINT, item_id BIGINT, score DOUBLE PRECISION)")
        admin.execute("INSERT INTO recs VALUES (1, 1, 0.5), (1, 2, 0.4)")
        admin.execute("CREATE TABLE truth (user_id BIGINT, item_id BIGINT, relevance DOUBLE PRECISION)")
        admin.execute("INSERT INTO truth VALUES (1, 2, 1)")
        before = admin.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'").fetchall()
        pid = con.info.backend_pid
        original = PostgresRunner.fetch

        def drop_then_fetch(self, sql):
            if "per_user_raw" in sql:  # the main query: the server ends the session first
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            return original(self, sql)

        PostgresRunner.fetch = drop_then_fetch
        try:
            with pytest.raises(recsql.RecsqlError, match="failed on PostgreSQL"):
                recsql.evaluate("recs", "truth", ["ndcg@2"], con=con)
        finally:
            PostgresRunner.fetch = original
        after = admin.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'").fetchall()
        assert after == before


def test_output_tables_are_atomic_and_never_replace_an_input(database, capsys):
    from recsql.cli import main
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    assert main(["evaluate", "recs", "truth", "--db", str(database), "-m", "ndcg@10", "--run-col", "model",
                 "--summary-table", "recs"]) == 2
    captured = capsys.readouterr()
    assert "is an input table of this evaluation" in captured.err
    assert captured.out == ""  # refused before anything was read: no summary
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
    result = recsql.evaluate("recs", "truth", METRICS, con=str(database), run_cols=["model"])
    with pytest.raises(recsql.RecsqlError, match="is an input"):
        result.write(str(database), summary="main.RECS")
    with pytest.raises(recsql.RecsqlError, match="nothing was written"):  # second table fails: neither is written
        result.write(str(database), summary="metrics", per_user="no_such_schema.users")
    con = duckdb.connect(str(database), read_only=True)
    assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'metrics'").fetchone() == (0,)
    con.close()
    assert main(["evaluate", "recs", "truth", "--db", str(database), "-m", "ndcg@10", "--run-col", "model",
                 "--summary-table", "metrics", "--per-user-table", "metrics_by_user", "--format", "csv"]) == 0
    con = duckdb.connect(str(database), read_only=True)
    assert con.execute("SELECT count(*) FROM metrics").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM metrics_by_user").fetchone()[0] > 500
    con.close()


NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(NAMES, min_size=4, max_size=4, unique_by=str.lower))
def test_any_column_names_work(names):
    user, item, score, rel = names
    recs = pd.DataFrame({user: [1, 1, 2], item: [1, 2, 1], score: [0.5, 0.4, 0.3]})
    truth = pd.DataFrame({user: [1, 2], item: [2, 1], rel: [1.0, 3.0]})
    got = recsql.evaluate(recs, truth, ["ndcg@2", "mrr@2"], user_col=user, item_col=item, score_col=score, relevance_col=rel)
    assert got.summary[["ndcg@2", "mrr@2"]].iloc[0].tolist() == pytest.approx([(1 / math.log2(3) + 1) / 2, 0.75])


CELLS = st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["a", "1", ""]))


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(recs=st.lists(st.tuples(CELLS, CELLS, CELLS), max_size=6), truth=st.lists(st.tuples(CELLS, CELLS, CELLS), max_size=4),
       drop=st.sampled_from([None, "user_id", "score", "relevance"]))
def test_malformed_frames_give_a_recsql_error_or_the_right_number(recs, truth, drop):
    recs_df = pd.DataFrame(recs, columns=["user_id", "item_id", "score"])
    truth_df = pd.DataFrame(truth, columns=["user_id", "item_id", "relevance"])
    if drop in recs_df:
        recs_df = recs_df.drop(columns=drop)
    elif drop:
        truth_df = truth_df.drop(columns=drop)
    try:
        result = recsql.evaluate(recs_df, truth_df, ["ndcg@3", "map@3"])
    except recsql.RecsqlError:
        return
    rows = lambda df: [dict(zip(df.columns, r)) for r in df.itertuples(index=False)]  # noqa: E731
    for name in ("ndcg", "map"):
        want = mean(reference(rows(recs_df), rows(truth_df), name, 3))
        got = result.summary[f"{name}@3"].iloc[0]
        assert (want is None and pd.isna(got)) or math.isclose(got, want, abs_tol=1e-12)


def test_out_of_memory_is_a_clear_error_with_the_fix():
    n = 300_000
    recs = pd.DataFrame({"user_id": np.arange(n) // 20, "item_id": np.arange(n), "score": np.random.default_rng(1).random(n)})
    con = duckdb.connect(config={"memory_limit": "10MB", "threads": "1", "temp_directory": ""})  # nowhere to spill
    with pytest.raises(recsql.RecsqlError, match="DuckDB ran out of memory .*preserve_insertion_order"):
        recsql.evaluate(recs, recs[["user_id", "item_id"]].iloc[::7], ["ndcg@10"], con=con)
    con.close()
