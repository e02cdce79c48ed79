"""Plain-Python reference oracle for recsql's accuracy metrics.

Written only from /work/shared/SPEC.md sections 1-3 and the metric-naming conventions,
independently of the SQL implementation, so that tests can compare the two.
Standard library only; clarity over speed.
"""
from __future__ import annotations

import math

DEFAULT_OPTIONS = {
    "precision": {"denominator": "k"},
    "map": {"denominator": "min"},
    "cg": {"gain": "linear"},
    "dcg": {"gain": "linear", "discount": "log2"},
    "idcg": {"gain": "linear", "discount": "log2", "ideal": "truth"},
    "ndcg": {"gain": "linear", "discount": "log2", "ideal": "truth"},
}

ALIASES = {"hr": "hit_rate", "success": "hit_rate", "ap": "map", "rr": "mrr"}


# --------------------------------------------------------------------------- helpers

def _relevance(row):
    """Truth relevance; a missing (or None) relevance counts as 1 (SPEC 1: default 1)."""
    value = row.get("relevance")
    return 1.0 if value is None else float(value)


def _gain(relevance, kind):
    """SPEC 2.5: linear = max(rel, 0) (unjudged -> 0); exponential = 2^linear - 1.
    ("binary" = hit_i needs the threshold: see _User.gains.)"""
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
    """One user's ranked, cut and judged list plus their truth (SPEC 2.2-2.5).

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
    den = {"min": min(u.k, u.R), "relevant": u.R, "hits": sum(u.hits), "k": u.k}
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
    binary  = min(k, R) slots of gain 1;
    k_slots = k slots of gain 1."""
    ideal = o["ideal"]
    if ideal == "truth":
        return sorted(u.truth_gains(o["gain"]), reverse=True)[: u.k]
    return {
        "list": lambda: sorted(u.gains(o["gain"]), reverse=True),
        "binary": lambda: [1.0] * min(u.k, u.R),
        "k_slots": lambda: [1.0] * u.k,
    }[ideal]()


def idcg(u, o):
    """DCG@k of the ideal order (see _ideal_gains)."""
    return _dcg(_ideal_gains(u, o), o["discount"])


def ndcg(u, o):
    """DCG@k / IDCG@k, 0 when IDCG = 0. With ideal="binary" the numerator uses binary gains
    (hit_i) instead of the gain function; otherwise it is the ordinary DCG@k."""
    gains = [float(h) for h in u.hits] if o["ideal"] == "binary" else u.gains(o["gain"])
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


METRICS = {
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

def ranked_lists(recs, use_rank=False):
    """{user_id: [item_id, ...]} in position order (SPEC 2.2): rank ascending (use_rank) or
    score descending, ties by item_id ascending; positions are then renumbered 1..n."""
    by_user = {}
    for row in recs:
        by_user.setdefault(row["user_id"], []).append(row)
    key = (lambda r: (r["rank"], r["item_id"])) if use_rank else (lambda r: (-r["score"], r["item_id"]))
    return {user: [r["item_id"] for r in sorted(rows, key=key)] for user, rows in by_user.items()}


def reference(recs, truth, name, k=None, options=None, *, items=None, threshold=1.0,
              population="relevant", use_rank=False) -> dict:
    """Per-user metric values for ONE run: {user_id: float} for every user of the population.

    population "relevant": users with >= 1 truth item with relevance >= threshold (users without
    recommendations included; they score per formula on an empty list); "intersection": those of
    them that also have recommendations.
    """
    name = ALIASES.get(name, name)
    metric = METRICS[name]
    if k is None and name != "r_precision":
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

    lists = ranked_lists(recs, use_rank)
    users = [u for u, t in truth_by_user.items() if any(r >= threshold for r in t.values())]
    if population == "intersection":
        users = [u for u in users if u in lists]
    elif population != "relevant":
        raise ValueError(f"unknown population {population!r}")

    return {
        user: float(metric(_User(lists.get(user, []), truth_by_user[user], k, threshold, items), opts))
        for user in users
    }


def mean(values: dict) -> float | None:
    """Mean of the per-user values; None for an empty population."""
    return sum(values.values()) / len(values) if values else None
