"""Inputs not given, taken out of the composed statement.

The composer writes an input nobody gave as an always-empty CTE (``SELECT ... FROM recs_in WHERE
FALSE``) so that one statement shape serves every call; the statement is read by people, so
:func:`without_empty` (a step of :func:`recsql.compose.readable.readable`) drops those CTEs and
what reads them: a LEFT JOIN of one (its columns become typed NULLs), a UNION branch reading one,
and a CTE reading one through FROM or an inner join.
"""
from __future__ import annotations

from sqlglot import exp

from ..trees import nodes
from .rewrite import prune, reachable


def _is_false(node: exp.Expression | None) -> bool:
    return isinstance(node, exp.Boolean) and node.this is False


def _aggregates_to_one_row(select: exp.Select) -> bool:
    """An aggregate query without GROUP BY: one row, even over no rows."""
    if select.args.get("group") is not None:
        return False
    return any(not isinstance(agg.parent, exp.Window) and agg.find_ancestor(exp.Select) is select
               for p in select.expressions for agg in nodes(p, exp.AggFunc))


def _source_empty(source: exp.Expression, empty: set[str]) -> bool:
    if isinstance(source, exp.Table):
        return not source.args.get("db") and source.name in empty
    if isinstance(source, exp.Subquery):
        return _query_empty(source.this, empty)
    return False


def _query_empty(query: exp.Expression, empty: set[str]) -> bool:
    """Whether ``query`` returns no row whatever the inputs hold, given the CTEs ``empty`` that don't
    (an input that was not given: ``... FROM recs_in WHERE FALSE``, and what reads it)."""
    if isinstance(query, exp.Subquery):
        return _query_empty(query.this, empty)
    if isinstance(query, exp.Union):
        return _query_empty(query.left, empty) and _query_empty(query.right, empty)
    if not isinstance(query, exp.Select) or _aggregates_to_one_row(query):
        return False
    where = query.args.get("where")
    if where is not None and _is_false(where.this):
        return True
    joins = query.args.get("joins") or []
    if any(j.side in ("RIGHT", "FULL") for j in joins):
        return False
    from_ = query.args.get("from_")
    if from_ is not None and _source_empty(from_.this, empty):
        return True
    return any(not j.side and _source_empty(j.this, empty) for j in joins)


def _column_type(ctes: dict[str, exp.Expression], table: str, column: str, depth: int = 0) -> exp.DataType | None:
    """The type of ``column`` of the CTE ``table`` where its SQL says (a CAST, or a column of another
    CTE that has one); None when it does not."""
    body = ctes.get(table)
    if body is None or depth > 20:
        return None
    while isinstance(body, exp.Union):
        body = body.left
    if not isinstance(body, exp.Select):
        return None
    for projection in body.expressions:
        if projection.alias_or_name != column:
            continue
        value = projection.unalias()
        if isinstance(value, exp.Cast):
            return value.to
        if isinstance(value, exp.Column):
            sources = [body.args["from_"].this] if body.args.get("from_") else []
            sources += [j.this for j in body.args.get("joins") or []]
            for source in sources:
                if isinstance(source, exp.Table) and (not value.table or value.table == source.alias_or_name):
                    found = _column_type(ctes, source.name, value.name, depth + 1)
                    if found is not None:
                        return found
        return None
    return None


def _first(query: exp.Expression) -> exp.Expression:
    """The first SELECT of a UNION chain (the query itself otherwise)."""
    while isinstance(query, exp.Union):
        query = query.this
    return query


def _drop_empty(node: exp.Expression, empty: set[str], ctes: dict[str, exp.Expression]) -> bool:
    """Drop from ``node`` the LEFT JOINs of always-empty relations (their columns become typed NULLs)
    and the always-empty branches of UNION ALLs (the branch kept takes the first branch's column
    names; a CTE's whole body may be such a union); whether anything changed."""
    changed = False
    while True:
        unions = [u for u in nodes(node, exp.Union) if type(u) is exp.Union and not u.args.get("distinct")
                  and _query_empty(u.left, empty) != _query_empty(u.right, empty)]
        if not unions:
            break
        union = unions[0]
        if union.parent is None:
            raise RuntimeError("an always-empty UNION branch at the top of a query")
        kept = union.right if _query_empty(union.left, empty) else union.left
        if kept is union.right:  # the union's columns are named by its first branch
            first = kept
            while isinstance(first, exp.Union):
                first = first.this
            names = [e.alias_or_name for e in _first(union.left).expressions]
            if isinstance(first, exp.Select) and len(names) == len(first.expressions):
                first.set("expressions", [e if e.alias_or_name == n else exp.alias_(e.unalias(), n)
                                          for e, n in zip(first.expressions, names)])
        union.replace(kept)
        if union is node:
            node = kept
        changed = True
    for select in nodes(node, exp.Select):
        joins = select.args.get("joins") or []
        dropped = [j for j in joins if j.side == "LEFT" and _source_empty(j.this, empty)]
        if not dropped:
            continue
        select.set("joins", [j for j in joins if j not in dropped] or None)
        for join in dropped:
            alias, name = join.this.alias_or_name, join.this.name if isinstance(join.this, exp.Table) else ""
            for col in nodes(select, exp.Column):
                if col.table == alias:
                    type_ = _column_type(ctes, name, col.name)
                    col.replace(exp.cast(exp.null(), type_.copy()) if type_ is not None else exp.null())
        changed = True
    return changed


def without_empty(statement: exp.Select) -> exp.Select:
    """The statement without its always-empty CTEs (inputs not given: the composer writes them as
    ``SELECT ... FROM recs_in WHERE FALSE``) and without what reads them: a LEFT JOIN of one is
    dropped (its columns are NULL), a UNION branch reading one is dropped, and a CTE reading one
    through FROM or an inner join is empty in turn. Refuses (RuntimeError) a statement where an
    always-empty CTE is still read another way."""
    with_ = statement.args["with_"]
    # a CTE the composer keeps though the final select does not read it is kept unless it is empty
    statement.set("with_", None)  # the final select alone
    roots = {c.alias for c in with_.expressions} - {c.alias for c in reachable(with_.expressions, statement)}
    statement.set("with_", with_)
    while True:
        ctes = {c.alias: c.this for c in with_.expressions}
        empty: set[str] = set()
        for cte in with_.expressions:
            if _query_empty(cte.this, empty):
                empty.add(cte.alias)
        if not empty:
            return statement
        changed = False
        for cte in with_.expressions:
            if cte.alias not in empty:
                changed |= _drop_empty(cte.this, empty, ctes)
        statement.set("with_", None)  # the final select alone
        changed |= _drop_empty(statement, empty, ctes)
        prune(with_, statement, frozenset(roots - empty))
        statement.set("with_", with_)
        left = {c.alias for c in with_.expressions} & empty
        if left and not changed:
            raise RuntimeError(f"the statement still reads always-empty CTEs: {', '.join(sorted(left))}")
        if not left:
            return statement
