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
