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
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from ..dialects import dialect as dialect_spec
from ..errors import RecsqlError

if TYPE_CHECKING:
    from .base import Runner


def split(sql: str, dialect: str, prefix: str, max_ctes: int = 0) -> tuple[list[tuple[str, str]], str]:
    """``sql``'s steps as (table name, ``SELECT`` text), in order, and the final statement over their tables.
    A CTE read more than once is a step; one read once stays a CTE of the step (or the final statement) that
    reads it, with the CTEs read once that it reads in turn, so each step is a job of its own only where the
    engine would compute it again; a CTE read by nothing is left out, as the engine leaves it uncomputed.
    ``max_ctes`` (0: no limit): the most CTEs a step or the final statement may hold; more CTEs read once are
    made steps where needed (:func:`_cuts`)."""
    tree = sqlglot.parse_one(sql, read=dialect)
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
    if max_ctes:
        shared |= _cuts({name: set(read(cte.this)) for name, cte in ctes.items()}, set(read(tree)), shared, max_ctes)
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


def _cuts(reads: dict[str, set[str]], final: set[str], shared: set[str], limit: int) -> set[str]:
    """The CTEs read once to make steps too, so that no step and not the final statement holds more than
    ``limit`` CTEs. ``reads``: each CTE's (in the statement's order, a CTE reading only those before it) the
    CTEs it reads; ``final``: those the final statement reads; ``shared``: those already steps. A CTE read
    once is carried by its one reader, with those it carries in turn; where a reader would carry more than
    ``limit``, the CTEs it reads that carry most are made steps first (the greedy ideal list of the
    intent-aware metrics, one CTE per position reading the one before, is cut every ``limit`` positions)."""
    carried: dict[str, int] = {}  # a CTE read once: itself and the CTEs it carries
    cut: set[str] = set()

    def carry(names: set[str]) -> int:
        kept = sorted(name for name in names if name not in shared)
        while sum(carried[name] for name in kept) > limit:
            largest = max(kept, key=lambda name: (carried[name], name))
            cut.add(largest)
            kept.remove(largest)
        return sum(carried[name] for name in kept)

    for name, read in reads.items():
        carried[name] = 1 + carry(read)  # made a step later (by its reader), its own step holds carry(read)
    carry(final)
    return cut


def ctes(sql: str, dialect: str) -> int:
    """How many CTEs the top-level ``WITH`` of ``sql`` (in recsql's ``dialect``) has."""
    with_ = sqlglot.parse_one(sql, read=dialect_spec(dialect).sqlglot).args.get("with_")
    return len(with_.expressions) if with_ else 0


def fetch_in_steps(runner: "Runner", sql: str):
    """``sql``'s rows, its CTEs made the session's temporary tables one by one (:meth:`Runner.materialize`) and
    dropped afterwards (:meth:`Runner.release`), also after a failure; no step holds more CTEs than the
    runner's dialect lets one statement hold (:attr:`recsql.dialects.Dialect.step_ctes`)."""
    spec = dialect_spec(runner.dialect)
    steps, final = split(sql, spec.sqlglot, f"__recsql_{uuid.uuid4().hex[:12]}", spec.step_ctes)
    made: list[str] = []
    try:
        for name, body in steps:
            runner.materialize(name, body)
            made.append(name)
        return runner.fetch(final)
    finally:
        for name in reversed(made):
            runner.release(name)
