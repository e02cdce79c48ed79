"""One self-contained HTML report of an evaluation and a comparison of runs.

:func:`build_report` evaluates the asked metrics together with every cutoff 1..K of each (one
query), compares the runs (bootstrap intervals, paired tests; within segments too when given) and
returns a :class:`Report`; ``Evaluation.report(path)`` and ``Comparison.report(path)`` draw one
from results already computed. The page's figures are drawn from the results' frames
(:mod:`recsql.report.data`), which it also carries as JSON.

Modules: ``data`` (the frames), ``figures`` (inline SVG, drawn by ``svg``), ``tables`` (HTML, Markdown,
LaTeX), ``html`` (the page), ``build`` (:func:`build_report`, a layer above: it runs evaluate and
compare), ``cli`` (``recsql report``).
"""
from __future__ import annotations

import dataclasses
import importlib
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import RecsqlError
from .data import MAX_K, ReportData, assemble

__all__ = ["MAX_K", "Report", "build_report", "report", "comparison_html", "evaluation_html", "from_comparison", "from_evaluation"]


@dataclass
class Report:
    """A report: its frames (``data``) and the page (``html``)."""

    data: ReportData

    @property
    def html(self) -> str:
        from .html import page
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


def comparison_of(compare: Callable[[list], Any], metrics: Sequence[Any]) -> tuple[Any, list[str]]:
    """``compare(metrics)``, leaving out each global metric compare refuses to resample (its refusal names
    the metric: ``RecsqlError.metric``), with compare's reason as a note: that metric stays in the summary
    without intervals. A refusal that names no global metric asked, with per-user and global metrics
    asked, compares the per-user ones alone, saying why; one with no global metric asked is raised."""
    metrics, notes = list(metrics), []
    while metrics:
        try:
            return compare(list(metrics)), notes
        except RecsqlError as err:
            refused = [m for m in metrics if m.spec.population == "global" and str(m) == err.metric]
            per_user = [m for m in metrics if m.spec.population != "global"]
            if refused:
                metrics = [m for m in metrics if not any(m is r for r in refused)]
                notes.append(f"The global metric {refused[0].column} is shown without intervals or tests: {err}")
            elif per_user and len(per_user) < len(metrics):
                left = ", ".join(m.column for m in metrics if m.spec.population == "global")
                return compare(per_user), notes + [f"The global metric(s) {left} are shown without intervals or "
                                                   f"tests; the comparison with them was refused: {err}"]
            else:
                raise
    return None, notes


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
        comparison, notes = comparison_of(compare, asked)
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


def report(recs: Any = None, truth: Any = None, metrics: Any = None, *, out: str | None = None,
           evaluation: Any = None, comparison: Any = None, **options: Any) -> Report:
    """The report, ``recsql.report(...)``: the one function behind ``recsql report``,
    ``Evaluation.report`` and ``Comparison.report``. From the inputs (``recs``, ``truth`` and
    ``metrics``, or a :class:`recsql.Inputs` and the metrics) it evaluates and compares
    (:func:`build_report`: its keywords are ``options``); from results already computed
    (``evaluation=`` and/or ``comparison=``) it draws them (``options``: :func:`from_evaluation`'s or
    :func:`from_comparison`'s). Written to the file ``out`` when given (atomically); returns the
    :class:`Report`."""
    if recs is not None and (evaluation is not None or comparison is not None):
        raise RecsqlError("report: pass the inputs (recs, truth, metrics) or results already computed "
                          "(evaluation=, comparison=), not both")
    if recs is not None:
        made = importlib.import_module(".build", __name__).build_report(recs, truth, metrics, **options)
    elif comparison is not None:
        made = from_comparison(comparison, evaluation=evaluation, **options)
    elif evaluation is not None:
        made = from_evaluation(evaluation, **options)
    else:
        raise RecsqlError("report: pass the inputs, e.g. recsql.report(recs, truth, ['ndcg@10'], run_cols='model', "
                          "out='report.html'), or an evaluation= / comparison= already computed")
    if out is not None:
        made.write(out)
    return made


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


def __getattr__(name: str) -> object:
    """``build_report``, from :mod:`recsql.report.build` on first use (PEP 562, as the ``recsql``
    package does): it runs evaluate and compare, which draw their reports from this module."""
    if name != "build_report":
        raise AttributeError(f"module 'recsql.report' has no attribute {name!r}")
    return importlib.import_module(".build", __name__).build_report


class _Callable(types.ModuleType):
    """This module, callable: ``recsql.report(...)`` is :func:`report` (the package ``recsql.report``
    keeps its modules and names)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return report(*args, **kwargs)


sys.modules[__name__].__class__ = _Callable
