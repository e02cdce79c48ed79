"""The readability pass: a composed statement made into SQL a person can read, applied to the tree
before it is rendered (by :func:`recsql.statements.statement_sql` for evaluate and to_sql, by the
comparison's statement and by the dbt model).

- inputs not given taken out (:func:`recsql.compose.empty.without_empty`), and whatever nothing
  reads (:func:`recsql.compose.unread.drop_unread`): pass-through CTEs, unread columns and joins;
- a comment on each metric's per-user expression, where it is computed: its canonical name and the
  formula its SQL file's header gives (``-- formula:``, read by the registry);
- a header above the statement: recsql's version, the metrics as asked, the output, the convention,
  the relevance threshold, the population, the tie rule and the dialect.

User text (a metric as asked) reaches the comments only through :func:`recsql.safe_text.sql_comment`.

>>> import sqlglot
>>> from recsql.compose import Plan, compose
>>> from recsql.metrics import parse_metrics
>>> plan = Plan(recs=sqlglot.exp.to_table("recs"), truth=sqlglot.exp.to_table("truth"))
>>> metrics = parse_metrics(["ndcg@10"])
>>> tree = readable(compose(plan, metrics), plan, metrics, "summary")
>>> print("\\n".join(tree.args["with_"].comments))
 recsql ...: ndcg@10 (summary: one row per run) 
 convention: recsql; relevant: relevance >= 1; population: relevant (users with a relevant truth item) 
 ties: item_id (tied items in item id order, ascending); dialect: duckdb 
"""
from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Sequence

from sqlglot import exp

from .. import __version__
from ..conventions import resolve_metric
from ..metrics import Metric
from ..safe_text import sql_comment
from .columns import metric_columns
from .empty import without_empty
from .plan import Plan, statement_key, text_rules
from .statement import compose
from .unread import drop_unread

# What each population and tie rule means, for the header (docs/guide/populations.md, docs/guide/ties.md).
POPULATION_WORDS = {"relevant": "users with a relevant truth item",
                    "intersection": "users with a relevant truth item and recommendations",
                    "judged": "users with a truth row"}
TIE_WORDS = {"item_id": "tied items in item id order, ascending",
             "item_id_desc": "tied items in item id order, descending",
             "average": "the expected value over every order of tied items"}
OUTPUT_WORDS = {"summary": "one row per run", "per_user": "one row per user of the population",
                "raw": "every user's values and flags",
                "runs": "one row of values and flags per run (every metric global)", "checks": "the input checks alone",
                "compare": "each run's mean with its interval, and paired tests between runs"}


def header(plan: Plan, metrics: Sequence[Metric], output: str, dialect: bool = True) -> list[str]:
    """The header's lines (comment bodies): what the statement computes and under which rules.
    ``dialect``: name the plan's dialect (a dbt model names its adapters itself)."""
    threshold = format(plan.threshold, "g")
    lines = [f"recsql {__version__}: {', '.join(m.column for m in metrics)} ({output}: {OUTPUT_WORDS[output]})",
             f"convention: {plan.convention}; relevant: relevance >= {threshold}; population: {plan.population} "
             f"({POPULATION_WORDS[plan.population]})",
             f"ties: {plan.ties} ({TIE_WORDS[plan.ties]})" + (f"; dialect: {plan.dialect}" if dialect else "")]
    return [sql_comment(line) for line in lines]


def annotate_formulas(statement: exp.Expression, plan: Plan, metrics: Sequence[Metric]) -> None:
    """Each metric's per-user expression (its column of ``per_user_raw``) gets a comment: the
    metric's canonical name under the plan's convention, and its formula."""
    columns = dict(zip(metric_columns(metrics), metrics))
    for cte in statement.args["with_"].expressions:
        if cte.alias != "per_user_raw":
            continue
        for projection in cte.this.expressions:
            metric = columns.get(projection.alias_or_name)
            if metric is not None:
                resolved = resolve_metric(metric, plan.convention)
                projection.comments = [sql_comment(f"{resolved}: {resolved.spec.formula}")]


def readable(statement: exp.Select, plan: Plan, metrics: Sequence[Metric], output: str,
             dialect: bool = True) -> exp.Select:
    """``statement`` (changed in place, and returned) made readable: what nothing reads taken out,
    each metric's formula beside it, and the :func:`header` above it."""
    drop_unread(without_empty(statement))
    annotate_formulas(statement, plan, metrics)
    statement.args["with_"].comments = header(plan, metrics, output, dialect)
    return statement


# Composed trees by plan kind: the composer reads of a dialect only whether it is DuckDB, and its rules for
# ids as text where ids are read as text (recsql.compose.plan.text_rules), so the other dialects share one
# tree per process, whose header then names the dialect asked (to_sql for several dialects, dbt's adapters).
_TREES: OrderedDict[tuple, exp.Select] = OrderedDict()
_TREES_KEPT = 64
_LOCK = threading.Lock()


def readable_statement(plan: Plan, metrics: Sequence[Metric], output: str = "summary", checks: bool = False,
                       dialect: bool = True) -> exp.Select:
    """The statement for ``plan`` and ``metrics`` as it is rendered: :func:`recsql.compose.compose`'s (``checks``
    as it takes them), made readable (:func:`recsql.compose.readable`: header, formulas, nothing unread; the
    header names the dialect with ``dialect``); a copy the caller may change."""
    metrics = list(metrics)
    plan = dataclasses.replace(plan, **text_rules(plan))
    kind = dataclasses.replace(plan, dialect="duckdb" if plan.dialect == "duckdb" else "")
    key = (statement_key(kind, metrics, output, "", False), checks)
    with _LOCK:
        tree = _TREES.get(key)
    if tree is None:
        tree = readable(compose(plan, metrics, output=output, checks=checks), plan, metrics, output, dialect=False)
        with _LOCK:
            _TREES[key] = tree
            while len(_TREES) > _TREES_KEPT:
                _TREES.popitem(last=False)
    statement = tree.copy()
    statement.args["with_"].comments = header(plan, metrics, output, dialect)
    return statement
