"""recsql's own in-memory DuckDB (recsql/database.py ``shared``) is opened once per
process and shared by every evaluation without ``con=``: nothing one evaluation registers or sets is
seen by the next, concurrent evaluations give the numbers they give alone, and a forked child
process opens its own."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

import recsql
from recsql.engines.duckdb import shared

RECS = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [10, 11, 10, 12], "score": [0.9, 0.8, 0.7, 0.6]})
TRUTH = pd.DataFrame({"user_id": [1, 2], "item_id": [11, 12]})


def test_nothing_stays_registered_or_set():
    recsql.evaluate(RECS, TRUTH, ["mrr@10"], progress=True)
    with shared.cursor() as cursor:
        assert cursor.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone() == (0,)
        assert cursor.execute("SELECT count(*) FROM duckdb_tables()").fetchone() == (0,)
        assert cursor.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    assert shared._users == 0
    assert recsql.evaluate(RECS, TRUTH, ["mrr@10"]).summary["mrr@10"].tolist() == [0.5]


def test_concurrent_evaluations_keep_their_inputs_apart():
    def run(shift: int) -> float:
        truth = TRUTH.assign(item_id=TRUTH["item_id"] + shift)  # shift 0: both hit at rank 2; else none
        return recsql.evaluate(RECS, truth, ["mrr@10"]).summary["mrr@10"].iloc[0]
    with ThreadPoolExecutor(4) as pool:
        values = list(pool.map(run, [0, 100] * 8))
    assert values == [0.5, 0.0] * 8


def _in_child(queue) -> None:
    queue.put(recsql.evaluate(RECS, TRUTH, ["mrr@10"]).summary["mrr@10"].iloc[0])


def test_a_forked_child_opens_its_own():
    recsql.evaluate(RECS, TRUTH, ["mrr@10"])  # the parent's database is open (closed at the fork, reopened after)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_in_child, args=(queue,))
    child.start()
    child.join(120)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == 0.5
    assert recsql.evaluate(RECS, TRUTH, ["mrr@10"]).summary["mrr@10"].tolist() == [0.5]


def test_warnings_as_errors_and_the_filters_are_left_as_they_were():
    """recsql runs its statements with ``execute`` and converts the rows to Arrow, about which DuckDB 2
    warns (an extra copy of the result): silenced for that conversion alone, so evaluating under
    ``-W error`` works, and concurrent evaluations leave the process's warning filters as they were."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = list(warnings.filters)
        assert recsql.evaluate(RECS, TRUTH, ["mrr@10"]).summary["mrr@10"].tolist() == [0.5]
        with ThreadPoolExecutor(4) as pool:
            values = list(pool.map(lambda _: recsql.evaluate(RECS, TRUTH, ["mrr@10"]).summary["mrr@10"].iloc[0],
                                   range(8)))
        assert values == [0.5] * 8
        assert warnings.filters == before
