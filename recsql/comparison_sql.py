"""The comparison's SQL: the statistics statement over per-user values (:func:`statistics`: the
templates ``sql/_compare_*.sql`` appended as more CTEs, with their parameters as typed literals and
the resampling mixer's macros expanded), and compare's one statement, evaluate's per-user query
followed by the statistics over it (:func:`statement_for`). SQL text, never run."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import sqlglot
from sqlglot import exp

from .comparison_baseline import baseline_keys
from .comparison_global import global_metrics, list_ctes, union_ctes
from .comparison_logged import contexts_cte, logged, plan_for as logged_plan, positions_cte
from .comparison_samples import sample_key
from .comparison_weighted import counted_kinds, global_ctes, plan_for, refuse_unsupported, weighted
from .comparison_settings import Settings
from .compose import DIAGNOSTICS, compose, internal_runs, metric_columns, readable, with_policy
from .compose.checks import SEGMENT_CHECKS
from .dialects import render
from .errors import RecsqlError
from .metrics import Metric
from .resampling import bigint, draw_parameters, expand_macros
from .statements import RELATIONS, memoised_and_reads, memoised_strings, plan_key
from .templates import read_template

# The statistics' templates, in the order their CTEs are appended (each reads the ones before).
TEMPLATES = ("_compare_draws", "_compare_observed", "_compare_wilcoxon", "_compare_resampled")
INTERVAL_TEMPLATE = "_compare_interval"  # after the unions of recsql/comparison_global.py
# Randomization: a flipped sum counts as extreme down to this fraction of Σ|v| below the observed one
# (sums whose exact values are equal may round apart; scipy's permutation_test allows for the same).
TOLERANCE = 1e-9
# Differences are compared (zero, ties, wins and losses) on a grid of 1/GRAIN: ROUND(v·GRAIN). Values
# equal but for the rounding of sums, whose order differs between engines, are then equal everywhere.
GRAIN = 1e12


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
    # global metrics (recsql/comparison_global.py): metric position -> the metric; the relation of the
    # users' ranked list rows (run columns ``runs``, user_id, item_id, rank); whether the statement has the catalog
    global_kinds: dict[int, Metric] = field(default_factory=dict)
    lists: str = "list_rows"
    catalog: bool = False
    weighted_plan: Any = None  # the plan of the global metrics recomputed over weighted lists (comparison_weighted)
    logged_plan: Any = None  # the plan of the off-policy estimators over resampled logs (comparison_logged)
    sample: str | None = None  # the list rows' sample key of a sampled run (comparison_samples)


def _template(name: str, parameters: dict[str, Any], slots: tuple[int, ...] = (0,)) -> list[exp.CTE]:
    """The CTEs of ``sql/<name>.sql`` with its ``$parameters`` as typed literals (or the expression given),
    its per-slot expressions written once per slot (:func:`expand_slots`) and the mixer's macros expanded."""
    _, body = read_template(name)
    tree = expand_slots(sqlglot.parse_one(body, read="duckdb"), slots)

    def substitute(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            value = parameters[node.name]
            if isinstance(value, exp.Expression):
                return value.copy()
            return bigint(value) if isinstance(value, int) else exp.Literal.number(repr(float(value)))
        return node

    tree = expand_macros(tree.transform(substitute))
    return list(tree.args["with_"].expressions)


def expand_slots(tree: exp.Expression, slots: tuple[int, ...] | list[int]) -> exp.Expression:
    """Each select expression named ``..._slot`` and each CASE branch ``WHEN $slot`` of ``tree``
    written once per slot ``i`` of ``slots``: ``$slot`` as the number i, names ending in ``_slot``
    ending in ``_i`` instead (the per-metric columns of sql/_compare_resampled.sql).

    >>> sql = "SELECT MAX(CASE WHEN slot = $slot THEN v END) AS v_slot, CASE slot WHEN $slot THEN v_slot END AS x"
    >>> expand_slots(sqlglot.parse_one(sql, read="duckdb"), [0, 2]).sql()
    'SELECT MAX(CASE WHEN slot = 0 THEN v END) AS v_0, MAX(CASE WHEN slot = 2 THEN v END) AS v_2, CASE slot WHEN 0 THEN v_0 WHEN 2 THEN v_2 END AS x'
    """
    def one(node: exp.Expression, i: int) -> exp.Expression:
        node = node.copy()
        for ident in node.find_all(exp.Identifier):
            if ident.name.endswith("_slot"):
                ident.set("this", f"{ident.name[:-len('_slot')]}_{i}")
        return node.transform(lambda n: exp.Literal.number(i) if isinstance(n, exp.Placeholder) and n.name == "slot"
                              else n)

    def per_slot(branch: exp.Expression) -> bool:
        return isinstance(branch.this, exp.Placeholder) and branch.this.name == "slot"

    for select in list(tree.find_all(exp.Select)):
        select.set("expressions", [c for e in select.expressions for c in
                                   ([one(e, i) for i in slots] if e.alias_or_name.endswith("_slot") else [e])])
    for case in list(tree.find_all(exp.Case)):
        if any(per_slot(b) for b in case.args.get("ifs") or []):
            case.set("ifs", [c for b in case.args["ifs"] for c in ([one(b, i) for i in slots] if per_slot(b) else [b])])
    return tree


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
    metric, x) (one row per defined value), cmp_runs, cmp_users (the users in a segment, their observed values
    counted; drawn = 1 for those resampled: none when segments leave a user without one) and cmp_baselines."""
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
            .from_(exp.alias_(values.segments.copy(), "t"))  # aliased, so a file's relation pastes in (statement_text)
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
    pick = exp.Case(this=exp.column("metric", "m"), ifs=[exp.If(this=bigint(i), true=exp.column(f"x{i}", "k"))
                                                          for i in per_user]) if per_user else exp.cast(exp.null(), "DOUBLE")
    metric = exp.Add(this=exp.Mul(this=exp.column("segment", "k"), expression=bigint(len(values.metrics))),
                     expression=exp.column("metric", "m"))
    unpivoted = exp.select(exp.alias_(exp.column("run", "k"), "run"), exp.alias_(exp.column("user_idx", "k"), "user_idx"),
                           exp.alias_(metric, "metric"), exp.alias_(pick, "x")) \
        .from_(exp.alias_(exp.to_table("cmp_keyed"), "k")).join(exp.alias_(exp.to_table("cmp_metrics"), "m"), join_type="cross") \
        .where(exp.column("segment", "k") >= 0)
    # no per-user metric: no row, by a false condition, not by a filter of x (NULL in every row), which DataFusion 55
    # moves beneath an aggregate without GROUP BY (still one row): each run's global rows came twice, one without mean
    present = exp.select("run", "user_idx", "metric", "x").from_(unpivoted.subquery("v")) \
        .where(exp.column("x").is_(exp.null()).not_() if per_user else exp.EQ(this=bigint(1), expression=bigint(0)))
    slots = sqlglot.parse_one(  # each metric index: its segment (grp) and its metric's position (slot)
        f"SELECT g.segment * {len(values.metrics)} + m.metric AS metric, g.segment AS grp, m.metric AS slot "
        "FROM (SELECT DISTINCT segment FROM cmp_keyed WHERE segment >= 0) AS g CROSS JOIN cmp_metrics AS m")
    runs = exp.select("run", *keys).distinct().from_("cmp_keyed")
    users = exp.select("user_idx", exp.alias_(bigint(1), "drawn")).distinct().from_("cmp_keyed")
    contexts = [contexts_cte()] if logged(values.global_kinds) else []
    if contexts:  # the logged contexts are resampled too (recsql/comparison_logged.py)
        users = exp.union(users, exp.select("user_idx", exp.alias_(bigint(1), "drawn")).from_("cmp_contexts"), distinct=True)
    if values.segments is not None:  # none drawn when a user has no segment: that result is refused, so not resampled
        users = sqlglot.parse_one("SELECT DISTINCT k.user_idx AS user_idx, CASE WHEN g.lowest >= 0 THEN 1 ELSE 0 END "
                                  "AS drawn FROM cmp_keyed AS k CROSS JOIN (SELECT MIN(segment) AS lowest FROM "
                                  "cmp_keyed) AS g WHERE k.segment >= 0")
    if baseline is None:  # every pair once
        baselines = exp.select("run", exp.alias_(bigint(1), "every")).from_("cmp_runs")
    else:
        baselines = exp.select("run", exp.alias_(bigint(0), "every")).from_("cmp_runs") \
            .where(exp.and_(*[exp.column(k).eq(v) for k, v in zip(keys, baseline)]))
    counted = counted_kinds(values.global_kinds)
    if counted:
        after += list_ctes(counted, len(values.metrics), values.runs, values.lists, values.catalog,
                           values.segments is not None, values.sample)
    return [*segment_ctes, _cte("cmp_keyed", keyed), positions_cte(range(len(values.metrics)), "cmp_metrics"), _cte("cmp_values", present),
            _cte("cmp_slots", slots), _cte("cmp_runs", runs), *contexts, _cte("cmp_users", users),
            _cte("cmp_baselines", baselines),
            *after]


RESULT_COLUMNS = {  # table alias -> the columns the statement returns from it
    "o": ("n", "mean", "sum_v", "wins", "ties", "losses", "extreme"), "s": ("ss",),
    "w": ("n_nonzero", "r_plus", "ties_term"), "i": ("resampled", "ci_low", "ci_high")}
RESULT_SOURCES = {"s": "cmp_spread", "w": "cmp_wilcoxon", "i": "cmp_interval"}


def statistics(values: Values, settings: Settings, baseline: list[exp.Expression] | None) -> exp.Select:
    """The statistics statement over ``values``: one row per unit (run, baseline, metric; baseline 0
    for a run's own values) with the sums :func:`recsql.comparison_result.finish` turns into the
    result, the run's keys (``_k0``, ...) and the input checks. Its CTEs are to be appended to the
    ones defining ``values``."""
    parameters = {**draw_parameters(settings.seed, settings.resamples), **settings.quantiles(), "tolerance": TOLERANCE,
                  "grain": GRAIN}
    ctes = _inputs(values, baseline)
    tukey = "tukey" in settings.tests
    slots = tuple(i for i in range(len(values.metrics)) if i not in values.global_kinds) or (0,)  # per-user metrics
    for name in TEMPLATES:
        ctes += _template(name, parameters, slots)
    if values.global_kinds:
        ctes += global_ctes(values, parameters, _template)
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
                     "FROM cmp_segment_rows")),
                 _cte("cmp_segment_nulls", sqlglot.parse_one(
                     f"SELECT CAST(COUNT(*) AS BIGINT) AS {SEGMENT_CHECKS[2]} FROM cmp_segment_rows WHERE "
                     + " OR ".join(f"_s{i} IS NULL" for i in range(len(values.segment_cols)))))]
        for alias, source in (("c0", "cmp_unsegmented"), ("c1", "cmp_segment_repeats"), ("c2", "cmp_segment_nulls")):
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


# Settings the statistics statement carries, by dialect: ClickHouse stops planning a query after 10,000
# plan optimizations (error 572), and the statement with global metrics and the Tukey test needs more; and
# at a query tree of 500,000 nodes (error 36: it writes each CTE out where it is read), which the weighted
# evaluation of the global metrics recomputed over weighted lists exceeds.
STATEMENT_SETTINGS: dict[str, dict[str, int]] = {"clickhouse": {"query_plan_max_optimizations_to_apply": 100_000,
                                                               "max_expanded_ast_elements": 5_000_000}}


def statement_for(plan: Any, metrics: list[Metric], settings: Settings, kinds: list[str],
                  segments: tuple | None = None) -> tuple[exp.Select, Values]:
    """The one statement: evaluate's per-user query (with its input checks) and the statistics over it.
    ``kinds``: each run column's kind (``number`` or ``string``), for the baseline's literal;
    ``segments``: (relation, user column, segment columns) to compare within."""
    if not plan.run_cols:
        raise RecsqlError("compare needs runs: name the run key columns of recs, e.g. run_cols='model' "
                          "(CLI: --run-col model)")
    plan = with_policy(plan, metrics)  # target=positions: the resampled lists keep their positions
    kinds_global = global_metrics(metrics)
    recomputed, estimators = weighted(kinds_global), logged(kinds_global)
    refuse_unsupported(metrics, sorted(recomputed + estimators), segments is not None, plan.truth_has_runs)
    if estimators and plan.logs_run_cols:
        first = metrics[estimators[0]]
        raise RecsqlError(f"compare: metric {str(first)!r} is estimated on logs per run (logs with the run column(s) "
                          f"{', '.join(map(repr, plan.logs_run_cols))}), and compare resamples the logged contexts that "
                          f"the runs it compares share; compare the runs of one {plan.logs_run_cols[0]!r} at a time "
                          f"(a filter of recs and logs), whose logs are then shared", metric=str(first))
    raw = compose(plan, metrics, output="raw")
    checks = _checks(raw)
    catalog = any(cte.alias == "catalog_size" for cte in raw.args["with_"].expressions)
    values = Values("per_user", internal_runs(plan), list(plan.run_cols), "user_id",
                    metric_columns(metrics), checks, global_kinds=kinds_global, catalog=catalog,
                    weighted_plan=plan_for(plan, catalog) if recomputed else None,
                    logged_plan=logged_plan(plan) if estimators else None, sample=sample_key(plan))
    if segments is not None:
        values.segments, values.segment_user, values.segment_cols = segments[0], segments[1], list(segments[2])
    baseline = baseline_keys(settings.baseline, list(plan.run_cols), kinds)
    statement = readable(_with(raw, statistics(values, settings, baseline)), plan, metrics, "compare")
    own = STATEMENT_SETTINGS.get(plan.dialect, {})
    if own:
        statement.set("settings", [exp.EQ(this=exp.var(k), expression=exp.Literal.number(v)) for k, v in own.items()])
    return statement, values


def _checks(raw: exp.Select) -> list[str]:
    """The input-check columns of evaluate's raw per-user statement."""
    return [e.alias_or_name for cte in raw.args["with_"].expressions if cte.alias == "checks"
            for e in cte.this.expressions if e.alias_or_name in DIAGNOSTICS]


def statement_text(plan: Any, metrics: list[Metric], settings: Settings, kinds: list[str], segments: tuple | None,
                   dialect_name: str) -> tuple[str, Values, frozenset[str] | None]:
    """:func:`statement_for` rendered for ``dialect_name``, its :class:`Values`, and the roles of the input
    relations it reads (:func:`recsql.statements.memoised_and_reads`): composed once per
    plan options, metrics, settings, run column kinds and segment columns, in memory and on disk,
    with the inputs' and the segments' relations pasted in (:func:`recsql.statements.memoised_and_reads`)."""
    relations = {role: getattr(plan, role) for role in RELATIONS if getattr(plan, role) is not None}
    if segments is not None:
        relations["segments"] = segments[0]
    key = ("compare", plan_key(plan, metrics, "raw", dialect_name, True), repr(settings), tuple(kinds),
           None if segments is None else (segments[1], tuple(segments[2])))
    built: dict[str, list[str]] = {}

    def build(given: dict[str, exp.Expression]) -> str:
        placed = replace(plan, **{role: e for role, e in given.items() if role != "segments"})
        grouping = None if segments is None else (given["segments"], segments[1], segments[2])
        statement, values = statement_for(placed, metrics, settings, kinds, grouping)
        built["checks"] = values.checks
        return render(statement, dialect_name)

    sql, reads = memoised_and_reads(key, relations, dialect_name, True, build)
    checks = memoised_strings(("compare checks", key, tuple(sorted(relations))),  # the given inputs' checks
                              lambda: built["checks"] if "checks" in built else _checks(compose(plan, metrics, output="raw")))
    values = Values("per_user", internal_runs(plan), list(plan.run_cols), "user_id",
                    metric_columns(metrics), checks, global_kinds=global_metrics(metrics))
    if segments is not None:
        values.segments, values.segment_user, values.segment_cols = segments[0], segments[1], list(segments[2])
    return sql, values, reads
