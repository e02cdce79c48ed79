"""A statement run in steps: each CTE of its top-level ``WITH`` made a table of the session first, in order,
then the final ``SELECT`` over those tables (:func:`fetch_in_steps`).

Spark and ClickHouse inline a CTE wherever it is read. ``recsql.compare``'s statement for the global metrics
and the off-policy estimators recomputed per resample (:mod:`recsql.comparison_weighted`) has about a hundred
CTEs, many read by several others, so its inlined tree grows with every level: Spark's analyser ran out of a
gigabyte of Java heap on 2 runs of 5 users, ClickHouse analysed it for a minute. Each step alone is small.

The tables are the session's own and temporary (Spark: a temporary view of a local checkpoint, which cuts the
step's lineage; ClickHouse: a ``TEMPORARY`` table), named ``__recsql_<random>_<n>``, so no name of the user's
is shadowed or overwritten, and each is dropped afterwards, also after a failure. A reference to a CTE is
renamed to its step's table, aliased as the CTE was named, so the statement's qualified columns still read it.
The statement's top-level ``SETTINGS`` (ClickHouse's ``join_use_nulls = 1``) are given to each step.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from ..errors import RecsqlError

if TYPE_CHECKING:
    from .base import Runner


def split(sql: str, dialect: str, prefix: str) -> tuple[list[tuple[str, str]], str]:
    """``sql``'s top-level CTEs as (table name, ``SELECT`` text), in order, and the final statement over them."""
    tree = sqlglot.parse_one(sql, read=dialect)
    with_ = tree.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        raise RecsqlError("internal: a statement run in steps needs a top-level WITH that is not recursive")
    names = {cte.alias_or_name.lower(): f"{prefix}_{i}" for i, cte in enumerate(with_.expressions)}
    if any(inner.alias_or_name.lower() in names for node in tree.find_all(exp.With) if node is not with_
           for inner in node.expressions):
        raise RecsqlError("internal: a nested WITH names a CTE of the statement run in steps")

    def to_step(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and not node.args.get("db") and node.name.lower() in names:
            return exp.Table(this=exp.to_identifier(names[node.name.lower()], quoted=True),
                             alias=exp.TableAlias(this=exp.to_identifier(node.alias or node.name)))
        return node

    settings = tree.args.get("settings")
    steps = []
    for cte in with_.expressions:
        body = cte.this.transform(to_step)
        columns = cte.args["alias"].columns
        if columns or (settings and not isinstance(body, exp.Select)):
            alias = exp.TableAlias(this=exp.to_identifier("s"), columns=[c.copy() for c in columns])
            body = exp.select("*").from_(exp.Subquery(this=body, alias=alias))
        if settings:
            body.set("settings", [s.copy() for s in settings])
        steps.append((names[cte.alias_or_name.lower()], body.sql(dialect=dialect)))
    tree.set("with_", None)
    return steps, tree.transform(to_step).sql(dialect=dialect)


def fetch_in_steps(runner: "Runner", sql: str):
    """``sql``'s rows, its CTEs made the session's temporary tables one by one (:meth:`Runner.materialize`) and
    dropped afterwards (:meth:`Runner.release`), also after a failure."""
    steps, final = split(sql, runner.dialect, f"__recsql_{uuid.uuid4().hex[:12]}")
    made: list[str] = []
    try:
        for name, body in steps:
            runner.materialize(name, body)
            made.append(name)
        return runner.fetch(final)
    finally:
        for name in reversed(made):
            runner.release(name)
