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

The slate estimators' cases (OUT_DIR/slates/<case>/{logs,recs}.parquet and OUT_DIR/slate_cases.json) come
from obp's SyntheticSlateBanditDataset (several seeds, sizes, slate lengths and reward structures; a logging
policy that ranks without replacement, as a list does): one row per (slate, position), the
slate id the context, obp's 0-based position + 1, and its three propensities (joint, of the item at its
position, cascade). The target is a deterministic ranking of every item per slate: the logged slate's
first m items (m drawn from 0..len_list, so that targets agree with the logged slates on every prefix
length) then the other items in a random order. obp computes its probabilities itself
(obtain_pscore_given_evaluation_policy_logit, from logits 1000 apart, whose softmax is exactly 1 and 0),
and its SlateStandardIPS, SlateIndependentIPS and SlateRewardInteractionIPS estimate the target's value, as do
their self-normalized forms (SelfNormalizedSlateStandardIPS, SelfNormalizedSlateIndependentIPS and
SelfNormalizedSlateRewardInteractionIPS). OUT_DIR/zero_position/{logs,recs}.parquet and
OUT_DIR/zero_position.json: two slates with a position that no target matches, where obp's self-normalized
independent and reward-interaction estimates are NaN (recsql's add 0 for that position: docs/guide/logs.md).
OUT_DIR/pbm/<case>/{logs,recs}.parquet and OUT_DIR/pbm_cases.json: slates of the position-based click model and
obp's ground-truth value of the target (pbm_case). OUT_DIR/obd_<policy>/{logs,recs,reward_model}.parquet and
OUT_DIR/obd_cases.json: the Open Bandit Dataset sample obp ships, and obp's estimates on it (obd_case).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from obp.dataset import (OpenBanditDataset, SyntheticBanditDataset, SyntheticSlateBanditDataset, linear_behavior_policy,
                         linear_behavior_policy_logit, linear_reward_function, logistic_reward_function)
from obp.ope import (DirectMethod, DoublyRobust, InverseProbabilityWeighting,
                     SelfNormalizedInverseProbabilityWeighting, SelfNormalizedSlateIndependentIPS,
                     SelfNormalizedSlateRewardInteractionIPS, SelfNormalizedSlateStandardIPS, SlateIndependentIPS,
                     SlateRewardInteractionIPS, SlateStandardIPS, SwitchDoublyRobust)
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
    return f"{name}(target={target}{',' + rest if rest else ')'}"


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


# (seed, n_rounds, n_unique_action, len_list, reward_type, reward_structure)
SLATE_CASES = ((1, 300, 5, 3, "binary", "cascade_additive"),
               (7, 600, 4, 3, "continuous", "standard_additive"),
               (42, 400, 6, 4, "binary", "independent"),
               (3, 800, 4, 2, "binary", "cascade_decay"),
               (11, 500, 5, 3, "continuous", "standard_decay"))


def _target_logits(action: np.ndarray, n_rounds: int, n_items: int, len_list: int, rng: np.random.Generator) -> np.ndarray:
    """Per slate, a ranking of every item (the logged slate's first m items, then the others shuffled) as
    logits 1000 apart (the first item the largest)."""
    logits = np.zeros((n_rounds, n_items))
    for i, logged in enumerate(action.reshape(n_rounds, len_list)):
        head = list(dict.fromkeys(logged[:rng.integers(0, len_list + 1)]))
        rest = [a for a in rng.permutation(n_items) if a not in head]
        for rank, item in enumerate(head + rest):
            logits[i, item] = 1000.0 * (n_items - rank)
    return logits


def _slates(seed: int, n_rounds: int, n_items: int, len_list: int, reward_type: str, structure: str) -> tuple:
    """obp's SyntheticSlateBanditDataset of a case (SLATE_CASES' fields) and its logged slates, with each row's
    marginal propensity (pscore_item_position)."""
    common = dict(n_unique_action=n_items, len_list=len_list, dim_context=3, reward_type=reward_type,
                  reward_structure=structure, random_state=seed,
                  base_reward_function=logistic_reward_function if reward_type == "binary" else linear_reward_function)
    data = SyntheticSlateBanditDataset(**common, behavior_policy_function=linear_behavior_policy_logit)
    return data, data.obtain_batch_bandit_feedback(n_rounds=n_rounds, return_pscore_item_position=True)


def slate_case(seed: int, n_rounds: int, n_items: int, len_list: int, reward_type: str, structure: str,
               out: Path) -> dict:
    data, feedback = _slates(seed, n_rounds, n_items, len_list, reward_type, structure)
    logits = _target_logits(feedback["action"], n_rounds, n_items, len_list, np.random.default_rng(seed + 2000))
    pe_slate, pe_item_position, pe_cascade = data.obtain_pscore_given_evaluation_policy_logit(
        action=feedback["action"], evaluation_policy_logit_=logits, return_pscore_item_position=True)
    folder = out / "slates" / f"seed{seed}_n{n_rounds}_a{n_items}_l{len_list}"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"user_id": feedback["slate_id"].astype("int64"), "item_id": feedback["action"].astype("int64"),
                  "position": feedback["position"].astype("int64") + 1,
                  "propensity": feedback["pscore_item_position"].astype("float64"),
                  "slate_propensity": feedback["pscore"].astype("float64"),
                  "cascade_propensity": feedback["pscore_cascade"].astype("float64"),
                  "reward": feedback["reward"].astype("float64")}).to_parquet(folder / "logs.parquet")
    users = np.repeat(np.arange(n_rounds), n_items)
    pd.DataFrame({"user_id": users, "item_id": np.tile(np.arange(n_items), n_rounds),
                  "score": logits.reshape(-1) / 1000.0}).to_parquet(folder / "recs.parquet")
    given = dict(slate_id=feedback["slate_id"], reward=feedback["reward"], position=feedback["position"])
    expected = {
        "slate_ips": SlateStandardIPS(len_list=len_list).estimate_policy_value(
            **given, pscore=feedback["pscore"], evaluation_policy_pscore=pe_slate),
        "slate_iips": SlateIndependentIPS(len_list=len_list).estimate_policy_value(
            **given, pscore_item_position=feedback["pscore_item_position"],
            evaluation_policy_pscore_item_position=pe_item_position),
        "slate_rips": SlateRewardInteractionIPS(len_list=len_list).estimate_policy_value(
            **given, pscore_cascade=feedback["pscore_cascade"], evaluation_policy_pscore_cascade=pe_cascade),
        # obp divides by the mean weight over the rows: recsql's slate_snips (each slate once) when, as here,
        # every slate has len_list rows
        "slate_snips": SelfNormalizedSlateStandardIPS(len_list=len_list).estimate_policy_value(
            **given, pscore=feedback["pscore"], evaluation_policy_pscore=pe_slate),
        # each position normalized by the mean weight of its rows (obp's position 0..len_list-1, recsql's 1..len_list)
        "slate_sniips": SelfNormalizedSlateIndependentIPS(len_list=len_list).estimate_policy_value(
            **given, pscore_item_position=feedback["pscore_item_position"],
            evaluation_policy_pscore_item_position=pe_item_position),
        "slate_snrips": SelfNormalizedSlateRewardInteractionIPS(len_list=len_list).estimate_policy_value(
            **given, pscore_cascade=feedback["pscore_cascade"], evaluation_policy_pscore_cascade=pe_cascade)}
    # how many slates and positions the target matches: the test asserts the cases weigh something
    matched = {"slates": int((pe_slate[::len_list] == 1).sum()), "positions": int((pe_item_position == 1).sum())}
    return {"case": folder.name, "n_slates": n_rounds, "expected": {k: float(v) for k, v in expected.items()},
            "matched": matched}


def zero_position_case(out: Path) -> dict:
    """Two logged slates of three positions whose third position no target matches (fixtures/worked/beyond.json's
    slate_sniips-logs with a third row on slate 2): obp's self-normalized independent and reward-interaction
    estimates there (NaN: obp divides by that position's mean weight, 0), for the documented difference."""
    logs = pd.DataFrame({"user_id": [0, 0, 0, 1, 1, 1], "item_id": [10, 11, 13, 12, 11, 14], "position": [1, 2, 3, 1, 2, 3],
                         "propensity": [0.5, 0.25, 0.5, 0.2, 0.5, 0.5], "cascade_propensity": [0.5, 0.1, 0.05, 0.2, 0.04, 0.02],
                         "reward": [1.0, 1.0, 1.0, 0.0, 0.0, 1.0]})
    recs = pd.DataFrame({"user_id": [0, 0, 0, 1, 1, 1], "item_id": [10, 11, 12, 12, 11, 10],
                         "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0]})
    folder = out / "zero_position"
    folder.mkdir(parents=True, exist_ok=True)
    logs.to_parquet(folder / "logs.parquet")
    recs.to_parquet(folder / "recs.parquet")
    given = dict(slate_id=logs["user_id"].to_numpy(), reward=logs["reward"].to_numpy(),
                 position=logs["position"].to_numpy() - 1)
    pe_item_position = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 0.0])  # the lists hold the logged items at 1 and 2 only
    pe_cascade = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    with np.errstate(invalid="ignore"):
        return {"slate_sniips": float(SelfNormalizedSlateIndependentIPS(len_list=3).estimate_policy_value(
                    **given, pscore_item_position=logs["propensity"].to_numpy(),
                    evaluation_policy_pscore_item_position=pe_item_position)),
                "slate_snrips": float(SelfNormalizedSlateRewardInteractionIPS(len_list=3).estimate_policy_value(
                    **given, pscore_cascade=logs["cascade_propensity"].to_numpy(),
                    evaluation_policy_pscore_cascade=pe_cascade))}


# (seed, n_rounds, n_unique_action, len_list, eta): data of the position-based click model
PBM_CASES = ((5, 4000, 5, 3, 1.0), (8, 3000, 5, 4, 0.5), (13, 3000, 4, 3, 2.0))


def pbm_case(seed: int, n_rounds: int, n_items: int, len_list: int, eta: float, out: Path) -> dict:
    """Slates whose rewards follow the position-based model (click_model="pbm": the expected reward of item a at
    position k is (1/k)^eta q(x, a), reward_structure="independent") under a Plackett-Luce logging policy, a
    target ranking per context drawn independently of the logs (a target read from the logged slates, as
    slate_case's, would make no estimator unbiased), and obp's ground-truth value of the target on the logged contexts
    (calc_ground_truth_policy_value: the expected reward of its slate, exactly, by enumeration). obp has no
    PBM estimator: the test checks recsql's pbm_ips against this truth within its standard error."""
    data = SyntheticSlateBanditDataset(n_unique_action=n_items, len_list=len_list, dim_context=3, reward_type="binary",
                                       reward_structure="independent", click_model="pbm", eta=eta, random_state=seed,
                                       base_reward_function=logistic_reward_function,
                                       behavior_policy_function=linear_behavior_policy_logit)
    feedback = data.obtain_batch_bandit_feedback(n_rounds=n_rounds, return_pscore_item_position=True)
    rng = np.random.default_rng(seed + 3000)  # a random ranking per context, as logits 1000 apart
    logits = np.stack([1000.0 * (n_items - rng.permutation(n_items)) for _ in range(n_rounds)])
    truth = data.calc_ground_truth_policy_value(evaluation_policy_logit_=logits, context=feedback["context"])
    folder = out / "pbm" / f"seed{seed}_n{n_rounds}_a{n_items}_l{len_list}"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"user_id": feedback["slate_id"].astype("int64"), "item_id": feedback["action"].astype("int64"),
                  "position": feedback["position"].astype("int64") + 1,
                  "propensity": feedback["pscore_item_position"].astype("float64"),
                  "reward": feedback["reward"].astype("float64")}).to_parquet(folder / "logs.parquet")
    pd.DataFrame({"user_id": np.repeat(np.arange(n_rounds), n_items), "item_id": np.tile(np.arange(n_items), n_rounds),
                  "score": logits.reshape(-1) / 1000.0}).to_parquet(folder / "recs.parquet")
    return {"case": folder.name, "eta": eta, "truth": float(truth)}


class _Sample(OpenBanditDataset):
    """obp's loader of its Open Bandit Dataset sample (actions, positions, clicks, propensities as obp reads
    them), without its feature engineering of the contexts, which fails under pandas 2 (DataFrame.drop given both
    axis and columns) and which no estimator here reads."""

    def pre_process(self) -> None:
        self.context = np.zeros((len(self.action), 1))
        self.action_context = np.zeros((self.n_actions, 1))


def _obd_logs_and_model(feedback: dict, rng: np.random.Generator, folder: Path) -> tuple[Path, np.ndarray]:
    """The Open Bandit Dataset sample's logs (each impression its own context, obp's position + 1) and a reward
    model (the item's click rate in the sample plus seeded noise, the same at every position), written to
    ``folder`` as Parquet; the folder and the model's (n, items) predictions."""
    n, n_items = feedback["n_rounds"], feedback["n_actions"]
    rate = np.bincount(feedback["action"], weights=feedback["reward"], minlength=n_items) / np.maximum(
        np.bincount(feedback["action"], minlength=n_items), 1)
    q = np.clip(rate[None, :] + rng.normal(0, 0.01, size=(n, n_items)), 0, 1)
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"user_id": np.arange(n), "item_id": feedback["action"].astype("int64"),
                  "position": feedback["position"].astype("int64") + 1, "propensity": feedback["pscore"].astype("float64"),
                  "reward": feedback["reward"].astype("float64")}).to_parquet(folder / "logs.parquet")
    pd.DataFrame({"user_id": np.repeat(np.arange(n), n_items), "item_id": np.tile(np.arange(n_items), n),
                  "reward": q.reshape(-1)}).to_parquet(folder / "reward_model.parquet")
    return folder, q


def obd_case(out: Path, behavior_policy: str) -> dict:
    """The Open Bandit Dataset's sample that obp ships (ZOZOTOWN, campaign "all", 10,000 impressions of 80 items
    at three positions, logged by the ``random`` or ``bts`` policy with its propensities): each impression its own
    context, and a deterministic target ranking of three items per impression (the logged item at its logged
    position for half of them, the other places filled from a seeded shuffle), given to recsql as a list and to obp
    as its one-hot action_dist over (item, position). The reward model is the item's click rate in the sample
    plus seeded noise, the same at every position. obp's IPW, SNIPW, DM, DR (with and without clipping) and
    switch-DR estimate the target's value with the logged positions."""
    feedback = _Sample(behavior_policy=behavior_policy, campaign="all").obtain_batch_bandit_feedback()
    n, n_items, len_list = feedback["n_rounds"], feedback["n_actions"], int(feedback["position"].max() + 1)
    rng = np.random.default_rng({"random": 17, "bts": 19}[behavior_policy])
    lists = np.empty((n, len_list), dtype=np.int64)
    for i in range(n):
        shuffled = [a for a in rng.permutation(n_items) if a != feedback["action"][i]][:len_list]
        if rng.random() < 0.5:
            shuffled[feedback["position"][i]] = feedback["action"][i]
        lists[i] = shuffled
    action_dist = np.zeros((n, n_items, len_list))
    action_dist[np.repeat(np.arange(n), len_list), lists.reshape(-1), np.tile(np.arange(len_list), n)] = 1.0
    folder, q = _obd_logs_and_model(feedback, rng, out / f"obd_{behavior_policy}")
    pd.DataFrame({"user_id": np.repeat(np.arange(n), len_list), "item_id": lists.reshape(-1),
                  "rank": np.tile(np.arange(1, len_list + 1), n)}).to_parquet(folder / "recs.parquet")
    given = dict(reward=feedback["reward"], action=feedback["action"], position=feedback["position"],
                 pscore=feedback["pscore"], action_dist=action_dist)
    expected = {}
    for metric, estimator in _estimators().items():
        model = {} if metric.startswith("ips") or metric == "snips" else {
            "estimated_rewards_by_reg_model": np.repeat(q[:, :, np.newaxis], len_list, axis=2)}
        expected[metric] = float(estimator.estimate_policy_value(**given, **model))
    return {"case": folder.name, "n": int(n), "matched": int(action_dist[np.arange(n), feedback["action"],
                                                                          feedback["position"]].sum()),
            "expected": expected}


def _positions_frame(users: np.ndarray, items: np.ndarray, positions: np.ndarray, probability: np.ndarray) -> pd.DataFrame:
    """A stochastic ranking policy as recsql's target=positions reads it: (user, item, position 1.., score) rows,
    one per (user, item, position) the policy may show, the score its probability π_e(a at k | x)."""
    frame = pd.DataFrame({"user_id": users.astype("int64"), "item_id": items.astype("int64"),
                          "position": positions.astype("int64") + 1, "score": probability.astype("float64")})
    return frame[frame["score"] > 0].groupby(["user_id", "item_id", "position"], as_index=False)["score"].sum()


def obd_positions_case(out: Path, behavior_policy: str) -> dict:
    """The Open Bandit Dataset sample with a stochastic target ranking per impression: a mixture of four rankings
    of three items (one of them the logged item at its logged position, for about half of the impressions), with
    seeded Dirichlet weights; π_e(a at k | x) is the weight of the rankings that put a at k, given to obp as its
    action_dist (n, items, positions) and to recsql as recs rows (target=positions). The reward model is the
    item's click rate plus seeded noise, the same at every position."""
    feedback = _Sample(behavior_policy=behavior_policy, campaign="all").obtain_batch_bandit_feedback()
    n, n_items, len_list = feedback["n_rounds"], feedback["n_actions"], int(feedback["position"].max() + 1)
    rng = np.random.default_rng({"random": 23, "bts": 29}[behavior_policy])
    mixtures, action_dist = 4, np.zeros((n, n_items, len_list))
    for i in range(n):
        weights = rng.dirichlet(np.ones(mixtures))
        for m in range(mixtures):
            ranking = list(rng.permutation(n_items)[:len_list])
            if m == 0 and rng.random() < 0.5 and feedback["action"][i] not in ranking:
                ranking[feedback["position"][i]] = feedback["action"][i]
            action_dist[i, ranking, np.arange(len_list)] += weights[m]
    folder, q = _obd_logs_and_model(feedback, rng, out / f"obd_positions_{behavior_policy}")
    users, items, positions = np.nonzero(action_dist)
    _positions_frame(users, items, positions, action_dist[users, items, positions]).to_parquet(folder / "recs.parquet")
    given = dict(reward=feedback["reward"], action=feedback["action"], position=feedback["position"],
                 pscore=feedback["pscore"], action_dist=action_dist)
    expected = {}
    for metric, estimator in _estimators().items():
        model = {} if metric.startswith("ips") or metric == "snips" else {
            "estimated_rewards_by_reg_model": np.repeat(q[:, :, np.newaxis], len_list, axis=2)}
        expected[_with_target(metric, "positions")] = float(estimator.estimate_policy_value(**given, **model))
    weights = action_dist[np.arange(n), feedback["action"], feedback["position"]] / feedback["pscore"]
    expected["ess(target=positions)"] = float(weights.sum() ** 2 / (weights ** 2).sum())
    expected["max_weight(target=positions)"] = float(weights.max())
    return {"case": folder.name, "n": int(n), "weighed": int((weights > 0).sum()), "expected": expected}


def slate_positions_case(seed: int, n_rounds: int, n_items: int, len_list: int, reward_type: str, structure: str,
                         out: Path) -> dict:
    """obp's synthetic slates with a stochastic target: a Plackett-Luce ranking of the seeded logits (softmax
    draws without replacement); obp computes the marginal π_e(a at k | x) of each logged row (its
    evaluation_policy_pscore_item_position), given to recsql as recs rows (target=positions); obp's
    SlateIndependentIPS and its self-normalized form read the same. The same target's probability of each logged
    slate's prefix, π_e(a_1..a_k | x) (obp's evaluation_policy_pscore_cascade), is given as recs_slates rows
    (target=slates); obp's slate-standard and reward-interaction estimators, and their self-normalized forms, read
    it and the whole slate's (evaluation_policy_pscore)."""
    data, feedback = _slates(seed, n_rounds, n_items, len_list, reward_type, structure)
    logits = np.random.default_rng(seed + 3000).normal(scale=1.5, size=(n_rounds, n_items))
    pe_slate, pe_item_position, pe_cascade = data.obtain_pscore_given_evaluation_policy_logit(
        action=feedback["action"], evaluation_policy_logit_=logits, return_pscore_item_position=True)
    folder = out / "slates_positions" / f"seed{seed}_n{n_rounds}_a{n_items}_l{len_list}"
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"user_id": feedback["slate_id"].astype("int64"), "item_id": feedback["action"].astype("int64"),
                  "position": feedback["position"].astype("int64") + 1,
                  "propensity": feedback["pscore_item_position"].astype("float64"),
                  "reward": feedback["reward"].astype("float64"),
                  "slate_propensity": feedback["pscore"].astype("float64"),
                  "cascade_propensity": feedback["pscore_cascade"].astype("float64")}).to_parquet(folder / "logs.parquet")
    _positions_frame(feedback["slate_id"], feedback["action"], feedback["position"],
                     pe_item_position).to_parquet(folder / "recs.parquet")
    pd.DataFrame({"user_id": feedback["slate_id"].astype("int64"), "item_id": feedback["action"].astype("int64"),
                  "position": feedback["position"].astype("int64") + 1,
                  "score": pe_cascade.astype("float64")}).to_parquet(folder / "recs_slates.parquet")
    given = dict(slate_id=feedback["slate_id"], reward=feedback["reward"], position=feedback["position"],
                 pscore_item_position=feedback["pscore_item_position"],
                 evaluation_policy_pscore_item_position=pe_item_position)
    expected = {"slate_iips(target=positions)": SlateIndependentIPS(len_list=len_list).estimate_policy_value(**given),
                "slate_sniips(target=positions)":
                    SelfNormalizedSlateIndependentIPS(len_list=len_list).estimate_policy_value(**given)}
    slate = dict(slate_id=feedback["slate_id"], reward=feedback["reward"], position=feedback["position"],
                 pscore=feedback["pscore"], evaluation_policy_pscore=pe_slate)
    cascade = dict(slate_id=feedback["slate_id"], reward=feedback["reward"], position=feedback["position"],
                   pscore_cascade=feedback["pscore_cascade"], evaluation_policy_pscore_cascade=pe_cascade)
    slates = {"slate_ips(target=slates)": SlateStandardIPS(len_list=len_list).estimate_policy_value(**slate),
              "slate_snips(target=slates)": SelfNormalizedSlateStandardIPS(len_list=len_list).estimate_policy_value(**slate),
              "slate_rips(target=slates)": SlateRewardInteractionIPS(len_list=len_list).estimate_policy_value(**cascade),
              "slate_snrips(target=slates)":
                  SelfNormalizedSlateRewardInteractionIPS(len_list=len_list).estimate_policy_value(**cascade)}
    return {"case": folder.name, "expected": {k: float(v) for k, v in expected.items()},
            "expected_slates": {k: float(v) for k, v in slates.items()},
            "last_is_slate": bool(np.allclose(pe_cascade[len_list - 1::len_list], pe_slate[::len_list], rtol=1e-12))}


def main(out: Path) -> None:
    cases = [case(seed, target, out) for seed in SEEDS for target in ("list", "scores")]
    (out / "cases.json").write_text(json.dumps(cases, indent=1), encoding="utf-8")
    slates = [slate_case(*spec, out) for spec in SLATE_CASES]
    (out / "slate_cases.json").write_text(json.dumps(slates, indent=1), encoding="utf-8")
    (out / "obd_cases.json").write_text(json.dumps([obd_case(out, policy) for policy in ("random", "bts")], indent=1),
                                        encoding="utf-8")
    (out / "positions_cases.json").write_text(json.dumps(
        [obd_positions_case(out, policy) for policy in ("random", "bts")]
        + [slate_positions_case(*spec, out) for spec in SLATE_CASES[:3]], indent=1), encoding="utf-8")
    (out / "pbm_cases.json").write_text(json.dumps([pbm_case(*spec, out) for spec in PBM_CASES], indent=1),
                                        encoding="utf-8")
    (out / "zero_position.json").write_text(json.dumps(zero_position_case(out)), encoding="utf-8")  # NaN as NaN


if __name__ == "__main__":
    main(Path(sys.argv[1]))
