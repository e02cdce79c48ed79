"""Conventions: one switch that reproduces another tool's numbers (SPEC §5).

A convention sets, together, what tools disagree on: the tie rule, the population, how negative
relevance is read, and per-metric option defaults (denominators, gains, ideal order, persistence).
Everything the user writes explicitly wins: a metric option (``map(denominator=min)@10``) over the
convention's default for that option, and ``ties=`` / ``population=`` over the convention's rule.

>>> str(resolve_metric(parse_metric("map@10"), "trec"))
'map(denominator=relevant)@10'
>>> str(resolve_metric(parse_metric("map(denominator=min)@10"), "trec"))
'map@10'
>>> CONVENTIONS["trec"].ties
'item_id_desc'
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import RecsqlError
from .metrics import Metric, parse_metric  # noqa: F401  (parse_metric: doctest)


@dataclass(frozen=True)
class Convention:
    """What a convention sets; ``why`` gives the reason (the tool's source) for each choice."""

    name: str
    tool: str
    ties: str = "item_id"
    population: str = "relevant"
    negative_unjudged: bool = False
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)  # metric -> option -> value
    why: dict[str, str] = field(default_factory=dict)


_TREC = Convention(
    name="trec",
    tool="trec_eval 9.0.8 / 10.0 with -c (pytrec_eval, ir_measures' default provider)",
    ties="item_id_desc",
    population="judged",
    negative_unjudged=True,
    defaults={"map": {"denominator": "relevant"}, "rbp": {"p": "0.9"}},
    why={
        "ties": "form_res_rels.c comp_sim_docno: score descending, then strcmp(docno) descending",
        "population": "-c: every query of the qrels is averaged, a query missing from the run scores 0",
        "negative": "form_res_rels.c: a qrels value < 0 is 'in the pool but unjudged' (RELVALUE_UNJUDGED)",
        "map": "m_map.c: AP divides by the number of relevant documents R",
        "ndcg": "m_ndcg.c: gain = the relevance level, ideal from every judged document",
        "rbp": "m_rbp.c: p = 0.9 by default",
    },
)

CONVENTIONS: dict[str, Convention] = {
    "recsql": Convention(name="recsql", tool="recsql's own definitions (SPEC §2-4)"),
    "trec": _TREC,
}


def convention(name: str) -> Convention:
    """The convention called ``name``; a clear error lists the valid ones."""
    try:
        return CONVENTIONS[name]
    except (KeyError, TypeError):
        raise RecsqlError(f"convention={name!r} is not valid; choose one of {', '.join(CONVENTIONS)}") from None


def resolve_metric(metric: Metric, name: str) -> Metric:
    """``metric`` with the convention's defaults for the options the user did not write."""
    defaults = convention(name).defaults.get(metric.name, {})
    options = dict(metric.options)
    options.update({opt: value for opt, value in defaults.items() if opt not in metric.explicit})
    return Metric(metric.name, metric.k, **options)
