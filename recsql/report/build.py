"""Evaluate, compare and report in one call (:func:`build_report`, what ``recsql report`` runs);
``recsql.report.build_report`` names it too."""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Sequence

from .. import api
from ..comparison import compare
from ..errors import RecsqlError, RecsqlWarning
from ..inputs import ROLES, metrics_given, renamed, unpacked
from ..metrics import parse_metrics
from ..sources import looks_like_path
from . import MAX_K, Report, comparison_of
from .data import assemble, curve_metrics


def build_report(recs: Any, truth: Any = None, metrics: Any = None, *, run_cols: Any = (), baseline: Any = None,
                 segments: Any = None, segment_cols: Sequence[str] | None = None, curves: bool = True,
                 max_k: int = MAX_K, tests: Sequence[str] = ("t", "wilcoxon", "randomization"), ci: float = 0.95,
                 resamples: int = 1000, seed: int = 0, correction: str | None = "holm", expected_recs: Any = None,
                 baseline_recs: Any = None, title: str | None = None, progress: Callable[[str], None] | None = None,
                 date: bool | str | None = None, **options: Any) -> Report:
    """Evaluate, compare and report in one call (``recs`` may be a :class:`recsql.Inputs`, then
    ``truth`` is left out: ``build_report(inputs, metrics, baseline=...)``).

    ``metrics`` are evaluated with every cutoff 1..K of each metric that has one (K = its largest
    asked cutoff, at most ``max_k``), all in ONE query; the runs (``run_cols``) are compared against
    ``baseline`` (None: every pair) with :func:`recsql.compare`'s ``tests``, ``ci``, ``resamples``,
    ``seed`` and ``correction``; ``segments`` (a table, file or frame with the user column and
    segment columns, one row per user; ``segment_cols`` picks some of them) adds a comparison within
    each segment. ``options`` are :func:`recsql.evaluate`'s (``con``, columns, ``convention``, ...; ``expected_recs``:
    another recommender's lists, whose old name ``baseline_recs`` is accepted until the next release).
    ``progress`` is called with each step's name. ``date``: None (the default) puts no date on the
    page, so the same results give the same page byte for byte; True the current UTC date and time;
    a string that text."""
    step = progress or (lambda _: None)
    expected_recs = renamed("expected_recs", expected_recs, "baseline_recs", baseline_recs, "report",
                            " (another recommender's lists)")
    recs, truth, metrics, options = unpacked(recs, truth, metrics, {**options, "run_cols": run_cols, "segments": segments,
                                                                    "segment_cols": segment_cols,
                                                                    "expected_recs": expected_recs}, "report")
    run_cols, segments, segment_cols, expected_recs = (options.pop(k) for k in ("run_cols", "segments", "segment_cols",
                                                                               "expected_recs"))
    metrics = metrics_given(metrics, "report")
    if segments is None and segment_cols:  # the segment columns are columns of truth
        segments = truth
    asked = parse_metrics(metrics)
    extra = curve_metrics(asked, max_k) if curves else []
    step(f"evaluating {len(asked)} metric(s)" + (f" and {len(extra)} cutoff(s) for the curves" if extra else ""))
    given_inputs = {"recs": recs, "truth": truth, "expected_recs": expected_recs, "segments": segments}
    inputs = {role: given_inputs[role] if role in given_inputs else options.get(role) for role in ROLES}
    with warnings.catch_warnings(record=True) as caught:  # evaluate's warnings (a low ESS) go on the page too
        evaluation = api.evaluate(recs, truth, [*asked, *extra], run_cols=run_cols, expected_recs=expected_recs,
                                  **options)
    for warning in caught:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    warned = [str(w.message) for w in caught if issubclass(w.category, RecsqlWarning)]
    shown = [next(e for e in evaluation.metrics if e == m) for m in asked]  # as evaluated (named as asked)
    settings = dict(tests=tests, ci=ci, resamples=resamples, seed=seed, correction=correction,
                    expected_recs=expected_recs, run_cols=run_cols, baseline=baseline,
                    **{**options, "min_ess_share": 0})  # evaluate has warned on the weights already
    comparison = segmented = None
    notes: list[str] = [f"evaluate warned: {text}" for text in dict.fromkeys(warned)]
    if evaluation.run_cols and len(evaluation.summary) >= 2:
        step("comparing runs")
        overall = partial(comparison_of, lambda ms: compare(recs, truth, ms, **settings), shown)
        within = None
        if segments is not None:
            step("comparing runs within segments")
            table = _segment_table(segments, segment_cols, options.get("user_col", "user_id"), options.get("con"))
            within = partial(comparison_of, lambda ms: compare(recs, truth, ms, segments=table, **settings), shown)
        # the comparisons' warnings shown once each, and not again when evaluate gave the same (an unread input);
        # the threads' own catch_warnings nest inside this one (recsql.engines.duckdb takes turns in them)
        with warnings.catch_warnings(record=True) as compared:
            (comparison, more), (segmented, more_within) = side_by_side(overall, within, options.get("con") is None)
        shown_before = {str(w.message) for w in caught}
        for warning in compared:
            if str(warning.message) not in shown_before:
                shown_before.add(str(warning.message))
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        notes += more + [f"Within segments: {n}" for n in more_within]
    else:
        notes.append("One run: means without intervals or tests (a comparison needs two runs or more).")
        if segments is not None:
            notes.append("Segments are compared between runs: with one run they are not shown.")
    step("drawing the figures")
    given = {"run_cols": run_cols, **options, "segment_cols": segment_cols,
             "curves": f"k = 1..K, K = the largest asked cutoff (at most {max_k})" if curves else "off"}
    for key in ("con", "progress", *ROLES):  # the inputs are named in the provenance, by their fingerprints
        given.pop(key, None)
    return Report(assemble(asked=shown, evaluation=evaluation, comparison=comparison, segmented=segmented,
                           options=given, inputs=inputs, title=title, notes=notes, date=date))


def side_by_side(first: Callable[[], Any], second: Callable[[], Any] | None,
                 concurrent: bool) -> tuple[Any, Any]:
    """``(first(), second())``, or ``(first(), (None, []))`` without a ``second``. When ``concurrent``
    (no connection was given: each call takes its own cursor of recsql's shared in-memory DuckDB),
    ``second`` runs in a thread while ``first`` runs here: DuckDB releases the GIL while it plans and runs
    a statement, so the overall comparison and the one within segments share the machine's cores instead
    of following each other. Their results, and an error of either (``first``'s when both fail: the pool
    waits for ``second`` before it is raised), are the same as run in turn."""
    if second is None:
        return first(), (None, [])
    if not concurrent:
        return first(), second()
    with ThreadPoolExecutor(1, thread_name_prefix="recsql-report-within-segments") as pool:
        later = pool.submit(second)
        return first(), later.result()


def _segment_table(segments: Any, columns: Sequence[str] | None, user_col: str, con: Any) -> Any:
    """The segments input with only the user column and ``columns`` (every column when None), as
    DuckDB reads it (a file, a table of ``con`` when it is a .duckdb path, or a frame); each user once."""
    if not columns:
        return segments
    import duckdb
    connection = duckdb.connect(con, read_only=True) if isinstance(con, str) else duckdb.connect()
    try:
        if isinstance(segments, str):
            relation = connection.sql(f"SELECT * FROM {_quoted_source(segments)}") if looks_like_path(segments) \
                else connection.table(segments)
        else:
            relation = connection.from_df(segments) if hasattr(segments, "columns") else connection.from_arrow(segments)
        present = {c.lower(): c for c in relation.columns}
        missing = [c for c in [user_col, *columns] if c.lower() not in present]
        if missing:
            raise RecsqlError(f"segments: no column {missing[0]!r}; its columns are {', '.join(relation.columns)}")
        picked = ", ".join(_identifier(present[c.lower()]) for c in [user_col, *columns])
        return relation.query("segments_in", f"SELECT DISTINCT {picked} FROM segments_in").df()
    except duckdb.Error as err:
        raise RecsqlError(f"segments {segments!r} could not be read: {err}") from None
    finally:
        connection.close()


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quoted_source(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"
