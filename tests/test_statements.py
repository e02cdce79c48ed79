"""The memoised statement text (recsql/statements.py) is byte for byte what composing and rendering
from scratch gives: on every dialect, for every metric of the registry, both outputs, both layouts,
on a cache hit with other relations than the first call's, for relations that cannot be pasted, and
for the plans evaluate builds on DuckDB and SQLite. The reference is the uncached path itself:
``render(readable(compose(plan, metrics, output), ...), dialect, pretty)`` with the call's own plan."""
from __future__ import annotations

import importlib
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import recsql
from recsql import api, sql_text, statements
from recsql.compose import compose, readable
from recsql.dialects import DIALECTS, render
from recsql.metrics import registry

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
SIDE = dict(items="analytics.items", interactions="analytics.interactions", catalog="analytics.catalog",
            expected_recs="analytics.baseline", item_features="analytics.features", intents="analytics.intents",
            logs="analytics.logs", reward_model="analytics.reward_model", slate_propensity_col="slate_propensity",
            cascade_propensity_col="cascade_propensity")


def every_metric() -> list[str]:
    """Every metric of the registry once, with a cutoff where it takes one."""
    return [name if spec.k_rule == "none" else f"{name}@5" for name, spec in sorted(registry().items())]


@pytest.fixture
def calls(monkeypatch):
    """Each statement_sql call's arguments and result, as evaluate (recsql.api) and to_sql (recsql.sql_text)
    make them."""
    seen = []
    original = statements.statement_and_reads

    def recording_reads(plan, metrics, output="summary", dialect_name="duckdb", pretty=True):
        sql, reads = original(plan, metrics, output, dialect_name, pretty)
        seen.append((plan, list(metrics), output, dialect_name, pretty, sql))
        return sql, reads

    def recording(plan, metrics, output="summary", dialect_name="duckdb", pretty=True):
        return recording_reads(plan, metrics, output, dialect_name, pretty)[0]
    for module in (api, sql_text):
        monkeypatch.setattr(module, "statement_sql", recording)
    monkeypatch.setattr(api, "statement_and_reads", recording_reads)
    return seen


def counted(monkeypatch, module, name: str) -> list:
    """A list that grows by one at each call of ``module.name`` (the function itself still runs)."""
    calls: list = []
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)
    monkeypatch.setattr(module, name, counting)
    return calls


def assert_uncached_equal(seen) -> None:
    assert seen, "no statement was rendered"
    for plan, metrics, output, dialect, pretty, sql in seen:
        uncached = readable(compose(plan, metrics, output=output), plan, metrics, output)
        assert sql == render(uncached, dialect, pretty=pretty), (dialect, output)
        assert statements._TOKEN not in sql


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_metric_every_dialect(calls, dialect):
    for output in ("summary", "per_user"):
        for pretty in (True, False):
            recsql.to_sql(metrics=every_metric(), recs="analytics.recs", truth="analytics.truth", dialect=dialect,
                          output=output, pretty=pretty, run_cols=["model"], duplicates="best", **SIDE)
    assert_uncached_equal(calls)


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "bigquery", "tsql", "spark"])
def test_a_cache_hit_pastes_the_other_call_relations(calls, dialect):
    metrics = ["ndcg@10", "map(denominator=relevant)@10", "novelty@10", "coverage@10"]
    first = recsql.to_sql(metrics=metrics, recs="a.recs", truth="a.truth", items="a.items", interactions="a.seen",
                          dialect=dialect, run_cols="model", text_ids="item_id")
    second = recsql.to_sql(metrics=metrics, recs='"we""ird"."recs table"', truth="b.truth", items="b.items",
                           interactions="b.seen", dialect=dialect, run_cols="model", text_ids="item_id")
    assert first != second and "a.recs" not in second
    assert_uncached_equal(calls)


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark"])
def test_relations_that_span_lines_are_pasted_at_their_indentation(calls, tmp_path, monkeypatch, dialect):
    """A path long enough that the pretty layout wraps its relation over lines is pasted too, its lines
    indented as the line it stands on: the second call composes nothing, and both texts are the
    uncached ones byte for byte (they used to be composed on every call)."""
    composed = counted(monkeypatch, importlib.import_module("recsql.compose.readable"), "compose")
    first, second = (tmp_path / (c * 120) / "recs.parquet" for c in "xy")
    for pretty in (True, False):
        sql = recsql.to_sql(str(first), str(tmp_path / ("t" * 90) / "truth.parquet"), ["ndcg@10", "coverage@10"],
                            dialect=dialect, pretty=pretty, run_cols="model")
        before = len(composed)
        again = recsql.to_sql(str(second), "truth.parquet", ["ndcg@10", "coverage@10"], dialect=dialect,
                              pretty=pretty, run_cols="model")
        assert len(composed) == before and str(first) in sql and str(second) in again
        wrapped = [line for line in sql.splitlines() if str(first) in line and line.strip().startswith("'")]
        assert bool(wrapped) == pretty, sql  # the pretty layout puts the path on a line of its own
    assert_uncached_equal(calls)


def test_options_change_the_statement(calls):
    """A cache key misses nothing the statement depends on: each option gives its own text."""
    texts = {recsql.to_sql("r", "t", ["ndcg@10"], **options) for options in (
        {}, {"threshold": 2}, {"population": "judged"}, {"ties": "item_id_desc"}, {"convention": "trec"},
        {"run_cols": "model"}, {"text_ids": "item_id"}, {"order_type": "BIGINT"}, {"duplicates": "best"},
        {"user_col": "uid"}, {"relevance_col": None})}
    assert len(texts) == 11
    assert_uncached_equal(calls)


def test_evaluate_duckdb_frames_files_and_sqlite(calls, tmp_path):
    recs = pd.read_parquet(DATA / "recs.parquet")
    truth = pd.read_parquet(DATA / "truth.parquet")
    metrics = ["ndcg@10", "map@10", "recall@20", "mrr@10"]
    recsql.evaluate(recs, truth, metrics, run_cols="model")
    recsql.evaluate(str(DATA / "recs.parquet"), str(DATA / "truth.parquet"), metrics, run_cols="model")
    path = tmp_path / "eval.sqlite"
    with sqlite3.connect(path) as con:
        recs.to_sql("recs", con, index=False)
        truth.to_sql("truth", con, index=False)
    con = sqlite3.connect(path)
    try:
        recsql.evaluate("recs", "truth", metrics, run_cols="model", con=con)
    finally:
        con.close()
    assert {dialect for *_, dialect, _, _ in calls} == {"duckdb", "sqlite"}
    assert_uncached_equal(calls)


def test_compare_statements_are_the_uncached_statements(monkeypatch, tmp_path):
    """compare's statement (recsql.comparison.statement_text), memoised the same way: byte for byte the
    statement composed from scratch, with the same input checks, on a hit with other relations (frames,
    then files, files in a folder whose path wraps, then SQLite tables; with and without segments, given
    as a frame or as a file)."""
    from recsql import comparison
    seen = []
    original = comparison.statement_text

    def recording(plan, metrics, settings, kinds, segments, dialect):
        sql, values, reads = original(plan, metrics, settings, kinds, segments, dialect)
        seen.append((plan, list(metrics), settings, kinds, segments, dialect, sql, values))
        return sql, values, reads
    monkeypatch.setattr(comparison, "statement_text", recording)
    recs = pd.read_parquet(DATA / "recs.parquet")
    truth = pd.read_parquet(DATA / "truth.parquet")
    users = sorted(set(recs["user_id"]) | set(truth["user_id"]))
    cohorts = pd.DataFrame({"user_id": users, "cohort": ["odd" if u % 2 else "even" for u in users]})
    options = dict(run_cols="model", baseline="popular", resamples=20)
    metrics = ["ndcg@10", "coverage@10"]
    cohorts_file = tmp_path / "cohorts.parquet"
    cohorts.to_parquet(cohorts_file, index=False)
    for given in ((recs, truth), (str(DATA / "recs.parquet"), str(DATA / "truth.parquet"))):
        recsql.compare(*given, metrics, **options)
        recsql.compare(*given, metrics, segments=cohorts, **options)
    recsql.compare(recs, truth, metrics, segments=str(cohorts_file), **options)  # a file: read in place
    deep = tmp_path / ("d" * 110)  # paths the pretty layout wraps over lines: pasted indented
    deep.mkdir()
    for name in ("recs.parquet", "truth.parquet"):
        shutil.copy(DATA / name, deep / name)
    recsql.compare(str(deep / "recs.parquet"), str(deep / "truth.parquet"), metrics, **options)
    path = tmp_path / "compare.sqlite"
    with sqlite3.connect(path) as con:
        recs.to_sql("recs", con, index=False)
        truth.to_sql("truth", con, index=False)
    con = sqlite3.connect(path)
    try:
        recsql.compare("recs", "truth", metrics, con=con, **options)
    finally:
        con.close()
    assert len(seen) == 7 and len({sql for *_, sql, _ in seen}) == 7
    for plan, metrics, settings, kinds, segments, dialect, sql, values in seen:
        statement, want = comparison.statement_for(plan, metrics, settings, kinds, segments)
        assert sql == render(statement, dialect), dialect
        assert values.checks == want.checks and values.checks
        assert statements._TOKEN not in sql


def test_compare_within_segments_from_a_file_composes_its_statement_once(monkeypatch, tmp_path):
    """Segments given as a file are pasted into the kept statement like the other inputs: a second
    comparison with the same options composes nothing (it used to compose on every call)."""
    from recsql import comparison_sql
    composed = counted(monkeypatch, comparison_sql, "statement_for")
    truth = pd.read_parquet(DATA / "truth.parquet")
    cohorts = tmp_path / "cohorts.parquet"
    pd.DataFrame({"user_id": sorted(set(truth["user_id"])), "cohort": "all"}).to_parquet(cohorts, index=False)
    options = dict(run_cols="model", baseline="popular", resamples=7, segments=str(cohorts))
    first = recsql.compare(str(DATA / "recs.parquet"), str(DATA / "truth.parquet"), ["ndcg@10"], **options)
    before = len(composed)
    again = recsql.compare(str(DATA / "recs.parquet"), str(DATA / "truth.parquet"), ["ndcg@10"], **options)
    assert len(composed) == before
    pd.testing.assert_frame_equal(first.tests, again.tests)
