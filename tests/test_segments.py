"""Segments (docs/guide/populations.md, "Segments"): ``segments=`` evaluates each run within each user
segment. The oracle is independent of the segment code: for each segment, recs and truth are filtered
to its users with pandas and evaluated without segments; the segmented result's rows must equal
those, in evaluate, in to_sql's statement run on DuckDB, on the command line and in a dbt model.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import jinja2
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from support.frames import assert_same_values
from recsql.dbt import generate

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["ndcg@10", "map@10", "recall@2", "mrr@10", "precision@2", "coverage@10", "novelty@10"]

RECS = pd.DataFrame({
    "model": ["A"] * 10 + ["B"] * 10,
    "user_id": [1, 1, 2, 2, 3, 3, 4, 4, 5, 5] * 2,
    "item_id": [10, 11, 10, 12, 11, 13, 14, 10, 12, 11,
                11, 10, 12, 10, 13, 11, 10, 14, 11, 15],
    "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.9, 0.1] * 2,
})
# user 6 has truth and no recommendation; user 5 has recommendations and no relevant truth item
TRUTH = pd.DataFrame({"user_id": [1, 2, 3, 3, 4, 5, 6],
                      "item_id": [11, 12, 13, 10, 14, 12, 10],
                      "relevance": [1, 2, 1, 1, 1, 0, 1]})
SEGMENTS = pd.DataFrame({"user_id": [1, 2, 3, 4, 5, 6], "country": ["BR", "BR", "US", "US", "BR", "US"]})
CATALOG = pd.DataFrame({"item_id": range(10, 20)})
INTERACTIONS = pd.DataFrame({"user_id": [1, 2, 3, 7, 7], "item_id": [10, 10, 11, 12, 13]})
SIDE = {"catalog": CATALOG, "interactions": INTERACTIONS}


def _oracle(recs, truth, segments, metrics, run_cols=("model",), **options):
    """Each segment's rows from an evaluation of its users' recs and truth alone, the segment columns
    after the run columns; summary and per-user rows in run, segment, user order."""
    columns = [c for c in segments.columns if c != "user_id"]
    summaries, per_users = [], []
    for values, group in segments.groupby(columns, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        users = set(group["user_id"])
        result = recsql.evaluate(recs[recs["user_id"].isin(users)], truth[truth["user_id"].isin(users)], metrics,
                                 run_cols=list(run_cols), **options)
        for frame, out in ((result.summary, summaries), (result.per_user, per_users)):
            frame = frame.copy()
            for i, (column, value) in enumerate(zip(columns, values)):
                frame.insert(len(run_cols) + i, column, value)
            out.append(frame)
    keys = [*run_cols, *columns]
    summary = pd.concat(summaries).sort_values(keys).reset_index(drop=True)
    per_user = pd.concat(per_users).sort_values([*keys, "user_id"]).reset_index(drop=True)
    return summary, per_user


def _sorted(frame, keys):
    return frame.sort_values(keys).reset_index(drop=True)


def test_each_run_and_segment_equals_an_evaluation_of_the_segment_alone():
    result = recsql.evaluate(RECS, TRUTH, METRICS, run_cols="model", segments=SEGMENTS, **SIDE)
    summary, per_user = _oracle(RECS, TRUTH, SEGMENTS, METRICS, **SIDE)
    assert list(result.summary.columns[:2]) == ["model", "country"]
    assert list(result.summary.columns) == list(summary.columns)
    assert list(result.per_user.columns) == list(per_user.columns)
    assert_same_values(result.summary, summary, "summary")
    assert_same_values(result.per_user, per_user, "per_user")
    # the numbers: Brazil's population is Brazil's users with a relevant truth item (1 and 2)
    brazil = result.summary[(result.summary["model"] == "A") & (result.summary["country"] == "BR")].iloc[0]
    assert brazil["n_users"] == 2
    rows = result.per_user[(result.per_user["country"] == "BR") & result.per_user["ndcg@10"].notna()]
    assert set(rows["user_id"]) == {1, 2}  # user 5 is there for the list metrics (novelty), not for ndcg


def test_the_population_rules_apply_within_each_segment():
    for population in ("intersection", "judged"):
        result = recsql.evaluate(RECS, TRUTH, ["ndcg@10", "recall@2"], run_cols="model", segments=SEGMENTS,
                                 population=population)
        summary, per_user = _oracle(RECS, TRUTH, SEGMENTS, ["ndcg@10", "recall@2"], population=population)
        assert_same_values(result.summary, summary, population)
        assert_same_values(result.per_user, per_user, population)


def test_segments_without_runs_and_with_two_segment_columns():
    segments = SEGMENTS.assign(cohort=["new", "old", "new", "new", "old", "new"])
    only = segments[["user_id", "cohort", "country"]]
    result = recsql.evaluate(RECS[RECS["model"] == "A"], TRUTH, ["ndcg@10", "map@10"], segments=only)
    summary, per_user = _oracle(RECS[RECS["model"] == "A"].drop(columns="model"), TRUTH, only, ["ndcg@10", "map@10"],
                                run_cols=())
    assert list(result.summary.columns[:2]) == ["cohort", "country"]
    assert_same_values(result.summary, summary, "summary")
    assert_same_values(result.per_user, per_user, "per_user")
    # segment_cols picks columns of segments: the others are not read
    picked = recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=segments, segment_cols="country")
    want, _ = _oracle(RECS, TRUTH, SEGMENTS, ["ndcg@10"])
    assert_same_values(picked.summary, want, "segment_cols")


def test_truth_with_the_run_columns_is_segmented_too():
    truth = pd.concat([TRUTH.assign(model="A"), TRUTH[TRUTH["user_id"] != 1].assign(model="B")])
    result = recsql.evaluate(RECS, truth, ["ndcg@10", "recall@2"], run_cols="model", segments=SEGMENTS)
    for model in ("A", "B"):
        summary, per_user = _oracle(RECS[RECS["model"] == model], truth[truth["model"] == model], SEGMENTS,
                                    ["ndcg@10", "recall@2"])
        assert_same_values(result.summary[result.summary["model"] == model].reset_index(drop=True), summary, model)
        assert_same_values(result.per_user[result.per_user["model"] == model].reset_index(drop=True), per_user, model)


@pytest.mark.parametrize("segments, words", [
    (SEGMENTS[SEGMENTS["user_id"] != 3], ["1 user(s) of recs or truth have no row in segments"]),
    (SEGMENTS[SEGMENTS["user_id"] != 6], ["1 user(s)", "no row in segments"]),  # a truth user only
    (SEGMENTS.assign(country=lambda s: s["country"].where(s["user_id"] != 2)),
     ["1 row(s) have a NULL segment column ('country')"]),
    (pd.concat([SEGMENTS, SEGMENTS.iloc[[0]].assign(country="US")]), ["1 extra row(s) give a user a second segment"]),
    (pd.concat([SEGMENTS, SEGMENTS.iloc[[0]]]), ["second segment"]),
    (SEGMENTS[["user_id"]], ["only the user column 'user_id'"]),
    (SEGMENTS.rename(columns={"country": "model"}), ["'model' is also a run column"]),
    (SEGMENTS.rename(columns={"country": "n_users"}), ["segment_cols", "'n_users' is named like a column"]),
])
def test_segment_mistakes_are_refused(segments, words):
    with pytest.raises(recsql.RecsqlError) as raised:
        recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=segments)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


@pytest.mark.parametrize("segments, words", [
    (SEGMENTS.assign(country=lambda s: s["country"].where(s["user_id"] != 2)),
     ["1 row(s) have a NULL segment column ('country')"]),
    (SEGMENTS[SEGMENTS["user_id"] != 3], ["1 user(s) of the population have no row in segments"]),
    (SEGMENTS.astype({"user_id": str}), ["segments column 'user_id'", "VARCHAR"]),  # blames segments, not truth
])
def test_compare_refuses_segment_mistakes_naming_segments(segments, words):
    with pytest.raises(recsql.RecsqlError) as raised:
        recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=segments, resamples=10)
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


def test_a_segment_column_that_is_missing_is_named():
    with pytest.raises(recsql.RecsqlError, match="segments .* has no column 'region'.*segment_cols="):
        recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=SEGMENTS, segment_cols=["region"])


def test_compare_compares_within_the_segment_columns_named(tmp_path):
    """segment_cols picks the segment columns of segments in compare as in evaluate (it was left unread, and
    every column of segments split the users); named without segments, it is refused by both, not ignored."""
    wide = SEGMENTS.assign(age=SEGMENTS["user_id"] % 2)
    picked = recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=wide, segment_cols="country",
                            resamples=20)
    alone = recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=SEGMENTS, resamples=20)
    pd.testing.assert_frame_equal(picked.runs, alone.runs)
    pd.testing.assert_frame_equal(picked.tests, alone.tests)
    both = recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=wide, resamples=20)
    assert list(both.runs.columns[:2]) == ["country", "age"]
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model")  # Evaluation.compare takes it too
    pd.testing.assert_frame_equal(evaluation.compare(segments=wide, segment_cols=["country"], resamples=20).runs,
                                  evaluation.compare(segments=SEGMENTS, resamples=20).runs)
    for call in (recsql.compare, recsql.evaluate):
        with pytest.raises(recsql.RecsqlError, match=r"segment_cols=\['country'\] names columns of segments, and no "
                                                     r"segments were given: pass segments= too"):
            call(RECS, TRUTH, ["ndcg@10"], run_cols="model", segment_cols="country")
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    TRUTH.to_csv(tmp_path / "truth.csv", index=False)
    wide.to_csv(tmp_path / "users.csv", index=False)
    args = ["compare", "recs.csv", "truth.csv", "-m", "ndcg@10", "--run-col", "model", "--resamples", "20",
            "--format", "csv", "--runs"]
    done = _cli(*args, "--segments", "users.csv", "--segment-col", "country", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    printed = pd.read_csv(io.StringIO(done.stdout))
    assert list(printed.columns[:2]) == ["country", "run"] and len(printed) == len(alone.runs)
    done = _cli(*args, "--segment-col", "country", cwd=tmp_path)
    assert done.returncode == 2 and "--segment-col country names columns of segments" in done.stderr \
        and "pass --segments too" in done.stderr, done.stderr


def _duckdb_tables(**frames):
    con = duckdb.connect()
    for name, frame in frames.items():
        con.register(name, frame)
    return con


def test_to_sql_renders_the_same_evaluation():
    con = _duckdb_tables(recs=RECS, truth=TRUTH, segs=SEGMENTS, catalog=CATALOG, interactions=INTERACTIONS)
    result = recsql.evaluate(RECS, TRUTH, METRICS, run_cols="model", segments=SEGMENTS, **SIDE)
    for output, want in (("summary", result.summary), ("per_user", result.per_user)):
        sql = recsql.to_sql(metrics=METRICS, recs="recs", truth="truth", catalog="catalog", interactions="interactions",
                            segments="segs", segment_cols=["country"], run_cols="model", output=output)
        got = con.sql(sql).df()
        if output == "summary":
            assert (got[["users_without_segment", "segment_duplicate_users"]] == 0).all().all()
        assert_same_values(got[list(want.columns)], want, output)
    # a user without a segment: the rendered statement counts it
    con = _duckdb_tables(recs=RECS, truth=TRUTH, segs=SEGMENTS[SEGMENTS["user_id"] > 2])
    got = con.sql(recsql.to_sql(metrics=["ndcg@10"], segments="segs", segment_cols="country", run_cols="model")).df()
    assert (got["users_without_segment"] == 2).all()
    with pytest.raises(recsql.RecsqlError, match="segment_cols=\\['country'\\]"):
        recsql.to_sql(metrics=["ndcg@10"], segments="segs", run_cols="model")


@pytest.mark.parametrize("dialect", sorted(__import__("recsql.dialects", fromlist=["x"]).DIALECTS))
def test_every_dialect_renders_segments_and_parses_back(dialect):
    """The segmented statement renders in every dialect and sqlglot reads it back (the executed engines
    run it in tests/test_engines.py's way only on DuckDB here: the numbers are DuckDB's above)."""
    import sqlglot
    from recsql.dialects import dialect as spec
    for output in ("summary", "per_user"):
        sql = recsql.to_sql(metrics=["ndcg@10", "recall@5"], recs="db.recs", truth="db.truth", segments="db.users",
                            segment_cols=["country"], run_cols="model", output=output, dialect=dialect)
        assert sqlglot.parse_one(sql, read=spec(dialect).sqlglot) is not None


def _cli(*args, cwd):
    """The command line of this checkout (``import recsql`` from the repository root), run in ``cwd``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "recsql", *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_the_command_line_takes_segments(tmp_path):
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    TRUTH.to_csv(tmp_path / "truth.csv", index=False)
    SEGMENTS.assign(cohort="all").to_csv(tmp_path / "segments.csv", index=False)
    done = _cli("evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "-m", "map@10", "--run-col", "model",
                "--segments", "segments.csv", "--segment-col", "country", "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = pd.read_csv(io.StringIO(done.stdout))
    want, _ = _oracle(RECS, TRUTH, SEGMENTS, ["ndcg@10", "map@10"])
    assert_same_values(got[list(want.columns)], want, "cli")
    SEGMENTS[SEGMENTS["user_id"] != 1].to_csv(tmp_path / "some.csv", index=False)
    done = _cli("evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "--run-col", "model", "--segments", "some.csv",
                cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("recsql: error: segments: 1 user(s)"), done.stderr
    done = _cli("sql", "-m", "ndcg@10", "--run-col", "model", "--segments", "segs", cwd=tmp_path)
    assert done.returncode == 2 and "--segment-col country" in done.stderr, done.stderr
    done = _cli("sql", "-m", "ndcg@10", "--run-col", "model", "--segments", "segs", "--segment-col", "country",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    con = _duckdb_tables(recs=RECS, truth=TRUTH, segs=SEGMENTS)
    want, _ = _oracle(RECS, TRUTH, SEGMENTS, ["ndcg@10"])
    assert_same_values(con.sql(done.stdout).df()[list(want.columns)], want, "recsql sql")


def test_a_run_column_that_partitions_the_users_is_warned_about():
    recs = RECS.assign(country=RECS["user_id"].map(dict(zip(SEGMENTS["user_id"], SEGMENTS["country"]))))
    with pytest.warns(recsql.RecsqlWarning, match="run column 'country'.*pass segments="):
        recsql.evaluate(recs, TRUTH, ["ndcg@10"], run_cols=["model", "country"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recsql.evaluate(recs, TRUTH, ["ndcg@10"], run_cols="model")  # every user under every model
        # truth that has the column: each run is judged against its own truth, no trap
        truth = TRUTH.assign(country=TRUTH["user_id"].map(dict(zip(SEGMENTS["user_id"], SEGMENTS["country"]))))
        truth = pd.concat([truth.assign(model="A"), truth.assign(model="B")])
        recsql.evaluate(recs, truth, ["ndcg@10"], run_cols=["model", "country"])
        recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model", segments=SEGMENTS)
    done = subprocess.run([sys.executable, "-c", "import sys, pandas as pd, recsql; recs = pd.read_json(sys.stdin); "
                           "recsql.evaluate(recs, pd.DataFrame({'user_id': [1], 'item_id': [11]}), ['ndcg@10'], "
                           "run_cols=['model', 'country'])"], input=recs.to_json(), capture_output=True, text=True,
                          cwd=ROOT)
    assert "RecsqlWarning" in done.stderr and "segments=" in done.stderr, done.stderr


def test_compare_warns_as_evaluate_does_of_a_run_column_that_partitions_the_users():
    """compare runs the same check on recs (evaluate reads its own per-user rows), on the engine that holds the
    data: here DuckDB and SQLite; a column that names runs does not warn."""
    import sqlite3
    recs = RECS.assign(country=RECS["user_id"].map(dict(zip(SEGMENTS["user_id"], SEGMENTS["country"]))))
    con = sqlite3.connect(":memory:")
    recs.to_sql("recs", con, index=False)
    TRUTH.to_sql("truth", con, index=False)
    for inputs in ((recs, TRUTH, {}), ("recs", "truth", {"con": con})):
        with pytest.warns(recsql.RecsqlWarning, match=r"run column 'country' \(which has 2 within one run of the "
                                                       r"other run columns\).*to compare within each segment") as said:
            recsql.compare(inputs[0], inputs[1], ["ndcg@10"], run_cols=["model", "country"], resamples=10, **inputs[2])
        assert [w.filename for w in said] == [__file__]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            recsql.compare(inputs[0], inputs[1], ["ndcg@10"], run_cols="model", resamples=10, **inputs[2])


def test_a_run_column_the_others_determine_is_not_warned_about(tmp_path):
    """A model's version beside its name is a run column the other determines (one value per model): every user
    is under one value of it within a model, as every user is under one model, but it splits no model's users.
    A country within each model does, and is named, on the command line as ``recsql: warning:``."""
    versioned = RECS.assign(version=RECS["model"].map({"A": "v1", "B": "v7"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recsql.evaluate(versioned, TRUTH, ["ndcg@10"], run_cols=["model", "version"])
    recs = versioned.assign(country=RECS["user_id"].map(dict(zip(SEGMENTS["user_id"], SEGMENTS["country"]))))
    with pytest.warns(recsql.RecsqlWarning, match=r"run column 'country' \(which has 2 within one run of the other") as said:
        recsql.evaluate(recs, TRUTH, ["ndcg@10"], run_cols=["model", "version", "country"])
    assert [w.filename for w in said] == [__file__]  # the caller's line, not recsql's
    recs.to_csv(tmp_path / "recs.csv", index=False)
    TRUTH.to_csv(tmp_path / "truth.csv", index=False)
    done = _cli("evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "--run-col", "model", "--run-col", "country",
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recsql: warning: run_cols: every user of recs appears under one value of the run column 'country'" \
        in done.stderr and "RecsqlWarning" not in done.stderr and ".py:" not in done.stderr, done.stderr


def test_a_dbt_model_takes_segments(tmp_path):
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: p\nversion: '1'\nconfig-version: 2\nprofile: p\n")
    evaluations = [{"name": f"by_country_{output}", "recs": "recs", "truth": "truth", "segments": "segs",
                    "segment_cols": ["country"], "run_cols": ["model"], "metrics": ["ndcg@10", "map@10"],
                    "output": output} for output in ("summary", "per_user")]
    (project / "recsql.yml").write_text(yaml.safe_dump({"adapters": ["duckdb"], "evaluations": evaluations}))
    generate(project)
    summary, per_user = _oracle(RECS, TRUTH, SEGMENTS, ["ndcg@10", "map@10"])
    con = _duckdb_tables(recs=RECS, truth=TRUTH, segs=SEGMENTS)
    for output, want in (("summary", summary), ("per_user", per_user)):
        text = (project / "models" / "recsql" / f"by_country_{output}.sql").read_text()
        got = con.sql(jinja2.Template(text).render(config=lambda **_: "", ref=lambda name: name)).df()
        assert (got[["users_without_segment", "segment_duplicate_users"]] == 0).all().all()
        got = got.rename(columns={"ndcg_at_10": "ndcg@10", "map_at_10": "map@10"})
        assert_same_values(_sorted(got, [c for c in ["model", "country", "user_id"] if c in got])[list(want.columns)],
                           want, output)
    schema = (project / "models" / "recsql").glob("*.yml")
    assert any("users_without_segment" in p.read_text() for p in schema)


@st.composite
def _inputs(draw):
    users = list(range(1, draw(st.integers(2, 6)) + 1))
    rows = draw(st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from(users), st.integers(1, 6),
                                   st.integers(0, 20)), min_size=1, max_size=25,
                         unique_by=lambda r: (r[0], r[1], r[2])))
    truth = draw(st.lists(st.tuples(st.sampled_from(users), st.integers(1, 6), st.integers(0, 2)), min_size=1,
                          max_size=15, unique_by=lambda r: (r[0], r[1])))
    countries = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=len(users), max_size=len(users)))
    return (pd.DataFrame(rows, columns=["model", "user_id", "item_id", "score"]),
            pd.DataFrame(truth, columns=["user_id", "item_id", "relevance"]),
            pd.DataFrame({"user_id": users, "country": countries}))


@settings(max_examples=8, deadline=None)
@given(_inputs())
def test_random_inputs_agree_with_the_oracle(inputs):
    recs, truth, segments = inputs
    metrics = ["ndcg@3", "map@5", "recall@2"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", recsql.RecsqlWarning)  # a segment may have no relevant item
        result = recsql.evaluate(recs, truth, metrics, run_cols="model", segments=segments)
        # a segment's run exists where its users have recommendations (a run is a key present in recs)
        present = segments[segments["country"].isin(segments[segments["user_id"].isin(recs["user_id"])]["country"])]
        summary, per_user = _oracle(recs, truth, present, metrics)
    assert_same_values(result.summary[list(summary.columns)], summary, "summary")
    assert_same_values(result.per_user, per_user, "per_user")
