"""The other tools' measure names recsql reads: trec_eval's and ir_measures', each with the recsql
metric and options it means (:data:`FOREIGN_NAMES`), and the names recsql refuses with what to
write instead (:data:`TREC_REFUSED`, :data:`IR_REFUSED`). How a name is read: recsql/names.py.

>>> next(n for n in TREC_NAMES if n.name == "map_cut").means
'map(denominator=relevant)@k'
"""
from __future__ import annotations

from dataclasses import dataclass

TREC = "trec_eval"
IRM = "ir_measures"


@dataclass(frozen=True)
class ForeignName:
    """One measure name of another tool and the recsql metric it means.

    ``cutoff``: how the tool takes a cutoff (trec_eval ``name_k`` / ``name.k``; ir_measures ``@k``):
    ``required``, ``optional`` or ``none``. ``options``: the recsql options that give the tool's
    definition (explicit: a convention does not override them). ``params``: the tool's parameters
    recsql reads (others are refused). ``shared``: the spelling is also a recsql name or alias (any
    case) with this meaning, so recsql's own name resolves it. ``examples``: parameter forms the
    tests compare with the tool."""

    tool: str
    name: str
    metric: str
    options: tuple[tuple[str, str], ...] = ()
    cutoff: str = "none"
    params: tuple[str, ...] = ()
    shared: bool = False
    note: str = ""
    examples: tuple[str, ...] = ()

    @property
    def written(self) -> str:
        """How the name is written, with its cutoff: ``P_k, P.k``, ``AP[@k]``, ``SetF``."""
        if self.tool == TREC:
            if self.cutoff == "required":
                return f"{self.name}_k, {self.name}.k"
            return f"{self.name}, {self.name}.x" if self.params else self.name
        return self.name + {"required": "@k", "optional": "[@k]", "none": ""}[self.cutoff]

    @property
    def means(self) -> str:
        """The recsql metric it means, canonical (``map(denominator=relevant)@k``)."""
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        at = {"required": "@k", "optional": "[@k]", "none": ""}[self.cutoff]
        return f"{self.metric}{f'({opts})' if opts else ''}{at}"


NDCG_TREC = (("gain", "linear"), ("discount", "log2"), ("ideal", "truth"))
AP_R = (("denominator", "relevant"),)

# trec_eval 9/10 (pytrec_eval-terrier): m_*.c of usnistgov/trec_eval. Measures with cutoffs are
# families: printed `P_10`, asked `-m P.10` or `-m P.5,10`.
TREC_NAMES: tuple[ForeignName, ...] = (
    ForeignName(TREC, "P", "precision", (("denominator", "k"),), "required",
                note="m_P.c: relevant in the top k ÷ k", examples=("P_{k}", "P.{k}", "P.1,{k}")),
    ForeignName(TREC, "recall", "recall", (), "required", note="m_recall.c: relevant in the top k ÷ R",
                examples=("recall_{k}", "recall.{k}")),
    ForeignName(TREC, "map_cut", "map", AP_R, "required", note="m_map_cut.c: AP of the top k ÷ R",
                examples=("map_cut_{k}", "map_cut.{k}", "map_cut.2,{k}")),
    ForeignName(TREC, "ndcg_cut", "ndcg", NDCG_TREC, "required",
                note="m_ndcg_cut.c: gain = relevance level, 1/log2(i+1), ideal from every judgment",
                examples=("ndcg_cut_{k}", "ndcg_cut.{k}")),
    ForeignName(TREC, "success", "hit_rate", (), "required", note="m_success.c: 1 if a relevant item is in the top k",
                examples=("success_{k}", "success.{k}")),
    ForeignName(TREC, "map", "map", (), shared=True,
                note="m_map.c: AP of the whole list ÷ R (recsql's map without a cutoff)"),
    ForeignName(TREC, "ndcg", "ndcg", (), shared=True, note="m_ndcg.c: nDCG of the whole list, gain = relevance level"),
    ForeignName(TREC, "Rprec", "r_precision", (), shared=True, note="m_Rprec.c"),
    ForeignName(TREC, "recip_rank", "mrr", (), shared=True, note="m_recip_rank.c: whole list"),
    ForeignName(TREC, "bpref", "bpref", (), shared=True, note="m_bpref.c"),
    ForeignName(TREC, "set_P", "set_p", (), shared=True, note="m_set_P.c"),
    ForeignName(TREC, "set_recall", "set_recall", (), shared=True, note="m_set_recall.c"),
    ForeignName(TREC, "set_F", "set_f", (), params=("beta",), shared=True,
                note="m_set_F.c: (x+1)·P·R / (x·P + R); -m set_F.x = set_f(beta=√x)",
                examples=("set_F.0.5", "set_F.4")),
    ForeignName(TREC, "num_ret", "num_ret", (), shared=True, note="m_num_ret.c; summary: sum"),
    ForeignName(TREC, "num_rel", "num_rel", (), shared=True, note="m_num_rel.c; summary: sum"),
    ForeignName(TREC, "num_rel_ret", "num_rel_ret", (), shared=True, note="m_num_rel_ret.c; summary: sum"),
    ForeignName(TREC, "rbp", "rbp", (), shared=True,
                note="trec_eval 10 m_rbp.c (not in pytrec_eval): p = 0.9, which convention='trec' sets; "
                     "recsql's own rbp defaults to p = 0.8"),
)

# ir_measures 0.4 (ir_measures/measures/*.py), computed by its default providers: pytrec_eval (P, R,
# AP, nDCG, RR, Success, Rprec, Bpref, Num*, Set*), msmarco (RR@k), judged (Judged@k), gdeval
# (ERR@k, nDCG(dcg='exp-log2')@k).
COMMON = ("rel", "judged_only")
IR_NAMES: tuple[ForeignName, ...] = (
    *(ForeignName(IRM, n, "precision", (), "required", ("cutoff", *COMMON), shared=True,
                  note="P@k (pytrec_eval P_k): ÷ k") for n in ("P", "Precision")),
    *(ForeignName(IRM, n, "recall", (), "required", ("cutoff", *COMMON), shared=True,
                  note="R@k (pytrec_eval recall_k)") for n in ("R", "Recall")),
    *(ForeignName(IRM, n, "map", AP_R, "optional", ("cutoff", *COMMON),
                  note="AP (pytrec_eval map), AP@k (map_cut_k): ÷ R, unlike recsql's ap@k / map@k (÷ min(k, R))")
      for n in ("AP", "MAP")),
    *(ForeignName(IRM, n, "mrr", (), "optional", ("cutoff", *COMMON), shared=True,
                  note="RR (pytrec_eval recip_rank); RR@k (msmarco provider)") for n in ("RR", "MRR")),
    *(ForeignName(IRM, n, "ndcg", (), "optional", ("cutoff", "dcg", "gains", "judged_only"), shared=True,
                  note="nDCG[@k] (pytrec_eval ndcg, ndcg_cut_k): gain = relevance; "
                       "dcg='exp-log2' (gdeval): 2^rel − 1",
                  examples=(f"{n}(dcg='exp-log2')", f"{n}(dcg='exp-log2')@{{k}}", f"{n}(dcg='log2')@{{k}}"))
      for n in ("nDCG", "NDCG")),
    ForeignName(IRM, "Success", "hit_rate", (), "required", ("cutoff", *COMMON), shared=True,
                note="pytrec_eval success_k"),
    *(ForeignName(IRM, n, "r_precision", (), params=COMMON, shared=True, note="pytrec_eval Rprec")
      for n in ("Rprec", "RPrec")),
    *(ForeignName(IRM, n, "bpref", (), params=("rel",), shared=True, note="pytrec_eval bpref")
      for n in ("Bpref", "BPref")),
    ForeignName(IRM, "Judged", "judged", (("denominator", "list"),), "required", ("cutoff",),
                note="judged provider: judged items in the top k ÷ min(k, n), unlike recsql's judged@k (÷ k)"),
    ForeignName(IRM, "NumRet", "num_ret", (), params=("rel",), note="pytrec_eval num_ret; summary: sum"),
    ForeignName(IRM, "NumRelRet", "num_rel_ret", (), params=("rel",),
                note="NumRet(rel=1): pytrec_eval num_rel_ret; summary: sum"),
    ForeignName(IRM, "NumRel", "num_rel", (), params=("rel",), note="pytrec_eval num_rel; summary: sum"),
    ForeignName(IRM, "SetP", "set_p", (), params=("rel", "relative", "judged_only"), note="pytrec_eval set_P"),
    ForeignName(IRM, "SetR", "set_recall", (), params=("rel",), note="pytrec_eval set_recall"),
    ForeignName(IRM, "SetF", "set_f", (), params=("rel", "beta", "judged_only"),
                note="pytrec_eval set_F: SetF(beta=x) = (x+1)·P·R / (x·P + R) = set_f(beta=√x)",
                examples=("SetF(beta=0.5)", "SetF(beta=2.0)")),
    ForeignName(IRM, "ERR", "err", (("max_grade", "4"),), "optional", ("cutoff",),
                note="gdeval: R = (2^g − 1) / 2^4 (grades 0..4), unlike recsql's err (÷ 2^(largest grade in truth))"),
    # the intent-aware measures (pyndeval provider: ndeval), read from the intents input
    *(ForeignName(IRM, n, "alpha_ndcg", (), "required", ("cutoff", "alpha", *COMMON), shared=n.isascii(),
                  note="ndeval alpha-nDCG: the greedy ideal list", examples=(f"{n}@{{k}}", f"{n}(alpha=0.8)@{{k}}"))
      for n in ("alpha_nDCG", "α_nDCG")),
    *(ForeignName(IRM, n, "alpha_dcg", (), "required", ("cutoff", "alpha", *COMMON), shared=n.isascii(),
                  note="ndeval alpha-DCG, normalised by its largest value in any collection (ndeval leaves @1 "
                       "unnormalised: a list's raw α-DCG@1, up to |S|)") for n in ("alpha_DCG", "α_DCG")),
    ForeignName(IRM, "ERR_IA", "err_ia", (), "required", ("cutoff", *COMMON), shared=True,
                note="ndeval ERR-IA (α = 0.5), normalised by its largest value (ndeval leaves @1 unnormalised)"),
    ForeignName(IRM, "nERR_IA", "nerr_ia", (), "required", ("cutoff", *COMMON), shared=True,
                note="ndeval nERR-IA: over the greedy ideal list's"),
    ForeignName(IRM, "NRBP", "nrbp", (), params=("alpha", "beta", "rel"), shared=True, note="ndeval NRBP: the whole list"),
    ForeignName(IRM, "P_IA", "p_ia", (), "required", ("cutoff", *COMMON), shared=True, note="ndeval P-IA"),
    ForeignName(IRM, "StRecall", "s_recall", (), "required", ("cutoff", "rel"), note="ndeval strec"),
    *(ForeignName(IRM, n, "map_ia", (), params=COMMON, shared=True, note="ndeval MAP-IA: the whole list")
      for n in ("AP_IA", "MAP_IA")),
)

FOREIGN_NAMES: tuple[ForeignName, ...] = TREC_NAMES + IR_NAMES

# Names of the tools that recsql does not implement, with what to write instead.
NOT_IMPLEMENTED = "is not implemented in recsql"
TREC_REFUSED: dict[str, str] = {
    "num_q": "counts queries: read the summary's n_users column",
    "runid": "is not a measure",
    "unj": "(unjudged in the top k ÷ k) is not a recsql metric: recsql's judged@k is 1 − unj_k",
    "Rprec_mult": NOT_IMPLEMENTED + "; recsql has r_precision (Rprec)",
    **{name: NOT_IMPLEMENTED for name in (
        "gm_map", "gm_bpref", "infAP", "iprec_at_recall", "11pt_avg", "utility", "Rndcg", "ndcg_rel", "binG", "G",
        "relative_P", "set_map", "set_relative_P", "num_nonrel_judged_ret", "num_nonjudged_ret", "rbp_resid",
        "relstring", "P_avgjg", "map_avgjg", "Rprec_mult_avgjg", "yaap", "Runj")},
}
IR_REFUSED: dict[str, str] = {
    "RBP": "without rel= uses graded relevance, which recsql's rbp does not (it counts items with relevance >= "
           "threshold), and with rel= it is binary at its own threshold; write rbp(p=0.8) with threshold= "
           "(ir_measures' RBP(rel=T, p=0.8) for threshold T)",
    "Accuracy": "(a relevant item ranked above a non-relevant one, among the retrieved) "
                + NOT_IMPLEMENTED + "; recsql's accuracy@k (lower case) is classification accuracy and auc@k the "
                "pairwise ranking accuracy",
    "SetRelP": NOT_IMPLEMENTED + " (SetP(relative=True))",
    "SetAP": NOT_IMPLEMENTED + " (trec_eval set_map)",
    "NumQ": "counts queries: read the summary's n_users column",
    **{name: NOT_IMPLEMENTED for name in (
        "infAP", "IPrec", "BPM", "SDCG", "NERR8", "NERR9", "NERR10", "NERR11", "INST", "INSQ", "Compat")},
    "nNRBP": "(NRBP of the whole list over the whole greedy ideal list's) has no cutoff, and recsql unrolls the "
             "greedy ideal list to a cutoff: write nnrbp@k (NRBP@k over the ideal list's NRBP@k, k <= 100), "
             "ndeval's nNRBP when no list is longer than k and no user has more than k relevant items",
}
