"""Weighted lists in the ranked stage (``sql/_ranked.sql``'s ``list_weight``, ``Plan.weight_col``):
recsql.compare's resamples, each user's list counted by its weight in a run's global rows.

Without weights every list weighs 1 and the statement reads as if there were none (:func:`unweighted`);
with them the stage serves the global rows that sum the weights alone, and reads truth shared by the runs once
per user (:func:`users_of_shared_truth`); truth per run (compare's ``cmp_wtruth``) is read per run, as evaluate reads it.
"""
from __future__ import annotations

from sqlglot import exp

from ..trees import nodes
from .plan import RUN_KEYS
from .rewrite import expand_run_keys, fold_constants

WEIGHT = "list_weight"  # sql/_ranked.sql: the weight of a user's list (recs_in's, with Plan.weight_col)
WEIGHTED_BRANCHES = ("attention_rows", "attention_groups", "bias_rows")  # src 14, 15, 16: they sum the weights
# Stage features whose rows count each list list_weight times, and those that read inputs of the catalog only (its
# size, the items' popularity in interactions): what a weighted evaluation may serve (recsql/compose/exposure.py).
WEIGHTED_FEATURES = frozenset({"attention", "attention_groups", "popularity_bias"})
FIXED_FEATURES = frozenset({"catalog", "popularity", "tail_items"})


def users_of_shared_truth(ctes: dict[str, exp.CTE]) -> None:
    """truth_users once per user, not copied to every run: weighted lists make each resample a run, and truth
    (shared by the runs) would be copied to every one of them. Its readers join it on the user alone."""
    users = ctes["truth_users"].this
    for table in nodes(users, exp.Table):
        if table.name == "truth_runs":
            table.set("this", exp.to_identifier("truth_in"))
    ctes["truth_users"].set("this", expand_run_keys(users, []))
    for name in ("bias_users", "bias_listed", "ranked"):
        select = ctes[name].this
        alias = next(j.this.alias_or_name for j in [exp.Join(this=select.args["from_"].this), *select.args["joins"]]
                     if j.this.name == "truth_users")
        for column in [c for c in nodes(select, exp.Column) if c.name == RUN_KEYS and c.table == alias]:
            condition = column.parent
            if isinstance(condition, exp.EQ):
                condition.replace(exp.true())
            else:  # a run key read from truth_users: the list's instead (bias_users' FROM truth_users JOIN list_rows)
                column.set("table", exp.to_identifier("l"))
        ctes[name].set("this", fold_constants(select))


def unweighted(stage: exp.Select) -> None:
    """Every list weighs 1: the columns ``list_weight`` dropped, each read of one written 1, ``1 * x`` as
    ``x`` and ``SUM(1)`` as ``COUNT(*)``, so an evaluation's statement reads as if there were no weights."""
    for select in nodes(stage, exp.Select):
        select.set("expressions", [e for e in select.expressions if e.alias_or_name != WEIGHT])
    for column in [c for c in nodes(stage, exp.Column) if c.name == WEIGHT]:
        column.replace(exp.Literal.number(1))

    def simplify(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Mul) and node.this == exp.Literal.number(1):
            return node.expression
        if isinstance(node, exp.Sum) and node.this == exp.Literal.number(1):
            return exp.Count(this=exp.Star())
        return node

    stage.transform(simplify, copy=False)
