"""The public entry points: :func:`evaluate` (run on DuckDB) and :func:`to_sql` (render the query)."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import duckdb
import pandas as pd
import sqlglot
from sqlglot import exp

from .compose import Plan, compose, finalize, recs_in, truth_in
from .engines.duckdb import DuckDBRunner
from .errors import RecsqlError
from .metrics import Metric, parse_metrics
from .sources import Source, bind, file_relation, looks_like_path, table_relation
from .validate import duplicate_report, require_number, require_same_ids, resolve_column

DUPLICATE_POLICIES = ("error", "best", "max")
SUPPORTED_DIALECTS = ("duckdb",)


class RecsqlWarning(UserWarning):
    """Something the user should know about the result (for example an empty population)."""


@dataclass
class Evaluation:
    """The result of :func:`evaluate`: ``summary`` (one row per run) and ``per_user`` DataFrames."""

    summary: pd.DataFrame
    per_user: pd.DataFrame
    metrics: list[Metric]
    sql: str = field(repr=False)
    seconds: float = 0.0
    rows_in: int | None = None

    def __repr__(self) -> str:
        return f"Evaluation({', '.join(map(str, self.metrics))})\n{self.summary.to_string(index=False)}"


def _check_options(population: str, duplicates: str, threshold: float, rank_col: str | None, score_col: str | None) -> None:
    if duplicates not in DUPLICATE_POLICIES:
        raise RecsqlError(f"duplicates={duplicates!r} is not valid; choose one of {', '.join(DUPLICATE_POLICIES)} "
                          "('best' keeps each recommendation's best-ranked row, 'max' the truth row with the highest relevance)")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold != threshold or abs(threshold) == float("inf"):
        raise RecsqlError(f"threshold must be a finite number (an item is relevant iff relevance >= threshold), got {threshold!r}")
    if rank_col is None and score_col is None:
        raise RecsqlError("recs need an order: pass score_col='<column>' (higher is better) or rank_col='<column>' (1 is best)")


def _plan(recs: Source, truth: Source, items: Source | None, **kw: Any) -> Plan:
    return Plan(recs=recs.relation, truth=truth.relation, items=items.relation if items else None, **kw)


def _validated_plan(runner: DuckDBRunner, recs: Source, truth: Source, items: Source | None,
                    cols: dict[str, Any], metrics: list[Metric]) -> Plan:
    for src in filter(None, (recs, truth, items)):
        src.columns = runner.describe(src)
    user = resolve_column(recs, cols["user_col"], "user_col")
    item = resolve_column(recs, cols["item_col"], "item_col")
    t_user = resolve_column(truth, cols["user_col"], "user_col")
    t_item = resolve_column(truth, cols["item_col"], "item_col")
    require_same_ids(recs, truth, [("user", user, t_user), ("item", item, t_item)])
    if cols["rank_col"]:
        order = resolve_column(recs, cols["rank_col"], "rank_col")
        require_number(recs, order, "rank (1 is best)")
    else:
        order = resolve_column(recs, cols["score_col"], "score_col")
        require_number(recs, order, "score (higher is better)")
    relevance = None
    if cols["relevance_col"] and (cols["relevance_col"] in truth.columns or cols["relevance_col"] != "relevance"):
        relevance = resolve_column(truth, cols["relevance_col"], "relevance_col")
        require_number(truth, relevance, "relevance")
    runs = tuple(resolve_column(recs, c, "run_cols") for c in cols["run_cols"])
    truth_has = [c for c in runs if c.lower() in {t.lower() for t in truth.columns}]
    price = cols["price_col"]
    if items is not None and any("price" in m.spec.needs for m in metrics):
        price = resolve_column(items, price, "price_col")
        require_number(items, price, "price")
        resolve_column(items, cols["item_col"], "item_col")
    # Different spellings of one column (DuckDB matches names case-insensitively) are fine here.
    return _plan(recs, truth, items, user_col=user, item_col=item,
                 score_col=None if cols["rank_col"] else order, rank_col=order if cols["rank_col"] else None,
                 relevance_col=relevance, price_col=price, run_cols=runs,
                 truth_has_runs=len(truth_has) == len(runs) and bool(runs),
                 threshold=cols["threshold"], population=cols["population"],
                 duplicates="best" if cols["duplicates"] in ("best", "max") else "error")


def _check_duplicates(runner: DuckDBRunner, plan: Plan, recs_columns: list[str]) -> None:
    """Under duplicates='error': refuse duplicated (run, user, item) recs and (user, item) truth."""
    runs = [f"_run{i}" for i in range(len(plan.run_cols))]
    truth_runs = runs if plan.truth_has_runs else []
    checks = [
        (recs_in(plan), runs, "recs", "Pass duplicates='best' to keep each item's best-ranked row."),
        (truth_in(plan), truth_runs, "truth", "Pass duplicates='max' to keep the highest relevance."),
    ]
    known = {c.lower() for c in (plan.user_col, plan.item_col, plan.score_col or "", plan.rank_col or "", *plan.run_cols)}
    extra = [c for c in recs_columns if c.lower() not in known]
    if extra:
        checks[0] = (checks[0][0], checks[0][1], checks[0][2],
                     f"If recs hold several runs, name their key columns: run_cols={extra[:3]!r} "
                     f"(CLI: --run-col {extra[0]}); otherwise pass duplicates='best' to keep each item's best-ranked row.")
    for body, run_keys, role, fix in checks:
        keys = run_keys + ["user_id", "item_id"]
        names = list(plan.run_cols[: len(run_keys)]) + [plan.user_col, plan.item_col]
        groups = exp.select(*keys).from_(exp.Subquery(this=body, alias="s")).group_by(*keys).having("COUNT(*) > 1")
        query = (exp.select(*keys, exp.alias_(sqlglot.parse_one("COUNT(*) OVER ()"), "_total"))
                 .from_(exp.Subquery(this=groups, alias="d")).order_by(*keys).limit(3))
        rows = runner.fetch_rows(query.sql("duckdb"))
        if rows:
            raise duplicate_report([r[:-1] for r in rows], rows[0][-1], role, names, fix)


def evaluate(
    recs: Any,
    truth: Any,
    metrics: Sequence[str | Metric] | str | Metric,
    *,
    items: Any = None,
    con: Any = None,
    user_col: str = "user_id",
    item_col: str = "item_id",
    score_col: str | None = "score",
    rank_col: str | None = None,
    relevance_col: str | None = "relevance",
    price_col: str = "price",
    run_cols: Iterable[str] = (),
    threshold: float = 1,
    population: str = "relevant",
    duplicates: str = "error",
    progress: bool = False,
) -> Evaluation:
    """Evaluate recommendations against truth with any set of metrics, in ONE DuckDB query.

    ``recs``/``truth``/``items``: a table or view name, a Parquet/CSV/JSON path or glob, a pandas or
    polars DataFrame, or an Arrow table. ``con``: a DuckDB connection, or a ``.duckdb`` file path
    (opened read-only). Returns an :class:`Evaluation` with ``summary`` (one row per run: run keys,
    ``n_users``, one column per metric named by its canonical string, ``users_without_recs``,
    ``recs_users_without_truth``) and ``per_user``. Definitions: SPEC §2-3 / README.

    >>> import pandas as pd
    >>> recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.7]})
    >>> truth = pd.DataFrame({"user_id": [1, 2], "item_id": [11, 12]})
    >>> evaluate(recs, truth, ["mrr@10", "hr@1"]).summary[["n_users", "mrr@10", "hit_rate@1"]].to_dict("records")
    [{'n_users': 2, 'mrr@10': 0.25, 'hit_rate@1': 0.0}]
    """
    parsed = parse_metrics(metrics)
    _check_options(population, duplicates, threshold, rank_col, score_col)
    cols = dict(user_col=user_col, item_col=item_col, score_col=score_col, rank_col=rank_col,
                relevance_col=relevance_col, price_col=price_col, run_cols=tuple(run_cols),
                threshold=threshold, population=population, duplicates=duplicates)
    started = time.perf_counter()
    with DuckDBRunner(con, progress=progress) as runner:
        sources: list[Source] = []
        try:
            recs_src = bind("recs", recs, runner.cursor); sources.append(recs_src)
            truth_src = bind("truth", truth, runner.cursor); sources.append(truth_src)
            items_src = bind("items", items, runner.cursor) if items is not None else None
            if items_src:
                sources.append(items_src)
            plan = _validated_plan(runner, recs_src, truth_src, items_src, cols, parsed)
            if duplicates == "error":
                _check_duplicates(runner, plan, list(recs_src.columns))
            statement = compose(plan, parsed, output="raw")
            sql = statement.sql("duckdb", pretty=True)
            try:
                raw = runner.fetch(sql)
            except duckdb.Error as err:
                raise RecsqlError(f"the evaluation query failed on DuckDB: {str(err).splitlines()[0]}. "
                                  "Check the input columns' contents (ids, scores, relevance).") from None
        finally:
            for src in sources:
                src.cleanup()
    per_user, summary = _split(plan, parsed, raw)
    for row in summary.itertuples(index=False):
        if row.n_users == 0:
            warnings.warn("no user has a relevant truth item (relevance >= threshold"
                          f" = {threshold}) in a run; its metrics are NULL", RecsqlWarning, stacklevel=2)
    return Evaluation(summary=summary, per_user=per_user, metrics=parsed, sql=sql,
                      seconds=time.perf_counter() - started, rows_in=None)


def _split(plan: Plan, metrics: list[Metric], raw: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user rows and the summary from the query's raw rows, computed by the same SQL as to_sql."""
    con = duckdb.connect()
    try:
        con.register("per_user", raw)
        per_user = con.execute(finalize(plan, metrics, "per_user").sql("duckdb")).df()
        summary = con.execute(finalize(plan, metrics, "summary").sql("duckdb")).df()
    finally:
        con.close()
    return per_user, summary


def to_sql(
    metrics: Sequence[str | Metric] | str | Metric,
    recs: str = "recs",
    truth: str = "truth",
    *,
    items: str | None = None,
    dialect: str = "duckdb",
    output: str = "summary",
    user_col: str = "user_id",
    item_col: str = "item_id",
    score_col: str | None = "score",
    rank_col: str | None = None,
    relevance_col: str | None = "relevance",
    price_col: str = "price",
    run_cols: Iterable[str] = (),
    truth_has_run_cols: bool = False,
    threshold: float = 1,
    population: str = "relevant",
    duplicates: str = "error",
    pretty: bool = True,
) -> str:
    """The SQL that :func:`evaluate` runs, for (qualified) table names or file paths.

    ``output``: ``summary`` (one row per run) or ``per_user``. With ``duplicates='error'`` the SQL
    assumes the inputs have no duplicate keys (``evaluate`` checks this first); ``'best'`` / ``'max'``
    de-duplicate inside the query. ``relevance_col=None``: every truth row has relevance 1.

    >>> "ROW_NUMBER() OVER" in to_sql(["ndcg@10"], recs="db.recs", truth="db.truth")
    True
    """
    if dialect not in SUPPORTED_DIALECTS:
        raise RecsqlError(f"dialect {dialect!r} is not supported yet; supported: {', '.join(SUPPORTED_DIALECTS)}")
    if output not in ("summary", "per_user"):
        raise RecsqlError(f"output={output!r} is not valid; choose summary or per_user")
    parsed = parse_metrics(metrics)
    _check_options(population, duplicates, threshold, rank_col, score_col)

    def relation(value: str | None, role: str) -> exp.Expression | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise RecsqlError(f"to_sql: {role} must be a table name or a file path, got {type(value).__name__}")
        return file_relation(value) if looks_like_path(value) else table_relation(value)

    plan = Plan(recs=relation(recs, "recs"), truth=relation(truth, "truth"), items=relation(items, "items"),
                user_col=user_col, item_col=item_col, score_col=None if rank_col else score_col,
                rank_col=rank_col, relevance_col=relevance_col, price_col=price_col,
                run_cols=tuple(run_cols), truth_has_runs=truth_has_run_cols and bool(tuple(run_cols)),
                threshold=threshold, population=population,
                duplicates="best" if duplicates in ("best", "max") else "error")
    return compose(plan, parsed, output=output).sql(dialect, pretty=pretty)
