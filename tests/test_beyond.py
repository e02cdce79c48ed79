"""Beyond-accuracy and user-model metrics (docs/guide/metrics.md, "Beyond accuracy and user models"): hand-computed fixture cases
(fixtures/worked/beyond.json, each with its arithmetic written out in `derivation`), the seeds'
worked examples (novelty, accuracy), and the plain-Python reference (tests/support/reference_beyond.py)
agreeing with both."""
from __future__ import annotations

import math

import pandas as pd
import pytest

import recsql
from support.cases import load, metric_of, per_user, run
from support.reference_beyond import parse_metric as reference_parse
from support.reference_beyond import reference_beyond, summary

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

CASES = load("worked/beyond.json")
SEEDS = [c for c in load("worked/seeds.json") if c["issue"] == 5]


def same(got, want, tol: float) -> bool:
    if want is None:
        return got is None or pd.isna(got)
    return got is not None and not pd.isna(got) and math.isclose(got, want, rel_tol=tol, abs_tol=tol)


def check(case: dict, result: recsql.Evaluation) -> None:
    metric = metric_of(case)
    tol = case.get("tolerance", 1e-12)
    assert "expected" in case, "case asserts nothing"  # an expected None asserts NULL
    assert same(result.summary[metric.column].iloc[0], case["expected"], tol), (result.summary, case["expected"])
    if metric.spec.population == "global":
        assert metric.column not in result.per_user.columns  # one number per run, in the summary only
        return
    got = per_user(result, metric)
    for user, value in (case.get("expected_per_user") or {}).items():
        assert same(got.get(user), value, tol), (user, got.get(user), value)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_hand_computed_case(case):
    check(case, run(case))


@pytest.mark.parametrize("case", SEEDS, ids=[c["id"] for c in SEEDS])
def test_seed_worked_example(case):
    check(case, run(case))


def test_every_metric_of_spec_4_has_cases():
    names = {metric_of(c).name for c in CASES}
    assert names >= {"novelty", "surprisal", "unexpectedness", "serendipity", "diversity", "arp", "coverage", "gini",
                     "personalization", "auc", "accuracy", "err", "pfound", "spearman", "kendall", "rbp"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reference_agrees_with_the_hand_computation(case):
    """The plain-Python reference, written from the README's definitions alone, reproduces every hand-computed value."""
    name, k, options = reference_parse(case["metric"])
    inputs = {key: case.get(key) for key in ("items", "features", "interactions", "catalog", "baseline", "intents", "logs",
                                             "reward_model")}
    given = case.get("options", {})
    if given.get("head_col"):  # a head flag of items: the long-tail metrics split by it (split=items)
        assert given["head_col"] == "head", "the reference reads the items' head flag as 'head'"
        options = {"split": "items", **options}
    values = reference_beyond(name, k, options, case["recs"], case.get("truth"), threshold=given.get("threshold", 1),
                              population=given.get("population", "relevant"), **inputs)
    assert same(summary(values), case["expected"], case.get("tolerance", 1e-12))


def test_global_metrics_of_a_run_without_recommendations_are_null():
    """An empty recommendations input exposes nothing: coverage, gini and personalization are NULL
    (README), even with a non-empty catalog; with run keys there is no run, so no summary row."""
    recs = pd.DataFrame({"user_id": pd.Series([], dtype="int64"), "item_id": pd.Series([], dtype="int64"),
                         "score": pd.Series([], dtype="float64")})
    catalog = pd.DataFrame({"item_id": [1, 2, 3]})
    asked = ["coverage@2", "gini@2", "personalization@2"]
    result = recsql.evaluate(recs, None, asked, catalog=catalog)
    assert result.summary[asked].isna().all(axis=None)
    assert list(result.summary.columns) == asked  # global metrics average over nobody: no user count, no truth diagnostics
    by_run = recsql.evaluate(recs.assign(model=pd.Series([], dtype=object)), None, asked, catalog=catalog,
                             run_cols=["model"])
    assert len(by_run.summary) == 0
    for name in asked:
        assert reference_beyond(name.split("@")[0], 2, {}, [], catalog=[{"item_id": i} for i in (1, 2, 3)]) is None


def test_novelty_reads_the_items_probability_when_no_interactions_are_given():
    """README: p = the items' given probability is the default when no interactions are given."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.9, 0.8]})
    items = pd.DataFrame({"item_id": [1, 2], "probability": [0.5, 0.25]})
    interactions = pd.DataFrame({"user_id": [5, 6, 6], "item_id": [1, 1, 2]})
    got = recsql.evaluate(recs, None, ["novelty@2"], items=items).summary["novelty@2"].iloc[0]
    assert got == pytest.approx((1 + 2) / 2)  # (-log2 0.5 - log2 0.25) / #L
    # with interactions the default stays p = n_i / U_I: item 1 seen by both users, item 2 by one
    got = recsql.evaluate(recs, None, ["novelty@2"], items=items, interactions=interactions).summary
    assert got["novelty@2"].iloc[0] == pytest.approx((0 + 1) / 2)
    # to_sql picks the same default from the inputs it is given
    assert '"probability"' in recsql.to_sql(metrics=["novelty@2"], truth=None, items="items")
    with pytest.raises(recsql.RecsqlError, match=r"needs training interactions.*or write p=items, which needs item "
                                                 r"probabilities"):
        recsql.evaluate(recs, None, ["novelty@2"])
    with pytest.raises(recsql.RecsqlError, match="needs training interactions: pass interactions="):
        recsql.evaluate(recs, None, ["novelty(p=interactions)@2"], items=items)  # written explicitly: kept
