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
from .templates import read_template

_SAFE_NODES = (
    exp.Literal, exp.Paren, exp.Neg, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Pow,
    exp.Log, exp.Ln, exp.Exp, exp.Sqrt, exp.Abs, exp.Greatest, exp.Least, exp.Floor, exp.Ceil,
    exp.Case, exp.If, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.And, exp.Or,
    exp.Not, exp.Boolean, exp.Cast, exp.DataType, exp.Column, exp.Identifier,
)


def _named_expressions(template: str) -> dict[str, exp.Expression]:
    _, sql = read_template(template)
    select = sqlglot.parse_one(sql, read="duckdb")
    return {e.alias: e.this for e in select.expressions}


@lru_cache(maxsize=1)
def _presets() -> dict[str, exp.Expression]:
    return _named_expressions("_discounts")


@lru_cache(maxsize=1)
def gains() -> dict[str, exp.Expression]:
    """Gain name -> expression over the stage's ``gain`` and ``hit`` columns."""
    return _named_expressions("_gains")


DISCOUNT_PRESETS: tuple[str, ...] = ("log2", "jarvelin")


def _parse_custom(text: str, metric: str) -> exp.Expression:
    hint = ("a discount is log2, jarvelin, or a SQL expression in `rank` using numbers, + - * / "
            "and LOG2/LN/LOG/POWER/SQRT/EXP/ABS/GREATEST/LEAST/CASE, e.g. 1 / LOG2(rank + 1)")
    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except sqlglot.errors.ParseError as err:
        raise RecsqlError(f"metric {metric!r}: cannot parse discount {text!r} ({err}); {hint}") from None
    for node in tree.walk():
        if not isinstance(node, _SAFE_NODES):
            raise RecsqlError(f"metric {metric!r}: discount {text!r} uses {node.sql()!r}, which is not allowed; {hint}")
        if isinstance(node, exp.Column) and (node.table or node.name.lower() != "rank"):
            raise RecsqlError(f"metric {metric!r}: discount {text!r} refers to {node.sql()!r}; only `rank` is allowed; {hint}")
    if "rank" not in {c.name.lower() for c in tree.find_all(exp.Column)}:
        raise RecsqlError(f"metric {metric!r}: discount {text!r} does not use `rank`; {hint}")
    return tree


def normalize_discount(text: str, metric: str) -> str:
    """Canonical text of a discount option: a preset name or the normalised expression."""
    if text.lower() in DISCOUNT_PRESETS:
        return text.lower()
    return _parse_custom(text, metric).sql(dialect="duckdb")


def discount_expression(value: str, position: exp.Expression) -> exp.Expression:
    """The discount's expression with ``rank`` replaced by ``position``."""
    tree = _presets()[value] if value in DISCOUNT_PRESETS else _parse_custom(value, "discount")
    return tree.copy().transform(
        lambda n: position.copy() if isinstance(n, exp.Column) and n.name.lower() == "rank" else n
    )
