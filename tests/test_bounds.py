"""Every metric stays inside the range its SQL file declares (header ``-- range:``), under every
option, convention, tie rule and population, on random inputs with graded and negative relevance
and tied scores. The metrics and their options are read from the registry, not listed here: a new
metric file must declare its range (recsql/specs.py refuses one without) and is tested at once."""
from __future__ import annotations

import math
import os
import re

import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import recsql
from recsql.conventions import CONVENTIONS, resolve_metric
from recsql.metrics import Param
from support.strategies import ITEMS, USERS, as_probabilities, recs_rows, truth_rows

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

REGISTRY = recsql.registry()
# Every metric whose declared range is bounded on at least one side under some options.
BOUNDED = sorted(n for n, spec in REGISTRY.items() if any(r != "(-inf, inf)" for r, _, _ in spec.ranges))
TIES = ["item_id", "item_id_desc", "average"]
TOLERANCE = 1e-9  # floating point: a correlation of 1 may come out as 1.0000000000000002
_BOUND = re.compile(r"^[\[(]\s*(\S+)\s*,\s*(\S+)\s*[\])]$")


def number_in(param: Param):
    """Numbers inside the option's interval (``Param.allows``), near its ends included."""
    low, high = (float(x) for x in _BOUND.match(param.interval).groups())
    low, high = max(low, -10.0), min(high, 10.0)
    edges = [low, high, low + 1e-6, high - 1e-6, 0.5, 1.0, 2.0, 4.0]
    return (st.sampled_from(edges) | st.floats(low, high)).filter(param.allows)


@st.composite
def any_metric(draw) -> recsql.Metric:
    """A metric of the registry with random options from its header (enum choices, preset
    discounts, numbers in the option's interval or ``auto``) and a random cutoff its ``k`` rule allows."""
    spec = REGISTRY[draw(st.sampled_from(BOUNDED))]
    options = {}
    for param in spec.params.values():
        if not draw(st.booleans()):
            continue
        if param.kind == "number":
            options[param.name] = draw(st.just(param.default) | number_in(param)) if param.default == "auto" \
                else draw(number_in(param))
        else:
            options[param.name] = draw(st.sampled_from(param.choices))
    k = None if spec.k_rule == "none" or (spec.k_rule == "optional" and draw(st.booleans())) \
        else draw(st.integers(1, 7))
    return recsql.Metric(spec.name, k, **options)


def with_cutoff_if_needed(metric: recsql.Metric, convention: str) -> recsql.Metric:
    """The metric, or @3 if its options need a cutoff (ndcg(ideal=list), map(denominator=k)...),
    which recsql refuses without one."""
    if metric.k is not None:
        return metric
    try:
        recsql.to_sql(metrics=[metric], items="items", interactions="interactions", catalog="catalog",
                      expected_recs="baseline", item_features="item_features", intents="intents", logs="logs",
                      slate_propensity_col="slate_propensity", cascade_propensity_col="cascade_propensity",
                      convention=convention)
    except recsql.RecsqlError as err:
        if "needs a cutoff" not in str(err):
            raise
        return recsql.Metric(metric.name, 3, **dict(metric.options))
    return metric


@st.composite
def side_inputs(draw) -> dict:
    """items (price ≥ 0, probability in [0, 1], category, dense features; some missing), sparse
    features, interactions and a catalog."""
    items = [{"item_id": item,
              "price": draw(st.sampled_from([None, 0.0, 1.0, 2.5, 10.0])),
              "probability": draw(st.sampled_from([None, 0.0, 0.01, 0.2, 0.5, 1.0])),
              "category": draw(st.sampled_from([None, "a", "b", "c"])),
              "features": draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, -1.0]), min_size=3, max_size=3))}
             for item in draw(st.lists(st.sampled_from(ITEMS), unique=True))]
    features = [{"item_id": i, "feature": f, "value": draw(st.sampled_from([0.0, 1.0, 0.5, -2.0]))}
                for i in draw(st.lists(st.sampled_from(ITEMS), unique=True))
                for f in draw(st.lists(st.sampled_from(["x", "y", "z"]), unique=True, min_size=1))]
    interactions = [{"user_id": u, "item_id": i} for u, i in
                    draw(st.lists(st.tuples(st.sampled_from(USERS + [7, 8]), st.sampled_from(ITEMS)), unique=True))]
    catalog = [{"item_id": i} for i in draw(st.lists(st.sampled_from(ITEMS + [10, 11]), unique=True))]
    intents = [{"user_id": u, "item_id": i, "intent": g, "relevance": draw(st.sampled_from([0.0, 1.0, 3.0]))}
               for u, i, g in draw(st.lists(st.tuples(st.sampled_from(USERS), st.sampled_from(ITEMS),
                                                      st.sampled_from(["a", "b"])), unique=True))]
    # logged slates: one item per (context, position), one joint propensity per context, cascade ones that never rise
    logs = [{"user_id": u, "item_id": i, "position": pos, "propensity": draw(st.sampled_from([0.01, 0.25, 0.5, 1.0])),
             "reward": draw(st.sampled_from([0.0, 1.0, 2.5, -1.0])), "slate_propensity": 0.05 * (1 + u % 3),
             "cascade_propensity": 0.5 ** pos}
            for u, i, pos in draw(st.lists(st.tuples(st.sampled_from(USERS + [7]), st.sampled_from(ITEMS),
                                                     st.sampled_from([1, 2, 3])), unique_by=lambda t: (t[0], t[2])))]
    return {"items": items, "features": features, "interactions": interactions, "catalog": catalog, "intents": intents,
            "logs": logs}


def frame(rows: list[dict], columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


RECS = {"user_id": "int64", "item_id": "int64", "score": "float64"}
RANKS = {"user_id": "int64", "item_id": "int64", "rank": "int64"}
TRUTH = {"user_id": "int64", "item_id": "int64", "relevance": "float64"}


def inside(value: float, interval: str) -> bool:
    """Whether ``value`` lies in ``interval`` (``[0, 1]``, ``[0, inf)``), up to TOLERANCE."""
    low, high = (float(x) for x in _BOUND.match(interval).groups())
    return low - TOLERANCE <= value <= high + TOLERANCE


# RECSQL_BOUNDS_EXAMPLES=2000 for a longer search (about 0.5 s an example).
@settings(max_examples=int(os.environ.get("RECSQL_BOUNDS_EXAMPLES", "150")), deadline=None)
@given(asked=st.lists(any_metric(), min_size=1, max_size=8, unique_by=str),
       use_rank=st.booleans(), data=st.data(), truth=truth_rows(), side=side_inputs(),
       dense=st.booleans(), convention=st.sampled_from(sorted(CONVENTIONS)),
       ties=st.sampled_from([None, *TIES]), population=st.sampled_from([None, "relevant", "intersection"]),
       threshold=st.sampled_from([None, 0.5, 1, 2]))
def test_every_metric_stays_in_its_declared_range(asked, use_rank, data, truth, side, dense, convention, ties,
                                                  population, threshold):
    if ties == "average":  # refused for the metrics it is not exact for: ask only the others
        exact = [m for m in asked if m.spec.supports_ties("average", resolve_metric(m, convention).all_options())]
        asked, ties = (exact, ties) if exact else (asked, None)
    # target=positions reads recs of one row per (user, item, position), which no list metric can read beside
    # it (its estimators' values: test_logs_positions.py); the slate and cascade weights are the list's or
    # target=slates' (another target is refused), and target=slates takes no other weights: those are drawn
    # with target=list here, before the cutoff probe reads them
    def valid(m: recsql.Metric) -> recsql.Metric:
        options = m.all_options()
        target, weighted = options.get("target", "list"), options.get("weights", "impression") != "impression"
        if m.spec.family == "off_policy" and target != "list" and (
                target == "positions" or (target == "slates") != weighted):
            return recsql.Metric(m.name, m.k, **{**dict(m.options), "target": "list"})
        return m
    asked = [with_cutoff_if_needed(valid(m), convention) for m in asked
             if m.all_options().get("split") != "items"]  # the items' head flags (head_col): test_beyond_properties.py
    asked = list({str(m): m for m in asked}.values())
    assume(asked)
    if use_rank and any(m.all_options().get("target") == "scores" for m in asked):
        use_rank = False  # target=scores reads the scores as probabilities: ranks alone are refused (test_logs.py)
    recs, baseline = data.draw(recs_rows(use_rank=use_rank)), data.draw(recs_rows(use_rank=use_rank))
    recs = as_probabilities(recs, asked)  # target=scores: each user's scores a policy's probabilities
    items = pd.DataFrame(side["items"], columns=["item_id", "price", "probability", "category", "features"]).astype(
        {"item_id": "int64", "price": "float64", "probability": "float64", "category": "object"})
    if not dense:
        items = items.drop(columns="features")
    try:
        result = recsql.evaluate(
            frame(recs, RANKS if use_rank else RECS), frame(truth, TRUTH), asked,
            rank_col="rank" if use_rank else None, items=items,
            interactions=frame(side["interactions"], {"user_id": "int64", "item_id": "int64"}),
            catalog=frame(side["catalog"], {"item_id": "int64"}), expected_recs=frame(baseline, RANKS if use_rank else RECS),
            item_features=None if dense else frame(side["features"], {"item_id": "int64", "feature": "object",
                                                                       "value": "float64"}),
            intents=frame(side["intents"], {"user_id": "int64", "item_id": "int64", "intent": "object",
                                            "relevance": "float64"}),
            logs=frame(side["logs"], {"user_id": "int64", "item_id": "int64", "position": "int64",
                                      "propensity": "float64", "reward": "float64", "slate_propensity": "float64",
                                      "cascade_propensity": "float64"}),
            slate_propensity_col="slate_propensity", cascade_propensity_col="cascade_propensity",
            convention=convention, ties=ties, population=population, threshold=threshold)
    except recsql.RecsqlError as err:
        # the only refusals valid options may meet: a run-level input that is empty
        assert "empty" in str(err) or "catalog" in str(err), (err, [str(m) for m in asked])
        return
    for metric in asked:
        interval = metric.spec.value_range(resolve_metric(metric, convention).all_options())
        per_user = result.per_user[metric.column] if metric.column in result.per_user else []  # global: summary only
        values = [v for v in per_user if not pd.isna(v)]
        values += [v for v in result.summary[metric.column] if not pd.isna(v)]
        for value in values:
            assert math.isfinite(value) and inside(value, interval), (str(metric), convention, value, interval)


def test_every_metric_declares_its_range():
    """The registry reads a range for every metric; the bounded ones are what the header says. The
    off-policy estimators of a reward are unbounded: a reward is any real number."""
    assert set(BOUNDED) == set(REGISTRY) - {"ips", "snips", "dm", "dr", "switch_dr", "slate_ips", "slate_iips", "slate_rips",
                                             "slate_snips", "slate_sniips", "slate_snrips", "pbm_ips"}
    for spec in REGISTRY.values():
        defaults = {p.name: p.default for p in spec.params.values()}
        assert _BOUND.match(spec.value_range(defaults)), spec.name
    assert REGISTRY["ndcg"].value_range({"discount": "log2", "ideal": "k_slots"}) == "[0, 1]"
    assert REGISTRY["ndcg"].value_range({"discount": "1.0 / rank"}) == "(-inf, inf)"  # no claim for a custom one
    assert REGISTRY["spearman"].value_range({}) == "[-1, 1]"
    assert REGISTRY["err"].value_range({"max_grade": "3"}) == "(-inf, inf)"  # grades above max_grade are not clipped


def test_ndcg_k_slots_uses_binary_gains_on_the_list():
    """k slots of gain 1 are the ideal: the list's graded gains would exceed it (was 1.84)."""
    recs = frame([{"user_id": 1, "item_id": 1, "score": 2.0}, {"user_id": 1, "item_id": 2, "score": 1.0}], RECS)
    truth = frame([{"user_id": 1, "item_id": 1, "relevance": 3.0}], TRUTH)
    got = recsql.evaluate(recs, truth, ["ndcg(ideal=k_slots)@2"]).per_user["ndcg(ideal=k_slots)@2"].iloc[0]
    assert got == pytest.approx(1 / (1 + 1 / math.log2(3)))
