"""The MLflow integration (recsql/mlflow_log.py, recsql/mlflow_evaluator.py) against a real local
tracking store (SQLite, artifacts in the test's folder): what ``log_evaluation`` and
``log_comparison`` log is read back with ``MlflowClient`` (metrics, params, the per-user table, the
SQL, the report), and ``mlflow.models.evaluate(..., evaluators="recsql")``, found through the entry
point, gives recsql.evaluate's numbers. mlflow is imported at the top: without it the tests fail."""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow import MlflowClient

import recsql
from recsql.errors import RecsqlError

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
RECS, TRUTH = pd.read_parquet(DATA / "recs.parquet"), pd.read_parquet(DATA / "truth.parquet")
METRICS = ["ndcg@10", "P@5", "map(denominator=relevant)@10"]
NAMES = {"ndcg@10": "ndcg_at_10", "P@5": "precision_at_5", "map(denominator=relevant)@10": "map_denominator_relevant_at_10"}


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """One SQLite tracking store for the module (made once: its tables take seconds)."""
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}")


@pytest.fixture(autouse=True)
def store(database, tmp_path, monkeypatch):
    """A fresh experiment of the store for each test, its artifacts in the test's folder; no run left active."""
    monkeypatch.chdir(tmp_path)
    mlflow.set_experiment(experiment_id=MlflowClient().create_experiment(
        tmp_path.name, artifact_location=(tmp_path / "artifacts").as_uri()))
    yield
    while mlflow.active_run():
        mlflow.end_run()


@pytest.fixture(scope="module")
def evaluation():
    return recsql.evaluate(RECS, TRUTH, METRICS, run_cols="model")


def artifact(run_id: str, path: str) -> str:
    return Path(MlflowClient().download_artifacts(run_id, path)).read_text(encoding="utf-8")


def test_log_evaluation_logs_the_summary_tables_sql_report_and_params(evaluation):
    with mlflow.start_run() as run:
        logged = recsql.log_evaluation(evaluation)
    data = MlflowClient().get_run(run.info.run_id).data
    assert data.metrics == logged
    for _, row in evaluation.summary.iterrows():
        for metric in METRICS:
            assert data.metrics[f"{NAMES[metric]}/{row['model']}"] == row[metric]
        for count in ("n_users", "users_without_recs", "recs_users_without_truth"):
            assert data.metrics[f"{count}/{row['model']}"] == row[count]
    assert len(data.metrics) == 2 * (len(METRICS) + 3)
    assert data.params == {**{f"recsql.metric.{NAMES[m]}": m for m in METRICS}, "recsql.version": recsql.__version__,
                           "recsql.engine": "DuckDB", "recsql.metrics": ", ".join(METRICS), "recsql.run_cols": "model",
                           "recsql.convention": "recsql", "recsql.ties": "item_id", "recsql.population": "relevant"}
    per_user = pd.read_csv(io.StringIO(artifact(run.info.run_id, "recsql/per_user.csv")))
    pd.testing.assert_frame_equal(per_user, evaluation.per_user, check_dtype=False)
    assert artifact(run.info.run_id, "recsql/query.sql") == evaluation.sql
    html = artifact(run.info.run_id, "recsql/report.html")
    assert html.startswith("<!DOCTYPE html>") and "ndcg@10" in html
    names = json.loads(artifact(run.info.run_id, "recsql/names.json"))
    assert names["precision_at_5/popular"] == {"column": "P@5", "run": "popular"}


def test_without_an_active_run_one_is_started_and_left_active_as_mlflow_does(evaluation):
    assert mlflow.active_run() is None
    recsql.log_evaluation(evaluation, report=False)
    run = mlflow.active_run()
    assert run is not None
    artifacts = {a.path for a in MlflowClient().list_artifacts(run.info.run_id, "recsql")}
    assert artifacts == {"recsql/per_user.csv", "recsql/query.sql", "recsql/names.json"}


def test_one_run_is_logged_without_a_run_part_and_a_prefix_keeps_two_evaluations_apart():
    one = recsql.evaluate(RECS[RECS["model"] == "popular"], TRUTH, ["ndcg@10", "recall@20"])
    with mlflow.start_run() as run:
        recsql.log_evaluation(one, prefix="val_", report=False)
        recsql.log_evaluation(one, prefix="test_", report=False)
    metrics = MlflowClient().get_run(run.info.run_id).data.metrics
    for prefix in ("val_", "test_"):
        assert metrics[f"{prefix}ndcg_at_10"] == one.summary["ndcg@10"][0]
        assert metrics[f"{prefix}recall_at_20"] == one.summary["recall@20"][0]
        assert artifact(run.info.run_id, f"recsql/{prefix}/query.sql") == one.sql


def test_log_comparison_logs_the_pairs_runs_tables_and_report(evaluation):
    comparison = evaluation.compare(baseline="popular", resamples=99)
    with mlflow.start_run() as run:
        recsql.log_evaluation(evaluation, report=False)
        logged = recsql.log_comparison(comparison, evaluation=evaluation)
    data = MlflowClient().get_run(run.info.run_id).data
    for _, row in comparison.tests.iterrows():
        head = f"{NAMES[row['metric']]}/personal-vs-popular"
        for column in ("mean_diff", "ci_low", "ci_high", "p_t", "p_t_adj", "p_wilcoxon_adj", "p_randomization_adj"):
            assert data.metrics[f"{head}.{column}"] == logged[f"{head}.{column}"] == row[column]
    for _, row in comparison.runs.iterrows():
        assert data.metrics[f"{NAMES[row['metric']]}/{row['run']}.ci_low"] == row["ci_low"]
        assert math.isclose(data.metrics[f"{NAMES[row['metric']]}/{row['run']}.mean"],
                            data.metrics[f"{NAMES[row['metric']]}/{row['run']}"], rel_tol=1e-12)
    assert data.params["recsql.compare.baseline"] == "popular" and data.params["recsql.compare.resamples"] == "99"
    tests = pd.read_csv(io.StringIO(artifact(run.info.run_id, "recsql/tests.csv")))
    pd.testing.assert_frame_equal(tests, comparison.tests, check_dtype=False)
    runs = pd.read_csv(io.StringIO(artifact(run.info.run_id, "recsql/runs.csv")))
    pd.testing.assert_frame_equal(runs, comparison.runs, check_dtype=False)
    assert artifact(run.info.run_id, "recsql/comparison.sql") == comparison.sql
    assert "personal" in artifact(run.info.run_id, "recsql/report.html")


def test_runs_of_several_columns_go_by_their_label_and_names_that_collide_are_refused():
    recs = RECS.assign(day=1)
    two = recsql.evaluate(recs, TRUTH, ["ndcg@10"], run_cols=["model", "day"])
    with mlflow.start_run() as run:
        recsql.log_evaluation(two, report=False)
    metrics = MlflowClient().get_run(run.info.run_id).data.metrics
    assert metrics["ndcg_at_10/model_popular_day_1"] == two.summary["ndcg@10"][two.summary["model"] == "popular"].item()
    clash = recsql.evaluate(RECS.replace({"model": {"personal": "a b", "popular": "a/b"}}), TRUTH, ["ndcg@10"],
                            run_cols="model")
    with mlflow.start_run(), pytest.raises(RecsqlError, match=r"^log_evaluation: column 'n_users', run 'a b' and column 'n_users', "
                                                r"run 'a/b' would both be logged as the MLflow metric 'n_users/a_b'.*"
                                                r"rename the runs"):
        recsql.log_evaluation(clash, report=False)


def test_a_prefix_mlflow_cannot_name_is_refused(evaluation):
    with pytest.raises(RecsqlError, match=r"prefix='val@'.*e.g. prefix='val_'"):
        recsql.log_evaluation(evaluation, prefix="val@")


def test_the_evaluator_is_found_through_the_entry_point():
    assert "recsql" in mlflow.models.list_evaluators()


def test_mlflow_evaluate_with_the_predictions_column_gives_recsql_numbers(evaluation):
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(data=RECS, model_type="ranking", evaluators="recsql", predictions="score",
                                        evaluator_config={"truth": TRUTH, "metrics": METRICS, "run_cols": "model"})
    stored = MlflowClient().get_run(run.info.run_id).data.metrics
    for _, row in evaluation.summary.iterrows():
        for metric in METRICS:
            assert result.metrics[f"{NAMES[metric]}/{row['model']}"] == stored[f"{NAMES[metric]}/{row['model']}"] \
                == row[metric]
    pd.testing.assert_frame_equal(result.artifacts["per_user"].content, evaluation.per_user)
    sql = result.artifacts["sql"].content  # names the DataFrame as registered: not evaluation.sql's name
    assert sql == artifact(run.info.run_id, "recsql/query.sql") and sql.startswith("/* recsql")
    assert "ndcg@10" in result.artifacts["report"].content


def test_mlflow_evaluate_with_a_model_and_targets_scores_the_rows_with_the_model():
    rows = RECS[RECS["model"] == "popular"].drop(columns="model").merge(TRUTH, on=["user_id", "item_id"], how="left")
    rows["relevance"] = rows["relevance"].fillna(0)
    expected = recsql.evaluate(rows, rows, ["ndcg@5", "P@3"])  # the rows' own scores and grades
    result = mlflow.models.evaluate(lambda frame: frame["score"] * 2, data=rows.drop(columns="relevance")
                                    .assign(label=rows["relevance"]), model_type="ranking", targets="label",
                                    evaluators="recsql", evaluator_config={"metrics": ["ndcg@5", "P@3"]})
    assert result.metrics["ndcg_at_5"] == expected.summary["ndcg@5"][0]
    assert result.metrics["precision_at_3"] == expected.summary["P@3"][0]


def test_mlflow_evaluate_refuses_a_config_without_metrics_or_truth():
    with pytest.raises(RecsqlError, match=r"needs the metrics: evaluator_config=\{'metrics'"):
        mlflow.models.evaluate(data=RECS, model_type="ranking", evaluators="recsql", evaluator_config={"truth": TRUTH})
    with pytest.raises(RecsqlError, match=r"needs the truth: evaluator_config=\{'truth'"):
        mlflow.models.evaluate(data=RECS, model_type="ranking", evaluators="recsql",
                               evaluator_config={"metrics": ["ndcg@10"], "run_cols": "model"})
