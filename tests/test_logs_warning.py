"""The warning on the off-policy estimators' weights (recsql/weights_warning.py, docs/guide/logs.md): a run
whose weights' effective sample size is below min_ess_share of the logged impressions is named, with its
ESS and n, whether or not ``ess`` was asked; the threshold is an option of evaluate and the command line."""
from __future__ import annotations

import warnings

import pandas as pd
import pytest

import recsql
from recsql.cli import main

# run A's lists hold the logged item at the logged position for one impression of 20 (user 0's item 100,
# logged with propensity 0.1): weights 10, 0, ..., 0. Run B holds every logged item: weights 10, then 1/0.5 = 2.
USERS = range(20)
LOGS = pd.DataFrame({"user_id": list(USERS), "item_id": [100 + u for u in USERS], "position": 1,
                     "propensity": [0.1] + [0.5] * 19, "reward": [1.0] * 20})
RECS = pd.concat([
    pd.DataFrame({"run": "A", "user_id": list(USERS), "item_id": [100] + [999] * 19, "score": 1.0}),
    pd.DataFrame({"run": "B", "user_id": list(USERS), "item_id": [100 + u for u in USERS], "score": 1.0}),
])


def _ess(weights: list[float]) -> float:
    """Kong's effective sample size, (Σ w)² / Σ w², in plain Python."""
    return sum(weights) ** 2 / sum(w * w for w in weights)


def _warnings(**options) -> tuple[pd.DataFrame, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = recsql.evaluate(RECS, None, options.pop("metrics", ["ips", "snips"]), logs=LOGS, run_cols="run",
                                 **options)
    return result.summary, [str(w.message) for w in caught if issubclass(w.category, recsql.RecsqlWarning)]


def test_a_run_whose_weights_rest_on_few_impressions_is_named_with_its_ess_and_n():
    a, b = [10.0] + [0.0] * 19, [10.0] + [2.0] * 19  # the runs' weights, as worked out above
    assert _ess(a) == 1.0 < 20 / 10 <= _ess(b) == pytest.approx(48 ** 2 / 176)
    summary, said = _warnings()
    assert list(summary.columns) == ["run", "ips", "snips"]  # the ESS computed for the warning is not shown
    assert summary["ips"].tolist() == pytest.approx([10 / 20, 48 / 20])
    assert len(said) == 1, said
    assert said[0].startswith("run 'A': the effective sample size of the importance weights (target=list) is 1, "
                              "below 0.1 of the n = 20 logged impressions: the estimates ips, snips rest on a few")
    assert "min_ess_share (CLI: --min-ess-share)" in said[0]


def test_the_threshold_is_an_option_and_zero_turns_it_off():
    assert len(_warnings(min_ess_share=0.04)[1]) == 0  # 1 >= 0.04 · 20
    assert len(_warnings(min_ess_share=0)[1]) == len(_warnings(min_ess_share=None)[1]) == 0
    assert [s[:8] for s in _warnings(min_ess_share=0.6)[1]] == ["run 'A':"]  # B: ESS 13.09 >= 0.6 · 20
    assert [s[:8] for s in _warnings(min_ess_share=1)[1]] == ["run 'A':", "run 'B':"]
    for bad in (-0.1, 1.5, "0.1", True):
        with pytest.raises(recsql.RecsqlError, match=r"min_ess_share=.* must be a number in \[0, 1\] .* "
                                                     r"CLI: --min-ess-share"):
            recsql.evaluate(RECS, None, ["ips"], logs=LOGS, run_cols="run", min_ess_share=bad)


def test_an_ess_asked_is_shown_and_read_and_each_target_has_its_own():
    model = pd.concat([LOGS[["user_id", "item_id", "reward"]],
                       pd.DataFrame({"user_id": list(USERS)[1:], "item_id": 999, "reward": 0.0})])
    summary, said = _warnings(metrics=["dm", "dr", "ess", "max_weight"], reward_model=model)
    assert summary["ess"].tolist() == pytest.approx([1.0, 48 ** 2 / 176])
    assert len(said) == 1 and "the estimates dr rest" in said[0]  # dm reads no weight: not named
    assert _warnings(metrics=["dm"], reward_model=model)[1] == []
    # target=scores: the recs' score as π_e (1 for every listed item): run A's weights 10 and 0s again
    summary, said = _warnings(metrics=["ips(target=scores)"])
    assert list(summary.columns) == ["run", "ips(target=scores)"]
    assert len(said) == 1 and "(target=scores) is 1," in said[0]
    # the diagnostics alone: nothing to warn about
    assert _warnings(metrics=["ess", "max_weight"])[1] == []


def test_the_command_line_warns_and_takes_the_threshold(tmp_path, capsys):
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    LOGS.to_csv(tmp_path / "logs.csv", index=False)
    args = ["evaluate", str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "--run-col", "run", "-m", "ips"]
    with pytest.warns(recsql.RecsqlWarning, match=r"run 'A': the effective sample size .* is 1, below 0.1 of the n = 20"):
        assert main(args) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", recsql.RecsqlWarning)
        assert main([*args, "--min-ess-share", "0"]) == 0
    assert "ips" in capsys.readouterr().out


def _compared(**options) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recsql.compare(RECS, None, options.pop("metrics", ["ips", "snips"]), logs=LOGS, run_cols="run", resamples=20,
                       **options)
    return [str(w.message) for w in caught if issubclass(w.category, recsql.RecsqlWarning)]


def test_compare_warns_as_evaluate_does_and_takes_the_threshold():
    assert _compared() == _warnings()[1] != []
    assert _compared(min_ess_share=1) == _warnings(min_ess_share=1)[1]  # both runs
    assert _compared(min_ess_share=0) == [] and _compared(metrics=["ess", "max_weight"]) == []
    with pytest.raises(recsql.RecsqlError, match=r"min_ess_share=1.5: .* CLI: --min-ess-share"):
        recsql.compare(RECS, None, ["ips"], logs=LOGS, run_cols="run", min_ess_share=1.5)


@pytest.mark.parametrize("command", ["compare", "report"])
def test_compare_and_report_on_the_command_line_warn_once_and_take_the_threshold(tmp_path, command):
    RECS.to_csv(tmp_path / "recs.csv", index=False)
    LOGS.to_csv(tmp_path / "logs.csv", index=False)
    args = [command, str(tmp_path / "recs.csv"), "--logs", str(tmp_path / "logs.csv"), "--run-col", "run", "-m", "ips",
            "--resamples", "20", *(["--out", str(tmp_path / "r.html")] if command == "report" else [])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(args) == 0
    said = [str(w.message) for w in caught if issubclass(w.category, recsql.RecsqlWarning)]
    assert len(said) == 1 and said[0].startswith("run 'A': the effective sample size of the importance weights"), said
    with warnings.catch_warnings():
        warnings.simplefilter("error", recsql.RecsqlWarning)
        assert main([*args, "--min-ess-share", "0", *(["--force"] if command == "report" else [])]) == 0


# three logged slates: the list holds slate 1 whole (joint propensity 0.1: weight 10), none of slate 2, slate 3 whole
# (0.3: 10/3); cascade weights 2, 4, 10 | 0, 0, 0 | 2, 4 (the worked examples ess-slate-weights and
# max-weight-cascade-weights)
SLATE_LOGS = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 2, 3, 3], "item_id": [10, 11, 12, 11, 12, 13, 10, 12],
                           "position": [1, 2, 3, 1, 2, 3, 1, 2], "propensity": [0.5, 0.4, 0.3, 0.6, 0.2, 0.5, 0.5, 0.5],
                           "reward": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0], "sp": [0.1] * 3 + [0.2] * 3 + [0.3] * 2,
                           "cp": [0.5, 0.25, 0.1, 0.5, 0.25, 0.1, 0.5, 0.25]})
SLATE_RECS = pd.DataFrame({"user_id": [1, 1, 1, 2, 2, 2, 3, 3], "item_id": [10, 11, 12, 13, 11, 14, 10, 12],
                           "score": [0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9, 0.8]})


def _slate_warnings(asked, share, logs=SLATE_LOGS, recs=SLATE_RECS, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = recsql.evaluate(recs, None, asked, logs=logs, slate_propensity_col="sp", cascade_propensity_col="cp",
                                 min_ess_share=share, **options)
    return result.summary, [str(w.message) for w in caught if issubclass(w.category, recsql.RecsqlWarning)]


def test_the_slate_estimators_are_warned_about_with_the_ess_of_their_own_weights():
    """slate_ips and slate_snips read one weight per slate (ESS 1.6 of n = 3 slates), slate_rips the cascade weights
    (ESS 484/140 of 8 rows), slate_iips the impressions' (ips's); pbm_ips none (its weights are examination ratios)."""
    slate, cascade = _ess([10, 0, 10 / 3]), _ess([2, 4, 10, 0, 0, 0, 2, 4])
    assert slate == pytest.approx(1.6) and cascade == pytest.approx(484 / 140)
    summary, found = _slate_warnings(["slate_ips", "slate_snips", "slate_rips", "slate_iips", "pbm_ips"], 0.6)
    assert list(summary.columns[-5:]) == ["slate_ips", "slate_snips", "slate_rips", "slate_iips", "pbm_ips"]
    assert len(found) == 3, found
    assert found[0].startswith("the effective sample size of the importance weights (weights=slate) is 1.6, below 0.6 "
                               "of the n = 3 logged slates: the estimates slate_ips, slate_snips rest on a few slates")
    assert f"(weights=cascade) is {cascade:.4g}, below 0.6 of the n = 8 logged impressions: the estimates slate_rips " \
           in found[1]
    assert "(target=list) is" in found[2] and "the estimates slate_iips rest" in found[2]
    assert not [m for m in found if "pbm_ips" in m]
    # 1.6 >= 0.5 · 3: the slates' warning stops where its own n says, the others go on
    assert not [m for m in _slate_warnings(["slate_ips", "slate_rips"], 0.5)[1] if "weights=slate" in m]
    assert _slate_warnings(["pbm_ips"], 0.99)[1] == []


def test_ess_and_max_weight_of_the_slate_weights_and_what_they_refuse():
    summary, _ = _slate_warnings(["ess(weights=slate)", "max_weight(weights=slate)", "ess(weights=cascade)",
                                  "max_weight(weights=cascade)"], 0)
    assert summary.iloc[0, -4:].tolist() == pytest.approx([1.6, 10, 484 / 140, 10])
    with pytest.raises(recsql.RecsqlError, match=r"'ess\(target=scores,weights=slate\)': the slate and cascade weights "
                                                 r"are those of the run's list"):
        _slate_warnings(["ess(target=scores, weights=slate)"], 0)
    with pytest.raises(recsql.RecsqlError, match=r"needs each logged slate's joint propensity"):
        recsql.evaluate(SLATE_RECS, None, ["ess(weights=slate)"], logs=SLATE_LOGS)


def test_with_logs_per_run_each_run_is_warned_against_its_own_slates():
    """Week 2's logs are slates 2 and 3 only: its slate weights 0 and 10/3 (ESS 1 of n = 2 slates)."""
    logs = SLATE_LOGS.assign(week=[1, 1, 1, 2, 2, 2, 2, 2])
    recs = pd.concat([SLATE_RECS.query("user_id == 1").assign(week=1), SLATE_RECS.query("user_id > 1").assign(week=2)])
    summary, found = _slate_warnings(["slate_ips"], 0.6, logs=logs, recs=recs, run_cols="week")
    assert found == [f"run 2: the effective sample size of the importance weights (weights=slate) is 1, below 0.6 of the "
                     f"n = 2 logged slates: the estimates slate_ips rest on a few slates (the new policy mostly shows what "
                     f"the logging policy rarely did), and are noisy whatever their formula; min_ess_share (CLI: "
                     f"--min-ess-share) sets the threshold, 0 turns this off"]
