"""Beyond-accuracy metrics == the plain-Python reference (tests/support/reference_beyond.py) on random
inputs: tied scores, users with one item or none, items missing from items / features /
interactions, baselines that miss users, catalogs that miss recommended items; plus the
invariants of their definitions (docs/guide/metrics.md, "Beyond accuracy and user models")."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from support.reference_beyond import INTENT_METRICS, METRICS, personalization_pairwise, reference_beyond, summary
from support.strategies import ITEMS, USERS, as_probabilities, recs_rows, truth_rows

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

BEYOND = sorted(METRICS)  # every metric tests/support/reference_beyond.py implements (test_registry_complete.py)
OPTIONS = {"novelty": [{}, {"p": "items"}], "diversity": [{}, {"by": "features"}],
           "err": [{}, {"max_grade": 3}], "pfound": [{}, {"max_grade": 4, "p_break": 0.5}],
           # the long-tail metrics with split written: the items' head flags are given (head_col) when a drawn
           # metric asks split=items (head_col alone, the metrics not writing split: the test below)
           "aplt": [{"split": "interactions"}, {"head": 0.5, "split": "interactions"}, {"head": 1, "split": "interactions"}, {"split": "items"}],
           "aclt": [{"split": "interactions"}, {"head": 0.3, "split": "interactions"}, {"split": "items"}],
           "rbo": [{}, {"p": 0.5}, {"p": 0.98}],
           "miscalibration": [{}, {"by": "features"}, {"alpha": 0.2}, {"alpha": 0.5, "by": "features"},
                              {"patience": 0.5}, {"patience": 0.85, "by": "features"}],
           "entropy": [{}, {"by": "features"}, {"base": "2"}, {"base": "2", "by": "features"}, {"patience": 0.85, "base": "2"},
                       {"patience": 0.5, "by": "features"}],
           "exposure_disparity": [{}, {"target": "merit"}, {"weight": "geometric", "patience": 0.25, "combine": "max_min_ratio"},
                                  {"weight": "uniform", "combine": "max_min_diff"}, {"combine": "max_abs_dev", "target": "merit"},
                                  {"combine": "mean_abs_dev", "weight": "geometric"}, {"combine": "l2"}, {"combine": "variance"}],
           "exposure_gini": [{}, {"weight": "log"}, {"weight": "uniform"}, {"patience": 0.5, "over": "groups"},
                             {"weight": "log", "over": "groups"}],
           "exposure_entropy": [{}, {"weight": "log", "base": "2"}, {"weight": "uniform"}, {"patience": 0.5}],
           "lt_coverage": [{"split": "interactions"}, {"head": 0.5, "split": "interactions"}, {"head": 1, "split": "interactions"}, {"split": "items"}],
           "awrf": [{}, {"target": "items"}, {"weight": "log", "by": "features"}, {"weight": "geometric", "patience": 0.8},
                    {"weight": "geometric", "patience": 0.5, "target": "items", "by": "features"}],
           **{name: [{}, {"model": "gerr"}, {"patience": 0.8}, {"model": "gerr", "patience": 0.75, "utility": 0.25}]
              for name in ("ee_d", "ee_r", "ee_l")},
           "pop_rsp": [{"split": "interactions"}, {"head": 0.5, "split": "interactions"}, {"head": 0.3, "split": "interactions"}, {"split": "items"}],
           "pop_reo": [{"split": "interactions"}, {"head": 0.5, "split": "interactions"}, {"head": 0.3, "split": "interactions"}, {"split": "items"}],
           # alphas whose powers and sums are exact in binary, so the greedy ideal's ties are exact ties
           **{name: [{}, {"alpha": 0.75}, {"alpha": 0}] for name in ("alpha_ndcg", "alpha_dcg")},
           "ips": [{}, {"cap": 3}, {"cap": 1.5, "target": "scores"}, {"target": "scores"}],
           "dr": [{}, {"cap": 2}, {"target": "scores"}, {"cap": 4, "target": "scores"}],
           "pbm_ips": [{}, {"examination": "log2"}, {"examination": "jarvelin", "logging": "ranking"}],
           "switch_dr": [{}, {"tau": 2}, {"tau": 4, "target": "scores"}, {"target": "scores"}],
           **{name: [{}, {"target": "scores"}] for name in ("snips", "dm")},
           **{name: [{}, {"target": "scores"}, {"weights": "slate"}, {"weights": "cascade"}] for name in ("ess", "max_weight")},
           "err_ia": [{}, {"alpha": 0.75}], "nerr_ia": [{}, {"alpha": 0.75}], "nrbp": [{}, {"alpha": 0.75, "beta": 0.25}, {"alpha": 0, "beta": 0.75}],
           "nnrbp": [{}, {"alpha": 0.75, "beta": 0.25}, {"alpha": 0, "beta": 0.75}]}
CATEGORIES = ["a", "b", "c"]
LONG_TAIL = ("aplt", "aclt", "lt_coverage", "pop_rsp", "pop_reo")


@st.composite
def beyond_metric(draw) -> recsql.Metric:
    name = draw(st.sampled_from(BEYOND))
    options = draw(st.sampled_from(OPTIONS.get(name, [{}])))
    spec = recsql.registry()[name]
    k = None if spec.k_rule == "none" or (spec.k_rule == "optional" and draw(st.booleans())) else draw(st.integers(1, 6))
    return recsql.Metric(name, k, **options)


@st.composite
def side_inputs(draw) -> dict:
    """items (probability, category, dense features, head flag; some items missing or without a value),
    sparse features, interactions, a baseline and a catalog."""
    items = []
    for item in draw(st.lists(st.sampled_from(ITEMS), unique=True)):
        items.append({"item_id": item,
                      "probability": draw(st.sampled_from([None, 0.0, 0.01, 0.2, 0.5, 1.0])),
                      "category": draw(st.sampled_from([None, *CATEGORIES])),
                      "features": draw(st.lists(st.sampled_from([0.0, 1.0, 2.0, -1.0]), min_size=3, max_size=3)),
                      "head": draw(st.booleans())})
    features = [{"item_id": i, "feature": f, "value": draw(st.sampled_from([0.0, 1.0, 0.5, -2.0]))}
                for i in draw(st.lists(st.sampled_from(ITEMS), unique=True))
                for f in draw(st.lists(st.sampled_from(["x", "y", "z"]), unique=True, min_size=1))]
    interactions = [{"user_id": u, "item_id": i} for u, i in
                    draw(st.lists(st.tuples(st.sampled_from(USERS + [7, 8]), st.sampled_from(ITEMS)), unique=True))]
    catalog = [{"item_id": i} for i in draw(st.lists(st.sampled_from(ITEMS + [10, 11]), unique=True, min_size=1))]
    intents = [{"user_id": u, "item_id": i, "intent": s, "relevance": draw(st.sampled_from([0.0, 1.0, 2.0]))}
               for u, i, s in draw(st.lists(st.tuples(st.sampled_from(USERS[:5]), st.sampled_from(ITEMS),
                                                      st.sampled_from(["a", "b", "c"])), unique=True))]
    # logged slates, one item per (user, position), of users with and without lists (7 has none), as a slate
    # holds them (the logs' checks refuse any other): one joint propensity per slate, cascade propensities that
    # never rise down it; and a reward model predicting every (user, item)
    slots = draw(st.lists(st.tuples(st.sampled_from(USERS + [7]), st.integers(1, 3)), unique=True))
    joint = {u: draw(st.sampled_from([0.01, 0.05, 0.125, 1.0])) for u in USERS + [7]}
    cascade: dict = {}
    for u, p in sorted(slots):
        above = [c for (v, q), c in cascade.items() if v == u]
        cascade[u, p] = (above[-1] * draw(st.sampled_from([0.2, 0.5, 1.0])) if above
                         else draw(st.sampled_from([0.02, 0.1, 0.25, 1.0])))
    logs = [{"user_id": u, "item_id": draw(st.sampled_from(ITEMS)), "position": p,
             "propensity": draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])),
             "reward": draw(st.sampled_from([0.0, 1.0, 0.5, -1.0])),
             "slate_propensity": joint[u], "cascade_propensity": cascade[u, p]} for u, p in slots]
    reward_model = [{"user_id": u, "item_id": i, "reward": draw(st.sampled_from([0.0, 0.2, 0.5, 1.0]))}
                    for u in USERS + [7] for i in ITEMS]
    return {"items": items, "features": features, "interactions": interactions, "catalog": catalog,
            "baseline": draw(recs_rows()), "intents": intents, "logs": logs, "reward_model": reward_model}


def frame(rows: list[dict], columns: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns)).astype(columns)


RECS = {"user_id": "int64", "item_id": "int64", "score": "float64"}
TRUTH = {"user_id": "int64", "item_id": "int64", "relevance": "float64"}


def head_given(metrics: list[recsql.Metric]) -> bool:
    """The items' head flags are given (head_col) when a metric asks split=items."""
    return any(dict(m.options).get("split") == "items" for m in metrics)


def evaluate(metrics: list[recsql.Metric], recs, truth, side: dict, dense: bool) -> recsql.Evaluation:
    items = pd.DataFrame(side["items"], columns=["item_id", "probability", "category", "features", "head"]).astype(
        {"item_id": "int64", "probability": "float64", "category": "object", "head": "bool"})
    if not dense:
        items = items.drop(columns="features")
    return recsql.evaluate(
        frame(recs, RECS), frame(truth, TRUTH), metrics,
        items=items, interactions=frame(side["interactions"], {"user_id": "int64", "item_id": "int64"}),
        catalog=frame(side["catalog"], {"item_id": "int64"}), expected_recs=frame(side["baseline"], RECS),
        intents=frame(side["intents"], {"user_id": "int64", "item_id": "int64", "intent": "object", "relevance": "float64"}),
        logs=frame(side["logs"], {"user_id": "int64", "item_id": "int64", "position": "int64", "propensity": "float64",
                                  "reward": "float64", "slate_propensity": "float64", "cascade_propensity": "float64"}),
        slate_propensity_col="slate_propensity", cascade_propensity_col="cascade_propensity",
        reward_model=frame(side["reward_model"], {"user_id": "int64", "item_id": "int64", "reward": "float64"}),
        item_features=None if dense else frame(side["features"], {"item_id": "int64", "feature": "object",
                                                                   "value": "float64"}),
        head_col="head" if head_given(metrics) else None)


def close(got, want) -> bool:
    if want is None:
        return got is None or pd.isna(got)
    return got is not None and not pd.isna(got) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=80)
@given(recs=recs_rows(), truth=truth_rows(), side=side_inputs(),
       asked=st.lists(beyond_metric(), min_size=1, max_size=5, unique_by=str), dense=st.booleans())
def test_beyond_metrics_match_reference(recs, truth, side, asked, dense):
    recs = as_probabilities(recs, asked)  # target=scores: each user's scores a policy's probabilities
    result = evaluate(asked, recs, truth, side, dense)
    reference_inputs = dict(items=side["items"], features=None if dense else side["features"],
                            interactions=side["interactions"], catalog=side["catalog"], intents=side["intents"],
                            logs=side["logs"], reward_model=side["reward_model"])
    for metric in asked:
        # with the baseline input given, serendipity and unexpectedness use it
        expected = reference_beyond(metric.name, metric.k, dict(metric.options), recs, truth,
                                    baseline=side["baseline"], **reference_inputs)
        got_summary = result.summary[metric.column].iloc[0]
        assert close(got_summary, summary(expected)), (str(metric), got_summary, summary(expected))
        if isinstance(expected, dict):
            rows = result.per_user.set_index("user_id")[metric.column]
            for user, value in expected.items():
                assert close(rows.get(user), value), (str(metric), user, rows.get(user), value)
            assert {u for u, v in rows.items() if not pd.isna(v)} <= set(expected), str(metric)


@settings(max_examples=40)
@given(recs=recs_rows(), side=side_inputs(), population=st.sampled_from(["relevant", "judged", "intersection"]),
       asked=st.lists(beyond_metric().filter(lambda m: m.name in INTENT_METRICS), min_size=1, max_size=3, unique_by=str))
def test_intent_aware_populations_match_reference(recs, side, population, asked):
    """The intent-aware metrics under each population= (intents in truth's role; users of intents without a
    list, USERS[:5] in intents, scoring 0) as the reference computes them, and n_users_intents its size."""
    intents = frame(side["intents"], {"user_id": "int64", "item_id": "int64", "intent": "object", "relevance": "float64"})
    result = recsql.evaluate(frame(recs, RECS), None, asked, intents=intents, population=population)
    for metric in asked:
        expected = reference_beyond(metric.name, metric.k, dict(metric.options), recs, intents=side["intents"],
                                    population=population)
        assert result.summary["n_users_intents"].iloc[0] == len(expected), (str(metric), population)
        assert close(result.summary[metric.column].iloc[0], summary(expected)), (str(metric), population)
        rows = result.per_user.set_index("user_id")[metric.column]
        for user, value in expected.items():
            assert close(rows.get(user), value), (str(metric), population, user, rows.get(user), value)
        assert {u for u, v in rows.items() if not pd.isna(v)} <= set(expected), (str(metric), population)


@settings(max_examples=30)
@given(recs=recs_rows(), truth=truth_rows(), interactions=st.lists(st.tuples(st.sampled_from(USERS),
                                                                              st.sampled_from(ITEMS)), unique=True),
       k=st.integers(1, 5))
def test_serendipity_without_a_baseline_uses_the_most_popular_items(recs, truth, interactions, k):
    seen = [{"user_id": u, "item_id": i} for u, i in interactions]
    result = recsql.evaluate(frame(recs, RECS), frame(truth, TRUTH), [f"serendipity@{k}"],
                             interactions=frame(seen, {"user_id": "int64", "item_id": "int64"}))
    expected = reference_beyond("serendipity", k, {}, recs, truth, interactions=seen)
    assert close(result.summary[f"serendipity@{k}"].iloc[0], summary(expected))


@settings(max_examples=40)
@given(recs=recs_rows(), side=side_inputs(),
       weighted=st.lists(st.tuples(st.sampled_from(USERS + [7]), st.sampled_from(ITEMS),
                                   st.sampled_from([0.0, 0.5, 1.0, 2.5, 1e-3]))),
       options=st.sampled_from(OPTIONS["miscalibration"]), k=st.integers(1, 6), dense=st.booleans())
def test_miscalibration_with_history_weights_matches_reference(recs, side, weighted, options, k, dense):
    """Steck's weighted history (interaction_weight_col): w_ui = the sum of the weights of a user's
    interactions with i (an item seen twice weighs both; weight 0 leaves it out), against the reference."""
    rows = [{"user_id": u, "item_id": i, "weight": w} for u, i, w in weighted]
    side = {**side, "interactions": rows}
    metric = recsql.Metric("miscalibration", k, **options)
    items = pd.DataFrame(side["items"], columns=["item_id", "probability", "category", "features"]).astype(
        {"item_id": "int64", "probability": "float64", "category": "object"})
    result = recsql.evaluate(
        frame(recs, RECS), None, [metric], items=items if dense else items.drop(columns="features"),
        interactions=frame(rows, {"user_id": "int64", "item_id": "int64", "weight": "float64"}),
        item_features=None if dense else frame(side["features"], {"item_id": "int64", "feature": "object",
                                                                   "value": "float64"}),
        interaction_weight_col="weight")
    expected = reference_beyond("miscalibration", k, dict(metric.options), recs, None, items=side["items"],
                                features=None if dense else side["features"], interactions=rows)
    rows_got = result.per_user.set_index("user_id")[metric.column] if len(result.per_user) else pd.Series(dtype=float)
    for user, value in expected.items():
        assert close(rows_got.get(user), value), (str(metric), user, rows_got.get(user), value)
    assert close(result.summary[metric.column].iloc[0] if len(result.summary) else None, summary(expected))


# a head flag as a user's table may hold it: booleans, 0/1 integers, 1.0/0.0 floats, or the words
HEAD_TYPES = {"bool": lambda f: bool(f), "int64": lambda f: int(f), "float64": lambda f: float(f),
              "object": lambda f: "TRUE" if f else "false"}


@settings(max_examples=60)
@given(recs=recs_rows(), truth=truth_rows(), side=side_inputs(),
       flags=st.dictionaries(st.sampled_from(ITEMS), st.booleans()), kind=st.sampled_from(sorted(HEAD_TYPES)),
       asked=st.lists(st.tuples(st.sampled_from(LONG_TAIL), st.sampled_from(["", "split=items", "split=interactions",
                                                                            "split=interactions,head=0.5"])),
                      min_size=1, max_size=4, unique=True), k=st.integers(1, 6))
def test_long_tail_with_the_head_from_items_matches_reference(recs, truth, side, flags, kind, asked, k):
    """head_col given: the long-tail metrics split head and tail by the items' flag (split=items, their
    default then; an item missing from items in neither group), or by interactions' share where
    split=interactions is written, in one evaluation; against the reference."""
    items = frame([{"item_id": i, "head": HEAD_TYPES[kind](f)} for i, f in flags.items()],
                  {"item_id": "int64", "head": kind})
    metrics = [f"{name}({options})@{k}" if options else f"{name}@{k}" for name, options in asked]
    result = recsql.evaluate(frame(recs, RECS), frame(truth, TRUTH), metrics, items=items, head_col="head",
                             interactions=frame(side["interactions"], {"user_id": "int64", "item_id": "int64"}))
    for column, (name, options) in zip(metrics, asked):
        written = dict(o.split("=") for o in options.split(",") if o)
        expected = reference_beyond(name, k, {"split": "items", **written}, recs, truth,
                                    items=[{"item_id": i, "head": f} for i, f in flags.items()],
                                    interactions=side["interactions"])
        assert close(result.summary[column].iloc[0], summary(expected)), (column, summary(expected))
        if isinstance(expected, dict):
            rows = result.per_user.set_index("user_id")[column]
            for user, value in expected.items():
                assert close(rows.get(user), value), (column, user, rows.get(user), value)


def test_head_col_refuses_what_would_give_another_number():
    """head_col with a share written (head=), split=items without head_col, head_col without items, and a
    flag that is no flag (NULL, 2, 'yes') are refused, each naming the option or the column."""
    recs = frame([{"user_id": 1, "item_id": 1, "score": 1.0}], RECS)
    items = pd.DataFrame({"item_id": [1, 2], "is_head": [True, False]})
    with pytest.raises(recsql.RecsqlError, match=r"head= sizes the head by a share of interactions.*drop head=, or "
                                                 r"write split=interactions"):
        recsql.evaluate(recs, None, ["aplt(head=0.5)@5"], items=items, head_col="is_head")
    with pytest.raises(recsql.RecsqlError, match=r"needs the items' head flags \(split=items\).*name that column: "
                                                 r"head_col="):
        recsql.evaluate(recs, None, ["lt_coverage(split=items)@5"], items=items)
    with pytest.raises(recsql.RecsqlError, match=r"head_col='is_head' names the items column flagging the head, but "
                                                 r"items= was not given"):
        recsql.evaluate(recs, None, ["aplt@5"], head_col="is_head")
    with pytest.raises(recsql.RecsqlError, match=r"items \(DataFrame\) has no column 'flag'.*head_col="):
        recsql.evaluate(recs, None, ["aplt@5"], items=items, head_col="flag")
    for bad in ([True, None], [1, 2], ["true", "yes"]):
        flagged = pd.DataFrame({"item_id": [1, 2], "is_head": pd.Series(bad, dtype=object if None in bad or
                                                                          isinstance(bad[0], str) else None)})
        with pytest.raises(recsql.RecsqlError, match=r"items column 'is_head' has 1 invalid value\(s\): a head flag "
                                                     r"\(head_col=\) must be true/false or 1/0"):
            recsql.evaluate(recs, None, ["aclt@5"], items=flagged, head_col="is_head")
    # the items' flags alone: no interactions needed
    assert recsql.evaluate(recs, None, ["aplt@5"], items=items, head_col="is_head").summary["aplt@5"].iloc[0] == 0


@settings(max_examples=30)
@given(recs=recs_rows(), k=st.integers(1, 5))
def test_list_and_global_metrics_need_no_truth(recs, k):
    """Without truth, personalization equals its pairwise definition (1 − mean overlap / k),
    coverage lies in [0, 1] and the per-user table holds every user with recommendations."""
    asked = [f"personalization@{k}", f"coverage@{k}", f"gini@{k}"]
    result = recsql.evaluate(frame(recs, RECS), None, asked)
    want = personalization_pairwise(recs, k)
    assert close(result.summary[f"personalization@{k}"].iloc[0], want)
    coverage = result.summary[f"coverage@{k}"].iloc[0]
    assert (not recs and pd.isna(coverage)) or 0 <= coverage <= 1
    assert list(result.per_user.columns) == ["user_id"]  # global metrics only: no per-user columns


def test_personalization_identical_and_disjoint_lists():
    same = [{"user_id": u, "item_id": i, "score": 1.0 / i} for u in (1, 2, 3) for i in (1, 2)]
    disjoint = [{"user_id": u, "item_id": 10 * u + i, "score": 1.0 / i} for u in (1, 2, 3) for i in (1, 2)]
    assert recsql.evaluate(frame(same, RECS), None, ["personalization@2"]).summary.iloc[0]["personalization@2"] == 0
    assert recsql.evaluate(frame(disjoint, RECS), None, ["personalization@2"]).summary.iloc[0]["personalization@2"] == 1


def test_single_category_list_has_zero_diversity():
    recs = [{"user_id": 1, "item_id": i, "score": float(i)} for i in (1, 2, 3)]
    items = pd.DataFrame({"item_id": [1, 2, 3], "category": ["x", "x", "x"]})
    assert recsql.evaluate(frame(recs, RECS), None, ["diversity@3"], items=items).summary["diversity@3"].iloc[0] == 0


@settings(max_examples=40)
@given(recs=recs_rows(), truth=truth_rows(), k=st.integers(1, 6))
def test_cascade_metrics_lie_in_unit_interval(recs, truth, k):
    result = recsql.evaluate(frame(recs, RECS), frame(truth, TRUTH), [f"err@{k}", f"pfound@{k}", f"coverage@{k}"])
    for column in (f"err@{k}", f"pfound@{k}"):
        values = result.per_user[column].dropna()
        assert ((values >= -1e-12) & (values <= 1 + 1e-12)).all(), column
    coverage = result.summary[f"coverage@{k}"].iloc[0]
    assert pd.isna(coverage) or 0 <= coverage <= 1


@settings(max_examples=40)
@given(truth=truth_rows(), k=st.integers(2, 6))
def test_rank_correlation_is_one_for_a_list_sorted_by_relevance(truth, k):
    """Recommending the judged items by relevance (distinct grades, best first) gives Spearman and
    Kendall 1 wherever they are defined."""
    by_user: dict[int, dict[int, float]] = {}
    for row in truth:
        by_user.setdefault(row["user_id"], {})[row["item_id"]] = row["relevance"]
    distinct = [{"user_id": u, "item_id": i, "relevance": float(rank)}
                for u, items in by_user.items() for rank, i in enumerate(sorted(items), start=1)]
    recs = [{"user_id": r["user_id"], "item_id": r["item_id"], "score": r["relevance"]} for r in distinct]
    result = recsql.evaluate(frame(recs, RECS), frame(distinct, TRUTH), [f"spearman@{k}", f"kendall@{k}"])
    for column in (f"spearman@{k}", f"kendall@{k}"):
        values = result.per_user[column].dropna()
        assert all(math.isclose(v, 1.0) for v in values), column


def test_global_metric_needs_no_population_and_sits_in_the_summary():
    recs = frame([{"user_id": 1, "item_id": 1, "score": 1.0}, {"user_id": 2, "item_id": 2, "score": 1.0}], RECS)
    truth = frame([{"user_id": 1, "item_id": 1, "relevance": 1.0}], TRUTH)
    result = recsql.evaluate(recs, truth, ["ndcg@1", "coverage@1", "novelty@1"],
                             interactions=frame([{"user_id": 9, "item_id": 1}], {"user_id": "int64", "item_id": "int64"}))
    assert "coverage@1" in result.summary.columns and "coverage@1" not in result.per_user.columns
    assert result.summary["coverage@1"].iloc[0] == 1.0  # catalog = truth ∪ recs = {1, 2}, both shown
    # ndcg averages over user 1 (relevant truth); novelty over users 1 and 2 (recommendations)
    rows = result.per_user.set_index("user_id")
    assert rows.loc[1, "ndcg@1"] == 1.0 and pd.isna(rows.loc[2, "ndcg@1"])
    assert rows.loc[1, "novelty@1"] == 0.0 and rows.loc[2, "novelty@1"] == 0.0  # p(1) = 1; item 2 unseen adds 0
    assert result.summary["ndcg@1"].iloc[0] == 1.0
    assert list(result.per_user["user_id"]) == [1, 2]
    # one count per population: ndcg's (relevant truth: user 1), novelty's (recommendations: 1 and 2)
    assert result.summary[["n_users", "n_users_with_recs"]].iloc[0].tolist() == [1, 2]


@pytest.mark.parametrize("metric,fix", [
    ("novelty@3", "interactions="), ("novelty(p=items)@3", "items="), ("unexpectedness@3", "expected_recs="),
    ("serendipity@3", "expected_recs="), ("diversity@3", "items="), ("diversity(by=features)@3", "item_features="),
    ("arp@3", "interactions="), ("ndcg@3", "truth="), ("auc@3", "truth="),
])
def test_missing_input_is_a_clear_error(metric, fix):
    recs = frame([{"user_id": 1, "item_id": 1, "score": 1.0}], RECS)
    truth = frame([{"user_id": 1, "item_id": 1, "relevance": 1.0}], TRUTH) if fix != "truth=" else None
    with pytest.raises(recsql.RecsqlError, match=fix):
        recsql.evaluate(recs, truth, [metric])
