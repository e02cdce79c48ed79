"""Rewriting sqlglot trees, and a table's DuckDB text without sqlglot's DuckDB dialect (:func:`quoted_name`,
:func:`relation_text`).

>>> import sqlglot
>>> tree = sqlglot.parse_one("SELECT a + 1 FROM t WHERE TRUE")
>>> def drop_true_where(node):
...     return None if isinstance(node, exp.Where) and node.this == exp.true() else node
>>> rewrite_bottom_up(tree, drop_true_where).sql()
'SELECT a + 1 FROM t'
"""
from __future__ import annotations

import re
from collections import deque
from typing import Callable

import sqlglot
from sqlglot import exp


def parse(sql: str, read: str | None = None) -> exp.Expression:
    """``sqlglot.parse_one`` without the source positions the parser records on identifiers and
    literals (``meta``): recsql never reads them, and every copy of a tree deep-copies each
    position dict with Python's generic ``deepcopy`` (about a fifth of composing a statement)."""
    tree = sqlglot.parse_one(sql, read=read)
    for node in tree.walk():
        node._meta = None
    return tree


def nodes(tree: exp.Expression, *types: type) -> list:
    """``list(tree.find_all(*types))`` (every node of ``tree`` when no type is given), in the same
    breadth-first order: one loop where sqlglot nests three generators per node, which makes it about
    1.5 times as fast over a composed statement's thousands of nodes, and the composer walks each
    statement many times. A list: the caller may change the tree while it goes through it."""
    found = []
    queue = deque((tree,))
    pop, push = queue.popleft, queue.append
    while queue:
        node = pop()
        if not types or isinstance(node, types):
            found.append(node)
        for value in node.args.values():
            if isinstance(value, exp.Expression):
                push(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, exp.Expression):
                        push(item)
    return found


class CopiedOnRead(dict):
    """A template's CTEs by name, each copied when first read: a caller that changes a few CTEs of a large
    template, and keeps fewer still, copies those it reads only (``template``: the originals, by name).

    >>> ctes = CopiedOnRead(sqlglot.parse_one("WITH a AS (SELECT 1), b AS (SELECT 2) SELECT 3").args["with_"].expressions)
    >>> ctes["a"] is not ctes.template["a"], "b" in ctes
    (True, False)
    """

    def __init__(self, template: list[exp.CTE]):
        super().__init__()
        self.template = {c.alias: c for c in template}

    def __missing__(self, name: str) -> exp.CTE:
        self[name] = self.template[name].copy()
        return self[name]


def rewrite_bottom_up(tree: exp.Expression,
                      rewrite: Callable[[exp.Expression], exp.Expression | None]) -> exp.Expression:
    """Apply ``rewrite`` to every node of ``tree``, children before parents, so that a parent sees
    its rewritten children; ``rewrite`` returns the node itself, a replacement, or None to remove
    the node. Works in place and returns the (possibly new) root."""
    for node in reversed(nodes(tree)):
        new = rewrite(node)
        if new is None:
            node.pop()
        elif new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quoted_name(relation: exp.Expression) -> str | None:
    """DuckDB's text of a table that is one quoted identifier of letters, digits and underscores (as
    the names of the frames a runner registers): ``"name"``, what sqlglot writes for it, without
    loading sqlglot's DuckDB dialect (tens of milliseconds on a cold call); None for anything else.

    >>> quoted_name(exp.Table(this=exp.to_identifier("__recsql_recs_1", quoted=True)))
    '"__recsql_recs_1"'
    """
    if type(relation) is not exp.Table or set(relation.args) - {"this"}:
        return None
    name = relation.args["this"]
    if type(name) is not exp.Identifier or set(name.args) - {"this", "quoted"} or not name.args.get("quoted"):
        return None
    text = name.args["this"]
    return f'"{text}"' if isinstance(text, str) and _PLAIN_NAME.fullmatch(text) else None


_READERS = ("read_parquet", "read_csv", "read_json")
ONE_LINE = 60  # a reader's text this long or shorter is one line in sqlglot's pretty layout too


def relation_text(relation: exp.Expression, pretty: bool = False) -> str | None:
    """DuckDB's one-line text of a relation that is a :func:`quoted_name` or a file reader of one path
    (``READ_PARQUET('path')``, a quote in the path doubled), what sqlglot writes for it, without loading
    sqlglot's DuckDB dialect; None for anything else, and in the ``pretty`` layout for a reader longer than
    :data:`ONE_LINE` characters (sqlglot's pretty layout breaks a long one's path onto a line of its own).

    >>> relation_text(exp.Anonymous(this="read_parquet", expressions=[exp.Literal.string("it's.parquet")]))
    "READ_PARQUET('it''s.parquet')"
    """
    if type(relation) is not exp.Anonymous:
        return quoted_name(relation)
    reader, arguments = relation.args.get("this"), relation.args.get("expressions") or []
    if reader not in _READERS or set(relation.args) - {"this", "expressions"} or len(arguments) != 1:
        return None
    path = arguments[0]
    if type(path) is not exp.Literal or not path.is_string or set(path.args) - {"this", "is_string"}:
        return None
    text = path.args["this"]
    if not isinstance(text, str) or not text.isprintable():
        return None
    written = f"{reader.upper()}('{text.replace(chr(39), chr(39) * 2)}')"
    return None if pretty and len(written) > ONE_LINE else written


MAX_DOUBLE = "1.7976931348623157E308"  # the largest finite DOUBLE


def not_finite(column: exp.Expression) -> exp.Expression:
    """NaN or ±infinity, on every engine: NaN compares greater than everything in DuckDB,
    PostgreSQL and Spark and unequal to itself elsewhere (IEEE)."""
    value = exp.cast(column, "DOUBLE")
    return exp.or_(exp.GT(this=value, expression=exp.Literal.number(MAX_DOUBLE)),
                   exp.LT(this=value.copy(), expression=exp.Neg(this=exp.Literal.number(MAX_DOUBLE))),
                   exp.NEQ(this=value.copy(), expression=value.copy()))
