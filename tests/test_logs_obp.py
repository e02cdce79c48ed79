"""The off-policy estimators (docs/guide/logs.md) equal obp's own (Open Bandit Pipeline 0.5.7, Saito
et al. 2021) to 1e-9 on its SyntheticBanditDataset: three seeds, a deterministic target policy (the
argmax of its scores, given to recsql as a ranked list: target=list) and a stochastic one (softmax of
its scores, given as the recs' scores: target=scores), every estimator with and without clipping. The
slate estimators equal obp's SlateStandardIPS, SlateIndependentIPS and SlateRewardInteractionIPS and their
self-normalized forms on its SyntheticSlateBanditDataset (five seeds, sizes, slate lengths and reward
structures), a deterministic target ranking given as a list; the bandit estimators also equal obp's on the
Open Bandit Dataset sample obp ships, with its logged positions; where a position's weights sum to 0, obp's
self-normalized ones are NaN and recsql's add 0 for it, as documented. obp has no position-based-model
estimator: pbm_ips is checked against the true value of obp's data with the position-based click model.

obp runs once, in its own virtual environment (``RECSQL_OBP_VENV``, default ``~/.cache/recsql-obp``,
installed by ``.ci/engines.sh`` from ``.ci/obp-requirements.txt``: obp declares Python < 3.11 and pins
old numpy and pandas), through tests/support/obp_cases.py, which writes every case's inputs as Parquet
and obp's estimates as JSON. A missing environment fails the test.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import recsql
from support.reference_logs import estimate, lists_of, pbm_terms

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("RECSQL_OBP_VENV", Path.home() / ".cache" / "recsql-obp"))


@pytest.fixture(scope="module")
def obp_cases(tmp_path_factory) -> tuple[Path, list[dict]]:
    python = VENV / "bin" / "python"
    if not python.is_file():
        raise RuntimeError(f"obp is not installed at {VENV}: run `bash .ci/engines.sh` (or set RECSQL_OBP_VENV)")
    out = tmp_path_factory.mktemp("obp")
    done = subprocess.run([str(python), str(ROOT / "tests" / "support" / "obp_cases.py"), str(out)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    return out, json.loads((out / "cases.json").read_text(encoding="utf-8"))


def test_the_estimators_equal_obps(obp_cases):
    out, cases = obp_cases
    assert len(cases) == 6 and {c["target"] for c in cases} == {"list", "scores"}
    for case in cases:
        folder = out / case["case"]
        logs, recs, model = (pd.read_parquet(folder / f"{name}.parquet") for name in ("logs", "recs", "reward_model"))
        got = recsql.evaluate(recs, None, list(case["expected"]), logs=logs, reward_model=model).summary
        assert len(case["expected"]) == 9
        for metric, want in case["expected"].items():
            value = float(got[metric].iloc[0])
            assert math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-9), (case["case"], metric, value, want)


def test_the_slate_estimators_equal_obps(obp_cases):
    out = obp_cases[0]
    cases = json.loads((out / "slate_cases.json").read_text(encoding="utf-8"))
    assert len(cases) == 5
    for case in cases:
        # the target agrees with some logged slates and some positions, and not with all of them
        assert 0 < case["matched"]["slates"] < case["n_slates"], case
        folder = out / "slates" / case["case"]
        logs, recs = (pd.read_parquet(folder / f"{name}.parquet") for name in ("logs", "recs"))
        got = recsql.evaluate(recs, None, list(case["expected"]), logs=logs, slate_propensity_col="slate_propensity",
                              cascade_propensity_col="cascade_propensity").summary
        assert sorted(case["expected"]) == ["slate_iips", "slate_ips", "slate_rips", "slate_sniips", "slate_snips",
                                            "slate_snrips"]
        for metric, want in case["expected"].items():
            value = float(got[metric].iloc[0])
            assert want != 0 and math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-9), (case["case"], metric, value, want)


def test_a_position_whose_weights_sum_to_0_adds_0_where_obp_gives_nan(obp_cases):
    """The documented difference (docs/guide/logs.md, "Slates"): where no target matches a logged position, obp's
    self-normalized independent and reward-interaction estimates divide by that position's mean weight, 0, and are
    NaN; recsql's add 0 for that position, and equal the reference (20/21 and 4/7 by hand: the worked examples
    slate_sniips-logs and slate_snrips-logs, whose third position is the same)."""
    out = obp_cases[0]
    obp = json.loads((out / "zero_position.json").read_text(encoding="utf-8"))
    logs, recs = (pd.read_parquet(out / "zero_position" / f"{name}.parquet") for name in ("logs", "recs"))
    got = recsql.evaluate(recs, None, list(obp), logs=logs, cascade_propensity_col="cascade_propensity").summary.iloc[0]
    rows = logs.to_dict("records")
    for metric, by_hand in (("slate_sniips", 20 / 21), ("slate_snrips", 4 / 7)):
        assert math.isnan(obp[metric]), (metric, obp[metric])
        want = estimate(metric, {}, recs.to_dict("records"), rows)
        assert math.isclose(want, by_hand, rel_tol=1e-12) and math.isclose(got[metric], want, rel_tol=1e-9), metric


EXAMINATION = {1.0: "1 / rank", 0.5: "1 / SQRT(rank)", 2.0: "1 / (rank * rank)"}  # obp's (1/k)^eta, as recsql writes it


def test_pbm_ips_is_unbiased_on_obps_position_based_slates(obp_cases):
    """obp has no position-based-model estimator; its SyntheticSlateBanditDataset has the model (click_model="pbm":
    the expected reward of an item at position k is (1/k)^eta times the item's own) and gives the target's true value
    on the logged contexts. pbm_ips, with the examination estimated from the logs and with obp's (1/k)^eta given, lies
    within 4 standard errors of it (the standard error of the mean of the slates' terms) on three seeds, slate lengths
    and position curves. The same estimate with logging=ranking, which reads the logged ranking as a deterministic
    ranker's, is off by more than 4 standard errors on this randomized logging: the check can tell them apart."""
    out = obp_cases[0]
    cases = json.loads((out / "pbm_cases.json").read_text(encoding="utf-8"))
    assert len(cases) == 3
    for case in cases:
        folder = out / "pbm" / case["case"]
        logs, recs = (pd.read_parquet(folder / f"{name}.parquet") for name in ("logs", "recs"))
        given = EXAMINATION[case["eta"]]
        asked = {"pbm_ips": {"examination": "logs", "logging": "randomized"},
                 f"pbm_ips(examination={given})": {"examination": given, "logging": "randomized"},
                 f"pbm_ips(examination={given}, logging=ranking)": {"examination": given, "logging": "ranking"}}
        got = recsql.evaluate(recs, None, list(asked), logs=logs).summary.iloc[0]
        lists = lists_of(recs.to_dict("records"), use_rank=False)
        for metric, options in asked.items():
            terms = list(pbm_terms(options, lists, logs.to_dict("records")).values())
            error = statistics.stdev(terms) / math.sqrt(len(terms))
            assert math.isclose(got[metric], sum(terms) / len(terms), rel_tol=1e-9), metric  # the reference's value
            off = abs(got[metric] - case["truth"]) / error
            assert (off > 4) if options["logging"] == "ranking" else (off < 4), (case["case"], metric, off)


def test_the_estimators_equal_obps_on_the_open_bandit_dataset_sample(obp_cases):
    """The Open Bandit Dataset sample obp ships (ZOZOTOWN, 10,000 impressions at three positions, logged by the random
    and the Bernoulli Thompson sampling policies): each impression its own context, a target ranking of three
    items per impression (the list agrees with the logged item at its logged position on about half of them), and a
    reward model the same at every position. Every bandit estimator, with the logged positions, equals obp's."""
    out = obp_cases[0]
    cases = json.loads((out / "obd_cases.json").read_text(encoding="utf-8"))
    assert [c["case"] for c in cases] == ["obd_random", "obd_bts"]
    for case in cases:
        assert 0.4 * case["n"] < case["matched"] < 0.6 * case["n"], case
        folder = out / case["case"]
        logs, recs, model = (pd.read_parquet(folder / f"{name}.parquet") for name in ("logs", "recs", "reward_model"))
        got = recsql.evaluate(recs, None, list(case["expected"]), logs=logs, reward_model=model, score_col=None,
                              rank_col="rank", min_ess_share=0).summary.iloc[0]
        assert len(case["expected"]) == 7
        for metric, want in case["expected"].items():
            assert math.isclose(got[metric], want, rel_tol=1e-9, abs_tol=1e-12), (case["case"], metric, got[metric], want)


def test_a_stochastic_ranking_per_position_equals_obps(obp_cases):
    """target=positions: a stochastic target ranking given as recs rows (context, item, position, probability).
    On the Open Bandit Dataset sample, a mixture of four rankings per impression (obp's action_dist over item and
    position): every bandit estimator, ess and max_weight equal obp's. On obp's synthetic slates, a Plackett-Luce
    target whose marginal π_e(a at k | x) obp computes: slate_iips and slate_sniips equal obp's (and with the same
    target's probabilities of the logged slates' prefixes, target=slates: the next test)."""
    out = obp_cases[0]
    cases = json.loads((out / "positions_cases.json").read_text(encoding="utf-8"))
    assert len(cases) == 5
    for case in cases:
        slates = case["case"].startswith("seed")
        folder = out / ("slates_positions" if slates else "") / case["case"]
        logs, recs = (pd.read_parquet(folder / f"{name}.parquet") for name in ("logs", "recs"))
        model = None if slates else pd.read_parquet(folder / "reward_model.parquet")
        if not slates:  # the target shows about half of the logged items where they were logged
            assert 0.4 * case["n"] < case["weighed"] < 0.6 * case["n"], case
        got = recsql.evaluate(recs, None, list(case["expected"]), logs=logs, reward_model=model,
                              min_ess_share=0).summary.iloc[0]
        assert len(case["expected"]) == (2 if slates else 9)
        for metric, want in case["expected"].items():
            assert math.isclose(got[metric], want, rel_tol=1e-9, abs_tol=1e-12), (case["case"], metric, got[metric], want)


def test_a_stochastic_target_of_whole_slates_equals_obps(obp_cases):
    """target=slates: on obp's synthetic slates (three seeds), a Plackett-Luce target whose probability of each
    logged slate's prefix π_e(a_1..a_k | x) obp computes (evaluation_policy_pscore_cascade), given as one recs row per
    logged row: slate_ips and slate_snips (the prefix at the last position is the whole slate, obp's
    evaluation_policy_pscore), slate_rips and slate_snrips equal obp's."""
    out = obp_cases[0]
    cases = [c for c in json.loads((out / "positions_cases.json").read_text(encoding="utf-8"))
             if c["case"].startswith("seed")]
    assert len(cases) == 3
    for case in cases:
        assert case["last_is_slate"] and len(case["expected_slates"]) == 4, case
        folder = out / "slates_positions" / case["case"]
        logs, recs = pd.read_parquet(folder / "logs.parquet"), pd.read_parquet(folder / "recs_slates.parquet")
        assert 0 < recs["score"].min() and recs["score"].max() < 1  # stochastic: no prefix is certain or impossible
        got = recsql.evaluate(recs, None, list(case["expected_slates"]), logs=logs, min_ess_share=0,
                              slate_propensity_col="slate_propensity",
                              cascade_propensity_col="cascade_propensity").summary.iloc[0]
        for metric, want in case["expected_slates"].items():
            assert want != 0 and math.isclose(got[metric], want, rel_tol=1e-9, abs_tol=1e-12), \
                (case["case"], metric, got[metric], want)
