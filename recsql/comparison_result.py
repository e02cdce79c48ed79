"""The result of a comparison (:class:`Comparison`) and how it is finished from the statistics
statement's rows (:func:`finish`): the t and normal tails and the multiple-testing corrections,
which no SQL engine has (:mod:`recsql.significance`)."""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from . import run_labels
from .comparison_settings import ALL_TESTS, TEST_COLUMNS, UNCORRECTED, Settings
from .comparison_sql import Values
from .run_labels import plain
from .errors import RecsqlError
from .metrics import Metric
from .significance import corrected, difference_sd, paired_t, randomization_p, wilcoxon_p

if TYPE_CHECKING:
    import pandas as pd

COUNTS = ("wins", "ties", "losses")  # a pair's; none for a global metric


class Table:
    """A result table as rows (dicts) and its columns, and its pandas DataFrame, made when first asked for (the
    command line prints the rows; a third of a second of pandas' import is spared)."""

    def __init__(self, rows: list[dict[str, Any]], columns: list[str], nullable_ints: Iterable[str] = ()) -> None:
        self.rows, self.columns, self._nullable, self._frame = rows, columns, tuple(nullable_ints), None

    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            import pandas as pd
            frame = pd.DataFrame(self.rows, columns=self.columns)
            self._frame = frame.astype({c: "Int64" for c in self._nullable}) if self._nullable else frame
        return self._frame

    def __getstate__(self) -> dict[str, Any]:
        return {"rows": self.rows, "columns": self.columns, "_nullable": self._nullable, "_frame": None}


@dataclass
class Comparison:
    """The result of :func:`recsql.compare`: ``runs`` (one row per run and metric: mean and its bootstrap
    interval over users) and ``tests`` (one row per (run, baseline, metric): the paired tests)."""

    tables: tuple[Table, Table] = field(repr=False)  # runs, tests
    metrics: list[Metric]
    settings: Settings
    sql: str = field(repr=False, default="")
    engine: str = "DuckDB"
    seconds: float = 0.0

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run and metric: mean and its bootstrap interval over users."""
        return self.tables[0].frame()

    @property
    def tests(self) -> pd.DataFrame:
        """One row per (run, baseline, metric): the paired tests."""
        return self.tables[1].frame()

    def __repr__(self) -> str:
        return (f"Comparison({', '.join(map(str, self.metrics))}; {self.settings.resamples} resamples, seed "
                f"{self.settings.seed}, correction {self.settings.correction})\n{self.tests.to_string(index=False)}")

    # the report and its tables (recsql/report): thin delegations

    def report(self, path: str, *, evaluation: Any = None, title: str | None = None, **options: Any) -> str:
        """Write one self-contained HTML report of this comparison to ``path`` (docs/guide/report.md); the
        curves and per-user distributions need the ``evaluation`` of the same runs too."""
        from .report import report as make_report
        make_report(comparison=self, evaluation=evaluation, out=path, title=title, **options)
        return str(path)

    def to_markdown(self, intervals: bool = True) -> str:
        """The runs × metrics table in Markdown: mean [interval], and as ranx does, superscript letters
        of the runs each value is significantly better than; its legend names the test and alpha."""
        from .report import from_comparison
        return from_comparison(self).to_markdown(intervals)

    def to_latex(self, intervals: bool = True) -> str:
        """The same table as :meth:`to_markdown` as a LaTeX ``table`` (booktabs), markers as ``$^{a}$``."""
        from .report import from_comparison
        return from_comparison(self).to_latex(intervals)

    def _repr_html_(self) -> str:
        from .report import comparison_html
        return comparison_html(self)

    # decisions from the paired differences (recsql/decisions.py; docs/guide/decisions.md)

    def power(self, power: float = 0.8, alpha: float = 0.05, difference: float | None = None, *, test: str = "t",
              pilot: Any = None, simulations: int = 1000) -> pd.DataFrame:
        """Per pair: the smallest difference (in the metric's units) the two-sided paired t-test detects
        with probability ``power`` among its ``n`` users, at ``alpha`` divided by the number of pairs when
        a correction is in force (Bonferroni's level, and the first step of Holm's and
        Benjamini–Hochberg's); with ``difference``, also the power to detect it now and the users it
        needs. The pair's standard deviation of differences stands for the population's (a pilot).
        ``test="wilcoxon"`` or ``"randomization"``: the same for that test, simulated (``simulations``
        comparisons) from the per-user differences of ``pilot``, the evaluation of these runs
        (:mod:`recsql.power_simulation`); ``power_se`` is the simulated power's Monte Carlo error."""
        from .comparison_decisions import power_table
        return power_table(self, power, alpha, difference, test, pilot, simulations)

    def noninferiority(self, margin: float, *, relative: bool = False, alpha: float = 0.05,
                       lower_is_better: Any = ()) -> pd.DataFrame:
        """Per pair: is the run no worse than its baseline by more than ``margin``? The one-sided paired
        t-test of H0: difference ≤ −margin (H0: difference ≥ margin for the metrics named in
        ``lower_is_better``), its p-value corrected as the comparison's, the one-sided (1 − alpha)
        confidence bound, and the verdict. ``relative``: the margin is a share of the baseline's mean."""
        from .comparison_decisions import noninferiority_table
        return noninferiority_table(self, margin, relative, alpha, lower_is_better)

    def equivalence(self, margin: float, *, relative: bool = False, alpha: float = 0.05) -> pd.DataFrame:
        """Per pair: are the run and its baseline equivalent within ±``margin``? Schuirmann's two one-sided
        tests (TOST) of the paired differences: p = the larger of the two one-sided p-values, corrected
        as the comparison's; the (1 − 2·alpha) interval; the verdict."""
        from .comparison_decisions import equivalence_table
        return equivalence_table(self, margin, relative, alpha)


def missing(value: Any) -> bool:
    """NULL as an engine's rows hold it: None, NaN, or pandas' NA (a DB-API engine's frame), without pandas."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType"


def _number(value: Any) -> float:
    return math.nan if missing(value) else float(value)


def _count(value: Any) -> int:
    return 0 if missing(value) else int(value)


def _labels(rows: list[dict[str, Any]], names: list[str]) -> dict[int, Any]:
    """Run index -> run label: the key's value for one run column, ``col=value/col=value`` for
    several (:mod:`recsql.run_labels`); two runs that would share a label are refused."""
    own: dict[int, dict[str, Any]] = {}
    for row in rows:
        if int(row["baseline"]) == 0:
            own.setdefault(int(row["run"]), row)
    keys = [f"_k{i}" for i in range(len(names))]
    if len(names) == 1:
        labels = {run: plain(row[keys[0]]) for run, row in own.items()}
    else:
        labels = {run: run_labels.label([row[k] for k in keys], names) for run, row in own.items()}
    run_labels.refuse_shared(((tuple(plain(row[k]) for k in keys), labels[run]) for run, row in own.items()), "compare")
    return labels


def finish(rows: list[dict[str, Any]], names: list[str], values: Values, settings: Settings) -> tuple[Table, Table]:
    """``runs`` and ``tests`` from the statistics statement's rows (as dicts; metric i is ``names[i]``): tail
    probabilities and corrections."""
    labels = _labels(rows, values.labels)
    segments = [f"_s{i}" for i in range(len(values.segment_cols))]

    def segment(row: Any) -> dict[str, Any]:
        return {name: plain(row[mark]) for name, mark in zip(values.segment_cols, segments)}

    runs = [{**segment(r), "run": labels[int(r["run"])], "metric": names[int(r["metric"]) % len(names)],
             "mean": _number(r["mean"]), "ci_low": _number(r["ci_low"]), "ci_high": _number(r["ci_high"]),
             "n_users": _count(r["n"])} for r in rows if int(r["baseline"]) == 0]
    tests = []
    for r in rows:
        if int(r["baseline"]) == 0:
            continue
        if int(r["metric"]) % len(names) in values.global_kinds:
            tests.append(_global_test(r, labels, names, segment(r), settings))
            continue
        t, p_t, effect = paired_t(_count(r["n"]), _number(r["mean"]), _number(r["ss"]))
        tests.append({**segment(r), "run": labels[int(r["run"])], "baseline": labels[int(r["baseline"])],
                      "metric": names[int(r["metric"]) % len(names)],
                      "n": _count(r["n"]), "mean_diff": _number(r["mean"]), "ci_low": _number(r["ci_low"]),
                      "ci_high": _number(r["ci_high"]), "t": t, "p_t": p_t,
                      "p_wilcoxon": wilcoxon_p(_count(r["n_nonzero"]), _number(r["r_plus"]), _number(r["ties_term"])),
                      "p_randomization": randomization_p(_count(r["extreme"]), settings.resamples),
                      "p_tukey": randomization_p(_count(r.get("extreme_tukey")), settings.resamples),
                      "sd_diff": difference_sd(_count(r["n"]), _number(r["ss"])),
                      "effect_size": effect, "wins": _count(r["wins"]), "ties": _count(r["ties"]),
                      "losses": _count(r["losses"])})
    columns = [*values.segment_cols, "run", "baseline", "metric", "n", "mean_diff", "ci_low", "ci_high", "t", "p_t",
               "p_wilcoxon", "p_randomization", "p_tukey", "sd_diff", "effect_size", *COUNTS]
    for test in ALL_TESTS:
        p = TEST_COLUMNS[test][-1]
        if test in settings.tests and test not in UNCORRECTED:
            for row, adjusted in zip(tests, corrected([row[p] for row in tests], settings.correction)):
                row[f"{p}_adj"] = adjusted
            columns.insert(columns.index(p) + 1, f"{p}_adj")
        elif test not in settings.tests:
            columns = [c for c in columns if c not in TEST_COLUMNS[test]]
    run_columns = [*values.segment_cols, "run", "metric", "mean", "ci_low", "ci_high", "n_users"]
    # no wins, ties or losses for a global metric: pandas' nullable integers
    return Table(runs, run_columns), Table(tests, columns, COUNTS if values.global_kinds else ())


def _global_test(r: Any, labels: dict[int, Any], names: list[str], segment: dict[str, Any],
                 settings: Settings) -> dict[str, Any]:
    """A pair's row for a global metric (one number per run): the difference, its bootstrap interval
    and the randomization test by swapping users' lists; no per-user differences, so no t, Wilcoxon,
    Tukey HSD, effect size, wins, ties or losses (docs/guide/compare.md)."""
    extreme = r["extreme"]
    return {**segment, "run": labels[int(r["run"])], "baseline": labels[int(r["baseline"])],
            "metric": names[int(r["metric"]) % len(names)], "n": _count(r["n"]),
            "mean_diff": _number(r["mean"]), "ci_low": _number(r["ci_low"]), "ci_high": _number(r["ci_high"]),
            "t": math.nan, "p_t": math.nan, "p_wilcoxon": math.nan,
            "p_randomization": math.nan if missing(extreme) else randomization_p(int(extreme), settings.resamples),
            "p_tukey": math.nan, "sd_diff": math.nan, "effect_size": math.nan, "wins": None, "ties": None,
            "losses": None}


def _missing_baseline(settings: Settings, labels: Iterable[Any]) -> RecsqlError:
    runs = ", ".join(repr(v) for v in labels)
    close = difflib.get_close_matches(str(settings.baseline), [str(v) for v in labels], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return RecsqlError(f"baseline={settings.baseline!r} is not a run of recs{hint}; the runs are: {runs}")


def settle(rows: list[dict[str, Any]], settings: Settings, values: Values) -> None:
    """Refuse a result without pairs: fewer than two runs, or a baseline that is not a run."""
    if settings.baseline is not None and rows and not any(int(r["baseline"]) != 0 for r in rows):
        raise _missing_baseline(settings, _labels(rows, values.labels).values())
    if len({r["run"] for r in rows if int(r["baseline"]) == 0}) < 2:
        raise RecsqlError(f"compare needs at least two runs in recs (run columns {', '.join(values.labels)}); "
                          "found fewer with values for the asked metrics")
