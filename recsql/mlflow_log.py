"""An evaluation or a comparison logged into an MLflow run: :func:`log_evaluation`, :func:`log_comparison`.

Like MLflow's own ``mlflow.log_*``, each logs into the active run and starts one when none is
active (left active, as ``mlflow.log_metric`` leaves it); ``run_id=`` logs into that run instead.

Names. MLflow's metric names hold letters, digits, ``_ - . /`` and spaces only, so a metric is logged
under the column name recsql's SQL gives it (``ndcg@10`` is ``ndcg_at_10``, ``P@5`` is
``precision_at_5``, ``map(denominator=relevant)@5`` is ``map_denominator_relevant_at_5``), with
``/<run>`` after it for each run of an evaluation with run columns (``ndcg_at_10/popular``; a run of
several run columns goes by its label, ``model=A/day=1``, as ``model_A_day_1``: every character
MLflow refuses becomes ``_``). A comparison adds ``.mean``, ``.ci_low``, ``.ci_high`` and
``.n_users`` to each run's name, and logs each pair's statistics as ``<metric>/<run>-vs-<baseline>.<column>``
(``ndcg_at_10/personal-vs-popular.p_t_adj``); within segments the segment's label comes first
(``ndcg_at_10/cohort_new/personal.mean``). Every name starts with ``prefix``. Two things that would
go by one name are refused, never one silently overwriting the other. The artifact
``recsql/names.json`` maps every logged name back to the metric as asked and the run's own label,
and the params ``recsql.metric.<name>`` name each metric as asked.

Artifacts, under ``recsql/`` (``recsql/<prefix>/`` with a prefix): ``per_user.csv``, ``query.sql``
and ``report.html`` for an evaluation; ``runs.csv``, ``tests.csv``, ``comparison.sql`` and
``report.html`` for a comparison; ``names.json``. Params: recsql's version, the engine, the metrics
as asked, the run columns and the options the numbers were computed with (a comparison's under
``recsql.compare.``, so an evaluation and its comparison go into one run). Params cannot change in
an MLflow run: a second evaluation in the same run needs its own ``prefix``.
"""
from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from . import run_labels
from .compose.columns import metric_columns
from .errors import RecsqlError
from .extras import require
from .report import from_comparison, from_evaluation
from .report.data import run_label

_REFUSED = re.compile(r"[^\w\-]+")  # what becomes "_" in a run's or a segment's part of a name
_PREFIX = re.compile(r"[\w\-.]*")  # a prefix: characters MLflow takes in a name, but no "/" or space


def _part(text: Any) -> str:
    """A run's or segment's label as one part of an MLflow name: every run of characters other than
    letters, digits, ``_`` and ``-`` becomes one ``_``."""
    return _REFUSED.sub("_", str(text)) or "_"


def _label(row: pd.Series, columns: list[str]) -> str:
    """The label of a row's run (or segment) columns, as compare names runs (:func:`recsql.report.data.run_label`)."""
    return run_label([row[c] for c in columns], columns)


def _number(value: Any) -> float:
    """A value as the float MLflow stores: a missing one (a NULL metric, a test that does not apply) as NaN."""
    return math.nan if value is None or pd.isna(value) else float(value)


class _Names:
    """The names logged by one call, each with what it stands for; a second thing under a taken name
    is refused."""

    def __init__(self, what: str, prefix: str) -> None:
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise RecsqlError(f"{what}: prefix={prefix!r} is not part of an MLflow name; use letters, digits, "
                              "'_', '-' and '.' only, e.g. prefix='val_'")
        self.what, self.prefix = what, prefix
        self.values: dict[str, float] = {}
        self.meaning: dict[str, dict[str, Any]] = {}

    def add(self, name: str, value: Any, **meaning: Any) -> None:
        name = self.prefix + name
        if name in self.meaning and self.meaning[name] != meaning:
            first, second = (", ".join(f"{k} {v!r}" for k, v in m.items() if v is not None)
                             for m in (self.meaning[name], meaning))
            raise RecsqlError(f"{self.what}: {first} and {second} would both be logged as the MLflow "
                              f"metric {name!r} (characters MLflow refuses become '_'); rename the runs, or log "
                              "them in separate calls with different prefix=")
        self.values[name], self.meaning[name] = _number(value), meaning


def _run(mlflow: Any, run_id: str | None) -> str:
    """The run to log into: ``run_id``, else the active run, else a new one (left active, as MLflow's
    ``log_*`` do)."""
    if run_id is not None:
        return run_id
    active = mlflow.active_run() or mlflow.start_run()
    return active.info.run_id


def artifact_dir(prefix: str = "") -> str:
    """The artifact folder a call with ``prefix`` logs into: ``recsql``, or ``recsql/<prefix>``."""
    return f"recsql/{_part(prefix)}" if prefix else "recsql"


def _log(what: str, names: _Names, params: dict[str, Any], texts: dict[str, str], run_id: str | None) -> str:
    """Log the metrics, the params (``names``' prefix before each key), ``names.json`` and the text
    artifacts (file name -> text) into the run; returns its id."""
    mlflow = require("mlflow", what)
    client = mlflow.MlflowClient()
    run_id = _run(mlflow, run_id)
    folder = artifact_dir(names.prefix)
    from mlflow.entities import Metric, Param
    now = int(pd.Timestamp.now("UTC").timestamp() * 1000)
    client.log_batch(run_id, metrics=[Metric(name, value, now, 0) for name, value in names.values.items()],
                     params=[Param(names.prefix + key, str(value)) for key, value in params.items()])
    client.log_dict(run_id, names.meaning, f"{folder}/names.json")
    for file, text in texts.items():
        client.log_text(run_id, text, f"{folder}/{file}")
    return run_id


def _metric_params(metrics: list[Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(each metric's column as asked -> its name in MLflow, the params naming each metric as asked)."""
    columns = dict(zip((m.column for m in metrics), metric_columns(metrics)))
    return columns, {f"recsql.metric.{name}": column for column, name in columns.items()}


def log_evaluation(evaluation: Any, *, prefix: str = "", report: bool = True, run_id: str | None = None) -> dict[str, float]:
    """Log a :class:`recsql.Evaluation` into an MLflow run (the module's docstring: which run, the
    names): every number of its summary as a metric (the metrics, the user counts, the diagnostics),
    the per-user table as ``per_user.csv``, the SQL that ran as ``query.sql``, the HTML report as
    ``report.html`` (``report=False``: not drawn), and its settings as params. Returns the metrics
    logged, by their MLflow names. Needs the mlflow extra."""
    names = _Names("log_evaluation", prefix)
    columns, params = _metric_params(list(evaluation.metrics))
    runs = list(evaluation.run_cols)
    counts = {f"n_users_{column}": f"n_users_{name}" for column, name in columns.items()}
    for _, row in evaluation.summary.iterrows():
        run = _label(row, runs) if runs else None
        for column in evaluation.summary.columns:
            if column in runs:
                continue
            name = columns.get(column) or counts.get(column) or _part(column)
            names.add(f"{name}/{_part(run)}" if runs else name, row[column], column=column, run=run)
    params |= {"recsql.version": _version(), "recsql.engine": evaluation.engine,
               "recsql.metrics": ", ".join(m.column for m in evaluation.metrics),
               "recsql.run_cols": ", ".join(runs), **{f"recsql.{k}": v for k, v in evaluation.options.items()
                                                      if k != "run_cols"}}
    texts = {"per_user.csv": evaluation.per_user.to_csv(index=False), "query.sql": evaluation.sql}
    if report:
        texts["report.html"] = from_evaluation(evaluation, options=evaluation.options).html
    _log("log_evaluation", names, params, texts, run_id)
    return dict(names.values)


def log_comparison(comparison: Any, *, prefix: str = "", report: bool = True, evaluation: Any = None,
                   run_id: str | None = None) -> dict[str, float]:
    """Log a :class:`recsql.Comparison` into an MLflow run (the module's docstring: which run, the
    names): each run's mean and interval, each pair's difference, interval, test statistics and
    p-values (corrected ones as ``p_<test>_adj``) as metrics; the runs and tests tables as
    ``runs.csv`` and ``tests.csv``, the SQL as ``comparison.sql``, the HTML report as ``report.html``
    (with ``evaluation``, the same runs' :class:`recsql.Evaluation`, it has the curves and per-user
    distributions too; ``report=False``: not drawn); the settings as params. Returns the metrics
    logged, by their MLflow names. Needs the mlflow extra."""
    names = _Names("log_comparison", prefix)
    columns, params = _metric_params(list(comparison.metrics))
    for table, keys in ((comparison.runs, ["run"]), (comparison.tests, ["run", "baseline"])):
        segments = list(table.columns[:list(table.columns).index("run")])
        for _, row in table.iterrows():
            segment = _label(row, segments) if segments else None
            pair = "-vs-".join(_part(row[k]) for k in keys)
            head = f"{columns[row['metric']]}/{_part(segment) + '/' if segments else ''}{pair}"
            for column in table.columns:
                if column not in (*segments, *keys, "metric"):
                    names.add(f"{head}.{column}", row[column], metric=row["metric"], segment=segment,
                              **{k: str(run_labels.plain(row[k])) for k in keys}, column=column)
    settings = comparison.settings
    params |= {"recsql.version": _version(), **{f"recsql.compare.{key}": value for key, value in (
        ("engine", comparison.engine), ("metrics", ", ".join(m.column for m in comparison.metrics)),
        ("tests", ", ".join(settings.tests)), ("ci", settings.ci), ("resamples", settings.resamples),
        ("seed", settings.seed), ("correction", settings.correction), ("baseline", settings.baseline))}}
    texts = {"runs.csv": comparison.runs.to_csv(index=False), "tests.csv": comparison.tests.to_csv(index=False),
             "comparison.sql": comparison.sql}
    if report:
        texts["report.html"] = from_comparison(comparison, evaluation=evaluation).html
    _log("log_comparison", names, params, texts, run_id)
    return dict(names.values)


def _version() -> str:
    import recsql
    return recsql.__version__
