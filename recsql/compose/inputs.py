"""The input relations as the stage reads them: recs, truth and the optional side inputs, with
the user's columns renamed to internal ones and ids cast so that they compare by value.
"""

from __future__ import annotations

import dataclasses

import sqlglot
from sqlglot import exp

from ..errors import RecsqlError
from .plan import Plan, input_runs, internal_runs, logs_run_pairs, order_datatype, quoted_column, segment_runs
from .policy import PER_POSITION


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


def collation(name: str) -> exp.Expression:
    """A collation's name as COLLATE takes it: a quoted identifier ('"C"') or a bare name."""
    return sqlglot.parse_one(name, into=exp.Column) if name.startswith('"') else exp.var(name)


def _id(plan: Plan, column: str, internal: str, role: str) -> exp.Expression:
    """An id column of input ``role``, read by value (``_ID_CASTS``), with the dialect's binary
    collation when it holds text."""
    value = quoted_column(column)
    cast = plan.id_casts.get((role, internal))
    if cast:
        value = _ID_CASTS[cast](value)
    if internal in plan.text_ids and plan.id_collation:
        return exp.alias_(exp.Collate(this=value, expression=collation(plan.id_collation)), internal)
    return exp.alias_(value, internal)


def _keys(plan: Plan, with_runs: bool, role: str) -> list[exp.Expression]:
    # run keys as ids: a text run key takes the binary collation too (runs 'B' and 'b' stay two, ordered bytewise)
    keys = [_id(plan, c, r, role) for c, r in zip(input_runs(plan), internal_runs(plan))] if with_runs else []
    return keys + [_id(plan, plan.user_col, "user_id", role), _id(plan, plan.item_col, "item_id", role)]


def recs_in(plan: Plan, role: str = "recs") -> exp.Select:
    """Recommendations with internal names; ``ord`` is smaller-is-better (-score, or the rank). A target policy
    per position (``plan.policy``) keys its rows by the position too."""
    order = exp.cast(quoted_column(plan.rank_col or plan.score_col), order_datatype(plan.ord_type))
    ord_expr = order if plan.rank_col else exp.Neg(this=order)
    keys = _keys(plan, True, role)
    if role == "recs" and plan.policy in PER_POSITION:  # a policy per position: (context, item, position) rows
        position = quoted_column(plan.recs_position_col or plan.position_col or "position")
        keys.append(exp.alias_(exp.cast(position, "DOUBLE"), "position"))
    rows = _keyed_input(plan.recs, keys, ord_expr, "ord", exp.Min if plan.duplicates == "best" else None)
    if role == "recs" and plan.weight_col is not None:  # the lists' weights (compare's resamples: one row per item)
        rows.set("expressions", [*rows.expressions, exp.alias_(exp.cast(quoted_column(plan.weight_col), "BIGINT"),
                                                               "list_weight")])
    return _segmented(plan, rows, len(input_runs(plan)), "ord") if role == "recs" else rows


def segments_in(plan: Plan) -> exp.Select:
    """Each user's segment: (user_id, the segment keys), every row of the segments input."""
    return exp.select(_id(plan, plan.segment_user, "user_id", "segments"),
                      *[_id(plan, c, r, "segments") for c, r in zip(plan.segment_cols, segment_runs(plan))]
                      ).from_(plan.segments.copy())


def _segmented(plan: Plan, rows: exp.Select, runs: int, value: str) -> exp.Select:
    """``rows`` (run keys, user_id, item_id, ``value``) with the user's segment keys after its ``runs``
    run keys: a LEFT JOIN to segments_in, so that a user without a segment stays, with NULL segment
    keys, and is counted (checks: users_without_segment) rather than dropped unseen."""
    if plan.segments is None:
        return rows
    internal = internal_runs(plan)
    columns = [exp.column(k, "r") for k in internal[:runs]] + [exp.column(k, "g") for k in segment_runs(plan)]
    columns += [exp.column(c, "r") for c in ("user_id", "item_id", value)]
    return exp.select(*[exp.alias_(c, c.name) for c in columns]).from_(rows.subquery("r")).join(
        exp.alias_(exp.to_table("segments_in"), "g"), on=exp.column("user_id", "r").eq(exp.column("user_id", "g")),
        join_type="left")


def _empty(*columns: tuple[str, str]) -> exp.Select:
    """No rows, with the named columns: an input that was not given (typed from recs_in's ids)."""
    return exp.select(*[exp.alias_(exp.column(src) if src in ("user_id", "item_id") else exp.cast(exp.null(), src), name)
                        for name, src in columns]).from_("recs_in").where(exp.false())


def truth_in(plan: Plan) -> exp.Select:
    """Truth with internal names; relevance 1 for every row when there is no relevance column."""
    if plan.truth is None:
        return _segmented(plan, _empty(("user_id", "user_id"), ("item_id", "item_id"), ("relevance", "DOUBLE")), 0,
                          "relevance")
    rel = exp.cast(quoted_column(plan.relevance_col) if plan.relevance_col else exp.Literal.number(1), "DOUBLE")
    # every row, negative relevances included: the stage drops those where they mean "unjudged"
    # (truth_judged; a second view of the list may read them as judged: second_truth)
    rows = _keyed_input(plan.truth, _keys(plan, plan.truth_has_runs, "truth"), rel, "relevance",
                        exp.Max if plan.duplicates == "best" else None)
    return _segmented(plan, rows, len(input_runs(plan)) if plan.truth_has_runs else 0, "relevance")


ITEM_COLUMNS = ("price", "probability", "category", "head")  # items_in's attribute columns, read when a metric needs them

# A head flag's spellings (the column read as text, lower case): true/false or 1/0, of a boolean, integer or
# float column (or text holding them); any other value, NULL included, reads NULL: an invalid row of items.
HEAD_SPELLINGS = {"true": 1, "1": 1, "1.0": 1, "false": 0, "0": 0, "0.0": 0}


def head_flag(column: exp.Expression) -> exp.Expression:
    """An items column flagging the head as 1 (head), 0 (tail) or NULL (no flag: invalid), read through its
    text so that every engine takes booleans and 0/1 numbers alike (PostgreSQL casts no boolean to a number)."""
    text = exp.Lower(this=exp.cast(column, "VARCHAR"))
    return exp.Case(ifs=[exp.If(this=exp.In(this=text.copy(), expressions=[exp.Literal.string(s) for s, v in
                                                                            HEAD_SPELLINGS.items() if v == value]),
                                true=exp.Literal.number(value)) for value in (1, 0)])


# How items_in reads each attribute column: a number (DOUBLE), the category as it is, the head flag as 1/0
ITEM_VALUES = {"price": lambda c: exp.cast(c, "DOUBLE"), "probability": lambda c: exp.cast(c, "DOUBLE"),
               "category": lambda c: c, "head": head_flag}


def items_in(plan: Plan, needed: set[str]) -> exp.Select:
    if plan.items is None:
        return _empty(("item_id", "item_id"), ("price", "DOUBLE"), ("probability", "DOUBLE"), ("category", "VARCHAR"),
                      ("head", "BIGINT"))
    column = {"price": plan.price_col, "probability": plan.probability_col, "category": plan.category_col,
              "head": plan.head_col}
    values = {name: quoted_column(column[name]) if name in needed and column[name] else exp.null()
              for name in ITEM_COLUMNS}
    typed = {n: ITEM_VALUES[n](values[n]) if isinstance(values[n], exp.Column) else
             exp.cast(values[n], "BIGINT" if n == "head" else "DOUBLE") if n != "category" else values[n]
             for n in ITEM_COLUMNS}
    if plan.duplicates != "best":
        return exp.select(_id(plan, plan.item_col, "item_id", "items"),
                          *[exp.alias_(typed[n], n) for n in ITEM_COLUMNS]).from_(plan.items.copy())
    # a de-duplicating policy keeps one row per item: the largest of each attribute
    return exp.select(_id(plan, plan.item_col, "item_id", "items"),
                      *[exp.alias_(exp.Max(this=typed[n]) if isinstance(values[n], exp.Column) else typed[n], n)
                        for n in ITEM_COLUMNS]).from_(plan.items.copy()).group_by(exp.column("item_id"))


def interactions_in(plan: Plan) -> exp.Select:
    """Interactions as (user_id, item_id, weight): weight from interaction_weight_col, NULL without one
    (the history then weighs each item 1: sql/_ranked.sql, history_categories)."""
    if plan.interactions is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("weight", "DOUBLE"))
    weight = quoted_column(plan.interaction_weight_col) if plan.interaction_weight_col else exp.null()
    return exp.select(_id(plan, plan.user_col, "user_id", "interactions"),
                      _id(plan, plan.item_col, "item_id", "interactions"),
                      exp.alias_(exp.cast(weight, "DOUBLE"), "weight")).from_(plan.interactions.copy())


def intents_in(plan: Plan) -> exp.Select:
    """Judgments per intent (subtopic) as (user_id, item_id, intent, relevance); relevance 1 for every row
    when the intents have no relevance column."""
    if plan.intents is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("intent", "VARCHAR"), ("relevance", "DOUBLE"))
    rel = exp.cast(quoted_column(plan.intent_relevance_col) if plan.intent_relevance_col else exp.Literal.number(1),
                   "DOUBLE")
    intent = exp.cast(quoted_column(plan.intent_col), "VARCHAR")
    rows = exp.select(_id(plan, plan.user_col, "user_id", "intents"), _id(plan, plan.item_col, "item_id", "intents"),
                      exp.alias_(intent, "intent"),
                      exp.alias_(exp.Max(this=rel) if plan.duplicates == "best" else rel, "relevance"))
    rows = rows.from_(plan.intents.copy())
    # a de-duplicating policy keeps one judgment per (user, item, intent): the largest
    return rows.group_by(exp.column("user_id"), exp.column("item_id"), exp.column("intent")) \
        if plan.duplicates == "best" else rows


def logs_in(plan: Plan) -> exp.Select:
    """Logged impressions as (user_id, item_id, position, propensity, reward, slate_propensity,
    cascade_propensity): the context, the item shown, its position (1 for every row when the logs have no
    position column), the logging policy's propensity of that item there, the reward observed, and for the
    slate estimators the logging policy's probability of the whole slate and of its positions up to this
    one (NULL when not logged). Every row: a duplicated impression is refused by the
    checks, whatever ``duplicates`` says (docs/guide/logs.md)."""
    if plan.logs is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("position", "BIGINT"),
                      ("propensity", "DOUBLE"), ("reward", "DOUBLE"), ("slate_propensity", "DOUBLE"),
                      ("cascade_propensity", "DOUBLE"))
    position = quoted_column(plan.position_col) if plan.position_col else exp.Literal.number(1)
    # the slate's joint and cascade propensities: NULL when not logged (the slate estimators that read one
    # refuse logs without it: recsql/compose/needs.py)
    slate, cascade = (quoted_column(c) if c else exp.null() for c in (plan.slate_propensity_col,
                                                                       plan.cascade_propensity_col))
    runs = [_id(plan, c, r, "logs") for c, r in logs_run_pairs(plan)]
    if plan.logs_copy_col:  # compare's resampled traffic: a context's copy, each its own slate
        runs.append(exp.alias_(quoted_column(plan.logs_copy_col), "copy"))
    return exp.select(*runs, _id(plan, plan.user_col, "user_id", "logs"), _id(plan, plan.item_col, "item_id", "logs"),
                      exp.alias_(exp.cast(position, "DOUBLE"), "position"),
                      exp.alias_(exp.cast(quoted_column(plan.propensity_col), "DOUBLE"), "propensity"),
                      exp.alias_(exp.cast(quoted_column(plan.reward_col), "DOUBLE"), "reward"),
                      exp.alias_(exp.cast(slate, "DOUBLE"), "slate_propensity"),
                      exp.alias_(exp.cast(cascade, "DOUBLE"), "cascade_propensity")).from_(plan.logs.copy())


def reward_model_in(plan: Plan) -> exp.Select:
    """A reward model's predictions as (user_id, item_id, reward): its reward column is the predicted
    reward of showing the item in the context. Every row: a duplicated prediction is refused by the checks."""
    if plan.reward_model is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("reward", "DOUBLE"))
    return exp.select(_id(plan, plan.user_col, "user_id", "reward_model"),
                      _id(plan, plan.item_col, "item_id", "reward_model"),
                      exp.alias_(exp.cast(quoted_column(plan.model_reward_col or plan.reward_col), "DOUBLE"), "reward")
                      ).from_(plan.reward_model.copy())


def catalog_in(plan: Plan) -> exp.Expression:
    """The catalog input, else the items input, else every item of truth and recommendations."""
    source = plan.catalog if plan.catalog is not None else plan.items
    if source is None:
        return exp.union(exp.select("item_id").from_("truth_in"), exp.select("item_id").from_("recs_in"), distinct=False)
    role = "catalog" if plan.catalog is not None else "items"
    return exp.select(_id(plan, plan.item_col, "item_id", role)).from_(source.copy())


def expected_in(plan: Plan) -> exp.Select:
    if plan.expected_recs is None:
        return _empty(("user_id", "user_id"), ("item_id", "item_id"), ("ord", "DOUBLE"))
    return recs_in(dataclasses.replace(plan, recs=plan.expected_recs, run_cols=(), ord_type=plan.expected_ord_type),
                   "expected_recs")


def features_in(plan: Plan, needed: set[str]) -> exp.Select:
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
