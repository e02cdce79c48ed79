"""Metric expansion: a metric's template as one aggregate expression (its macros and calls to
other metrics expanded), and the same expression with its cutoff removed.
"""

from __future__ import annotations

from functools import lru_cache

from sqlglot import exp

from ..discounts import discount_expression, gains
from ..errors import RecsqlError
from ..metrics import Metric, registry
from ..specs import DISCOUNT_PRESETS
from ..trees import nodes, parse
from .exposure import expand_sums, ranked_sums
from .rewrite import fold_constants, substitute


@lru_cache(maxsize=None)
def _metric_projection(name: str) -> exp.Expression:
    spec = registry()[name]
    select = parse(spec.sql, read="duckdb")
    outputs = [e for e in select.expressions if e.alias_or_name != "user_id"]
    if len(outputs) != 1 or outputs[0].alias != name:
        raise RuntimeError(f"sql/{name}.sql must select user_id and one expression aliased {name}")
    return outputs[0].this


def _wrap(node: exp.Expression) -> exp.Expression:
    """Parenthesise an inlined expression unless it is atomic (keeps operator precedence)."""
    return node if isinstance(node, (exp.Column, exp.Literal, exp.Cast, exp.Func, exp.Paren)) else exp.Paren(this=node)


def metric_expression(metric: Metric, context: dict[str, str] | None = None,
                      sums: dict[str, exp.Expression] | None = None) -> exp.Expression:
    """The per-user aggregate expression of one metric, parameters bound. ``context``: facts of the
    plan a template may read: ``$ties`` (the tie rule) and ``$has_expected_recs`` (yes / no). ``sums``: the
    definitions of the exposure sums a global metric is written in (recsql/compose/exposure.py):
    aggregates over the ranked stage unless given (compare gives its weighted counts')."""
    context = {"ties": "item_id", "has_expected_recs": "no", **(context or {})}
    options = metric.all_options()
    params = metric.spec.params
    values: dict[str, object] = {"k": metric.k, **context, **{
        p: float(v) if params[p].kind == "number" and v != "auto" else v for p, v in options.items()}}

    def expand(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous):
            fname = node.name.lower()
            if fname == "gain":
                return _wrap(gains()[options["gain"]].copy())
            if fname in params and params[fname].kind == "discount":  # DISCOUNT(x), EXAMINATION(x): the option's
                value = options[fname]  # discount at x; NULL for the word a discount option takes besides (`logs`)
                if value not in DISCOUNT_PRESETS and value in params[fname].choices:
                    return exp.null()
                return _wrap(discount_expression(value, node.expressions[0]))
            if fname in registry():
                inner = registry()[fname]
                inherited = {p: v for p, v in options.items() if p in inner.params}
                return _wrap(metric_expression(Metric(fname, metric.k, **inherited), context, sums))
        return node

    tree = expand_sums(_metric_projection(metric.name).copy(), ranked_sums() if sums is None else sums)
    if metric.k is None:
        values.pop("k")
        tree = _without_cutoff(fold_constants(substitute(tree, values, f"sql/{metric.name}.sql", keep={"k"})), metric)
    tree = substitute(tree, values, f"sql/{metric.name}.sql")
    return fold_constants(tree.transform(expand, copy=False))


def _is_k(node: exp.Expression) -> bool:
    return isinstance(node, exp.Placeholder) and node.name == "k"


def _without_cutoff(tree: exp.Expression, metric: Metric) -> exp.Expression:
    """A metric with an optional cutoff, asked without one, ranks the whole list: ``x <= $k``
    becomes TRUE and ``LEAST($k, x)`` becomes ``x``; any other use of ``$k`` is a template error."""
    def drop(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.LTE) and _is_k(node.expression):
            return exp.true()
        if isinstance(node, exp.Least) and any(_is_k(a) for a in [node.this, *node.expressions]):
            rest = [a for a in [node.this, *node.expressions] if not _is_k(a)]
            return rest[0] if len(rest) == 1 else exp.Least(this=rest[0], expressions=rest[1:])
        return node
    tree = tree.transform(drop, copy=False)
    if any(_is_k(p) for p in nodes(tree, exp.Placeholder)):
        raise RecsqlError(f"metric {str(metric)!r} needs a cutoff with these options: write it as '{metric}@10'")
    return tree
