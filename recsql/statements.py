"""The SQL text of a composed statement, memoised.

Composing (:func:`recsql.compose.compose`) and rendering (:func:`recsql.dialects.render`) a
statement costs tens of milliseconds of Python, as much as the query itself on a million rows.
Everything they produce depends on the plan's options and the metrics, never on what the input
relations are: a relation only ever stands in a FROM clause. So a statement is composed once per
(plan without its relations, metrics, output, dialect, layout), with a unique placeholder table for
each relation, and each call pastes the relations' own SQL text in place of the placeholders.

That text is what the renderer writes for the relation in place: sqlglot renders a table name or a
function call the same wherever it stands, and its decision to break a long argument list over
lines does not depend on indentation, so a relation rendered on one line is the same text inside
the statement. A relation that renders over several lines (or holds a query) is not pasted: that
statement is composed from scratch. ``tests/test_statements.py`` checks byte equality with the
uncached path on every dialect.

>>> import sqlglot
>>> from recsql.compose import Plan
>>> from recsql.metrics import parse_metrics
>>> plan = Plan(recs=sqlglot.parse_one("db.recs", into=sqlglot.exp.Table), truth=sqlglot.parse_one("db.truth", into=sqlglot.exp.Table))
>>> sql = statement_sql(plan, parse_metrics(["ndcg@10"]), "summary", "duckdb")
>>> "db.recs" in sql and "db.truth" in sql and _TOKEN not in sql
True
"""
from __future__ import annotations

import dataclasses
import re
import secrets
import threading
from collections import OrderedDict
from typing import Sequence

from sqlglot import exp

from .compose import Plan, compose
from .dialects import dialect as get_dialect, render
from .metrics import Metric

# The plan's relations: each stands only in FROM clauses of the composed statement.
RELATIONS = ("recs", "truth", "items", "interactions", "catalog", "baseline", "item_features")
# Unique per process, so no column name or literal a user writes can be mistaken for a placeholder.
_TOKEN = f"recsql_rel_{secrets.token_hex(8)}"
_SIZE = 64  # statements kept (least recently used dropped)

_cache: OrderedDict[tuple, tuple[list[str], list[str]]] = OrderedDict()
_lock = threading.Lock()


def _plain(value: object) -> object:
    """A plan field as a hashable, order-independent value."""
    if isinstance(value, exp.Expression):
        return ("sql", value.sql("duckdb"))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, value))))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), repr(v)) for k, v in value.items())))
    return repr(value)


def _key(plan: Plan, metrics: Sequence[Metric], output: str, dialect_name: str, pretty: bool) -> tuple:
    fields = tuple((f.name, _plain(getattr(plan, f.name))) for f in dataclasses.fields(plan))
    asked = tuple((m.name, m.k, m.options, tuple(sorted(m.explicit)), m.asked) for m in metrics)
    return fields, asked, output, dialect_name, pretty


def _relation_text(relation: exp.Expression, dialect_name: str, pretty: bool) -> str | None:
    """The relation's SQL as the statement renders it, or None when it cannot be pasted (it spans
    lines, or holds a query whose layout depends on its place)."""
    if relation.find(exp.Query) is not None:
        return None
    text = relation.sql(dialect=get_dialect(dialect_name).sqlglot, pretty=pretty)
    return None if "\n" in text else text


def _template(plan: Plan, metrics: list[Metric], output: str, dialect_name: str, pretty: bool,
              roles: list[str]) -> tuple[list[str], list[str]]:
    """The statement composed with a placeholder table per relation, split at the placeholders:
    (texts between them, the role of each placeholder)."""
    placeholders = {role: exp.to_table(f"{_TOKEN}_{role}") for role in roles}
    sql = render(compose(dataclasses.replace(plan, **placeholders), metrics, output=output), dialect_name,
                 pretty=pretty)
    spelled = {placeholder.sql(dialect=get_dialect(dialect_name).sqlglot): role
               for role, placeholder in placeholders.items()}
    pattern = re.compile("|".join(re.escape(s) for s in sorted(spelled, key=len, reverse=True)))
    texts, order, start = [], [], 0
    for match in pattern.finditer(sql):
        texts.append(sql[start:match.start()])
        order.append(spelled[match.group(0)])
        start = match.end()
    texts.append(sql[start:])
    if _TOKEN in "".join(texts):  # a placeholder written some other way: never paste into that
        raise RuntimeError("a relation placeholder was rendered in an unexpected form")
    return texts, order


def statement_sql(plan: Plan, metrics: Sequence[Metric], output: str = "summary", dialect_name: str = "duckdb",
                  pretty: bool = True) -> str:
    """``render(compose(plan, metrics, output), dialect_name, pretty=pretty)``, the same text, from a
    statement composed once per plan options, metrics, output and dialect (module docstring)."""
    metrics = list(metrics)
    relations = {role: getattr(plan, role) for role in RELATIONS if getattr(plan, role) is not None}
    texts = {role: _relation_text(rel, dialect_name, pretty) for role, rel in relations.items()}
    if any(text is None for text in texts.values()):
        return render(compose(plan, metrics, output=output), dialect_name, pretty=pretty)
    roles = sorted(relations)
    key = _key(dataclasses.replace(plan, **{role: None for role in roles}), metrics, output, dialect_name, pretty)
    key = (key, tuple(roles))
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
    if found is None:
        found = _template(plan, metrics, output, dialect_name, pretty, roles)
        with _lock:
            _cache[key] = found
            while len(_cache) > _SIZE:
                _cache.popitem(last=False)
    between, order = found
    pieces = [between[0]]
    for role, text in zip(order, between[1:]):
        pieces += [texts[role], text]
    return "".join(pieces)
