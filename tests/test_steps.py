"""A statement run in steps (recsql/engines/steps.py), on the engines that run compare's recomputing statement
so (Spark, ClickHouse, DataFusion): the same rows as the statement run whole, every step a temporary table of the session
that shadows no name of the user's, and none left behind, also after a failure. compare's own numbers there:
tests/test_compare.py and tests/test_compare_weighted.py (every engine)."""
from __future__ import annotations

from contextlib import ExitStack

import pandas as pd
import pytest

from recsql.engines import runner_for
from recsql.engines.steps import fetch_in_steps, split
from recsql.errors import RecsqlError
from support.engines import start

STEPPED = ("spark", "clickhouse", "datafusion")

# CTEs read twice, by qualified columns, through a UNION, a LEFT JOIN whose unmatched rows must be NULL (ClickHouse:
# the top-level SETTINGS must reach the step), and a CTE named like a table of the user's (``base``)
STATEMENT = """WITH base AS (SELECT n FROM numbers_in), twice AS (SELECT b.n, b.n * 2 AS m FROM base AS b UNION ALL
SELECT n, n AS m FROM base), joined AS (SELECT t.n, base.n AS k FROM twice AS t LEFT JOIN base ON t.m = base.n)
SELECT joined.n, joined.k FROM joined ORDER BY joined.n, joined.k{settings}"""
SETTINGS = {"clickhouse": " SETTINGS join_use_nulls = 1", "spark": "", "datafusion": ""}


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
        before = engine.tables()
        statement = STATEMENT.format(settings=SETTINGS[name])
        with runner_for(engine.con) as runner:
            assert runner.in_steps
            whole, stepped = _rows(runner.fetch(statement)), _rows(fetch_in_steps(runner, statement))
        # by hand: twice = (n, 2n) and (n, n) for n in 0..3; k is the n equal to m, NULL where m > 3
        assert whole == stepped == [(0, 0), (0, 0), (1, 1), (1, 2), (2, 2), (2, None), (3, 3), (3, None)]
        assert engine.tables() == before
        with runner_for(engine.con) as runner:
            assert _rows(runner.fetch("SELECT x FROM base")) == [(7,)]


@pytest.mark.parametrize("name", STEPPED)
def test_a_failing_step_leaves_no_table_behind(name):
    with ExitStack() as stack:
        engine = start(name, stack)
        engine.load(pd.DataFrame({"n": [0, 1]}), name="numbers_in")
        before = engine.tables()
        statement = ("WITH a AS (SELECT n FROM numbers_in), b AS (SELECT no_such_column FROM a UNION ALL SELECT n FROM a) "
                     "SELECT * FROM b")  # a, read twice, is a step made before b fails
        with runner_for(engine.con) as runner, pytest.raises(RecsqlError, match="the evaluation query failed"):
            fetch_in_steps(runner, statement)
        assert engine.tables() == before


def test_a_cte_read_twice_is_a_step_read_under_its_name_and_one_read_once_stays_a_cte():
    steps, final = split("WITH a AS (SELECT 1 AS x), b AS (SELECT a.x FROM a JOIN a AS a2 ON a.x = a2.x), "
                         "c AS (SELECT 2 AS y), unread AS (SELECT 3 AS z) SELECT b.x FROM b", "duckdb", "__recsql_t")
    assert steps == [("__recsql_t_0", "SELECT 1 AS x")]
    assert final == ('WITH b AS (SELECT a.x FROM "__recsql_t_0" AS a JOIN "__recsql_t_0" AS a2 ON a.x = a2.x) '
                     "SELECT b.x FROM b")
