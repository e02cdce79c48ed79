"""pbm_ips, the position-based-model IPS (docs/guide/logs.md, "Position-based model"): by hand, against the
plain-Python reference (tests/support/reference_logs.py) on random slates, its refusals, and the command line.
The worked examples (fixtures/worked/beyond.json: pbm_ips-logs, pbm_ips-ranking) run in test_beyond.py; its
unbiasedness on obp's position-based slates in test_logs_obp.py; every engine in test_engines.py."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings

import recsql
from recsql.cli import main
from support.reference_logs import estimate
from test_logs import slate_logs

# two slates of depth 3 (the worked examples' logs): items logged at positions 1..3 with marginal propensities
LOGS = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 2], "item_id": [10, 11, 12, 11, 12, 13], "position": [1, 2, 3, 1, 2, 3],
                     "propensity": [0.5, 0.4, 0.3, 0.6, 0.2, 0.5], "reward": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]})
RECS = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 2], "item_id": [12, 10, 11, 13, 11, 14],
                     "score": [0.9, 0.8, 0.7, 0.9, 0.8, 0.7]})
VARIANTS = {"pbm_ips": {},
            "pbm_ips(examination=1 / rank)": {"examination": "1 / rank"},
            "pbm_ips(examination=log2, logging=ranking)": {"examination": "log2", "logging": "ranking"},
            "pbm_ips(examination=jarvelin)": {"examination": "jarvelin"},
            "pbm_ips(examination=1 / (rank * rank), logging=ranking)": {"examination": "1 / (rank * rank)",
                                                                         "logging": "ranking"}}


def test_the_variants_by_hand():
    """The rows that count: 10 (logged at 1, listed at 2), 12 (logged at 3, listed at 1) and 13 (logged at 3, listed
    at 1); 12 logged at 2 in slate 2 adds 0 (user 2's list does not hold it). Estimated θ: 2, 5, 16/3 at 1, 2, 3."""
    got = recsql.evaluate(RECS, None, list(VARIANTS)[:3], logs=LOGS).summary.iloc[0]
    assert got["pbm_ips"] == pytest.approx((5 / 3 + 5 / 12 + 1 / 4) / 2)  # 7/6: m = 3 · propensity
    assert got["pbm_ips(examination=1 / rank)"] == pytest.approx((0.5 / 1.5 + 3 / 0.9 + 3 / 1.5) / 2)  # 17/6
    theta = {k: 1 / math.log2(k + 1) for k in (1, 2, 3)}
    assert got["pbm_ips(examination=log2, logging=ranking)"] == pytest.approx(
        (theta[2] / theta[1] + theta[1] / theta[3] + theta[1] / theta[3]) / 2)  # m = 1


def test_an_item_listed_below_the_slate_adds_0_and_a_zero_reward_is_never_divided():
    """User 1's list puts 10 at 4, below the slate's three positions: the target never shows it there. A position
    whose rows all have reward 0 has an estimated θ of 0, which only divides rows of reward 0: they add 0."""
    recs = pd.DataFrame({"user_id": [1] * 4 + [2] * 3, "item_id": [12, 11, 14, 10, 13, 11, 14],
                         "score": [0.9, 0.8, 0.7, 0.6, 0.9, 0.8, 0.7]})
    got = recsql.evaluate(recs, None, ["pbm_ips"], logs=LOGS).summary["pbm_ips"].iloc[0]
    assert got == pytest.approx((5 / 12 + 1 / 4) / 2)  # 10 adds 0; 12 and 13 as by hand
    zero = LOGS.assign(reward=[1.0, 0.0, 0.0, 0.0, 0.0, 1.0])  # no reward at position 2: θ(2) = 0
    want = estimate("pbm_ips", {}, RECS.to_dict("records"), zero.to_dict("records"))
    assert want == pytest.approx((0 + 2 / (2 * 3 * 0.5)) / 2)  # 10 lands on θ(2) = 0; 13: θ(1) / (θ(3) · 3 · 0.5)
    assert recsql.evaluate(RECS, None, ["pbm_ips"], logs=zero).summary["pbm_ips"].iloc[0] == pytest.approx(want)


def test_an_undefined_examination_gives_null_not_a_number():
    """Negative rewards can make an estimated θ at a logged position 0 or below: that row cannot be reweighted, and
    the estimate is NULL (as the reference's None), never a sum that skips the row."""
    logs = LOGS.assign(reward=[1.0, 0.0, 1.0, -1.0, 1.0, 1.0], propensity=[0.5, 0.4, 0.3, 0.5, 0.2, 0.5])  # θ(1) = 2 - 2
    got = recsql.evaluate(RECS, None, ["pbm_ips"], logs=logs).summary["pbm_ips"].iloc[0]
    assert estimate("pbm_ips", {}, RECS.to_dict("records"), logs.to_dict("records")) is None
    assert pd.isna(got)


@settings(max_examples=60, deadline=None)
@given(data=slate_logs())
def test_pbm_ips_equals_the_reference(data):
    recs, logs = data
    got = recsql.evaluate(pd.DataFrame(recs), None, list(VARIANTS), logs=pd.DataFrame(logs)).summary.iloc[0]
    for name, options in VARIANTS.items():
        want = estimate("pbm_ips", options, recs, logs)
        if want is None:
            assert pd.isna(got[name]), name
        else:
            assert got[name] == pytest.approx(want, rel=1e-9, abs=1e-12), name


def test_what_pbm_ips_refuses():
    with pytest.raises(recsql.RecsqlError, match=r"'pbm_ips\(logging=ranking\)' would estimate the examination "
                                                 r"probabilities from the logs, which only randomized logging allows"):
        recsql.evaluate(RECS, None, ["pbm_ips(logging=ranking)"], logs=LOGS)
    with pytest.raises(recsql.RecsqlError, match=r"'pbm_ips' reads each logged slate's positions, and these logs have "
                                                 r"no position column: pass position_col="):
        recsql.evaluate(RECS, None, ["pbm_ips"], logs=LOGS.drop(columns="position"))
    with pytest.raises(recsql.RecsqlError, match=r"discount 'rank \+ item' refers to 'item'"):
        recsql.evaluate(RECS, None, ["pbm_ips(examination=rank + item)"], logs=LOGS)
    with pytest.raises(recsql.RecsqlError, match=r"option logging='fixed' is not valid; choose one of randomized, ranking"):
        recsql.evaluate(RECS, None, ["pbm_ips(logging=fixed)"], logs=LOGS)
    with pytest.raises(recsql.RecsqlError, match=r"compare: metric 'pbm_ips' is estimated on logs per run"):
        recsql.compare(pd.concat([RECS.assign(run="a"), RECS.assign(run="b")]), None, ["pbm_ips"],
                       logs=pd.concat([LOGS.assign(run="a"), LOGS.assign(run="b")]), run_cols="run")


def test_the_command_line(tmp_path, capsys):
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    LOGS.to_csv(tmp_path / "logs.csv", index=False)
    assert main(["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "-m", "pbm_ips",
                 "-m", "pbm_ips(examination=1 / rank)", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [out[0]["pbm_ips"], out[0]["pbm_ips(examination=1 / rank)"]] == pytest.approx([7 / 6, 17 / 6])
    assert main(["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "-m",
                 "pbm_ips(logging=ranking)"]) == 2
    assert "only randomized logging allows" in capsys.readouterr().err
