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
    gain_rule: str = "all"  # "relevant": judgments below the threshold give no gain
    every_truth_row_relevant: bool = False  # the tool reads no relevance: each truth row is a relevant item
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

_RANX = Convention(
    name="ranx",
    tool="ranx 0.3 (Run/Qrels objects)",
    ties="item_id",
    population="judged",
    gain_rule="relevant",
    defaults={"map": {"denominator": "relevant"}},
    why={
        "ties": "data_structures/common.py sort_dict_by_value: numba argsort of -score, which keeps the input "
                "order of tied docs for lists under 16 docs and follows no rule above; recsql uses item id "
                "ascending, ranx's result when a run is given to it in id order",
        "population": "Run.make_comparable: every qrels query, a query missing from the run scores 0",
        "gain": "metrics/common.py clean_qrels: judgments below the relevance level (-lN) are dropped before "
                "every metric, so they give no gain in ndcg and its ideal",
        "map": "average_precision.py: Σ precision at hits / R",
        "relevance": "Qrels truncates relevances to int (1.7 -> 1); recsql keeps them: round them first to match",
    },
)

_IR_MEASURES = Convention(
    name="ir_measures",
    tool="ir_measures 0.4 with its default providers (pytrec_eval for P, R, AP, nDCG, RR, Success, Rprec, Bpref)",
    ties="item_id_desc",
    population="judged",
    negative_unjudged=True,
    defaults={"map": {"denominator": "relevant"}, "judged": {"denominator": "list"}},
    why={
        "ties": "pytrec_eval = trec_eval 9.0.8: score descending, docno descending (its msmarco RR@k and Judged "
                "providers sort docno ascending: pass ties='item_id' for those)",
        "population": "providers/base.py iter_calc: every qrels query, missing ones count 0",
        "map": "trec_eval map / map_cut: ÷ R",
        "judged": "providers/judged_provider.py: judged docs in the top min(k, n), ÷ min(k, n)",
    },
)

_REPLAY = Convention(
    name="replay",
    tool="RePlay 0.22 (replay.metrics)",
    ties="item_id_desc",
    population="relevant",
    every_truth_row_relevant=True,
    defaults={"ndcg": {"ideal": "binary"}, "map": {"denominator": "min"}},
    why={
        "ties": "base_metric.py: sort_values([rating, item], ascending=False): score, then item id descending",
        "relevance": "ground truth is (query, item) pairs; ratings are never read: every row is relevant",
        "population": "_dict_call over the ground-truth users; a user without recommendations scores 0",
        "map": "map.py: ÷ min(k, R)",
        "ndcg": "ndcg.py: binary gain, ideal = min(k, R) slots of gain 1",
    },
)

_MSR = Convention(
    name="msr",
    tool="Microsoft Recommenders 1.2 (recommenders.evaluation.python_evaluation)",
    ties="item_id",
    population="intersection",
    every_truth_row_relevant=True,
    defaults={"ndcg": {"ideal": "binary"}, "map": {"denominator": "min"}},
    why={
        "ties": "get_top_k_items: a stable sort on the prediction keeps tied items in input order; recsql uses "
                "item id ascending, MSR's result when the rows come in id order",
        "relevance": "merge_ranking_true_pred: every rating_true row is relevant, whatever its rating",
        "population": "merge_ranking_true_pred: users in both rating_true and rating_pred (common_users)",
        "map": "map_at_k: ÷ min(k, R) (python_evaluation.map, ÷ R, is map(denominator=relevant))",
        "ndcg": "ndcg_at_k score_type='binary': binary gain, ideal = min(k, R) slots of gain 1",
    },
)

CONVENTIONS: dict[str, Convention] = {
    "recsql": Convention(name="recsql", tool="recsql's own definitions (SPEC §2-4)"),
    "trec": _TREC,
    "ranx": _RANX,
    "ir_measures": _IR_MEASURES,
    "replay": _REPLAY,
    "msr": _MSR,
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
