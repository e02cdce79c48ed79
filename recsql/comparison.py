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
import math
import numbers
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Iterator, Sequence

import pandas as pd
import sqlglot
from sqlglot import exp

from . import api
from .comparison_global import global_metrics, list_ctes, union_ctes
from .compose import DIAGNOSTICS, compose, internal_runs, metric_columns, readable
from .compose.checks import SEGMENT_CHECKS
from .dialects import render
from .engines.base import DBAPIRunner, Runner, frame_from_cursor
from .errors import RecsqlError
from .metrics import Metric
from .resampling import MAX_RESAMPLES, P, bigint, draw_parameters, expand_macros
from .significance import CORRECTIONS, corrected, paired_t, randomization_p, wilcoxon_p
from .engines import runner_for
from .sources import Source, bind
from .templates import read_template
from .validate import family, require_same_ids, resolve_column

TESTS = ("t", "wilcoxon", "randomization")  # the default tests
ALL_TESTS = (*TESTS, "tukey")  # tukey: the randomized Tukey HSD over every pair of runs (asked for by name)
UNCORRECTED = {"tukey"}  # tests that control the family-wise error themselves
# The statistics' templates, in the order their CTEs are appended (each reads the ones before).
TEMPLATES = ("_compare_draws", "_compare_observed", "_compare_wilcoxon", "_compare_resampled")
GLOBAL_TEMPLATE = "_compare_global"  # global metrics (coverage, gini, personalization): recsql/comparison_global.py
INTERVAL_TEMPLATE = "_compare_interval"  # after the unions of recsql/comparison_global.py
# Randomization: a flipped sum counts as extreme down to this fraction of Σ|v| below the observed one
# (sums whose exact values are equal may round apart; scipy's permutation_test allows for the same).
TOLERANCE = 1e-9
# Differences are compared (zero, ties, wins and losses) on a grid of 1/GRAIN: ROUND(v·GRAIN). Values
# equal but for the rounding of sums, whose order differs between engines, are then equal everywhere.
GRAIN = 1e12
# The p-value columns of each test (and the statistic beside them).
TEST_COLUMNS = {"t": ("t", "p_t"), "wilcoxon": ("p_wilcoxon",), "randomization": ("p_randomization",),
                "tukey": ("p_tukey",)}


@dataclass(frozen=True)
class Settings:
    """compare's own options, checked: which tests, the interval's level, the resamples, the seed,
    the correction, and the baseline run (None: every pair)."""

    tests: tuple[str, ...] = TESTS
    ci: float = 0.95
    resamples: int = 1000
    seed: int = 0
    correction: str | None = "holm"
    baseline: Any = None

    @classmethod
    def checked(cls, tests: Any, ci: Any, resamples: Any, seed: Any, correction: Any, baseline: Any) -> "Settings":
        chosen = (tests,) if isinstance(tests, str) else tuple(tests or ())
        unknown = [t for t in chosen if t not in ALL_TESTS]
        if unknown or not chosen:
            raise RecsqlError(f"tests={tests!r}: choose one or more of {', '.join(ALL_TESTS)} (paired t, Wilcoxon "
                              "signed-rank, Fisher's randomization by sign flips, randomized Tukey HSD)")
        if isinstance(ci, bool) or not isinstance(ci, numbers.Real) or not 0 < ci < 1:
            raise RecsqlError(f"ci={ci!r}: the interval's level must be a number between 0 and 1, e.g. ci=0.95")
        if isinstance(resamples, bool) or not isinstance(resamples, numbers.Integral) or not 1 <= resamples <= MAX_RESAMPLES:
            raise RecsqlError(f"resamples={resamples!r}: pass a whole number of resamples from 1 to {MAX_RESAMPLES:,} "
                              "(bootstrap resamples and sign-flip permutations; e.g. resamples=1000)")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < P:
            raise RecsqlError(f"seed={seed!r}: pass a whole number from 0 to {P - 1} (the same seed always gives "
                              "the same resamples)")
        if correction is not None and correction not in CORRECTIONS:
            raise RecsqlError(f"correction={correction!r} is not valid; choose one of {', '.join(CORRECTIONS)} "
                              "or None (no correction)")
        return cls(tuple(dict.fromkeys(chosen)), float(ci), int(resamples), int(seed), correction, baseline)

    def quantiles(self) -> dict[str, int]:
        """The interval's quantiles (1 − ci)/2 and (1 + ci)/2 as exact fractions num/den of the
        decimal ``ci`` (0.95 -> 1/40 and 39/40), so the SQL interpolates with integer arithmetic."""
        level = Fraction(repr(self.ci))
        low, high = (1 - level) / 2, (1 + level) / 2
        den = math.lcm(low.denominator, high.denominator)
        return {"low_num": low.numerator * den // low.denominator, "high_num": high.numerator * den // high.denominator,
                "den": den}


@dataclass
class Values:
    """Where the per-user values are: ``relation`` (a CTE or table name) with one row per (run, user),
    the run key columns ``runs`` (shown as ``labels``), the user column and one column per metric;
    ``checks``: input-check columns the rows carry (their maximum is returned); ``segments``: a
    relation giving each user's segment (``segment_cols``), compared within each segment."""

    relation: str
    runs: list[str]
    labels: list[str]
    user: str
    metrics: list[str]
    checks: list[str] = field(default_factory=list)
    segments: exp.Expression | None = None  # a relation (user, segment columns): each user's segment
    segment_user: str = "user_id"
    segment_cols: list[str] = field(default_factory=list)
    # global metrics (recsql/comparison_global.py): metric position -> (kind, k); the relation of the
    # users' ranked list rows (run columns ``runs``, user_id, item_id, rank); whether the statement has the catalog
    global_kinds: dict[int, tuple[int, int]] = field(default_factory=dict)
    lists: str = "list_rows"
    catalog: bool = False


@dataclass
class Comparison:
    """The result of :func:`compare`: ``runs`` (one row per run and metric: mean and its bootstrap
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
        from .report import from_comparison
        return from_comparison(self, evaluation=evaluation, title=title, **options).write(path)

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


# ---------------------------------------------------------------- the SQL


def _template(name: str, parameters: dict[str, Any]) -> list[exp.CTE]:
    """The CTEs of ``sql/<name>.sql`` with its ``$parameters`` as typed literals and the mixer's macros expanded."""
    _, body = read_template(name)
    tree = sqlglot.parse_one(body, read="duckdb")

    def substitute(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            value = parameters[node.name]
            return bigint(value) if isinstance(value, int) else exp.Literal.number(repr(float(value)))
        return node

    tree = expand_macros(tree.transform(substitute))
    return list(tree.args["with_"].expressions)


def _cte(name: str, query: exp.Expression) -> exp.CTE:
    return exp.CTE(this=query, alias=exp.to_identifier(name))


def _column(name: str, table: str | None = None) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=table)


def _dense_rank(columns: list[exp.Expression]) -> exp.Expression:
    return exp.cast(exp.Window(this=exp.Anonymous(this="DENSE_RANK"),
                               order=exp.Order(expressions=[exp.Ordered(this=c) for c in columns])), "BIGINT")


def _inputs(values: Values, baseline: list[exp.Expression] | None) -> list[exp.CTE]:
    """From the per-user relation, read once: cmp_keyed (dense run index in run-key order, dense user
    index 1..n in user order, the run keys _k0.., the metric values x0..), cmp_values(run, user_idx,
    metric, x) (one row per defined value), cmp_runs, cmp_users and cmp_baselines."""
    keys = [f"_k{i}" for i in range(len(values.runs))]
    per_user = [i for i in range(len(values.metrics)) if i not in values.global_kinds]
    any_value = exp.or_(*[_column(values.metrics[i], "p").is_(exp.null()).not_() for i in per_user],
                        *([exp.column("_has_recs", "p").eq(1)] if values.global_kinds else []))
    keyed = exp.select(exp.alias_(_dense_rank([_column(c, "p") for c in values.runs]), "run"),
                       exp.alias_(_dense_rank([_column(values.user, "p")]), "user_idx"),
                       *[exp.alias_(_column(c, "p"), k) for c, k in zip(values.runs, keys)],
                       *[exp.alias_(exp.cast(_column(m, "p"), "DOUBLE"), f"x{i}") for i, m in enumerate(values.metrics)],
                       *[exp.alias_(_column(c, "p"), c) for c in values.checks],
                       *([exp.alias_(_column(values.user, "p"), "cmp_user")] if values.global_kinds else []),
                       exp.alias_(exp.Coalesce(this=exp.column("segment", "g"), expressions=[bigint(-1)])  # -1: no segment
                                  if values.segments is not None else bigint(0), "segment")) \
        .from_(exp.alias_(exp.to_table(values.relation), "p")).where(any_value)
    segment_ctes: list[exp.CTE] = []
    after: list[exp.CTE] = []
    if values.segments is not None:  # each user's segment: the metric index becomes segment·M + metric
        marks = [f"_s{i}" for i in range(len(values.segment_cols))]
        rows = exp.select(exp.alias_(_column(values.segment_user), "seg_user"),
                          *[exp.alias_(_column(c), m) for c, m in zip(values.segment_cols, marks)]) \
            .from_(exp.alias_(values.segments.copy(), "t") if not isinstance(values.segments, exp.Table)
                   else values.segments.copy())
        distinct = exp.select(*marks).distinct().from_("cmp_segment_rows")
        segments = exp.select(*marks, exp.alias_(_dense_rank([exp.column(m) for m in marks]), "segment")) \
            .from_(distinct.subquery("d"))
        membership = exp.select(exp.alias_(exp.column("seg_user", "r"), "seg_user"),
                                exp.alias_(exp.column("segment", "s"), "segment")) \
            .from_(exp.alias_(exp.to_table("cmp_segment_rows"), "r")) \
            .join(exp.alias_(exp.to_table("cmp_segments"), "s"),
                  on=exp.and_(*[exp.column(m, "r").eq(exp.column(m, "s")) for m in marks]))
        keyed = keyed.join(exp.alias_(exp.to_table("cmp_membership"), "g"), join_type="left",
                           on=_column(values.user, "p").eq(exp.column("seg_user", "g")))
        per_metric = exp.select(exp.alias_(exp.Add(this=exp.Mul(this=exp.column("segment", "s"),
                                                                 expression=bigint(len(values.metrics))),
                                                   expression=exp.column("metric", "m")), "metric"),
                                *[exp.column(m, "s") for m in marks]) \
            .from_(exp.alias_(exp.to_table("cmp_segments"), "s")) \
            .join(exp.alias_(exp.to_table("cmp_metrics"), "m"), join_type="cross")
        segment_ctes = [_cte("cmp_segment_rows", rows), _cte("cmp_segments", segments),
                        _cte("cmp_membership", membership)]
        after = [_cte("cmp_segment_metrics", per_metric)]
    ids = [exp.select(exp.alias_(bigint(i), "metric")) for i in range(len(values.metrics))]
    metric_ids: exp.Expression = ids[0]
    for one in ids[1:]:
        metric_ids = exp.union(metric_ids, one, distinct=False)
    pick = exp.Case(this=exp.column("metric", "m"), ifs=[exp.If(this=bigint(i), true=exp.column(f"x{i}", "k"))
                                                          for i in per_user]) if per_user else exp.cast(exp.null(), "DOUBLE")
    metric = exp.Add(this=exp.Mul(this=exp.column("segment", "k"), expression=bigint(len(values.metrics))),
                     expression=exp.column("metric", "m"))
    unpivoted = exp.select(exp.alias_(exp.column("run", "k"), "run"), exp.alias_(exp.column("user_idx", "k"), "user_idx"),
                           exp.alias_(metric, "metric"), exp.alias_(pick, "x")) \
        .from_(exp.alias_(exp.to_table("cmp_keyed"), "k")).join(exp.alias_(exp.to_table("cmp_metrics"), "m"), join_type="cross") \
        .where(exp.column("segment", "k") >= 0)
    present = exp.select("run", "user_idx", "metric", "x").from_(unpivoted.subquery("v")) \
        .where(exp.column("x").is_(exp.null()).not_())
    runs = exp.select("run", *keys).distinct().from_("cmp_keyed")
    users = exp.select("user_idx").distinct().from_("cmp_keyed")
    if baseline is None:  # every pair once
        baselines = exp.select("run", exp.alias_(bigint(1), "every")).from_("cmp_runs")
    else:
        baselines = exp.select("run", exp.alias_(bigint(0), "every")).from_("cmp_runs") \
            .where(exp.and_(*[exp.column(k).eq(v) for k, v in zip(keys, baseline)]))
    if values.global_kinds:
        after += list_ctes(values.global_kinds, len(values.metrics), values.runs, values.lists, values.catalog,
                           values.segments is not None)
    return [*segment_ctes, _cte("cmp_keyed", keyed), _cte("cmp_metrics", metric_ids), _cte("cmp_values", present),
            _cte("cmp_runs", runs), _cte("cmp_users", users), _cte("cmp_baselines", baselines), *after]


RESULT_COLUMNS = {  # table alias -> the columns the statement returns from it
    "o": ("n", "mean", "sum_v", "wins", "ties", "losses", "extreme"), "s": ("ss",),
    "w": ("n_nonzero", "r_plus", "ties_term"), "i": ("resampled", "ci_low", "ci_high")}
RESULT_SOURCES = {"s": "cmp_spread", "w": "cmp_wilcoxon", "i": "cmp_interval"}


def statistics(values: Values, settings: Settings, baseline: list[exp.Expression] | None) -> exp.Select:
    """The statistics statement over ``values``: one row per unit (run, baseline, metric; baseline 0
    for a run's own values) with the sums :func:`finish` turns into the result, the run's keys
    (``_k0``, ...) and the input checks. Its CTEs are to be appended to the ones defining ``values``."""
    parameters = {**draw_parameters(settings.seed, settings.resamples), **settings.quantiles(), "tolerance": TOLERANCE,
                  "grain": GRAIN}
    ctes = _inputs(values, baseline)
    tukey = "tukey" in settings.tests
    for name in (*TEMPLATES, *([GLOBAL_TEMPLATE] if values.global_kinds else [])):
        ctes += _template(name, parameters)
    ctes += union_ctes(bool(values.global_kinds))
    for name in (INTERVAL_TEMPLATE, *(["_compare_tukey"] if tukey else [])):
        ctes += _template(name, parameters)
    sources = {**RESULT_SOURCES, **({"k": "cmp_tukey"} if tukey else {})}
    returned = {**RESULT_COLUMNS, **({"k": ("extreme_tukey",)} if tukey else {})}
    unit = ("run", "baseline", "metric")
    select = exp.select(*[exp.alias_(exp.column(c, "o"), c) for c in unit],
                        *[exp.alias_(exp.column(c, t), c) for t, cs in returned.items() for c in cs],
                        *[exp.alias_(exp.column(f"_k{i}", "r"), f"_k{i}") for i in range(len(values.runs))],
                        *[exp.alias_(exp.column(f"_s{i}", "g"), f"_s{i}") for i in range(len(values.segment_cols))],
                        *[exp.alias_(exp.column(c, "c"), c) for c in values.checks],
                        *[exp.alias_(exp.column(c, f"c{i}"), c) for i, c in enumerate(SEGMENT_CHECKS)
                          if values.segments is not None]) \
        .from_(exp.alias_(exp.to_table("cmp_units_observed"), "o"))
    for alias, source in sources.items():
        select = select.join(exp.alias_(exp.to_table(source), alias), join_type="left",
                             on=exp.and_(*[exp.column(c, "o").eq(exp.column(c, alias)) for c in unit]))
    select = select.join(exp.alias_(exp.to_table("cmp_runs"), "r"), on=exp.column("run", "o").eq(exp.column("run", "r")))
    if values.segments is not None:
        select = select.join(exp.alias_(exp.to_table("cmp_segment_metrics"), "g"),
                             on=exp.column("metric", "o").eq(exp.column("metric", "g")))
    counted = [exp.alias_(exp.cast(exp.Max(this=_column(c)), "BIGINT"), c) for c in values.checks]
    if counted:
        ctes.append(_cte("cmp_checks", exp.select(*counted).from_("cmp_keyed")))
        select = select.join(exp.alias_(exp.to_table("cmp_checks"), "c"), join_type="cross")
    if values.segments is not None:  # population users without a segment; users given two segments
        ctes += [_cte("cmp_unsegmented", sqlglot.parse_one(
                     f"SELECT CAST(COUNT(DISTINCT user_idx) AS BIGINT) AS {SEGMENT_CHECKS[0]} FROM cmp_keyed "
                     "WHERE segment < 0")),
                 _cte("cmp_segment_repeats", sqlglot.parse_one(
                     f"SELECT CAST(COUNT(*) AS BIGINT) - CAST(COUNT(DISTINCT seg_user) AS BIGINT) AS {SEGMENT_CHECKS[1]} "
                     "FROM cmp_segment_rows"))]
        for alias, source in (("c0", "cmp_unsegmented"), ("c1", "cmp_segment_repeats")):
            select = select.join(exp.alias_(exp.to_table(source), alias), join_type="cross")
    select = select.order_by(*[exp.column(c, "o") for c in unit])
    select.set("with_", exp.With(expressions=ctes))
    return select


def _with(outer: exp.Select, inner: exp.Select) -> exp.Select:
    """``inner`` with ``outer``'s CTEs in front of its own (``outer``'s final SELECT is dropped)."""
    statement = inner.copy()
    statement.set("with_", exp.With(expressions=[*[c.copy() for c in outer.args["with_"].expressions],
                                                 *statement.args["with_"].expressions]))
    return statement


# ---------------------------------------------------------------- the result


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _labels(frame: pd.DataFrame, names: list[str]) -> dict[int, Any]:
    """Run index -> run label: the key's value for one run column, ``col=value/col=value`` for several."""
    own = frame[frame["baseline"] == 0].drop_duplicates("run")
    keys = [f"_k{i}" for i in range(len(names))]
    if len(names) == 1:
        return {int(r): _plain(v) for r, v in zip(own["run"], own[keys[0]])}
    return {int(row["run"]): "/".join(f"{n}={_plain(row[k])}" for n, k in zip(names, keys)) for _, row in own.iterrows()}


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
        return {name: _plain(row[mark]) for name, mark in zip(values.segment_cols, segments)}

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
                     "effect_size": effect, "wins": count(r["wins"]), "ties": count(r["ties"]),
                     "losses": count(r["losses"])})
    tests = pd.DataFrame(rows, columns=[*values.segment_cols, "run", "baseline", "metric", "n", "mean_diff", "ci_low", "ci_high", "t", "p_t",
                                        "p_wilcoxon", "p_randomization", "p_tukey", "effect_size", "wins", "ties", "losses"])
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
            "p_tukey": math.nan, "effect_size": math.nan, "wins": pd.NA, "ties": pd.NA, "losses": pd.NA}


# ---------------------------------------------------------------- checks


def refuse_global(metrics: Sequence[Metric]) -> None:
    """Evaluation.compare reads per-user values only; a global metric is resampled from the users' lists."""
    for m in metrics:
        if m.spec.population == "global":
            raise RecsqlError(f"Evaluation.compare: metric {str(m)!r} is global (one number per run, no per-user "
                              "values): it is resampled from the users' lists, which an evaluation does not keep; "
                              "compare it with recsql.compare(recs, truth, ...) (or leave it out here)")


def _baseline_keys(baseline: Any, names: list[str], kinds: list[str]) -> list[exp.Expression] | None:
    """The baseline run's key values as literals of its columns' kinds; None for every pair."""
    if baseline is None:
        return None
    example = "/".join(f"{n}=..." for n in names)
    if isinstance(baseline, dict):
        lower = {str(k).lower(): v for k, v in baseline.items()}
        missing = [n for n in names if n.lower() not in lower]
        if missing or len(lower) != len(names):
            raise RecsqlError(f"baseline={baseline!r}: name every run column once ({', '.join(names)})")
        parts = [lower[n.lower()] for n in names]
    elif isinstance(baseline, (tuple, list)):
        parts = list(baseline)
    elif len(names) > 1 and isinstance(baseline, str):
        found = re.fullmatch("/".join(f"{re.escape(n)}=(.*)" for n in names), baseline)
        if not found:
            raise RecsqlError(f"baseline={baseline!r}: with several run columns write the run as {example!r}, a tuple "
                              f"of values in the order {names}, or a dict")
        parts = list(found.groups())
    else:
        parts = [baseline]
    if len(parts) != len(names):
        raise RecsqlError(f"baseline={baseline!r}: give one value per run column ({', '.join(names)})")
    return [_key_literal(v, n, k) for v, n, k in zip(parts, names, kinds)]


def _key_literal(value: Any, name: str, kind: str) -> exp.Expression:
    value = _plain(value)
    if kind == "number":
        if isinstance(value, str):
            try:
                value = float(value) if re.search(r"[.eEn]", value) else int(value)
            except ValueError:
                raise RecsqlError(f"baseline: run column {name!r} holds numbers, got {value!r}; pass the baseline "
                                  f"run's number") from None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise RecsqlError(f"baseline: run column {name!r} holds numbers, got {value!r}; pass the baseline run's number")
        return exp.Literal.number(repr(value))
    return exp.Literal.string(str(value))


def _missing_baseline(settings: Settings, labels: Iterable[Any]) -> RecsqlError:
    runs = ", ".join(repr(v) for v in labels)
    close = difflib.get_close_matches(str(settings.baseline), [str(v) for v in labels], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return RecsqlError(f"baseline={settings.baseline!r} is not a run of recs{hint}; the runs are: {runs}")


def _evaluate_arguments(recs: Any, truth: Any, metrics: Any, options: dict[str, Any]) -> dict[str, Any]:
    """evaluate's arguments for these inputs and options (its signature is the one description of them)."""
    signature = inspect.signature(api.evaluate)
    try:
        bound = signature.bind(recs, truth, metrics, **options)
    except TypeError:
        known = [n for n, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY]
        unknown = next(o for o in options if o not in known)
        close = difflib.get_close_matches(unknown, [*known, "baseline_recs"], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise RecsqlError(f"compare: unknown option {unknown!r}; {hint}compare takes evaluate's options "
                          f"({', '.join(known)}) and its own (tests, ci, resamples, seed, correction, baseline, "
                          "baseline_recs)") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _settled(frame: pd.DataFrame, settings: Settings, values: Values) -> None:
    """Refuse a result without pairs: fewer than two runs, or a baseline that is not a run."""
    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
    if settings.baseline is not None and not (frame["baseline"] != 0).any() and len(frame):
        raise _missing_baseline(settings, _labels(frame.astype({"run": "int64", "baseline": "int64"}), values.labels).values())
    if frame[frame["baseline"] == 0]["run"].nunique() < 2:
        raise RecsqlError(f"compare needs at least two runs in recs (run columns {', '.join(values.labels)}); "
                          "found fewer with values for the asked metrics")


# ---------------------------------------------------------------- running


# Settings the statistics statement carries, by dialect: ClickHouse stops planning a query after 10,000
# plan optimizations (error 572), and the statement with global metrics and the Tukey test needs more.
STATEMENT_SETTINGS: dict[str, dict[str, int]] = {"clickhouse": {"query_plan_max_optimizations_to_apply": 100_000}}
# Settings for the statistics statement, run before it in its transaction, by dialect. PostgreSQL
# would JIT-compile the long statement (tens of seconds at any data size: its row estimates for the
# resample grid are far too high); its executor needs no JIT for sums.
PREAMBLE: dict[str, tuple[str, ...]] = {"postgres": ("SET LOCAL jit = off",)}


def _fetch(runner: Runner, plan: Any, sql: str) -> pd.DataFrame:
    """The statistics statement's rows, after the dialect's :data:`PREAMBLE` in the same transaction."""
    statements = PREAMBLE.get(runner.dialect, ())
    if not statements or not isinstance(runner, DBAPIRunner):
        frame = api._fetch_checked(runner, plan, sql)
        return frame.to_pandas() if hasattr(frame, "to_pandas") else frame

    def fetch(statement: str) -> pd.DataFrame:
        try:
            with runner.con.cursor() as cursor:
                for setting in statements:
                    cursor.execute(setting)
                cursor.execute(statement)
                return frame_from_cursor(cursor)
        except Exception as err:  # noqa: BLE001 - any driver error, as the runner reports it
            raise runner.failed(err) from None
        finally:
            runner.finish()

    return api._fetch_checked(runner, plan, sql, fetch)


# ---------------------------------------------------------------- entry points


def compare(recs: Any, truth: Any, metrics: Sequence[str | Metric] | str | Metric, *,
            run_cols: Iterable[str] | str, baseline: Any = None, tests: Sequence[str] = TESTS, ci: float = 0.95,
            resamples: int = 1000, seed: int = 0, correction: str | None = "holm", baseline_recs: Any = None,
            segments: Any = None, **options: Any) -> Comparison:
    """Compare runs: each run's mean with a bootstrap interval, and paired tests between runs, for
    per-user metrics and for the global ones (coverage, gini, personalization: resampled through
    their exposure counts, :mod:`recsql.comparison_global`), computed by the engine in one
    statement. Definitions: docs/guide/compare.md.

    ``run_cols``: the run key columns of ``recs`` (required: compare needs runs). ``baseline``: the
    run to compare every other run with (its label: the value of the run column, ``col=v/col=v``, a
    tuple or a dict for several run columns); None compares every pair once (each run minus every
    run before it in run-key order). ``tests``: any of ``t``, ``wilcoxon``, ``randomization`` (the
    default) and ``tukey`` (the randomized Tukey HSD over every pair of runs).
    ``ci``: the bootstrap interval's level. ``resamples``: bootstrap resamples and sign-flip
    permutations (1..10,000). ``seed``: 0..2^31 − 2. ``correction``: ``holm``, ``bonferroni``, ``bh``
    or None, over every row of ``tests``, per test. ``baseline_recs``: evaluate's ``baseline`` input
    (another recommender's lists, for unexpectedness and serendipity). ``segments``: an input (table,
    file or DataFrame, like ``recs``) with the user column and one or more segment columns (a cohort,
    a country): one row per user; runs are compared within each segment, and every user of the
    population must have one. Every other option is :func:`recsql.evaluate`'s (``con``, columns,
    ``threshold``, ``convention``, ...)."""
    settings = Settings.checked(tests, ci, resamples, seed, correction, baseline)
    arguments = _evaluate_arguments(recs, truth, metrics, {**options, "run_cols": run_cols, "baseline": baseline_recs})
    request = api._request(arguments)
    if not request.cols["run_cols"]:
        raise RecsqlError("compare needs runs: name the run key columns of recs, e.g. run_cols='model' "
                          "(CLI: --run-col model)")
    global_metrics(request.metrics)
    started = time.perf_counter()
    with api._bound(request) as (runner, plan, sources), _segments(segments, runner, sources, plan.user_col) as grouping:
        kinds = [family(sources["recs"].columns[c]) for c in plan.run_cols]
        statement, values = statement_for(plan, request.metrics, settings, kinds, grouping)
        sql = render(statement, runner.dialect)
        frame = _fetch(runner, plan, sql)
        found = {c: int(frame[c].max()) if len(frame) and not pd.isna(frame[c].max()) else 0 for c in values.checks}
        api._refuse(runner, plan, found, list(sources["recs"].columns))
        _refuse_segments(frame, values)
    _settled(frame, settings, values)
    runs, table = finish(frame, [m.column for m in request.metrics], values, settings)
    return Comparison(runs=runs, tests=table, metrics=request.metrics, settings=settings, sql=sql, engine=runner.name,
                      seconds=time.perf_counter() - started)


@contextmanager
def _segments(segments: Any, runner: Runner, sources: dict[str, Any], user_col: str) -> Iterator[tuple | None]:
    """The bound segments input as (relation, user column, segment columns); unbound afterwards."""
    if segments is None:
        yield None
        return
    source = bind("segments", segments, runner)
    try:
        source.columns = runner.describe(source)
        user = resolve_column(source, user_col, "user_col")
        require_same_ids(sources["recs"], source, [("user", user_col, user)])
        columns = [c for c in source.columns if c != user]
        if not columns:
            raise RecsqlError(f"segments: the input has only the user column {user!r}; add the segment columns "
                              "(one row per user: user, cohort, ...)")
        clash = [c for c in columns if c.lower() in {"run", "baseline", "metric", "n", "n_users", "mean", "mean_diff"}]
        if clash:
            raise RecsqlError(f"segments: the column {clash[0]!r} is named like a result column; rename it")
        yield source.relation, user, columns
    finally:
        source.cleanup()


def _refuse_segments(frame: pd.DataFrame, values: Values) -> None:
    if values.segments is None or not len(frame):
        return
    refuse_segments({name: int(frame[name].max()) for name in SEGMENT_CHECKS}, "of the population")


def refuse_segments(found: dict[str, int], whose: str) -> None:
    """Raise for the segment checks (compose.checks.SEGMENT_CHECKS) that found something: users given
    two segments, then users ``whose`` (e.g. "of the population") without one."""
    missing, repeated = (int(found.get(name) or 0) for name in SEGMENT_CHECKS)
    if repeated:
        raise RecsqlError(f"segments: {repeated} extra row(s) give a user a second segment; give each user one row")
    if missing:
        raise RecsqlError(f"segments: {missing} user(s) {whose} have no row in segments (or a NULL segment); every "
                          "user evaluated needs a segment (add them, e.g. with a segment 'other', or leave their "
                          "rows out of the inputs)")


def statement_for(plan: Any, metrics: list[Metric], settings: Settings, kinds: list[str],
                  segments: tuple | None = None) -> tuple[exp.Select, Values]:
    """The one statement: evaluate's per-user query (with its input checks) and the statistics over it.
    ``kinds``: each run column's kind (``number`` or ``string``), for the baseline's literal;
    ``segments``: (relation, user column, segment columns) to compare within."""
    if not plan.run_cols:
        raise RecsqlError("compare needs runs: name the run key columns of recs, e.g. run_cols='model' "
                          "(CLI: --run-col model)")
    kinds_global = global_metrics(metrics)
    raw = compose(plan, metrics, output="raw")
    checks = [e.alias_or_name for cte in raw.args["with_"].expressions if cte.alias == "checks"
              for e in cte.this.expressions if e.alias_or_name in DIAGNOSTICS]
    values = Values("per_user", internal_runs(plan), list(plan.run_cols), "user_id",
                    metric_columns(metrics), checks, global_kinds=kinds_global,
                    catalog=any(cte.alias == "catalog_size" for cte in raw.args["with_"].expressions))
    if segments is not None:
        values.segments, values.segment_user, values.segment_cols = segments[0], segments[1], list(segments[2])
    baseline = _baseline_keys(settings.baseline, list(plan.run_cols), kinds)
    statement = readable(_with(raw, statistics(values, settings, baseline)), plan, metrics, "compare")
    own = STATEMENT_SETTINGS.get(plan.dialect, {})
    if own:
        statement.set("settings", [exp.EQ(this=exp.var(k), expression=exp.Literal.number(v)) for k, v in own.items()])
    return statement, values


def finish_rows(rows: Any, metrics: Sequence[str | Metric] | str | Metric, run_cols: Iterable[str] | str, *,
                baseline: Any = None, tests: Sequence[str] = TESTS, ci: float = 0.95, resamples: int = 1000,
                seed: int = 0, correction: str | None = "holm", segment_cols: Iterable[str] | str = ()) -> Comparison:
    """The :class:`Comparison` from the rows of the statement ``to_sql(..., compare={...})`` rendered
    and a warehouse ran (a DataFrame, or anything with ``to_pandas()``): the t and normal tails and
    the corrections, which no SQL engine has. Pass the metrics, run columns and compare options the
    statement was rendered with (``segment_cols`` too when it compared within segments)."""
    from .metrics import parse_metrics
    settings = Settings.checked(tests, ci, resamples, seed, correction, baseline)
    parsed = parse_metrics(metrics)
    names = [run_cols] if isinstance(run_cols, str) else list(run_cols)
    frame = rows.to_pandas() if hasattr(rows, "to_pandas") else pd.DataFrame(rows)
    known = {"run", "baseline", "metric", *(c for cs in RESULT_COLUMNS.values() for c in cs)}
    frame.columns = [c.lower() if c.lower() in known or re.fullmatch(r"_k\d+", c.lower()) else c
                     for c in map(str, frame.columns)]  # warehouses that upper-case unquoted names
    values = Values("", names, names, "", [m.column for m in parsed], global_kinds=global_metrics(parsed),
                    segment_cols=[segment_cols] if isinstance(segment_cols, str) else list(segment_cols))
    if values.segment_cols:
        values.segments = exp.to_table("segments")  # compared within segments (the statement's own relation)
        _refuse_segments(frame, values)
    _settled(frame, settings, values)
    runs, table = finish(frame, [m.column for m in parsed], values, settings)
    return Comparison(runs=runs, tests=table, metrics=parsed, settings=settings)


def compare_per_user(per_user: pd.DataFrame, metrics: Sequence[str], run_cols: Sequence[str], user_col: str,
                     settings: Settings, segments: Any = None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """``runs``, ``tests`` and the SQL for per-user values already computed: one row per (run, user) of
    ``per_user`` with the run key columns, the user column and one column per metric (NULL where a
    user has no value), computed by the same SQL on a private in-memory DuckDB
    (:meth:`recsql.Evaluation.compare`); ``segments`` as :func:`compare`'s (a DataFrame, an Arrow
    table or a file DuckDB reads)."""
    run_cols = list(run_cols)
    if not run_cols:
        raise RecsqlError("compare needs runs: evaluate with run_cols='model' (the run key columns) first")
    missing = [c for c in [*run_cols, user_col, *metrics] if c not in per_user.columns]
    if missing:
        raise RecsqlError(f"compare: the per-user rows have no column {missing[0]!r}; they need the run columns, "
                          f"the user column and one column per metric")
    kinds = ["number" if pd.api.types.is_numeric_dtype(per_user[c]) else "string" for c in run_cols]
    values = Values("cmp_per_user", run_cols, run_cols, user_col, list(metrics))
    with runner_for(None) as runner:  # recsql's own in-memory DuckDB, a cursor of its own
        runner.cursor.register("cmp_per_user", per_user)
        rows = Source("recs", exp.to_table("cmp_per_user"))
        rows.columns = runner.describe(rows)
        with _segments(segments, runner, {"recs": rows}, user_col) as grouping:
            if grouping is not None:
                values.segments, values.segment_user, values.segment_cols = grouping[0], grouping[1], list(grouping[2])
            sql = render(statistics(values, settings, _baseline_keys(settings.baseline, run_cols, kinds)), "duckdb")
            frame = runner.fetch(sql).to_pandas()
            _refuse_segments(frame, values)
    _settled(frame, settings, values)
    runs, tests = finish(frame, list(metrics), values, settings)
    return runs, tests, sql
