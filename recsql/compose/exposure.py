"""The exposure sums: the vocabulary a global metric (``population: global``) is written in.

A global metric's template computes its one number per run from a few sums over item exposure
counts, each called like a function without arguments: ``shown_items()``, ``total_exposure()``,
``ranked_exposure()``, ``shared_pairs()``, ``list_users()``, ``user_pairs()``, ``n_catalog()``
(their meanings: ``sql/_exposure.sql``). The sums are defined once per way of counting, and the
metric's expression once:

- evaluate (:func:`ranked_sums`): aggregates over the ranked stage's exposure rows, each user
  counted once, read from ``sql/_exposure.sql``;
- compare (:func:`weighted_sums`): the columns of the same names that ``sql/_compare_global.sql``
  computes from weighted item counts (bootstrap weights, the randomization's swapped lists).

:func:`expand_sums` puts one of them into a metric's expression. A global metric is resampled by
``recsql.compare`` exactly when its expression reads nothing but these sums, literals and its
parameters (:func:`resampling_refusal` says why not otherwise): the registry, not a list, decides.

>>> sorted(ranked_sums())[:3]
['list_users', 'n_catalog', 'ranked_exposure']
>>> resampling_refusal("gini") is None
True
"""
from __future__ import annotations

from functools import lru_cache

from sqlglot import exp

from ..metrics import registry
from ..templates import read_template
from ..trees import nodes, parse
from .weights import FIXED_FEATURES, WEIGHTED_FEATURES

SUMS_TEMPLATE = "_exposure"  # sql/_exposure.sql: the sums over the ranked stage, and what each means


@lru_cache(maxsize=1)
def _ranked() -> dict[str, exp.Expression]:
    _, body = read_template(SUMS_TEMPLATE)
    return {e.alias: e.this for e in parse(body, read="duckdb").expressions}


def ranked_sums() -> dict[str, exp.Expression]:
    """Each exposure sum as an aggregate over the ranked stage's rows (``$k``: the metric's cutoff); the
    trees are shared: read them, or copy them (as :func:`expand_sums` does) before changing one."""
    return dict(_ranked())


def weighted_sums() -> dict[str, exp.Expression]:
    """Each exposure sum as the column of its name in compare's weighted counts (``cmp_global_terms``
    of ``sql/_compare_global.sql``)."""
    return {name: exp.column(name) for name in _ranked()}


def _calls(tree: exp.Expression) -> list[exp.Anonymous]:
    return [node for node in nodes(tree, exp.Anonymous) if node.name.lower() in _ranked()]


def expand_sums(tree: exp.Expression, sums: dict[str, exp.Expression]) -> exp.Expression:
    """``tree`` with each call of an exposure sum replaced by its definition in ``sums`` (in place)."""
    for call in _calls(tree):
        definition = sums[call.name.lower()].copy()
        atomic = isinstance(definition, (exp.Column, exp.Literal, exp.Cast, exp.Func, exp.Paren))
        replacement = definition if atomic else exp.Paren(this=definition)
        if call is tree:
            return replacement
        call.replace(replacement)
    return tree


def weighted_refusal(metric) -> str | None:
    """Why ``recsql.compare`` cannot recompute the global ``metric`` from weighted lists (None: it can): its
    stage rows must all count each list by its weight (``WEIGHTED_FEATURES``: sql/_ranked.sql's src 14, 15
    and 16), beside inputs of the catalog only (``FIXED_FEATURES``); compare then evaluates its own template
    over weighted lists (recsql/comparison_weighted.py)."""
    features = set(metric.spec.features(metric.all_options()))
    other = sorted(features - WEIGHTED_FEATURES - FIXED_FEATURES)
    if not other and features & WEIGHTED_FEATURES:
        return None
    return (f"sql/{metric.name}.sql reads the stage's {', '.join(other) or 'no weighted'} rows, which count every "
            f"list once, not the weighted rows of {', '.join(sorted(WEIGHTED_FEATURES))}")


@lru_cache(maxsize=None)
def resampling_refusal(name: str) -> str | None:
    """Why ``recsql.compare`` cannot resample the registry's global metric ``name`` (None: it can)."""
    return template_refusal(name, registry()[name].sql)


def template_refusal(name: str, sql: str) -> str | None:
    """Why a global metric's template body ``sql`` (``SELECT user_id, <expression> AS name ...``) cannot
    be resampled, or None: its expression must read the exposure sums only (with literals and its
    parameters), so that compare can put in its own counts."""
    select = parse(sql, read="duckdb")
    tree = next(e.this for e in select.expressions if e.alias_or_name == name).copy()
    for call in _calls(tree):
        if call.expressions:
            return f"sql/{name}.sql calls {call.name}() with arguments; an exposure sum takes none"
        call.replace(exp.Literal.number(0))
    columns = sorted({c.name for c in nodes(tree, exp.Column)})
    other = sorted({n.name if isinstance(n, exp.Anonymous) else type(n).__name__.upper()
                    for n in nodes(tree, exp.AggFunc, exp.Window, exp.Anonymous)})
    if not columns and not other:
        return None
    read = ", ".join([*(f"column {c}" for c in columns), *(f"{o}()" for o in other)])
    return (f"sql/{name}.sql reads {read} of the ranked stage, not only the exposure sums of sql/_exposure.sql "
            f"({', '.join(f'{s}()' for s in _ranked())}), so compare cannot recount it over resampled lists")
