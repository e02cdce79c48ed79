"""recsql as an ``mlflow.evaluate`` evaluator for ranking models: the evaluator named ``recsql``,
registered through the ``mlflow.model_evaluator`` entry point (pyproject.toml), for
``model_type="ranking"``.

The data are recommendation rows, one per (user, item) and run, as :func:`recsql.evaluate` reads
``recs``; the items' order comes from the model or from a column:

- ``model=`` a model (an MLflow model's URI, a pyfunc model or a function): it scores the rows (its
  ``predict`` on the data without the targets column returns one score per row; a DataFrame of
  several columns needs ``predictions=``, the column that holds the scores), and the scores are the
  ``score_col`` (``score`` unless the config names another);
- ``model=None``, ``predictions="score"``: that column of the data is the model's output, ranked as
  ``score_col`` (as ``rank_col`` when the config names it ``rank_col``);
- ``model=None`` and no ``predictions``: the data hold the ``score_col`` (or ``rank_col``) already.

The truth is ``evaluator_config["truth"]`` (a DataFrame, an Arrow table or a file, as evaluate's
``truth``), or ``targets=``, a column of the data holding each row's relevance (its grade, 0 for
none: the truth is then the rows themselves, and a relevant item the list left out is not known).
``evaluator_config["metrics"]`` lists the metrics; its other keys are :func:`recsql.evaluate`'s
options (``run_cols``, ``user_col``, ``convention``, ...) and ``prefix`` and ``report``
(:func:`recsql.mlflow_log.log_evaluation`'s). What is logged, and under which names:
:mod:`recsql.mlflow_log`.

    mlflow.evaluate(data=recs, model_type="ranking", evaluators="recsql", predictions="score",
                    evaluator_config={"truth": truth, "metrics": ["ndcg@10"], "run_cols": "model"})

The class follows MLflow's ``ModelEvaluator`` (``can_evaluate``, ``evaluate``) without deriving from
it, so that this module imports without mlflow; mlflow only calls the two.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from .api import evaluate
from .errors import RecsqlError
from .extras import require
from .mlflow_log import artifact_dir, log_evaluation

MODEL_TYPE = "ranking"
_OWN = ("metrics", "prefix", "report")  # the config's keys, besides truth, that are not evaluate's options


def _scored(model: Any, features: pd.DataFrame, predictions: str | None) -> Any:
    """The model's scores of the rows: one per row."""
    scores = model.predict(features)
    if isinstance(scores, pd.DataFrame):
        if predictions is None and len(scores.columns) != 1:
            raise RecsqlError(f"mlflow.evaluate: the model returns the columns {list(scores.columns)}; pass "
                              "predictions=<the column of scores>")
        scores = scores[predictions] if predictions is not None else scores.iloc[:, 0]
    if len(scores) != len(features):
        raise RecsqlError(f"mlflow.evaluate: the model returned {len(scores)} scores for {len(features)} rows; "
                          "a ranking model scores each (user, item) row")
    return list(scores)


def _recs_and_truth(dataset: Any, model: Any, predictions: str | None, config: dict[str, Any]) -> tuple[Any, Any]:
    """The recommendation rows and the truth, from MLflow's dataset (its features, targets and
    predictions) and the config; ``config`` gains the column the order is read from."""
    recs = dataset.features_data.copy()  # a new frame: the user's data stay as they are
    ranked_by = "rank_col" if "rank_col" in config else "score_col"
    if model is not None:
        recs[config.setdefault(ranked_by, "score")] = _scored(model, dataset.features_data, predictions)
    elif dataset.has_predictions:
        config[ranked_by] = dataset.predictions_name
        recs[dataset.predictions_name] = dataset.predictions_data
    truth = config.pop("truth", None)
    if dataset.has_targets:
        if truth is not None:
            raise RecsqlError("mlflow.evaluate: the truth is given twice, as targets= and as "
                              "evaluator_config['truth']; pass one")
        keys = [config.get("user_col", "user_id"), config.get("item_col", "item_id")]
        runs = config.get("run_cols") or ()
        truth = recs[[*([runs] if isinstance(runs, str) else runs), *keys]].copy()
        truth[config.get("relevance_col") or "relevance"] = dataset.labels_data
    if truth is None:
        raise RecsqlError("mlflow.evaluate(evaluators='recsql') needs the truth: evaluator_config={'truth': "
                          "<a DataFrame or file of (user_id, item_id[, relevance])>, ...}, or targets=<the "
                          "column of the data holding each row's relevance>")
    return recs, truth


class RecsqlEvaluator:
    """MLflow's evaluator ``recsql``: evaluates a ranking model's lists with :func:`recsql.evaluate`
    and logs the evaluation into the run (the module's docstring)."""

    @classmethod
    def can_evaluate(cls, *, model_type: Any, evaluator_config: Any, **kwargs: Any) -> bool:
        return model_type == MODEL_TYPE

    def evaluate(self, *, model_type: Any, dataset: Any, run_id: str, evaluator_config: Any, model: Any = None,
                 extra_metrics: Any = None, custom_artifacts: Any = None, predictions: str | None = None,
                 **kwargs: Any) -> Any:
        """Evaluate, log into run ``run_id`` and return MLflow's ``EvaluationResult``: the metrics
        logged, and the per-user table, the SQL and the report as artifacts."""
        if extra_metrics or custom_artifacts:
            raise RecsqlError("mlflow.evaluate(evaluators='recsql') computes recsql's metrics only; name them in "
                              "evaluator_config['metrics'] and leave out extra_metrics= and custom_artifacts=")
        config = dict(evaluator_config or {})
        if not config.get("metrics"):
            raise RecsqlError("mlflow.evaluate(evaluators='recsql') needs the metrics: evaluator_config="
                              "{'metrics': ['ndcg@10', 'recall@20'], 'truth': ...}")
        recs, truth = _recs_and_truth(dataset, model, predictions, config)
        own = {key: config.pop(key) for key in _OWN if key in config}
        report = own.get("report", True)
        evaluation = evaluate(recs, truth, own["metrics"], **config)
        metrics = log_evaluation(evaluation, prefix=own.get("prefix", ""), report=report, run_id=run_id)
        return _result(evaluation, metrics, run_id, artifact_dir(own.get("prefix", "")), report)


def _result(evaluation: Any, metrics: dict[str, float], run_id: str, folder: str, report: bool) -> Any:
    """MLflow's ``EvaluationResult`` of a logged evaluation."""
    mlflow = require("mlflow", "mlflow.evaluate(evaluators='recsql')")
    from mlflow.models.evaluation import EvaluationResult
    from mlflow.models.evaluation.artifacts import CsvEvaluationArtifact, TextEvaluationArtifact
    root = mlflow.MlflowClient().get_run(run_id).info.artifact_uri
    artifacts = {"per_user": CsvEvaluationArtifact(f"{root}/{folder}/per_user.csv", evaluation.per_user),
                 "sql": TextEvaluationArtifact(f"{root}/{folder}/query.sql", evaluation.sql)}
    if report:
        artifacts["report"] = TextEvaluationArtifact(f"{root}/{folder}/report.html", None)
    return EvaluationResult(metrics=metrics, artifacts=artifacts, run_id=run_id)
