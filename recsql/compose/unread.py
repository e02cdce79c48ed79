"""What nothing reads, taken out of a finished statement: a CTE that only passes another one's rows
on, the columns of a CTE that no reader names, and the joins whose relation adds no row and no
column anyone reads. Each rewrite leaves every row and value the statement returns as it was.

The reads are found by name, conservatively: a column stays when a reader names a column so called
in a select that reads its CTE (unqualified, or qualified by the CTE's alias there), and a CTE that
a reader selects ``*`` from, or whose rows a DISTINCT or a UNION (not ALL) compares whole, keeps all
its columns.

>>> from recsql.trees import parse
>>> tree = parse("WITH a AS (SELECT x, y FROM t), b AS (SELECT x, y FROM a WHERE x > 0) SELECT x FROM b")
>>> drop_unread(tree).sql()
'WITH a AS (SELECT x FROM t), b AS (SELECT x FROM a WHERE x > 0) SELECT x FROM b'
>>> tree = parse("WITH a AS (SELECT x FROM t), b AS (SELECT x FROM a), c AS (SELECT COUNT(*) AS n FROM t) "
...              "SELECT b.x FROM b CROSS JOIN c")
>>> drop_unread(tree).sql()
'WITH a AS (SELECT x FROM t) SELECT b.x FROM a AS b'
"""
from __future__ import annotations

from sqlglot import exp

from ..trees import nodes
from .rewrite import prune, union_branches


def _tables(tree: exp.Expression) -> set[str]:
    """The names of the CTEs (tables without a schema) that ``tree`` reads."""
    return {t.name for t in nodes(tree, exp.Table) if not t.args.get("db")}


def _readers(with_: exp.With, final: exp.Expression) -> dict[str, list[exp.Expression]]:
    """CTE name -> the trees that read it in a FROM or JOIN: other CTEs' bodies, and ``final`` (the
    statement without its WITH clause)."""
    readers: dict[str, list[exp.Expression]] = {c.alias: [] for c in with_.expressions}
    for own, tree in [*((c.alias, c.this) for c in with_.expressions), (None, final)]:
        for table in _tables(tree):
            if table in readers and table != own:
                readers[table].append(tree)
    return readers


def _selects_star(tree: exp.Expression) -> bool:
    return any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
               for select in nodes(tree, exp.Select) for e in select.expressions)


def _sources(select: exp.Select | None) -> dict[str, str]:
    """Alias -> table name of the relations a select reads in its FROM and JOINs (a derived table
    maps to "")."""
    if select is None:
        return {}
    relations = [select.args["from_"].this] if select.args.get("from_") else []
    relations += [j.this for j in select.args.get("joins") or []]
    return {r.alias_or_name: r.name if isinstance(r, exp.Table) and not r.args.get("db") else "" for r in relations}


def _reads(column: exp.Column, table: str, columns: dict[str, set[str]]) -> bool:
    """Whether ``column`` may be a column of the CTE ``table``: its select, or one around it (a
    correlated subquery) where no CTE of the inner ones has the name, reads the CTE under the
    column's qualifier, if any. ``columns``: each CTE's column names."""
    select = column.find_ancestor(exp.Select)
    while select is not None:
        sources = _sources(select)
        if column.table and column.table in sources:
            return sources[column.table] == table
        if not column.table and table in sources.values():
            return True
        if not column.table and any(column.name in columns.get(name, ()) for name in sources.values()):
            return False  # the name is a column of a CTE this select reads: it is that one
        select = select.find_ancestor(exp.Select)
    return bool(column.table)  # a qualifier no select around it defines: kept to be safe


def _names(parts: list[exp.Expression], table: str, columns: dict[str, set[str]]) -> set[str]:
    """The names of the columns of the CTE ``table`` that a reader reads (and of USING clauses), from
    its columns and joins (``parts``)."""
    found: set[str] = set()
    for node in parts:
        if isinstance(node, exp.Join):
            found.update(i.name for i in node.args.get("using") or [])
        elif node.name not in found and _reads(node, table, columns):
            found.add(node.name)
    return found


def _plain_branches(query: exp.Expression) -> list[exp.Select] | None:
    """The SELECTs of a query whose columns can be dropped one by one (a SELECT or a UNION ALL of
    them, no DISTINCT, no positional GROUP BY or ORDER BY), else None."""
    node = query
    while isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
        if type(node) is not exp.Union or node.args.get("distinct"):
            return None
        node = node.this
    branches = union_branches(query)
    for branch in branches:
        if not isinstance(branch, exp.Select) or branch.args.get("distinct"):
            return None
        keys = [*(branch.args["group"].expressions if branch.args.get("group") else []),
                *(branch.args["order"].expressions if branch.args.get("order") else [])]
        if any(isinstance(k.unalias() if not isinstance(k, exp.Ordered) else k.this, exp.Literal) for k in keys):
            return None
    return branches if len({len(b.expressions) for b in branches}) == 1 else None


def _generates_rows(column: exp.Expression) -> bool:
    """A column whose values make the select's rows (UNNEST, EXPLODE): dropping it could change them."""
    return any(isinstance(n, (exp.Unnest, exp.Explode)) for n in column.walk())


def _aliased(select: exp.Select, i: int) -> bool:
    """Whether the select's column ``i`` must stay though no reader names it: it makes the rows
    (UNNEST), or the select itself refers to it by its name elsewhere (an alias in GROUP BY, or a
    lateral alias in another column), which dropping it would leave meaning nothing. A column that
    only passes an input column on under its own name may go (the name then means that column)."""
    column = select.expressions[i]
    name, value = column.alias_or_name, column.unalias()
    if _generates_rows(column):
        return True
    if isinstance(value, exp.Column) and value.name == name:
        return False
    parts = [e for j, e in enumerate(select.expressions) if j != i]
    parts += [arg for key, arg in select.args.items() if key != "expressions" and isinstance(arg, exp.Expression)]
    parts += [a for key, arg in select.args.items() if isinstance(arg, list) and key != "expressions" for a in arg]
    return any(c.name == name for part in parts for c in nodes(part, exp.Column))


def _drop_columns(with_: exp.With, final: exp.Expression) -> bool:
    """Drop the columns of each CTE that none of its readers names, the last CTE first (so a column
    read only by a column dropped goes in the same pass); whether any went."""
    changed = False
    readers = _readers(with_, final)
    columns = {c.alias: set(_columns_of(c.this)) for c in with_.expressions}
    scanned: dict[int, tuple[bool, list[exp.Expression]]] = {}  # a reader's star, columns and joins; until it changes

    def scan(reader: exp.Expression) -> tuple[bool, list[exp.Expression]]:
        if id(reader) not in scanned:
            scanned[id(reader)] = _selects_star(reader), nodes(reader, exp.Column, exp.Join)
        return scanned[id(reader)]

    for cte in reversed(with_.expressions):
        branches = _plain_branches(cte.this)
        if not readers[cte.alias] or branches is None or any(scan(r)[0] for r in readers[cte.alias]):
            continue
        read = set().union(*(_names(scan(r)[1], cte.alias, columns) for r in readers[cte.alias]))
        names = [e.alias_or_name for e in branches[0].expressions]
        keep = [i for i, n in enumerate(names) if n in read or any(_aliased(b, i) for b in branches)] or [0]
        if len(keep) < len(names):
            for branch in branches:
                branch.set("expressions", [branch.expressions[i] for i in keep])
            columns[cte.alias] = {names[i] for i in keep}
            scanned.pop(id(cte.this), None)
            changed = True
    return changed


def _columns_of(query: exp.Expression) -> list[str]:
    return [e.alias_or_name for e in union_branches(query)[0].expressions]


def _one_row(query: exp.Expression, ctes: dict[str, exp.Expression]) -> bool:
    """Whether ``query`` always returns exactly one row: an aggregate without GROUP BY or HAVING,
    or a select of no filter from one-row CTEs crossed."""
    if not isinstance(query, exp.Select) or any(query.args.get(k) for k in ("group", "having", "qualify", "limit")):
        return False
    if any(_generates_rows(e) for e in query.expressions):
        return False
    if any(not isinstance(agg.parent, exp.Window) and agg.find_ancestor(exp.Select) is query
           for e in query.expressions for agg in nodes(e, exp.AggFunc)):
        return True
    sources = [query.args["from_"].this] if query.args.get("from_") else []
    joins = query.args.get("joins") or []
    if query.args.get("where") or any(j.kind != "CROSS" for j in joins):
        return False
    sources += [j.this for j in joins]
    return bool(sources) and all(isinstance(s, exp.Table) and not s.args.get("db") and s.name in ctes
                                 and _one_row(ctes[s.name], ctes) for s in sources)


# Inputs whose rows the input checks hold unique on these columns: a duplicate is refused before any value is
# returned (recsql/compose/checks.py; rendered SQL reports it in its check column), so a LEFT JOIN on them adds
# no row to a result anyone reads. The items' attributes are joined to every stage row when items are given;
# with no attribute read, the join goes.
CHECKED_UNIQUE = {"items_in": frozenset({"item_id"})}


def _unique_on(name: str, query: exp.Expression, join: exp.Join) -> bool:
    """Whether the LEFT JOIN ``join`` of the CTE ``name`` (``query``) matches at most one row of it: the
    join's ON equates the columns :data:`CHECKED_UNIQUE` names for it, or the CTE groups by plain columns
    (or is DISTINCT over them) that it returns under their own names, and the join's ON equates each."""
    alias = join.this.alias_or_name
    on = join.args.get("on")
    conjuncts = list(on.flatten()) if isinstance(on, exp.And) else [on]
    equated = {side.name for eq in conjuncts if isinstance(eq, exp.EQ)
               for side in (eq.this, eq.expression) if isinstance(side, exp.Column) and side.table == alias}
    if name in CHECKED_UNIQUE:
        return CHECKED_UNIQUE[name] <= equated
    if not isinstance(query, exp.Select) or query.args.get("having"):
        return False
    group = query.args.get("group")
    distinct = query.args.get("distinct")
    keys = group.expressions if group is not None else query.expressions if distinct and not distinct.args.get("on") else None
    if keys is None or any(not isinstance(k.unalias(), exp.Column) for k in keys):
        return False
    returned = {e.alias_or_name for e in query.expressions if isinstance(e.unalias(), exp.Column)
                and e.unalias().name == e.alias_or_name}
    return {k.unalias().name for k in keys} <= (equated & returned)


def _drop_joins(with_: exp.With, final: exp.Expression) -> bool:
    """Drop the joins of a CTE that no column of the select reads and that add no row: a CROSS or
    LEFT JOIN of a one-row CTE, or a LEFT JOIN matching at most one row; whether any went."""
    ctes = {c.alias: c.this for c in with_.expressions}
    changed = False
    for select in [s for tree in [*ctes.values(), final] for s in nodes(tree, exp.Select) if s.args.get("joins")]:
        for join in list(select.args.get("joins") or []):
            source = join.this
            if not isinstance(source, exp.Table) or source.args.get("db") or source.name not in ctes:
                continue
            alias, columns = source.alias_or_name, set(_columns_of(ctes[source.name]))
            elsewhere = [c for c in nodes(select, exp.Column) if c.find_ancestor(exp.Join) is not join]
            if any(c.table == alias or (not c.table and c.name in columns) for c in elsewhere):
                continue
            adds_none = (join.kind == "CROSS" or join.side == "LEFT") and _one_row(ctes[source.name], ctes)
            if adds_none or (join.side == "LEFT" and _unique_on(source.name, ctes[source.name], join)):
                select.set("joins", [j for j in select.args["joins"] if j is not join] or None)
                changed = True
    return changed


def _inline_pass_through(with_: exp.With, final: exp.Expression) -> bool:
    """A CTE that returns every column of another CTE, unchanged and unfiltered, is read as that
    CTE (under the reader's alias); whether one was."""
    ctes = {c.alias: c.this for c in with_.expressions}
    for cte in with_.expressions:
        body = cte.this
        if not isinstance(body, exp.Select) or any(body.args.get(k) for k in (
                "where", "joins", "group", "having", "qualify", "order", "limit", "distinct", "with_")):
            continue
        source = body.args["from_"].this if body.args.get("from_") else None
        if not isinstance(source, exp.Table) or source.args.get("db") or source.name not in ctes:
            continue
        if not all(isinstance(e.unalias(), exp.Column) and e.unalias().name == e.alias_or_name for e in body.expressions):
            continue
        names = [e.alias_or_name for e in body.expressions]
        if sorted(names) != sorted(_columns_of(ctes[source.name])) or len(set(names)) != len(names):
            continue
        readers = _readers(with_, final)[cte.alias]
        if any(map(_selects_star, readers)):
            continue
        for reader in readers:
            for table in [t for t in nodes(reader, exp.Table) if t.name == cte.alias and not t.args.get("db")]:
                table.set("this", exp.to_identifier(source.name))
                if not table.alias:
                    table.set("alias", exp.TableAlias(this=exp.to_identifier(cte.alias)))
        return True
    return False


def drop_unread(statement: exp.Expression) -> exp.Expression:
    """``statement`` (changed in place) without pass-through CTEs, unread columns, joins that add
    nothing, and the CTEs nothing reads then."""
    with_ = statement.args.get("with_")
    if with_ is None:
        return statement
    statement.set("with_", None)  # the final select alone, while the CTEs are rewritten
    try:
        while True:
            before = len(with_.expressions)
            changed = _inline_pass_through(with_, statement) | _drop_joins(with_, statement)
            changed |= _drop_columns(with_, statement)
            prune(with_, statement)
            if not changed and len(with_.expressions) == before:
                return statement
    finally:
        statement.set("with_", with_)
