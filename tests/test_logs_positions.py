"""A stochastic target ranking per position (docs/guide/logs.md, "The target policy": target=positions): the
recs rows (context, item, position, probability) are π_e(a at k | x). Checked against the plain-Python
reference on random mixtures of rankings (hypothesis), by hand, against obp (test_logs_obp.py) and on every
engine (test_engines.py); the probabilities are checked (target=scores too), each refusal naming the column
and the fix."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from recsql.cli import main
from support.reference_logs import estimate

LOGS = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [10, 11, 10, 12], "position": [1, 2, 1, 2],
                     "propensity": [0.5, 0.25, 0.5, 0.5], "reward": [1.0, 0.0, 0.0, 1.0]})
# user 1 shows [10, 11] or [11, 10] with probabilities 0.6 and 0.4 ... as marginals per position
POLICY = pd.DataFrame({"user_id": [1, 1, 1, 1, 2, 2, 2], "item_id": [10, 11, 10, 11, 10, 12, 12],
                       "position": [1, 1, 2, 2, 1, 1, 2], "score": [0.6, 0.4, 0.4, 0.6, 0.3, 0.7, 0.3]})
MODEL = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [10, 11, 10, 12], "reward": [0.5, 0.2, 0.3, 0.4]})

# the options the property test draws, per estimator (tests/test_registry_complete.py reads them)
OPTIONS = {"ips": [{"target": "positions"}, {"target": "positions", "cap": 2}],
           "snips": [{"target": "positions"}], "dm": [{"target": "positions"}],
           "dr": [{"target": "positions"}, {"target": "positions", "cap": 3}],
           "switch_dr": [{"target": "positions", "tau": 2}], "ess": [{"target": "positions"}],
           "max_weight": [{"target": "positions"}], "slate_iips": [{"target": "positions"}],
           "slate_sniips": [{"target": "positions"}]}


def test_the_estimators_by_hand():
    """Weights π_e(a at k)/π0: user 1's rows 0.6/0.5 = 1.2 and 0.6/0.25 = 2.4; user 2's 0.3/0.5 = 0.6 and 0.3/0.5
    = 0.6 (item 12 at position 2). Rewards 1, 0, 0, 1."""
    metrics = ["ips(target=positions)", "snips(target=positions)", "dm(target=positions)", "dr(target=positions)",
               "slate_iips(target=positions)", "slate_sniips(target=positions)", "max_weight(target=positions)"]
    got = recsql.evaluate(POLICY, None, metrics, logs=LOGS, reward_model=MODEL).summary.iloc[0]
    dm = (0.6 * 0.5 + 0.4 * 0.2 + 0.4 * 0.5 + 0.6 * 0.2 + 0.3 * 0.3 + 0.7 * 0.4 + 0.3 * 0.4) / 4  # Σ_a π_e(a at k) q̂
    want = {"ips(target=positions)": (1.2 + 0.6) / 4, "snips(target=positions)": 1.8 / 4.8,
            "dm(target=positions)": dm,
            "dr(target=positions)": dm + (1.2 * 0.5 + 2.4 * -0.2 + 0.6 * -0.3 + 0.6 * 0.6) / 4,
            "slate_iips(target=positions)": 1.8 / 2,  # two slates
            # position 1's mean weight (1.2 + 0.6)/2 = 0.9, position 2's (2.4 + 0.6)/2 = 1.5
            "slate_sniips(target=positions)": (1.2 / 0.9 + 0.6 / 1.5) / 2, "max_weight(target=positions)": 2.4}
    for metric, value in want.items():
        assert got[metric] == pytest.approx(value, rel=1e-12), metric


@st.composite
def policies(draw):
    """A mixture of up to three rankings (distinct items, up to three positions) per user, with weights that sum
    to at most 1: a stochastic ranking's marginals π_e(a at k | x), which sum to at most 1 per position and per
    item. Logged slates, one item per position, with propensities and rewards."""
    rows: dict[tuple, float] = {}
    for user in (1, 2, 3):
        total = 0.0  # every ranking has a first position: the weights sum to at most 1 there, so everywhere
        for weight in draw(st.lists(st.sampled_from([0.125, 0.25, 0.5]), max_size=3)):
            if total + weight > 1:
                break
            total += weight
            ranking = draw(st.lists(st.integers(10, 14), min_size=1, max_size=3, unique=True))
            for position, item in enumerate(ranking, start=1):
                rows[user, item, position] = rows.get((user, item, position), 0.0) + weight
    slots = draw(st.lists(st.tuples(st.sampled_from([1, 2, 3, 4]), st.integers(1, 3)), min_size=1, unique=True))
    logs = [{"user_id": u, "item_id": draw(st.integers(10, 14)), "position": p,
             "propensity": draw(st.sampled_from([0.1, 0.25, 0.5, 1.0])),
             "reward": draw(st.sampled_from([0.0, 1.0, 0.5, -1.0]))} for u, p in slots]
    recs = [{"user_id": u, "item_id": i, "position": p, "score": s} for (u, i, p), s in rows.items()]
    return recs, logs


@settings(max_examples=60, deadline=None)
@given(data=policies(), metric=st.sampled_from([(name, options) for name, choices in OPTIONS.items()
                                                for options in choices]))
def test_the_estimators_equal_the_reference(data, metric):
    recs, logs = data
    name, options = metric
    model = [{"user_id": u, "item_id": i, "reward": 0.1 * (u + i % 3)} for u in (1, 2, 3, 4) for i in range(10, 15)]
    asked = recsql.Metric(name, **options)
    frame = pd.DataFrame(recs, columns=["user_id", "item_id", "position", "score"]).astype(
        {"user_id": "int64", "item_id": "int64", "position": "int64", "score": "float64"})
    got = recsql.evaluate(frame, None, [asked], logs=pd.DataFrame(logs), reward_model=pd.DataFrame(model),
                          min_ess_share=0).summary
    want = estimate(name, options, recs, logs, model)
    value = got[asked.column].iloc[0] if len(got) else None
    if want is None:
        assert value is None or pd.isna(value), (str(asked), value)
    else:
        assert math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-12), (str(asked), value, want)


@pytest.mark.parametrize("change,message", [
    (lambda p: p.assign(score=[1.5, *p.score[1:]]),
     r"recs column 'score' has 1 score\(s\) outside \[0, 1\]; with target=positions the score is the target "
     r"policy's probability"),
    (lambda p: p.assign(score=[0.6, 0.5, *p.score[2:]]),  # user 1's position 1 sums to 1.1, and so does its item 11
     r"recs column 'score': with target=positions .* 2 groups of a context and a position .* sum above 1"),
    (lambda p: pd.concat([p, p.iloc[[0]]]),
     r"recs has 1 duplicated \(user_id, item_id, position\) row\(s\).*position=1"),
    (lambda p: p.astype({"position": float}).assign(position=[1.5, *p.position[1:]]),
     r"recs column 'position' \(position_col\) has 1 position\(s\) that are not a whole number >= 1"),
    (lambda p: p.drop(columns="position"), r"recs \(DataFrame\) has no column 'position'.*position_col="),
])
def test_a_policy_that_is_no_policy_is_refused(change, message):
    with pytest.raises(recsql.RecsqlError, match=message):
        recsql.evaluate(change(POLICY), None, ["ips(target=positions)"], logs=LOGS)


def test_target_scores_probabilities_are_checked_too():
    recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.7, 0.4, 0.2]})
    with pytest.raises(recsql.RecsqlError, match=r"target=scores .* 1 contexts \(users\) sum above 1"):
        recsql.evaluate(recs, None, ["ips(target=scores)"], logs=LOGS)
    with pytest.raises(recsql.RecsqlError, match=r"score\(s\) outside \[0, 1\]"):
        recsql.evaluate(recs.assign(score=[3.0, 0.1, 0.2]), None, ["snips(target=scores)"], logs=LOGS)
    # the same scores rank a list: target=list reads no probability
    assert recsql.evaluate(recs.assign(score=[3.0, 0.1, 0.2]), None, ["ips"], logs=LOGS).summary["ips"].notna().all()
    # probabilities per position given to target=scores: the duplicate's hint names target=positions
    with pytest.raises(recsql.RecsqlError, match=r"use target=positions instead of target=scores"):
        recsql.evaluate(POLICY, None, ["ips(target=scores)"], logs=LOGS)


@pytest.mark.parametrize("metrics,message", [
    (["ips(target=positions)", "ndcg@3"], r"metric 'ndcg@3' reads the recs as lists, and 'ips\(target=positions\)'"),
    (["ips(target=positions)", "pbm_ips"], r"metric 'pbm_ips' reads the recs as lists"),
    (["ips(target=positions)", "snips"], r"metric 'snips' reads the recs as lists"),
    (["ips(target=positions)", "dr(target=scores)"], r"read the recs' scores as two different policies"),
    (["ess(target=positions,weights=slate)"], r"drop target=positions"),
])
def test_what_cannot_read_a_policy_per_position_is_refused(metrics, message):
    truth = LOGS[["user_id", "item_id"]]
    with pytest.raises(recsql.RecsqlError, match=message):
        recsql.evaluate(POLICY, truth, metrics, logs=LOGS.assign(joint=0.125), reward_model=MODEL,
                        slate_propensity_col="joint")


def test_to_sql_and_the_command_line(tmp_path, capsys):
    sql = recsql.to_sql("recs", None, ["ips(target=positions)"], logs="logs", dialect="postgres")
    assert "recs_policy_excess" in sql and '"position" AS DOUBLE' in sql.replace("CAST(", "")
    POLICY.to_csv(tmp_path / "recs.csv", index=False)
    LOGS.to_csv(tmp_path / "logs.csv", index=False)
    assert main(["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"),
                 "-m", "ips(target=positions)", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["ips(target=positions)"] == pytest.approx(0.45, rel=1e-12)
