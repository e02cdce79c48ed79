"""A stochastic target of whole slates (docs/guide/logs.md, "The target policy": target=slates): each recs row
(context, item, position k, probability) is π_e(a_1..a_k | x), the target's probability of the logged slate's items
at positions 1..k. slate_rips and slate_snrips read it per row, slate_ips and slate_snips at the slate's last
position, ess and max_weight with weights=slate or cascade likewise. Checked by hand (and fixtures/worked/beyond.json's
slate_ips-slates and slate_rips-slates), against the plain-Python reference on random logs and prefix probabilities
(hypothesis), against obp (test_logs_obp.py) and on every engine (test_engines.py); each refusal names the input and
the fix."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from support.reference_logs import estimate

# fixtures/worked/beyond.json's slate_rips-logs: three logged slates
LOGS = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 2, 3, 3], "item_id": [10, 11, 12, 12, 11, 10, 10, 12],
                     "position": [1, 2, 3, 1, 2, 3, 1, 2], "propensity": [0.5, 0.4, 0.5, 0.25, 0.5, 0.5, 0.5, 0.5],
                     "slate_propensity": [0.2, 0.2, 0.2, 0.05, 0.05, 0.05, 0.25, 0.25],
                     "cascade_propensity": [0.5, 0.25, 0.2, 0.25, 0.1, 0.05, 0.5, 0.25],
                     "reward": [1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]})
# a Plackett-Luce ranking of items 10, 11, 12 with weights 0.5, 0.3, 0.2: its probability of each slate's prefix
RECS = LOGS[["user_id", "item_id", "position"]].assign(score=[0.5, 0.3, 0.3, 0.2, 0.075, 0.075, 0.5, 0.2])
COLUMNS = {"slate_propensity_col": "slate_propensity", "cascade_propensity_col": "cascade_propensity"}

# the options the property test draws, per estimator (tests/test_registry_complete.py reads them)
OPTIONS = {"slate_ips": [{"target": "slates"}], "slate_snips": [{"target": "slates"}],
           "slate_rips": [{"target": "slates"}], "slate_snrips": [{"target": "slates"}],
           "ess": [{"target": "slates", "weights": "slate"}, {"target": "slates", "weights": "cascade"}],
           "max_weight": [{"target": "slates", "weights": "slate"}, {"target": "slates", "weights": "cascade"}]}


def test_the_estimators_by_hand():
    """Slate 1 (10, 11, 12): 0.5, then 0.3/0.5 of what is left: 0.3, then 1: 0.3; slate 2 (12, 11, 10): 0.2, 0.2 ·
    0.3/0.8 = 0.075, 0.075; slate 3 (10, 12): 0.5, 0.5 · 0.2/0.5 = 0.2. Cascade weights 1, 1.2, 1.5 | 0.8, 0.75, 1.5 |
    1, 0.8 (rewards 1, 1, 0 | 0, 1, 1 | 1, 1); slate weights (the last prefix / the joint propensity) 0.3/0.2 = 1.5,
    0.075/0.05 = 1.5, 0.2/0.25 = 0.8, each slate's rewards summing to 2."""
    metrics = [f"{name}(target=slates)" for name in ("slate_ips", "slate_snips", "slate_rips", "slate_snrips")] + [
        f"{name}(target=slates,weights={kind})" for name in ("ess", "max_weight") for kind in ("slate", "cascade")]
    got = recsql.evaluate(RECS, None, metrics, logs=LOGS, **COLUMNS).summary.iloc[0]
    cascade = [1, 1.2, 1.5, 0.8, 0.75, 1.5, 1, 0.8]
    want = {"slate_ips(target=slates)": (1.5 * 2 + 1.5 * 2 + 0.8 * 2) / 3,  # 38/15
            "slate_snips(target=slates)": 7.6 / 3.8,
            "slate_rips(target=slates)": (2.2 + 2.25 + 1.8) / 3,  # 25/12
            # mean weights per position: (1 + 0.8 + 1)/3, (1.2 + 0.75 + 0.8)/3, (1.5 + 1.5)/2
            "slate_snrips(target=slates)": (2 / (2.8 / 3) + 2.75 / (2.75 / 3) + 1.5 / 1.5) / 3,  # 43/21
            "ess(target=slates,weights=slate)": 3.8 ** 2 / (1.5 ** 2 + 1.5 ** 2 + 0.8 ** 2),
            "ess(target=slates,weights=cascade)": sum(cascade) ** 2 / sum(w * w for w in cascade),
            "max_weight(target=slates,weights=slate)": 1.5, "max_weight(target=slates,weights=cascade)": 1.5}
    for metric, value in want.items():
        assert got[metric] == pytest.approx(value, rel=1e-12), metric
    assert want["slate_ips(target=slates)"] == pytest.approx(38 / 15) and want["slate_snrips(target=slates)"] == \
        pytest.approx(43 / 21)


@st.composite
def slates(draw):
    """Logged slates of up to three users (positions 1..m), with marginal, joint and cascade
    propensities; per run (two runs) the target's probability of each logged slate's prefixes: products of factors
    in {0, 0.25, 0.5, 1} down the slate (never rising), one recs row per logged row."""
    logs, recs = [], []
    for user in draw(st.lists(st.integers(1, 3), min_size=1, max_size=3, unique=True)):
        items = draw(st.lists(st.integers(10, 15), min_size=1, max_size=3))  # an item may be shown twice
        joint, cascade = draw(st.sampled_from([0.01, 0.05, 0.2, 1.0])), 1.0
        for position, item in enumerate(items, start=1):
            cascade *= draw(st.sampled_from([0.2, 0.5, 1.0]))
            logs.append({"user_id": user, "item_id": item, "position": position,
                         "propensity": draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])),
                         "reward": draw(st.sampled_from([0.0, 1.0, 0.5, -1.0])),
                         "slate_propensity": joint, "cascade_propensity": cascade})
        for run in ("a", "b"):
            prefix = 1.0
            for position, item in enumerate(items, start=1):
                prefix *= draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
                recs.append({"run": run, "user_id": user, "item_id": item, "position": position, "score": prefix})
    return recs, logs


@settings(max_examples=60, deadline=None)
@given(data=slates(), metric=st.sampled_from([(name, options) for name, choices in OPTIONS.items()
                                                for options in choices]))
def test_the_estimators_equal_the_reference(data, metric):
    recs, logs = data
    name, options = metric
    asked = recsql.Metric(name, **options)
    got = recsql.evaluate(pd.DataFrame(recs), None, [asked], logs=pd.DataFrame(logs), run_cols="run",
                          min_ess_share=0, **COLUMNS).summary.set_index("run")
    for run in ("a", "b"):
        want = estimate(name, options, [r for r in recs if r["run"] == run], logs)
        value = got.loc[run, asked.column]
        if want is None:
            assert pd.isna(value), (str(asked), run, value)
        else:
            assert math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-12), (str(asked), run, value, want)


MISMATCH = r"recs \(target=slates\) and logs disagree on {} row\(s\): every logged row needs its recs row"


@pytest.mark.parametrize("change,message", [
    (lambda r: r.assign(score=[1.5, *r.score[1:]]),
     r"recs column 'score' has 1 score\(s\) outside \[0, 1\]; with target=slates the score is the target policy's "
     r"probability of the logged slate's items at positions 1..k"),
    (lambda r: r.assign(score=[0.3, 0.5, *r.score[2:]]),  # slate 1's prefix of two likelier than its first item
     r"recs column 'score': with target=slates .* 1 row\(s\) exceed the score of an earlier position of their slate: "
     r"give each row the product"),
    (lambda r: r.assign(score=[0.5, 0.3, 0.3 + 2e-9, *r.score[3:]]), r"1 row\(s\) exceed"),  # beyond 1e-9
    (lambda r: r.iloc[1:], MISMATCH.format(1)),  # a logged row without its probability: never read as 0
    (lambda r: pd.concat([r, pd.DataFrame({"user_id": [4], "item_id": [10], "position": [1], "score": [0.5]})]),
     MISMATCH.format(1)),  # a recs row of no logged row
    (lambda r: r.assign(item_id=[10, 11, 12, 12, 11, 10, 10, 11]), MISMATCH.format(2)),  # another item at 2 of slate 3
    (lambda r: pd.concat([r, r.iloc[[0]].assign(item_id=13)]),
     r"recs has 1 duplicated \(user_id, position\) row\(s\).*user_id=1, position=1.*one recs row per logged row"),
    (lambda r: r.drop(columns="position"), r"recs \(DataFrame\) has no column 'position'.*position_col="),
])
def test_probabilities_that_are_no_slates_are_refused(change, message):
    with pytest.raises(recsql.RecsqlError, match=message):
        recsql.evaluate(change(RECS), None, ["slate_rips(target=slates)"], logs=LOGS, **COLUMNS)


def test_a_rounding_within_1e_9_is_accepted():
    got = recsql.evaluate(RECS.assign(score=[0.5, 0.3, 0.3 + 5e-10, *RECS.score[3:]]), None,
                          ["slate_rips(target=slates)"], logs=LOGS, **COLUMNS).summary.iloc[0]
    assert got["slate_rips(target=slates)"] == pytest.approx(25 / 12, rel=1e-9)


@pytest.mark.parametrize("metrics,message", [
    (["slate_ips(target=slates)", "ndcg@3"], r"metric 'ndcg@3' reads the recs as lists, and "
                                             r"'slate_ips\(target=slates\)' as the probabilities of the logged slates'"),
    (["slate_rips(target=slates)", "slate_ips"], r"metric 'slate_ips' reads the recs as lists"),
    (["slate_rips(target=slates)", "slate_iips(target=positions)"],
     r"metrics 'slate_rips\(target=slates\)' and 'slate_iips\(target=positions\)' read the recs' scores as two "
     r"different policies"),
    (["ess(target=slates)"], r"metric 'ess\(target=slates\)': target=slates gives .* add weights=slate or "
                             r"weights=cascade"),
    (["ips(target=slates)"], r"metric 'ips': option target='slates' is not valid; choose one of list, scores, positions"),
    (["slate_iips(target=slates)"], r"metric 'slate_iips': option target='slates' is not valid"),
    (["ess(target=positions,weights=cascade)"], r"drop target=positions, or give those probabilities with target=slates"),
])
def test_what_cannot_read_the_slates_probabilities_is_refused(metrics, message):
    with pytest.raises(recsql.RecsqlError, match=message):
        recsql.evaluate(RECS, LOGS[["user_id", "item_id"]], metrics, logs=LOGS, **COLUMNS)


def test_per_run_each_run_needs_every_logged_row():
    """Two runs: run b lacks slate 3's second row, so it is refused whatever run a holds."""
    recs = pd.concat([RECS.assign(run="a"), RECS.assign(run="b").iloc[:-1]])
    with pytest.raises(recsql.RecsqlError, match=MISMATCH.format(1)):
        recsql.evaluate(recs, None, ["slate_ips(target=slates)"], logs=LOGS, run_cols="run", **COLUMNS)


def test_to_sql():
    sql = recsql.to_sql("recs", None, ["slate_rips(target=slates)"], logs="logs", dialect="postgres",
                        cascade_propensity_col="cp")
    assert "recs_slate_mismatch" in sql and "recs_policy_excess" in sql


def test_an_invalid_logged_row_is_refused_as_such_first():
    """A logged row with a NULL position matches no recs row; the logs' own check names it, not the mismatch."""
    logs = LOGS.astype({"position": float}).assign(position=[None, *LOGS.position[1:]])
    with pytest.raises(recsql.RecsqlError, match=r"logs .*position"):
        recsql.evaluate(RECS, None, ["slate_rips(target=slates)"], logs=logs, **COLUMNS)
