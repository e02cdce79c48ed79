"""Evaluated on the user's connection, recsql reads what the user's own ``SELECT * FROM recs`` on it
would read (its current database or search path, temporary tables, registered frames, the rows of
its open transaction) and leaves the connection as it was: no setting changed, nothing left behind,
the transaction still open and usable, also after recsql's statement failed (docs/guide/safety.md)."""
from __future__ import annotations

from contextlib import ExitStack

import duckdb
import pandas as pd
import pytest
from sqlglot import exp

import recsql
from recsql.dialects import dialect
from recsql.engines import runner_for
from recsql.engines.clickhouse import ClickHouseRunner
from recsql.engines.datafusion import DataFusionRunner
from recsql.engines.mysql import MySQLRunner
from recsql.engines.spark import SparkRunner
from recsql.engines.sqlite import SQLiteRunner
from recsql.engines.steps import oversized
from support.capabilities import engines_with
from support.engines import start

RECS = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.9, 0.1]})  # hit_rate@1 = 1 on truth
TRUTH = pd.DataFrame({"user_id": [1], "item_id": [1]})
MISS = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.1, 0.9]})  # hit_rate@1 = 0 on truth


def hit(recs, con, truth="truth", **options) -> float:
    return recsql.evaluate(recs, truth, ["hit_rate@1"], con=con, **options).summary["hit_rate@1"].iloc[0]


@pytest.fixture(scope="module", params=engines_with("transactions"))
def engine(request):
    with ExitStack() as stack:
        engine = start(request.param, stack)
        engine.load(MISS, name="recs")
        engine.load(TRUTH, name="truth")
        yield engine


def temp_table(engine, name: str, frame: pd.DataFrame) -> None:
    """A temporary table of ``frame``, seen by this connection only."""
    cols = ", ".join(f"{c} {engine.kinds['float' if c == 'score' else 'int']}" for c in frame.columns)
    engine.execute(f"CREATE TEMPORARY TABLE {name} ({cols})")
    engine.execute(f"INSERT INTO {name} VALUES {engine.rows(frame)}")


def test_a_temporary_table_is_read_as_the_user_reads_it(engine):
    """A temporary ``recs`` hides the table ``recs`` (DuckDB, SQLite, PostgreSQL; MariaDB likewise)."""
    assert hit("recs", engine.con) == 0.0
    temp_table(engine, "recs", RECS)
    try:
        assert hit("recs", engine.con) == 1.0
    finally:
        engine.drop_temporary("recs")
    assert hit("recs", engine.con) == 0.0


def test_the_open_transaction_is_read_and_left_open(engine):
    """Rows the user's transaction changed are read as changed; after evaluate (and after a failed
    evaluate) the transaction is still open, usable and holds the change; rolled back, it is gone."""
    engine.begin()
    engine.execute_uncommitted("UPDATE recs SET score = 1 - score")
    assert engine.in_transaction()
    assert hit("recs", engine.con) == 1.0
    with pytest.raises(recsql.RecsqlError, match="no_such_table"):
        hit("no_such_table", engine.con)
    assert engine.in_transaction()
    assert hit("recs", engine.con) == 1.0
    engine.con.rollback()
    assert hit("recs", engine.con) == 0.0


def test_postgres_search_path_and_a_failed_statement_in_the_transaction():
    with ExitStack() as stack:
        engine = start("postgres", stack)
        engine.load(MISS, name="recs")
        engine.load(TRUTH, name="truth")
        engine.execute("CREATE SCHEMA other")
        engine.execute("CREATE TABLE other.recs (user_id BIGINT, item_id BIGINT, score DOUBLE PRECISION)")
        engine.execute(f"INSERT INTO other.recs VALUES {engine.rows(RECS)}")
        con = engine.con
        con.execute("SET search_path TO other, public")  # in the transaction psycopg opened
        assert hit("recs", con) == 1.0
        assert con.info.transaction_status.name == "INTRANS"
        assert con.execute("SHOW search_path").fetchone()[0] == "other, public"
        # an engine error in recsql's statement (division by zero in the user's view) rolls back to
        # recsql's savepoint: the user's transaction is not aborted
        con.execute("CREATE TEMP VIEW bad AS SELECT user_id, item_id, score / 0 AS score FROM recs")
        with pytest.raises(recsql.RecsqlError, match="division by zero"):
            hit("bad", con)
        assert con.info.transaction_status.name == "INTRANS"  # not INERROR
        assert con.execute("SELECT count(*) FROM bad WHERE false").fetchone() == (0,)
        con.commit()
        con.execute("SET search_path TO public")
        con.commit()
        assert hit("recs", con) == 0.0
        assert con.info.transaction_status.name == "IDLE"  # nothing left open by recsql either


def test_postgres_compare_in_the_users_transaction():
    """compare's statement runs with SET LOCAL jit = off: in the user's transaction it is set back."""
    with ExitStack() as stack:
        engine = start("postgres", stack)
        frame = pd.concat([RECS.assign(model="a"), MISS.assign(model="b")])
        engine.load(frame, name="runs", text="TEXT")
        engine.load(TRUTH, name="truth")
        con = engine.con
        con.execute("SET jit = on")
        got = recsql.compare("runs", "truth", ["hit_rate@1"], run_cols="model", resamples=20, con=con).runs
        assert got["mean"].tolist() == [1.0, 0.0]
        assert con.info.transaction_status.name == "INTRANS"
        assert con.execute("SHOW jit").fetchone()[0] == "on"


def test_postgres_failed_user_transaction_is_named():
    with ExitStack() as stack:
        engine = start("postgres", stack)
        engine.load(RECS, name="recs")
        engine.load(TRUTH, name="truth")
        with pytest.raises(Exception):
            engine.con.execute("SELECT 1/0")
        with pytest.raises(recsql.RecsqlError, match=r"transaction .* has failed.*con\.rollback\(\)"):
            hit("recs", engine.con)
        engine.con.rollback()
        assert hit("recs", engine.con) == 1.0


def test_duckdb_current_database_registered_frames_and_settings():
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS other")
    for schema, frame in (("memory.main", MISS), ("other.main", RECS)):
        con.execute(f"CREATE TABLE {schema}.recs AS SELECT * FROM frame")
        con.execute(f"CREATE TABLE {schema}.truth AS SELECT * FROM TRUTH")
    assert hit("recs", con) == 0.0
    con.execute("USE other")
    progress = con.execute("SELECT current_setting('enable_progress_bar')").fetchall()
    con.execute("SET enable_progress_bar = false")
    assert hit("recs", con, progress=True) == 1.0
    assert con.execute("SELECT current_database(), current_setting('enable_progress_bar')").fetchall() == [("other", False)]
    con.execute(f"SET enable_progress_bar = {progress[0][0]}")
    con.register("frame_recs", RECS)
    assert hit("frame_recs", con) == 1.0
    assert hit(RECS, con, truth=TRUTH) == 1.0  # frames recsql registers are gone afterwards
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    assert views == [("frame_recs",)]
    con.close()


def test_duckdb_a_failure_in_the_users_transaction_is_named():
    """DuckDB has no savepoints: a missing table is found from the catalog without a statement that
    fails; an engine error that aborts the user's transaction says so and how to recover."""
    con = duckdb.connect()
    con.execute("CREATE TABLE recs AS SELECT * FROM MISS")
    con.execute("CREATE TABLE truth AS SELECT * FROM TRUTH")
    con.begin()
    with pytest.raises(recsql.RecsqlError, match="'nope' does not exist"):
        hit("nope", con)
    assert con.execute("SELECT count(*) FROM recs").fetchone() == (2,)  # still usable
    con.execute("CREATE TABLE base AS SELECT * FROM RECS")
    con.execute("CREATE VIEW broken AS SELECT * FROM base")
    con.execute("DROP TABLE base")
    with pytest.raises(recsql.RecsqlError, match=r"view 'broken' is broken.*con\.rollback\(\)"):
        hit("broken", con)
    con.rollback()
    assert hit("recs", con) == 0.0


def test_duckdb_after_a_result_not_fetched():
    """The count an ``execute("UPDATE ...")`` leaves unfetched does not stop registering a frame
    (DuckDB >= 2 refuses registrations while a result is unfinished)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE truth AS SELECT * FROM TRUTH")
    con.execute("UPDATE truth SET user_id = 1")
    assert hit(RECS, con) == 1.0


def test_duckdb_write_goes_where_the_users_own_create_table_would():
    """Evaluation.write on the user's connection: into its current database (USE), inside its open
    transaction (the user's commit or rollback decides), refusing a temporary input table by name."""
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS other")
    con.execute("USE other")
    con.execute("CREATE TEMPORARY TABLE recs AS SELECT * FROM RECS")
    con.execute("CREATE TABLE truth AS SELECT * FROM TRUTH")
    result = recsql.evaluate("recs", "truth", ["hit_rate@1"], con=con)
    with pytest.raises(recsql.RecsqlError, match="input"):
        result.write(con, summary="recs")
    result.write(con, summary="metrics")
    assert con.execute("SELECT database_name FROM duckdb_tables() WHERE table_name = 'metrics'").fetchall() == [("other",)]
    con.execute("BEGIN TRANSACTION")
    result.write(con, summary="metrics_later")
    assert con.execute("SELECT COUNT(*) FROM metrics_later").fetchall() == [(1,)]  # in the user's transaction
    con.execute("ROLLBACK")
    assert con.execute("SELECT COUNT(*) FROM duckdb_tables() WHERE table_name = 'metrics_later'").fetchall() == [(0,)]
    assert con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall() == []
    con.close()


@pytest.mark.parametrize("schema", ["false", "true"])
@pytest.mark.parametrize("hash_join", ["true", "false"])
def test_datafusion_settings_are_set_back(schema, hash_join):
    """recsql runs its query on a DataFusion context with sort-merge joins (recsql/engines/datafusion.py:
    SETTINGS) and sets back what the user had, the information schema it reads them through included."""
    import pyarrow as pa
    from datafusion import SessionConfig, SessionContext
    ctx = SessionContext(SessionConfig().set("datafusion.catalog.information_schema", schema)
                         .set("datafusion.optimizer.prefer_hash_join", hash_join))
    ctx.register_record_batches("recs", [pa.Table.from_pandas(RECS).to_batches()])
    ctx.register_record_batches("truth", [pa.Table.from_pandas(TRUTH).to_batches()])
    assert hit("recs", ctx) == 1.0
    if schema == "false":  # left off: SHOW is refused until the user switches it on
        with pytest.raises(Exception, match="information_schema"):
            ctx.sql("SHOW datafusion.optimizer.prefer_hash_join").collect()
        ctx.sql("SET datafusion.catalog.information_schema = true").collect()
    shown = ctx.sql("SHOW datafusion.optimizer.prefer_hash_join").to_pandas()["value"].iloc[0]
    assert shown == hash_join


def test_datafusion_settings_hold_during_the_query():
    """Inside the runner's settings block the context has recsql's settings; after it, the user's."""
    from datafusion import SessionConfig, SessionContext
    from recsql.dialects import dialect
    from recsql.engines import runner_for
    SETTINGS = dict(dialect("datafusion").settings)
    assert SETTINGS == {"datafusion.optimizer.prefer_hash_join": "false",
                        "datafusion.execution.skip_physical_aggregate_schema_check": "true"}
    ctx = SessionContext(SessionConfig().set("datafusion.optimizer.prefer_hash_join", "true"))
    runner = runner_for(ctx)
    with runner.settings_applied():
        assert runner.read_settings(list(SETTINGS)) == SETTINGS
    assert runner.read_settings(list(SETTINGS)) == {"datafusion.optimizer.prefer_hash_join": "true",
                                                    "datafusion.execution.skip_physical_aggregate_schema_check": "false"}


@pytest.mark.parametrize("level", [2, 6])
def test_mariadb_join_cache_level_is_set_back(level):
    """On MariaDB recsql's query runs with hash joins (join_cache_level 4, recsql/dialects.py) when
    the session's level is lower, with join buffers and in-memory tables at least the dialect's sizes
    (a session's larger value kept: 128 MB buffers with level 6), and the session keeps its own values
    after."""
    from recsql.dialects import dialect
    with ExitStack() as stack:
        engine = start("mysql", stack)
        engine.load(RECS, name="recs")
        engine.load(TRUTH, name="truth")
        with engine.con.cursor() as cursor:
            cursor.execute(f"SET SESSION join_cache_level = {level}")
            if level > 4:
                cursor.execute(f"SET SESSION join_buffer_size = {128 << 20}")
        assert hit("recs", engine.con) == 1.0
        with engine.con.cursor() as cursor:
            cursor.execute("SELECT @@SESSION.join_cache_level")
            assert cursor.fetchall()[0][0] == level
        from recsql.engines import runner_for
        runner = runner_for(engine.con)
        names = [name for name, _ in dialect("mysql").settings]
        before = runner.read_settings(names)  # the session's own, set back after hit()'s statements
        assert before["join_buffer_size"] == str(128 << 20 if level > 4 else 256 << 10)
        with runner.settings_applied():  # during recsql's statements: at least hash joins and their buffers
            assert runner.read_settings(["join_cache_level"]) == {"join_cache_level": str(max(level, 4))}
            assert runner.read_settings(names) == {name: str(max(int(before[name]), int(value)))
                                                   for name, value in dialect("mysql").settings}
        assert runner.read_settings(["join_cache_level"]) == {"join_cache_level": str(level)}
        assert runner.read_settings(names) == before


@pytest.mark.parametrize("size", [1 << 10, 64 << 20])
def test_clickhouse_max_query_size_is_set_back_and_a_larger_one_kept(size):
    """On ClickHouse recsql's statements are parsed with max_query_size 16 MB where the session's is smaller (every
    metric at @100 is a statement of 277 KB, over the default 256 KB), and the session keeps its own value after:
    1 KB, which would refuse the statement, is raised for it and set back; 64 MB is kept."""
    with ExitStack() as stack:
        engine = start("clickhouse", stack)
        engine.load(RECS, name="recs")
        engine.load(TRUTH, name="truth")
        engine.con.query(f"SET max_query_size = {size}")
        assert hit("recs", engine.con) == 1.0
        runner = runner_for(engine.con)
        assert runner.read_settings(["max_query_size"]) == {"max_query_size": str(size)}
        with runner.settings_applied():
            assert runner.read_settings(["max_query_size"]) == {"max_query_size": str(max(size, 16 << 20))}
        assert runner.read_settings(["max_query_size"]) == {"max_query_size": str(size)}


def test_rendered_sql_advises_the_settings_recsql_runs_with():
    """SQL rendered for MariaDB or DataFusion names, in its header, the session settings recsql's own
    runners set for its statements (the dialects' settings, recsql/dialects.py)."""
    from recsql.dialects import dialect
    mysql = recsql.to_sql("recs", "truth", ["ndcg@10"], dialect="mysql").split("WITH", 1)[0]
    assert ("before running it: on MariaDB, SET SESSION join_cache_level = 4; SET SESSION join_buffer_size = 67108864; "
            "SET SESSION join_buffer_space_limit = 268435456; SET SESSION tmp_table_size = 536870912; "
            "SET SESSION max_heap_table_size = 536870912 (hash joins with 64 MB buffers,") in mysql
    datafusion = recsql.to_sql("recs", "truth", ["ndcg@10"], dialect="datafusion").split("WITH", 1)[0]
    assert ("before running it: SET datafusion.optimizer.prefer_hash_join = false; "
            "SET datafusion.execution.skip_physical_aggregate_schema_check = true (sort-merge joins") in datafusion
    clickhouse = recsql.to_sql("recs", "truth", ["ndcg@10"], dialect="clickhouse").split("WITH", 1)[0]
    assert "before running it: SET max_query_size = 16777216 (the statement with many metrics" in clickhouse
    for name, header in (("mysql", mysql), ("datafusion", datafusion), ("clickhouse", clickhouse)):
        assert all(f"{setting} = {value}" in header for setting, value in dialect(name).settings), name
    assert "before running it" not in recsql.to_sql("recs", "truth", ["ndcg@10"], dialect="postgres")


def _intent_case():
    recs = pd.DataFrame({"user_id": [1] * 4 + [2] * 3, "item_id": [1, 2, 3, 4, 1, 5, 6],
                         "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]})
    truth = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [1, 3, 5], "relevance": [1.0, 1.0, 1.0]})
    intents = pd.DataFrame({"user_id": [1, 1, 1, 2, 2], "item_id": [1, 3, 3, 5, 6], "intent": ["a", "a", "b", "a", "b"],
                            "relevance": [1.0, 1.0, 1.0, 1.0, 1.0]})
    return recs, truth, intents


def test_mariadb_runs_the_largest_intent_aware_cutoff_recsql_writes_for_it_as_one_statement():
    """alpha_ndcg@62 alone nests 64 SELECTs once its greedy steps past MariaDB's 64 CTEs are inlined, the
    most MariaDB runs (tests/test_dialects.py: @63 is refused before it reaches the server); to_sql's one
    statement runs there, with DuckDB's numbers."""
    recs, truth, intents = _intent_case()
    want = recsql.evaluate(recs, truth, ["alpha_ndcg@62"], intents=intents).per_user
    with ExitStack() as stack:
        engine = start("mysql", stack)
        names = {role: engine.load(frame) for role, frame in (("recs", recs), ("truth", truth), ("intents", intents))}
        sql = recsql.to_sql(names["recs"], names["truth"], ["alpha_ndcg@62"], dialect="mysql", output="per_user",
                            intents=names["intents"])
        assert sql.count(" AS (") <= 64  # one statement MariaDB holds: never run in steps
        cursor = engine.con.cursor()
        cursor.execute(sql)
        got = dict(cursor.fetchall())
    assert [got[user] for user in want["user_id"]] == pytest.approx(want["alpha_ndcg@62"].tolist(), rel=1e-12)
    assert 0 < want["alpha_ndcg@62"].min() < want["alpha_ndcg@62"].max() < 1


@pytest.mark.parametrize("name, runner", [("mysql", MySQLRunner), ("sqlite", SQLiteRunner), ("spark", SparkRunner),
                                          ("clickhouse", ClickHouseRunner), ("datafusion", DataFusionRunner)])
def test_the_intent_aware_metrics_at_100_run_in_steps_with_duckdbs_numbers(name, runner, monkeypatch):
    """At @100 the greedy ideal list is 101 CTEs, each read by the next, 419 SELECTs nested through them: more
    CTEs than one MariaDB statement holds (to_sql refuses: tests/test_dialects.py), more nesting than SQLite
    ("Expression tree is too large" past @46), ClickHouse ("Too deep subqueries" past @20) and Spark's analyser
    ("Max iterations (100) reached" past @10) take, and more sorts than DataFusion holds at once.
    evaluate and compare on those connections run it in steps (recsql/engines/steps.py), none too large for
    the engine, with DuckDB's per-user values and intervals, and leave no table behind. compare is left out on
    Spark, the slowest here, to keep CI short: its per-user statement is evaluate's with the runs, in the same
    steps, and compare's own steps run on Spark in tests/test_steps.py."""
    recs, truth, intents = _intent_case()
    asked = ["alpha_ndcg@100", "nerr_ia@100", "nnrbp@100", "ndcg@100"]
    runs = pd.concat([recs.assign(model="a"), recs.assign(model="b", score=-recs["score"])], ignore_index=True)
    want = recsql.evaluate(recs, truth, asked, intents=intents).per_user
    compared = name != "spark"
    if compared:
        want_compare = recsql.compare(runs, truth, asked, run_cols="model", intents=intents, resamples=50, seed=3)
    made: list[tuple[str, str]] = []  # the steps' tables and their SELECTs, recorded as the engine makes them
    materialize = runner.materialize
    monkeypatch.setattr(runner, "materialize", lambda self, table, sql: (made.append((table, sql)),
                                                                         materialize(self, table, sql)))
    with ExitStack() as stack:
        engine = start(name, stack)
        names = {role: engine.load(frame) for role, frame in (("recs", recs), ("truth", truth), ("intents", intents),
                                                             ("runs", runs))}
        got = recsql.evaluate(names["recs"], names["truth"], asked, con=engine.con, intents=names["intents"]).per_user
        evaluated = len(made)
        if compared:
            got_compare = recsql.compare(names["runs"], names["truth"], asked, run_cols="model", con=engine.con,
                                         intents=names["intents"], resamples=50, seed=3)
        assert 0 < evaluated and (evaluated < len(made) if compared else evaluated == len(made))
        assert all(oversized(sql, name) is None for _, sql in made)
        with runner_for(engine.con) as reader:
            for table, _ in made:  # each dropped (MariaDB lists no temporary table anywhere): reading it fails
                with pytest.raises(recsql.RecsqlError, match="the evaluation query failed"):
                    name_there = exp.to_identifier(table, quoted=True).sql(dialect(reader.dialect).sqlglot)
                    reader.fetch(f"SELECT 1 FROM {name_there}")
    for name in asked:
        assert got[name].tolist() == pytest.approx(want[name].tolist(), rel=1e-12), name
    assert 0 < want["alpha_ndcg@100"].min() < 1
    if compared:
        for mine, theirs in ((got_compare.runs, want_compare.runs), (got_compare.tests, want_compare.tests)):
            assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
            pd.testing.assert_frame_equal(mine, theirs, rtol=1e-12, check_dtype=False)


@pytest.mark.parametrize("name", ["sqlite", "postgres", "mysql"])
def test_a_metric_null_for_every_user_is_a_float_column_on_every_engine(name):
    """A DB-API driver gives a column NULL in every row no type (pandas: object, None); the summary and
    per-user frames read each metric's raw column as DOUBLE, so they have DuckDB's float64 columns (NaN)
    on every engine. pop_reo is NULL here (no relevant unseen item in either group), rbp@2 defined."""
    recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [1, 2, 3], "score": [0.9, 0.8, 0.7]})
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 3]})
    asked = ["pop_reo@10", "rbp@2", "ndcg(ideal=list)@10"]
    want = recsql.evaluate(recs, truth, asked, interactions=truth)
    with ExitStack() as stack:
        engine = start(name, stack)
        got = recsql.evaluate(engine.load(recs), engine.load(truth), asked, con=engine.con,
                              interactions=engine.load(truth))
    for frame, expected in ((got.summary, want.summary), (got.per_user, want.per_user)):
        assert frame.dtypes.to_dict() == expected.dtypes.to_dict()
        pd.testing.assert_frame_equal(frame, expected)
    assert want.summary["pop_reo@10"].isna().all() and want.summary["rbp@2"].notna().all()
