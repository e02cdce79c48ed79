"""The result of a comparison (:class:`Comparison`) and how it is finished from the statistics
statement's rows (:func:`finish`): the t and normal tails and the multiple-testing corrections,
which no SQL engine has (:mod:`recsql.significance`)."""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import pandas as pd

from . import run_labels
from .comparison_settings import ALL_TESTS, TEST_COLUMNS, UNCORRECTED, Settings
from .comparison_sql import Values
from .run_labels import plain
from .errors import RecsqlError
from .metrics import Metric
from .report import comparison_html, from_comparison
from .report import report as make_report
from .comparison_decisions import equivalence_table, noninferiority_table, power_table
from .significance import corrected, difference_sd, paired_t, randomization_p, wilcoxon_p


@dataclass
class Comparison:
    """The result of :func:`recsql.compare`: ``runs`` (one row per run and metric: mean and its bootstrap
    interval over users) and ``tests`` (one row per (run, baseline, metric): the paired tests)."""

    runs: pd.DataFrame
    tests: pd.DataFrame
    metrics: list[Metric]
    settings: Settings
    sql: str = field(repr=False, default="")
    engine: str = "DuckDB"
    seconds: float = 0.0

    def __repr__(self) -> str:
        return (f"Comparison({', '.join(map(str, self.metrics))}; {self.settings.resamples} resamples, seed "
                f"{self.settings.seed}, correction {self.settings.correction})\n{self.tests.to_string(index=False)}")

    # the report and its tables (recsql/report): thin delegations

    def report(self, path: str, *, evaluation: Any = None, title: str | None = None, **options: Any) -> str:
        """Write one self-contained HTML report of this comparison to ``path`` (docs/guide/report.md); the
        curves and per-user distributions need the ``evaluation`` of the same runs too."""
        make_report(comparison=self, evaluation=evaluation, out=path, title=title, **options)
        return str(path)

    def to_markdown(self, intervals: bool = True) -> str:
        """The runs × metrics table in Markdown: mean [interval], and as ranx does, superscript letters
        of the runs each value is significantly better than; its legend names the test and alpha."""
        return from_comparison(self).to_markdown(intervals)

    def to_latex(self, intervals: bool = True) -> str:
        """The same table as :meth:`to_markdown` as a LaTeX ``table`` (booktabs), markers as ``$^{a}$``."""
        return from_comparison(self).to_latex(intervals)

    def _repr_html_(self) -> str:
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
        return power_table(self, power, alpha, difference, test, pilot, simulations)

    def noninferiority(self, margin: float, *, relative: bool = False, alpha: float = 0.05,
                       lower_is_better: Any = ()) -> pd.DataFrame:
        """Per pair: is the run no worse than its baseline by more than ``margin``? The one-sided paired
        t-test of H0: difference ≤ −margin (H0: difference ≥ margin for the metrics named in
        ``lower_is_better``), its p-value corrected as the comparison's, the one-sided (1 − alpha)
        confidence bound, and the verdict. ``relative``: the margin is a share of the baseline's mean."""
        return noninferiority_table(self, margin, relative, alpha, lower_is_better)

    def equivalence(self, margin: float, *, relative: bool = False, alpha: float = 0.05) -> pd.DataFrame:
        """Per pair: are the run and its baseline equivalent within ±``margin``? Schuirmann's two one-sided
        tests (TOST) of the paired differences: p = the larger of the two one-sided p-values, corrected
        as the comparison's; the (1 − 2·alpha) interval; the verdict."""
        return equivalence_table(self, margin, relative, alpha)


def _labels(frame: pd.DataFrame, names: list[str]) -> dict[int, Any]:
    """Run index -> run label: the key's value for one run column, ``col=value/col=value`` for
    several (:mod:`recsql.run_labels`); two runs that would share a label are refused."""
    own = frame[frame["baseline"] == 0].drop_duplicates("run")
    keys = [f"_k{i}" for i in range(len(names))]
    if len(names) == 1:
        labels = {int(r): plain(v) for r, v in zip(own["run"], own[keys[0]])}
    else:
        labels = {int(row["run"]): run_labels.label([row[k] for k in keys], names) for _, row in own.iterrows()}
    run_labels.refuse_shared(((tuple(plain(v) for v in row), labels[int(r)])
                              for r, row in zip(own["run"], own[keys].itertuples(index=False))), "compare")
    return labels


def finish(frame: pd.DataFrame, names: list[str], values: Values, settings: Settings) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``runs`` and ``tests`` from the statistics statement's rows (metric i is ``names[i]``): tail
    probabilities and corrections."""
    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    frame = frame.astype({"run": "int64", "baseline": "int64", "metric": "int64"})
    labels = _labels(frame, values.labels)
    number = lambda v: math.nan if v is None or pd.isna(v) else float(v)  # noqa: E731
    count = lambda v: 0 if v is None or pd.isna(v) else int(v)  # noqa: E731
    segments = [f"_s{i}" for i in range(len(values.segment_cols))]

    def segment(row: Any) -> dict[str, Any]:
        return {name: plain(row[mark]) for name, mark in zip(values.segment_cols, segments)}

    own = frame[frame["baseline"] == 0]
    runs = pd.DataFrame([{**segment(r), "run": labels[int(r["run"])], "metric": names[int(r["metric"]) % len(names)],
                          "mean": number(r["mean"]), "ci_low": number(r["ci_low"]), "ci_high": number(r["ci_high"]),
                          "n_users": count(r["n"])} for _, r in own.iterrows()],
                        columns=[*values.segment_cols, "run", "metric", "mean", "ci_low", "ci_high", "n_users"])
    rows = []
    for _, r in frame[frame["baseline"] != 0].iterrows():
        if int(r["metric"]) % len(names) in values.global_kinds:
            rows.append(_global_test(r, labels, names, segment(r), settings))
            continue
        t, p_t, effect = paired_t(count(r["n"]), number(r["mean"]), number(r["ss"]))
        rows.append({**segment(r), "run": labels[int(r["run"])], "baseline": labels[int(r["baseline"])],
                     "metric": names[int(r["metric"]) % len(names)],
                     "n": count(r["n"]), "mean_diff": number(r["mean"]), "ci_low": number(r["ci_low"]),
                     "ci_high": number(r["ci_high"]), "t": t, "p_t": p_t,
                     "p_wilcoxon": wilcoxon_p(count(r["n_nonzero"]), number(r["r_plus"]), number(r["ties_term"])),
                     "p_randomization": randomization_p(count(r["extreme"]), settings.resamples),
                     "p_tukey": randomization_p(count(r.get("extreme_tukey")), settings.resamples),
                     "sd_diff": difference_sd(count(r["n"]), number(r["ss"])),
                     "effect_size": effect, "wins": count(r["wins"]), "ties": count(r["ties"]),
                     "losses": count(r["losses"])})
    tests = pd.DataFrame(rows, columns=[*values.segment_cols, "run", "baseline", "metric", "n", "mean_diff", "ci_low", "ci_high", "t", "p_t",
                                        "p_wilcoxon", "p_randomization", "p_tukey", "sd_diff", "effect_size", "wins", "ties",
                                        "losses"])
    if values.global_kinds:  # no wins, ties or losses for a global metric
        tests = tests.astype({c: "Int64" for c in ("wins", "ties", "losses")})
    for test in ALL_TESTS:
        p = TEST_COLUMNS[test][-1]
        if test in settings.tests and test not in UNCORRECTED:
            tests.insert(tests.columns.get_loc(p) + 1, f"{p}_adj", corrected(tests[p].tolist(), settings.correction))
        elif test not in settings.tests:
            tests = tests.drop(columns=list(TEST_COLUMNS[test]))
    return runs, tests


def _global_test(r: Any, labels: dict[int, Any], names: list[str], segment: dict[str, Any],
                 settings: Settings) -> dict[str, Any]:
    """A pair's row for a global metric (one number per run): the difference, its bootstrap interval
    and the randomization test by swapping users' lists; no per-user differences, so no t, Wilcoxon,
    Tukey HSD, effect size, wins, ties or losses (docs/guide/compare.md)."""
    extreme = r["extreme"]
    number = lambda v: math.nan if v is None or pd.isna(v) else float(v)  # noqa: E731
    return {**segment, "run": labels[int(r["run"])], "baseline": labels[int(r["baseline"])],
            "metric": names[int(r["metric"]) % len(names)], "n": int(r["n"]) if not pd.isna(r["n"]) else 0,
            "mean_diff": number(r["mean"]), "ci_low": number(r["ci_low"]), "ci_high": number(r["ci_high"]),
            "t": math.nan, "p_t": math.nan, "p_wilcoxon": math.nan,
            "p_randomization": math.nan if extreme is None or pd.isna(extreme) else randomization_p(int(extreme), settings.resamples),
            "p_tukey": math.nan, "sd_diff": math.nan, "effect_size": math.nan, "wins": pd.NA, "ties": pd.NA,
            "losses": pd.NA}


def _missing_baseline(settings: Settings, labels: Iterable[Any]) -> RecsqlError:
    runs = ", ".join(repr(v) for v in labels)
    close = difflib.get_close_matches(str(settings.baseline), [str(v) for v in labels], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return RecsqlError(f"baseline={settings.baseline!r} is not a run of recs{hint}; the runs are: {runs}")


def settle(frame: pd.DataFrame, settings: Settings, values: Values) -> None:
    """Refuse a result without pairs: fewer than two runs, or a baseline that is not a run."""
    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    if settings.baseline is not None and not (frame["baseline"] != 0).any() and len(frame):
        raise _missing_baseline(settings, _labels(frame.astype({"run": "int64", "baseline": "int64"}), values.labels).values())
    if frame[frame["baseline"] == 0]["run"].nunique() < 2:
        raise RecsqlError(f"compare needs at least two runs in recs (run columns {', '.join(values.labels)}); "
                          "found fewer with values for the asked metrics")
