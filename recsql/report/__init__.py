"""One self-contained HTML report of an evaluation and a comparison of runs.

:func:`build_report` evaluates the asked metrics together with every cutoff 1..K of each (one
query), compares the runs (bootstrap intervals, paired tests; within segments too when given) and
returns a :class:`Report`; ``Evaluation.report(path)`` and ``Comparison.report(path)`` draw one
from results already computed. The page's figures are drawn from the results' frames
(:mod:`recsql.report.data`), which it also carries as JSON.

Modules: ``data`` (the frames), ``figures`` (matplotlib, inline SVG), ``tables`` (HTML, Markdown,
LaTeX), ``html`` (the page), ``cli`` (``recsql report``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import RecsqlError
from .data import MAX_K, ReportData, assemble, curve_metrics

__all__ = ["MAX_K", "Report", "build_report", "comparison_html", "evaluation_html", "from_comparison", "from_evaluation"]


@dataclass
class Report:
    """A report: its frames (``data``) and the page (``html``)."""

    data: ReportData

    @property
    def html(self) -> str:
        from ..extras import require
        from .html import page
        require("matplotlib", "the report's figures (recsql report, .report())")
        return page(self.data)

    def write(self, path: str, option: str | None = None) -> str:
        """Write the page to ``path`` atomically (a temporary file beside it, then renamed; through a
        symbolic link to its file; a new file with the usual mode, 0666 less the umask, a replaced
        one with its own); returns the path. ``option``: the flag an error names (``--out``)."""
        from ..files import write_file
        text = self.html

        def write(temporary: str) -> None:
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(text)

        write_file(str(path), write, option)
        return str(path)

    def to_markdown(self, intervals: bool = True) -> str:
        from .tables import to_markdown
        return to_markdown(self.data, intervals)

    def to_latex(self, intervals: bool = True) -> str:
        from .tables import to_latex
        return to_latex(self.data, intervals)


def _compared(compare: Callable[[list], Any], metrics: Sequence[Any]) -> tuple[Any, list[str]]:
    """``compare(metrics)``; when that is refused and some metrics are global (one number per run),
    again without them, saying why: they stay in the summary without intervals."""
    try:
        return compare(list(metrics)), []
    except RecsqlError as err:
        per_user = [m for m in metrics if m.spec.population != "global"]
        if len(per_user) == len(metrics) or not per_user:
            raise
        left = ", ".join(m.column for m in metrics if m.spec.population == "global")
        return compare(per_user), [f"The global metric(s) {left} are shown without intervals or tests; the "
                                   f"comparison with them was refused: {err}"]


def from_evaluation(evaluation: Any, *, baseline: Any = None, comparison: Any = None, title: str | None = None,
                    options: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None,
                    asked: Sequence[Any] | None = None, tests: Sequence[str] = ("t", "wilcoxon", "randomization"),
                    ci: float = 0.95, resamples: int = 1000, seed: int = 0, correction: str | None = "holm",
                    compared: bool = True, date: bool | str | None = None) -> Report:
    """A report of an :class:`recsql.Evaluation`; with two or more runs, no ``comparison`` given and
    ``compared``, the runs are compared from the evaluation's own per-user values (``Evaluation.compare``)."""
    asked = list(asked or evaluation.metrics)
    notes: list[str] = []
    if not compared:
        pass
    elif comparison is None and evaluation.run_cols and len(evaluation.summary) >= 2:
        def compare(metrics: list) -> Any:
            return dataclasses.replace(evaluation, metrics=metrics).compare(
                baseline, tests=tests, ci=ci, resamples=resamples, seed=seed, correction=correction)
        comparison, notes = _compared(compare, asked)
    elif comparison is None:
        notes.append("One run: means without intervals or tests (a comparison needs two runs or more).")
    return Report(assemble(asked=asked, evaluation=evaluation, comparison=comparison, options=options,
                           inputs=inputs, title=title, notes=notes, date=date))


def from_comparison(comparison: Any, *, evaluation: Any = None, title: str | None = None,
                    options: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None,
                    date: bool | str | None = None) -> Report:
    """A report of a :class:`recsql.Comparison` (within segments when it has segment columns); the
    curves and per-user distributions need the ``evaluation`` too."""
    segmented = list(comparison.runs.columns[:1]) != ["run"]
    return Report(assemble(asked=comparison.metrics, evaluation=evaluation,
                           comparison=None if segmented else comparison, segmented=comparison if segmented else None,
                           options=options, inputs=inputs, title=title, date=date))


def build_report(recs: Any, truth: Any, metrics: Any, *, run_cols: Any = (), baseline: Any = None,
                 segments: Any = None, segment_cols: Sequence[str] | None = None, curves: bool = True,
                 max_k: int = MAX_K, tests: Sequence[str] = ("t", "wilcoxon", "randomization"), ci: float = 0.95,
                 resamples: int = 1000, seed: int = 0, correction: str | None = "holm", baseline_recs: Any = None,
                 title: str | None = None, progress: Callable[[str], None] | None = None,
                 date: bool | str | None = None, **options: Any) -> Report:
    """Evaluate, compare and report in one call.

    ``metrics`` are evaluated with every cutoff 1..K of each metric that has one (K = its largest
    asked cutoff, at most ``max_k``), all in ONE query; the runs (``run_cols``) are compared against
    ``baseline`` (None: every pair) with :func:`recsql.compare`'s ``tests``, ``ci``, ``resamples``,
    ``seed`` and ``correction``; ``segments`` (a table, file or frame with the user column and
    segment columns, one row per user; ``segment_cols`` picks some of them) adds a comparison within
    each segment. ``options`` are :func:`recsql.evaluate`'s (``con``, columns, ``convention``, ...).
    ``progress`` is called with each step's name. ``date``: None (the default) puts no date on the
    page, so the same results give the same page byte for byte; True the current UTC date and time;
    a string that text."""
    from ..api import evaluate
    from ..comparison import compare
    from ..metrics import parse_metrics
    step = progress or (lambda _: None)
    if segments is None and segment_cols:  # the segment columns are columns of truth
        segments = truth
    asked = parse_metrics(metrics)
    extra = curve_metrics(asked, max_k) if curves else []
    step(f"evaluating {len(asked)} metric(s)" + (f" and {len(extra)} cutoff(s) for the curves" if extra else ""))
    inputs = {"recs": recs, "truth": truth, **{k: options.get(k) for k in ("items", "interactions", "catalog",
                                                                          "item_features")},
              "baseline_recs": baseline_recs, "segments": segments}
    evaluation = evaluate(recs, truth, [*asked, *extra], run_cols=run_cols, baseline=baseline_recs, **options)
    shown = [next(e for e in evaluation.metrics if e == m) for m in asked]  # as evaluated (named as asked)
    settings = dict(tests=tests, ci=ci, resamples=resamples, seed=seed, correction=correction,
                    baseline_recs=baseline_recs, run_cols=run_cols, baseline=baseline, **options)
    comparison = segmented = None
    notes: list[str] = []
    if evaluation.run_cols and len(evaluation.summary) >= 2:
        step("comparing runs")
        comparison, notes = _compared(lambda ms: compare(recs, truth, ms, **settings), shown)
        if segments is not None:
            step("comparing runs within segments")
            table = _segment_table(segments, segment_cols, options.get("user_col", "user_id"), options.get("con"))
            segmented, more = _compared(lambda ms: compare(recs, truth, ms, segments=table, **settings), shown)
            notes += [f"Within segments: {n}" for n in more]
    else:
        notes.append("One run: means without intervals or tests (a comparison needs two runs or more).")
        if segments is not None:
            notes.append("Segments are compared between runs: with one run they are not shown.")
    step("drawing the figures")
    given = {"run_cols": run_cols, **options, "segment_cols": segment_cols,
             "curves": f"k = 1..K, K = the largest asked cutoff (at most {max_k})" if curves else "off"}
    given.pop("con", None)
    given.pop("progress", None)
    return Report(assemble(asked=shown, evaluation=evaluation, comparison=comparison, segmented=segmented,
                           options=given, inputs=inputs, title=title, notes=notes, date=date))


def _segment_table(segments: Any, columns: Sequence[str] | None, user_col: str, con: Any) -> Any:
    """The segments input with only the user column and ``columns`` (every column when None), as
    DuckDB reads it (a file, a table of ``con`` when it is a .duckdb path, or a frame); each user once."""
    if not columns:
        return segments
    import duckdb
    connection = duckdb.connect(con, read_only=True) if isinstance(con, str) else duckdb.connect()
    try:
        if isinstance(segments, str):
            from ..sources import looks_like_path
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


def evaluation_html(evaluation: Any) -> str:
    """An evaluation's summary as an HTML table (Jupyter's ``_repr_html_``)."""
    from .tables import frame_html
    return frame_html(evaluation.summary)


def comparison_html(comparison: Any) -> str:
    """A comparison as HTML (Jupyter's ``_repr_html_``): the summary table with intervals and
    markers (per segment: the runs' means), then every test."""
    from .tables import frame_html, summary_html
    report = from_comparison(comparison)
    head = summary_html(report.data) if report.data.comparison is not None else frame_html(comparison.runs)
    return f"<div>{head}{frame_html(comparison.tests)}</div>"
