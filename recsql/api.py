"""The first entry point: :func:`evaluate` (run on an engine); :func:`to_sql`, which renders the query and runs
nothing, is :mod:`recsql.sql_text`'s (named here too)."""
from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

from sqlglot import exp

from .compose import DIAGNOSTICS, RECS_ROWS, Plan, internal_runs, logs_in, per_run_only, population_counts
from .compose.plan import logs_runs
from .compose.checks import LOGS_ROWS
from .database import shared
from .dialects import render
from .errors import RecsqlError, suggest_keywords, warn
from .evaluation_result import Evaluation
from .explain import fetch_checked, refuse
from .frames import columns_of, records, rows_of
from .inputs import EXPECTED_RECS_RENAMED, Inputs, input_keywords, metrics_given, renamed, unpacked
from .metrics import Metric, parse_metrics
from .request import bound, checked_request
from .result_frames import ResultFrames
from .run_labels import named, plain
from .segment_runs import warn_segment_like_runs
from .statements import finalize_sql, statement_and_reads, statement_sql
from .sql_text import to_sql  # noqa: F401 - recsql.api.to_sql, as before
from .unread_inputs import warn_unread
from .weights_warning import MIN_ESS_SHARE, Counts, checked_share, diagnostics, per_slate, warn_weights

@suggest_keywords
def evaluate(
    recs: Any,
    truth: Any = None,
    metrics: Sequence[str | Metric] | str | Metric | None = None,
    *,
    items: Any = None,
    interactions: Any = None,
    catalog: Any = None,
    expected_recs: Any = None,
    item_features: Any = None,
    intents: Any = None,
    logs: Any = None,
    reward_model: Any = None,
    segments: Any = None,
    con: Any = None,
    user_col: str = "user_id",
    item_col: str = "item_id",
    score_col: str | None = "score",
    rank_col: str | None = None,
    relevance_col: str | None = "relevance",
    price_col: str = "price",
    run_cols: Iterable[str] | str | None = (),
    threshold: float | None = None,
    population: str | None = None,
    duplicates: str = "error",
    convention: str = "recsql",
    ties: str | None = None,
    probability_col: str = "probability",
    category_col: str = "category",
    head_col: str | None = None,
    features_col: str = "features",
    feature_col: str = "feature",
    value_col: str = "value",
    intent_col: str = "intent",
    interaction_weight_col: str | None = None,
    position_col: str | None = "position",
    propensity_col: str = "propensity",
    slate_propensity_col: str | None = None,
    cascade_propensity_col: str | None = None,
    reward_col: str = "reward",
    sample_col: str | None = None,
    segment_cols: Iterable[str] | str | None = None,
    progress: bool = False,
    baseline: Any = None,
    min_ess_share: float | None = MIN_ESS_SHARE,
) -> Evaluation:
    """Evaluate recommendations against truth with any set of metrics, in ONE query on one engine.

    ``con``: None (an in-memory DuckDB), a DuckDB connection, a ``.duckdb`` file path (opened
    read-only), or a sqlite3 / psycopg / PyMySQL / MariaDB connection, a SparkSession, a chdb
    session or a DataFusion SessionContext. ``recs``/``truth``/``items``: a table or view name; on
    DuckDB also a Parquet/CSV/JSON path or glob, a pandas or polars DataFrame, or an Arrow table;
    on Spark also a Spark DataFrame. Returns an :class:`Evaluation` with ``summary`` (one row per
    run: run keys, a user count per population averaged over (``n_users`` for the truth metrics,
    ``n_users_<metric>`` for one a convention averages over its own population, ``n_users_with_recs``
    for the list-only ones, ``n_users_intents`` for the intent-aware ones), one column per metric named
    as asked, and when truth is given ``users_without_recs``, ``recs_users_without_truth``) and
    ``per_user``. The input checks run in the same query (the diagnostic columns of :func:`to_sql`'s summary); a non-zero one raises a
    :class:`RecsqlError`. ``expected_recs``: another recommender's lists, columns like ``recs`` (for
    unexpectedness and serendipity; ``baseline=``, its old name, is accepted until the next release
    with a FutureWarning). ``min_ess_share``: an off-policy estimator warns (:class:`RecsqlWarning`) for a run
    whose weights' effective sample size is below this share of the logged impressions (0: never;
    docs/guide/logs.md). Definitions: README.

    >>> import pandas as pd
    >>> recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.7]})
    >>> truth = pd.DataFrame({"user_id": [1, 2], "item_id": [11, 12]})
    >>> evaluate(recs, truth, ["mrr@10", "hr@1"]).summary[["n_users", "mrr@10", "hr@1"]].to_dict("records")
    [{'n_users': 2, 'mrr@10': 0.25, 'hr@1': 0.0}]
    """
    keywords = input_keywords(locals())
    recs, truth, metrics, keywords = unpacked(recs, truth, metrics, keywords, "evaluate")
    keywords["expected_recs"] = renamed("expected_recs", keywords["expected_recs"], "baseline", baseline, "evaluate",
                                        EXPECTED_RECS_RENAMED)
    described = Inputs(recs=recs, truth=truth, **keywords)
    request = checked_request(metrics_given(metrics, "evaluate"), described, con=con, progress=progress)
    parsed, cols = request.metrics, request.cols
    share = checked_share(min_ess_share)
    computed = [*parsed, *diagnostics(parsed, share)]  # the ESS of the estimators' weights, for the warning
    started = time.perf_counter()
    with bound(request) as (runner, plan, sources):
        # ONE statement: the metrics and the input checks (diagnostic columns) read one snapshot
        # (one row per run where every metric is global: their values need no user's row)
        sql, read = statement_and_reads(plan, computed, "runs" if per_run_only(plan, computed) else "raw",
                                        runner.statement_dialect)
        raw = fetch_checked(runner, plan, sql)
        rows, found = _split(plan, computed, raw, drop=[m.column for m in computed[len(parsed):]])
        summary = rows.arrow("summary", whole=True)
        _warn_segment_runs(plan, rows)
        if RECS_ROWS not in columns_of(raw) or rows_of(raw) == 0:
            # no user row carried the checks (an empty population, or invalid rows that left no user):
            # read them alone
            checks = fetch_checked(runner, plan, statement_sql(plan, computed, "checks", runner.statement_dialect))
            found = {name: int(value or 0) for name, value in records(checks)[0].items()}
        refuse(runner, plan, found, list(sources["recs"].columns))
        rows_in = found[RECS_ROWS]
        logged: Any = Counts(found.get(LOGS_ROWS, 0), 0)
        if computed != parsed and (plan.logs_run_cols or per_slate(computed)):  # each run's n, or the slates
            counts = _logged_counts(runner, plan)
            logged = counts if plan.logs_run_cols else counts.get((), Counts(0, 0))
    run_keys = summary.column_names[:len(plan.run_cols)]
    summary_rows = summary.to_pylist()
    warn_unread(sources, read)
    warn_weights(summary_rows, computed, logged, share, run_keys, [c for c in run_keys if c in plan.logs_run_cols])
    counted = population_counts(plan, parsed)
    truth_counts = [name for name, _, kind in counted if kind == "truth"]
    intent_counts = [name for name, _, kind in counted if kind == "intents"]
    _warn_empty(summary_rows, run_keys, truth_counts, intent_counts, cols["threshold"], plan.population)
    inputs = tuple(src.table for src in sources.values() if src.table)
    return Evaluation(rows=rows, metrics=parsed, sql=sql, engine=runner.name,
                      seconds=time.perf_counter() - started, inputs=inputs, rows_in=rows_in,
                      run_cols=tuple(plan.run_cols), user_col=plan.user_col, options=described.given_options(cols))


def _warn_empty(summary: list[dict], run_keys: Sequence[str], truth_counts: Sequence[str],
                intent_counts: Sequence[str], threshold: Any, population: str) -> None:
    """One warning naming the runs whose population is empty (each metric of theirs NULL), and one for
    the intent-aware metrics' population, with the threshold that made it so and how to set another."""
    def runs(counts: Sequence[str]) -> str:
        empty = [row for row in summary if any(row[name] == 0 for name in counts)]
        if not empty:
            return ""
        if not run_keys:
            return "the evaluation"
        names = [named([row[c] for c in run_keys], run_keys) for row in empty]
        return f"run{'s' if len(names) > 1 else ''} {', '.join(names)}"
    setting = "threshold= (CLI: --threshold) sets the least relevance that counts as relevant"
    where = runs(truth_counts)
    if where:
        warn(f"no user has a relevant truth item (relevance >= threshold = {threshold}) in {where}: its metrics "
             f"are NULL; {setting}")
    where = runs(intent_counts)
    if where:
        warn(f"no user of intents is in the intent-aware metrics' population (population={population!r}, relevant: "
             f"relevance >= threshold = {threshold}) in {where}: their values are NULL; {setting}")


def _warn_segment_runs(plan: Plan, rows: ResultFrames) -> None:
    """Warn when a run column looks like user segments (recsql/segment_runs.py), read from the raw per-user
    rows the query returned (those of users with recommendations): no extra scan."""
    if plan.truth is None or plan.truth_has_runs or plan.segments is not None or not plan.run_cols:
        return
    users = exp.select("*").from_("per_user").where(exp.column("_has_recs").eq(1)).subquery()
    warn_segment_like_runs(plan.run_cols, plan.user_col, users, internal_runs(plan), "user_id",
                           lambda query: rows.query(query.sql("duckdb"))[0])


def _split(plan: Plan, metrics: list[Metric], raw: Any, drop: list[str]) -> tuple[ResultFrames, dict[str, int]]:
    """The result rows (finished when first read; the summary leaves out the columns ``drop``, which only the
    warnings read) and the values of the diagnostic columns the raw rows carry (and ``_recs_rows``), from the
    query's raw rows (the engine's per-user values), finished by the same SQL :func:`to_sql` appends, run on a
    cursor of recsql's own in-memory DuckDB."""
    columns = columns_of(raw)
    diagnostics = [c for c in DIAGNOSTICS if c in columns]
    names = [*diagnostics, *[n for n in (RECS_ROWS, LOGS_ROWS) if n in columns]]
    # the summary leaves the checks out: they are all 0 when evaluate returns (it raises otherwise)
    summary = finalize_sql(plan, metrics, "summary")
    rows = ResultFrames(raw, {"per_user": finalize_sql(plan, metrics, "per_user"), "summary": summary},
                        {"summary": drop})
    found = dict(zip(names, rows.query(f"SELECT {', '.join(f'MAX({n})' for n in names) or '0'} FROM per_user")[0]))
    return rows, {n: int(found[n] or 0) for n in names} | ({} if RECS_ROWS in columns else {RECS_ROWS: 0})


def _logged_counts(runner: Any, plan: Plan) -> dict[tuple, Counts]:
    """The logged impressions and slates (contexts), by the values of the logs' run keys (as plain values; the
    one key () of logs shared by every run), for the weights warning."""
    keys = logs_runs(plan)
    query = exp.select(*keys, exp.alias_(exp.Count(this=exp.Star()), "n"),
                       exp.alias_(exp.Count(this=exp.Distinct(expressions=[exp.column("user_id")])), "slates")) \
        .from_(logs_in(plan).subquery("l"))
    query = query.group_by(*keys) if keys else query
    return {tuple(plain(v) for v in row[:-2]): Counts(int(row[-2]), int(row[-1]))
            for row in runner.fetch_rows(render(query, runner.dialect, pretty=False))}
