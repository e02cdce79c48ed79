"""A statement run in steps (recsql/engines/steps.py), on the engines that run compare's statements with global
metrics so (Spark, ClickHouse, DataFusion, MariaDB): the same rows as the statement run whole, every step a temporary
table of the session that shadows no name of the user's, none left behind, also after a failure, and which of
compare's statements are split. compare's own numbers there: tests/test_compare.py and tests/test_compare_weighted.py
(every engine)."""
from __future__ import annotations

from contextlib import ExitStack

import numpy as np
import pandas as pd
import pytest
import sqlglot
from hypothesis import given, settings, strategies as st
from sqlglot import exp

import recsql
from recsql.dialects import dialect
from recsql.engines import runner_for
from recsql.engines.steps import fetch_in_steps, nesting, split
from recsql.errors import RecsqlError
from support.engines import start

STEPPED = ("spark", "clickhouse", "datafusion", "mysql")  # mysql: the tests' MariaDB

# CTEs read twice, by qualified columns, through a UNION, a LEFT JOIN whose unmatched rows must be NULL (ClickHouse:
# the top-level SETTINGS must reach the step), and a CTE named like a table of the user's (``base``)
STATEMENT = """WITH base AS (SELECT n FROM numbers_in), twice AS (SELECT b.n, b.n * 2 AS m FROM base AS b UNION ALL
SELECT n, n AS m FROM base), joined AS (SELECT t.n, base.n AS k FROM twice AS t LEFT JOIN base ON t.m = base.n)
SELECT joined.n, joined.k FROM joined ORDER BY joined.n, joined.k{settings}"""
SETTINGS = {"clickhouse": " SETTINGS join_use_nulls = 1", "spark": "", "datafusion": "", "mysql": ""}


def _rows(frame) -> list[tuple]:
    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    rows = [tuple(None if pd.isna(v) else int(v) for v in row) for row in frame.itertuples(index=False)]
    return sorted(rows, key=lambda row: [(v is None, v or 0) for v in row])  # NULLs last, on every engine


@pytest.mark.parametrize("name", STEPPED)
def test_a_statement_in_steps_gives_its_rows_and_leaves_the_session_as_it_was(name):
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(pd.DataFrame({"n": [0, 1, 2, 3]}), name="numbers_in")
        engine.load(pd.DataFrame({"x": [7]}), name="base")  # the user's own table, named as a CTE
        before, held = engine.tables(), _held(engine)
        statement = STATEMENT.format(settings=SETTINGS[name])
        with runner_for(engine.con) as runner:
            assert runner.in_steps
            made = _recorded(runner)
            whole, stepped = _rows(runner.fetch(statement)), _rows(fetch_in_steps(runner, statement))
        # by hand: twice = (n, 2n) and (n, n) for n in 0..3; k is the n equal to m, NULL where m > 3
        assert whole == stepped == [(0, 0), (0, 0), (1, 1), (1, 2), (2, 2), (2, None), (3, 3), (3, None)]
        assert engine.tables() == before and len(made) == 1  # base, read three times (twice in twice, once in joined)
        assert _held(engine) == held  # Spark: the step's checkpoint freed, not only its view dropped
        with runner_for(engine.con) as runner:
            assert _rows(runner.fetch("SELECT x FROM base")) == [(7,)]
            _gone(runner, made)


def _held(engine) -> set[int]:
    """The ids of the RDDs the engine's session keeps (Spark: a local checkpoint's blocks are one; the other
    engines keep none)."""
    if engine.name != "spark":
        return set()
    return set(engine.con.sparkContext._jsc.getPersistentRDDs().keySet().toArray())


def _gone(runner, tables: list[str]) -> None:
    """Each of ``tables`` is gone: reading it fails (temporary ones too: MariaDB 10.11 lists none in
    information_schema)."""
    for table in tables:
        with pytest.raises(RecsqlError, match="the evaluation query failed"):
            runner.fetch(f"SELECT * FROM {exp.to_identifier(table, quoted=True).sql(dialect(runner.dialect).sqlglot)}")


def _recorded(runner) -> list[str]:
    """The names of the tables ``runner`` makes from now on (its own ``materialize``, called and recorded)."""
    made: list[str] = []
    materialize = runner.materialize

    def recording(name: str, sql: str) -> None:
        materialize(name, sql)
        made.append(name)
    runner.materialize = recording
    return made


@pytest.mark.parametrize("name", STEPPED)
def test_a_failing_step_leaves_no_table_behind(name):
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(pd.DataFrame({"n": [0, 1]}), name="numbers_in")
        before, held = engine.tables(), _held(engine)
        statement = ("WITH a AS (SELECT n FROM numbers_in), b AS (SELECT no_such_column FROM a UNION ALL SELECT n FROM a) "
                     "SELECT * FROM b")  # a, read twice, is a step made before b fails
        with runner_for(engine.con) as runner:
            made = _recorded(runner)
            with pytest.raises(RecsqlError, match="the evaluation query failed"):
                fetch_in_steps(runner, statement)
            assert len(made) == 1
            _gone(runner, made)
        assert engine.tables() == before and _held(engine) == held


def test_a_cte_read_twice_is_a_step_read_under_its_name_and_one_read_once_stays_a_cte():
    steps, final = split("WITH a AS (SELECT 1 AS x), b AS (SELECT a.x FROM a JOIN a AS a2 ON a.x = a2.x), "
                         "c AS (SELECT 2 AS y), unread AS (SELECT 3 AS z) SELECT b.x FROM b", "duckdb", "__recsql_t")
    assert steps == [("__recsql_t_0", "SELECT 1 AS x")]
    assert final == ('WITH b AS (SELECT a.x FROM "__recsql_t_0" AS a JOIN "__recsql_t_0" AS a2 ON a.x = a2.x) '
                     "SELECT b.x FROM b")


def test_compare_in_steps_on_mariadb_reads_the_users_open_transaction_and_leaves_it_open():
    """compare's recomputing statement, in steps on MariaDB (temporary tables, made and dropped inside the user's
    transaction): reads the rows the open transaction changed, and leaves the transaction open with its change;
    the numbers are DuckDB's over the same rows."""
    rng = np.random.default_rng(3)
    recs = pd.DataFrame([(m, u, i, float(rng.random())) for m in ("A", "B") for u in range(6) for i in range(5)],
                        columns=["model", "user_id", "item_id", "score"])
    truth = pd.DataFrame([(u, i) for u in range(6) for i in range(5) if (u + i) % 3 == 0], columns=["user_id", "item_id"])
    metrics, options = ["exposure_gini@2", "ndcg@2"], dict(run_cols="model", resamples=8, seed=2)
    with ExitStack() as stack:
        engine = start("mysql", stack)
        engine.load(recs, name="recs")
        engine.load(truth, name="truth")
        engine.begin()
        engine.execute_uncommitted("UPDATE recs SET score = 1 - score")
        with runner_for(engine.con) as runner:
            assert runner.in_steps
        got = recsql.compare("recs", "truth", metrics, con=engine.con, **options)
        assert engine.in_transaction()
        flipped = recs.assign(score=1 - recs["score"])
        want = recsql.compare(flipped, truth, metrics, **options)
        assert got.runs["mean"].tolist() == pytest.approx(want.runs["mean"].tolist(), abs=1e-12)
        assert got.tests["ci_low"].tolist() == pytest.approx(want.tests["ci_low"].tolist(), abs=1e-12, nan_ok=True)
        assert want.runs["mean"].tolist() != pytest.approx(recsql.compare(recs, truth, metrics, **options).runs["mean"].tolist())
        engine.con.rollback()
        again = recsql.compare("recs", "truth", metrics, con=engine.con, **options)
        assert again.runs["mean"].tolist() == pytest.approx(recsql.compare(recs, truth, metrics, **options).runs["mean"].tolist(), abs=1e-12)


@pytest.mark.parametrize("name", ("duckdb",) + STEPPED)
def test_compare_runs_its_statement_in_steps_exactly_when_it_has_global_metrics_on_the_engines_that_need_it(name, monkeypatch):
    """Which statements of compare run in steps (recsql/comparison_run.py fetch_statistics): one with a global metric
    counted from item exposure (coverage) on Spark, ClickHouse, DataFusion and MariaDB, whose CTEs those engines
    would compute again at every read (the numbers stay right either way, so only this test sees a change); never one
    with per-user metrics only, and never on DuckDB, which computes a CTE read twice once."""
    import recsql.comparison_run as comparison_run
    split_statements: list[str] = []
    real = comparison_run.fetch_in_steps

    def recording(runner, statement):  # the real function, called and recorded
        split_statements.append(statement)
        return real(runner, statement)
    monkeypatch.setattr(comparison_run, "fetch_in_steps", recording)
    recs = pd.DataFrame([(m, u, i, float((u * 7 + i * 3 + len(m)) % 11)) for m in ("A", "B") for u in range(5)
                         for i in range(4)], columns=["model", "user_id", "item_id", "score"])
    truth = pd.DataFrame([(u, i) for u in range(5) for i in range(4) if (u + i) % 2 == 0], columns=["user_id", "item_id"])
    options = dict(run_cols="model", resamples=4, seed=1)
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(recs, name="recs")
        engine.load(truth, name="truth")
        got = {}
        for metrics in (["ndcg@2"], ["coverage@2", "ndcg@2"]):
            before = len(split_statements)
            got[tuple(metrics)] = recsql.compare("recs", "truth", metrics, con=engine.con, **options)
            assert len(split_statements) - before == (name != "duckdb" and "coverage@2" in metrics)
    want = recsql.compare(recs, truth, ["coverage@2", "ndcg@2"], **options)  # DuckDB, one statement
    assert got[("coverage@2", "ndcg@2")].runs["mean"].tolist() == pytest.approx(want.runs["mean"].tolist(), abs=1e-12)


@st.composite
def _statements(draw):
    """A statement of 1 to 40 CTEs, each a one-row number computed from 0 to 2 CTEs before it (the same one
    twice, or one read by several: shared), the final SELECT over 1 to 3 of them, and a limit of CTEs per step."""
    count = draw(st.integers(1, 40))
    ctes = []
    for i in range(count):
        reads = draw(st.lists(st.integers(0, i - 1), max_size=2)) if i else []
        terms = " + ".join(f"{2 + j} * r{j}.x" for j in range(len(reads))) or str(i)
        source = ", ".join(f"c{read} AS r{j}" for j, read in enumerate(reads))
        ctes.append(f"c{i} AS (SELECT {i} + {terms} AS x" + (f" FROM {source})" if source else ")"))
    final = sorted(set(draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=3))))
    sql = (f"WITH {', '.join(ctes)} SELECT {' + '.join(f'f{i}.x' for i in range(len(final)))} AS total "
           f"FROM {', '.join(f'c{read} AS f{i}' for i, read in enumerate(final))}")
    return sql, draw(st.integers(1, 6))


@settings(max_examples=150, deadline=None)
@given(_statements(), st.booleans())
def test_no_step_holds_more_ctes_or_nests_more_selects_than_the_limit_and_the_rows_are_the_whole_statements(
        case, deep):
    """split with a limit of CTEs per statement (MariaDB's 64) or of SELECTs nested through the CTEs (SQLite's
    128, ClickHouse's 64, Spark's 40: recsql/dialects.py): every step and the final statement keep to it, and
    running the steps as tables gives the whole statement's row (on DuckDB)."""
    import duckdb
    sql, limit = case
    steps, final = split(sql, "duckdb", "t", 0 if deep else limit, limit if deep else 0)
    for text in [*(body for _, body in steps), final]:
        found = sqlglot.parse_one(text, read="duckdb").args.get("with_")
        if deep:
            tree = sqlglot.parse_one(text, read="duckdb")
            nested: dict[str, int] = {}
            for cte in found.expressions if found else []:
                nested[cte.alias] = nesting(cte.this, nested)[0]
            assert nesting(tree, nested)[0] <= limit, text
        else:
            assert len(found.expressions if found else []) <= limit, text
    con = duckdb.connect()
    for name, body in steps:
        con.execute(f'CREATE TEMP TABLE "{name}" AS {body}')
    assert con.execute(final).fetchall() == duckdb.connect().execute(sql).fetchall()


def test_a_chain_longer_than_the_limit_is_cut_into_pieces_within_it():
    chain = ", ".join(["c0 AS (SELECT 1 AS x)", *(f"c{i} AS (SELECT x + 1 AS x FROM c{i - 1})" for i in range(1, 10))])
    steps, final = split(f"WITH {chain} SELECT x FROM c9", "duckdb", "t", 3)
    assert [name for name, _ in steps] == ["t_0", "t_1"]  # c3, carrying c0..c2, and c7, carrying c4..c6
    assert steps[1][1] == ('WITH c4 AS (SELECT x + 1 AS x FROM "t_0" AS c3), c5 AS (SELECT x + 1 AS x FROM c4), '
                           'c6 AS (SELECT x + 1 AS x FROM c5) SELECT x + 1 AS x FROM c6')
    assert final == ('WITH c8 AS (SELECT x + 1 AS x FROM "t_1" AS c7), c9 AS (SELECT x + 1 AS x FROM c8) '
                     'SELECT x FROM c9')
    steps, final = split(f"WITH {chain} SELECT x FROM c9", "duckdb", "t", 0, 3)  # at most 3 nested SELECTs
    assert [name for name, _ in steps] == ["t_0", "t_1", "t_2"]  # c2 (nesting c0, c1 and itself), c5, c8
    assert steps[0][1] == ("WITH c0 AS (SELECT 1 AS x), c1 AS (SELECT x + 1 AS x FROM c0) "
                           "SELECT x + 1 AS x FROM c1")
    assert final == 'WITH c9 AS (SELECT x + 1 AS x FROM "t_2" AS c8) SELECT x FROM c9'


def test_a_datafusion_step_unioning_tables_registered_from_two_dataframes_is_kept():
    """Tables registered from DataFrames carry pandas' schema metadata, each its own; a step that unions two of them
    yields batches whose metadata differ, and DataFusion's in-memory table refused them ("Mismatch between schema
    and batches": every metric at @100, whose item categories union items and item features). The step's rows are
    kept without metadata, and the statement gives its rows."""
    with ExitStack() as stack:
        engine = start("datafusion", stack)
        engine.load(pd.DataFrame({"n": [1, 2]}), name="a_in")
        engine.load(pd.DataFrame({"n": [3], "extra": ["x"]}), name="b_in")
        statement = ("WITH both_ AS (SELECT n FROM a_in UNION ALL SELECT n FROM b_in) "
                     "SELECT x.n FROM both_ AS x JOIN both_ AS y ON x.n = y.n")  # both_ read twice: a step
        with runner_for(engine.con) as runner:
            made = _recorded(runner)
            assert _rows(fetch_in_steps(runner, statement)) == [(1,), (2,), (3,)]
            assert len(made) == 1


def test_a_spark_failure_names_the_java_exception_not_pysparks_first_line():
    """A statement Spark's analyser gives up on (alpha_ndcg@15 run whole: "Max iterations (100) reached for batch
    Resolution") raises a Py4JJavaError whose first line is "An error occurred while calling o34.sql."; the runner's
    error names the Java exception and its message instead."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.9, 0.8]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [2], "relevance": [1.0]})
    with ExitStack() as stack:
        engine = start("spark", stack)
        names = [engine.load(frame) for frame in (recs, truth, truth.assign(intent="a"))]
        sql = recsql.to_sql(names[0], names[1], ["alpha_ndcg@15"], intents=names[2], dialect="spark")
        with runner_for(engine.con) as runner:
            with pytest.raises(Exception) as raised:
                engine.con.sql(sql).collect()  # run whole, as recsql's runner no longer does
            assert str(raised.value).startswith("An error occurred while calling")
            message = str(runner.failed(raised.value))
    assert message.startswith("the evaluation query failed on Spark SQL: java.lang.RuntimeException: Max iterations "
                              "(100) reached for batch Resolution"), message
