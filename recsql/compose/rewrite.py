"""Tree rewrites the composer shares: typed literal substitution, constant folding, run-key
expansion, pruning of unused CTEs and joins, UNION ALL helpers.
"""

from __future__ import annotations

from sqlglot import exp

from ..trees import nodes, rewrite_bottom_up
from .plan import RUN_KEYS


def _literal(value: object) -> exp.Expression:
    if value is None:
        return exp.null()
    if isinstance(value, exp.Expression):  # a literal written as the SQL it is (1e12)
        return value.copy()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def substitute(tree: exp.Expression, values: dict[str, object], where: str,
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


def fold_constants(tree: exp.Expression) -> exp.Expression:
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


def expand_run_keys(tree: exp.Expression, keys: list[str]) -> exp.Expression:
    """Expand the ``run_keys`` column into the run key columns (or remove it when there are none)."""
    for node in nodes(tree, exp.Column):
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
    return fold_constants(tree)  # TRUE AND x -> x where a join had only run keys to add


def alias_projections(tree: exp.Expression) -> exp.Expression:
    """``SELECT s.user_id`` -> ``SELECT s.user_id AS user_id``: some engines (ClickHouse) keep the
    qualifier in the output column's name otherwise."""
    for select in nodes(tree, exp.Select):
        select.set("expressions", [exp.alias_(e, e.name) if isinstance(e, exp.Column) and e.table else e
                                   for e in select.expressions])
    return tree


def drop_join(select: exp.Select, table: str) -> None:
    joins = [j for j in select.args.get("joins") or [] if j.this.alias_or_name != table]
    select.set("joins", joins or None)


def key_join(select: exp.Select, table: str, other: str, keys: list[str]) -> None:
    """``select``'s join of ``table`` (a CROSS JOIN) made an inner join on the columns ``keys`` of ``table``
    and of the alias ``other``: each row kept with the rows of its own keys only."""
    for join in select.args["joins"]:
        if join.this.alias_or_name == table:
            join.set("kind", None)
            join.set("on", exp.and_(*[exp.column(k, table=table).eq(exp.column(k, table=other)) for k in keys]))


def reachable(ctes: list[exp.CTE], final: exp.Expression, roots: frozenset[str] = frozenset()) -> list[exp.CTE]:
    """The CTEs something refers to, repeatedly: those ``final`` reads (and the CTEs named ``roots``),
    and those the CTEs kept read (each CTE's tables are collected once; the tree is not changed)."""
    read_by_final = {t.name for t in nodes(final, exp.Table)} | roots
    kept = [(c, {t.name for t in nodes(c.this, exp.Table) if t.name != c.alias}) for c in ctes]
    while True:
        used = read_by_final.union(*(tables for _, tables in kept))
        still = [(c, tables) for c, tables in kept if c.alias in used]
        if len(still) == len(kept):
            return [c for c, _ in kept]
        kept = still


def prune(with_: exp.With, final: exp.Select, roots: frozenset[str] = frozenset()) -> None:
    """Remove CTEs nothing refers to (repeatedly), but those named ``roots``."""
    kept = reachable(with_.expressions, final, roots)
    if len(kept) != len(with_.expressions):
        with_.set("expressions", kept)


def union_all(selects: list[exp.Select]) -> exp.Expression:
    """The ``selects`` as one UNION ALL chain, built from the nodes themselves (not copies: a caller
    hands over selects it built, or branches of the union the chain replaces)."""
    query: exp.Expression = selects[0]
    for s in selects[1:]:
        query = exp.union(query, s, distinct=False, copy=False)
    return query


def rename_relations(ctes: list[exp.CTE], mapping: dict[str, str]) -> list[exp.CTE]:
    """``ctes`` with each relation named in ``mapping`` renamed to its value, where it is defined (the CTE's
    alias) and wherever it is read (a table without a schema; a reference without an alias keeps its old
    name as alias, so its qualified columns still resolve). Rewritten in place; returned."""
    for cte in ctes:
        for table in nodes(cte.this, exp.Table):
            if table.name in mapping and not table.args.get("db"):
                if not table.alias:
                    table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
                table.set("this", exp.to_identifier(mapping[table.name]))
        if cte.alias in mapping:
            cte.set("alias", exp.TableAlias(this=exp.to_identifier(mapping[cte.alias])))
    return ctes


def union_branches(node: exp.Expression) -> list[exp.Select]:
    """The SELECTs of a UNION ALL chain, in order."""
    out: list[exp.Select] = []
    while isinstance(node, exp.Union):
        out.insert(0, node.expression)
        node = node.this
    return [node, *out]


def pad_union(branches: list[exp.Select], every: list[exp.Select]) -> None:
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
        branch.set("expressions", [have[n] if n in have else _null_as(n, types[n]) for n in order])


def _null_as(name: str, type_: exp.DataType | None) -> exp.Alias:
    """``CAST(NULL AS type_) AS name`` (``NULL AS name`` without a type), built as nodes: sqlglot's builders
    parse and check each argument, and a padded union builds hundreds of these."""
    value = exp.Cast(this=exp.Null(), to=type_.copy()) if type_ is not None else exp.Null()
    return exp.Alias(this=value, alias=exp.to_identifier(name))


def drop_joins(select: exp.Select, aliases: set[str]) -> None:
    select.set("joins", [j for j in select.args.get("joins") or [] if j.this.alias_or_name not in aliases] or None)
    for col in nodes(select, exp.Column):
        if col.table in aliases:
            col.replace(exp.null())


def null_column(select: exp.Select, name: str, type_: str) -> None:
    select.set("expressions", [_null_as(name, exp.DataType.build(type_)) if e.alias_or_name == name else e
                               for e in select.expressions])
