"""Off-policy estimates by obp itself (Open Bandit Pipeline 0.5.7, Saito et al. 2021), for
tests/test_logs_obp.py. Run by that test in obp's own virtual environment (.ci/engines.sh installs it;
obp pins old numpy and pandas), never imported by the test run:

    <obp venv>/bin/python tests/support/obp_cases.py OUT_DIR

For each seed and target policy it writes OUT_DIR/<case>/{logs,recs,reward_model}.parquet (recsql's
inputs) and OUT_DIR/cases.json: per case, the target (``list``: a deterministic policy, the argmax of
its scores, given to recsql as a ranked list; ``scores``: a stochastic one, softmax of its scores, given
as the recs' scores) and obp's estimate of each recsql metric. Logs come from obp's
SyntheticBanditDataset (logistic rewards, a linear behaviour policy); the reward model is the true
expected reward plus seeded noise. ``ess`` and ``max_weight`` (not estimators of obp) are computed here
from obp's own importance weights, action_dist[i, a_i, 0] / pscore_i.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from obp.dataset import SyntheticBanditDataset, linear_behavior_policy, logistic_reward_function
from obp.ope import (DirectMethod, DoublyRobust, InverseProbabilityWeighting,
                     SelfNormalizedInverseProbabilityWeighting, SwitchDoublyRobust)
from obp.utils import softmax

SEEDS = (1, 7, 42)
N_ROUNDS, N_ACTIONS, DIM_CONTEXT = 500, 8, 4
CAP = 5.0  # clipping of ips and dr, switching threshold of switch_dr


def _estimators() -> dict[str, object]:
    """recsql's metric (target filled in by the caller) -> the obp estimator of the same definition."""
    return {"ips": InverseProbabilityWeighting(), f"ips(cap={CAP:g})": InverseProbabilityWeighting(lambda_=CAP),
            "snips": SelfNormalizedInverseProbabilityWeighting(), "dm": DirectMethod(), "dr": DoublyRobust(),
            f"dr(cap={CAP:g})": DoublyRobust(lambda_=CAP), f"switch_dr(tau={CAP:g})": SwitchDoublyRobust(lambda_=CAP)}


def _with_target(metric: str, target: str) -> str:
    if target == "list":
        return metric
    name, _, rest = metric.partition("(")
    return f"{name}(target=scores{',' + rest if rest else ')'}"


def case(seed: int, target: str, out: Path) -> dict:
    data = SyntheticBanditDataset(n_actions=N_ACTIONS, dim_context=DIM_CONTEXT, reward_function=logistic_reward_function,
                                  behavior_policy_function=linear_behavior_policy, random_state=seed)
    feedback = data.obtain_batch_bandit_feedback(n_rounds=N_ROUNDS)
    rng = np.random.default_rng(seed + 1000)
    n, users = N_ROUNDS, np.arange(N_ROUNDS)
    scores = feedback["expected_reward"] + rng.normal(scale=0.3, size=(n, N_ACTIONS))  # the target's own view
    if target == "list":
        action_dist = np.zeros((n, N_ACTIONS, 1))
        action_dist[users, np.argmax(scores, axis=1), 0] = 1.0
        recs_score = scores
    else:
        action_dist = softmax(2.0 * scores)[:, :, np.newaxis]
        recs_score = action_dist[:, :, 0]
    q_hat = feedback["expected_reward"] + rng.normal(scale=0.1, size=(n, N_ACTIONS))
    folder = out / f"seed{seed}_{target}"
    folder.mkdir(parents=True, exist_ok=True)
    grid_users, grid_items = np.repeat(users, N_ACTIONS), np.tile(np.arange(N_ACTIONS), n)
    pd.DataFrame({"user_id": users, "item_id": feedback["action"].astype("int64"),
                  "propensity": feedback["pscore"].astype("float64"),
                  "reward": feedback["reward"].astype("float64")}).to_parquet(folder / "logs.parquet")
    pd.DataFrame({"user_id": grid_users, "item_id": grid_items,
                  "score": recs_score.reshape(-1)}).to_parquet(folder / "recs.parquet")
    pd.DataFrame({"user_id": grid_users, "item_id": grid_items,
                  "reward": q_hat.reshape(-1)}).to_parquet(folder / "reward_model.parquet")
    inputs = dict(reward=feedback["reward"], action=feedback["action"], pscore=feedback["pscore"],
                  action_dist=action_dist, position=None)
    expected = {}
    for metric, estimator in _estimators().items():
        model = {} if metric.startswith("ips") or metric == "snips" else {
            "estimated_rewards_by_reg_model": q_hat[:, :, np.newaxis]}
        expected[_with_target(metric, target)] = float(estimator.estimate_policy_value(**inputs, **model))
    weights = action_dist[users, feedback["action"], 0] / feedback["pscore"]
    expected[_with_target("ess", target)] = float(weights.sum() ** 2 / (weights ** 2).sum())
    expected[_with_target("max_weight", target)] = float(weights.max())
    return {"case": folder.name, "seed": seed, "target": target, "expected": expected}


def main(out: Path) -> None:
    cases = [case(seed, target, out) for seed in SEEDS for target in ("list", "scores")]
    (out / "cases.json").write_text(json.dumps(cases, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
