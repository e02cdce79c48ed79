"""Running the comparison's statistics: the statement fetched after the dialect's preamble
(:func:`fetch_statistics`), the segments input bound (:func:`bound_segments`) and checked from the
rows (:func:`refuse_segment_rows`), and the comparison of per-user values already computed
(:func:`compare_per_user`: :meth:`recsql.Evaluation.compare`)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from sqlglot import exp

from .comparison_baseline import baseline_keys
from .comparison_result import Table, finish, settle
from .comparison_settings import Settings
from .comparison_sql import Values, statistics
from .compose.checks import SEGMENT_CHECKS
from .dialects import render
from .engines import runner_for
from .engines.base import DBAPIRunner, Runner, frame_from_cursor
from .engines.steps import fetch_in_steps
from .errors import RecsqlError
from .explain import fetch_checked, refuse_segments
from .metrics import Metric
from .plans import refuse_unread_segment_cols
from .sources import Source, bind
from .frames import records
from .validate import require_same_ids, resolve_column

if TYPE_CHECKING:
    import pandas as pd


def refuse_global(metrics: Sequence[Metric]) -> None:
    """Evaluation.compare reads per-user values only; a global metric is resampled from the users' lists."""
    for m in metrics:
        if m.spec.population == "global":
            raise RecsqlError(f"Evaluation.compare: metric {str(m)!r} is global (one number per run, no per-user "
                              "values): it is resampled from the users' lists, which an evaluation does not keep; "
                              "compare it with recsql.compare(recs, truth, ...) (or leave it out here)", metric=str(m))


# Settings for the statistics statement, run before it in its transaction, by dialect. PostgreSQL
# would JIT-compile the long statement (tens of seconds at any data size: its row estimates for the
# resample grid are far too high); its executor needs no JIT for sums.
PREAMBLE: dict[str, tuple[str, ...]] = {"postgres": ("SET LOCAL jit = off",)}


def fetch_statistics(runner: Runner, plan: Any, sql: str, global_metrics: bool = False) -> Any:
    """The statistics statement's rows (as the runner returns them: :func:`recsql.frames.records` reads them), after the dialect's :data:`PREAMBLE` in the same transaction; one with
    ``global_metrics`` (counted from item exposure, recomputed over weighted lists, or off-policy estimators
    over resampled logs) in steps where the runner says so (Spark, ClickHouse, DataFusion, MariaDB:
    recsql/engines/steps.py). Their large CTEs are read several times (sql/_compare_global.sql reads the
    per-item cells three times), and those engines compute a CTE again at each read: on MovieLens-100K-sized
    data (908 users, 4 runs, 100 resamples; coverage, Gini, personalization) one statement took ClickHouse
    20 s, DataFusion 7.6 s, Spark 61 s, against 2.0 s, 3.0 s and 28 s in steps (docs/performance.md)."""
    statements = PREAMBLE.get(runner.dialect, ())
    if global_metrics and runner.in_steps:
        return fetch_checked(runner, plan, sql, lambda text: fetch_in_steps(runner, text))
    if not statements or not isinstance(runner, DBAPIRunner):
        return fetch_checked(runner, plan, sql)

    def fetch(statement: str) -> Any:
        try:
            with runner.statements() as cursor:  # the user's transaction, if open, left as it was
                for setting in statements:
                    cursor.execute(setting)
                cursor.execute(statement)
                return frame_from_cursor(cursor)
        except RecsqlError:
            raise
        except Exception as err:  # noqa: BLE001 - any driver error, as the runner reports it
            raise runner.failed(err) from None

    return fetch_checked(runner, plan, sql, fetch)


@contextmanager
def bound_segments(segments: Any, runner: Runner, sources: dict[str, Any], user_col: str,
                   segment_cols: Iterable[str] | str | None = None) -> Iterator[tuple | None]:
    """The bound segments input as (relation, user column, segment columns: ``segment_cols``, default every
    column but the user's); unbound afterwards."""
    if segments is None:
        refuse_unread_segment_cols(segment_cols)
        yield None
        return
    named = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols or ())
    source = bind("segments", segments, runner)
    try:
        source.columns = runner.describe(source)
        user = resolve_column(source, user_col, "user_col")
        require_same_ids(sources["recs"], source, [("user", user_col, user)])
        columns = [resolve_column(source, c, "segment_cols") for c in named] or [c for c in source.columns if c != user]
        if user in columns:
            raise RecsqlError(f"segment_cols: {user!r} is the user column; name the segment columns")
        if not columns:
            raise RecsqlError(f"segments: the input has only the user column {user!r}; add the segment columns "
                              "(one row per user: user, cohort, ...)")
        clash = [c for c in columns if c.lower() in {"run", "baseline", "metric", "n", "n_users", "mean", "mean_diff"}]
        if clash:
            raise RecsqlError(f"segments: the column {clash[0]!r} is named like a result column; rename it")
        yield source.relation, user, columns
    finally:
        source.cleanup()


def refuse_segment_rows(rows: list[dict[str, Any]], values: Values) -> None:
    """Raise for the segment checks the statistics statement's rows (as dicts) carry (segmented comparisons only)."""
    if values.segments is None or not rows:
        return
    refuse_segments({name: max(int(r[name]) for r in rows) for name in SEGMENT_CHECKS}, "of the population",
                    values.segment_cols)


def compare_per_user(per_user: pd.DataFrame, metrics: Sequence[str], run_cols: Sequence[str], user_col: str,
                     settings: Settings, segments: Any = None,
                     segment_cols: Sequence[str] | str | None = None) -> tuple[tuple[Table, Table], str]:
    """``runs``, ``tests`` (:class:`recsql.comparison_result.Table`) and the SQL for per-user values already computed: one row per (run, user) of
    ``per_user`` with the run key columns, the user column and one column per metric (NULL where a
    user has no value), computed by the same SQL on a private in-memory DuckDB
    (:meth:`recsql.Evaluation.compare`); ``segments`` and ``segment_cols`` as :func:`recsql.compare`'s (a
    DataFrame, an Arrow table or a file DuckDB reads)."""
    run_cols = list(run_cols)
    if not run_cols:
        raise RecsqlError("compare needs runs: evaluate with run_cols='model' (the run key columns) first")
    missing = [c for c in [*run_cols, user_col, *metrics] if c not in per_user.columns]
    if missing:
        raise RecsqlError(f"compare: the per-user rows have no column {missing[0]!r}; they need the run columns, "
                          f"the user column and one column per metric")
    import pandas as pd  # per_user is a DataFrame (Evaluation.per_user): pandas is loaded
    kinds = ["number" if pd.api.types.is_numeric_dtype(per_user[c]) else "string" for c in run_cols]
    values = Values("cmp_per_user", run_cols, run_cols, user_col, list(metrics))
    with runner_for(None) as runner:  # recsql's own in-memory DuckDB, a cursor of its own
        runner.cursor.register("cmp_per_user", per_user)
        rows = Source("recs", exp.to_table("cmp_per_user"))
        rows.columns = runner.describe(rows)
        with bound_segments(segments, runner, {"recs": rows}, user_col, segment_cols) as grouping:
            if grouping is not None:
                values.segments, values.segment_user, values.segment_cols = grouping[0], grouping[1], list(grouping[2])
            sql = render(statistics(values, settings, baseline_keys(settings.baseline, run_cols, kinds)), "duckdb")
            rows = records(runner.fetch(sql))
            refuse_segment_rows(rows, values)
    settle(rows, settings, values)
    return finish(rows, list(metrics), values, settings), sql
