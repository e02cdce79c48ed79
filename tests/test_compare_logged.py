"""recsql.compare of the off-policy estimators (docs/guide/logs.md, "Intervals and tests"): ips, snips, dm, dr,
switch_dr, ess and max_weight, resampled over the logged contexts (recsql/comparison_logged.py).

Every expected value comes from the plain-Python reference (tests/support/reference_logs.py's estimate, on logs
whose impressions are repeated their context's weight times) with weights and signs drawn by recsql.resampling's
Python twin of the SQL mixer (its equality to the README's formula is tested in tests/test_compare.py)."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from recsql.dialects import render
from support.reference_logs import estimate
from test_compare_weighted import same_runs_and_pair, weights_and_signs

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning", "ignore::RuntimeWarning")

# (spelling, name, options): every estimator, some under other options than their defaults
METRICS = [("ips", "ips", {}), ("ips(cap=3)", "ips", {"cap": 3}), ("snips", "snips", {}), ("dm", "dm", {}),
           ("dr", "dr", {}), ("switch_dr(tau=3)", "switch_dr", {"tau": 3}), ("ess", "ess", {}),
           ("max_weight", "max_weight", {}), ("ips(target=scores)", "ips", {"target": "scores"}),
           # the slate estimators: each copy of a context drawn several times is a slate of its own
           ("slate_ips", "slate_ips", {}), ("slate_iips", "slate_iips", {}), ("slate_rips", "slate_rips", {}),
           ("slate_snips", "slate_snips", {}), ("slate_sniips", "slate_sniips", {}),
           ("slate_snrips", "slate_snrips", {}), ("pbm_ips", "pbm_ips", {}),
           ("pbm_ips(examination=1 / rank, logging=ranking)", "pbm_ips", {"examination": "1 / rank",
                                                                         "logging": "ranking"})]
SLATE_COLUMNS = dict(slate_propensity_col="slate_propensity", cascade_propensity_col="cascade_propensity")


@st.composite
def inputs(draw):
    """Two runs' lists over items 0..3 for users 0..n−1 (a user may lack one run's list; scores in (0, 3/8], each
    user's summing to at most 1, so that target=scores reads them as probabilities), logs of 1..3 impressions at positions 1..2 for contexts
    0..n+1 (contexts n and n+1 have no list in any run), a reward model of every (context, item)."""
    n = draw(st.integers(2, 6))
    recs = []
    for model in ("A", "B"):
        for u in range(n):
            if u > 0 and draw(st.integers(0, 4)) == 0:
                continue
            items = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True))
            recs += [(model, u, i, (len(items) - r) / 8) for r, i in enumerate(items)]
    logs = []
    for u in draw(st.lists(st.integers(0, n + 1), min_size=2, max_size=n + 2, unique=True)):
        joint = draw(st.sampled_from([0.05, 0.1, 0.5]))  # a slate: one item per position, one joint propensity,
        for item, position in draw(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3)), min_size=1, max_size=3,
                                            unique_by=lambda t: t[1])):  # cascade ones that never rise down it
            logs.append((u, item, position, draw(st.sampled_from([0.2, 0.25, 0.5, 1.0])),
                         float(draw(st.integers(0, 2))), joint, 0.5 ** position))
    model = [(u, i, draw(st.sampled_from([0.0, 0.3, 0.6]))) for u in range(n + 2) for i in range(4)]
    return (pd.DataFrame(recs, columns=["model", "user_id", "item_id", "score"]),
            pd.DataFrame(logs, columns=["user_id", "item_id", "position", "propensity", "reward", "slate_propensity",
                                        "cascade_propensity"]),
            pd.DataFrame(model, columns=["user_id", "item_id", "reward"]))


class Reference:
    """The runs' recs and the logs by context index, and each estimator on logs reweighted by context."""

    def __init__(self, recs, logs, model):
        listed = sorted(set(recs["user_id"]))  # the users compared: those with a list (dense index 1..n)
        others = sorted(set(logs["user_id"]) - set(listed))  # logged contexts of no list: after them
        self.index = {u: i for i, u in enumerate([*listed, *others])}
        self.n = len(self.index)
        self.contexts = len(set(logs["user_id"]))
        self.recs = {run: recs[recs["model"] == run].drop(columns="model").to_dict("records") for run in ("A", "B")}
        self.logs = logs.to_dict("records")
        self.model = model.to_dict("records")

    def value(self, name, options, recs, weights):
        """The estimator on the logs with each context's rows repeated its weight times, each copy a context of its
        own (its list and predictions copied with it): one slate per copy."""
        def copies(rows):
            return [{**row, "user_id": (row["user_id"], c)} for row in rows
                    for c in range(int(weights[self.index[row["user_id"]]]) if row["user_id"] in self.index else 0)]
        # the run's own lists kept beside the copies (no copied context reads them): a run with lists but none drawn
        # is estimated (0 where nothing is listed), a run without lists has no value
        return estimate(name, options, [*copies(recs), *recs], copies(self.logs), copies(self.model))

    def run(self, name, options, run, weights):
        return self.value(name, options, self.recs[run], weights)

    def sides(self, name, options, signs):
        """The two randomized sides of (B, A): side 1 B's list where the context's sign is +1, A's where −1."""
        def chosen(plus, minus):
            return [r for run, sign in ((plus, 1), (minus, -1)) for r in self.recs[run]
                    if signs[self.index[r["user_id"]]] == sign]
        ones = np.ones(self.n, dtype=int)
        return (self.value(name, options, chosen("B", "A"), ones) if chosen("B", "A") else None,
                self.value(name, options, chosen("A", "B"), ones) if chosen("A", "B") else None)


def statistics(recs, logs, model, resamples, seed, metrics=METRICS) -> pd.DataFrame:
    """compare's statement (to_sql) run on DuckDB up to the estimators' values: cmp_global_logged (run, baseline,
    metric, resample, side, stat), runs numbered 1 (A) and 2 (B)."""
    con = duckdb.connect()
    for name, table in (("recs", recs), ("logs", logs), ("reward_model", model)):
        con.register(f"{name}_frame", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    sql = recsql.to_sql("recs", None, [m for m, _, _ in metrics], run_cols="model", logs="logs",
                        reward_model="reward_model", compare={"baseline": "A", "resamples": resamples, "seed": seed},
                        **SLATE_COLUMNS)
    tree = sqlglot.parse_one(sql, read="duckdb")
    final = sqlglot.parse_one("SELECT run, baseline, metric, resample, side, stat FROM cmp_global_logged")
    final.set("with_", tree.args["with_"])
    return con.execute(render(final, "duckdb")).df()


def _same(mine, want, tolerance=1e-9):
    return (mine is None) == (want is None) and (want is None or abs(mine - want) <= tolerance * max(1, abs(want)))


@settings(max_examples=10, deadline=None)
@given(inputs(), st.integers(0, 300))
def test_each_resampled_estimate_is_the_estimator_over_the_drawn_contexts_and_swapped_lists(data, seed):
    """Every statistic compare computes (each run's estimate under each resample's context weights, each pair's
    two randomized sides) equals the reference's."""
    recs, logs, model = data
    assert_resampled_as_the_reference(recs, logs, model, 8, seed, METRICS)


def assert_resampled_as_the_reference(recs, logs, model, resamples, seed, metrics) -> None:
    """Each run's estimate of ``metrics`` under each resample's context weights, and each pair's two randomized
    sides, in compare's statement equal the reference's; some are not None."""
    got = statistics(recs, logs, model, resamples, seed, metrics)
    ref = Reference(recs, logs, model)
    w, s = weights_and_signs(ref.n, resamples, seed)
    ones = np.ones(ref.n, dtype=int)
    stats = {(int(r.run), int(r.baseline), int(r.metric), int(r.resample), int(r.side)): r.stat
             for r in got.itertuples() if not pd.isna(r.stat)}
    checked = 0
    for m, (_, name, options) in enumerate(metrics):
        for run_index, run in ((1, "A"), (2, "B")):
            for b in range(resamples + 1):
                want = ref.run(name, options, run, ones if b == 0 else w[b - 1])
                mine = stats.get((run_index, 0, m, b, 3))
                assert _same(mine, want), (name, options, run, b, mine, want)
                checked += want is not None
        for b in range(1, resamples + 1):
            for side, want in zip((1, 2), ref.sides(name, options, s[b - 1])):
                mine = stats.get((2, 1, m, b, side))
                assert _same(mine, want), (name, options, b, side, mine, want)
    assert checked > 0


POSITIONS = [(f"{name}(target=positions)", name, {"target": "positions"})
             for name in ("ips", "snips", "dr", "ess", "slate_iips", "slate_sniips")]


@settings(max_examples=8, deadline=None)
@given(inputs(), st.integers(0, 300))
def test_a_target_policy_per_position_is_resampled_as_the_reference(data, seed):
    """target=positions: each run's lists made a stochastic ranking (as listed with probability 0.75, reversed
    with 0.25, as (item, position, probability) rows); every resampled estimate and randomized side equals the
    reference's on the reweighted logs."""
    recs, logs, model = data
    ranked = recs.sort_values(["model", "user_id", "score", "item_id"], ascending=[True, True, False, True])
    rows = [(run, user, item, k, weight) for (run, user), items in ranked.groupby(["model", "user_id"])["item_id"]
            for weight, order in ((0.75, list(items)), (0.25, list(items)[::-1]))
            for k, item in enumerate(order, start=1)]
    policy = pd.DataFrame(rows, columns=["model", "user_id", "item_id", "position", "score"]) \
        .groupby(["model", "user_id", "item_id", "position"], as_index=False)["score"].sum()
    assert_resampled_as_the_reference(policy, logs, model, 6, seed, POSITIONS)


@settings(max_examples=5, deadline=None)
@given(inputs(), st.integers(0, 300))
def test_intervals_and_randomization_counts_are_the_references(data, seed):
    """compare's observed estimates (evaluate's), bootstrap intervals (numpy.quantile of the reference's
    statistics), the difference's interval and the randomization p ((1 + extreme) / (B + 1))."""
    recs, logs, model = data
    resamples = 20
    spelled = [m for m, _, _ in METRICS]
    result = recsql.compare(recs, None, spelled, run_cols="model", baseline="A", logs=logs, reward_model=model,
                            resamples=resamples, seed=seed, ci=0.9, **SLATE_COLUMNS)
    evaluated = recsql.evaluate(recs, None, spelled, run_cols="model", logs=logs, reward_model=model,
                                **SLATE_COLUMNS).summary
    ref = Reference(recs, logs, model)
    w, s = weights_and_signs(ref.n, resamples, seed)
    for metric, name, options in METRICS:
        for run in ("A", "B"):
            got = result.runs[(result.runs["run"] == run) & (result.runs["metric"] == metric)]["mean"].iloc[0]
            want = evaluated.loc[evaluated["model"] == run, metric].iloc[0]
            assert (pd.isna(got) and pd.isna(want)) or abs(got - want) <= 1e-9 * max(1, abs(want)), (metric, run)
        same_runs_and_pair(result, ref, metric, (name, options), w, s, {"A": ref.contexts, "B": ref.contexts},
                           ref.contexts, tolerance=lambda b: 1e-9 * max(1, abs(b)))


def test_the_interval_of_ips_covers_the_true_value_at_about_its_nominal_rate():
    """Synthetic logs of 100 contexts: the logging policy shows one of 4 items uniformly (propensity 1/4), item a
    earns a reward with probability q_a; run A always shows item 0, run B item 2, so their true values are q_0
    and q_2. Over 40 independent logs, compare's 90% percentile intervals (100 resamples) of A's IPS and of
    B − A cover the true value about as often as the method does: a numpy Monte Carlo of the same Poisson
    bootstrap (3,000 logs, independent of recsql) covers at 0.86 and 0.87 here (a percentile interval of a mean
    of 100 skewed terms undercovers a little), so about 35 of 40 (binomial sd 2.1). An unpaired difference
    (intervals too wide) or weights missing from a denominator would leave that band. Four seeds in turn:
    compare composes its statement once per seed (the seed is part of its key)."""
    rng = np.random.default_rng(7)
    n, q, replicates = 100, np.array([0.3, 0.1, 0.5, 0.2]), 40
    recs = pd.concat([pd.DataFrame({"model": run, "user_id": range(n), "item_id": item, "score": 1.0})
                      for run, item in (("A", 0), ("B", 2))])
    run_covered = pair_covered = 0
    for replicate in range(replicates):
        shown = rng.integers(0, 4, n)
        logs = pd.DataFrame({"user_id": range(n), "item_id": shown, "position": 1, "propensity": 0.25,
                             "reward": (rng.random(n) < q[shown]).astype(float)})
        result = recsql.compare(recs, None, ["ips"], logs=logs, run_cols="model", baseline="A", resamples=100,
                                seed=replicate % 4, ci=0.9)
        run = result.runs[result.runs["run"] == "A"].iloc[0]
        pair = result.tests.iloc[0]
        run_covered += run["ci_low"] <= q[0] <= run["ci_high"]
        pair_covered += pair["ci_low"] <= q[2] - q[0] <= pair["ci_high"]
    assert 29 <= run_covered <= 39 and 29 <= pair_covered <= 39, (run_covered, pair_covered)


SLATES = [(f"{name}(target=slates)", name, {"target": "slates"})
          for name in ("slate_ips", "slate_snips", "slate_rips", "slate_snrips")] + [
    (f"{name}(target=slates,weights={kind})", name, {"target": "slates", "weights": kind})
    for name in ("ess", "max_weight") for kind in ("slate", "cascade")]


@settings(max_examples=8, deadline=None)
@given(inputs(), st.integers(0, 300))
def test_a_target_of_whole_slates_is_resampled_as_the_reference(data, seed):
    """target=slates: per run, the target's probability of each logged slate's prefixes (products of factors down
    the slate, a run's own), one recs row per logged row; every resampled estimate and randomized side equals the
    reference's on the reweighted logs, each copy of a context a slate with its own recs rows."""
    _, logs, model = data
    rows = []
    for r, run in enumerate(("A", "B")):
        for user, slate in logs.sort_values("position").groupby("user_id"):
            prefix = 1.0
            for row in slate.itertuples():
                prefix *= (0.25, 0.5, 1.0)[(row.item_id + row.position + r + user) % 3]
                rows.append((run, user, row.item_id, row.position, prefix))
    policy = pd.DataFrame(rows, columns=["model", "user_id", "item_id", "position", "score"])
    assert_resampled_as_the_reference(policy, logs, model, 6, seed, SLATES)
