"""The statements recsql keeps on disk (recsql/statements.py): a cold process reads the text a fresh
compose gives, byte for byte; a change of any template or Python source is another folder (a stale
statement cannot be read); a damaged or foreign file is ignored; ``RECSQL_CACHE_DIR=off`` writes
nothing; evaluate's frames are the same whether the statement came from disk or was composed; and a
full folder evicts its least recently used statements, keeps the newest, and stays whole and bounded
when several processes write into it at once."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st
import sqlglot
from sqlglot import exp

import recsql
from recsql import api, statements
from recsql.compose import compose, readable
from recsql.dialects import render

REPO = Path(__file__).resolve().parent.parent
METRICS = ["ndcg@10", "map@10", "mrr@10", "recall@10", "precision@10", "hit_rate@10"]


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    recs = pd.DataFrame({"model": ["a"] * 6 + ["b"] * 6, "user_id": [1, 1, 1, 2, 2, 2] * 2,
                         "item_id": [10, 11, 12, 10, 13, 14, 12, 11, 10, 14, 13, 15],
                         "score": [0.9, 0.8, 0.7, 0.9, 0.5, 0.5, 0.3, 0.2, 0.1, 0.6, 0.6, 0.1]})
    truth = pd.DataFrame({"user_id": [1, 2, 2, 3], "item_id": [11, 13, 15, 10]})
    return recs, truth


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache folder for this test, and an empty in-process cache."""
    monkeypatch.setenv("RECSQL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(statements, "_cache", type(statements._cache)())
    return tmp_path / "cache"


def files(folder: Path) -> list[Path]:
    return sorted(folder.glob("statements-*/*.json"))


def test_a_statement_is_written_once_and_read_back_as_composed(cache):
    sql = recsql.to_sql("db.recs", "db.truth", METRICS, run_cols="model")
    written = files(cache)
    assert len(written) == 1 and written[0].parent == statements.cache_dir()
    # another process (nothing in memory) reads it from disk: the same text
    code = ("import recsql, sys; sys.stdout.write(recsql.to_sql('db.recs', 'db.truth', %r, run_cols='model'))"
            % (METRICS,))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert other == sql
    assert files(cache) == written
    # and it is what composing from scratch gives, for other relations too
    statements._cache.clear()
    again = recsql.to_sql("other.recs_b", "x.truth", METRICS, run_cols="model")
    plan_sql = recsql.to_sql("other.recs_b", "x.truth", METRICS, run_cols="model", pretty=False)
    assert '"other"."recs_b"' in again and '"x"."truth"' in again and statements._TOKEN not in again
    assert plan_sql != again  # the layout is part of the key


def test_disk_text_equals_uncached_compose(cache, monkeypatch):
    seen = []
    original = statements.statement_and_reads

    def recording(plan, metrics, output="summary", dialect_name="duckdb", pretty=True):
        text, reads = original(plan, metrics, output, dialect_name, pretty)
        seen.append((plan, list(metrics), output, dialect_name, pretty, text))
        return text, reads
    monkeypatch.setattr(api, "statement_and_reads", recording)
    recs, truth = frames()
    api.evaluate(recs, truth, METRICS, run_cols=["model"])
    statements._cache.clear()  # the second call reads the disk
    api.evaluate(recs, truth, METRICS, run_cols=["model"])
    assert len(seen) == 2 and seen[0][-1].count("__recsql_recs_") == seen[1][-1].count("__recsql_recs_") > 0
    for plan, metrics, output, dialect, pretty, text in seen:
        uncached = readable(compose(plan, metrics, output=output), plan, metrics, output)
        assert text == render(uncached, dialect, pretty=pretty)


def test_frames_are_the_same_from_disk_and_composed(cache, monkeypatch):
    recs, truth = frames()
    monkeypatch.setenv("RECSQL_CACHE_DIR", "off")
    composed = api.evaluate(recs, truth, METRICS, run_cols=["model"])
    assert statements.cache_dir() is None and not cache.exists()
    monkeypatch.setenv("RECSQL_CACHE_DIR", str(cache))
    statements._cache.clear()
    api.evaluate(recs, truth, METRICS, run_cols=["model"])  # writes
    statements._cache.clear()
    from_disk = api.evaluate(recs, truth, METRICS, run_cols=["model"])  # reads
    assert files(cache)
    for a, b in ((composed.summary, from_disk.summary), (composed.per_user, from_disk.per_user)):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert composed.rows_in == from_disk.rows_in == len(recs)
    assert composed.summary["n_users"].tolist() == [3, 3]


def test_a_changed_template_is_another_folder(cache, tmp_path, monkeypatch):
    from recsql import templates
    before = statements.cache_dir()
    copy = tmp_path / "sql"
    shutil.copytree(templates.sql_dir(), copy)
    original = (copy / "ndcg.sql").read_text()

    def digest_with(text: str) -> str:
        (copy / "ndcg.sql").write_text(text)
        templates.read_template.cache_clear()
        statements._source_digest.cache_clear()
        return statements._source_digest()
    monkeypatch.setattr(templates, "sql_dir", lambda: copy)
    try:
        assert digest_with(original + "\n-- changed\n") != before.name.removeprefix("statements-")
        assert digest_with(original) == before.name.removeprefix("statements-")  # the content, not the time
        # once hashed, the process keeps composing from the text it hashed, whatever the file becomes
        kept = templates.read_template("ndcg")
        (copy / "ndcg.sql").write_text(original.replace("ndcg", "something_else"))
        assert templates.read_template("ndcg") == kept
    finally:
        monkeypatch.undo()
        templates.read_template.cache_clear()
        statements._source_digest.cache_clear()
    assert statements._source_digest() == before.name.removeprefix("statements-")


def test_the_digest_covers_the_python_sources_and_sqlglot(monkeypatch, tmp_path):
    before = statements._source_digest()
    package = tmp_path / "recsql"
    shutil.copytree(statements._PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(statements, "_PACKAGE", package)
    statements._source_digest.cache_clear()
    try:
        assert statements._source_digest() == before
        (package / "compose" / "stage.py").write_text((package / "compose" / "stage.py").read_text() + "\n# changed\n")
        statements._source_digest.cache_clear()
        changed = statements._source_digest()
        assert changed != before
        monkeypatch.setattr(sqlglot, "__version__", sqlglot.__version__ + ".other")
        statements._source_digest.cache_clear()
        assert statements._source_digest() not in (before, changed)
    finally:
        statements._source_digest.cache_clear()


def test_a_damaged_or_foreign_file_is_ignored(cache):
    sql = recsql.to_sql("r", "t", ["mrr@10"])
    [path] = files(cache)
    record = json.loads(path.read_text())
    for damaged in ("{not json", json.dumps({**record, "key": record["key"] + " "}),
                    json.dumps({**record, "between": ["SELECT 1"]}), json.dumps([1, 2])):
        path.write_text(damaged)
        statements._cache.clear()
        assert recsql.to_sql("r", "t", ["mrr@10"]) == sql
    # the file is what a cold call reads: with this key, its text is used (so the tests above read the disk)
    path.write_text(json.dumps({**record, "between": ["SELECT 42 FROM ", ""], "order": ["recs"]}))
    statements._cache.clear()
    assert recsql.to_sql("r", "t", ["mrr@10"]) == 'SELECT 42 FROM "r"'
    path.unlink()
    statements._cache.clear()
    assert recsql.to_sql("r", "t", ["mrr@10"]) == sql


def test_an_unwritable_cache_is_not_used(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RECSQL_CACHE_DIR", str(blocker))
    monkeypatch.setattr(statements, "_cache", type(statements._cache)())
    recs, truth = frames()
    result = api.evaluate(recs, truth, ["ndcg@10"], run_cols=["model"])
    assert result.summary["ndcg@10"].notna().all() and blocker.read_text() == "not a folder"


def test_finalize_sql_is_finalize():
    recs, truth = frames()
    from recsql.compose import finalize
    from recsql.dialects import render
    seen = []
    original = api._split

    def recording(plan, metrics, raw, drop):
        seen.append((plan, metrics))
        return original(plan, metrics, raw, drop)
    api._split, saved = recording, api._split
    try:
        api.evaluate(recs, truth, METRICS, run_cols=["model"])
    finally:
        api._split = saved
    plan, metrics = seen[0]
    for output in ("summary", "per_user"):
        assert statements.finalize_sql(plan, metrics, output) == render(
            finalize(plan, metrics, output, typed=True), "duckdb", pretty=False)


@pytest.mark.parametrize("name", ["__recsql_recs_0123456789ab", "t", "A_1"])
def test_quoted_name_is_sqlglot_text(name):
    table = exp.Table(this=exp.to_identifier(name, quoted=True))
    assert statements.quoted_name(table) == table.sql("duckdb") == table.sql("duckdb", pretty=True)


@pytest.mark.parametrize("table", [exp.to_table('"a"."b"'), exp.to_table("plain"), exp.to_table('"we""ird"'),
                                   exp.to_table('"t"').as_("x"), exp.Table(this=exp.to_identifier("t-1", quoted=True))])
def test_quoted_name_leaves_other_tables_to_sqlglot(table):
    assert statements.quoted_name(table) is None


def test_a_full_folder_evicts_the_least_recently_used(cache, monkeypatch):
    """A full folder makes room by removing the statements used longest ago (written or read), so a
    new statement is still kept and one in use is not lost."""
    monkeypatch.setattr(statements, "_MAX_FILES", 4)
    by_k, texts = {}, {}
    for k in (1, 2, 3, 4):
        before = set(files(cache))
        texts[k] = recsql.to_sql("r", "t", [f"map@{k}"])
        (by_k[k],) = set(files(cache)) - before
        os.utime(by_k[k], (1_000_000 + k, 1_000_000 + k))  # written in this order, long ago
    statements._cache.clear()  # a new process: map@1 is read from disk, which marks it used
    assert recsql.to_sql("r", "t", ["map@1"]) == texts[1]
    assert by_k[1].stat().st_mtime > by_k[4].stat().st_mtime
    recsql.to_sql("r", "t", ["map@5"])  # the folder is full: map@2, the least recently used, goes
    left = set(files(cache))
    assert len(left) == 4 and by_k[1] in left and by_k[2] not in left and {by_k[3], by_k[4]} <= left
    monkeypatch.setenv("RECSQL_CACHE_DIR", "off")  # the texts read back are the texts composed
    statements._cache.clear()
    assert texts == {k: recsql.to_sql("r", "t", [f"map@{k}"]) for k in (1, 2, 3, 4)}


def test_a_new_folder_prunes_old_ones(cache):
    cache.mkdir(parents=True)
    old = []
    for i in range(5):
        folder = cache / f"statements-old{i}"
        folder.mkdir()
        (folder / "x.json").write_text("{}")
        os.utime(folder, (1_000_000 + i * 1000, 1_000_000 + i * 1000) if i == 0 else None)
        old.append(folder)
    recsql.to_sql("r", "t", ["ndcg@10"])
    left = sorted(p.name for p in cache.glob("statements-*"))
    assert statements.cache_dir().name in left
    assert not old[0].exists()  # written long ago
    assert len(left) == 1 + statements._KEEP_OTHERS


WRITER = r"""
import json, sys
import recsql
from recsql import statements
statements._MAX_FILES = int(sys.argv[1])
texts = {}
for k in json.loads(sys.argv[2]):
    statements._cache.clear()  # every statement from disk or composed, as in a new process
    texts[k] = recsql.to_sql("r", "t", [f"map@{k}"])
print(json.dumps(texts))
"""


def test_processes_writing_one_full_folder_at_once_leave_it_bounded_and_whole(cache, monkeypatch):
    """Three processes fill a folder of 6 statements past its bound at the same time, each in its own
    order: every file left is a whole statement under its own key (written atomically, evicted
    whole), no temporary file is left, the folder holds no more than its bound and the statements
    the writers were still adding, and every text each process got, and every text read back from the
    folder by a new process, is the text composed without the cache."""
    bound, ks = 6, list(range(1, 13))
    orders = [ks, ks[::-1], ks[6:] + ks[:6]]
    env = {**os.environ, "RECSQL_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(bound), json.dumps(order)], env=env, cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for order in orders]
    results = [writer.communicate(timeout=600) for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0, 0], [err for _, err in results]
    got = [json.loads(out) for out, _ in results]
    (folder,) = cache.glob("statements-*")
    assert not list(folder.glob(".tmp-*"))
    left = files(cache)
    assert 1 <= len(left) <= bound + len(writers) - 1  # each writer evicts before it adds its own statement
    for path in left:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert set(record) == {"key", "between", "order"}
        assert path.stem == hashlib.sha256(record["key"].encode()).hexdigest()[:32]
    read_back = json.loads(subprocess.run([sys.executable, "-c", WRITER, "1000", json.dumps(ks)], env=env, cwd=REPO,
                                          capture_output=True, text=True, check=True, timeout=600).stdout)
    monkeypatch.setenv("RECSQL_CACHE_DIR", "off")
    statements._cache.clear()
    composed = {str(k): recsql.to_sql("r", "t", [f"map@{k}"]) for k in ks}
    assert all(texts == composed for texts in got) and read_back == composed


READER = r"""
import importlib, sys
import recsql
from recsql import statements
def refuse(*args, **kwargs):
    raise AssertionError("composed: the statement was not read from disk")
importlib.import_module("recsql.compose.readable").compose = refuse  # where statements compose
statements._MAX_FILES = int(sys.argv[1])
print(recsql.to_sql("r", "t", [sys.argv[2]]))
"""


def test_a_full_folder_keeps_the_newest_and_a_new_process_reads_it(cache, monkeypatch):
    """Past its bound, the folder still keeps each new statement (it evicts the least recently used
    instead), so the next process reads it rather than composing it: a full cache never costs a
    composition per process."""
    env = {**os.environ, "RECSQL_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", WRITER, "4", json.dumps(list(range(1, 9)))], env=env, cwd=REPO,
                   check=True, capture_output=True, timeout=600)
    assert len(files(cache)) == 4
    newest = subprocess.run([sys.executable, "-c", READER, "4", "map@8"], env=env, cwd=REPO, capture_output=True,
                            text=True, timeout=600)
    assert newest.returncode == 0, newest.stderr
    oldest = subprocess.run([sys.executable, "-c", READER, "4", "map@1"], env=env, cwd=REPO, capture_output=True,
                            text=True, timeout=600)
    assert oldest.returncode != 0 and "was not read from disk" in oldest.stderr  # evicted: it would be composed
    monkeypatch.setenv("RECSQL_CACHE_DIR", "off")
    statements._cache.clear()
    assert newest.stdout == recsql.to_sql("r", "t", ["map@8"]) + "\n"


def _readers() -> list[str]:
    """The file readers recsql.sources writes for a path, which recsql.trees must know to write their text."""
    from recsql import sources, trees
    written = sorted(set(sources._READERS.values()))
    assert written == sorted(trees._READERS)
    return written


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_readers()), st.text(min_size=1, max_size=40))
def test_a_file_reader_is_sqlglot_text(reader, path):
    """The DESCRIBE of a file input is written without sqlglot's DuckDB dialect, as sqlglot writes it (a path it
    cannot write plainly is left to sqlglot), for every reader recsql.sources writes."""
    from recsql.trees import relation_text
    relation = exp.Anonymous(this=reader, expressions=[exp.Literal.string(path)])
    assert relation_text(relation) in (None, relation.sql("duckdb"))
    assert (relation_text(relation) is None) == (not path.isprintable())
    assert relation_text(relation, pretty=True) in (None, relation.sql("duckdb", pretty=True))


@pytest.mark.parametrize("length", range(40, 100, 3))
def test_a_long_path_is_left_to_sqlglot_where_its_pretty_layout_breaks_it(length):
    from recsql.trees import relation_text
    relation = exp.Anonymous(this="read_parquet", expressions=[exp.Literal.string("p" * length)])
    assert relation_text(relation, pretty=True) in (None, relation.sql("duckdb", pretty=True))
