"""The frames a report shows, taken from the results of :func:`recsql.evaluate` and
:func:`recsql.compare` as they are (nothing is recomputed: a figure draws one of these frames, and
the page carries them as JSON, so every plotted number can be checked against the results).

- ``summary``: ``Evaluation.summary`` with a ``run`` label column;
- ``curves``: one row per (run, metric family, k): the summary value of that cutoff;
- ``distributions``: per (metric, run) a histogram of ``Evaluation.per_user`` on shared bin edges;
- ``runs`` / ``tests``: ``Comparison.runs`` / ``Comparison.tests``, the tests with the primary
  test's corrected p-value and whether it is significant at alpha = 1 − ci;
- ``segment_runs`` / ``segment_tests``: the same, compared within each segment.
"""
from __future__ import annotations

import datetime
import glob
import hashlib
import math
import os
import platform
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from ..comparison_settings import TEST_COLUMNS, UNCORRECTED
from ..errors import RecsqlError
from .. import run_labels
from ..metrics import Metric

if TYPE_CHECKING:  # a type only: the comparison's result draws its report from this package
    from ..comparison_result import Comparison

MAX_K = 100  # the largest cutoff a metric@k curve is drawn to (every cutoff 1..K is a column of the query)
BINS = 20  # histogram bins of the per-user distributions
ONE_RUN = "all"  # the run label of an evaluation without run columns
TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test", "randomization": "randomization test",
              "tukey": "randomized Tukey HSD"}


def run_label(values: Sequence[Any], run_cols: Sequence[str]) -> str:
    """A run's label as :func:`recsql.compare` writes it: the value for one run column,
    ``col=value/col=value`` for several.

    >>> run_label(["A"], ["model"]), run_label(["A", 1], ["model", "day"]), run_label([], [])
    ('A', 'model=A/day=1', 'all')
    """
    if not run_cols:
        return ONE_RUN
    if len(run_cols) == 1:
        return str(run_labels.plain(values[0]))
    return run_labels.label(values, run_cols)


# a DataFrame or Arrow input is registered for one run under a name unique to it (engines/duckdb.py)
_REGISTERED = re.compile(r"(__recsql_[a-z_]+?)_[0-9a-f]{12}\b")


def shown_sql(sql: str) -> str:
    """A statement as the page shows it: the per-run names of registered DataFrame inputs without
    their random part, so that the same inputs give the same page.

    >>> shown_sql('SELECT * FROM "__recsql_segments_0123456789ab" AS s')
    'SELECT * FROM "__recsql_segments" AS s'
    """
    return _REGISTERED.sub(r"\1", sql)


def labelled(frame: pd.DataFrame, run_cols: Sequence[str]) -> pd.Series:
    """The run label of each row of an evaluation frame (summary or per-user); two runs that would
    share a label are refused."""
    keys = [tuple(run_labels.plain(row[c]) for c in run_cols) for _, row in frame.iterrows()]
    labels = [run_label(key, run_cols) for key in keys]
    run_labels.refuse_shared(zip(keys, labels), "report")
    return pd.Series(labels, index=frame.index, dtype=object)


def family_of(metric: Metric) -> tuple:
    """What makes cutoffs of one metric one curve: the name, the options and which options were written."""
    return metric.name, metric.options, metric.explicit


def family_label(metric: Metric) -> str:
    """The curve's name: the metric as asked, without its cutoff (``ndcg``, ``ndcg(gain=exponential)``)."""
    suffix = f"@{metric.k}"
    if metric.column.endswith(suffix):
        return metric.column[:-len(suffix)]
    return str(metric).removesuffix(suffix)  # another tool's spelling (P_10): recsql's name


def curve_metrics(asked: Sequence[Metric], max_k: int = MAX_K) -> list[Metric]:
    """Every cutoff 1..K of each asked metric that has one (K = the largest cutoff asked of the
    metric, at most ``max_k``), with the options the user wrote kept as written, so that a
    convention fills in the same defaults as for the asked metric."""
    if isinstance(max_k, bool) or not isinstance(max_k, int) or max_k < 1:
        raise RecsqlError(f"max_k={max_k!r}: the curves' largest cutoff must be a whole number >= 1 (default {MAX_K})")
    largest: dict[tuple, tuple[Metric, int]] = {}
    for m in asked:
        if m.k is not None:
            key = family_of(m)
            largest[key] = (m, max(m.k, largest.get(key, (m, 0))[1]))
    extra = []
    for m, top in largest.values():
        written = {o: m.all_options()[o] for o in m.explicit}
        extra += [Metric(m.name, k, **written) for k in range(1, min(top, max_k) + 1)]
    return extra


def curves(summary: pd.DataFrame, metrics: Sequence[Metric], asked: Sequence[Metric]) -> pd.DataFrame:
    """One row per (run, family, k) from the summary columns of every evaluated cutoff of each asked
    metric's family (run, family, k, column, value)."""
    families = {family_of(m): m for m in asked if m.k is not None}
    rows = []
    for m in metrics:
        first = families.get(family_of(m))
        if first is None or m.k is None or m.column not in summary.columns:
            continue
        for run, value in zip(summary["run"], summary[m.column]):
            rows.append({"run": run, "family": family_label(first), "k": int(m.k), "column": m.column,
                         "value": _number(value)})
    frame = pd.DataFrame(rows, columns=["run", "family", "k", "column", "value"])
    order = {label: i for i, label in enumerate(dict.fromkeys(family_label(m) for m in families.values()))}
    frame = frame.assign(_order=frame["family"].map(order)).sort_values(["_order", "run", "k"], kind="stable")
    return frame.drop(columns="_order").reset_index(drop=True)


def distributions(per_user: pd.DataFrame, asked: Sequence[Metric], runs: Sequence[str]) -> list[dict[str, Any]]:
    """Per (metric, run): a histogram of the per-user values on bin edges shared by the runs (the
    metric's declared range when it is bounded, else the values' range), the mean, the number of
    users with a value and of users without one (outside the metric's population)."""
    out = []
    for m in asked:
        if m.column not in per_user.columns:
            continue  # a global metric: one number per run, no per-user values
        values = {run: pd.to_numeric(per_user.loc[per_user["run"] == run, m.column], errors="coerce") for run in runs}
        edges = _edges(m, pd.concat(list(values.values())).dropna().to_numpy(dtype=float))
        for run in runs:
            present = values[run].dropna().to_numpy(dtype=float)
            counts, _ = np.histogram(present, bins=edges)
            out.append({"metric": m.column, "run": run, "edges": [float(e) for e in edges],
                        "counts": [int(c) for c in counts], "n": int(len(present)),
                        "missing": int(values[run].isna().sum()),
                        "mean": float(present.mean()) if len(present) else None})
    return out


def _edges(metric: Metric, values: np.ndarray) -> np.ndarray:
    low, high = _bounds(metric.spec.value_range(metric.all_options()))
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    if high <= low:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, BINS + 1)


def _bounds(interval: str) -> tuple[float, float]:
    """``[0, 1]`` -> (0.0, 1.0); ``(-inf, inf)`` -> (-inf, inf)."""
    low, high = interval.strip("[]() ").split(",")
    return float(low), float(high)


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _p_columns(comparison: Comparison) -> list[tuple[str, str]]:
    """(test, p-value column) of each asked test in order, corrected where the test is."""
    out = []
    for test in comparison.settings.tests:
        p = TEST_COLUMNS[test][-1]
        column = f"{p}_adj" if test not in UNCORRECTED and f"{p}_adj" in comparison.tests.columns else p
        if column in comparison.tests.columns:
            out.append((test, column))
    return out


def primary_test(comparison: Comparison) -> tuple[str, str, str]:
    """The test the significance markers read: the first asked (``t`` by default), its p-value
    column (corrected where the test is) and a description for the legend. Where it gives no
    p-value (a global metric has no per-user pairs for a t-test), the next asked test that does is read."""
    test, column = _p_columns(comparison)[0]
    correction = comparison.settings.correction if column.endswith("_adj") else None
    corrected = f", {correction}-corrected" if correction else (", uncorrected" if test not in UNCORRECTED else "")
    return test, column, f"{TEST_NAMES[test]}{corrected}"


def alpha(comparison: Comparison) -> float:
    """The significance level the markers use: 1 − ci (the interval's level), so a marked difference
    is one whose interval is the test's counterpart."""
    return round(1 - comparison.settings.ci, 12)


def marked_tests(comparison: Comparison) -> pd.DataFrame:
    """``Comparison.tests`` with ``p`` (the p-value the markers read), ``p_from`` (its column: the
    primary test's, else the next asked test's that has one), ``significant`` (p < alpha) and
    ``direction`` (+1 the run is significantly higher, −1 lower, 0 neither)."""
    tests = comparison.tests.copy()
    tests["run"] = tests["run"].map(str)
    tests["baseline"] = tests["baseline"].map(str)
    tests["p"], tests["p_from"] = np.nan, ""
    for _, column in reversed(_p_columns(comparison)):  # the first asked test with a value wins
        present = pd.to_numeric(tests[column], errors="coerce").notna()
        tests.loc[present, "p"] = pd.to_numeric(tests.loc[present, column])
        tests.loc[present, "p_from"] = column
    tests["significant"] = (tests["p"] < alpha(comparison)).fillna(False).astype(bool)
    tests["direction"] = np.where(tests["significant"], np.sign(tests["mean_diff"].astype(float)), 0).astype(int)
    return tests


def segment_columns(comparison: Comparison) -> list[str]:
    """The segment columns of a comparison within segments (the columns before ``run``)."""
    return list(comparison.runs.columns[:list(comparison.runs.columns).index("run")])


def segment_label(frame: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """Each row's segment: the value for one segment column, ``col=value/...`` for several."""
    return labelled(frame, columns) if columns else pd.Series(["all"] * len(frame), index=frame.index, dtype=object)


@dataclass
class ReportData:
    """Everything a report shows: the frames the figures draw and the tables print, and where they
    came from (settings, SQL, versions, input fingerprints)."""

    title: str
    asked: list[Metric]
    runs_order: list[str]
    summary: pd.DataFrame | None = None  # Evaluation.summary with a "run" label column
    per_user: pd.DataFrame | None = None
    curves: pd.DataFrame | None = None
    distributions: list[dict[str, Any]] = field(default_factory=list)
    comparison: Comparison | None = None
    tests: pd.DataFrame | None = None  # marked_tests(comparison)
    segmented: Comparison | None = None
    segment_tests: pd.DataFrame | None = None
    sql: dict[str, str] = field(default_factory=dict)  # what ran -> the statement
    options: dict[str, Any] = field(default_factory=dict)  # evaluate's options as given
    engine: str = "DuckDB"
    rows_in: int | None = None
    inputs: list[dict[str, str]] = field(default_factory=list)  # role, what, digest
    fingerprint: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    date: str = ""  # none by default: the page is then a function of the results alone
    notes: list[str] = field(default_factory=list)


def assemble(*, asked: Sequence[Metric], evaluation: Any = None, comparison: Comparison | None = None,
             segmented: Comparison | None = None, options: dict[str, Any] | None = None,
             inputs: dict[str, Any] | None = None, title: str | None = None,
             notes: Sequence[str] = (), date: bool | str | None = None) -> ReportData:
    """The report's frames from an evaluation (with any extra cutoffs for the curves), a comparison
    and a comparison within segments, each optional but one of the first two. ``date``: None or
    False, no date (the same results give the same page, byte for byte); True, the current UTC
    date and time; a string, that text."""
    if evaluation is None and comparison is None and segmented is None:
        raise RecsqlError("a report needs an evaluation or a comparison")
    asked = list(asked)
    data = ReportData(title=title or "recsql report", asked=asked, runs_order=[], options=dict(options or {}),
                      notes=list(notes))
    if evaluation is not None:
        summary, per_user = (_with_labels(frame, evaluation.run_cols) for frame in (evaluation.summary,
                                                                                    evaluation.per_user))
        data.summary, data.per_user, data.runs_order = summary, per_user, list(summary["run"])
        data.curves = curves(summary, evaluation.metrics, asked)
        data.distributions = distributions(per_user, asked, data.runs_order)
        data.sql["evaluate"] = shown_sql(evaluation.sql)
        data.engine, data.rows_in = evaluation.engine, evaluation.rows_in
    if comparison is not None:
        data.comparison, data.tests = comparison, marked_tests(comparison)
        if not data.runs_order:
            data.runs_order = list(dict.fromkeys(comparison.runs["run"].map(str)))
        data.sql["compare"] = shown_sql(comparison.sql)
        data.engine = comparison.engine
    if segmented is not None:
        data.segmented, data.segment_tests = segmented, marked_tests(segmented)
        data.sql["compare within segments"] = shown_sql(segmented.sql)
        if not data.runs_order:
            data.runs_order = list(dict.fromkeys(segmented.runs["run"].map(str)))
    data.inputs, data.fingerprint = fingerprint(inputs or {}, data)
    data.versions, data.date = versions(data.engine), report_date(date)
    return data


def report_date(date: bool | str | None) -> str:
    """The date line's text for ``date`` (see :func:`assemble`)."""
    if date is None or date is False:
        return ""
    if date is True:
        return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(date, str):
        return date
    raise RecsqlError(f"date={date!r}: pass True (the current date and time), a text to show, or None (no date)")


def versions(engine: str) -> dict[str, str]:
    """The versions that produced the numbers and the page (its figures are recsql's own SVG)."""
    import duckdb
    import scipy

    from .. import __version__
    return {"recsql": __version__, "engine": engine, "duckdb": duckdb.__version__,
            "python": platform.python_version(), "pandas": pd.__version__, "numpy": np.__version__,
            "scipy": scipy.__version__}


def _with_labels(frame: pd.DataFrame, run_cols: Sequence[str]) -> pd.DataFrame:
    """``frame`` with its run's label first, as ``run`` (a run column of that name gives way to it: with
    one run column the label is its value)."""
    labels = labelled(frame, run_cols)
    frame = frame.drop(columns="run", errors="ignore")
    frame.insert(0, "run", labels)
    return frame


def fingerprint(inputs: dict[str, Any], data: ReportData) -> tuple[list[dict[str, str]], str]:
    """A SHA-256 per input and one over them all (its first 16 hex digits), cheap and deterministic:
    a file (every file of a glob, in name order) hashes its bytes; a pandas, polars or Arrow frame
    its column names, types and pandas' row hashes (``pandas.util.hash_pandas_object``); a table
    name only its name (the table's rows are not read again). Without inputs (a report from
    results), the results' frames are hashed instead, marked as such."""
    described = [_digest(role, obj) for role, obj in inputs.items() if obj is not None]
    if not described:
        frames = [f for f in (data.per_user, data.summary,
                              data.comparison.runs if data.comparison is not None else None) if f is not None]
        described = [_digest("results (the inputs were not given)", pd.concat(frames, axis=0, ignore_index=True)
                             if len(frames) > 1 else frames[0])]
    overall = hashlib.sha256("\n".join(f"{d['role']}:{d['digest']}" for d in described).encode()).hexdigest()[:16]
    return described, overall


def _digest(role: str, obj: Any) -> dict[str, str]:
    sha = hashlib.sha256()
    if isinstance(obj, (str, os.PathLike)):
        paths = sorted(glob.glob(str(obj))) if not os.path.isfile(obj) else [str(obj)]
        if not paths:
            sha.update(str(obj).encode())
            return {"role": role, "what": f"{obj} (a table: its name only)", "digest": sha.hexdigest()}
        for path in paths:
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    sha.update(block)
        return {"role": role, "what": f"{obj} ({len(paths)} file(s), their bytes)", "digest": sha.hexdigest()}
    frame = _as_pandas(obj)
    if frame is None:
        sha.update(repr(type(obj)).encode())
        return {"role": role, "what": f"{type(obj).__name__} (not hashed: its type only)", "digest": sha.hexdigest()}
    sha.update(repr([(str(c), str(t)) for c, t in frame.dtypes.items()]).encode())
    try:
        sha.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    except TypeError:  # cells pandas cannot hash (arrays of features): their text
        sha.update(frame.to_csv(index=False).encode())
    return {"role": role, "what": f"a frame of {len(frame):,} rows (its columns and rows)", "digest": sha.hexdigest()}


def _as_pandas(obj: Any) -> pd.DataFrame | None:
    if isinstance(obj, pd.DataFrame):
        return obj
    for convert in ("to_pandas", "df"):  # polars, Arrow, DuckDB relations
        if hasattr(obj, convert):
            try:
                return getattr(obj, convert)()
            except Exception:  # noqa: BLE001 - a lazy frame or reader: not hashed
                return None
    return None
