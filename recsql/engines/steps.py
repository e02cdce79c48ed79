"""A statement run in steps: each CTE of its top-level ``WITH`` that is read more than once made a table of the
session first, in order, then the final ``SELECT`` over those tables (:func:`fetch_in_steps`).

Spark, ClickHouse, DataFusion and MariaDB inline (or compute) a CTE wherever it is read. ``recsql.compare``'s
statement for the global metrics and the off-policy estimators recomputed per resample
(:mod:`recsql.comparison_weighted`) has about a hundred CTEs, many read by several others, so its inlined tree
grows with every level: Spark's analyser ran out of a gigabyte of Java heap on 2 runs of 5 users, ClickHouse
analysed it for a minute, DataFusion planned 3 runs of 9 users for two minutes, MariaDB ran them for one. Each
step alone is small. The statement of the global metrics counted from item exposure (coverage, Gini,
personalization) runs in steps too: it reads its per-item cells three times (sql/_compare_global.sql), each a
grouping of every list row × resample.

A CTE read once stays a CTE of the step that reads it (it is computed once either way). The tables are the
session's own and temporary (Spark: a temporary view of a local checkpoint, which cuts the step's lineage;
ClickHouse: a ``TEMPORARY`` table; DataFusion: a view of the rows collected in memory; MariaDB: a ``TEMPORARY``
Aria table), named ``__recsql_<random>_<n>``, so no name of the user's is shadowed or overwritten, and each is
dropped afterwards, also after a failure. A reference to a CTE is renamed to its step's table, aliased as the
CTE was named, so the statement's qualified columns still read it.
The statement's top-level ``SETTINGS`` (ClickHouse's ``join_use_nulls = 1``) are given to each step.
"""
from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Callable

import sqlglot
from sqlglot import exp

from ..dialects import dialect as dialect_spec
from ..errors import RecsqlError

if TYPE_CHECKING:
    from .base import Runner


def split(sql: str | exp.Expression, dialect: str, prefix: str, max_ctes: int = 0,
          max_depth: int = 0) -> tuple[list[tuple[str, str]], str]:
    """``sql``'s steps as (table name, ``SELECT`` text), in order, and the final statement over their tables.
    A CTE read more than once is a step; one read once stays a CTE of the step (or the final statement) that
    reads it, with the CTEs read once that it reads in turn, so each step is a job of its own only where the
    engine would compute it again; a CTE read by nothing is left out, as the engine leaves it uncomputed.
    ``max_ctes`` (0: no limit): the most CTEs a step or the final statement may hold; ``max_depth`` (0: no
    limit): the most SELECTs one may nest, counted through the CTEs it holds (an engine that writes each CTE
    out where it is read nests them so). More CTEs read once are made steps where needed (:func:`_cuts`).
    ``sql`` may be given parsed (:func:`oversized`), and is then changed."""
    tree = sql if isinstance(sql, exp.Expression) else sqlglot.parse_one(sql, read=dialect)
    with_ = tree.args.get("with_")
    if with_ is None or with_.args.get("recursive"):
        raise RecsqlError("internal: a statement run in steps needs a top-level WITH that is not recursive")
    ctes = {cte.alias_or_name.lower(): cte for cte in with_.expressions}
    if any(inner.alias_or_name.lower() in ctes for node in tree.find_all(exp.With) if node is not with_
           for inner in node.expressions):
        raise RecsqlError("internal: a nested WITH names a CTE of the statement run in steps")
    tree.set("with_", None)

    def read(node: exp.Expression) -> list[str]:
        return [t.name.lower() for t in node.find_all(exp.Table) if not t.args.get("db") and t.name.lower() in ctes]

    readers = Counter(name for node in [*(cte.this for cte in ctes.values()), tree] for name in read(node))
    shared = {name for name in ctes if readers[name] > 1}
    bodies = {name: cte.this for name, cte in ctes.items()}
    reads = {"": set(read(tree)), **{name: set(read(body)) for name, body in bodies.items()}}
    for limit, measure in ((max_ctes, _count), (max_depth, nesting)):
        if limit:
            shared |= _cuts(bodies, reads, tree, shared, limit, measure)
    tables = {name: f"{prefix}_{i}" for i, name in enumerate(n for n in ctes if n in shared)}

    def to_step(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and not node.args.get("db") and node.name.lower() in tables:
            return exp.Table(this=exp.to_identifier(tables[node.name.lower()], quoted=True),
                             alias=exp.TableAlias(this=exp.to_identifier(node.alias or node.name)))
        return node

    def with_inlined(body: exp.Expression) -> exp.Expression:
        """``body`` with the CTEs read once that it reads (and those read), in the statement's order."""
        found: set[str] = set()
        todo = read(body)
        while todo:
            name = todo.pop()
            if name not in tables and name not in found:
                found.add(name)
                todo.extend(read(ctes[name].this))
        if found:
            body.set("with_", exp.With(expressions=[cte.copy() for name, cte in ctes.items() if name in found]))
        return body.transform(to_step)

    settings = tree.args.get("settings")
    steps = []
    for name, table in tables.items():
        cte = ctes[name]
        body = cte.this.copy()
        columns = cte.args["alias"].columns
        if columns or (settings and not isinstance(body, exp.Select)):
            alias = exp.TableAlias(this=exp.to_identifier("s"), columns=[c.copy() for c in columns])
            body = exp.select("*").from_(exp.Subquery(this=body, alias=alias))
        if settings:
            body.set("settings", [s.copy() for s in settings])
        steps.append((table, with_inlined(body).sql(dialect=dialect)))
    return steps, with_inlined(tree).sql(dialect=dialect)


Measure = Callable[[exp.Expression, "dict[str, int]"], "tuple[int, int]"]


def _count(body: exp.Expression, kept: dict[str, int]) -> tuple[int, int]:
    """A step's measure in CTEs: those it holds (the CTEs read once it carries), and, carried by a reader, those
    and itself."""
    held = sum(kept.values())
    return held, held + 1


def nesting(body: exp.Expression, kept: dict[str, int]) -> tuple[int, int]:
    """A step's measure in SELECTs nested one in another, through the CTEs it carries (``kept``: each one's own
    nesting, counted where it is read), walked without recursion; the same carried by a reader."""
    deepest, stack = 0, [(body, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, exp.Select):
            depth += 1
        elif isinstance(node, exp.Table) and not node.args.get("db"):
            depth += kept.get(node.name.lower(), 0)
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in node.iter_expressions() if not isinstance(child, exp.With))
    return deepest, deepest


def _cuts(bodies: dict[str, exp.Expression], reads: dict[str, set[str]], final: exp.Expression,
          shared: set[str], limit: int, measure: Measure) -> set[str]:
    """The CTEs read once to make steps too, so that no step and not the final statement measures more than
    ``limit`` (:func:`_count`: the CTEs it holds; :func:`nesting`: the SELECTs it nests through them).
    ``bodies``: each CTE's query, in the statement's order (a CTE reads only those before it); ``reads``: the
    CTEs each reads, and under ``""`` those ``final`` (the statement without its WITH) reads; ``shared``: those
    already steps. A CTE read once is carried by its one reader, with those it carries in turn; where a
    reader would measure more than ``limit``, the CTEs it reads that carry most are made steps first (the
    greedy ideal list of the intent-aware metrics, one CTE per position reading the one before, is cut into
    pieces within ``limit``)."""
    carried: dict[str, int] = {}  # a CTE read once: its measure where its reader reads it
    cut: set[str] = set()

    def settle(body: exp.Expression, names: set[str]) -> int:
        kept = {name: carried[name] for name in sorted(names) if name not in shared}
        while True:
            held, carry = measure(body, kept)
            if held <= limit or not kept:
                return carry
            largest = max(kept, key=lambda name: (kept[name], name))
            cut.add(largest)
            del kept[largest]

    for name, body in bodies.items():
        carried[name] = settle(body, reads[name])  # if its reader makes it a step, the step measures the same
    settle(final, reads[""])
    return cut


def oversized(sql: str, dialect: str) -> exp.Expression | None:
    """``sql`` parsed, where it holds more CTEs, or nests more SELECTs through its CTEs, than one statement
    may in recsql's ``dialect`` (:attr:`recsql.dialects.Dialect.step_ctes`, ``step_depth``), so that the
    dialect's runner runs it in steps (:func:`fetch_in_steps`, which takes the tree); None where it is not.
    Parsed only where its text could be: a CTE holds a SELECT, and a path of nested SELECTs passes each once,
    so a text of no more ``SELECT`` than the limits is within them."""
    spec = dialect_spec(dialect)
    limits = [limit for limit in (spec.step_ctes, spec.step_depth) if limit]
    if not limits or sql.count("SELECT") <= min(limits):
        return None
    tree = sqlglot.parse_one(sql, read=spec.sqlglot)
    with_ = tree.args.get("with_")
    if with_ is None:
        return None
    if spec.step_ctes and len(with_.expressions) > spec.step_ctes:
        return tree
    nested: dict[str, int] = {}
    for cte in with_.expressions:
        nested[cte.alias_or_name.lower()] = nesting(cte.this, nested)[0]
    return tree if spec.step_depth and nesting(tree, nested)[0] > spec.step_depth else None


def fetch_in_steps(runner: "Runner", sql: str | exp.Expression):
    """``sql``'s rows, its CTEs made the session's temporary tables one by one (:meth:`Runner.materialize`) and
    dropped afterwards (:meth:`Runner.release`), also after a failure; no step holds more CTEs than the
    runner's dialect lets one statement hold, and none nests more SELECTs through them than its steps may
    (:attr:`recsql.dialects.Dialect.step_ctes`, ``step_piece`` or else ``step_depth``). The final statement
    runs as it is (:meth:`Runner.fetch_whole`): the steps keep it within those limits."""
    spec = dialect_spec(runner.dialect)
    steps, final = split(sql, spec.sqlglot, f"__recsql_{uuid.uuid4().hex[:12]}", spec.step_ctes,
                         spec.step_piece or spec.step_depth)
    made: list[str] = []
    try:
        for name, body in steps:
            runner.materialize(name, body)
            made.append(name)
        return runner.fetch_whole(final)
    finally:
        for name in reversed(made):
            runner.release(name)
