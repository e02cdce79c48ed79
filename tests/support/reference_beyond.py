"""Plain-Python reference oracle for recsql's "beyond accuracy" metrics.

Written only from the definitions in docs/guide/metrics.md ("Beyond accuracy and user models", with the
choices listed there for its edge cases), independently of the SQL implementation, so that tests
can compare the two. Standard library only; clarity over speed.

Entry point: ``reference_beyond(name, k, options, recs, truth, items=..., ...)``.
Inputs are lists of dict rows for ONE run:

    recs          {user_id, item_id, score}  (or {user_id, item_id, rank} with use_rank=True)
    truth         {user_id, item_id, relevance?}        relevance defaults to 1
    items         {item_id, price?, category?, probability?, features? (list of floats)}
    features      {item_id, feature, value}             sparse alternative to items.features
    interactions  {user_id, item_id}                    training data; duplicates count once
    catalog       {item_id}
    baseline      rows like recs: another recommender's lists, ranked the same way, cut at k

Shared conventions
------------------
* Order: score descending (rank ascending with use_rank), ties by item_id ascending; positions
  1..n. ``L`` = the user's top min(k, n) items (k None = the whole list).
* Relevant iff relevance >= threshold; gain g = max(relevance, 0), unjudged items have g = 0.
* ``U_I`` = distinct users of interactions, ``n_i`` = distinct users of interactions who saw
  item i (0 when unseen), ``c_i`` = number of users whose top k holds item i.
* Populations: metrics needing truth (serendipity, auc, accuracy, err, pfound, spearman, kendall,
  rbp) -> users with >= 1 relevant truth item (a user without recommendations scores on an empty
  list); list-only metrics (novelty, surprisal, unexpectedness, diversity, arp) -> users with
  recommendations; global metrics (coverage, gini, personalization) -> one number.
"""
from __future__ import annotations

import math
import re

from . import reference_logs

# name -> default options (an option absent here is rejected as unknown)
DEFAULT_OPTIONS = {
    "novelty": {"p": "interactions"},
    "surprisal": {},
    "unexpectedness": {},
    "serendipity": {},
    "diversity": {"by": "category"},
    "arp": {},
    "coverage": {},
    "gini": {},
    "personalization": {},
    "auc": {},
    "accuracy": {},
    "err": {"max_grade": None},
    "pfound": {"max_grade": None, "p_break": 0.15},
    "spearman": {},
    "kendall": {},
    "rbp": {"p": 0.8},
    "aplt": {"head": 0.8, "split": "interactions"},
    "aclt": {"head": 0.8, "split": "interactions"},
    "rbo": {"p": 0.9},
    "intersection": {},
    "jaccard": {},
    "miscalibration": {"alpha": 0.01, "by": "category", "patience": 1.0},
    "entropy": {"base": "e", "by": "category", "patience": 1.0},
    "alpha_ndcg": {"alpha": 0.5},
    "alpha_dcg": {"alpha": 0.5},
    "err_ia": {"alpha": 0.5},
    "nerr_ia": {"alpha": 0.5},
    "nrbp": {"alpha": 0.5, "beta": 0.5},
    "nnrbp": {"alpha": 0.5, "beta": 0.5},
    "p_ia": {},
    "s_recall": {},
    "map_ia": {},
    "exposure_disparity": {"weight": "log", "patience": 0.5, "target": "items", "combine": "min_max_ratio"},
    "exposure_gini": {"weight": "geometric", "patience": 0.85, "over": "items"},
    "exposure_entropy": {"weight": "geometric", "patience": 0.85, "base": "e"},
    "lt_coverage": {"head": 0.8, "split": "interactions"},
    "pop_rsp": {"head": 0.8, "split": "interactions"},
    "pop_reo": {"head": 0.8, "split": "interactions"},
    "awrf": {"target": "uniform", "weight": "trec", "patience": 0.5, "by": "category"},
    "ee_d": {"model": "rbp", "patience": 0.5, "utility": 0.5},
    "ee_r": {"model": "rbp", "patience": 0.5, "utility": 0.5},
    "ee_l": {"model": "rbp", "patience": 0.5, "utility": 0.5},
    **reference_logs.DEFAULTS,  # the off-policy estimators: tests/support/reference_logs.py
}
# the intent-aware metrics: read the intents input (user, item, intent, relevance)
INTENT_METRICS = {"alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "nrbp", "nnrbp", "p_ia", "s_recall", "map_ia"}

TRUTH_METRICS = {"serendipity", "auc", "accuracy", "err", "pfound", "spearman", "kendall", "rbp", "ee_d", "ee_r", "ee_l"}
LIST_METRICS = {"novelty", "surprisal", "unexpectedness", "diversity", "arp", "aplt", "aclt", "rbo", "intersection",
                "jaccard", "miscalibration", "entropy", "awrf"}
GLOBAL_METRICS = {"coverage", "gini", "personalization", "exposure_disparity", "exposure_gini", "exposure_entropy",
                  "lt_coverage", "pop_rsp", "pop_reo"}
# metrics whose formula divides by k (or picks "the k most popular") cannot run without a cutoff
NEEDS_K = {"ee_d", "ee_r", "ee_l", "awrf", "pop_rsp", "pop_reo", "exposure_disparity", "exposure_gini", "exposure_entropy", "lt_coverage", "surprisal", "unexpectedness", "serendipity", "personalization", "rbo", "intersection", "jaccard",
           "miscalibration", "entropy", "alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "nnrbp", "p_ia", "s_recall"}


# --------------------------------------------------------------------------- helpers

def _relevance(row):
    """Truth relevance; a missing (or None) relevance counts as 1."""
    value = row.get("relevance")
    return 1.0 if value is None else float(value)


def _gain(relevance):
    """g = max(relevance, 0); unjudged (None) -> 0."""
    return 0.0 if relevance is None else max(float(relevance), 0.0)


def _div(num, den):
    """num / den, 0 when den is 0."""
    return num / den if den else 0.0


def ranked_lists(recs, use_rank=False):
    """{user_id: [item_id, ...]} in position order: rank ascending (use_rank) or score
    descending, ties by item_id ascending; positions are then renumbered 1..n.
    Duplicate (user, item) rows are an error."""
    pairs = [(r["user_id"], r["item_id"]) for r in recs]
    if len(pairs) != len(set(pairs)):
        raise ValueError("duplicate (user, item) in recommendations")
    by_user = {}
    for row in recs:
        by_user.setdefault(row["user_id"], []).append(row)
    key = (lambda r: (r["rank"], r["item_id"])) if use_rank else (lambda r: (-r["score"], r["item_id"]))
    return {user: [r["item_id"] for r in sorted(rows, key=key)] for user, rows in by_user.items()}


def _sort_values(recs, use_rank):
    """{(user, item): the ordering value} -- score, or rank with use_rank (for AUC's ties)."""
    column = "rank" if use_rank else "score"
    return {(r["user_id"], r["item_id"]): r[column] for r in recs}


def _cut(items, k):
    """Top min(k, n) of a ranked list; k None = the whole list."""
    return list(items) if k is None else list(items[:k])


def _truth_by_user(truth):
    """{user: {item: relevance}}; duplicate (user, item) rows are an error."""
    out = {}
    for row in truth:
        user_truth = out.setdefault(row["user_id"], {})
        if row["item_id"] in user_truth:
            raise ValueError("duplicate (user, item) in truth")
        user_truth[row["item_id"]] = _relevance(row)
    return out


def _popularity(interactions):
    """(U_I, {item: n_i}): distinct users, and distinct users per item; duplicates count once."""
    pairs = {(r["user_id"], r["item_id"]) for r in interactions}
    users = {u for u, _ in pairs}
    n = {}
    for _, item in pairs:
        n[item] = n.get(item, 0) + 1
    return len(users), n


def _exposure(lists, k):
    """{item: c_i}: the number of users whose top k holds item i."""
    c = {}
    for ranked in lists.values():
        for item in _cut(ranked, k):
            c[item] = c.get(item, 0) + 1
    return c


def _catalog(catalog, items, truth, recs):
    """The catalog: the catalog input, else the items input, else distinct items of truth ∪ recs."""
    if catalog is not None:
        return {r["item_id"] for r in catalog}
    if items is not None:
        return {r["item_id"] for r in items}
    return {r["item_id"] for r in (truth or [])} | {r["item_id"] for r in recs}


def _vectors(items, features):
    """{item: {feature: value}}. The sparse ``features`` input wins when given (an item's vector
    = its rows, value None -> 0); otherwise the items' dense ``features`` list, feature j = index
    j. Missing features are 0. Items without any vector are absent."""
    if features is not None:
        out = {}
        for row in features:
            vec = out.setdefault(row["item_id"], {})
            if row["feature"] in vec:
                raise ValueError("duplicate (item, feature) in features")
            vec[row["feature"]] = float(row["value"] or 0.0)
        return out
    out = {}
    for row in items or []:
        dense = row.get("features")
        if dense is not None:
            out[row["item_id"]] = {j: float(v or 0.0) for j, v in enumerate(dense)}
    return out


def _cosine(a, b):
    """cos(a, b) = a·b / (|a|·|b|) over sparse dicts (absent = 0); None when either norm is 0."""
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    if na == 0 or nb == 0:
        return None
    return sum(v * b.get(f, 0.0) for f, v in a.items()) / (na * nb)


def _average_ranks(values):
    """Ranks 1..n of the values (ascending), ties get the average of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1  # average of 1-based ranks i+1..j+1
        i = j + 1
    return ranks


def _pearson(x, y):
    """Pearson correlation; None when either side is constant or fewer than 2 points."""
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _sign(v):
    return (v > 0) - (v < 0)


# --------------------------------------------------------------------------- context

class _Context:
    """Everything a metric may need, prepared once."""

    def __init__(self, k, opts, recs, truth, items, features, interactions, catalog, baseline,
                 threshold, use_rank):
        self.k = k
        self.opts = opts
        self.threshold = threshold
        self.use_rank = use_rank
        self.recs = recs
        self.lists = ranked_lists(recs, use_rank)
        self.values = _sort_values(recs, use_rank)
        self.truth_rows = truth
        self.truth = _truth_by_user(truth) if truth is not None else None
        self.items_rows = items
        self.items = {r["item_id"]: r for r in items} if items is not None else None
        self.features = features
        self.vectors = _vectors(items, features)
        self.interactions = interactions
        if interactions is not None:
            self.U_I, self.n = _popularity(interactions)
        else:
            self.U_I, self.n = None, None
        self.catalog_rows = catalog
        self.baseline = ranked_lists(baseline, use_rank) if baseline is not None else None

    def top(self, user):
        """L: the user's top min(k, n) items (empty when the user has no recommendations)."""
        return _cut(self.lists.get(user, []), self.k)

    def full(self, user):
        """The user's whole ranked list."""
        return list(self.lists.get(user, []))

    def relevant(self, user, item):
        rel = self.truth.get(user, {}).get(item)
        return rel is not None and rel >= self.threshold

    def need(self, what):
        if getattr(self, what if what != "interactions" else "n") is None:
            raise ValueError(f"this metric needs the {what} input")


# --------------------------------------------------------------------------- per-user metrics
# Each takes (ctx, user) and returns the value (float) or None.

def novelty(ctx, user):
    """novelty@k = Σ_{i∈L} −log2 p_i / #L.

    p="interactions" (default): p_i = n_i / U_I; p="items": the items' ``probability`` column.
    An item with p = 0, unseen in interactions or missing from items contributes 0 but still
    counts in #L. An empty L gives 0 (cannot happen in the population: users with recs).
    """
    L = ctx.top(user)
    source = ctx.opts["p"]
    total = 0.0
    for item in L:
        if source == "interactions":
            p = _div(ctx.n.get(item, 0), ctx.U_I)
        elif source == "items":
            row = ctx.items.get(item) or {}
            p = float(row.get("probability") or 0.0)
        else:
            raise ValueError(f"unknown novelty p={source!r}")
        if p > 0:
            total += -math.log2(p)
    return _div(total, len(L))


def surprisal(ctx, user):
    """surprisal@k = Σ_{i∈L} w_i / k, w_i = log2(U_I / n_i) / log2(U_I).

    Items never seen in interactions weigh 1; when U_I = 1 a seen item weighs 0.
    """
    total = 0.0
    for item in ctx.top(user):
        n_i = ctx.n.get(item, 0)
        if n_i == 0:
            w = 1.0
        elif ctx.U_I == 1:
            w = 0.0
        else:
            w = math.log2(ctx.U_I / n_i) / math.log2(ctx.U_I)
        total += w
    return total / ctx.k


def _baseline_top(ctx, user):
    """L_baseline: the same user's top k in the baseline input (empty when absent there)."""
    return set(_cut(ctx.baseline.get(user, []), ctx.k))


def unexpectedness(ctx, user):
    """unexpectedness@k = 1 − #(L ∩ L_baseline) / k."""
    return 1.0 - len(set(ctx.top(user)) & _baseline_top(ctx, user)) / ctx.k


def intersection(ctx, user):
    """intersection@k = #(L ∩ L_baseline) / #L."""
    L = ctx.top(user)
    return _div(len(set(L) & _baseline_top(ctx, user)), len(L))


def jaccard(ctx, user):
    """jaccard@k = #(L ∩ L_baseline) / #(L ∪ L_baseline)."""
    L, E = set(ctx.top(user)), _baseline_top(ctx, user)
    return _div(len(L & E), len(L | E))


def rbo(ctx, user):
    """RBO_EXT (Webber, Moffat & Zobel 2010, eq. 32) of L and the baseline's top k: S the shorter list
    (length s), the longer l, X_d = #(S[:d] ∩ L[:d]) counted by sets at each depth;
    (1−p)/p [Σ_{d≤l} X_d/d p^d + Σ_{s<d≤l} X_s (d−s)/(s d) p^d] + ((X_l − X_s)/l + X_s/s) p^l.
    0 when the baseline has no list for the user."""
    p = ctx.opts["p"]
    a, b = ctx.top(user), _cut(ctx.baseline.get(user, []), ctx.k)
    if not a or not b:
        return 0.0 if (a or b) else 1.0
    short, long_ = sorted([a, b], key=len)
    s, l = len(short), len(long_)
    X = {d: len(set(short[:d]) & set(long_[:d])) for d in range(1, l + 1)}
    total = sum(X[d] / d * p ** d for d in range(1, l + 1))
    total += sum(X[s] * (d - s) / (s * d) * p ** d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + ((X[l] - X[s]) / l + X[s] / s) * p ** l


def _shares(ctx, item):
    """{category: share} of an item: {its category: 1} (by=category; {} without one), or its positive
    feature values over their sum (by=features; {} without any)."""
    if ctx.opts["by"] == "category":
        category = (ctx.items or {}).get(item, {}).get("category")
        return {} if category is None else {category: 1.0}
    positive = {f: v for f, v in ctx.vectors.get(item, {}).items() if v > 0}
    total = sum(positive.values())
    return {f: v / total for f, v in positive.items()}


def _distribution(ctx, items, patience=1.0, weights=None):
    """The items' category distribution (each item split over its categories, the r-th item of ``items``
    weighted patience^(r − 1), or by ``weights[item]`` when given); None when no item has one."""
    mass = {}
    for r, item in enumerate(items, start=1):
        weight = weights[item] if weights is not None else patience ** (r - 1)
        for category, share in _shares(ctx, item).items():
            mass[category] = mass.get(category, 0.0) + share * weight
    total = sum(mass.values())
    return {c: m / total for c, m in mass.items()} if total > 0 else None


def _history_weights(ctx, user):
    """Steck's w_ui of the user's history (eq. 1): per item, the sum of the ``weight`` of its
    interactions when the interactions carry one, else 1 (each item once, however often seen)."""
    weights = {}
    for r in ctx.interactions:
        if r["user_id"] == user:
            weights[r["item_id"]] = weights.get(r["item_id"], 0.0) + r["weight"] if "weight" in r else 1.0
    return weights


def miscalibration(ctx, user):
    """Steck's C_KL = Σ_g p ln(p / q̃), q̃ = (1 − α) q + α p; p(g|u) = Σ_i w_ui p(g|i) / Σ_i w_ui over the
    user's interactions (w_ui: _history_weights), q from L; None without a categorized item of positive
    weight in the history, ln(1/α) with none in L."""
    weights = _history_weights(ctx, user)
    p = _distribution(ctx, sorted(weights, key=str), weights=weights)
    if p is None:
        return None
    q = _distribution(ctx, ctx.top(user), ctx.opts["patience"]) or {}
    alpha = ctx.opts["alpha"]
    return sum(pg * math.log(pg / ((1 - alpha) * q.get(g, 0.0) + alpha * pg)) for g, pg in p.items() if pg > 0)


def entropy(ctx, user):
    """−Σ_g q(g) log q(g) of L's category distribution (natural log, or log2 with base=2); None when no
    item of L has a category."""
    q = _distribution(ctx, ctx.top(user), ctx.opts["patience"])
    if q is None:
        return None
    value = -sum(v * math.log(v) for v in q.values() if v > 0)
    return value / math.log(2) if ctx.opts["base"] in (2, 2.0, "2") else value


def awrf(ctx, user):
    """1 − JSD(a, t) (natural log): a = the top k's attention over the groups (position r weighing
    1/log2(max(r, 2)), 1/log2(r + 1) or patience^(r − 1)), t = 1/G or the groups' shares of the items;
    None when no listed item has a group."""
    weights = {"trec": lambda r: 1 / math.log2(max(r, 2)), "log": lambda r: 1 / math.log2(r + 1),
               "geometric": lambda r: ctx.opts["patience"] ** (r - 1)}[ctx.opts["weight"]]
    mass = {}
    for r, item in enumerate(ctx.top(user), start=1):
        for group, share in _shares(ctx, item).items():
            mass[group] = mass.get(group, 0.0) + share * weights(r)
    if not mass:
        return None
    catalog = {}
    items = ctx.items if ctx.opts["by"] == "category" else ctx.vectors
    for item in (items or {}):
        for group, share in _shares(ctx, item).items():
            catalog[group] = catalog.get(group, 0.0) + share
    if ctx.opts["target"] == "uniform":
        t = {g: 1 / len(catalog) for g in catalog}
    else:
        t = {g: m / sum(catalog.values()) for g, m in catalog.items()}
    a = {g: m / sum(mass.values()) for g, m in mass.items()}
    jsd = 0.0
    for g in set(a) | set(t):
        ag, tg = a.get(g, 0.0), t.get(g, 0.0)
        mg = (ag + tg) / 2
        jsd += 0.5 * (ag * math.log(ag / mg) if ag > 0 else 0) + 0.5 * (tg * math.log(tg / mg) if tg > 0 else 0)
    return 1 - jsd


def _judgments(ctx, user):
    """({item: intents it is relevant to}, S): the user's relevant judgments per intent (relevance >=
    threshold; no relevance = relevant) and the intents with one; None for a user absent from intents."""
    rows = [r for r in ctx.intents if r["user_id"] == user]
    if not rows:
        return None
    judged = {}
    for r in rows:
        if r.get("relevance") is None or r["relevance"] >= ctx.threshold:
            judged.setdefault(r["item_id"], set()).add(r["intent"])
    return judged, {s for intents in judged.values() for s in intents}


def _intent_population(ctx, population):
    """The users an intent-aware metric averages over under ``population`` (intents in truth's role)."""
    every = list(dict.fromkeys(r["user_id"] for r in ctx.intents))
    if population == "judged":
        return every
    if population == "intersection":
        return [u for u in every if u in ctx.lists]
    if population == "relevant":
        return [u for u in every if _judgments(ctx, u)[1]]
    raise ValueError(f"unknown population {population!r}")


def _intent_gains(items, judged, alpha):
    """Per position r = 1, 2, ...: Σ_s J(r, s) (1 − α)^{c_s(r)}, c_s(r) = positions above r relevant to s."""
    seen, gains = {}, []
    for item in items:
        gain = 0.0
        for s in judged.get(item, ()):
            gain += (1 - alpha) ** seen.get(s, 0)
            seen[s] = seen.get(s, 0) + 1
        gains.append(gain)
    return gains


def _greedy_ideal(judged, alpha, k):
    """The greedy ideal list's gains at positions 1..k: each position takes the not yet taken relevant
    item of largest gain given those above (ties: the largest item id, as ndeval)."""
    left, seen, gains = sorted((i for i, s in judged.items() if s), reverse=True), {}, []

    def gain(item):
        return sum((1 - alpha) ** seen.get(s, 0) for s in judged[item])
    while left and len(gains) < k:
        best = max(left, key=gain)  # the first of equal gains: left is in descending item id order
        gains.append(gain(best))
        for s in judged[best]:
            seen[s] = seen.get(s, 0) + 1
        left.remove(best)
    return gains


def _log2_discount(r):
    return 1.0 / math.log2(r + 1)


def _of_intent_users(metric):
    """A metric of the users of intents, written as (ctx, user, judged, S) -> value; None for a user
    absent from intents."""
    def per_user(ctx, user):
        found = _judgments(ctx, user)
        return None if found is None else metric(ctx, user, *found)
    per_user.__doc__ = metric.__doc__
    return per_user


def _discounted(gains, discount):
    return sum(g * discount(r) for r, g in enumerate(gains, 1))


@_of_intent_users
def alpha_ndcg(ctx, user, judged, S):
    """α-DCG@k / the greedy ideal's α-DCG@k."""
    a = ctx.opts["alpha"]
    return _div(_discounted(_intent_gains(ctx.top(user), judged, a), _log2_discount),
                _discounted(_greedy_ideal(judged, a, ctx.k), _log2_discount))


@_of_intent_users
def alpha_dcg(ctx, user, judged, S):
    """α-DCG@k / (|S| Σ_{r≤k} (1 − α)^(r−1) / log2(r + 1)) (ndeval's normalisation)."""
    a = ctx.opts["alpha"]
    return _div(_discounted(_intent_gains(ctx.top(user), judged, a), _log2_discount),
                len(S) * _discounted([(1 - a) ** r for r in range(ctx.k)], _log2_discount))


@_of_intent_users
def err_ia(ctx, user, judged, S):
    """Σ_r (1/r) α Σ_s J (1 − α)^c / (|S| Σ_{r≤k} (1/r) α (1 − α)^(r−1)); α cancels."""
    a = ctx.opts["alpha"]
    return _div(_discounted(_intent_gains(ctx.top(user), judged, a), lambda r: 1 / r),
                len(S) * _discounted([(1 - a) ** r for r in range(ctx.k)], lambda r: 1 / r))


@_of_intent_users
def nerr_ia(ctx, user, judged, S):
    """Σ_r (1/r) Σ_s J (1 − α)^c over the same sum of the greedy ideal list."""
    a = ctx.opts["alpha"]
    return _div(_discounted(_intent_gains(ctx.top(user), judged, a), lambda r: 1 / r),
                _discounted(_greedy_ideal(judged, a, ctx.k), lambda r: 1 / r))


@_of_intent_users
def nrbp(ctx, user, judged, S):
    """(1 − (1 − α) β) / |S| Σ_r β^(r−1) Σ_s J (1 − α)^c over L."""
    a, b = ctx.opts["alpha"], ctx.opts["beta"]
    return _div((1 - (1 - a) * b) * _discounted(_intent_gains(ctx.top(user), judged, a), lambda r: b ** (r - 1)),
                len(S))


@_of_intent_users
def nnrbp(ctx, user, judged, S):
    """Σ_{r≤k} β^(r−1) Σ_s J (1 − α)^c over the same sum of the greedy ideal list (NRBP's factor cancels)."""
    a, b = ctx.opts["alpha"], ctx.opts["beta"]
    return _div(_discounted(_intent_gains(ctx.top(user), judged, a), lambda r: b ** (r - 1)),
                _discounted(_greedy_ideal(judged, a, ctx.k), lambda r: b ** (r - 1)))


@_of_intent_users
def p_ia(ctx, user, judged, S):
    """(1/|S|) Σ_s #(items of L relevant to s) / k."""
    return _div(sum(len(judged.get(i, ())) for i in ctx.top(user)), len(S) * ctx.k)


@_of_intent_users
def s_recall(ctx, user, judged, S):
    """#(intents with a relevant item in L) / |S|."""
    return _div(len(set().union(*(judged.get(i, set()) for i in ctx.top(user)))), len(S))


@_of_intent_users
def map_ia(ctx, user, judged, S):
    """(1/|S|) Σ_s AP_s, AP_s = (1/R_s) Σ_{r relevant to s} (hits of s up to r) / r."""
    relevant = {s: sum(1 for intents in judged.values() if s in intents) for s in S}  # R_s
    total, seen = 0.0, {}
    for r, item in enumerate(ctx.top(user), 1):
        for s in judged.get(item, ()):
            seen[s] = seen.get(s, 0) + 1
            total += seen[s] / r / relevant[s]
    return _div(total, len(S))


def _most_popular(ctx):
    """The k most popular items of interactions: n_i descending, ties item_id ascending."""
    ranked = sorted(ctx.n.items(), key=lambda kv: (-kv[1], kv[0]))
    return {item for item, _ in ranked[: ctx.k]}


def serendipity(ctx, user):
    """serendipity@k = Σ_{i∈L} hit_i · [i ∉ L_baseline] / k.

    L_baseline = the user's top k in the baseline input; without a baseline input, the k most
    popular items of interactions (n_i descending, ties item_id ascending), same set for all users.
    """
    if ctx.baseline is not None:
        expected = _baseline_top(ctx, user)
    else:
        expected = _most_popular(ctx)
    return sum(1 for i in ctx.top(user) if ctx.relevant(user, i) and i not in expected) / ctx.k


def diversity(ctx, user):
    """diversity@k (intra-list) = mean over pairs i<j in L of dissimilarity(i, j).

    by="category" (default): 1 if the categories differ else 0;
    by="features": 1 − cosine(vector_i, vector_j).
    Pairs where either item has no category (resp. no vector, or a zero vector) are skipped;
    None when no pair is left (in particular when #L < 2).
    """
    L = ctx.top(user)
    by = ctx.opts["by"]
    if by == "category":
        cats = {i: (r.get("category")) for i, r in (ctx.items or {}).items()}
        dissim = lambda a, b: (None if cats.get(a) is None or cats.get(b) is None
                               else float(cats[a] != cats[b]))
    elif by == "features":
        vecs = _vectors(ctx.items_rows, ctx.features)

        def dissim(a, b):
            if a not in vecs or b not in vecs:
                return None
            cos = _cosine(vecs[a], vecs[b])
            return None if cos is None else 1.0 - cos
    else:
        raise ValueError(f"unknown diversity by={by!r}")
    values = []
    for x in range(len(L)):
        for y in range(x + 1, len(L)):
            d = dissim(L[x], L[y])
            if d is not None:
                values.append(d)
    return sum(values) / len(values) if values else None


def arp(ctx, user):
    """arp@k = Σ_{i∈L} n_i / #L (items unseen in interactions have n_i = 0)."""
    L = ctx.top(user)
    return _div(sum(ctx.n.get(i, 0) for i in L), len(L))


def _long_tail(ctx):
    """T: the items of interactions outside the short head, the head built as Elliot builds it: the
    items by n_i descending (ties by item id), each added while the interactions still to reach
    head × Σ n_i are more than 0 (so the item that reaches the share is in the head)."""
    left = ctx.opts["head"] * sum(ctx.n.values())
    tail = set()
    for item, n_i in sorted(ctx.n.items(), key=lambda kv: (-kv[1], kv[0])):
        if left > 0:
            left -= n_i
        else:
            tail.add(item)
    return tail


def _head_and_tail(ctx):
    """(H, T): with split = interactions the short head and the long tail of interactions (_long_tail: the
    items seen, T outside the head); with split = items the items whose ``head`` flag is true (or 1) and
    those whose flag is false (or 0). An item in neither (never seen; missing from items) is in no group."""
    if ctx.opts["split"] == "items":
        flags = {r["item_id"]: bool(r["head"]) for r in ctx.items_rows}
        return {i for i, f in flags.items() if f}, {i for i, f in flags.items() if not f}
    tail = _long_tail(ctx)
    return set(ctx.n) - tail, tail


def aplt(ctx, user):
    """APLT@k = #(L ∩ T) / #L (0 for an empty list)."""
    L = ctx.top(user)
    tail = _head_and_tail(ctx)[1]
    return _div(sum(1 for i in L if i in tail), len(L))


def aclt(ctx, user):
    """ACLT@k = #(L ∩ T)."""
    tail = _head_and_tail(ctx)[1]
    return sum(1 for i in ctx.top(user) if i in tail)


def auc(ctx, user):
    """auc@k (auc: k None = the whole list): over the items of the user's list, the share of
    (relevant, non-relevant) pairs where the relevant item is ranked higher; a pair whose two
    items have an equal score (equal rank with use_rank) counts ½. Unjudged = non-relevant.
    None when the list lacks either class.
    """
    L = ctx.top(user)
    pos = [i for i in L if ctx.relevant(user, i)]
    neg = [i for i in L if not ctx.relevant(user, i)]
    if not pos or not neg:
        return None
    total = 0.0
    for a in pos:
        for b in neg:
            va, vb = ctx.values[(user, a)], ctx.values[(user, b)]
            if va == vb:
                total += 0.5
            elif (va < vb) if ctx.use_rank else (va > vb):
                total += 1.0
    return total / (len(pos) * len(neg))


def accuracy(ctx, user):
    """accuracy@k = (TP + TN) / N.

    predicted positive = the top k; TP = relevant items in the top k; TN = non-relevant items of
    the list beyond position k; N = #(whole list ∪ relevant truth items).
    """
    full = ctx.full(user)
    top = _cut(full, ctx.k)
    rest = full[len(top):]
    tp = sum(1 for i in top if ctx.relevant(user, i))
    tn = sum(1 for i in rest if not ctx.relevant(user, i))
    relevant_truth = {i for i, r in ctx.truth.get(user, {}).items() if r >= ctx.threshold}
    return _div(tp + tn, len(set(full) | relevant_truth))


def _max_grade(ctx):
    """g_max: the max_grade option, else the largest relevance in the whole truth input."""
    given = ctx.opts["max_grade"]
    if given is not None:
        return float(given)
    return max(_relevance(r) for r in ctx.truth_rows)


def err(ctx, user):
    """err@k = Σ_{i≤k} (1/i)·R_i·Π_{j<i}(1 − R_j), R_i = (2^{g_i} − 1) / 2^{g_max}.
    (No clipping: a grade above max_grade gives R_i > 1 as the formula says.)"""
    g_max = _max_grade(ctx)
    truth = ctx.truth.get(user, {})
    total, not_stopped = 0.0, 1.0
    for i, item in enumerate(ctx.top(user), start=1):
        R = (2.0 ** _gain(truth.get(item)) - 1.0) / 2.0 ** g_max
        total += not_stopped * R / i
        not_stopped *= 1.0 - R
    return total


def pfound(ctx, user):
    """pfound@k = Σ_{i≤k} pLook_i·pRel_i; pLook_1 = 1,
    pLook_i = pLook_{i−1}·(1 − pRel_{i−1})·(1 − p_break); pRel_i = g_i / g_max (0 when g_max = 0)."""
    g_max = _max_grade(ctx)
    p_break = float(ctx.opts["p_break"])
    truth = ctx.truth.get(user, {})
    total, look = 0.0, 1.0
    for item in ctx.top(user):
        rel = _div(_gain(truth.get(item)), g_max)
        total += look * rel
        look *= (1.0 - rel) * (1.0 - p_break)
    return total


def _judged(ctx, user):
    """(x, y) over the judged items of the top k: x = −position, y = relevance (raw; 0 and
    negative relevances included)."""
    truth = ctx.truth.get(user, {})
    x, y = [], []
    for pos, item in enumerate(ctx.top(user), start=1):
        if item in truth:
            x.append(-float(pos))
            y.append(truth[item])
    return x, y


def spearman(ctx, user):
    """spearman@k = Pearson correlation of the average ranks of (−position) and relevance over the
    judged items of the top k; None when fewer than 2 such items or either side is constant."""
    x, y = _judged(ctx, user)
    if len(x) < 2:
        return None
    return _pearson(_average_ranks(x), _average_ranks(y))


def kendall(ctx, user):
    """kendall@k = tau-b of (−position, relevance) over the judged items of the top k:
    (n_c − n_d) / sqrt((n_0 − n_x)(n_0 − n_y)), n_0 = n(n−1)/2, n_x / n_y = pairs tied in x / y.
    None when fewer than 2 items or either side is constant."""
    x, y = _judged(ctx, user)
    n = len(x)
    if n < 2:
        return None
    s, tied_x, tied_y = 0, 0, 0
    for a in range(n):
        for b in range(a + 1, n):
            sx, sy = _sign(x[a] - x[b]), _sign(y[a] - y[b])
            s += sx * sy
            tied_x += sx == 0
            tied_y += sy == 0
    n0 = n * (n - 1) // 2
    den = (n0 - tied_x) * (n0 - tied_y)
    if den == 0:
        return None
    return s / math.sqrt(den)


def rbp(ctx, user):
    """rbp@k = (1 − p)·Σ_{i≤k} hit_i·p^(i−1), p = 0.8 by default; rbp = the whole list."""
    p = float(ctx.opts["p"])
    return (1.0 - p) * sum(p ** (i - 1) for i, item in enumerate(ctx.top(user), start=1)
                           if ctx.relevant(user, item))


# --------------------------------------------------------------------------- global metrics

def coverage(ctx):
    """coverage@k = #(catalog items appearing in any user's top k) / catalog size.
    Catalog: the catalog input, else the items input, else distinct items of truth ∪ recs.
    None for an empty catalog, and for a run without any recommendation (nothing was exposed:
    docs/guide/metrics.md, like gini and personalization)."""
    cat = _catalog(ctx.catalog_rows, ctx.items_rows, ctx.truth_rows, ctx.recs)
    shown = set(_exposure(ctx.lists, ctx.k))
    return len(cat & shown) / len(cat) if cat and ctx.lists else None


def gini(ctx):
    """gini@k = Σ_{j=1..m} (2j − m − 1)·c_(j) / (m·Σ c), c = exposure counts c_i of every catalog
    item (zero exposure included; recommended items outside the catalog ignored), sorted
    ascending; m = catalog size. None when Σ c = 0."""
    cat = _catalog(ctx.catalog_rows, ctx.items_rows, ctx.truth_rows, ctx.recs)
    c_all = _exposure(ctx.lists, ctx.k)
    c = sorted(c_all.get(i, 0) for i in cat)
    m, total = len(c), sum(c)
    if total == 0:
        return None
    return sum((2 * j - m - 1) * cj for j, cj in enumerate(c, start=1)) / (m * total)


def personalization(ctx):
    """personalization@k = 1 − Σ_i c_i(c_i − 1) / (U(U − 1)·k), U = users with recommendations;
    None when U < 2. (Computed from item counts; see personalization_pairwise for the check.)

    >>> recs = [{"user_id": u, "item_id": i, "score": s} for u, i, s in [
    ...     (1, 10, 3), (1, 11, 2), (1, 12, 1), (2, 10, 3), (2, 13, 2),
    ...     (3, 11, 3), (3, 10, 2), (3, 14, 1), (4, 15, 1)]]
    >>> a = reference_beyond("personalization", 2, {}, recs)
    >>> b = personalization_pairwise(recs, 2)
    >>> abs(a - b) < 1e-12, round(a, 12)  # c = {10: 3, 11: 2, 13: 1, 15: 1}: 1 - 8/24
    (True, 0.666666666667)
    >>> reference_beyond("personalization", 3, {}, recs) == personalization_pairwise(recs, 3)
    True
    """
    U = len(ctx.lists)
    if U < 2:
        return None
    c = _exposure(ctx.lists, ctx.k)
    return 1.0 - sum(ci * (ci - 1) for ci in c.values()) / (U * (U - 1) * ctx.k)


def _weight(opts, r):
    """The attention of position r: 1/log2(r + 1), (1 − patience)·patience^(r − 1), or 1."""
    if opts["weight"] == "log":
        return 1 / math.log2(r + 1)
    if opts["weight"] == "geometric":
        return (1 - opts["patience"]) * opts["patience"] ** (r - 1)
    return 1.0


def _attention(ctx):
    """({item: a_i}, {item: merit_i}): a_i = Σ_u w(rank of i in u's top k), merit_i = its relevant listings."""
    attention, merit = {}, {}
    for user, ranked in ctx.lists.items():
        for r, item in enumerate(_cut(ranked, ctx.k), start=1):
            attention[item] = attention.get(item, 0.0) + _weight(ctx.opts, r)
            hit = ctx.truth is not None and ctx.relevant(user, item)
            merit[item] = merit.get(item, 0) + (1 if hit else 0)
    return attention, merit


def _gini_of(values):
    """Σ_j (2j − m − 1)·v_(j) / (m·Σ v), v ascending; None when Σ v = 0."""
    v, m = sorted(values), len(values)
    total = sum(v)
    return sum((2 * j - m - 1) * x for j, x in enumerate(v, start=1)) / (m * total) if total > 0 else None


def _groups(ctx):
    """{group: (attention per item of the group, attention, merit)} over the items input's categories."""
    attention, merit = _attention(ctx)
    members = {}
    for item, row in ctx.items.items():
        if row.get("category") is not None:
            members.setdefault(row["category"], []).append(item)
    return {g: (sum(attention.get(i, 0.0) for i in its) / len(its), sum(attention.get(i, 0.0) for i in its),
                sum(merit.get(i, 0) for i in its)) for g, its in members.items()}


def exposure_disparity(ctx):
    """The groups' v (attention per item, or per relevant listing with target=merit) combined; None
    without lists or groups."""
    groups = _groups(ctx)
    if not ctx.lists or not groups:
        return None
    if ctx.opts["target"] == "merit":
        if any(m == 0 for _, _, m in groups.values()):
            return None
        v = [a / m for _, a, m in groups.values()]
    else:
        v = [per_item for per_item, _, _ in groups.values()]
    mean = sum(v) / len(v)
    combine = ctx.opts["combine"]
    if combine == "min_max_ratio":
        return min(v) / max(v) if max(v) != 0 else None
    if combine == "max_min_ratio":
        return max(v) / min(v) if min(v) != 0 else None
    if combine == "max_min_diff":
        return max(v) - min(v)
    if combine == "max_abs_dev":
        return max(abs(x - mean) for x in v)
    if combine == "mean_abs_dev":
        return sum(abs(x - mean) for x in v) / len(v)
    if combine == "l2":
        return math.sqrt(sum(x * x for x in v))
    return sum((x - mean) ** 2 for x in v) / len(v)


def exposure_gini(ctx):
    """Gini of the catalog items' attention (0 for unshown ones), or of the groups' attention per item."""
    if ctx.opts["over"] == "groups":
        groups = _groups(ctx)
        return _gini_of([per_item for per_item, _, _ in groups.values()]) if ctx.lists and groups else None
    attention, _ = _attention(ctx)
    return _gini_of([attention.get(i, 0.0) for i in _catalog(ctx.catalog_rows, ctx.items_rows, ctx.truth_rows, ctx.recs)])


def exposure_entropy(ctx):
    """−Σ p_i log p_i over the catalog items, p_i = a_i / Σ a; None when nothing of the catalog is shown."""
    attention, _ = _attention(ctx)
    a = [attention[i] for i in _catalog(ctx.catalog_rows, ctx.items_rows, ctx.truth_rows, ctx.recs) if i in attention]
    total = sum(a)
    if total == 0:
        return None
    h = -sum(x / total * math.log(x / total) for x in a)
    return h / math.log(2) if ctx.opts["base"] in (2, 2.0, "2") else h


def lt_coverage(ctx):
    """#(T ∩ items in any top k) / #T; None for an empty tail or a run without recommendations."""
    tail = _head_and_tail(ctx)[1]
    shown = set(_exposure(ctx.lists, ctx.k))
    return len(tail & shown) / len(tail) if tail and ctx.lists else None


def _popularity_parity(ctx, listed, available):
    """|P_H − P_T| / (P_H + P_T), P_g = Σ_u #listed(u, g) / Σ_u #available(u, g) over the users with a list
    and truth, g the short head or the long tail (aplt's); None when a ratio or the sum is undefined."""
    head, tail = _head_and_tail(ctx)
    groups = {"head": head, "tail": tail}
    users = [u for u in ctx.lists if ctx.truth and u in ctx.truth]
    history = {(r["user_id"], r["item_id"]) for r in ctx.interactions}
    shares = []
    for group in groups.values():
        num = sum(len([i for i in listed(u) if i in group]) for u in users)
        den = sum(len([i for i in available(u, group) if (u, i) not in history]) for u in users)
        if den == 0:
            return None
        shares.append(num / den)
    total = shares[0] + shares[1]
    return abs(shares[0] - shares[1]) / total if total > 0 else None


def pop_rsp(ctx):
    """PopRSP: P_g = Σ_u #(L_u ∩ g) / Σ_u #(g \\ I_u)."""
    return _popularity_parity(ctx, lambda u: set(ctx.top(u)), lambda u, group: group)


def pop_reo(ctx):
    """PopREO: P_g = Σ_u #(L_u ∩ R_u ∩ g) / Σ_u #((g ∩ R_u) \\ I_u)."""
    return _popularity_parity(ctx, lambda u: {i for i in ctx.top(u) if ctx.relevant(u, i)},
                              lambda u, group: {i for i in group if ctx.relevant(u, i)})


def weighted_global(name, k, options, lists, truth=None, *, items=None, interactions=None, catalog=None,
                    threshold=1.0):
    """A global metric (exposure_disparity, exposure_gini, exposure_entropy, lt_coverage, pop_rsp, pop_reo) over
    weighted users, as recsql.compare's bootstrap defines its statistic: a user of integer weight w counts as w
    copies of itself, each with the user's list, truth and interactions (its history); a user of weight 0 is not
    there. The catalog-level inputs are the inputs as given: the catalog (``catalog`` rows, else the items
    input), the items' categories and the items' popularity in ``interactions`` (so the short head and tail).
    ``lists``: [(w, the user's recs rows)], each user once; or [(w, the user's recs rows, the user's truth rows)]:
    each list judged by its own truth (truth per run: the truth of the run the list came from; ``truth`` then
    unread but for being given). None where the metric is undefined."""
    opts = {**DEFAULT_OPTIONS[name], **{key: _option_value(v) for key, v in (options or {}).items()}}
    copies = [(w, rows[0]["user_id"], rows, own) for w, rows, *own in lists if w > 0 and rows]
    recs = [{**r, "user_id": (user, j)} for w, user, rows, _ in copies for j in range(w) for r in rows]
    by_user = {}
    for rows, source in ((truth or [], "truth"), (interactions or [], "interactions")):
        for r in rows:
            by_user.setdefault((source, r["user_id"]), []).append(r)

    def of(source, user, own):  # the user's rows of source: its own truth when given with its list
        return own[0] if source == "truth" and own else by_user.get((source, user), [])
    copied = {source: [{**r, "user_id": (user, j)} for w, user, _, own in copies for j in range(w)
                       for r in of(source, user, own)] for source in ("truth", "interactions")}
    ctx = _Context(k, opts, recs, copied["truth"] if truth is not None else None, items, None, interactions,
                   catalog, None, float(threshold), False)
    if interactions is not None:  # the copies' histories; the popularity (ctx.n) stays the input's
        ctx.interactions = copied["interactions"]
    value = METRICS[name](ctx)
    return None if value is None else float(value)


def personalization_pairwise(recs, k, use_rank=False):
    """Check form of personalization@k: 1 − mean over unordered user pairs (u, v) of
    #(L_u ∩ L_v) / k; None when fewer than 2 users have recommendations.

    Equal to the count form because Σ_i c_i(c_i − 1) counts every ordered pair (u ≠ v) once per
    shared item, i.e. = 2·Σ_{u<v} #(L_u ∩ L_v), while there are U(U − 1)/2 unordered pairs.
    """
    lists = {u: set(_cut(items, k)) for u, items in ranked_lists(recs, use_rank).items()}
    users = sorted(lists)
    pairs = [(a, b) for x, a in enumerate(users) for b in users[x + 1:]]
    if not pairs:
        return None
    return 1.0 - sum(len(lists[a] & lists[b]) / k for a, b in pairs) / len(pairs)


def expected_exposure(samples, relevance, k, model, patience, utility, threshold=1.0):
    """(EE-D, EE-R, EE-L) of one user (Diaz et al., CIKM 2020) from ``samples``, the user's sampled lists
    (each a list of items in position order; an empty one for a sample that gave the user no list), and
    ``relevance`` {item: grade}. Exposure of 0-based position i: patience^i (rbp), times
    (1 − utility)^(relevant items above) (gerr); ε = the mean over the samples of each item's exposure in
    the top k; ε* = the mean exposure of the ideal order's positions its grade holds (grades descending,
    an item of a grade shared by m items below b of higher grades: Σ_{i=b}^{min(b+m, k)−1} q^i / m,
    q = patience or patience·(1 − utility) for gerr), 0 for an item not relevant."""
    exposure = {}
    for items in samples:
        above = 0
        for i, item in enumerate(items[:k]):
            factor = (1 - utility) ** above if model == "gerr" else 1.0
            exposure[item] = exposure.get(item, 0.0) + patience ** i * factor / len(samples)
            if relevance.get(item) is not None and relevance[item] >= threshold:
                above += 1
    q = patience * (1 - utility) if model == "gerr" else patience
    grades = sorted({g for g in relevance.values() if g is not None and g >= threshold}, reverse=True)
    target, before = {}, 0
    for grade in grades:
        tied = [item for item, g in relevance.items() if g == grade]
        share = sum(q ** i for i in range(before, min(before + len(tied), k))) / len(tied)
        target.update({item: share for item in tied})
        before += len(tied)
    items = set(exposure) | set(target)
    d = sum(exposure.get(i, 0.0) ** 2 for i in items)
    r = sum(exposure.get(i, 0.0) * target.get(i, 0.0) for i in items)
    loss = sum((exposure.get(i, 0.0) - target.get(i, 0.0)) ** 2 for i in items)
    return d, r, loss


def _ee(position):
    def metric(ctx, user):
        o = ctx.opts
        values = expected_exposure([ctx.full(user)], ctx.truth.get(user, {}), ctx.k, o["model"], o["patience"],
                                   o["utility"], ctx.threshold)
        return values[position]
    metric.__doc__ = f"{('EE-D', 'EE-R', 'EE-L')[position]} of the user's one list (one sample): expected_exposure."
    return metric


ee_d, ee_r, ee_l = _ee(0), _ee(1), _ee(2)


METRICS = {
    "ee_d": ee_d,
    "ee_r": ee_r,
    "ee_l": ee_l,
    "novelty": novelty,
    "surprisal": surprisal,
    "unexpectedness": unexpectedness,
    "intersection": intersection,
    "jaccard": jaccard,
    "rbo": rbo,
    "alpha_ndcg": alpha_ndcg,
    "alpha_dcg": alpha_dcg,
    "err_ia": err_ia,
    "nerr_ia": nerr_ia,
    "nrbp": nrbp,
    "nnrbp": nnrbp,
    "p_ia": p_ia,
    "s_recall": s_recall,
    "map_ia": map_ia,
    "miscalibration": miscalibration,
    "entropy": entropy,
    "awrf": awrf,
    "serendipity": serendipity,
    "diversity": diversity,
    "arp": arp,
    "aplt": aplt,
    "aclt": aclt,
    "auc": auc,
    "accuracy": accuracy,
    "err": err,
    "pfound": pfound,
    "spearman": spearman,
    "kendall": kendall,
    "rbp": rbp,
    "coverage": coverage,
    "gini": gini,
    "personalization": personalization,
    "exposure_disparity": exposure_disparity,
    "exposure_gini": exposure_gini,
    "exposure_entropy": exposure_entropy,
    "lt_coverage": lt_coverage,
    "pop_rsp": pop_rsp,
    "pop_reo": pop_reo,
    **{name: reference_logs.estimate for name in reference_logs.DEFAULTS},
}


# --------------------------------------------------------------------------- entry points

def _option_value(value):
    """Options come as strings or numbers: numeric strings become floats, "none"/"null" None."""
    if isinstance(value, str):
        if value.lower() in ("none", "null"):
            return None
        try:
            return float(value)
        except ValueError:
            return value
    return value


def reference_beyond(name, k, options, recs, truth=None, *, items=None, features=None,
                     interactions=None, catalog=None, baseline=None, intents=None, threshold=1.0, use_rank=False,
                     logs=None, reward_model=None, population="relevant"):
    """returns {user_id: value or None} for per-user metrics (users of the metric's population),
    or a float/None for global metrics.

    ``population`` is read by the intent-aware metrics, on intents as on truth: ``relevant`` = the users
    of intents with a relevant judgment, ``judged`` = every user of intents, ``intersection`` = the users
    of intents with recommendations; a user without recommendations scores 0.

    Raises ValueError for an unknown metric or option, a missing cutoff where the formula divides
    by k, or a missing input the metric needs (truth; interactions for surprisal, arp and
    novelty(p=interactions); items for novelty(p=items) and diversity(by=category); items or
    features for diversity(by=features); baseline for unexpectedness; baseline or interactions
    for serendipity).
    """
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}")
    opts = {**DEFAULT_OPTIONS[name], **{key: _option_value(v) for key, v in (options or {}).items()}}
    unknown = set(opts) - set(DEFAULT_OPTIONS[name])
    if unknown:
        raise ValueError(f"unknown options for {name}: {sorted(unknown)}")
    if k is None and name in NEEDS_K:
        raise ValueError(f"{name} needs a cutoff k")
    if k is not None and (int(k) != k or k < 1):
        raise ValueError("k must be a positive integer")

    if name in reference_logs.DEFAULTS:  # one number per run, from the logs
        if logs is None:
            raise ValueError(f"{name} needs the logs input")
        return reference_logs.estimate(name, opts, recs, logs, reward_model, use_rank)
    ctx = _Context(k, opts, recs, truth, items, features, interactions, catalog, baseline,
                   float(threshold), use_rank)
    ctx.intents = intents
    if name in INTENT_METRICS:
        ctx.need("intents")

    # inputs each metric needs
    if name in TRUTH_METRICS:
        ctx.need("truth")
    if name in ("surprisal", "arp", "pop_rsp", "pop_reo") or (name == "novelty" and opts["p"] == "interactions") or \
            (name in ("aplt", "aclt", "lt_coverage") and opts["split"] == "interactions"):
        ctx.need("interactions")
    if name in ("aplt", "aclt", "lt_coverage", "pop_rsp", "pop_reo") and opts["split"] == "items":
        ctx.need("items")
    if name == "miscalibration":
        ctx.need("interactions")
    if (name == "novelty" and opts["p"] == "items") or (name in ("diversity", "miscalibration", "entropy", "awrf")
                                                         and opts["by"] == "category"):
        ctx.need("items")
    if name in ("pop_rsp", "pop_reo"):
        ctx.need("truth")
    if name == "exposure_disparity" or (name == "exposure_gini" and opts["over"] == "groups"):
        ctx.need("items")
    if name == "diversity" and opts["by"] == "features" and items is None and features is None:
        raise ValueError("diversity(by=features) needs the items or features input")
    if name in ("unexpectedness", "intersection", "jaccard", "rbo"):
        ctx.need("baseline")
    if name == "serendipity" and baseline is None:
        ctx.need("interactions")

    metric = METRICS[name]
    if name in GLOBAL_METRICS:
        value = metric(ctx)
        return None if value is None else float(value)
    if name in TRUTH_METRICS:
        users = [u for u, t in ctx.truth.items() if any(r >= ctx.threshold for r in t.values())]
    elif name in INTENT_METRICS:
        users = _intent_population(ctx, population)
    else:
        users = list(ctx.lists)
    out = {}
    for user in users:
        value = metric(ctx, user)
        out[user] = None if value is None else float(value)
    return out


def summary(values):
    """The reported number: a global value as is; for per-user values the mean of the non-None
    ones (None when there are none)."""
    if not isinstance(values, dict):
        return values
    defined = [v for v in values.values() if v is not None]
    return sum(defined) / len(defined) if defined else None


_METRIC_RE = re.compile(r"^(?P<name>[a-z_]+)(?:\((?P<opts>[^)]*)\))?(?:@(?P<k>\d+))?$")


def parse_metric(text):
    """"diversity(by=features)@3" -> ("diversity", 3, {"by": "features"}); "rbp(p=0.5)" ->
    ("rbp", None, {"p": 0.5}).

    >>> parse_metric("err(max_grade=3)@3")
    ('err', 3, {'max_grade': 3.0})
    >>> parse_metric("auc")
    ('auc', None, {})
    """
    m = _METRIC_RE.match(text.strip())
    if not m:
        raise ValueError(f"cannot parse metric {text!r}")
    opts = {}
    if m.group("opts"):
        for part in m.group("opts").split(","):
            key, _, value = part.partition("=")
            opts[key.strip()] = _option_value(value.strip())
    k = int(m.group("k")) if m.group("k") else None
    return m.group("name"), k, opts
