"""Logs per run (docs/guide/logs.md, "Logs per run"): logs that carry some of the run columns (each model's lists of
a week estimated on that week's logs), by hand, against the plain-Python reference on each run's own rows, the
checks keyed by the run, to_sql's and the command line's explicit logs_run_cols, and what is refused."""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from recsql.cli import main
from support.reference_logs import estimate

RECS = pd.DataFrame({"week": [1, 1, 2, 2], "user_id": [1, 2, 3, 4], "item_id": [10, 10, 10, 11],
                     "score": [1.0, 1.0, 1.0, 1.0]})
LOGS = pd.DataFrame({"week": [1, 1, 2, 2], "user_id": [1, 2, 3, 4], "item_id": [10, 11, 10, 10], "position": [1] * 4,
                     "propensity": [0.5] * 4, "reward": [1.0, 1.0, 1.0, 1.0]})
RUNS = pd.concat([RECS.assign(model="a"), RECS.assign(model="b", item_id=[11, 11, 10, 10])])


def test_each_run_is_estimated_on_its_weeks_logs_by_hand():
    """Week 1: context 1's list shows the logged 10 (w = 2, reward 1), context 2's does not: IPS = 2/2 = 1 (over
    all four impressions, as before logs per run, it was 2/4 = 0.5: week 2's contexts have no week-1 list)."""
    got = recsql.evaluate(RECS, None, ["ips", "snips"], logs=LOGS, run_cols="week").summary.set_index("week")
    assert got.loc[1].tolist() == [1.0, 1.0] and got.loc[2].tolist() == [1.0, 1.0]
    got = recsql.evaluate(RUNS, None, ["ips"], logs=LOGS, run_cols=["model", "week"]).summary
    assert got.set_index(["model", "week"])["ips"].to_dict() == {("a", 1): 1.0, ("a", 2): 1.0, ("b", 1): 1.0,
                                                                  ("b", 2): 2.0}


def test_a_run_without_logs_keeps_its_other_metrics_and_its_estimates_are_null():
    recs = pd.concat([RUNS, pd.DataFrame({"model": ["a"], "week": [3], "user_id": [9], "item_id": [10],
                                          "score": [1.0]})])
    truth = pd.DataFrame({"user_id": [1, 9], "item_id": [10, 10]})
    with pytest.warns(recsql.RecsqlWarning, match="every user of recs appears under one value"):
        got = recsql.evaluate(recs, truth, ["ips", "hit_rate@1"], logs=LOGS, run_cols=["model", "week"]).summary
    week3 = got.set_index(["model", "week"]).loc[("a", 3)]
    assert pd.isna(week3["ips"]) and week3["hit_rate@1"] == 0.5


def test_the_checks_are_keyed_by_the_run():
    """One context logged in two weeks is two impressions; twice in one week, a duplicate (refused, naming the
    week). A slate is a context's rows in one week."""
    twice = LOGS.assign(user_id=[1, 2, 1, 2], item_id=[10, 11, 10, 11])  # the same impressions in weeks 1 and 2
    recs = RECS.assign(user_id=[1, 2, 1, 2])
    # week 1: context 1's 10 is listed (w = 2), context 2's 11 is not; week 2 lists both: (2 + 2) / 2
    assert recsql.evaluate(recs, None, ["ips"], logs=twice, run_cols="week").summary["ips"].tolist() == [1.0, 2.0]
    with pytest.raises(recsql.RecsqlError, match=r"logs has 1 duplicate.*week"):
        recsql.evaluate(recs, None, ["ips"], logs=pd.concat([twice, twice.iloc[:1]]), run_cols="week")
    slates = twice.assign(slate_p=[0.5, 0.25, 0.5, 0.5])  # context 2: 0.25 in week 1, 0.5 in week 2: consistent
    got = recsql.evaluate(recs, None, ["slate_ips"], logs=slates, run_cols="week", slate_propensity_col="slate_p")
    assert got.summary["slate_ips"].tolist() == [1.0, 2.0]  # as ips: each slate is one impression here


@st.composite
def weekly_logs(draw):
    """Lists of two models for contexts 1..6 of weeks 1 and 2 (a context's week: its id's parity), and per week
    logged slates of depth 1..3 with random propensities and rewards; some contexts without logs."""
    recs, logs = [], []
    for user in range(1, 7):
        week = 1 + user % 2
        for model in ("a", "b"):
            order = draw(st.permutations(range(1, 6)))
            recs += [{"model": model, "week": week, "user_id": user, "item_id": item, "score": float(5 - rank)}
                     for rank, item in enumerate(order)]
        if draw(st.booleans()):
            for position, item in enumerate(draw(st.permutations(range(1, 6)))[:draw(st.integers(1, 3))], start=1):
                logs.append({"week": week, "user_id": user, "item_id": item, "position": position,
                             "propensity": draw(st.sampled_from([0.2, 0.5, 1.0])),
                             "reward": draw(st.sampled_from([0.0, 1.0, 2.5]))})
    return recs, logs


LOG_TYPES = {"week": "int64", "user_id": "int64", "item_id": "int64", "position": "int64", "propensity": "float64",
             "reward": "float64"}
ESTIMATORS = ["ips", "snips", "ess", "slate_iips", "slate_sniips", "pbm_ips", "pbm_ips(examination=1 / rank)"]
REFERENCE = {"pbm_ips(examination=1 / rank)": ("pbm_ips", {"examination": "1 / rank"})}


@settings(max_examples=40, deadline=None)
@given(data=weekly_logs())
def test_each_run_equals_the_reference_on_its_own_logs(data):
    recs, logs = data
    got = recsql.evaluate(pd.DataFrame(recs), None, ESTIMATORS, min_ess_share=0, run_cols=["model", "week"],
                          logs=pd.DataFrame(logs, columns=list(LOG_TYPES)).astype(LOG_TYPES)
                          ).summary.set_index(["model", "week"])
    for (model, week), row in got.iterrows():
        mine = [r for r in recs if r["model"] == model and r["week"] == week]
        theirs = [r for r in logs if r["week"] == week]
        for metric in ESTIMATORS:
            name, options = REFERENCE.get(metric, (metric, {}))
            want = estimate(name, options, mine, theirs) if theirs else None
            if want is None:
                assert pd.isna(row[metric]), (model, week, metric)
            else:
                assert row[metric] == pytest.approx(want, rel=1e-9, abs=1e-12), (model, week, metric)


def test_to_sql_and_the_command_line_are_told_which_run_columns_the_logs_carry(tmp_path, capsys):
    want = recsql.evaluate(RUNS, None, ["ips", "pbm_ips"], logs=LOGS, run_cols=["model", "week"]).summary
    sql = recsql.to_sql("recs", None, ["ips", "pbm_ips"], logs="logs", run_cols=["model", "week"],
                        logs_run_cols="week")
    con = duckdb.connect()
    con.register("recs", RUNS)
    con.register("logs", LOGS)
    got = con.execute(sql).df().sort_values(["model", "week"]).reset_index(drop=True)
    assert got[["ips", "pbm_ips"]].values.tolist() == want[["ips", "pbm_ips"]].values.tolist()
    assert main(["sql", "--recs", "recs", "--no-truth", "--logs", "logs", "-m", "ips", "--run-col", "model", "--run-col", "week",
                 "--logs-run-col", "week"]) == 0
    assert capsys.readouterr().out.strip() == recsql.to_sql("recs", None, ["ips"], logs="logs",
                                                            run_cols=["model", "week"], logs_run_cols="week").strip()
    with pytest.raises(recsql.RecsqlError, match=r"logs_run_cols: 'day' is not a run column; name some of run_cols "
                                                 r"\('model', 'week'\)"):
        recsql.to_sql("recs", None, ["ips"], logs="logs", run_cols=["model", "week"], logs_run_cols="day")
    with pytest.raises(recsql.RecsqlError, match="logs_run_cols names run columns of logs, which were not given"):
        recsql.to_sql("recs", "truth", ["ndcg@2"], run_cols=["model", "week"], logs_run_cols="week")


def test_compare_refuses_logs_per_run_with_the_way_to_compare():
    with pytest.raises(recsql.RecsqlError, match=r"compare: metric 'ips' is estimated on logs per run \(logs with the "
                                                 r"run column\(s\) 'week'\).*compare the runs of one 'week' at a time"):
        recsql.compare(RUNS, None, ["ips"], logs=LOGS, run_cols=["model", "week"])
    one_week = recsql.compare(RUNS.query("week == 2").drop(columns="week"), None, ["ips"],
                              logs=LOGS.query("week == 2").drop(columns="week"), run_cols="model", resamples=50)
    assert sorted(one_week.runs["run"]) == ["a", "b"]
