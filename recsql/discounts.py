"""Position discounts and gains: named presets from ``sql/_discounts.sql`` / ``sql/_gains.sql``,
and custom discount expressions, which may use only ``rank``, numbers and a safe list of functions.

>>> normalize_discount("jarvelin", "dcg")
'jarvelin'
>>> normalize_discount("1.0/log2(rank+1)", "dcg")
'1.0 / LOG(2, rank + 1)'
"""
from __future__ import annotations

from functools import lru_cache

import sqlglot
from sqlglot import exp

from .errors import RecsqlError
from .specs import DISCOUNT_PRESETS
from .templates import read_template
from .trees import parse, rewrite_bottom_up

_SAFE_NODES = (
    exp.Literal, exp.Paren, exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Pow,
    exp.Log, exp.Ln, exp.Exp, exp.Sqrt, exp.Abs, exp.Greatest, exp.Least, exp.Floor, exp.Ceil,
    exp.Case, exp.If, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or,
    exp.Not, exp.Boolean, exp.Cast, exp.DataType, exp.Column, exp.Identifier,
)
MAX_LENGTH = 500  # characters of a custom discount
MAX_DEPTH = 40  # levels of its expression tree (parentheses, operators, function calls)
CHECKED_RANKS = 10_000  # a custom discount must be a finite number at every rank 1..CHECKED_RANKS
_DOUBLE = exp.DataType.build("DOUBLE")
_FLOAT_TYPES = {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT, exp.DataType.Type.DECIMAL}


def _named_expressions(template: str) -> dict[str, exp.Expression]:
    _, sql = read_template(template)
    select = parse(sql, read="duckdb")
    return {e.alias: e.this for e in select.expressions}


@lru_cache(maxsize=1)
def _presets() -> dict[str, exp.Expression]:
    return _named_expressions("_discounts")


@lru_cache(maxsize=1)
def gains() -> dict[str, exp.Expression]:
    """Gain name -> expression over the stage's ``gain`` and ``hit`` columns."""
    return _named_expressions("_gains")




_HINT = ("a discount is log2, jarvelin, or a SQL expression in `rank` using numbers, + - * /, comparisons, CASE and "
         "LOG2/LOG10/LN/LOG(base, x)/EXP/POWER/SQRT/ABS/GREATEST/LEAST/FLOOR/CEIL, e.g. 1 / LOG2(rank + 1)")


def _depth(tree: exp.Expression) -> int:
    """Levels of the expression tree, counted without recursion."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.iter_expressions())
    return deepest


@lru_cache(maxsize=256)
def _parse_custom(text: str, metric: str) -> exp.Expression:
    """The parsed, checked discount; refused (RecsqlError) unless it uses only ``rank``, numbers and
    the safe functions, is at most MAX_LENGTH characters and MAX_DEPTH levels deep, means the same
    on every engine, and is a finite number at every rank 1..CHECKED_RANKS."""
    def refuse(why: str) -> RecsqlError:
        shown = text if len(text) <= 80 else text[:60] + "…"
        return RecsqlError(f"metric {metric!r}: discount {shown!r} {why}; {_HINT}")

    if len(text) > MAX_LENGTH:
        raise refuse(f"is {len(text)} characters long; at most {MAX_LENGTH} are allowed")
    nesting = max(_nesting(text), default=0)
    if nesting > MAX_DEPTH:
        raise refuse(f"nests parentheses {nesting} deep; at most {MAX_DEPTH} levels are allowed")
    try:
        tree = parse(text, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as err:
        raise RecsqlError(f"metric {metric!r}: cannot parse discount {text!r} ({err}); {_HINT}") from None
    except RecursionError:
        raise refuse(f"is nested too deeply; at most {MAX_DEPTH} levels are allowed") from None
    if _depth(tree) > MAX_DEPTH:
        raise refuse(f"is {_depth(tree)} levels deep; at most {MAX_DEPTH} are allowed")
    for node in tree.walk():
        if isinstance(node, exp.Mod):
            raise refuse("uses `%`, which engines compute differently for non-integers (it is not allowed); "
                         "write rank - 2 * FLOOR(rank / 2) for rank % 2")
        if not isinstance(node, _SAFE_NODES):
            raise refuse(f"uses {node.sql()!r}, which is not allowed")
        if isinstance(node, exp.Column) and (node.table or node.name.lower() != "rank"):
            raise refuse(f"refers to {node.sql()!r}; only `rank` is allowed")
        if isinstance(node, exp.Log) and node.expression is None:
            raise refuse("uses LOG(x) with one argument, which is log10 on DuckDB, SQLite and PostgreSQL but the "
                         "natural logarithm on Spark, ClickHouse, MySQL and BigQuery; write LOG10(x), LN(x), "
                         "LOG2(x) or LOG(base, x)")
        if isinstance(node, exp.Cast) and node.to.this not in _FLOAT_TYPES:
            raise refuse(f"casts to {node.to.sql()}, which engines round differently; only CAST(... AS DOUBLE) "
                         "is allowed (use FLOOR or CEIL)")
    if "rank" not in {c.name.lower() for c in tree.find_all(exp.Column)}:
        raise refuse("does not use `rank`")
    _check_finite(tree, refuse)
    return tree


def _nesting(text: str):
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        yield depth


def _portable(tree: exp.Expression, position: exp.Expression) -> exp.Expression:
    """The custom discount as every engine computes it alike: ``rank`` (``position``) as DOUBLE, every
    ratio in DOUBLE with its divisor in NULLIF (``1/rank`` is not integer division, and ``x/0`` is
    NULL, not an error or infinity), and every logarithm as LN(x) / LN(base) (a two-argument LOG
    is missing or has its arguments reversed in some engines)."""
    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and node.name.lower() == "rank":
            return exp.Cast(this=position.copy(), to=_DOUBLE.copy())
        if isinstance(node, exp.Log):  # LOG(base, x), LOG2(x), LOG10(x): children already rewritten
            return exp.Paren(this=exp.Div(this=exp.Ln(this=node.expression), expression=exp.Ln(this=node.this)))
        if isinstance(node, exp.Div):
            numerator = node.this if isinstance(node.this, (exp.Literal, exp.Func, exp.Paren)) else exp.Paren(this=node.this)
            return exp.Div(this=exp.Cast(this=numerator, to=_DOUBLE.copy()),
                           expression=exp.Nullif(this=node.expression, expression=exp.Literal.number(0)))
        return node

    return rewrite_bottom_up(tree.copy(), rewrite)  # children first: a rewritten node keeps rewritten children


def _check_finite(tree: exp.Expression, refuse) -> None:
    """Evaluate the discount (as rendered, in DuckDB) at ranks 1..CHECKED_RANKS; refuse it where it is
    NULL, NaN or infinite (a division by zero, the logarithm of 0 or of a negative number, overflow):
    engines disagree on those (an error, NULL or ±inf) and a sum over positions would hide them."""
    import duckdb  # noqa: PLC0415  (DuckDB is recsql's own engine; imported only for custom discounts)

    from .database import shared  # noqa: PLC0415  (recsql's own DuckDB, not an engine runner)

    value = _portable(tree, exp.column("r")).sql(dialect="duckdb")
    query = (f"SELECT r, {value} AS d FROM range(1, {CHECKED_RANKS + 1}) AS t(r) "
             f"WHERE d IS NULL OR NOT isfinite(d) ORDER BY r LIMIT 1")
    try:
        with shared.cursor() as con:
            bad = con.execute(query).fetchone()
    except duckdb.Error as err:
        raise refuse(f"cannot be computed ({str(err).splitlines()[0]})") from None
    if bad is not None:
        what = "NULL (a division by zero)" if bad[1] is None else bad[1]
        raise refuse(f"is {what} at rank {bad[0]}; a discount must be a finite number at every rank "
                     f"1..{CHECKED_RANKS}")


def normalize_discount(text: str, metric: str) -> str:
    """Canonical text of a discount option: a preset name or the normalised expression."""
    if text.lower() in DISCOUNT_PRESETS:
        return text.lower()
    return _parse_custom(text, metric).sql(dialect="duckdb")


def discount_expression(value: str, position: exp.Expression) -> exp.Expression:
    """The discount's expression with ``rank`` replaced by ``position``."""
    if value not in DISCOUNT_PRESETS:
        return _portable(_parse_custom(value, "discount"), position)
    return _presets()[value].copy().transform(
        lambda n: position.copy() if isinstance(n, exp.Column) and n.name.lower() == "rank" else n
    )
