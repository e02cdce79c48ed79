"""What :func:`recsql.evaluate` returns: :class:`Evaluation`, its summary and per-user rows with the options
they were computed with, and what can be done with them (written to tables, compared between its runs,
reported)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from .metrics import Metric
from .result_frames import ResultFrames

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Evaluation:
    """The result of :func:`evaluate`: ``summary`` (one row per run) and ``per_user`` DataFrames, each made when
    first read (``rows``: the engine's rows and the statements that finish them; the command line reads them as
    Arrow tables, without pandas)."""

    rows: ResultFrames = field(repr=False)
    metrics: list[Metric]
    sql: str = field(repr=False)
    engine: str = "DuckDB"
    seconds: float = 0.0
    inputs: tuple[str, ...] = ()  # the table names read (an output may not replace them)
    rows_in: int = 0  # recommendation rows read
    run_cols: tuple[str, ...] = ()  # the run key columns of summary and per_user
    user_col: str = "user_id"  # the user column of per_user
    # the options it was computed with: those given, and the convention's tie rule and population
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def summary(self) -> pd.DataFrame:
        """One row per run: the run keys, the user counts, one column per metric."""
        return self.rows.frame("summary")

    @property
    def per_user(self) -> pd.DataFrame:
        """One row per (run, user): the run keys, the user, one column per metric."""
        return self.rows.frame("per_user")

    def write(self, con: Any, summary: str | None = None, per_user: str | None = None, replace: bool = False) -> None:
        """Write the summary and/or per-user rows as tables of a DuckDB database (a connection or a
        ``.duckdb`` path), atomically; refuses, before writing anything, to replace a table the
        evaluation read (however it is qualified or capitalised, or read through a view), a view, or
        a table recsql did not write (unless ``replace``), or to write both to one table. Each table
        written is commented "written by recsql: summary" (or "per_user"), so writing it again needs
        no ``replace``."""
        from .output import write_outputs
        write_outputs(con, [(label, name, frame) for label, name, frame in
                            (("summary", summary, self.summary), ("per_user", per_user, self.per_user))
                            if name is not None], protected=self.inputs, replace=replace)

    def compare(self, baseline: Any = None, *, tests: Sequence[str] = ("t", "wilcoxon", "randomization"),
                ci: float = 0.95, resamples: int = 1000, seed: int = 0, correction: str | None = "holm",
                segments: Any = None, segment_cols: Sequence[str] | str | None = None) -> Any:
        """Paired tests and bootstrap intervals between this evaluation's runs, from its per-user values,
        as :func:`recsql.compare` computes them (the same SQL, run on a private in-memory DuckDB);
        ``segments``: compared within each segment, as :func:`recsql.compare`'s (a DataFrame, an Arrow
        table or a file: one row per user, the user column and the segment columns; ``segment_cols`` names
        those to compare within, default every column but the user's). Returns a
        :class:`recsql.Comparison`."""
        from .comparison_result import Comparison
        from .comparison_run import compare_per_user, refuse_global
        from .comparison_settings import Settings
        settings = Settings.checked(tests, ci, resamples, seed, correction, baseline)
        refuse_global(self.metrics)
        started = time.perf_counter()
        tables, sql = compare_per_user(self.per_user, [m.column for m in self.metrics], self.run_cols,
                                       self.user_col, settings, segments, segment_cols)
        return Comparison(tables=tables, metrics=list(self.metrics), settings=settings, sql=sql,
                          seconds=time.perf_counter() - started)

    def __repr__(self) -> str:
        return f"Evaluation({', '.join(map(str, self.metrics))})\n{self.summary.to_string(index=False)}"

    # the report and its tables (recsql/report): thin delegations

    def report(self, path: str, *, baseline: Any = None, title: str | None = None, **options: Any) -> str:
        """Write one self-contained HTML report of this evaluation to ``path`` (docs/guide/report.md): the
        summary, with two or more runs compared against ``baseline`` (None: every pair) from these
        per-user values (``options``: :meth:`compare`'s; ``inputs={"recs": ...}`` to fingerprint the
        inputs), per-user distributions, curves over the cutoffs evaluated, definitions and the SQL."""
        from .report import report as make_report
        make_report(evaluation=self, out=path, baseline=baseline, title=title, **{"options": self.options, **options})
        return str(path)

    def to_markdown(self) -> str:
        """The summary table (runs × metrics) in Markdown."""
        from .report import from_evaluation
        return from_evaluation(self, compared=False).to_markdown()

    def to_latex(self) -> str:
        """The summary table (runs × metrics) as a LaTeX table."""
        from .report import from_evaluation
        return from_evaluation(self, compared=False).to_latex()

    def _repr_html_(self) -> str:
        from .report import evaluation_html
        return evaluation_html(self)
