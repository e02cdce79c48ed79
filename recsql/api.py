"""The public entry points: :func:`evaluate` (run on an engine) and :func:`to_sql` (render the query)."""
from __future__ import annotations

import dataclasses
import numbers
import re
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from .compose import (DIAGNOSTICS, ITEM_VALUE_INVALID, MAX_EXPONENT, RECS_ROWS, TIES, Plan, check_inputs, fit_to_inputs, internal_runs, not_finite,
                      input_runs, truth_runs,
                      population_counts, quoted_column, recs_in, truth_in, baseline_in, whole_id)
from .conventions import convention as get_convention
from .conventions import measure_rules
from .dialects import dialect as get_dialect
from .dialects import render
from .engines import runner_for
from .engines.duckdb import shared
from .engines.base import Runner
from .errors import RecsqlError, suggest_keywords
from .inputs import ROLES as INPUT_ROLES
from .inputs import Inputs
from .metrics import Metric, parse_metrics
from .sources import Source, bind
from .statements import finalize_sql, statement_sql
from .validate import (duplicate_report, family, id_cast, order_type, refuse_unnamed_grades, require_number, require_one_type,
                       require_same_ids, resolve_column, resolve_order)

DUPLICATE_POLICIES = ("error", "best", "max")
ORDER_TYPES = re.compile(r"DOUBLE|BIGINT|DECIMAL(\(\s*\d{1,2}\s*,\s*\d{1,2}\s*\))?", re.I)  # to_sql's order_type


class RecsqlWarning(UserWarning):
    """Something the user should know about the result (for example an empty population)."""


@dataclass
class Evaluation:
    """The result of :func:`evaluate`: ``summary`` (one row per run) and ``per_user`` DataFrames."""

    summary: pd.DataFrame
    per_user: pd.DataFrame
    metrics: list[Metric]
    sql: str = field(repr=False)
    engine: str = "DuckDB"
    seconds: float = 0.0
    inputs: tuple[str, ...] = ()  # the table names read (an output may not replace them)
    rows_in: int = 0  # recommendation rows read
    run_cols: tuple[str, ...] = ()  # the run key columns of summary and per_user
    user_col: str = "user_id"  # the user column of per_user

    def write(self, con: Any, summary: str | None = None, per_user: str | None = None) -> None:
        """Write the summary and/or per-user rows as tables of a DuckDB database (a connection or a
        ``.duckdb`` path), atomically; refuses, before writing anything, to replace a table the
        evaluation read (however it is qualified or capitalised, or read through a view) or to
        write both to one table."""
        from .output import write_outputs
        write_outputs(con, [(label, name, frame) for label, name, frame in
                            (("summary", summary, self.summary), ("per_user", per_user, self.per_user))
                            if name is not None], protected=self.inputs)

    def compare(self, baseline: Any = None, *, tests: Sequence[str] = ("t", "wilcoxon", "randomization"),
                ci: float = 0.95, resamples: int = 1000, seed: int = 0, correction: str | None = "holm",
                segments: Any = None) -> Any:
        """Paired tests and bootstrap intervals between this evaluation's runs, from its per-user values,
        as :func:`recsql.compare` computes them (the same SQL, run on a private in-memory DuckDB);
        ``segments``: compared within each segment, as :func:`recsql.compare`'s (a DataFrame, an Arrow
        table or a file: one row per user, the user column and the segment columns). Returns a
        :class:`recsql.Comparison`."""
        from .comparison import Comparison, Settings, compare_per_user, refuse_global
        settings = Settings.checked(tests, ci, resamples, seed, correction, baseline)
        refuse_global(self.metrics)
        started = time.perf_counter()
        runs, tests_table, sql = compare_per_user(self.per_user, [m.column for m in self.metrics], self.run_cols,
                                                  self.user_col, settings, segments)
        return Comparison(runs=runs, tests=tests_table, metrics=list(self.metrics), settings=settings, sql=sql,
                          seconds=time.perf_counter() - started)

    def __repr__(self) -> str:
        return f"Evaluation({', '.join(map(str, self.metrics))})\n{self.summary.to_string(index=False)}"

    # the report and its tables (recsql/report): thin delegations

    def report(self, path: str, *, baseline: Any = None, title: str | None = None, **options: Any) -> str:
        """Write one self-contained HTML report of this evaluation to ``path`` (docs/guide/report.md): the
        summary, with two or more runs compared against ``baseline`` (None: every pair) from these
        per-user values (``options``: :meth:`compare`'s; ``inputs={"recs": ...}`` to fingerprint the
        inputs), per-user distributions, curves over the cutoffs evaluated, definitions and the SQL."""
        from .report import from_evaluation
        return from_evaluation(self, baseline=baseline, title=title, **options).write(path)

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


def _options(**cols: Any) -> dict[str, Any]:
    """The column and definition options shared by evaluate and to_sql, checked; the convention
    fills in the tie rule and population the user did not give."""
    conv = get_convention(cols["convention"])
    # the convention's per-measure rules, less those the user's ties= / population= replace for every metric
    cols["rules"] = measure_rules(conv.name, ties_given=cols["ties"] is not None,
                                  population_given=cols["population"] is not None)
    cols["population"] = cols["population"] or conv.population
    cols["ties"] = cols["ties"] or conv.ties
    if cols["threshold"] is None:  # every truth row relevant: the lowest threshold there is
        cols["threshold"] = -1.7976931348623157e308 if conv.every_truth_row_relevant else 1
    if cols["ties"] not in TIES:
        raise RecsqlError(f"ties={cols['ties']!r} is not valid; choose one of {', '.join(TIES)} ('item_id': equal "
                          "scores ordered by item id ascending; 'item_id_desc': descending; 'average': the expected "
                          "value over every order of the tied items)")
    cols["threshold"] = _number(cols["threshold"])
    _check_options(cols["population"], cols["duplicates"], cols["threshold"], cols["rank_col"], cols["score_col"])
    _check_columns(cols)
    return cols


def _check_options(population: str, duplicates: str, threshold: float, rank_col: str | None, score_col: str | None) -> None:
    if duplicates not in DUPLICATE_POLICIES:
        raise RecsqlError(f"duplicates={duplicates!r} is not valid; choose one of {', '.join(DUPLICATE_POLICIES)} "
                          "('best' keeps each recommendation's best-ranked row, 'max' the truth row with the highest relevance)")
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real) or threshold != threshold or abs(threshold) == float("inf"):
        raise RecsqlError(f"threshold must be a finite number (an item is relevant iff relevance >= threshold), got {threshold!r}")
    if rank_col is None and score_col is None:
        raise RecsqlError("recs need an order: pass score_col='<column>' (higher is better) or rank_col='<column>' (1 is best)")


def _number(value: Any) -> Any:
    """A numpy or other ``numbers.Real`` value as a Python int or float (numpy's ``np.int64(2)`` is a
    number too); anything else is returned for :func:`_check_options` to refuse."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


# Column options that must name a column (a non-empty string) / that may be None (no such column).
_REQUIRED_COLUMNS = ("user_col", "item_col", "price_col", "probability_col", "category_col", "features_col",
                     "feature_col", "value_col")
_OPTIONAL_COLUMNS = ("score_col", "rank_col", "relevance_col")
# Columns of the summary / per-user rows recsql adds beside the run keys.
_OUTPUT_COLUMNS = ("n_users", "n_users_with_recs", "users_without_recs", "recs_users_without_truth", *DIAGNOSTICS)


def _is_metric_name(name: str) -> bool:
    try:
        parse_metrics([name])
    except RecsqlError:
        return False
    return True


def _check_columns(cols: dict[str, Any]) -> None:
    """Every column option names a column (a non-empty string; None only where the column is
    optional), no two options of one input name the same column (names compare case-insensitively,
    as engines and :func:`recsql.validate.resolve_column` do), and no run key column is named like
    a column recsql adds to the results."""
    for option in (*_REQUIRED_COLUMNS, *_OPTIONAL_COLUMNS):
        value = cols[option]
        if value is None and option in _OPTIONAL_COLUMNS:
            continue
        if not isinstance(value, str) or not value:
            default = {"user_col": "user_id", "item_col": "item_id", "price_col": "price",
                       **EXTRA_COLUMNS}.get(option)
            fix = f"leave it out for the default {default!r}" if default else "or None for none"
            raise RecsqlError(f"{option} must be a column name (a non-empty string), got {value!r}; pass the "
                              f"column's name, e.g. {option}={(default or 'score')!r} ({fix})")
    order = ("rank_col", cols["rank_col"]) if cols["rank_col"] else ("score_col", cols["score_col"])
    groups = {"recs": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]), order,
                       *(("run_cols", c) for c in cols["run_cols"])],
              "truth": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]),
                        ("relevance_col", cols["relevance_col"])],
              "item_features": [("item_col", cols["item_col"]), ("feature_col", cols["feature_col"]),
                                ("value_col", cols["value_col"])]}
    for role, named in groups.items():
        seen: dict[str, str] = {}
        for option, column in named:
            if column is None:
                continue
            if column.lower() in seen:
                raise RecsqlError(f"{seen[column.lower()]} and {option} both name the {role} column {column!r}; "
                                  "each option needs its own column: name the right one for each")
            seen[column.lower()] = option
    for column in cols["run_cols"]:
        _refuse_result_name(column, "run_cols", "run column", "run")
    for column in cols["segment_cols"]:
        _refuse_result_name(column, "segment_cols", "segment column", "segment")
        if column.lower() in {c.lower() for c in (*cols["run_cols"], cols["user_col"])}:
            raise RecsqlError(f"segment_cols: {column!r} is also a run column or the user column; a segment column "
                              "names each user's segment in segments: name another (rename it in segments)")


def _refuse_result_name(column: str, option: str, what: str, example: str) -> None:
    """Refuse a key column named like a column recsql adds to the results."""
    lower = column.lower()
    if lower in _OUTPUT_COLUMNS or lower.startswith("n_users_") or _is_metric_name(column):
        raise RecsqlError(f"{option}: the {what} {column!r} is named like a column recsql adds to the "
                          f"results (n_users, users_without_recs, recs_users_without_truth, a metric such as "
                          f"ndcg@10); rename it first, e.g. SELECT \"{column}\" AS {example}, ... and {option}='{example}'")


def _run_columns(run_cols: Any, option: str = "run_cols") -> tuple[str, ...]:
    """``run_cols`` as a tuple of column names: one string is one column (``"model"``, not the
    letters m, o, d, e, l); a list or tuple of strings is several; None or ``()`` is none.

    >>> _run_columns("model"), _run_columns(["model", "date"]), _run_columns(None)
    (('model',), ('model', 'date'), ())
    """
    if run_cols is None:
        return ()
    if isinstance(run_cols, str):
        return (run_cols,)
    example = ("'model'", "['model', 'date']") if option == "run_cols" else ("'country'", "['country', 'cohort']")
    fix = f"pass one column name ({option}={example[0]}) or a list of names ({option}={example[1]})"
    what = "the run key columns of recs" if option == "run_cols" else "segment columns of segments"
    if isinstance(run_cols, (bytes, dict)) or not isinstance(run_cols, Iterable):
        raise RecsqlError(f"{option} must name {what}, got {run_cols!r}; {fix}")
    columns = tuple(run_cols)
    wrong = [c for c in columns if not isinstance(c, str) or not c]
    if wrong:
        raise RecsqlError(f"{option} must be column names (non-empty strings), got {wrong[0]!r} in {run_cols!r}; {fix}")
    return columns


# The optional inputs beside recs and truth (docs/guide/inputs.md), as evaluate / to_sql keywords.
EXTRA_INPUTS = INPUT_ROLES[2:]
# Column options of those inputs (Plan fields), with their defaults.
EXTRA_COLUMNS = {"probability_col": "probability", "category_col": "category", "features_col": "features",
                 "feature_col": "feature", "value_col": "value"}
# Items columns read for a metric's needs (recsql/compose/needs.py _REQUIREMENTS): need -> column option.
_ITEM_NEEDS = {"price": "price_col", "probability": "probability_col", "category": "category_col"}


def _plan(relations: dict[str, exp.Expression | None], cols: dict[str, Any], target: str, **resolved: Any) -> Plan:
    """The composer's plan from the bound relations and the user's options (``resolved`` overrides
    columns found by validation)."""
    settings = dict(
        user_col=cols["user_col"], item_col=cols["item_col"],
        score_col=None if cols["rank_col"] else cols["score_col"], rank_col=cols["rank_col"],
        relevance_col=cols["relevance_col"], price_col=cols["price_col"], run_cols=tuple(cols["run_cols"]),
        threshold=cols["threshold"], population=cols["population"], ties=cols["ties"],
        convention=cols["convention"], negative_unjudged=get_convention(cols["convention"]).negative_unjudged,
        gain_rule=get_convention(cols["convention"]).gain_rule, rules=cols["rules"],
        id_order=get_convention(cols["convention"]).id_order, id_text=get_dialect(target).id_text,
        duplicates="best" if cols["duplicates"] in ("best", "max") else "error",
        id_collation=get_dialect(target).collation, topk=get_dialect(target).topk, inline=get_dialect(target).inline,
        dialect=target,
        **{c: cols[c] for c in EXTRA_COLUMNS},
    )
    settings.update(resolved)
    if relations.get("segments") is not None:  # the segment columns: the last run keys (Plan.segment_cols)
        segment_cols = tuple(resolved.get("segment_cols", cols["segment_cols"]))
        if not segment_cols:
            raise RecsqlError("segments: name the segment columns, e.g. segment_cols=['country'] (to_sql and dbt read "
                              "no table, so they cannot take every column but the user's as evaluate does)")
        settings.update(segment_cols=segment_cols, run_cols=(*settings["run_cols"], *segment_cols))
        settings.setdefault("segment_user", settings["user_col"])
    return Plan(**relations, **settings)


def _id_casts(sources: dict[str, Source], cols: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(input, internal id) -> how that input's id column is read to compare by value (validate.id_cast)."""
    casts = {}
    for role, src in sources.items():
        for internal, option in (("user_id", "user_col"), ("item_id", "item_col")):
            column = {c.lower(): c for c in src.columns}.get(cols[option].lower())
            if column is not None and id_cast(src.columns[column]):
                casts[role, internal] = id_cast(src.columns[column])
    return casts


def _validated_plan(runner: Runner, sources: dict[str, Source], cols: dict[str, Any], metrics: list[Metric]) -> Plan:
    for src in sources.values():
        src.columns = runner.describe(src)
    recs, truth = sources["recs"], sources.get("truth")
    user = resolve_column(recs, cols["user_col"], "user_col")
    item = resolve_column(recs, cols["item_col"], "item_col")
    order = resolve_order(recs, cols["score_col"], cols["rank_col"])
    require_number(recs, order, "rank (1 is best)" if cols["rank_col"] else "score (higher is better)")
    # every other input keys rows by user and/or item like recs
    keyed = {"truth": ("user", "item"), "interactions": ("user", "item"), "baseline": ("user", "item"),
             "items": ("item",), "catalog": ("item",), "item_features": ("item",), "segments": ("user",)}
    require_one_type(recs, user)
    require_one_type(recs, item)
    for role, src in sources.items():
        if role != "recs":
            ids = [(label, recs_col, resolve_column(src, cols[f"{label}_col"], f"{label}_col"))
                   for label, recs_col in (("user", user), ("item", item)) if label in keyed[role]]
            for _, _, column in ids:
                require_one_type(src, column)
            require_same_ids(recs, src, ids)
    if "baseline" in sources:
        require_number(sources["baseline"], resolve_column(sources["baseline"], order, "rank_col" if cols["rank_col"]
                                                           else "score_col"), "baseline's order (the recs' column)")
    relevance = None
    if truth is not None and cols["relevance_col"] and (cols["relevance_col"].lower() in {c.lower() for c in truth.columns}
                                                        or cols["relevance_col"] != "relevance"):
        relevance = resolve_column(truth, cols["relevance_col"], "relevance_col")
        require_number(truth, relevance, "relevance")
    elif truth is not None and cols["relevance_col"] and not get_convention(cols["convention"]).every_truth_row_relevant:
        # the default 'relevance', absent, and a convention that reads grades (replay's and msr's read none)
        refuse_unnamed_grades(truth, {c.lower() for c in (cols["user_col"], cols["item_col"], *cols["run_cols"])})
    runs = tuple(resolve_column(recs, c, "run_cols") for c in cols["run_cols"])
    truth_has = [c for c in runs if truth is not None and c.lower() in {t.lower() for t in truth.columns}]
    needs = set().union(*(m.spec.requires(m.all_options()) for m in metrics))
    item_columns = {}
    if "items" in sources:
        for need, option in _ITEM_NEEDS.items():
            if need in needs:
                item_columns[option] = resolve_column(sources["items"], cols[option], option)
                if need != "category":
                    require_number(sources["items"], item_columns[option], need)
        if "features" in needs and "item_features" not in sources:
            item_columns["features_col"] = resolve_column(sources["items"], cols["features_col"], "features_col")
    if "item_features" in sources:
        for option in ("feature_col", "value_col"):
            item_columns[option] = resolve_column(sources["item_features"], cols[option], option)
        require_number(sources["item_features"], item_columns["value_col"], "feature value")
    # text ids and run keys take the dialect's binary collation (bytewise order, 'B' and 'b' two runs);
    # dates and other non-text ids compare by value as they are
    keyed_ids = (("user_id", user), ("item_id", item), *((f"_run{i}", c) for i, c in enumerate(runs)))
    text_ids = frozenset(internal for internal, column in keyed_ids if family(recs.columns[column]) == "string")
    segmented = {}
    if "segments" in sources:
        segmented = _segment_columns(sources["segments"], cols, runs)
        text_ids |= {f"_run{len(runs) + i}" for i, c in enumerate(segmented["segment_cols"])
                     if family(sources["segments"].columns[c]) == "string"}
    relations = {role: sources[role].relation if role in sources else None for role in ("recs", "truth", *EXTRA_INPUTS)}
    orders = {"ord_type": order_type(recs.columns[order], runner.dialect), "id_casts": _id_casts(sources, cols),
              "item_needs": frozenset(needs & set(ITEM_VALUE_INVALID))}
    if "baseline" in sources:
        baseline = sources["baseline"]
        orders["baseline_ord_type"] = order_type(baseline.columns[resolve_column(baseline, order, "score_col")],
                                                 runner.dialect)
    return _plan(relations, cols, runner.dialect, **orders,
                 user_col=user, item_col=item, score_col=None if cols["rank_col"] else order,
                 rank_col=order if cols["rank_col"] else None, relevance_col=relevance,
                 run_cols=runs, truth_has_runs=len(truth_has) == len(runs) and bool(runs), text_ids=text_ids,
                 **item_columns, **segmented)


def _segment_columns(segments: Source, cols: dict[str, Any], runs: tuple[str, ...]) -> dict[str, Any]:
    """The segments input's user column and segment columns (``segment_cols``; default: every column
    but the user's), as the input spells them."""
    user = resolve_column(segments, cols["user_col"], "user_col")
    named = cols["segment_cols"] or tuple(c for c in segments.columns if c != user)
    if not named:
        raise RecsqlError(f"segments: the input has only the user column {user!r}; add the segment columns "
                          "(one row per user: user, country, ...)")
    columns = tuple(resolve_column(segments, c, "segment_cols") for c in named)
    for column in columns:
        _refuse_result_name(column, "segment_cols", "segment column", "segment")
        if column.lower() in {c.lower() for c in (*runs, user)}:
            raise RecsqlError(f"segments: the column {column!r} is also a run column (run_cols) or the user column; "
                              f"rename it in segments, or name the segment columns: segment_cols=[...]")
    return {"segment_cols": columns, "segment_user": user}


def _count(condition: exp.Expression) -> exp.Expression:
    count = exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))], default=exp.Literal.number(0)))
    return exp.Coalesce(this=count, expressions=[exp.Literal.number(0)])  # SUM of no rows is NULL


# The input checks run inside the evaluation query (recsql/compose/checks.py DIAGNOSTICS: columns of every
# raw row); the functions below run only when a check found something, to name the column and give
# examples. They read the inputs again, so if the data changed in between they may find less: the
# error is raised anyway, from the counts the query saw.


def _value_checks(plan: Plan) -> dict[str, tuple[exp.Expression, list[str], list[str]]]:
    """Per input: the relation, the columns that must not be NULL and those that must be finite."""
    order = plan.rank_col or plan.score_col
    relevance = list(filter(None, [plan.relevance_col]))
    return {"recs": (plan.recs, [*input_runs(plan), plan.user_col, plan.item_col, order], [order]),
            "truth": (plan.truth, [*(input_runs(plan) if plan.truth_has_runs else ()), plan.user_col, plan.item_col,
                                   *relevance], relevance),
            "baseline": (plan.baseline, [plan.user_col, plan.item_col, order], [order])}


def _explain_values(runner: Runner, plan: Plan, role: str, found: int | None) -> RecsqlError | None:
    """The error for ``found`` invalid rows of ``role``: which column holds NULL, NaN or infinite
    values (None when ``found`` is None and no column does)."""
    relation, columns, numbers = _value_checks(plan)[role]
    counts = [_count(exp.Is(this=quoted_column(c), expression=exp.null())) for c in columns]
    counts += [_count(not_finite(quoted_column(c))) for c in numbers]
    query = exp.select(*[exp.alias_(c, f"n{i}") for i, c in enumerate(counts)]).from_(relation.copy())
    row = runner.fetch_rows(render(query, runner.dialect, pretty=False))[0]
    for column, count in zip(columns, row[: len(columns)]):
        if count:
            return RecsqlError(f"{role} column {column!r} has {int(count)} NULL (missing) value(s); recsql needs every "
                               f"{column!r} set: drop or fill those rows first (e.g. WHERE {column} IS NOT NULL)")
    for column, count in zip(numbers, row[len(columns):]):
        if count:
            return RecsqlError(f"{role} column {column!r} has {int(count)} NaN or infinite value(s), which have no "
                               f"place in a ranking; replace them with finite numbers or drop those rows")
    for internal, column in (("user_id", plan.user_col), ("item_id", plan.item_col)):
        if plan.id_casts.get((role, internal)) == "whole":
            value = quoted_column(column)
            broken = exp.and_(exp.Not(this=exp.Is(this=value.copy(), expression=exp.null())),
                              exp.Is(this=whole_id(value), expression=exp.null()))
            query = exp.select(exp.alias_(_count(broken), "n")).from_(relation.copy())
            count = runner.fetch_rows(render(query, runner.dialect, pretty=False))[0][0]
            if count:
                return RecsqlError(
                    f"{role} column {column!r} holds floating-point ids, {int(count)} of them not a whole number "
                    f"within ±2^53 (or NaN/infinite); recsql compares ids exactly and reads float ids as integers. "
                    f"Cast the column to BIGINT (or to text if its ids are not integers)")
    if role == "truth" and plan.relevance_col:
        large = exp.GT(this=exp.cast(quoted_column(plan.relevance_col), "DOUBLE"), expression=exp.Literal.number(MAX_EXPONENT))
        count = runner.fetch_rows(render(exp.select(exp.alias_(_count(large), "n")).from_(relation.copy()),
                                         runner.dialect, pretty=False))[0][0]
        if count:
            return RecsqlError(
                f"truth column {plan.relevance_col!r} has {int(count)} relevance(s) above {MAX_EXPONENT}, too large for "
                f"the exponential gains asked (2^relevance overflows a double beyond 1023): use gain=linear, or "
                f"rescale the relevances (e.g. to grades 0-4)")
    if found is None:
        return None
    return RecsqlError(f"{role} has {found} row(s) with a NULL (missing) value or a NaN or infinite number in "
                       f"{', '.join(map(repr, columns))}; recsql needs them set and finite: drop or fill those rows first")


_ITEM_RULES = {"price": "a price must be a finite number >= 0", "probability": "a probability must be in [0, 1]"}


def _explain_items(runner: Runner, plan: Plan, found: int) -> RecsqlError:
    """The error for ``found`` invalid rows of items: a NULL item id, or a price or probability a
    metric reads that is out of its range (compose.ITEM_VALUE_INVALID)."""
    columns = {"item_id": plan.item_col, "price": plan.price_col, "probability": plan.probability_col}
    checks = {"item_id": exp.Is(this=quoted_column(plan.item_col), expression=exp.null())}
    for name, invalid in ITEM_VALUE_INVALID.items():
        if name in plan.item_needs:
            checks[name] = invalid(exp.cast(quoted_column(columns[name]), "DOUBLE"))
    query = exp.select(*[exp.alias_(_count(c), n) for n, c in checks.items()]).from_(plan.items.copy())
    counts = dict(zip(checks, runner.fetch_rows(render(query, runner.dialect, pretty=False))[0]))
    for name, count in counts.items():
        if count:
            rule = _ITEM_RULES.get(name, "every item id must be set")
            return RecsqlError(f"items column {columns[name]!r} has {int(count)} invalid value(s): {rule} (NaN and "
                               f"infinity are not; NULL is no value: the item adds nothing); fix or drop those rows")
    return RecsqlError(f"items has {found} invalid row(s) (a NULL item id, or a price or probability out of range)")


def _explain_duplicates(runner: Runner, plan: Plan, role: str, found: int, recs_columns: list[str]) -> RecsqlError:
    """The error for ``found`` duplicated rows of ``role`` (extra copies of a key), with up to three
    example keys."""
    runs = internal_runs(plan)
    best = "Pass duplicates='best' to keep each item's best-ranked row."
    keyed = {"recs": (lambda: recs_in(plan), runs, best),
             "truth": (lambda: truth_in(plan), truth_runs(plan),
                       "Pass duplicates='max' to keep the highest relevance."),
             "baseline": (lambda: baseline_in(plan), [], best)}
    if role in keyed:
        make, run_keys, fix = keyed[role]
        body, keys = make(), [*run_keys, "user_id", "item_id"]
        names = [*[dict(zip(runs, plan.run_cols))[k] for k in run_keys], plan.user_col, plan.item_col]
    else:  # items (item key), item_features (item, feature)
        item = exp.alias_(quoted_column(plan.item_col), "item_id")
        if role == "items":
            body, keys, names = exp.select(item).from_(plan.items.copy()), ["item_id"], [plan.item_col]
        else:
            body = exp.select(item, exp.alias_(quoted_column(plan.feature_col), "feature")).from_(plan.item_features.copy())
            keys, names = ["item_id", "feature"], [plan.item_col, plan.feature_col]
        fix = "Remove the repeated rows, or pass duplicates='best' to keep one row per key (the largest value of each column)."
    if role == "recs":
        known = {c.lower() for c in (plan.user_col, plan.item_col, plan.score_col or "", plan.rank_col or "", *plan.run_cols)}
        extra = [c for c in recs_columns if c.lower() not in known]
        if extra:
            fix = (f"If recs hold several runs, name their key columns: run_cols={extra[:3]!r} "
                   f"(CLI: --run-col {extra[0]}); otherwise pass duplicates='best' to keep each item's best-ranked row.")
    groups = exp.select(*keys).from_(exp.Subquery(this=body, alias="s")).group_by(*keys).having("COUNT(*) > 1")
    query = exp.select(*keys).from_(exp.Subquery(this=groups, alias="d")).order_by(*keys).limit(3)
    rows = runner.fetch_rows(render(query, runner.dialect, pretty=False))
    return duplicate_report(rows, found, role, names, fix)


def _refuse(runner: Runner, plan: Plan, found: dict[str, int], recs_columns: list[str]) -> None:
    """Raise for the first input check of the query that found something (``found``: the
    diagnostic columns' values): segments first (a user without one, or with two), then invalid
    values, then duplicates."""
    from .comparison import refuse_segments
    refuse_segments(found, "of recs or truth")
    for role in ("recs", "truth", "baseline"):
        if found.get(f"{role}_invalid_rows"):
            raise _explain_values(runner, plan, role, found[f"{role}_invalid_rows"])
    if found.get("items_invalid_rows"):
        raise _explain_items(runner, plan, found["items_invalid_rows"])
    for role in ("recs", "truth", "baseline", "items", "item_features"):
        if found.get(f"{role}_duplicate_rows"):
            raise _explain_duplicates(runner, plan, role, found[f"{role}_duplicate_rows"], recs_columns)


# evaluate's options that describe the columns and definitions (checked together by _options).
_COLUMN_OPTIONS = ("user_col", "item_col", "score_col", "rank_col", "relevance_col", "price_col", "threshold",
                   "population", "duplicates", "convention", "ties", *EXTRA_COLUMNS)


@dataclass
class _Request:
    """One evaluation's inputs and options, checked: what :func:`evaluate` and
    :func:`recsql.compare` share (the options are evaluate's keywords, described once there)."""

    metrics: list[Metric]
    cols: dict[str, Any]
    inputs: dict[str, Any]
    con: Any
    progress: bool


def _request(arguments: dict[str, Any]) -> _Request:
    """The checked request from evaluate's arguments (every parameter of :func:`evaluate`, by name):
    the inputs as one :class:`recsql.Inputs`, checked there."""
    parsed = parse_metrics(arguments["metrics"])
    described = Inputs.of(arguments)
    cols = described.options()
    if described.recs is None:
        raise RecsqlError("recs is required: the recommendations to evaluate")
    inputs = described.given()
    given = {role for role, obj in inputs.items() if obj is not None}
    parsed = [fit_to_inputs(m, given) for m in parsed]  # novelty: p=items when only items are given
    check_inputs(parsed, given, {need: arguments[f"{need}_col"] for need in
                                 ("user", "item", "price", "probability", "category", "features", "feature", "value")})
    return _Request(metrics=parsed, cols=cols, inputs=inputs, con=arguments["con"], progress=arguments["progress"])


@contextmanager
def _bound(request: _Request) -> Iterator[tuple[Runner, Plan, dict[str, Source]]]:
    """The request's runner, validated plan and bound inputs; the inputs are unbound afterwards,
    also when the run fails or is interrupted."""
    with runner_for(request.con, progress=request.progress) as runner:
        sources: dict[str, Source] = {}
        try:
            for role, obj in request.inputs.items():
                if obj is not None:
                    sources[role] = bind(role, obj, runner)
            yield runner, _validated_plan(runner, sources, request.cols, request.metrics), sources
        finally:
            for src in sources.values():
                src.cleanup()


def _fetch_checked(runner: Runner, plan: Plan, sql: str, fetch: Any = None) -> Any:
    """Run ``sql`` (with ``fetch``, default ``runner.fetch``); an engine error that a NULL or NaN
    input caused is reported as that."""
    try:
        return (fetch or runner.fetch)(sql)
    except RecsqlError:  # a NULL or NaN the engine itself choked on: name it if it is that
        for role, (relation, _, _) in _value_checks(plan).items():
            error = _explain_values(runner, plan, role, None) if relation is not None else None
            if error is not None:
                raise error from None
        raise


@suggest_keywords
def evaluate(
    recs: Any,
    truth: Any,
    metrics: Sequence[str | Metric] | str | Metric,
    *,
    items: Any = None,
    interactions: Any = None,
    catalog: Any = None,
    baseline: Any = None,
    item_features: Any = None,
    segments: Any = None,
    con: Any = None,
    user_col: str = "user_id",
    item_col: str = "item_id",
    score_col: str | None = "score",
    rank_col: str | None = None,
    relevance_col: str | None = "relevance",
    price_col: str = "price",
    run_cols: Iterable[str] | str | None = (),
    threshold: float | None = None,
    population: str | None = None,
    duplicates: str = "error",
    convention: str = "recsql",
    ties: str | None = None,
    probability_col: str = "probability",
    category_col: str = "category",
    features_col: str = "features",
    feature_col: str = "feature",
    value_col: str = "value",
    segment_cols: Iterable[str] | str | None = None,
    progress: bool = False,
) -> Evaluation:
    """Evaluate recommendations against truth with any set of metrics, in ONE query on one engine.

    ``con``: None (an in-memory DuckDB), a DuckDB connection, a ``.duckdb`` file path (opened
    read-only), or a sqlite3 / psycopg / PyMySQL / MariaDB connection, a SparkSession, a chdb
    session or a DataFusion SessionContext. ``recs``/``truth``/``items``: a table or view name; on
    DuckDB also a Parquet/CSV/JSON path or glob, a pandas or polars DataFrame, or an Arrow table;
    on Spark also a Spark DataFrame. Returns an :class:`Evaluation` with ``summary`` (one row per
    run: run keys, a user count per population averaged over (``n_users`` for the truth metrics,
    ``n_users_<metric>`` for one a convention averages over its own population, ``n_users_with_recs``
    for the list-only ones), one column per metric named as asked, and when truth is given
    ``users_without_recs``, ``recs_users_without_truth``) and ``per_user``. The input checks run in
    the same query (the diagnostic columns of :func:`to_sql`'s summary); a non-zero one raises a
    :class:`RecsqlError`. Definitions: README.

    >>> import pandas as pd
    >>> recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.7]})
    >>> truth = pd.DataFrame({"user_id": [1, 2], "item_id": [11, 12]})
    >>> evaluate(recs, truth, ["mrr@10", "hr@1"]).summary[["n_users", "mrr@10", "hr@1"]].to_dict("records")
    [{'n_users': 2, 'mrr@10': 0.25, 'hr@1': 0.0}]
    """
    request = _request(locals())
    parsed, cols = request.metrics, request.cols
    started = time.perf_counter()
    with _bound(request) as (runner, plan, sources):
        # ONE statement: the metrics and the input checks (diagnostic columns) read one snapshot
        sql = statement_sql(plan, parsed, "raw", runner.dialect)
        raw = _fetch_checked(runner, plan, sql)
        per_user, summary, found = _split(plan, parsed, raw)
        _warn_segment_runs(plan, raw)
        if RECS_ROWS not in _columns_of(raw) or _rows_of(raw) == 0:
            # no user row carried the checks (an empty population, or invalid rows that left no user):
            # read them alone
            checks = _fetch_checked(runner, plan, statement_sql(plan, parsed, "checks", runner.dialect))
            found = {name: int(value or 0) for name, value in _records(checks)[0].items()}
        _refuse(runner, plan, found, list(sources["recs"].columns))
        rows_in = found[RECS_ROWS]
    truth_counts = [name for name, _, kind in population_counts(plan, parsed) if kind == "truth"]
    for _, row in summary.iterrows():
        if any(row[name] == 0 for name in truth_counts):
            warnings.warn("no user has a relevant truth item (relevance >= threshold"
                          f" = {cols['threshold']}) in a run; its metrics are NULL", RecsqlWarning, stacklevel=2)
    inputs = tuple(src.table for src in sources.values() if src.table)
    return Evaluation(summary=summary, per_user=per_user, metrics=parsed, sql=sql, engine=runner.name,
                      seconds=time.perf_counter() - started, inputs=inputs, rows_in=rows_in,
                      run_cols=tuple(plan.run_cols), user_col=plan.user_col)


def _warn_segment_runs(plan: Plan, raw: Any) -> None:
    """Warn when a run column looks like user segments: truth is shared by the runs (it lacks the run
    columns) and, among the users with recommendations, every user appears under exactly one value of
    the column (within each value of the other run columns), which has two values or more. Each such
    run is scored over every truth user, the users of the other values counted as 0, which is
    right only if the column really names runs (users recommended to by one model each, say); so
    this warns and does not refuse. Read from the raw per-user rows the query returned: no extra scan."""
    if plan.truth is None or plan.truth_has_runs or plan.segments is not None or not plan.run_cols:
        return
    runs = internal_runs(plan)
    rows = raw.select([*runs, "user_id", "_has_recs"]).to_pandas() if isinstance(raw, pa.Table) else \
        (raw.to_pandas() if hasattr(raw, "to_pandas") and not isinstance(raw, pd.DataFrame) else raw)
    rows = rows[rows["_has_recs"] == 1]
    for i, column in enumerate(plan.run_cols):
        others = [r for j, r in enumerate(runs) if j != i]
        if rows[runs[i]].nunique() < 2 or rows.groupby([*others, "user_id"], dropna=False)[runs[i]].nunique().max() != 1:
            continue
        warnings.warn(f"run_cols: every user of recs appears under one value of the run column {column!r} (which "
                      f"has {rows[runs[i]].nunique()}), and truth has no {column!r} column: each of its runs is "
                      f"scored over every truth user, those of the other values counted as 0 (users_without_recs). "
                      f"If {column!r} gives user segments, pass segments= (a table of {plan.user_col!r} -> "
                      f"{column!r}; CLI: --segments) instead, to evaluate within each segment",
                      RecsqlWarning, stacklevel=3)
        return


def _columns_of(frame: Any) -> list[str]:
    """The column names of a fetched result (pandas, Arrow, or a frame with ``to_pandas``)."""
    return list(frame.column_names if hasattr(frame, "column_names") else frame.columns)


def _rows_of(frame: Any) -> int:
    return frame.num_rows if hasattr(frame, "num_rows") else len(frame)


def _records(frame: Any) -> list[dict[str, Any]]:
    table = frame.to_pandas() if hasattr(frame, "to_pandas") and not isinstance(frame, pd.DataFrame) else frame
    return table.to_dict("records")


def _split(plan: Plan, metrics: list[Metric], raw: Any) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """Per-user rows, the summary and the values of the diagnostic columns the raw rows carry (and ``_recs_rows``) from the query's raw rows (the engine's per-user
    values), finished by the same SQL :func:`to_sql` appends, run on a cursor of recsql's own in-memory DuckDB."""
    columns = list(raw.column_names if hasattr(raw, "column_names") else raw.columns)
    diagnostics = [c for c in DIAGNOSTICS if c in columns]
    names = [*diagnostics, RECS_ROWS] if RECS_ROWS in columns else diagnostics
    with shared.cursor() as con:
        con.register("per_user", raw)
        per_user = con.execute(finalize_sql(plan, metrics, "per_user")).df()
        # the checks are all 0 when evaluate returns (it raises otherwise): the summary leaves them out
        summary = con.execute(finalize_sql(plan, metrics, "summary")).df()
        found = _column_maxima(raw, names)
        if found is None:
            row = con.execute(f"SELECT {', '.join(f'MAX({n})' for n in names) or '0'} FROM per_user").fetchone()
            found = dict(zip(names, row))
    return per_user, summary, {n: int(found[n] or 0) for n in names} | ({} if RECS_ROWS in columns else {RECS_ROWS: 0})


def _column_maxima(raw: Any, names: list[str]) -> dict[str, Any] | None:
    """The largest value of each named integer column of an Arrow table (None for an empty column),
    read without a query; None when ``raw`` is not an Arrow table of integer columns."""
    if not isinstance(raw, pa.Table):
        return None
    found = {}
    for name in names:
        column = raw.column(name)
        if not pa.types.is_integer(column.type):
            return None
        found[name] = pc.max(column).as_py()
    return found


@suggest_keywords
def to_sql(
    metrics: Sequence[str | Metric] | str | Metric,
    recs: str = "recs",
    truth: str | None = "truth",
    *,
    items: str | None = None,
    interactions: str | None = None,
    catalog: str | None = None,
    baseline: str | None = None,
    item_features: str | None = None,
    segments: str | None = None,
    dialect: str = "duckdb",
    output: str = "summary",
    user_col: str = "user_id",
    item_col: str = "item_id",
    score_col: str | None = "score",
    rank_col: str | None = None,
    relevance_col: str | None = "relevance",
    price_col: str = "price",
    run_cols: Iterable[str] | str | None = (),
    truth_has_run_cols: bool = False,
    text_ids: Iterable[str] = (),
    order_type: str = "DOUBLE",
    threshold: float | None = None,
    population: str | None = None,
    duplicates: str = "error",
    convention: str = "recsql",
    ties: str | None = None,
    probability_col: str = "probability",
    category_col: str = "category",
    features_col: str = "features",
    feature_col: str = "feature",
    value_col: str = "value",
    segment_cols: Iterable[str] | str | None = None,
    compare: dict[str, Any] | None = None,
    pretty: bool = True,
) -> str:
    """The SQL that :func:`evaluate` runs, for (qualified) table names or file paths, in ``dialect``.

    ``output``: ``summary`` (one row per run) or ``per_user``. The summary carries the input checks
    as diagnostic columns (``recs_invalid_rows``, ``recs_duplicate_rows``, ``truth_invalid_rows``, ...:
    docs/guide/safety.md), computed in the same statement: a non-zero one means the metrics beside it
    read bad rows (``evaluate`` raises from them). ``per_user`` carries no checks. With
    ``duplicates='best'`` / ``'max'`` the query de-duplicates and the duplicate columns are 0. ``text_ids``: the id columns
    (``user_col``/``item_col``) and run columns that hold strings, so that dialects whose default collation is
    not bytewise (PostgreSQL, MySQL, SQL Server) compare and order them with a binary collation. ``order_type``:
    the type the score (or rank) is ranked in; DOUBLE unless the column holds integers above 2^53
    (``"BIGINT"``) or decimals with more than 15 digits (``"DECIMAL(38, <scale>)"``), which a DOUBLE
    would tie (``evaluate`` reads it from the column's type).

    On DuckDB each user's top k comes from a bounded heap; the other dialects number the rows:

    >>> "ARG_MIN(item_id, (ord, item_id), 10)" in to_sql(["ndcg@10"], recs="db.recs", truth="db.truth")
    True
    >>> "ROW_NUMBER() OVER" in to_sql(["ndcg@10"], recs="db.recs", truth="db.truth", dialect="postgres")
    True
    """
    if output not in ("summary", "per_user"):
        raise RecsqlError(f"output={output!r} is not valid; choose summary or per_user")
    if not isinstance(dialect, str):
        raise RecsqlError(f"dialect must be a dialect's name (a string such as 'duckdb', 'postgres' or 'bigquery'), "
                          f"got {dialect!r}; leave it out for duckdb")
    target = get_dialect(dialect)
    if isinstance(text_ids, str):  # one column, as run_cols: "item_id", not the letters i, t, e, m, ...
        text_ids = (text_ids,)
    elif text_ids is None:
        text_ids = ()
    elif isinstance(text_ids, (bytes, dict)) or not isinstance(text_ids, Iterable):
        raise RecsqlError(f"text_ids must name id columns, got {text_ids!r}; pass text_ids='item_id' or "
                          "text_ids=['user_id', 'item_id']")
    text_ids = tuple(text_ids)
    parsed = parse_metrics(metrics)
    described = Inputs.of(locals())
    cols = described.options()
    given = described.given()
    relations = {role: bind(role, value, None).relation if value is not None else None for role, value in given.items()}
    keys = (*cols["run_cols"], *(cols["segment_cols"] if segments is not None else ()))
    named = {user_col: "user_id", item_col: "item_id", **{c: f"_run{i}" for i, c in enumerate(keys)}}
    unknown = [c for c in text_ids if not isinstance(c, str) or c not in named]
    if unknown:
        raise RecsqlError(f"text_ids: {unknown[0]!r} is not an id column; name {user_col!r} and/or {item_col!r} "
                          "(or a run column holding text)")
    if not isinstance(order_type, str) or not ORDER_TYPES.fullmatch(order_type.strip()):
        raise RecsqlError(f"order_type={order_type!r} is not valid; choose DOUBLE, BIGINT or DECIMAL(38, <scale>)")
    plan = _plan(relations, cols, target.name, truth_has_runs=truth_has_run_cols and bool(cols["run_cols"]),
                 text_ids=frozenset(named[c] for c in text_ids), ord_type=order_type.strip().upper(),
                 baseline_ord_type=order_type.strip().upper())
    if compare is not None:  # the statistics of recsql.compare over the per-user query (docs/guide/compare.md)
        from .comparison import Settings, statement_for
        if not isinstance(compare, dict):
            raise RecsqlError(f"compare must be a dict of compare's options (baseline, tests, ci, resamples, seed, "
                              f"correction), got {compare!r}; e.g. compare={{'baseline': 'A', 'resamples': 1000}}")
        unknown = sorted(set(compare) - {"baseline", "tests", "ci", "resamples", "seed", "correction", "segments",
                                         "segment_cols"})
        if unknown:
            raise RecsqlError(f"compare: unknown option {unknown[0]!r}; choose from baseline, tests, ci, resamples, "
                              "seed, correction, segments, segment_cols")
        options = {"tests": ("t", "wilcoxon", "randomization"), "ci": 0.95, "resamples": 1000, "seed": 0,
                   "correction": "holm", "baseline": None, **compare}
        grouping = _segment_relation(options.pop("segments", None), options.pop("segment_cols", None), user_col)
        settings = Settings.checked(**options)
        kinds = ["number" if isinstance(settings.baseline, numbers.Real) else "string"] * len(plan.run_cols)
        if isinstance(settings.baseline, (tuple, list)):
            kinds = ["number" if isinstance(v, numbers.Real) else "string" for v in settings.baseline]
        elif isinstance(settings.baseline, dict):
            lower = {str(k).lower(): v for k, v in settings.baseline.items()}
            kinds = ["number" if isinstance(lower.get(c.lower()), numbers.Real) else "string" for c in plan.run_cols]
        return render(statement_for(plan, parsed, settings, kinds, grouping)[0], target.name, pretty=pretty)
    return statement_sql(plan, parsed, output, target.name, pretty=pretty)


def _segment_relation(segments: Any, segment_cols: Any, user_col: str) -> tuple | None:
    """to_sql's compare segments: (the segments table's relation, its user column, its segment columns),
    named since to_sql reads no table; None without segments."""
    if segments is None and segment_cols is None:
        return None
    columns = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols or ())
    if not isinstance(segments, str) or not columns or not all(isinstance(c, str) and c for c in columns):
        raise RecsqlError("compare: segments need the table's name and its segment columns, e.g. compare={'segments': "
                          "'cohorts', 'segment_cols': ['cohort']} "
                          f"(one row per user: {user_col!r} and the segment "
                          f"columns); got segments={segments!r}, segment_cols={segment_cols!r}")
    return bind("segments", segments, None).relation, user_col, columns
