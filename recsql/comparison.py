"""Is B really better than A? :func:`compare`: paired tests and bootstrap intervals, computed in SQL.

The per-user values come from the one query :func:`recsql.evaluate` builds (the same population
for every run: a user without recommendations scores 0, never dropped). The statistics are
templates in ``sql/_compare_*.sql`` appended to that query as more CTEs, so the engine computes
every sum, resample and sign flip in the same statement; only the t and normal tails, which no
SQL engine has, and the multiple-testing corrections of those p-values are finished in Python
(:mod:`recsql.significance`). Resampling weights and sign flips come from a portable integer
mixer (:mod:`recsql.resampling`), so every engine gives the same numbers.

>>> import pandas as pd
>>> recs = pd.DataFrame({"model": ["A"] * 4 + ["B"] * 4, "user_id": [1, 1, 2, 2] * 2,
...                      "item_id": [1, 2, 1, 2, 2, 1, 2, 1], "score": [2, 1] * 4})
>>> truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 2]})
>>> result = compare(recs, truth, ["mrr@2"], run_cols="model", baseline="A", resamples=99)
>>> result.tests[["run", "baseline", "metric", "n", "mean_diff", "wins", "ties", "losses"]].to_dict("records")
[{'run': 'B', 'baseline': 'A', 'metric': 'mrr@2', 'n': 2, 'mean_diff': 0.0, 'wins': 1, 'ties': 0, 'losses': 1}]
"""
from __future__ import annotations

import difflib
import inspect
import re
import time
from typing import Any, Iterable, Sequence

from sqlglot import exp

from .api import evaluate
from .comparison_global import global_metrics
from .comparison_result import Comparison, finish, missing, settle
from .comparison_run import bound_segments, compare_per_user, fetch_statistics, refuse_segment_rows  # noqa: F401
from .comparison_settings import ALL_TESTS, TEST_COLUMNS, TESTS, UNCORRECTED, Settings  # noqa: F401
from .comparison_sql import RESULT_COLUMNS, Values, statement_for, statement_text  # noqa: F401
# (compare_per_user, ALL_TESTS, TEST_COLUMNS, UNCORRECTED, statement_for: recsql.comparison's names since the start)
from .errors import RecsqlError
from .frames import records
from .explain import refuse
from .inputs import Inputs, metrics_given, renamed, unpacked
from .metrics import Metric, parse_metrics
from .dialects import render
from .request import bound, checked_request
from .segment_runs import warn_segment_like_runs
from .unread_inputs import warn_unread
from .validate import family
from .weights_warning import checked_share, weighing


def _evaluate_arguments(recs: Any, truth: Any, metrics: Any, options: dict[str, Any]) -> dict[str, Any]:
    """evaluate's arguments for these inputs and options (its signature is the one description of them)."""
    signature = inspect.signature(evaluate)
    try:
        bound = signature.bind(recs, truth, metrics, **options)
    except TypeError:
        known = [n for n, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY]
        unknown = next(o for o in options if o not in known)
        close = difflib.get_close_matches(unknown, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise RecsqlError(f"compare: unknown option {unknown!r}; {hint}compare takes evaluate's options "
                          f"({', '.join(known)}) and its own (tests, ci, resamples, seed, correction, baseline)") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def compare(recs: Any, truth: Any = None, metrics: Sequence[str | Metric] | str | Metric | None = None, *,
            run_cols: Iterable[str] | str = (), baseline: Any = None, tests: Sequence[str] = TESTS, ci: float = 0.95,
            resamples: int = 1000, seed: int = 0, correction: str | None = "holm", expected_recs: Any = None,
            segments: Any = None, baseline_recs: Any = None, **options: Any) -> Comparison:
    """Compare runs: each run's mean with a bootstrap interval, and paired tests between runs, for
    per-user metrics and for the global ones (coverage, gini, personalization: resampled through
    their exposure counts, :mod:`recsql.comparison_global`), computed by the engine in one
    statement. Definitions: docs/guide/compare.md.

    ``recs`` may be a :class:`recsql.Inputs` (then ``truth`` is left out: ``compare(inputs, metrics,
    baseline=...)``). ``run_cols``: the run key columns of ``recs`` (required: compare needs runs). ``baseline``: the
    run to compare every other run with (its label: the value of the run column, ``col=v/col=v``, a
    tuple or a dict for several run columns); None compares every pair once (each run minus every
    run before it in run-key order). ``tests``: any of ``t``, ``wilcoxon``, ``randomization`` (the
    default) and ``tukey`` (the randomized Tukey HSD over every pair of runs).
    ``ci``: the bootstrap interval's level. ``resamples``: bootstrap resamples and sign-flip
    permutations (1..10,000). ``seed``: 0..2^31 − 2. ``correction``: ``holm``, ``bonferroni``, ``bh``
    or None, over every row of ``tests``, per test. ``expected_recs``: another recommender's lists, as
    evaluate's (for unexpectedness and serendipity; ``baseline_recs``, its old name, is accepted until the
    next release with a FutureWarning). ``segments``: an input (table,
    file or DataFrame, like ``recs``) with the user column and one or more segment columns (a cohort,
    a country): one row per user; runs are compared within each segment, and every user of the
    population must have one; ``segment_cols`` names the segment columns (default: every column but the
    user's). Every other option is :func:`recsql.evaluate`'s (``con``, columns,
    ``threshold``, ``convention``, ...)."""
    settings = Settings.checked(tests, ci, resamples, seed, correction, baseline)
    expected_recs = renamed("expected_recs", expected_recs, "baseline_recs", baseline_recs, "compare",
                            " (another recommender's lists)")
    recs, truth, metrics, options = unpacked(recs, truth, metrics, {**options, "run_cols": run_cols, "segments": segments,
                                                                    "expected_recs": expected_recs}, "compare")
    segments = options.pop("segments")  # compared within each segment (evaluate's segments= evaluates within)
    segment_cols = options.pop("segment_cols", None)  # which of its columns (evaluate's option, read here)
    arguments = _evaluate_arguments(recs, truth, metrics_given(metrics, "compare"), options)
    share = checked_share(arguments["min_ess_share"])  # refused before any query, as by evaluate
    request = checked_request(arguments["metrics"], Inputs.of(arguments), con=arguments["con"],
                              progress=arguments["progress"])
    if not request.cols["run_cols"]:
        raise RecsqlError("compare needs runs: name the run key columns of recs, e.g. run_cols='model' "
                          "(CLI: --run-col model)")
    global_metrics(request.metrics)
    started = time.perf_counter()
    with bound(request) as (runner, plan, sources), \
            bound_segments(segments, runner, sources, plan.user_col, segment_cols) as grouping:
        if segments is None and plan.truth is not None and not plan.truth_has_runs:  # as evaluate warns
            def fetch(query: exp.Select) -> tuple:
                return tuple(runner.fetch_rows(render(query, runner.dialect, pretty=False))[0])
            warn_segment_like_runs(plan.run_cols, plan.user_col, sources["recs"].relation, plan.run_cols, plan.user_col,
                                   fetch, "compare")
        kinds = [family(sources["recs"].columns[c]) for c in plan.run_cols]
        sql, values, reads = statement_text(plan, request.metrics, settings, kinds, grouping, runner.statement_dialect)
        rows = records(fetch_statistics(runner, plan, sql, bool(values.global_kinds)))
        found = {c: max((int(r[c]) for r in rows if not missing(r[c])), default=0) for c in values.checks}
        refuse(runner, plan, found, list(sources["recs"].columns))
        refuse_segment_rows(rows, values)
    settle(rows, settings, values)
    tables = finish(rows, [m.column for m in request.metrics], values, settings)
    warn_unread(sources, reads)
    _warn_weights(arguments, request.metrics, share)
    return Comparison(tables=tables, metrics=request.metrics, settings=settings, sql=sql, engine=runner.name,
                      seconds=time.perf_counter() - started)


def _warn_weights(arguments: dict[str, Any], metrics: Sequence[Metric], share: float) -> None:
    """evaluate's warning on the importance weights (:mod:`recsql.weights_warning`) for the off-policy
    estimators compared that weigh the impressions: a run whose weights' effective sample size is below
    ``share`` (``min_ess_share``) of the logged impressions. It comes from evaluate itself, on those estimators
    alone (one more query, over the logs and the lists; none when no such estimator is compared or the
    share is 0), so that compare and evaluate warn alike."""
    estimators = weighing(metrics) if share else []
    if estimators:
        evaluate(**{**arguments, "metrics": estimators, "progress": None})


def finish_rows(rows: Any, metrics: Sequence[str | Metric] | str | Metric, run_cols: Iterable[str] | str, *,
                baseline: Any = None, tests: Sequence[str] = TESTS, ci: float = 0.95, resamples: int = 1000,
                seed: int = 0, correction: str | None = "holm", segment_cols: Iterable[str] | str = ()) -> Comparison:
    """The :class:`Comparison` from the rows of the statement ``to_sql(..., compare={...})`` rendered
    and a warehouse ran (a DataFrame, or anything with ``to_pandas()``): the t and normal tails and
    the corrections, which no SQL engine has. Pass the metrics, run columns and compare options the
    statement was rendered with (``segment_cols`` too when it compared within segments)."""
    settings = Settings.checked(tests, ci, resamples, seed, correction, baseline)
    parsed = parse_metrics(metrics)
    names = [run_cols] if isinstance(run_cols, str) else list(run_cols)
    import pandas as pd  # the rows as a warehouse's client gives them: any of pandas' inputs
    frame = rows.to_pandas() if hasattr(rows, "to_pandas") else pd.DataFrame(rows)
    known = {"run", "baseline", "metric", *(c for cs in RESULT_COLUMNS.values() for c in cs)}
    frame.columns = [c.lower() if c.lower() in known or re.fullmatch(r"_k\d+", c.lower()) else c
                     for c in map(str, frame.columns)]  # warehouses that upper-case unquoted names
    values = Values("", names, names, "", [m.column for m in parsed], global_kinds=global_metrics(parsed),
                    segment_cols=[segment_cols] if isinstance(segment_cols, str) else list(segment_cols))
    if values.segment_cols:
        values.segments = exp.to_table("segments")  # compared within segments (the statement's own relation)
    rows = records(frame)
    refuse_segment_rows(rows, values)
    settle(rows, settings, values)
    return Comparison(tables=finish(rows, [m.column for m in parsed], values, settings), metrics=parsed,
                      settings=settings)
