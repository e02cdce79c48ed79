"""Plain-Python reference oracle for recsql's accuracy metrics.

Written only from the definitions in the documentation (docs/guide/inputs.md, populations.md,
metrics.md, conventions.md) and its metric-naming rules, independently of the SQL implementation, so that tests
can compare the two.
Standard library only; clarity over speed.
"""
from __future__ import annotations

import itertools
import math

DEFAULT_OPTIONS = {
    "judged": {"denominator": "k"},
    "set_f": {"beta": 1.0},
    "rbp": {"p": 0.8},
    "precision": {"denominator": "k"},
    "map": {"denominator": "min"},
    "cg": {"gain": "linear"},
    "dcg": {"gain": "linear", "discount": "log2"},
    "idcg": {"gain": "linear", "discount": "log2", "ideal": "truth"},
    "ndcg": {"gain": "linear", "discount": "log2", "ideal": "truth"},
}

ALIASES = {"hr": "hit_rate", "success": "hit_rate", "ap": "map", "rr": "mrr", "recip_rank": "mrr", "p": "precision",
           "r": "recall", "rprec": "r_precision"}
NO_CUTOFF = {"r_precision", "num_rel", "set_p", "set_recall", "set_f"}  # always the whole list
OPTIONAL_CUTOFF = {"map", "ndcg", "idcg", "dcg", "cg", "mrr", "bpref", "num_ret", "num_rel_ret", "rbp"}


# --------------------------------------------------------------------------- helpers

def _relevance(row):
    """Truth relevance; a missing (or None) relevance counts as 1 (docs/guide/inputs.md: default 1)."""
    value = row.get("relevance")
    return 1.0 if value is None else float(value)


def _gain(relevance, kind):
    """docs/guide/populations.md, step 4: linear = max(rel, 0) (unjudged -> 0);
    exponential = 2^linear - 1. ("binary" = hit_i needs the threshold: see _User.gains.)"""
    g = 0.0 if relevance is None else max(float(relevance), 0.0)
    return {"linear": lambda: g, "exponential": lambda: 2.0 ** g - 1.0}[kind]()


def _discount(position, kind):
    """Multiplier at 1-based position i: log2 = 1/log2(i+1); jarvelin = 1/max(1, log2 i);
    a callable is used as-is, f(i)."""
    if callable(kind):
        return float(kind(position))
    return {
        "log2": lambda i: 1.0 / math.log2(i + 1),
        "jarvelin": lambda i: 1.0 / max(1.0, math.log2(i)),
    }[kind](position)


def _dcg(gains, discount):
    """Σ_i g_i · disc(i) over 1-based positions i."""
    return sum(g * _discount(i, discount) for i, g in enumerate(gains, start=1))


def _div(num, den):
    """num / den, 0 when den is 0."""
    return num / den if den else 0.0


class _User:
    """One user's ranked, cut and judged list plus their truth (docs/guide/populations.md, steps 1-4).

    rels[i]  = relevance at position i+1 (None = unjudged), positions 1..min(k, n)
    hits[i]  = 1 if position i+1 is relevant (relevance >= threshold) else 0
    prices[i]= price at position i+1 (missing -> 0)
    truth    = {item_id: relevance}; R = number of relevant truth items
    full_hits= hits over the whole (uncut) list, for r_precision
    """

    def __init__(self, ordered_items, truth, k, threshold, items):
        self.k = k
        self.truth = truth
        self.threshold = threshold
        self.n = len(ordered_items)
        self.R = sum(1 for r in truth.values() if r >= threshold)
        full_rels = [truth.get(item) for item in ordered_items]
        self.full_hits = [int(r is not None and r >= threshold) for r in full_rels]
        cut = ordered_items if k is None else ordered_items[:k]
        self.rels = full_rels[: len(cut)]
        self.hits = self.full_hits[: len(cut)]
        self.full_rels = full_rels
        # judged non-relevant truth items (trec_eval bpref's N)
        self.N = sum(1 for r in truth.values() if r < threshold)
        prices = items or {}
        self.prices = [float(prices.get(item) or 0.0) for item in cut]
        self.relevant_truth_price = sum(
            float(prices.get(item) or 0.0) for item, r in truth.items() if r >= threshold
        )

    def gains(self, kind):
        """Gains of positions 1..min(k, n); "binary" = hit_i (1 if relevant else 0)."""
        if kind == "binary":
            return [float(h) for h in self.hits]
        return [_gain(r, kind) for r in self.rels]

    def truth_gains(self, kind):
        """Gains of every truth row; "binary" = 1 if relevance >= threshold else 0."""
        if kind == "binary":
            return [float(r >= self.threshold) for r in self.truth.values()]
        return [_gain(r, kind) for r in self.truth.values()]


# --------------------------------------------------------------------------- metrics
# Each takes (u: _User, opts: dict) and returns the per-user value.

def hit_rate(u, o):
    """1 if hits@k >= 1 else 0."""
    return 1.0 if sum(u.hits) >= 1 else 0.0


def precision(u, o):
    """hits@k / k; denominator="list": hits@k / min(k, n) (0 when n = 0)."""
    den = {"k": u.k, "list": min(u.k, u.n)}[o["denominator"]]
    return _div(sum(u.hits), den)


def recall(u, o):
    """hits@k / R (0 when R = 0)."""
    return _div(sum(u.hits), u.R)


def f1(u, o):
    """2·P·R / (P + R), 0 when P + R = 0; P = precision@k (÷ k), R = recall@k."""
    p, r = precision(u, {"denominator": "k"}), recall(u, {})
    return _div(2 * p * r, p + r)


def map_(u, o):
    """AP = Σ_{i<=k} hit_i · (hits@i / i) / D, 0 when D = 0.
    D: "min" = min(k, R); "relevant" = R; "hits" = hits@k; "k" = k."""
    total, running = 0.0, 0
    for i, h in enumerate(u.hits, start=1):
        running += h
        total += h * running / i
    den = {"min": u.R if u.k is None else min(u.k, u.R), "relevant": u.R, "hits": sum(u.hits), "k": u.k}
    return _div(total, den[o["denominator"]])


def mrr(u, o):
    """1 / (first relevant position <= k), else 0."""
    return next((1.0 / i for i, h in enumerate(u.hits, start=1) if h), 0.0)


def cg(u, o):
    """Σ_{i<=k} g_i."""
    return sum(u.gains(o["gain"]))


def dcg(u, o):
    """Σ_{i<=k} g_i · disc(i)."""
    return _dcg(u.gains(o["gain"]), o["discount"])


def _ideal_gains(u, o):
    """Gains of the ideal order, best first, at most k of them:
    truth   = every truth row's gain, sorted descending, top k;
    list    = the user's own top-k gains re-sorted descending;
    binary  = min(k, R) slots of gain 1 (R slots without a cutoff);
    k_slots = k slots of gain 1."""
    ideal = o["ideal"]
    if ideal == "truth":
        return sorted(u.truth_gains(o["gain"]), reverse=True)[: u.k]
    return {
        "list": lambda: sorted(u.gains(o["gain"]), reverse=True),
        "binary": lambda: [1.0] * (u.R if u.k is None else min(u.k, u.R)),
        "k_slots": lambda: [1.0] * u.k,
    }[ideal]()


def idcg(u, o):
    """DCG@k of the ideal order (see _ideal_gains)."""
    return _dcg(_ideal_gains(u, o), o["discount"])


def ndcg(u, o):
    """DCG@k / IDCG@k, 0 when IDCG = 0. With ideal="binary" or "k_slots" (ideal slots of gain 1)
    the numerator uses binary gains (hit_i) instead of the gain function, so nDCG <= 1; otherwise
    it is the ordinary DCG@k."""
    gains = [float(h) for h in u.hits] if o["ideal"] in ("binary", "k_slots") else u.gains(o["gain"])
    return _div(_dcg(gains, o["discount"]), idcg(u, o))


def r_precision(u, o):
    """hits@R / R (0 when R = 0)."""
    return _div(sum(u.full_hits[: u.R]), u.R)


def money_precision(u, o):
    """Σ_{i<=k} hit_i·price_i / Σ_{i<=k} price_i (0 when the denominator is 0)."""
    return _div(sum(h * p for h, p in zip(u.hits, u.prices)), sum(u.prices))


def money_recall(u, o):
    """Σ_{i<=k} hit_i·price_i / Σ_{relevant truth items} price (0 when the denominator is 0)."""
    return _div(sum(h * p for h, p in zip(u.hits, u.prices)), u.relevant_truth_price)


# ---- trec_eval measures (trec_eval 10.0 source: m_bpref.c, m_num_*.c, m_set_*.c, m_unjudged.c, m_rbp.c)

def bpref(u, o):
    """(1/R) Σ over relevant retrieved i (within k) of 1 - min(nonrel above i, R) / min(N, R), where
    nonrel counts judged non-relevant items (truth rows below the threshold); the term is 1 when no
    judged non-relevant item is above i. Unjudged items are ignored. 0 when R = 0."""
    total, nonrel = 0.0, 0
    for r in u.rels:
        if r is None:
            continue
        if r < u.threshold:
            nonrel += 1
        else:
            total += 1.0 - min(nonrel, u.R) / min(u.N, u.R) if nonrel else 1.0
    return _div(total, u.R)


def num_ret(u, o):
    """Length of the (cut) list."""
    return float(len(u.rels))


def num_rel(u, o):
    """R."""
    return float(u.R)


def num_rel_ret(u, o):
    """hits in the (cut) list."""
    return float(sum(u.hits))


def set_p(u, o):
    """hits / n over the whole list (0 for an empty list)."""
    return _div(sum(u.full_hits), u.n)


def set_recall(u, o):
    """hits / R over the whole list."""
    return _div(sum(u.full_hits), u.R)


def set_f(u, o):
    """(1 + b²)·P·R / (b²·P + R) with P = set_p, R = set_recall; 0 when the denominator is 0."""
    b2 = float(o["beta"]) ** 2
    p, r = set_p(u, o), set_recall(u, o)
    return _div((1 + b2) * p * r, b2 * p + r)


def judged(u, o):
    """Items with a truth row among the top k, ÷ k (denominator "k") or ÷ min(k, n) ("list")."""
    den = {"k": u.k, "list": min(u.k, u.n)}[o["denominator"]]
    return _div(sum(1 for r in u.rels if r is not None), den)


def rbp(u, o):
    """(1 - p) · Σ_{i <= k} hit_i · p^(i-1)."""
    p = float(o["p"])
    return (1 - p) * sum(h * p ** (i - 1) for i, h in enumerate(u.hits, start=1))


METRICS = {
    "bpref": bpref,
    "num_ret": num_ret,
    "num_rel": num_rel,
    "num_rel_ret": num_rel_ret,
    "set_p": set_p,
    "set_recall": set_recall,
    "set_f": set_f,
    "judged": judged,
    "rbp": rbp,
    "hit_rate": hit_rate,
    "precision": precision,
    "recall": recall,
    "f1": f1,
    "map": map_,
    "mrr": mrr,
    "cg": cg,
    "dcg": dcg,
    "idcg": idcg,
    "ndcg": ndcg,
    "r_precision": r_precision,
    "money_precision": money_precision,
    "money_recall": money_recall,
}


# --------------------------------------------------------------------------- entry points

def tie_key(item, id_order="native"):
    """What tied items are ordered by: the id itself, or (id_order "text": trec_eval's strcmp,
    Python's str order in ir_measures' providers) its text, compared bytewise (UTF-8 bytes, which
    is code point order), so that 10 < 9."""
    return str(item).encode("utf-8") if id_order == "text" else item


def ranked_groups(recs, use_rank=False, ties="item_id", id_order="native"):
    """{user_id: [[item_id, ...], ...]}: the user's tie groups (equal rank, or equal score) best
    first, each group ordered by item_id ascending ("item_id") or descending ("item_id_desc"),
    comparing the ids as they are or as text (see tie_key)."""
    by_user = {}
    for row in recs:
        by_user.setdefault(row["user_id"], []).append(row)
    order = (lambda r: r["rank"]) if use_rank else (lambda r: -r["score"])
    lists = {}
    for user, rows in by_user.items():
        groups = {}
        for r in rows:
            groups.setdefault(order(r), []).append(r["item_id"])
        lists[user] = [sorted(groups[key], key=lambda i: tie_key(i, id_order), reverse=ties == "item_id_desc")
                       for key in sorted(groups)]
    return lists


def ranked_lists(recs, use_rank=False, ties="item_id", id_order="native"):
    """{user_id: [item_id, ...]} in position order (docs/guide/populations.md, step 1): rank
    ascending (use_rank) or score descending, ties by item_id ascending (or descending); positions
    are then renumbered 1..n."""
    return {user: [i for g in groups for i in g] for user, groups in ranked_groups(recs, use_rank, ties, id_order).items()}


def orderings(groups):
    """Every order of a list whose tie groups may each be permuted (ties="average")."""
    return [[i for g in combo for i in g] for combo in itertools.product(*(itertools.permutations(g) for g in groups))]


def reference(recs, truth, name, k=None, options=None, *, items=None, threshold=1.0,
              population="relevant", use_rank=False, ties="item_id", negative_unjudged=False,
              gain_relevant_only=False, id_order="native", population_negative_unjudged=None) -> dict:
    """Per-user metric values for ONE run: {user_id: float} for every user of the population.

    population "relevant": users with >= 1 truth item with relevance >= threshold (users without
    recommendations included; they score per formula on an empty list); "intersection": those of
    them that also have recommendations; "judged": every user with a truth row (whatever its relevance:
    trec_eval -c counts a qrels query judged only with negative, unjudged, values).
    ties: "item_id" / "item_id_desc" break equal scores by item id; "average" is the mean of the
    metric over every order of the tied items (enumerated).
    negative_unjudged: truth rows with relevance < 0 are ignored (trec_eval's "unjudged").
    population_negative_unjudged: whether the population is formed without those rows (default:
    negative_unjudged); a metric a convention reads with them (ir_measures' Judged) keeps the
    convention's population.
    gain_relevant_only: truth rows below the threshold give no gain (ranx).
    id_order: "text" compares tied ids as text (trec_eval, ir_measures, ranx; see tie_key).
    """
    name = ALIASES.get(name, name)
    metric = METRICS[name]
    if k is None and name not in NO_CUTOFF | OPTIONAL_CUTOFF:
        raise ValueError(f"{name} needs a cutoff k")
    opts = {**DEFAULT_OPTIONS.get(name, {}), **(options or {})}
    unknown = set(opts) - set(DEFAULT_OPTIONS.get(name, {}))
    if unknown:
        raise ValueError(f"unknown options for {name}: {sorted(unknown)}")

    pairs = [(r["user_id"], r["item_id"]) for r in recs]
    if len(pairs) != len(set(pairs)):
        raise ValueError("duplicate (user, item) in recs")
    truth_by_user = {}
    for row in truth:
        user_truth = truth_by_user.setdefault(row["user_id"], {})
        if row["item_id"] in user_truth:
            raise ValueError("duplicate (user, item) in truth")
        user_truth[row["item_id"]] = _relevance(row)
    without_negative = {u: {i: r for i, r in t.items() if r >= 0} for u, t in truth_by_user.items()}
    without_negative = {u: t for u, t in without_negative.items() if t}
    population_negative_unjudged = negative_unjudged if population_negative_unjudged is None \
        else population_negative_unjudged
    population_truth = without_negative if population_negative_unjudged else truth_by_user
    every_truth_user = list(truth_by_user)
    if negative_unjudged:
        truth_by_user = without_negative

    groups = ranked_groups(recs, use_rank, "item_id" if ties == "average" else ties, id_order)
    if population == "judged":  # a user judged only with unjudged (negative) values too: trec_eval -c
        users = every_truth_user
    else:
        users = [u for u, t in population_truth.items() if any(r >= threshold for r in t.values())]
    if population == "intersection":
        users = [u for u in users if u in groups]
    elif population not in ("relevant", "judged"):
        raise ValueError(f"unknown population {population!r}")

    def value(user, ordered):
        t = truth_by_user.get(user, {})
        if gain_relevant_only:  # judgments below the threshold keep their hit/judged role but give no gain
            u = _User(ordered, t, k, threshold, items)
            u.rels = [r if r is None or r >= threshold else min(r, 0.0) for r in u.rels]
            u.truth = {i: (r if r >= threshold else min(r, 0.0)) for i, r in t.items()}
            return float(metric(u, opts))
        return float(metric(_User(ordered, t, k, threshold, items), opts))

    result = {}
    for user in users:
        user_groups = groups.get(user, [])
        orders = orderings(user_groups) if ties == "average" else [[i for g in user_groups for i in g]]
        result[user] = sum(value(user, o) for o in orders) / len(orders)
    return result


def mean(values: dict) -> float | None:
    """Mean of the per-user values; None for an empty population."""
    return sum(values.values()) / len(values) if values else None


def summarize(values: dict, how: str = "mean") -> float | None:
    """The summary of per-user values: their mean, or their sum for the counts (num_rel, ...,
    as trec_eval prints them); None for an empty population."""
    return (sum(values.values()) if how == "sum" else mean(values)) if values else None
