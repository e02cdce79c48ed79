"""Evaluating from logs (docs/guide/logs.md): the input checks of logs and a reward model, each refused
with the column and the fix; the estimators per run, beside metrics of truth in one query; to_sql and
the command line. Their numbers are checked against hand-worked cases (test_beyond.py), the plain-Python
reference (test_beyond_properties.py), obp (test_logs_obp.py) and every engine (test_engines.py)."""
from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from recsql.cli import main
from support.reference_logs import estimate

RECS = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [10, 11, 10, 12], "score": [0.7, 0.3, 0.4, 0.6]})
LOGS = pd.DataFrame({"user_id": [1, 2, 2, 1], "item_id": [10, 10, 12, 11], "position": [1, 2, 1, 1],
                     "propensity": [0.5, 0.25, 0.5, 0.4], "reward": [1.0, 0.0, 1.0, 1.0]})
MODEL = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [10, 11, 10, 12], "reward": [0.6, 0.2, 0.1, 0.5]})


@pytest.mark.parametrize("column,value,message", [
    ("propensity", 0.0, r"logs column 'propensity' has 1 invalid value\(s\): a propensity is .* in \(0, 1\]"),
    ("propensity", 1.5, r"logs column 'propensity' has 1 invalid value"),
    ("propensity", float("nan"), r"logs column 'propensity' has 1 invalid value"),
    ("reward", float("inf"), r"logs column 'reward' has 1 invalid value\(s\): a reward must be a finite number"),
    ("reward", None, r"logs column 'reward' has 1 invalid value"),
    ("position", 0, r"logs column 'position' has 1 invalid value\(s\): a position must be a whole number >= 1"),
    ("position", 1.5, r"logs column 'position' has 1 invalid value"),
    ("user_id", None, r"logs column 'user_id' has 1 invalid value"),
])
def test_an_invalid_logged_value_is_refused_naming_its_column(column, value, message):
    logs = LOGS.astype({column: object if value is None else float})
    logs.loc[1, column] = value
    with pytest.raises(recsql.RecsqlError, match=message):
        recsql.evaluate(RECS, None, ["ips"], logs=logs)


def test_a_duplicated_impression_is_refused_whatever_duplicates_says():
    logs = pd.concat([LOGS, LOGS.iloc[[2]]], ignore_index=True)
    for policy in ("error", "best"):
        with pytest.raises(recsql.RecsqlError, match=r"logs has 1 duplicated \(user_id, item_id, position\) row\(s\).*"
                                                     r"user_id=2, item_id=12, position=1\. An impression is one row"):
            recsql.evaluate(RECS, None, ["snips"], logs=logs, duplicates=policy)
    # the same item at another position is another impression
    other = pd.concat([LOGS, LOGS.iloc[[2]].assign(position=2)], ignore_index=True)
    assert recsql.evaluate(RECS, None, ["ips"], logs=other).summary["ips"].iloc[0] == pytest.approx(4 / 5)


def test_the_reward_model_is_checked():
    with pytest.raises(recsql.RecsqlError, match=r"reward_model predicts no reward for 2 \(context, item\) pair"):
        recsql.evaluate(RECS, None, ["dm"], logs=LOGS, reward_model=MODEL.iloc[1:])  # (1, 10): logged and listed
    with pytest.raises(recsql.RecsqlError, match=r"reward_model has 1 duplicated \(user_id, item_id\) row"):
        recsql.evaluate(RECS, None, ["dr"], logs=LOGS, reward_model=pd.concat([MODEL, MODEL.iloc[[0]]]))
    with pytest.raises(recsql.RecsqlError, match=r"reward_model has 1 row\(s\) with a NULL .* NaN or infinite 'reward'"):
        recsql.evaluate(RECS, None, ["dr"], logs=LOGS, reward_model=MODEL.assign(reward=[0.6, float("nan"), 0.1, 0.5]))
    with pytest.raises(recsql.RecsqlError, match=r"metric 'dm' needs a reward model: pass reward_model="):
        recsql.evaluate(RECS, None, ["dm"], logs=LOGS)
    with pytest.raises(recsql.RecsqlError, match=r"metric 'ips' needs logged impressions: pass logs="):
        recsql.evaluate(RECS, None, ["ips"])


def test_scores_as_probabilities_need_a_score_column():
    ranked = RECS.assign(rank=[1, 2, 2, 1]).drop(columns="score")
    with pytest.raises(recsql.RecsqlError, match=r"ips\(target=scores\)' reads the recs' scores .* rank_col='rank'"):
        recsql.evaluate(ranked, None, ["ips(target=scores)"], logs=LOGS, rank_col="rank")
    # the list's own positions need no score
    assert recsql.evaluate(ranked, None, ["ips"], logs=LOGS, rank_col="rank").summary["ips"].iloc[0] == 1.0


def test_each_run_is_estimated_on_the_shared_logs_beside_metrics_of_truth():
    """Run b's lists put 11 first for user 1 and 10 first for user 2: of the logged impressions only
    (1, 11, position 1) is one it would make, w = 1/0.4, reward 1: IPS = 2.5/4; SNIPS 1."""
    recs = pd.concat([RECS.assign(model="a"), RECS.assign(model="b", score=[0.3, 0.7, 0.6, 0.4])])
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [10, 12]})
    got = recsql.evaluate(recs, truth, ["ndcg@2", "ips", "snips"], logs=LOGS, run_cols="model")
    statements = sqlglot.parse(got.sql, read="duckdb")  # one statement: the lists ranked once for both
    assert len(statements) == 1 and "log_rows" in got.sql and "ndcg" in got.sql
    summary = got.summary.set_index("model")
    assert summary.loc["a", "ips"] == pytest.approx(1.0) and summary.loc["b", "ips"] == pytest.approx(2.5 / 4)
    assert summary.loc["a", "snips"] == pytest.approx(0.5) and summary.loc["b", "snips"] == pytest.approx(1.0)
    assert summary.loc["a", "ndcg@2"] == pytest.approx(1.0)
    assert "ips" not in got.per_user.columns  # one number per run


def test_to_sql_renders_the_estimators_and_their_checks():
    sql = recsql.to_sql("recs", None, ["ips", "dr"], logs="logs", reward_model="reward_model", position_col=None)
    con = duckdb.connect()
    con.register("recs", RECS)
    con.register("logs", LOGS.drop(columns="position"))
    con.register("reward_model", MODEL)
    row = con.execute(sql).df().iloc[0]
    # without positions every impression is the first slot: w = 2, 0 (user 2's first item is 12), 2, 0
    assert row["ips"] == pytest.approx((2 + 0 + 2 + 0) / 4)
    assert row["dr"] == pytest.approx((0.6 + 0.5 + 0.5 + 0.6) / 4 + (2 * 0.4 + 0 + 2 * 0.5 + 0) / 4)
    assert row["logs_invalid_rows"] == 0 and row["reward_model_missing_rows"] == 0
    con.register("logs", LOGS.drop(columns="position").assign(propensity=[0.5, 0.0, 0.5, 0.4]))
    assert con.execute(sql).df().iloc[0]["logs_invalid_rows"] == 1  # the warehouse sees what evaluate refuses


def test_the_command_line(tmp_path, capsys):
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    LOGS.rename(columns={"propensity": "pscore", "reward": "click"}).to_csv(tmp_path / "logs.csv", index=False)
    MODEL.rename(columns={"reward": "click"}).to_csv(tmp_path / "model.csv", index=False)
    assert main(["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "--reward-model",
                 str(tmp_path / "model.csv"), "--propensity-col", "pscore", "--reward-col", "click", "-m", "ips",
                 "-m", "dr", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["ips"] == pytest.approx(1.0) and out[0]["dr"] == pytest.approx(0.8)


def test_recsql_sql_takes_logs_without_a_position_column(capsys):
    """`recsql sql` reads no table, so logs without positions are said with --no-position (Python's
    position_col=None): the same statement as to_sql's, which a warehouse runs on such logs."""
    args = ["sql", "--recs", "recs", "--no-truth", "--logs", "logs", "--reward-model", "reward_model", "-m", "ips",
            "-m", "dr"]
    assert main([*args, "--no-position"]) == 0
    sql = capsys.readouterr().out
    assert sql.strip() == recsql.to_sql("recs", None, ["ips", "dr"], logs="logs", reward_model="reward_model",
                                        position_col=None).strip()
    con = duckdb.connect()
    con.register("recs", RECS)
    con.register("logs", LOGS.drop(columns="position"))
    con.register("reward_model", MODEL)
    assert con.execute(sql).df().iloc[0]["ips"] == pytest.approx((2 + 0 + 2 + 0) / 4)  # every impression the first slot
    assert main(args) == 0  # without the flag the statement reads a position column, which these logs lack
    with pytest.raises(duckdb.BinderException, match="position"):
        con.execute(capsys.readouterr().out)


# Two logged slates of two positions (docs/guide/logs.md, "Slates"): the context is the slate
SLATE_LOGS = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [10, 11, 12, 11], "position": [1, 2, 1, 2],
                           "propensity": [0.5, 0.25, 0.5, 0.4], "reward": [1.0, 0.0, 1.0, 1.0],
                           "slate_p": [0.1, 0.1, 0.2, 0.2], "cascade_p": [0.5, 0.1, 0.5, 0.2]})
SLATES = ["slate_ips", "slate_iips", "slate_rips"]
SLATE_COLUMNS = {"slate_propensity_col": "slate_p", "cascade_propensity_col": "cascade_p"}


def test_the_slate_estimators_by_hand():
    got = recsql.evaluate(RECS, None, SLATES, logs=SLATE_LOGS, **SLATE_COLUMNS).summary.iloc[0]
    # lists 1: [10, 11], 2: [12, 10]; slate 1 (10, 11) is the list's, slate 2 (12, 11) its first position only
    assert got["slate_ips"] == pytest.approx((1 / 0.1 * (1 + 0) + 0) / 2)  # 5
    assert got["slate_iips"] == pytest.approx((1 / 0.5 * 1 + 1 / 0.25 * 0 + 1 / 0.5 * 1 + 0) / 2)  # 2
    assert got["slate_rips"] == pytest.approx((1 / 0.5 * 1 + 1 / 0.1 * 0 + 1 / 0.5 * 1 + 0) / 2)  # 2
    assert not set(SLATES) & set(recsql.evaluate(RECS, None, SLATES, logs=SLATE_LOGS, **SLATE_COLUMNS).per_user.columns)


@pytest.mark.parametrize("change, words", [
    ({"slate_p": [0.1, 0.1, 0.2, 0.3]}, r"context\(s\) 2: two different values of slate_propensity_col='slate_p'"),
    ({"position": [1, 2, 1, 1], "item_id": [10, 11, 12, 13]}, r"context\(s\) 2: two rows at one position"),
    ({"cascade_p": [0.5, 0.6, 0.5, 0.2]}, r"context\(s\) 1: a cascade propensity \(cascade_propensity_col='cascade_p'\) "
                                          r"that rises down the slate"),
])
def test_a_slate_whose_rows_disagree_is_refused_by_the_query_and_in_rendered_sql(change, words):
    """One slate propensity per slate, one row per position, cascade propensities that never rise with the position:
    each broken once (the rest of the logs as SLATE_LOGS). evaluate names the slate and the column; the rendered
    query counts the slate in logs_inconsistent_slates, and counts none on the logs as they should be."""
    bad = SLATE_LOGS.assign(**change)
    with pytest.raises(recsql.RecsqlError, match=r"logs has 1 slate\(s\) whose rows disagree, e\.g\. " + words):
        recsql.evaluate(RECS, None, SLATES, logs=bad, **SLATE_COLUMNS)
    sql = recsql.to_sql("recs", None, SLATES, logs="logs", **SLATE_COLUMNS)
    con = duckdb.connect()
    con.register("recs", RECS)
    for logs, count in ((bad, 1), (SLATE_LOGS, 0)):
        con.register("logs", logs)
        assert con.execute(sql).df().iloc[0]["logs_inconsistent_slates"] == count


def test_slate_checks_allow_what_slates_may_hold():
    """A cascade propensity that stays level down the slate (an item the policy always shows next), one that falls
    by less than rounding's 1e-9 relative rise, and a slate of one row: no refusal, and the numbers of the by-hand
    slates."""
    level = SLATE_LOGS.assign(cascade_p=[0.5, 0.5, 0.2, 0.2 * (1 + 1e-12)])
    got = recsql.evaluate(RECS, None, ["slate_rips"], logs=level, **SLATE_COLUMNS).summary.iloc[0]
    assert got["slate_rips"] == pytest.approx((1 / 0.5 * 1 + 1 / 0.5 * 0 + 1 / 0.2 * 1 + 0) / 2)
    one = SLATE_LOGS.iloc[[0, 2, 3]]
    got = recsql.evaluate(RECS, None, ["slate_ips"], logs=one, **SLATE_COLUMNS).summary.iloc[0]
    assert got["slate_ips"] == pytest.approx((1 / 0.1 * 1 + 0) / 2)


def test_a_slate_estimator_without_its_column_or_positions_is_refused():
    with pytest.raises(recsql.RecsqlError, match=r"metric 'slate_ips' needs each logged slate's joint propensity.*"
                                                 r"pass slate_propensity_col="):
        recsql.evaluate(RECS, None, ["slate_ips"], logs=SLATE_LOGS, cascade_propensity_col="cascade_p")
    with pytest.raises(recsql.RecsqlError, match=r"metric 'slate_rips' needs the logging policy's cascade propensity.*"
                                                 r"pass cascade_propensity_col="):
        recsql.evaluate(RECS, None, ["slate_rips"], logs=SLATE_LOGS, slate_propensity_col="slate_p")
    with pytest.raises(recsql.RecsqlError, match=r"'slate_iips' reads each logged slate's positions, and these logs "
                                                 r"have no position column: pass position_col="):
        recsql.evaluate(RECS, None, ["slate_iips"], logs=SLATE_LOGS.drop(columns="position"))
    with pytest.raises(recsql.RecsqlError, match=r"slate_propensity_col='slate_p' names a column of logs, which were "
                                                 r"not given"):
        recsql.evaluate(RECS, pd.DataFrame({"user_id": [1], "item_id": [10]}), ["ndcg@2"], slate_propensity_col="slate_p")
    with pytest.raises(recsql.RecsqlError, match=r"column 'nope' .*not found|'nope'"):
        recsql.evaluate(RECS, None, ["slate_ips"], logs=SLATE_LOGS, slate_propensity_col="nope")
    # the marginal propensity is the logs' own: slate_iips needs no other column
    assert recsql.evaluate(RECS, None, ["slate_iips"], logs=SLATE_LOGS).summary["slate_iips"].iloc[0] == pytest.approx(2)


@pytest.mark.parametrize("column, value", [("slate_p", 0.0), ("slate_p", 1.5), ("slate_p", float("nan")),
                                           ("slate_p", None), ("cascade_p", 0.0), ("cascade_p", float("inf"))])
def test_the_slate_propensities_are_checked_where_logged(column, value):
    logs = SLATE_LOGS.astype({column: object if value is None else float})
    logs.loc[2, column] = value
    with pytest.raises(recsql.RecsqlError, match=rf"logs column '{column}' has 1 invalid value\(s\): a "
                                                 rf"(slate|cascade) propensity is .* in \(0, 1\]"):
        recsql.evaluate(RECS, None, ["slate_iips"], logs=logs, **SLATE_COLUMNS)
    # not named, not read: the bandit estimators do not check it
    assert recsql.evaluate(RECS, None, ["ips"], logs=logs).summary["ips"].iloc[0] == pytest.approx(
        (2 + 0 + 2 + 0) / 4)


@st.composite
def slate_logs(draw) -> tuple[list[dict], list[dict]]:
    """Lists of items 1..6 for users 1..4, and logged slates of users 1..5 (5 without a list): each a
    list's first m items then others (so that slates agree with the lists on prefixes of every length),
    at positions 1..L, with random propensities, as a slate holds them: one joint propensity per slate, cascade
    propensities that never rise down it."""
    recs, logs = [], []
    for user in range(1, 6):
        order = draw(st.permutations(range(1, 7)))
        if user < 5:
            recs += [{"user_id": user, "item_id": item, "score": float(6 - rank)} for rank, item in enumerate(order)]
        if not draw(st.booleans()) and user > 1:
            continue  # no slate logged for this context
        length = draw(st.integers(1, 4))
        head = list(order[:draw(st.integers(0, length))])
        slate = head + [i for i in draw(st.permutations(range(1, 7))) if i not in head][:length - len(head)]
        joint, cascade = draw(st.sampled_from([0.01, 0.04, 0.25])), 1.0  # one joint propensity per slate
        for position, item in enumerate(slate, start=1):
            cascade *= draw(st.sampled_from([0.05, 0.1, 0.5] if position == 1 else [0.2, 0.5, 1.0]))  # never rises
            logs.append({"user_id": user, "item_id": item, "position": position,
                         "propensity": draw(st.sampled_from([0.2, 0.5, 1.0])), "slate_propensity": joint,
                         "cascade_propensity": cascade, "reward": draw(st.sampled_from([0.0, 1.0, 2.5]))})
    return recs, logs


@settings(max_examples=60, deadline=None)
@given(data=slate_logs())
def test_the_slate_estimators_equal_the_reference(data):
    recs, logs = data
    asked = [*SLATES, "slate_snips", "slate_sniips", "slate_snrips"]
    got = recsql.evaluate(pd.DataFrame(recs), None, asked, logs=pd.DataFrame(logs), slate_propensity_col="slate_propensity",
                          cascade_propensity_col="cascade_propensity").summary.iloc[0]
    for name in asked:
        want = estimate(name, {}, recs, logs)
        if want is None:  # the self-normalized ones when every weight is 0
            assert pd.isna(got[name]), name
        else:
            assert got[name] == pytest.approx(want, rel=1e-9, abs=1e-12), name


def test_the_self_normalized_slate_estimators_by_hand_per_run():
    """slate_sniips and slate_snrips normalize each position by the mean weight of its rows in the run
    (docs/guide/logs.md, "Slates"): the logs of the worked examples slate_sniips-logs and slate_snrips-logs
    (fixtures/worked/beyond.json), scored by three runs. A position whose weights sum to 0 adds 0; a run no
    row of which weighs anything has no estimate (NULL), where slate_iips is 0."""
    lists = {"a": {1: [10, 11, 12], 2: [12, 11, 10]}, "b": {1: [10, 12, 11], 2: [12, 11, 10]},
             "c": {1: [11, 10, 12], 2: [10, 12, 11]}}
    recs = pd.DataFrame([{"model": run, "user_id": user, "item_id": item, "score": 1.0 / rank}
                         for run, by_user in lists.items() for user, items in by_user.items()
                         for rank, item in enumerate(items, start=1)])
    logs = pd.DataFrame({"user_id": [1, 1, 1, 2, 2], "item_id": [10, 11, 13, 12, 11], "position": [1, 2, 3, 1, 2],
                         "propensity": [0.5, 0.25, 0.5, 0.2, 0.5], "reward": [1.0, 1.0, 1.0, 0.0, 0.0],
                         "cascade_p": [0.5, 0.1, 0.05, 0.2, 0.04]})
    asked = ["slate_sniips", "slate_snrips", "slate_iips"]
    got = recsql.evaluate(recs, None, asked, logs=logs, run_cols="model", cascade_propensity_col="cascade_p").summary
    got = got.set_index("model")
    # a: both slates match at positions 1 and 2, slate 1's 13@3 nowhere (position 3's weights sum to 0: it adds 0).
    # Independent weights: position 1 2 (reward 1) and 5 (0), mean 3.5; position 2 4 (1) and 2 (0), mean 3
    assert got.loc["a", "slate_sniips"] == pytest.approx((2 * 1 / 3.5 + 4 * 1 / 3) / 2)  # 20/21
    # cascade weights: position 1 as above; position 2 1/0.1 = 10 (reward 1) and 1/0.04 = 25 (0), mean 17.5
    assert got.loc["a", "slate_snrips"] == pytest.approx((2 * 1 / 3.5 + 10 * 1 / 17.5) / 2)  # 4/7
    # b: slate 1 matches at position 1 only, slate 2 at 1 and 2: position 2's weights 0 (reward 1) and 2 or 25
    # (reward 0). Per run: pooled with a's rows, position 2's mean weight would be (4 + 2 + 0 + 2)/4 = 2, not 3
    assert got.loc["b", "slate_sniips"] == pytest.approx((2 * 1 / 3.5 + 0) / 2)  # 2/7
    assert got.loc["b", "slate_snrips"] == pytest.approx((2 * 1 / 3.5 + 0) / 2)
    # c: no logged item where the list puts it: every weight 0
    assert pd.isna(got.loc["c", "slate_sniips"]) and pd.isna(got.loc["c", "slate_snrips"])
    assert got.loc["c", "slate_iips"] == 0


def test_the_slate_estimators_per_run_and_from_the_command_line(tmp_path, capsys):
    runs = pd.concat([RECS.assign(model="a"), RECS.assign(model="b", score=[0.3, 0.7, 0.4, 0.6])])
    got = recsql.evaluate(runs, None, SLATES, logs=SLATE_LOGS, run_cols="model", **SLATE_COLUMNS).summary
    # b's lists: 1 [11, 10], 2 [12, 10]: slate 1 nowhere, slate 2 at its first position
    assert got.set_index("model").loc["b"].tolist() == pytest.approx([0.0, 1.0, 1.0])
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    SLATE_LOGS.to_csv(tmp_path / "logs.csv", index=False)
    assert main(["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "--slate-propensity-col",
                 "slate_p", "--cascade-propensity-col", "cascade_p", *(f"-m{m}" for m in SLATES), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [out[0][m] for m in SLATES] == pytest.approx([5.0, 2.0, 2.0])
    assert main(["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "-m", "slate_ips"]) == 2
    assert "pass --slate-propensity-col" in capsys.readouterr().err
