"""Plain-Python reference of recsql's off-policy estimators (docs/guide/logs.md), written from the
formulas there, independently of the SQL. Standard library only; clarity over speed.

Inputs are lists of dict rows for ONE run:

    recs          {user_id, item_id, score} (or rank with use_rank=True): the target policy
    logs          {user_id, item_id, position?, propensity, reward}: one logged impression per row
    reward_model  {user_id, item_id, reward}: the predicted reward q̂(x, a)

The target's probability π_e(a | x, p) of the logged item a at the logged position p (1 without a
position): target = list, 1 if the user's list (score descending, ties by item id ascending) holds a
at position p, else 0; target = scores, the recs' score of (x, a), 0 for an item the recs do not hold
(the position is not read); target = positions, the recs' score on the row (x, a, p) (recs rows carry a
position: a stochastic ranking policy), 0 where the recs have no such row. w_i = π_e / π0, the logged propensity. Empty recs are no run: no value.

The slate estimators (target = list; slate_iips and slate_sniips also target = positions; slate_ips, slate_snips,
slate_rips, slate_snrips and ess/max_weight's slate and cascade weights also target = slates, whose recs row of
(user, item, position k) is π_e of the logged slate's items at positions 1..k: the row's own cascade probability,
and at the slate's deepest position the whole slate's) read a logged slate as the rows of one user (the context), with
their positions, and each row's slate_propensity (π0 of the whole slate) and cascade_propensity (π0 of the
slate's items at positions 1..k, on the row of position k); they average over the slates, not the rows:
slate_ips Σ_rows 1{list holds every logged item of the slate where it was logged} / slate_propensity · r,
slate_iips Σ_rows 1{list holds the row's item there} / propensity · r, slate_rips Σ_rows 1{list holds every
logged item at positions <= the row's where it was logged} / cascade_propensity · r, each / the number of
slates (McInerney et al., KDD 2020); slate_snips is slate_ips divided by the sum of the slates' weights
(each slate once) instead of their number (Swaminathan & Joachims, NeurIPS 2015), None when that sum is 0.
slate_sniips and slate_snrips divide each row's weighted reward of slate_iips and slate_rips by the mean
weight of the rows at its position (obp's SelfNormalizedSlateIndependentIPS and
SelfNormalizedSlateRewardInteractionIPS); a position whose weights sum to 0 adds 0, and the estimate is None
when every row's weight is 0. ess and max_weight with weights=slate or weights=cascade read those slate and
cascade weights (one per slate, one per row) instead of the impressions' (slate_weights).

pbm_ips (position-based model IPS) averages over the slates Σ_rows r · θ(k_e) / (θ(k) · m), k the row's logged
position, k_e the position of the row's item in the user's list (the row adds 0 where the list does not hold the
item within 1..K, K the slate's deepest logged position, or where r = 0), m = K · propensity (logging =
randomized) or 1 (logging = ranking). θ: examination = a discount of the position (given: log2, jarvelin, an
arithmetic expression in rank, or a Python function), or "logs": θ(k) =
Σ r / propensity over every logged row at position k. None where a counted row has θ(k) <= 0 or θ(k_e) < 0 or
no θ(k_e) (estimated, no logged row at k_e).
"""
from __future__ import annotations

import math

DEFAULTS = {
    "ips": {"target": "list", "cap": None},
    "snips": {"target": "list"},
    "dm": {"target": "list"},
    "dr": {"target": "list", "cap": None},
    "switch_dr": {"target": "list", "tau": None},
    "ess": {"target": "list", "weights": "impression"},
    "max_weight": {"target": "list", "weights": "impression"},
    "slate_ips": {"target": "list"},
    "slate_iips": {"target": "list"},
    "slate_rips": {"target": "list"},
    "slate_snips": {"target": "list"},
    "slate_sniips": {"target": "list"},
    "slate_snrips": {"target": "list"},
    "pbm_ips": {"examination": "logs", "logging": "randomized"},
}
SLATES = {"slate_ips", "slate_iips", "slate_rips", "slate_snips", "slate_sniips", "slate_snrips"}
NEEDS_MODEL = {"dm", "dr", "switch_dr"}


def lists_of(recs, use_rank):
    by_user = {}
    for row in recs:
        by_user.setdefault(row["user_id"], []).append(row)
    key = (lambda r: (r["rank"], r["item_id"])) if use_rank else (lambda r: (-r["score"], r["item_id"]))
    return {user: [r["item_id"] for r in sorted(rows, key=key)] for user, rows in by_user.items()}


def _number(value):
    return None if value in (None, "auto") else float(value)


def estimate(name, options, recs, logs, reward_model=None, use_rank=False):
    """The estimate of ``name`` (a key of DEFAULTS) with ``options``; None where the formula has no value
    (no logged impression, or a zero denominator)."""
    opts = {"target": "list", **DEFAULTS[name], **(options or {})}  # the slate estimators' target: the list
    if name in NEEDS_MODEL and reward_model is None:
        raise ValueError(f"{name} needs a reward model")
    lists = lists_of(recs, use_rank)
    scores = {(r["user_id"], r["item_id"]): r["score"] for r in recs} if not use_rank else {}
    at = {(r["user_id"], r["item_id"], r["position"]): r["score"] for r in recs if "position" in r}  # target=positions
    prefix = at if opts["target"] == "slates" else None  # target=slates: π_e(a_1..a_k | x) on the row of position k
    q = {(r["user_id"], r["item_id"]): r["reward"] for r in reward_model or []}

    def pi_e(row):
        if opts["target"] == "positions":
            return float(at.get((row["user_id"], row["item_id"], row.get("position", 1)), 0.0))
        if opts["target"] == "scores":
            return float(scores.get((row["user_id"], row["item_id"]), 0.0))
        ranked = lists.get(row["user_id"], [])
        position = int(row.get("position", 1) or 1)
        return 1.0 if position <= len(ranked) and ranked[position - 1] == row["item_id"] else 0.0

    def q_target(row):
        """Σ_a π_e(a | x) q̂(x, a) at the logged position."""
        user = row["user_id"]
        if opts["target"] == "positions":
            return sum(s * q[user, item] for (u, item, k), s in at.items() if u == user and k == row.get("position", 1))
        if opts["target"] == "scores":
            return sum(s * q[user, item] for (u, item), s in scores.items() if u == user)
        ranked = lists.get(user, [])
        position = int(row.get("position", 1) or 1)
        return q[user, ranked[position - 1]] if position <= len(ranked) else 0.0

    n = len(logs)
    if n == 0 or not recs:  # no impression, or no run (the runs are those of recs): no value
        return None
    if name in SLATES:
        return _slate_estimate(name, logs, pi_e, prefix)
    if name == "pbm_ips":
        terms = pbm_terms(opts, lists, logs)
        return None if terms is None else sum(terms.values()) / len(terms)
    w = [pi_e(row) / row["propensity"] for row in logs]
    if name in ("ess", "max_weight") and opts.get("weights", "impression") != "impression":
        w = slate_weights(opts["weights"], logs, pi_e, prefix)
    r = [row["reward"] for row in logs]
    if name == "ips":
        cap = _number(opts["cap"])
        return sum((wi if cap is None else min(wi, cap)) * ri for wi, ri in zip(w, r)) / n
    if name == "snips":
        return sum(wi * ri for wi, ri in zip(w, r)) / sum(w) if sum(w) != 0 else None
    if name == "ess":
        squares = sum(wi * wi for wi in w)
        return sum(w) ** 2 / squares if squares != 0 else None
    if name == "max_weight":
        return max(w)
    dm = [q_target(row) for row in logs]
    if name == "dm":
        return sum(dm) / n
    factual = [q[row["user_id"], row["item_id"]] for row in logs]
    if name == "dr":
        cap = _number(opts["cap"])
        return sum(d + (wi if cap is None else min(wi, cap)) * (ri - f)
                   for d, wi, ri, f in zip(dm, w, r, factual)) / n
    if name == "switch_dr":
        tau = _number(opts["tau"])
        return sum(d + (wi if tau is None or wi <= tau else 0.0) * (ri - f)
                   for d, wi, ri, f in zip(dm, w, r, factual)) / n
    raise ValueError(f"unknown estimator {name!r}")


def _slate_pe(rows, row, pi_e, prefix):
    """π_e of the slate ``rows``' items at the positions up to ``row``'s (rows at the same position included; ``row``
    None: the whole slate): for a list, 1 where it holds every one of them where it was logged (the least of their
    π_e); for target=slates (``prefix``), the recs' score of ``row`` (None: of the slate's deepest row)."""
    if prefix is not None:
        last = row if row is not None else max(rows, key=lambda r: r["position"])
        return float(prefix[last["user_id"], last["item_id"], last["position"]])
    return min(pi_e(other) for other in rows if row is None or other["position"] <= row["position"])


def slate_weights(kind, logs, pi_e, prefix=None):
    """ess's and max_weight's weights=slate (one per slate, as slate_ips weighs it) or weights=cascade (one per row,
    as slate_rips weighs it)."""
    slates = {}
    for row in logs:
        slates.setdefault(row["user_id"], []).append(row)
    if kind == "slate":
        return [_slate_pe(rows, None, pi_e, prefix) / rows[0]["slate_propensity"] for rows in slates.values()]
    return [_slate_pe(rows, row, pi_e, prefix) / row["cascade_propensity"] for rows in slates.values() for row in rows]


def _slate_estimate(name, logs, pi_e, prefix=None):
    """A slate estimator's value: per slate (a user's logged rows) the sum of its rows' weighted rewards,
    averaged over the slates."""
    slates = {}
    for row in logs:
        slates.setdefault(row["user_id"], []).append(row)
    if name == "slate_snips":
        weights = [_slate_pe(rows, None, pi_e, prefix) / rows[0]["slate_propensity"] for rows in slates.values()]
        rewards = [sum(row["reward"] for row in rows) for rows in slates.values()]
        return sum(w * r for w, r in zip(weights, rewards)) / sum(weights) if sum(weights) != 0 else None
    weighted = []  # (position, weight, reward) of every row
    for rows in slates.values():
        for row in rows:
            if name in ("slate_iips", "slate_sniips"):
                weight = pi_e(row) / row["propensity"]
            elif name == "slate_ips":
                weight = _slate_pe(rows, None, pi_e, prefix) / row["slate_propensity"]
            else:  # slate_rips, slate_snrips: the positions up to the row's
                weight = _slate_pe(rows, row, pi_e, prefix) / row["cascade_propensity"]
            weighted.append((row["position"], weight, row["reward"]))
    if name in ("slate_sniips", "slate_snrips"):
        if all(weight == 0 for _, weight, _ in weighted):
            return None
        at = {}  # position -> the weights of its rows
        for position, weight, _ in weighted:
            at.setdefault(position, []).append(weight)
        mean = {position: sum(weights) / len(weights) for position, weights in at.items()}
        return sum(weight * reward / mean[position] for position, weight, reward in weighted
                   if mean[position] != 0) / len(slates)
    return sum(weight * reward for _, weight, reward in weighted) / len(slates)


def pbm_terms(opts, lists, logs):
    """pbm_ips' term of each slate (user -> Σ over its rows), None where one is undefined (module docstring)."""
    if opts["examination"] == "logs":
        sums = {}
        for row in logs:
            sums[row["position"]] = sums.get(row["position"], 0.0) + row["reward"] / row["propensity"]
        theta = sums.get
    else:
        theta = _examination(opts["examination"])
    depth = {}
    for row in logs:
        depth[row["user_id"]] = max(depth.get(row["user_id"], 0), row["position"])
    terms = {user: 0.0 for user in depth}
    for row in logs:
        user, ranked = row["user_id"], lists.get(row["user_id"], [])
        at = ranked.index(row["item_id"]) + 1 if row["item_id"] in ranked else None
        if row["reward"] == 0 or at is None or at > depth[user]:
            continue
        logged, listed = theta(row["position"]), theta(at)
        if logged is None or logged <= 0 or listed is None or listed < 0:
            return None
        share = depth[user] * row["propensity"] if opts["logging"] == "randomized" else 1.0
        terms[user] += row["reward"] * listed / (logged * share)
    return terms


def _examination(given):
    """θ(k) of a given examination: a named discount, an arithmetic expression in ``rank`` (as the metric's
    option is written, e.g. ``1 / rank``) or a Python function."""
    if callable(given):
        return given
    named = {"log2": lambda k: 1.0 / math.log2(k + 1), "jarvelin": lambda k: 1.0 / max(1.0, math.log2(k))}
    if given in named:
        return named[given]
    functions = {"SQRT": math.sqrt, "POWER": math.pow, "LN": math.log, "EXP": math.exp}
    return lambda k: float(eval(given, {"__builtins__": {}}, {"rank": float(k), **functions}))  # test inputs only
