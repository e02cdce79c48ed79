"""An input given that no metric reads is named in a warning (recsql/unread_inputs.py): by evaluate and compare,
on DuckDB and on SQLite, on the command line in its words, and once by the report, which evaluates and
compares; an input a metric reads, or that its checks read, is not named, and no value changes."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import recsql
from recsql.cli import main

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
RECS = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [1, 2, 1, 3], "score": [0.9, 0.8, 0.7, 0.6]})
TRUTH = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 3], "relevance": [1, 1]})
INTERACTIONS = pd.DataFrame({"user_id": [3, 3, 4], "item_id": [1, 2, 1]})
EXPECTED = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [2, 3, 1], "score": [0.5, 0.4, 0.3]})
UNREAD = "is given, but no metric asked reads it"


def _said(call) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, recsql.RecsqlWarning)]


def test_evaluate_names_the_inputs_no_metric_reads_and_no_value_moves():
    alone, said = _said(lambda: recsql.evaluate(RECS, TRUTH, ["ndcg@2", "recall@2"]))
    assert said == []
    given, said = _said(lambda: recsql.evaluate(RECS, TRUTH, ["ndcg@2", "recall@2"], interactions=INTERACTIONS,
                                                expected_recs=EXPECTED))
    assert said == ["interactions= (CLI: --interactions) and expected_recs= (CLI: --expected-recs) are given, but no "
                    "metric asked reads them: no value depends on them; leave them out, or ask a metric that reads them"]
    pd.testing.assert_frame_equal(given.summary, alone.summary)


def test_an_input_a_metric_reads_is_not_named_and_the_other_is():
    _, said = _said(lambda: recsql.evaluate(RECS, TRUTH, ["novelty@2"], interactions=INTERACTIONS))
    assert said == []
    # unexpectedness reads the expected lists when both are given: the interactions are unread
    _, said = _said(lambda: recsql.evaluate(RECS, TRUTH, ["unexpectedness@2"], interactions=INTERACTIONS,
                                            expected_recs=EXPECTED))
    assert len(said) == 1 and said[0].startswith(f"interactions= (CLI: --interactions) {UNREAD}")


def test_compare_names_them_too():
    runs = pd.concat([RECS.assign(model="a"), RECS.assign(model="b", score=RECS["score"][::-1].to_numpy())])
    _, said = _said(lambda: recsql.compare(runs, TRUTH, ["ndcg@2"], run_cols="model", interactions=INTERACTIONS))
    assert len(said) == 1 and said[0].startswith(f"interactions= (CLI: --interactions) {UNREAD}")
    _, said = _said(lambda: recsql.compare(runs, TRUTH, ["ndcg@2", "novelty@2"], run_cols="model",
                                           interactions=INTERACTIONS))
    assert said == []


def test_on_sqlite_the_tables_read_are_the_statement_s():
    con = sqlite3.connect(":memory:")
    for name, frame in {"recs": RECS, "truth": TRUTH, "seen": INTERACTIONS}.items():
        frame.to_sql(name, con, index=False)
    _, said = _said(lambda: recsql.evaluate("recs", "truth", ["precision@2"], interactions="seen", con=con))
    assert len(said) == 1 and said[0].startswith(f"interactions= (CLI: --interactions) {UNREAD}")
    result, said = _said(lambda: recsql.evaluate("recs", "truth", ["novelty@2"], interactions="seen", con=con))
    assert said == [] and result.summary["novelty@2"].notna().all()


def test_the_command_line_says_it_once_in_its_words(tmp_path):
    recs, truth, expected = (str(DATA / "recs.parquet"), str(DATA / "truth.parquet"), str(DATA / "recs.parquet"))
    done = subprocess.run([sys.executable, "-m", "recsql", "evaluate", recs, truth, "-m", "ndcg@10", "--run-col", "model",
                           "--expected-recs", expected], capture_output=True, text=True, check=True)
    assert done.stderr.startswith("recsql: warning: expected_recs= (CLI: --expected-recs) is given, but no metric asked "
                                  "reads it: no value depends on it; leave it out, or ask a metric that reads it\n")
    assert done.stderr.count("warning") == 1
    out = tmp_path / "report.html"
    _, said = _said(lambda: main(["report", recs, truth, "-m", "ndcg@10", "--run-col", "model", "--expected-recs",
                                  expected, "--out", str(out), "--quiet"]))
    assert [s for s in said if UNREAD in s] == [
        "expected_recs= (CLI: --expected-recs) is given, but no metric asked reads it: no value depends on it; leave "
        "it out, or ask a metric that reads it"]
    assert "is given, but no metric asked reads it" in out.read_text()  # on the page, with evaluate's warnings
