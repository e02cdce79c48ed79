"""Compose any set of metrics into ONE query: one scan of each input, one join, one GROUP BY.

The shared stage ``sql/_ranked.sql`` produces ranked, judged rows; each metric template
contributes one aggregate expression; this module substitutes parameters as typed literals,
expands the stage's macros (run keys, GAIN(), DISCOUNT(), calls to other metrics), prunes stage
features nobody asked for, folds constant CASE branches, and assembles the statement.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import sqlglot
from sqlglot import exp

from .discounts import discount_expression, gains
from .errors import RecsqlError
from .conventions import MeasureRule, measure_rule, resolve_metric
from .metrics import Metric, registry
from .templates import read_template
from .trees import rewrite_bottom_up

RUN_KEYS = "run_keys"
POPULATIONS = ("relevant", "intersection", "judged")
TIES = ("item_id", "item_id_desc", "average")
# Which users each population averages over, from a user's flags (relevant truth items, truth rows, recs).
_POPULATION_SQL = {
    "relevant": "_n_rel > 0",
    "intersection": "_n_rel > 0 AND _has_recs = 1",
    "judged": "_n_truth > 0",
}
# Whose values each metric's population holds (header `population:`, recsql/metrics.py).
_METRIC_POPULATION_SQL = {"lists": "_has_recs = 1", "global": "_is_global = 1"}
# Stage features read from the main list's rows (src 1) by other CTEs: a metric ranked under a
# second tie rule (src 9) cannot use them.
_MAIN_LIST_FEATURES = {"list_ideal", "pairs", "corr", "cascade", "exposure", "tie_bounds"}
SECOND_SRC = 9  # sql/_ranked.sql: the list under a second tie rule
OUTPUTS = ("per_user", "summary", "raw", "checks")
MAX_SLOTS = 10_000  # positions sql/_ranked.sql's slot_positions generates (four digit tables)
TOPK_MAX_K = 100_000  # above this a per-user heap is no faster than sorting (DuckDB's MIN_BY takes n < 1e6)


@dataclass
class Plan:
    """Everything the composer needs besides the metrics: bound relations and column names."""

    recs: exp.Expression
    truth: exp.Expression
    items: exp.Expression | None = None
    user_col: str = "user_id"
    item_col: str = "item_id"
    score_col: str | None = "score"
    rank_col: str | None = None
    relevance_col: str | None = "relevance"
    price_col: str = "price"
    run_cols: tuple[str, ...] = ()
    truth_has_runs: bool = False
    threshold: float = 1.0
    population: str = "relevant"
    duplicates: str = "error"
    text_ids: frozenset = frozenset()  # internal id columns ("user_id", "item_id") holding strings
    topk: str | None = None  # engine whose top-k override (sql/_topk.<engine>.sql) replaces ROW_NUMBER
    inline: tuple[str, ...] = ()  # CTEs to write AS NOT MATERIALIZED (recsql/dialects.py)
    id_collation: str | None = None  # binary collation for text ids (recsql/dialects.py)
    ties: str = "item_id"  # tie rule: item_id (ascending), item_id_desc, or average (expected value)
    id_order: str = "native"  # "text": tied ids compare as text, bytewise (trec_eval's strcmp), whatever their type
    id_text: str = "VARCHAR"  # the type ids are cast to for that (a bytewise-comparing one: recsql/dialects.py)
    rules: dict[str, MeasureRule] = field(default_factory=dict)  # per-measure rules of the convention in force
    negative_unjudged: bool = False  # truth rows with relevance < 0 mean "unjudged" (trec_eval): dropped
    gain_rule: str = "all"  # "relevant": items below the threshold give no gain (ranx)
    convention: str = "recsql"  # fills in the metric options the user did not write (recsql/conventions.py)
    dialect: str = "duckdb"
    ord_type: str = "DOUBLE"  # the type recs are ranked in (validate.order_type: exact for wide integers/decimals)
    baseline_ord_type: str = "DOUBLE"
    id_casts: dict[tuple[str, str], str] = field(default_factory=dict)  # (input, internal id) -> _ID_CASTS key
    item_needs: frozenset = frozenset()  # the items' value columns the metrics read (explaining a failed check)
    # Inputs of the beyond-accuracy metrics (README, "Beyond accuracy and user models"), each optional.
    interactions: exp.Expression | None = None  # (user, item) seen in training
    catalog: exp.Expression | None = None  # items; default: the items input, else truth ∪ recs items
    baseline: exp.Expression | None = None  # another recommender's lists, ordered like recs
    item_features: exp.Expression | None = None  # (item, feature, value) rows
    probability_col: str = "probability"
    category_col: str = "category"
    features_col: str = "features"  # an items column holding a feature vector (array; DuckDB)
    feature_col: str = "feature"
    value_col: str = "value"


def quoted_column(name: str, table: str | None = None) -> exp.Column:
    """A user-named column as a quoted identifier."""
    return exp.column(exp.to_identifier(name, quoted=True), table=table)


def internal_runs(plan: Plan) -> list[str]:
    """Internal names of the run key columns: _run0, _run1, ..."""
    return [f"_run{i}" for i in range(len(plan.run_cols))]


# ---------------------------------------------------------------- inputs


def _keyed_input(relation: exp.Expression, keys: list[exp.Expression], value: exp.Expression,
                 name: str, best: type[exp.AggFunc] | None) -> exp.Select:
    """``SELECT keys, value AS name FROM relation``; with ``best`` (MIN/MAX), one row per key."""
    if best is None:
        return exp.select(*keys, exp.alias_(value, name)).from_(relation.copy())
    select = exp.select(*keys, exp.alias_(best(this=value), name)).from_(relation.copy())
    return select.group_by(*[exp.column(k.alias) for k in keys])


# Id columns of a type that would compare other than by value, read as the type that does (keyed by
# (input, internal id) in Plan.id_casts): enumerations (DuckDB ENUM from a pandas Categorical,
# ClickHouse Enum, Arrow dictionaries) as their text, not their category codes; floats as BIGINT,
# exactly, or NULL (an invalid row) when not a whole number within ±2^53: a DOUBLE join would match
# 2^53 to 2^53 + 1.
MAX_WHOLE = 9_007_199_254_740_992  # 2^53


def whole_id(column: exp.Expression) -> exp.Expression:
    """A float id as BIGINT when it is a whole number within ±2^53, else NULL."""
    whole = exp.and_(exp.EQ(this=column.copy(), expression=exp.Floor(this=column.copy())),
                     exp.LTE(this=exp.Abs(this=column.copy()), expression=exp.Literal.number(MAX_WHOLE)))
    return exp.Case(ifs=[exp.If(this=whole, true=exp.cast(column.copy(), "BIGINT"))])


_ID_CASTS = {"text": lambda column: exp.cast(column, "VARCHAR"), "whole": whole_id}


def _id(plan: Plan, column: str, internal: str, role: str) -> exp.Expression:
    """An id column of input ``role``, read by value (``_ID_CASTS``), with the dialect's binary
    collation when it holds text."""
    value = quoted_column(column)
    cast = plan.id_casts.get((role, internal))
    if cast:
        value = _ID_CASTS[cast](value)
    if internal in plan.text_ids and plan.id_collation:
        collation = sqlglot.parse_one(plan.id_collation, into=exp.Column) if plan.id_collation.startswith('"') \
            else exp.var(plan.id_collation)
        return exp.alias_(exp.Collate(this=value, expression=collation), internal)
    return exp.alias_(value, internal)


def _keys(plan: Plan, with_runs: bool, role: str) -> list[exp.Expression]:
    # run keys as ids: a text run key takes the binary collation too (runs 'B' and 'b' stay two, ordered bytewise)
    keys = [_id(plan, c, r, role) for c, r in zip(plan.run_cols, internal_runs(plan))] if with_runs else []
    return keys + [_id(plan, plan.user_col, "user_id", role), _id(plan, plan.item_col, "item_id", role)]


def recs_in(plan: Plan, role: str = "recs") -> exp.Select:
    """Recommendations with internal names; ``ord`` is smaller-is-better (-score, or the rank)."""
    order = exp.cast(quoted_column(plan.rank_col or plan.score_col), exp.DataType.build(plan.ord_type, dialect="duckdb"))
    ord_expr = order if plan.rank_col else exp.Neg(this=order)
    return _keyed_input(plan.recs, _keys(plan, True, role), ord_expr, "ord", exp.Min if plan.duplicates == "best" else None)


def _empty(*columns: tuple[str, str]) -> exp.Select:
    """No rows, with the named columns: an input that was not given (typed from recs_in's ids)."""
    return exp.select(*[exp.alias_(exp.column(src) if src in ("user_id", "item_id") else exp.cast(exp.null(), src), name)
                        for name, src in columns]).from_("recs_in").where(exp.false())


def truth_in(plan: Plan) -> exp.Select:
    """Truth with internal names; relevance 1 for every row when there is no relevance column."""
    if plan.truth is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("relevance", "DOUBLE"))
    rel = exp.cast(quoted_column(plan.relevance_col) if plan.relevance_col else exp.Literal.number(1), "DOUBLE")
    # every row, negative relevances included: the stage drops those where they mean "unjudged"
    # (truth_runs; a second view of the list may read them as judged: second_truth)
    return _keyed_input(plan.truth, _keys(plan, plan.truth_has_runs, "truth"), rel, "relevance",
                        exp.Max if plan.duplicates == "best" else None)


ITEM_COLUMNS = ("price", "probability", "category")  # items_in's attribute columns, read when a metric needs them


def _items_in(plan: Plan, needed: set[str]) -> exp.Select:
    if plan.items is None:
        return _empty(("item_id", "item_id"), ("price", "DOUBLE"), ("probability", "DOUBLE"), ("category", "VARCHAR"))
    column = {"price": plan.price_col, "probability": plan.probability_col, "category": plan.category_col}
    values = {name: quoted_column(column[name]) if name in needed else exp.null() for name in ITEM_COLUMNS}
    typed = {n: exp.cast(values[n], "DOUBLE") if n != "category" else values[n] for n in ITEM_COLUMNS}
    if plan.duplicates != "best":
        return exp.select(_id(plan, plan.item_col, "item_id", "items"),
                          *[exp.alias_(typed[n], n) for n in ITEM_COLUMNS]).from_(plan.items.copy())
    # a de-duplicating policy keeps one row per item: the largest of each attribute
    return exp.select(_id(plan, plan.item_col, "item_id", "items"),
                      *[exp.alias_(exp.Max(this=typed[n]) if isinstance(values[n], exp.Column) else typed[n], n)
                        for n in ITEM_COLUMNS]).from_(plan.items.copy()).group_by(exp.column("item_id"))


def _interactions_in(plan: Plan) -> exp.Select:
    if plan.interactions is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"))
    return exp.select(_id(plan, plan.user_col, "user_id", "interactions"),
                      _id(plan, plan.item_col, "item_id", "interactions")).from_(plan.interactions.copy())


def _catalog_in(plan: Plan) -> exp.Expression:
    """The catalog input, else the items input, else every item of truth and recommendations."""
    source = plan.catalog if plan.catalog is not None else plan.items
    if source is None:
        return exp.union(exp.select("item_id").from_("truth_in"), exp.select("item_id").from_("recs_in"), distinct=False)
    role = "catalog" if plan.catalog is not None else "items"
    return exp.select(_id(plan, plan.item_col, "item_id", role)).from_(source.copy())


def baseline_in(plan: Plan) -> exp.Select:
    if plan.baseline is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("ord", "DOUBLE"))
    return recs_in(dataclasses.replace(plan, recs=plan.baseline, run_cols=(), ord_type=plan.baseline_ord_type),
                   "baseline")


def _features_in(plan: Plan, needed: set[str]) -> exp.Select:
    """Feature vectors as (item_id, feature, value) rows: the item_features input, or an items array
    column expanded (DuckDB: feature = the position in the array)."""
    if "features" not in needed:
        return _empty(("item_id", "item_id"), ("feature", "VARCHAR"), ("value", "DOUBLE"))
    if plan.item_features is not None:
        value = exp.cast(quoted_column(plan.value_col), "DOUBLE")
        rows = exp.select(_id(plan, plan.item_col, "item_id", "item_features"),
                          exp.alias_(exp.cast(quoted_column(plan.feature_col), "VARCHAR"), "feature"),
                          exp.alias_(exp.Max(this=value) if plan.duplicates == "best" else value, "value"))
        rows = rows.from_(plan.item_features.copy())
        # a de-duplicating policy keeps one value per (item, feature): the largest
        return rows.group_by(exp.column("item_id"), exp.column("feature")) if plan.duplicates == "best" else rows
    if plan.dialect != "duckdb":
        raise RecsqlError(f"feature vectors as an array column ({plan.features_col!r}) are read on DuckDB; on "
                          f"{plan.dialect}, pass item_features= with rows ({plan.item_col}, {plan.feature_col}, "
                          f"{plan.value_col})")
    vector = quoted_column(plan.features_col)
    return exp.select(
        _id(plan, plan.item_col, "item_id", "items"),
        exp.alias_(exp.cast(exp.Explode(this=exp.Anonymous(this="RANGE", expressions=[
            exp.Anonymous(this="LEN", expressions=[vector.copy()])])), "VARCHAR"), "feature"),
        exp.alias_(exp.cast(exp.Explode(this=vector.copy()), "DOUBLE"), "value"),
    ).from_(plan.items.copy())


# ---------------------------------------------------------------- input checks

# The summary's diagnostic columns (README, "Safety"), in order: each is there when its input is
# given and read by the query. *_invalid_rows: rows of the whole input with a NULL key, order or
# relevance, or a NaN/±inf order or relevance; *_duplicate_rows: extra copies of a key (a key held
# by n rows counts n - 1) among the rows the metrics read (recs: the ranked rows kept, positions <=
# the largest k, or the whole list), always 0 under a de-duplicating policy (the query keeps one row
# per key). One value per input, over every run, copied onto every summary row.
DIAGNOSTICS = ("recs_invalid_rows", "recs_duplicate_rows", "truth_invalid_rows", "truth_duplicate_rows",
               "baseline_invalid_rows", "baseline_duplicate_rows", "items_invalid_rows", "items_duplicate_rows",
               "item_features_duplicate_rows")
RECS_ROWS = "_recs_rows"  # the recommendation rows read (raw rows only: Evaluation.rows_in)
_MAX_DOUBLE = "1.7976931348623157E308"
MAX_EXPONENT = 1000  # largest relevance 2^rel is taken of: a sum of up to 2^23 terms 2^1000 stays finite


def not_finite(column: exp.Expression) -> exp.Expression:
    """NaN or ±infinity, on every engine: NaN compares greater than everything in DuckDB,
    PostgreSQL and Spark and unequal to itself elsewhere (IEEE)."""
    value = exp.cast(column, "DOUBLE")
    return exp.or_(exp.GT(this=value, expression=exp.Literal.number(_MAX_DOUBLE)),
                   exp.LT(this=value.copy(), expression=exp.Neg(this=exp.Literal.number(_MAX_DOUBLE))),
                   exp.NEQ(this=value.copy(), expression=value.copy()))


def _rows_where(condition: exp.Expression) -> exp.Expression:
    """How many rows meet ``condition`` (0 for no rows: SUM of none is NULL), as BIGINT."""
    count = exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))],
                                  default=exp.Literal.number(0)))
    return exp.cast(exp.Coalesce(this=count, expressions=[exp.Literal.number(0)]), "BIGINT")


def _invalid(table: str, columns: list[str], numbers: list[str], name: str, total: str | None = None,
             also: exp.Expression | None = None) -> exp.Select:
    """One row: ``name`` = the rows of the input CTE ``table`` (internal names; one scan of each input)
    with a NULL in ``columns`` or a non-finite value in ``numbers`` (a NULL is counted by IS NULL,
    whatever the engine's NULL ordering) or meeting ``also``, and the row count."""
    bad = exp.or_(*[exp.Is(this=exp.column(c), expression=exp.null()) for c in columns],
                  *[not_finite(exp.column(c)) for c in numbers], *([also] if also is not None else []))
    select = exp.select(exp.alias_(_rows_where(bad), name)).from_(table)
    return select.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), total)) if total else select


def _extra_copies(table: str, keys: list[str], name: str, max_rank: int | None = None) -> exp.Select:
    """One row: ``name`` = Σ (n - 1) over the keys of ``table`` held by n rows (its rows ranked <=
    ``max_rank`` when given)."""
    groups = exp.select(exp.alias_(exp.Count(this=exp.Star()), "n")).from_(table)
    if max_rank is not None:
        groups = groups.where(exp.column("rank") <= exp.Literal.number(max_rank))
    groups = groups.group_by(*keys)
    return exp.select(exp.alias_(_rows_where_sum(exp.column("n") - 1), name)).from_(groups.subquery("g"))


def _rows_where_sum(value: exp.Expression) -> exp.Expression:
    return exp.cast(exp.Coalesce(this=exp.Sum(this=value), expressions=[exp.Literal.number(0)]), "BIGINT")


def _price_invalid(value: exp.Expression) -> exp.Expression:
    """A price that is NaN, infinite or negative (a NULL price is no price: the item weighs 0, as an
    item missing from items)."""
    return exp.or_(not_finite(value.copy()), exp.LT(this=value.copy(), expression=exp.Literal.number(0)))


def _probability_invalid(value: exp.Expression) -> exp.Expression:
    """A probability that is NaN, infinite or outside [0, 1] (NULL or 0: the item adds 0 novelty)."""
    return exp.or_(not_finite(value.copy()), exp.LT(this=value.copy(), expression=exp.Literal.number(0)),
                   exp.GT(this=value.copy(), expression=exp.Literal.number(1)))


# items' attribute columns that a metric reads (its header's needs) and what makes one invalid
ITEM_VALUE_INVALID = {"price": _price_invalid, "probability": _probability_invalid}


def uses_exponent(tree: exp.Expression) -> bool:
    """Whether a query raises 2 to a relevance (gain=exponential, ERR and pFound's grades)."""
    return any(isinstance(p.this, exp.Literal) and p.this.name == "2" and not isinstance(p.expression, exp.Literal)
               for p in tree.find_all(exp.Pow))


def _checks(plan: Plan, needed: set[str], read: set[str], cuts: dict[str, int | None],
            exponent: bool = False) -> tuple[exp.Select, list[str]]:
    """The ``checks`` CTE (one row, the diagnostic columns of the inputs given and read, and
    ``_recs_rows``) and the diagnostic names it holds. ``cuts``: the ranked list CTEs (list_ranked,
    second_ranked: before the join to truth, which a duplicated truth row would multiply) -> the
    largest position the metrics read from it (None: the whole list). ``exponent``: the metrics
    raise 2 to a relevance, so a relevance above MAX_EXPONENT is invalid (2^1024 overflows a DOUBLE)."""
    runs = internal_runs(plan)
    dedup = plan.duplicates == "best"
    parts: list[exp.Select] = []  # one-row subqueries
    zeros: list[str] = []  # duplicate counts of a de-duplicating policy: the query kept one row per key
    names: list[str] = []

    def duplicates(name: str, table: str, keys: list[str]) -> None:
        names.append(name)
        if dedup:
            zeros.append(name)
        else:
            parts.append(_extra_copies(table, keys, name))

    # over the input CTEs (a de-duplicating policy's one row per key: the rows the metrics read)
    parts.append(_invalid("recs_in", [*runs, "user_id", "item_id", "ord"], ["ord"], "recs_invalid_rows", RECS_ROWS))
    names.append("recs_invalid_rows")
    if dedup:
        duplicates("recs_duplicate_rows", "", [])
    else:  # the ranked rows kept, of the main list and of a second view's list: the larger count
        names.append("recs_duplicate_rows")
        per_list = _union_all([_extra_copies(t, [*runs, "user_id", "item_id"], "d", cut) for t, cut in cuts.items()
                               if t in read])
        parts.append(exp.select(exp.alias_(exp.cast(exp.Max(this=exp.column("d")), "BIGINT"), "recs_duplicate_rows"))
                     .from_(per_list.subquery("l")))
    if plan.truth is not None and "truth_in" in read:
        too_large = exp.GT(this=exp.column("relevance"), expression=exp.Literal.number(MAX_EXPONENT)) if exponent else None
        parts.append(_invalid("truth_in", [*(runs if plan.truth_has_runs else []), "user_id", "item_id", "relevance"],
                              ["relevance"], "truth_invalid_rows", also=too_large))
        names.append("truth_invalid_rows")
        duplicates("truth_duplicate_rows", "truth_in", [*(runs if plan.truth_has_runs else []), "user_id", "item_id"])
    if plan.baseline is not None and "baseline_in" in read:
        parts.append(_invalid("baseline_in", ["user_id", "item_id", "ord"], ["ord"], "baseline_invalid_rows"))
        names.append("baseline_invalid_rows")
        duplicates("baseline_duplicate_rows", "baseline_in", ["user_id", "item_id"])
    if plan.items is not None and "items_in" in read:
        parts.append(_invalid("items_in", ["item_id"], [], "items_invalid_rows",
                              also=exp.or_(*[ITEM_VALUE_INVALID[n](exp.column(n)) for n in ITEM_VALUE_INVALID
                                             if n in needed] or [exp.false()])))
        names.append("items_invalid_rows")
        duplicates("items_duplicate_rows", "items_in", ["item_id"])
    if plan.item_features is not None and "features" in needed and "features_in" in read:
        duplicates("item_features_duplicate_rows", "features_in", ["item_id", "feature"])
    aliases = {n: f"c{i}" for i, part in enumerate(parts) for n in [e.alias for e in part.expressions]}
    select = exp.select(*[exp.alias_(exp.column(n, table=aliases[n]) if n in aliases
                                     else exp.cast(exp.Literal.number(0), "BIGINT"), n) for n in [*names, RECS_ROWS]])
    select = select.from_(parts[0].subquery("c0"))
    for i, part in enumerate(parts[1:], 1):
        select = select.join(part.subquery(f"c{i}"), join_type="cross")
    return select, names


# ---------------------------------------------------------------- macros


def _literal(value: object) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def _substitute(tree: exp.Expression, values: dict[str, object], where: str,
                keep: frozenset | set = frozenset()) -> exp.Expression:
    def sub(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder) and node.name not in keep:
            if node.name not in values:
                raise RuntimeError(f"{where}: no value for ${node.name}")
            return _literal(values[node.name])
        return node
    return tree.transform(sub, copy=False)


def _constant(node: exp.Expression) -> exp.Expression | None:
    """TRUE/FALSE for a condition decidable from literals alone (after parameter substitution)."""
    if isinstance(node, exp.EQ) and isinstance(node.this, exp.Literal) and isinstance(node.expression, exp.Literal):
        return exp.Boolean(this=node.this == node.expression)
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        if isinstance(node.this, exp.Null):
            return exp.true()
        if isinstance(node.this, exp.Literal):
            return exp.false()
    if isinstance(node, (exp.And, exp.Or)):
        left, right = node.this, node.expression
        absorbing, neutral = (exp.false(), exp.true()) if isinstance(node, exp.And) else (exp.true(), exp.false())
        if absorbing in (left, right):
            return absorbing
        if left == neutral:
            return right
        if right == neutral:
            return left
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.Boolean):
        return node.this
    return None


def _fold(tree: exp.Expression) -> exp.Expression:
    """Fold what parameter substitution made constant: literal comparisons, AND/OR with TRUE or
    FALSE, CASE branches that can never (or always) be taken, and ``WHERE TRUE``."""
    def fold(node: exp.Expression) -> exp.Expression:
        constant = _constant(node)
        if constant is not None:
            return constant
        if isinstance(node, exp.Case):
            ifs = [i for i in node.args.get("ifs") or [] if i.this != exp.false()]
            if ifs and ifs[0].this == exp.true():
                return ifs[0].args["true"]
            if not ifs:
                return node.args.get("default") or exp.null()
            node.set("ifs", ifs)
        return node

    def fold_or_drop(node: exp.Expression) -> exp.Expression | None:
        return None if isinstance(node, exp.Where) and node.this == exp.true() else fold(node)

    return rewrite_bottom_up(tree, fold_or_drop)


def _expand_run_keys(tree: exp.Expression, keys: list[str]) -> exp.Expression:
    """Expand the ``run_keys`` column into the run key columns (or remove it when there are none)."""
    for node in list(tree.find_all(exp.Column)):
        if node.name != RUN_KEYS or node.parent is None:
            continue
        parent, table = node.parent, node.table or None
        if isinstance(parent, exp.EQ):  # a.run_keys = b.run_keys -> a._run0 = b._run0 AND ... (or TRUE)
            other = (parent.expression if parent.this is node else parent.this).table or None
            parent.replace(exp.and_(*[exp.column(k, table=other).eq(exp.column(k, table=table)) for k in keys])
                           if keys else exp.true())
            continue
        if node.arg_key not in parent.args or not isinstance(parent.args[node.arg_key], list):
            raise RuntimeError(f"run_keys in an unexpected place: {parent.sql()}")
        siblings = parent.args[node.arg_key]
        index = next(i for i, s in enumerate(siblings) if s is node)
        parent.set(node.arg_key, siblings[:index] + [exp.column(k, table=table) for k in keys] + siblings[index + 1:])
    return _fold(tree)  # TRUE AND x -> x where a join had only run keys to add


def _alias_projections(tree: exp.Expression) -> exp.Expression:
    """``SELECT s.user_id`` -> ``SELECT s.user_id AS user_id``: some engines (ClickHouse) keep the
    qualifier in the output column's name otherwise."""
    for select in tree.find_all(exp.Select):
        select.set("expressions", [exp.alias_(e, e.name) if isinstance(e, exp.Column) and e.table else e
                                   for e in select.expressions])
    return tree


def _drop_join(select: exp.Select, table: str) -> None:
    joins = [j for j in select.args.get("joins") or [] if j.this.alias_or_name != table]
    select.set("joins", joins or None)


def _prune(with_: exp.With, final: exp.Select) -> None:
    """Remove CTEs nothing refers to (repeatedly)."""
    while True:
        used = {t.name for t in final.find_all(exp.Table)}
        for cte in with_.expressions:
            used |= {t.name for t in cte.this.find_all(exp.Table) if t.name != cte.alias}
        unused = [c for c in with_.expressions if c.alias not in used]
        if not unused:
            return
        with_.set("expressions", [c for c in with_.expressions if c.alias in used])


# ---------------------------------------------------------------- metrics


@lru_cache(maxsize=None)
def _metric_projection(name: str) -> exp.Expression:
    spec = registry()[name]
    select = sqlglot.parse_one(spec.sql, read="duckdb")
    outputs = [e for e in select.expressions if e.alias_or_name != "user_id"]
    if len(outputs) != 1 or outputs[0].alias != name:
        raise RuntimeError(f"sql/{name}.sql must select user_id and one expression aliased {name}")
    return outputs[0].this


def _wrap(node: exp.Expression) -> exp.Expression:
    """Parenthesise an inlined expression unless it is atomic (keeps operator precedence)."""
    return node if isinstance(node, (exp.Column, exp.Literal, exp.Cast, exp.Func, exp.Paren)) else exp.Paren(this=node)


def metric_expression(metric: Metric, context: dict[str, str] | None = None) -> exp.Expression:
    """The per-user aggregate expression of one metric, parameters bound. ``context``: facts of the
    plan a template may read: ``$ties`` (the tie rule) and ``$has_baseline`` (yes / no)."""
    context = {"ties": "item_id", "has_baseline": "no", **(context or {})}
    options = metric.all_options()
    params = metric.spec.params
    values: dict[str, object] = {"k": metric.k, **context, **{
        p: float(v) if params[p].kind == "number" and v != "auto" else v for p, v in options.items()}}

    def expand(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous):
            fname = node.name.lower()
            if fname == "gain":
                return _wrap(gains()[options["gain"]].copy())
            if fname == "discount":
                return _wrap(discount_expression(options["discount"], node.expressions[0]))
            if fname in registry():
                inner = registry()[fname]
                inherited = {p: v for p, v in options.items() if p in inner.params}
                return _wrap(metric_expression(Metric(fname, metric.k, **inherited), context))
        return node

    tree = _metric_projection(metric.name).copy()
    if metric.k is None:
        values.pop("k")
        tree = _without_cutoff(_fold(_substitute(tree, values, f"sql/{metric.name}.sql", keep={"k"})), metric)
    tree = _substitute(tree, values, f"sql/{metric.name}.sql")
    return _fold(tree.transform(expand, copy=False))


def _is_k(node: exp.Expression) -> bool:
    return isinstance(node, exp.Placeholder) and node.name == "k"


def _without_cutoff(tree: exp.Expression, metric: Metric) -> exp.Expression:
    """A metric with an optional cutoff, asked without one, ranks the whole list: ``x <= $k``
    becomes TRUE and ``LEAST($k, x)`` becomes ``x``; any other use of ``$k`` is a template error."""
    def drop(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.LTE) and _is_k(node.expression):
            return exp.true()
        if isinstance(node, exp.Least) and any(_is_k(a) for a in [node.this, *node.expressions]):
            rest = [a for a in [node.this, *node.expressions] if not _is_k(a)]
            return rest[0] if len(rest) == 1 else exp.Least(this=rest[0], expressions=rest[1:])
        return node
    tree = tree.transform(drop, copy=False)
    if any(_is_k(p) for p in tree.find_all(exp.Placeholder)):
        raise RecsqlError(f"metric {str(metric)!r} needs a cutoff with these options: write it as '{metric}@10'")
    return tree


# ---------------------------------------------------------------- the statement


def _union_all(selects: list[exp.Select]) -> exp.Expression:
    query: exp.Expression = selects[0]
    for s in selects[1:]:
        query = exp.union(query, s, distinct=False)
    return query


def _cutoffs_select(ks: list[int]) -> exp.Expression:
    return _union_all([exp.select(exp.alias_(exp.Literal.number(k), "k")) for k in ks])


def _cascades_select(keys: list[tuple[str, str]]) -> exp.Expression:
    """(kind, grade) rows for the cascade metrics asked: grade NULL = the largest relevance in truth."""
    return _union_all([exp.select(exp.alias_(exp.Literal.string(kind), "kind"),
                                  exp.alias_(exp.cast(exp.null() if grade == "auto" else exp.Literal.number(grade),
                                                      "DOUBLE"), "grade"))
                       for kind, grade in keys])


def _branches(node: exp.Expression) -> list[exp.Select]:
    """The SELECTs of a UNION ALL chain, in order."""
    out: list[exp.Select] = []
    while isinstance(node, exp.Union):
        out.insert(0, node.expression)
        node = node.this
    return [node, *out]


def _pad_union(branches: list[exp.Select], every: list[exp.Select]) -> None:
    """Give the kept UNION ALL ``branches`` the columns of ``every`` branch, in one order: a column a
    branch does not select (or whose branch was dropped) becomes a NULL cast to the type a branch
    casts it to."""
    order: list[str] = []
    types: dict[str, exp.DataType | None] = {}
    for branch in every:
        for e in branch.expressions:
            name = e.alias_or_name
            if name not in types:
                order.append(name)
                types[name] = None
            if types[name] is None and isinstance(e.unalias(), exp.Cast):
                types[name] = e.unalias().to
    for branch in branches:
        have = {e.alias_or_name: e for e in branch.expressions}
        branch.set("expressions", [have.get(n) or exp.alias_(
            exp.cast(exp.null(), types[n].copy()) if types[n] is not None else exp.null(), n) for n in order])


@lru_cache(maxsize=1)
def _parsed_stage() -> exp.Select:
    return sqlglot.parse_one(read_template("_ranked")[1], read="duckdb")


# Optional parts of the stage, each kept only when an asked metric's header names its feature.
# UNION ALL branches of `stacked`, by the CTE they read:
_BRANCHES = {"list_ideal": "list_ideal", "slots": "slots", "exposure": "exposure_rows", "pairs": "pair_rows",
             "corr": "corr_rows", "cascade": "cascade_rows"}
# Joins (CTE, aliases): dropped with their columns, which become NULL, when the feature is off.
_JOINS = {"popularity": ("ranked", {"pop"}), "baseline": ("ranked", {"b"}), "interaction_users": ("ranked", {"iu"}),
          "catalog": ("ranked", {"cs"}), "categories": ("pair_rows", {"ca", "cb"}),
          "feature_vectors": ("pair_rows", {"na", "nb", "d"})}
# Columns (CTE, column, type) replaced by a typed NULL when the feature is off (None: the order's type).
_COLUMNS = {"tie_bounds": (("list_judged", "ord", None), ("list_rows", "tie_first", "BIGINT"),
                           ("list_rows", "tie_last", "BIGINT"))}
# Features keyed by cutoff get a table of the cutoffs asked: CTE -> feature.
_CUT_TABLES = {"list_ideal_cuts": "list_ideal", "exposure_cuts": "exposure", "corr_cuts": "corr"}


def _feature_key(feature: str, metric: Metric) -> object:
    """What a feature is built for: the metric's cutoff, or for cascades (metric, max_grade)."""
    if feature == "cascade":
        return metric.name, metric.all_options().get("max_grade", "auto")
    return metric.k or 0


def _drop_joins(select: exp.Select, aliases: set[str]) -> None:
    select.set("joins", [j for j in select.args.get("joins") or [] if j.this.alias_or_name not in aliases] or None)
    for col in list(select.find_all(exp.Column)):
        if col.table in aliases:
            col.replace(exp.null())


def _null_column(select: exp.Select, name: str, type_: str) -> None:
    select.set("expressions", [exp.alias_(exp.cast(exp.null(), type_), name) if e.alias_or_name == name else e
                               for e in select.expressions])


View = tuple  # (tie rule, negative_unjudged): how a list is ranked and judged for a metric


def _tie_key(plan: Plan) -> exp.Expression:
    """What tied items are ordered by: the item id, or under a convention whose tool compares ids as
    text (``id_order="text"``: trec_eval's strcmp, Python's str order) its text compared bytewise,
    whatever the column type: a cast to the dialect's bytewise text type, with its binary collation
    where the default is not bytewise. A text id needs no cast: recs_in gave it that collation."""
    item = exp.column("item_id")
    if plan.id_order != "text" or "item_id" in plan.text_ids:
        return item
    text = exp.cast(item, exp.DataType.build(plan.id_text))
    if plan.id_collation and plan.id_text.upper().startswith("VARCHAR"):
        collation = sqlglot.parse_one(plan.id_collation, into=exp.Column) if plan.id_collation.startswith('"') \
            else exp.var(plan.id_collation)
        return exp.Collate(this=text, expression=collation)
    return text


def _order_ties(node: exp.Expression, ties: str, key: exp.Expression) -> None:
    """Tied items (``ORDER BY ord ASC, item_id ASC``) ordered by ``key``, descending for item_id_desc."""
    for ordered in list(node.find_all(exp.Ordered)):
        if isinstance(ordered.this, exp.Column) and ordered.this.name == "item_id":
            ordered.set("this", key.copy())
            ordered.set("desc", ties == "item_id_desc")


def _ranking(plan: Plan, cte: exp.CTE, ties: str, max_k: int | None, features: dict) -> None:
    """Set the ranking of a list CTE (list_ranked, second_ranked) for a tie rule: DuckDB's top-k
    override (sql/_topk.duckdb.sql) where it applies (ascending ties, a cutoff), else ROW_NUMBER with
    the tie key."""
    key = _tie_key(plan)
    if (ties == "item_id" and plan.topk and max_k is not None and max_k <= TOPK_MAX_K
            and "tie_bounds" not in features):
        name = f"_topk.{plan.topk}"
        override = _substitute(sqlglot.parse_one(read_template(name)[1], read="duckdb"), {"max_k": max_k},
                               f"sql/{name}.sql")
        for tup in override.find_all(exp.Tuple):
            for col in list(tup.find_all(exp.Column)):
                if col.name == "item_id":
                    col.replace(key.copy())
        cte.set("this", override)
    else:
        _order_ties(cte.this, ties, key)


def _max_k(metrics: list[Metric]) -> int | None:
    """The cutoff a list is cut at for these metrics (None: the whole list)."""
    if any(m.k is None or m.spec.full_list for m in metrics):
        return None
    return max((m.k for m in metrics), default=1)


def _stage(plan: Plan, metrics: list[Metric], second: View | None = None,
           second_metrics: list[Metric] = ()) -> exp.Select:
    """The ranked-rows stage for ``metrics`` (all asked) of which ``second_metrics`` read the list
    under the ``second`` view (src 9), the others under the plan's."""
    stage = _parsed_stage().copy()
    features: dict[str, set] = {}
    for m in metrics:
        if m.k is None and m.spec.features(m.all_options()) & {"list_ideal", "slots"}:
            raise RecsqlError(f"metric {str(m)!r} needs a cutoff with these options (its ideal order is cut at k): "
                              f"write it as '{m}@10'")
        for feat in m.spec.features(m.all_options()):
            features.setdefault(feat, set()).add(_feature_key(feat, m))
    if max(features.get("slots", {0})) > MAX_SLOTS:
        raise RecsqlError(f"ideal=k_slots supports k <= {MAX_SLOTS} (its ideal positions are generated in SQL); "
                          f"got k = {max(features['slots'])}")
    second_ids = {id(m) for m in second_metrics}
    negative = bool(plan.relevance_col) and plan.negative_unjudged
    second_negative = bool(plan.relevance_col) and second is not None and second[1]
    values = {
        "ties": plan.ties,
        "gain_rule": plan.gain_rule,
        "threshold": plan.threshold,
        # the main list serves every other metric (and says who has recommendations: one row is enough)
        "max_k": _max_k([m for m in metrics if id(m) not in second_ids]),
        "max_slot_k": max(features.get("slots", {0})),
        "max_pair_k": max(features.get("pairs", {0})),
        "negative_unjudged": "yes" if negative else "no",
        "second_negative_unjudged": "yes" if second_negative else "no",
        "second_max_k": _max_k(list(second_metrics)),
    }
    stage = _fold(_substitute(stage, values, "sql/_ranked.sql"))
    with_ = stage.args["with_"]
    ctes = {c.alias: c for c in with_.expressions}
    _ranking(plan, ctes["list_ranked"], plan.ties, values["max_k"], features)
    _order_ties(ctes["baseline_ranked"].this, plan.ties, _tie_key(plan))
    if second is not None:
        _ranking(plan, ctes["second_ranked"], second[0], values["second_max_k"], {})
        if second_negative == negative:  # the main list's truth serves: no second copy of truth
            for table in ctes["second_judged"].this.find_all(exp.Table):
                if table.name == "second_truth":
                    table.set("this", exp.to_identifier("truth_runs"))
    if plan.ties == "average":
        override = sqlglot.parse_one(read_template("_ties_average")[1], read="duckdb")
        ctes["list_judged"].set("this", _fold(_substitute(override, values, "sql/_ties_average.sql")))
    for table, feature in _CUT_TABLES.items():
        ctes[table].set("this", _cutoffs_select(sorted(features.get(feature, {1}))))
    ctes["cascade_params"].set("this", _cascades_select(sorted(features.get("cascade", {("err", "auto")}))))
    for feature, (cte, aliases) in _JOINS.items():
        if feature not in features:
            _drop_joins(ctes[cte].this, aliases)
    for feature, columns in _COLUMNS.items():
        if feature not in features:
            for cte, column, type_ in columns:
                _null_column(ctes[cte].this, column, type_ or exp.DataType.build(plan.ord_type, dialect="duckdb"))
    # Keep the UNION ALL branches of the features asked for, padded to the same columns.
    unused = {table for feature, table in _BRANCHES.items() if feature not in features}
    if second is None:
        unused.add("second_rows")
    every = _branches(ctes["stacked"].this)
    kept = [b for b in every if b.args["from_"].this.name not in unused]
    _pad_union(kept, every)
    ctes["stacked"].set("this", _union_all(kept))
    # Shared truth is copied to every run; truth that carries the run keys keeps the rows of the runs
    # the recommendations hold (a run is a key present in recs: truth of another run adds no row);
    # with no runs there is nothing to copy.
    for name in ("truth_runs", "second_truth"):
        truth_runs = ctes[name].this
        if not plan.run_cols:
            _drop_join(truth_runs, "runs")
            for col in truth_runs.find_all(exp.Column):
                if col.table == "runs":
                    col.set("table", exp.to_identifier("t"))
        elif plan.truth_has_runs:
            for join in truth_runs.args["joins"]:
                if join.this.alias_or_name == "runs":
                    join.set("kind", None)
                    join.set("on", exp.column("run_keys", table="runs").eq(exp.column("run_keys", table="t")))
    return _alias_projections(_fold(_expand_run_keys(stage, internal_runs(plan))))


# What each need of a metric header (`needs:`) requires: one of these inputs, and the fix when none is given.
_REQUIREMENTS: dict[str, tuple[set[str], str]] = {
    "price": ({"items"}, "needs item prices: pass items= with columns {item} and {price}"),
    "probability": ({"items"}, "needs item probabilities: pass items= with columns {item} and {probability}"),
    "category": ({"items"}, "needs item categories: pass items= with columns {item} and {category}"),
    "features": ({"items", "item_features"}, "needs item feature vectors: pass items= with an array column {features}, "
                                             "or item_features= with rows ({item}, {feature}, {value})"),
    "interactions": ({"interactions"}, "needs training interactions: pass interactions= with columns {user} and {item}"),
    "baseline": ({"baseline"}, "needs a baseline: pass baseline= (another recommender's lists, columns like recs)"),
    "interactions_or_baseline": ({"interactions", "baseline"}, "needs baseline= (another recommender's lists) or "
                                 "interactions= (its k most popular items are then the baseline)"),
}


def fit_to_inputs(metric: Metric, given: set[str]) -> Metric:
    """``metric`` with an enum option the user did not write moved to the first choice whose inputs
    are given, when its default's are not: novelty's ``p`` is ``interactions`` by default, and the
    items' given probability (``p=items``) when only ``items`` is given. Unchanged otherwise (and
    :func:`check_inputs` then names what is missing)."""
    def met(options: dict[str, str]) -> bool:
        return all(_REQUIREMENTS[need][0] & given for need in metric.spec.requires(options))

    options = metric.all_options()
    if met(options):
        return metric
    for name, param in metric.spec.params.items():
        if param.kind != "enum" or name in metric.explicit:
            continue
        for choice in param.choices:
            if met({**options, name: choice}):
                fitted = Metric(metric.name, metric.k, **{**dict(metric.options), name: choice})
                fitted.explicit, fitted.asked = metric.explicit, metric.asked
                return fitted
    return metric


def check_inputs(metrics: list[Metric], given: set[str], columns: dict[str, str]) -> set[str]:
    """Refuse a metric whose inputs were not ``given`` (roles: truth, items, interactions, ...), naming
    the input and its columns (``columns``: user, item, price, ... -> the column names); returns the
    needs of the metrics asked."""
    names = {k: repr(v) for k, v in columns.items()}
    needed: set[str] = set()
    for m in metrics:
        if m.spec.needs_truth and "truth" not in given:
            raise RecsqlError(f"metric {str(m)!r} needs truth (relevance judgments): pass truth=; only "
                              f"{', '.join(sorted(n for n, s in registry().items() if not s.needs_truth))} work without it")
        for need in m.spec.requires(m.all_options()):
            inputs, fix = _REQUIREMENTS[need]
            if not inputs & given:
                raise RecsqlError(f"metric {str(m)!r} {fix.format(**names)}{_alternatives(m, given, names)}")
            needed.add(need)
    return needed


def _alternatives(metric: Metric, given: set[str], names: dict[str, str]) -> str:
    """The other choices of the options the user did not write that need other inputs, each with
    what it needs (``; or write p=items, which needs item probabilities: ...``)."""
    options = metric.all_options()
    mine = metric.spec.requires(options)
    out = []
    for name, param in metric.spec.params.items():
        if param.kind != "enum" or name in metric.explicit:
            continue
        for choice in param.choices:
            other = metric.spec.requires({**options, name: choice})
            missing = sorted(n for n in other if not _REQUIREMENTS[n][0] & given)
            if choice != options[name] and other != mine and missing:
                out.append(f"; or write {name}={choice}, which {_REQUIREMENTS[missing[0]][1].format(**names)}")
    return "".join(out)


def _plan_inputs(plan: Plan) -> tuple[set[str], dict[str, str]]:
    """The roles a plan was given and its column names, for :func:`check_inputs`."""
    given = {role for role in ("truth", "items", "interactions", "catalog", "baseline", "item_features")
             if getattr(plan, role) is not None}
    return given, dict(item=plan.item_col, user=plan.user_col, price=plan.price_col, probability=plan.probability_col,
                       category=plan.category_col, features=plan.features_col, feature=plan.feature_col,
                       value=plan.value_col)


def _prune_columns(stage: exp.Select, per_user: exp.Select, keys: list[str]) -> None:
    """Keep only the columns of ``ranked`` the metrics read, and the columns of ``stacked`` those
    need, so the rendered query carries no column nobody asked for."""
    ctes = {c.alias: c.this for c in stage.args["with_"].expressions}
    keep = set(keys) | {"user_id", "src"}
    used = keep | {c.name for c in per_user.find_all(exp.Column)}
    ranked = ctes["ranked"]
    ranked.set("expressions", [e for e in ranked.expressions if e.alias_or_name in used])
    used_stacked = keep | {c.name for c in ranked.find_all(exp.Column) if c.table == "s"}
    for branch in _branches(ctes["stacked"]):
        branch.set("expressions", [e for e in branch.expressions if e.alias_or_name in used_stacked])
        if branch.args["from_"].this.name == "second_rows":  # the second list computes only what is read
            read = set(keys) | {"user_id"} | {c.name for c in branch.find_all(exp.Column)}
            rows = ctes["second_rows"]
            rows.set("expressions", [e for e in rows.expressions if e.alias_or_name in read])


def metric_population(plan: Plan, metric: Metric) -> str:
    """Whom ``metric`` averages over: ``lists`` or ``global`` by its kind; a truth metric's population is
    its measure rule's (a convention's per-measure exception) or else the plan's."""
    if metric.spec.population != "truth":
        return metric.spec.population
    rule = measure_rule(plan.rules, metric)
    return rule.population if rule is not None and rule.population else plan.population


def _metric_population(plan: Plan, metric: Metric) -> exp.Expression:
    population = metric_population(plan, metric)
    return sqlglot.parse_one(_POPULATION_SQL.get(population) or _METRIC_POPULATION_SQL[population])


def _view(plan: Plan, metric: Metric) -> View:
    """How ``metric``'s list is ranked and judged: (tie rule, negative relevance unjudged)."""
    rule = measure_rule(plan.rules, metric)
    ties = rule.ties if rule is not None and rule.ties else plan.ties
    negative = plan.negative_unjudged if rule is None or rule.negative_unjudged is None else rule.negative_unjudged
    return ties, negative


def _second_view(plan: Plan, metrics: list[Metric]) -> tuple[View | None, list[Metric]]:
    """The one view other than the plan's that some metrics need (a convention whose tool computes
    them in another way: ir_measures' RR@k and Judged@k), and those metrics. They read the list
    under it from src 9 of the stage, ranked a second time: the price of a second window (or
    top-k) over the recommendations, paid only when such a metric is asked."""
    main = (plan.ties, plan.negative_unjudged)
    others = [(m, _view(plan, m)) for m in metrics if _view(plan, m) != main]
    views = list(dict.fromkeys(view for _, view in others))
    if not views:
        return None, []
    if len(views) > 1:
        raise RecsqlError(f"convention {plan.convention!r} ranks {', '.join(str(m) for m, _ in others)} in more than "
                          "one other way; ask for them in separate evaluations")
    for m, (ties, _) in others:
        if ties not in TIES or ties == "average" or m.spec.features(m.all_options()) & _MAIN_LIST_FEATURES:
            raise RecsqlError(f"metric {str(m)!r} is ranked under its own tie rule ({ties}) by convention "
                              f"{plan.convention!r} and cannot be computed with these options")
    return views[0], [m for m, _ in others]


def _on_second_list(tree: exp.Expression) -> exp.Expression:
    """A metric expression reading the list under the second view: ``src = 1`` -> ``src = 9``."""
    for eq in list(tree.find_all(exp.EQ)):
        if (isinstance(eq.this, exp.Column) and eq.this.name == "src" and isinstance(eq.expression, exp.Literal)
                and eq.expression.this == "1"):
            eq.set("expression", exp.Literal.number(SECOND_SRC))
    return tree


def compose(plan: Plan, metrics: list[Metric], output: str = "summary") -> exp.Select:
    """The whole statement: ``per_user`` (population rows), ``summary`` (one row per run), or
    ``raw`` (every user seen, internal column names and the flags ``_in_population``,
    ``_has_recs``, ``_n_rel``; :func:`finalize` turns it into the other two)."""
    if plan.population not in POPULATIONS:
        raise RecsqlError(f"population={plan.population!r} is not valid; choose one of {', '.join(POPULATIONS)}")
    if output not in OUTPUTS:
        raise RecsqlError(f"output={output!r} is not valid; choose one of {', '.join(OUTPUTS)}")
    if plan.ties not in TIES:
        raise RecsqlError(f"ties={plan.ties!r} is not valid; choose one of {', '.join(TIES)}")
    given, _ = _plan_inputs(plan)
    resolved = [fit_to_inputs(resolve_metric(m, plan.convention), given) for m in metrics]
    for rule in plan.rules.values():
        if rule.population is not None and rule.population not in POPULATIONS:
            raise RecsqlError(f"population={rule.population!r} is not valid; choose one of {', '.join(POPULATIONS)}")
    for m in resolved:
        if not m.spec.supports_ties(_view(plan, m)[0], m.all_options()):
            supported = sorted(n for n, s in registry().items() if s.ties)
            raise RecsqlError(f"metric {str(m)!r} has no exact expected value under ties='average'; "
                              f"metrics that do: {', '.join(supported)} (ndcg/idcg not with ideal=list). "
                              "Use ties='item_id' (deterministic) for the others")
    needed = check_inputs(resolved, *_plan_inputs(plan))
    second, second_metrics = _second_view(plan, resolved)
    stage = _stage(plan, resolved, second, second_metrics)
    with_ = stage.args["with_"]
    on_second = {id(m) for m in second_metrics}

    def expression(m: Metric) -> exp.Expression:
        tree = metric_expression(m, context)
        return _on_second_list(tree) if id(m) in on_second else tree

    inputs = [("recs_in", recs_in(plan)), ("truth_in", truth_in(plan)), ("items_in", _items_in(plan, needed)),
              ("interactions_in", _interactions_in(plan)), ("catalog_in", _catalog_in(plan)),
              ("baseline_in", baseline_in(plan)), ("features_in", _features_in(plan, needed))]
    runs = internal_runs(plan)
    context = {"ties": plan.ties, "has_baseline": "yes" if plan.baseline is not None else "no"}
    has_global = any(m.spec.population == "global" for m in resolved)
    per_user = exp.select(
        *[exp.column(r) for r in runs], "user_id",
        exp.alias_(exp.Max(this=exp.column("n_rel")), "_n_rel"),
        exp.alias_(exp.Max(this=exp.column("n_truth")), "_n_truth"),
        exp.alias_(exp.Max(this=sqlglot.parse_one("CASE WHEN src = 1 THEN 1 ELSE 0 END")), "_has_recs"),
        *([exp.alias_(exp.Max(this=sqlglot.parse_one("CASE WHEN src = 5 THEN 1 ELSE 0 END")), "_is_global")]
          if has_global else []),
        *[exp.alias_(exp.cast(expression(m), "DOUBLE"), f"_m{i}") for i, m in enumerate(resolved)],
    ).from_("ranked").group_by(*[exp.column(r) for r in runs], "user_id")
    _prune_columns(stage, per_user, runs)
    per_user_pops = list({e.sql(): e for e in (_metric_population(plan, m) for m in resolved
                                                if m.spec.population != "global")}.values())
    in_pop = exp.or_(*per_user_pops) if per_user_pops else exp.false()
    def value(i: int, m: Metric) -> exp.Expression:
        """A metric's value on a user's row: masked to its population; a global metric's one value
        (on the run's global row, whose user_id is NULL) copied to every row of the run."""
        masked = exp.Case(ifs=[exp.If(this=_metric_population(plan, m), true=exp.column(f"_m{i}"))])
        if m.spec.population != "global":
            return masked
        return exp.Window(this=exp.Max(this=masked), partition_by=[exp.column(r) for r in runs] or None)

    flagged = exp.select(
        *[exp.column(r) for r in runs], "user_id",
        *[exp.alias_(value(i, m), f"_m{i}") for i, m in enumerate(resolved)],
        exp.alias_(exp.Case(ifs=[exp.If(this=in_pop, true=exp.Literal.number(1))], default=exp.Literal.number(0)), "_in_population"),
        "_has_recs", "_n_rel", "_n_truth", *(["_is_global"] if has_global else []),
    ).from_("per_user_raw")
    ctes = [exp.CTE(this=q, alias=exp.to_identifier(a), **({"materialized": False} if a in plan.inline else {}))
            for a, q in inputs]
    ctes += list(with_.expressions)
    ctes.append(exp.CTE(this=per_user, alias=exp.to_identifier("per_user_raw")))
    diagnostics: list[str] = []
    if output != "per_user":  # the input checks travel in the statement, as columns of every raw row
        probe = exp.With(expressions=[c.copy() for c in ctes])
        _prune(probe, exp.select("*").from_("per_user_raw"))
        main = _max_k([m for m in resolved if id(m) not in on_second])
        checks, diagnostics = _checks(plan, needed, {c.alias for c in probe.expressions},
                                      {"list_ranked": main, "second_ranked": _max_k(second_metrics)},
                                      exponent=uses_exponent(probe))
        ctes.append(exp.CTE(this=checks, alias=exp.to_identifier("checks")))
        flagged = flagged.join("checks", join_type="cross")
        flagged.set("expressions", [*flagged.expressions, *[exp.column(n) for n in [*diagnostics, RECS_ROWS]]])
    if has_global:  # the exposure rows' global row (user_id NULL) is not a user
        user_rows = exp.select("*").from_("per_user_all").where(exp.column("_is_global").eq(0))
        ctes += [exp.CTE(this=_fold(flagged), alias=exp.to_identifier("per_user_all")),
                 exp.CTE(this=user_rows, alias=exp.to_identifier("per_user"))]
    else:
        ctes.append(exp.CTE(this=_fold(flagged), alias=exp.to_identifier("per_user")))
    if output == "checks":  # the checks alone (evaluate, when the raw rows hold no user to carry them)
        final = exp.select(*diagnostics, RECS_ROWS).from_("checks")
    elif output == "raw":
        final = exp.select("*").from_("per_user")
    else:
        final = finalize(plan, metrics, output, diagnostics)
    statement = final.copy()
    new_with = exp.With(expressions=ctes)
    statement.set("with_", new_with)
    _prune(new_with, final)
    return statement


def _run_aliases(plan: Plan) -> list[exp.Expression]:
    return [exp.alias_(exp.column(r), exp.to_identifier(c, quoted=True)) for r, c in zip(internal_runs(plan), plan.run_cols)]


_SUMMARY: dict[str, type[exp.AggFunc]] = {"mean": exp.Avg, "sum": exp.Sum, "global": exp.Max}


def population_counts(plan: Plan, metrics: list[Metric]) -> list[tuple[str, str, str]]:
    """The summary's user counts, one per population the asked metrics average over, as
    (column, condition on the raw per-user rows, metric kind): ``n_users`` for the truth metrics'
    population (the plan's: the convention's or ``population=``), ``n_users_<metric>`` for a truth
    metric a convention averages over another population (msr's ndcg), ``n_users_with_recs`` for the
    list-only metrics; global metrics average over nobody. A count is there only when a metric
    uses its population, so a column always means the same thing."""
    counts: dict[str, tuple[str, str]] = {}
    for m in metrics:
        population = metric_population(plan, m)
        if m.spec.population == "truth":
            name = "n_users" if population == plan.population else f"n_users_{m.name}"
            counts.setdefault(name, (_POPULATION_SQL[population], "truth"))
        elif m.spec.population == "lists":
            counts.setdefault("n_users_with_recs", (_METRIC_POPULATION_SQL["lists"], "lists"))
    order = sorted(counts, key=lambda n: (n != "n_users", n == "n_users_with_recs"))  # stable otherwise
    return [(name, *counts[name]) for name in order]


def _count(condition: str, name: str) -> exp.Expression:
    return exp.alias_(sqlglot.parse_one(f"CAST(COALESCE(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END), 0) AS BIGINT)"),
                      name)


def finalize(plan: Plan, metrics: list[Metric], output: str, diagnostics: Sequence[str] = ()) -> exp.Select:
    """The last SELECT, over the relation ``per_user`` (the raw rows): summary or per-user.
    ``diagnostics``: the input-check columns the raw rows carry (:func:`compose`), copied to the summary."""
    names = [exp.to_identifier(m.column, quoted=True) for m in metrics]
    checks = [n for n in diagnostics if n in DIAGNOSTICS]
    if output == "summary":
        # each _m column holds values only for its metric's population (compose); a global metric's
        # one value sits on the run's global row
        diagnostics = [] if plan.truth is None else [
            _count("_n_rel > 0 AND _has_recs = 0", "users_without_recs"),
            _count("_n_rel = 0 AND _has_recs = 1", "recs_users_without_truth")]
        select = exp.select(
            *_run_aliases(plan),
            *[_count(condition, name) for name, condition, _ in population_counts(plan, metrics)],
            *[exp.alias_(_SUMMARY[m.spec.population if m.spec.population == "global" else m.spec.summary](
                this=exp.column(f"_m{i}")), n) for i, (m, n) in enumerate(zip(metrics, names))],
            *diagnostics,
            # from the checks CTE itself, not the per-user rows: invalid rows may leave no user at all
            *[exp.alias_(exp.Subquery(this=exp.select(n).from_("checks")), n) for n in checks],
        ).from_("per_user")
        runs = [exp.column(r) for r in internal_runs(plan)]
        return select.group_by(*runs).order_by(*runs) if runs else select
    select = exp.select(
        *_run_aliases(plan), exp.alias_(exp.column("user_id"), exp.to_identifier(plan.user_col, quoted=True)),
        *[exp.alias_(exp.column(f"_m{i}"), n) for i, (m, n) in enumerate(zip(metrics, names))
          if m.spec.population != "global"],
    ).from_("per_user")
    return select.where(exp.column("_in_population").eq(1)).order_by(*[exp.column(r) for r in internal_runs(plan)], "user_id")
