"""Conventions: one switch that reproduces another tool's numbers (docs/guide/conventions.md).

A convention sets, together, what tools disagree on: the tie rule (and whether tied ids compare as
text, as trec_eval's strcmp does), the population, how negative relevance is read, per-metric option
defaults (denominators, gains, ideal order, persistence), and per-measure rules where the tool
computes one measure unlike its others (``measures``: ir_measures serves RR@k and Judged@k from
providers that order ties the other way; Microsoft Recommenders' ndcg_at_k averages over another
population). Everything the user writes explicitly wins: a metric option
(``map(denominator=min)@10``) over the convention's default for that option, and ``ties=`` /
``population=`` over the convention's rule and its per-measure ones.

>>> from recsql.metrics import parse_metric
>>> str(resolve_metric(parse_metric("map@10"), "trec"))
'map(denominator=relevant)@10'
>>> str(resolve_metric(parse_metric("map(denominator=min)@10"), "trec"))
'map@10'
>>> CONVENTIONS["trec"].ties, CONVENTIONS["trec"].id_order
('item_id_desc', 'text')
>>> measure_rule(CONVENTIONS["ir_measures"].measures, parse_metric("RR@10")).ties   # its msmarco provider
'item_id'
>>> measure_rule(CONVENTIONS["ir_measures"].measures, parse_metric("RR")) is None  # pytrec_eval, as trec
True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import RecsqlError

if TYPE_CHECKING:  # a type only: recsql/metrics.py, a layer above, reads the conventions (parse_metrics)
    from .metrics import Metric


ID_ORDERS = ("native", "text")  # how tied items compare their ids: the column's own order, or its text bytewise


@dataclass(frozen=True)
class MeasureRule:
    """Where a tool computes one measure unlike its others (another provider or function of the
    tool): the tie rule, population or reading of negative judgments of that measure; None = the
    convention's. ``why`` names the tool's source."""

    ties: str | None = None
    population: str | None = None
    negative_unjudged: bool | None = None
    why: str = ""


@dataclass(frozen=True)
class Convention:
    """What a convention sets; ``why`` gives the reason (the tool's source) for each choice.

    ``measures`` holds the per-measure exceptions, keyed by metric name (every form of it) or
    ``name@k`` (only when asked with a cutoff)."""

    name: str
    tool: str
    ties: str = "item_id"
    id_order: str = "native"  # "text": tied ids compare as text, bytewise (strcmp), whatever the column type
    population: str = "relevant"
    negative_unjudged: bool = False
    gain_rule: str = "all"  # "relevant": judgments below the threshold give no gain
    every_truth_row_relevant: bool = False  # the tool reads no relevance: each truth row is a relevant item
    defaults: dict[str, dict[str, str]] = field(default_factory=dict)  # metric -> option -> value
    measures: dict[str, MeasureRule] = field(default_factory=dict)  # metric or metric@k -> its own rules
    why: dict[str, str] = field(default_factory=dict)


_TREC = Convention(
    name="trec",
    tool="trec_eval 9.0.8 / 10.0 with -c (pytrec_eval, ir_measures' default provider)",
    ties="item_id_desc",
    id_order="text",
    population="judged",
    negative_unjudged=True,
    defaults={"map": {"denominator": "relevant"}, "rbp": {"p": "0.9"}},
    why={
        "ties": "form_res_rels.c comp_sim_docno: score descending, then strcmp(docno) descending; docnos are "
                "text, so integer ids compare as their text ('9' after '10')",
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
    id_order="text",
    population="judged",
    gain_rule="relevant",
    defaults={"map": {"denominator": "relevant"}},
    why={
        "ties": "data_structures/common.py sort_dict_by_value: numba argsort of -score, which keeps the input "
                "order of tied docs for lists under 16 docs and follows no rule above; recsql uses item id "
                "ascending, ranx's result when a run is given to it in id order; ranx's ids are strings "
                "(data_structures/run.py from_df asserts an object dtype; numba typed dicts of str), so that "
                "order is their text's",
        "population": "Run.make_comparable: every qrels query, a query missing from the run scores 0",
        "gain": "metrics/common.py clean_qrels: judgments below the relevance level (-lN) are dropped before "
                "every metric, so they give no gain in ndcg and its ideal",
        "map": "average_precision.py: Σ precision at hits / R",
        "relevance": "Qrels truncates relevances to int (1.7 -> 1); recsql keeps them: round them first to match",
    },
)

# ir_measures 0.4 serves each measure from the first available provider of DefaultPipeline
# (__init__.py: runtime, pytrec_eval, cwl_eval, compat, pyndeval, judged, msmarco, gdeval, accuracy,
# ranx) that supports it (providers/fallback_provider.py). Without the optional cwl_eval and
# pyndeval packages: pytrec_eval serves P@k, R@k, AP, AP@k, nDCG, nDCG@k, RR (no cutoff), Rprec,
# Bpref, Success@k, NumRet, NumRel, NumQ, SetP, SetR, SetF, SetAP, IPrec, infAP
# (providers/pytrec_eval_provider.py SUPPORTED_MEASURES); judged serves Judged (judged_provider.py);
# msmarco serves RR@k, the only RR it can (pytrec_eval takes RR without a cutoff only:
# msmarco_provider.py); gdeval nDCG(dcg='exp-log2')@k and ERR@k; accuracy Accuracy; ranx what is left
# (nDCG(dcg='exp-log2') without a cutoff). recsql follows pytrec_eval's rules and the two Python
# providers' where they differ; exponential-gain nDCG (gdeval, ranx) is not claimed.
_IR_MEASURES_PYTHON_ORDER = (
    "sorted(run[q].items(), key=lambda x: (-x[1], x[0])): score descending, then doc_id ASCENDING as Python "
    "strings (code points, which is UTF-8 byte order)")
_IR_MEASURES = Convention(
    name="ir_measures",
    tool="ir_measures 0.4 with its default providers (pytrec_eval for P, R, AP, nDCG, RR, Success, Rprec, Bpref; "
         "msmarco for RR@k; judged for Judged@k)",
    ties="item_id_desc",
    id_order="text",
    population="judged",
    negative_unjudged=True,
    defaults={"map": {"denominator": "relevant"}, "judged": {"denominator": "list"}},
    measures={
        "mrr@k": MeasureRule(
            ties="item_id", negative_unjudged=False,
            why="RR@k is served by providers/msmarco_provider.py (pytrec_eval's provider takes RR without a cutoff "
                "only): MsMarcoEvaluator._iter_calc " + _IR_MEASURES_PYTHON_ORDER + "; the qrels are read as "
                "given (a negative judgment is just below rel), every qrels query counts (missing ones 0)"),
        "judged": MeasureRule(
            ties="item_id", negative_unjudged=False,
            why="Judged@k is served by providers/judged_provider.py: JudgedEvaluator._iter_calc "
                + _IR_MEASURES_PYTHON_ORDER + "; a document is judged iff it has a qrels row, a negative one included "
                "(`did in qid_qrels`)"),
    },
    why={
        "ties": "pytrec_eval = trec_eval 9.0.8 (form_res_rels.c): score descending, docno descending as strcmp; "
                "RR@k and Judged@k follow their own providers (measures)",
        "population": "providers/base.py Evaluator.iter_calc: every qrels query, missing ones count measure.DEFAULT = 0",
        "negative": "pytrec_eval: a negative qrels value is unjudged (trec_eval RELVALUE_UNJUDGED); not for Judged",
        "map": "providers/pytrec_eval_provider.py: AP -> map, AP@k -> map_cut_k: ÷ R",
        "ndcg": "providers/pytrec_eval_provider.py: nDCG -> ndcg, nDCG@k -> ndcg_cut_k (gain = level, log2)",
        "P": "providers/pytrec_eval_provider.py: P@k -> P_k (÷ k)",
        "R": "providers/pytrec_eval_provider.py: R@k -> recall_k",
        "RR": "providers/pytrec_eval_provider.py: RR (no cutoff) -> recip_rank",
        "Success": "providers/pytrec_eval_provider.py: Success@k -> success_k",
        "Rprec": "providers/pytrec_eval_provider.py: Rprec -> Rprec",
        "Bpref": "providers/pytrec_eval_provider.py: Bpref -> bpref",
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
    measures={
        "ndcg": MeasureRule(
            population="relevant",
            why="ndcg_at_k merges the hits with the WHOLE rating_true (how='outer') and takes the mean over its "
                "users: a truth user without recommendations is averaged in with DCG 0; a user of rating_pred "
                "only is not (every rating_true row being relevant, 'relevant' = every truth user)"),
    },
    why={
        "ties": "get_top_k_items: a stable sort on the prediction keeps tied items in input order; recsql uses "
                "item id ascending, MSR's result when the rows come in id order",
        "relevance": "merge_ranking_true_pred: every rating_true row is relevant, whatever its rating",
        "population": "merge_ranking_true_pred: precision_at_k, recall_at_k, map_at_k and map divide by n_users = "
                      "the users in both rating_true and rating_pred (common_users); not ndcg_at_k (measures)",
        "precision": "precision_at_k: hits in the top k ÷ k",
        "recall": "recall_at_k: hits in the top k ÷ the user's rating_true rows",
        "map": "map_at_k: ÷ min(k, R) (python_evaluation.map, ÷ R, is map(denominator=relevant))",
        "ndcg": "ndcg_at_k score_type='binary': binary gain, ideal = min(k, R) slots of gain 1 (its natural-log "
                "discount cancels in the ratio)",
    },
)

CONVENTIONS: dict[str, Convention] = {
    "recsql": Convention(name="recsql", tool="recsql's own definitions (README)"),
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
    resolved = type(metric)(metric.name, metric.k, **options)  # a Metric, built without importing its module
    # the options the user wrote stay written, those at their default too (split=interactions beside head_col)
    resolved.explicit = resolved.explicit | metric.explicit
    return resolved


def measure_rule(rules: dict[str, MeasureRule], metric: Metric) -> MeasureRule | None:
    """The rule of ``rules`` (a convention's ``measures``) for ``metric``: ``name@k`` when it has a
    cutoff, else (or when there is none) ``name``."""
    if metric.k is not None and f"{metric.name}@k" in rules:
        return rules[f"{metric.name}@k"]
    return rules.get(metric.name)


def measure_rules(name: str, *, ties_given: bool, population_given: bool) -> dict[str, MeasureRule]:
    """The convention's per-measure rules less what the user set for every metric: an explicit
    ``ties=`` or ``population=`` applies to every metric, so it replaces the per-measure one."""
    rules = {}
    for key, rule in convention(name).measures.items():
        rule = MeasureRule(ties=None if ties_given else rule.ties,
                           population=None if population_given else rule.population,
                           negative_unjudged=rule.negative_unjudged, why=rule.why)
        if (rule.ties, rule.population, rule.negative_unjudged) != (None, None, None):
            rules[key] = rule
    return rules
