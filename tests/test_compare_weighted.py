"""recsql.compare of the global metrics it recomputes over weighted lists (docs/guide/compare.md, "Global
metrics"): exposure_disparity, exposure_gini, exposure_entropy, lt_coverage, pop_rsp, pop_reo.

Every expected value comes from the plain-Python reference (tests/support/reference_beyond.py's metrics, on
users weighted by copies: weighted_global) with weights and signs drawn by recsql.resampling's Python twin
of the SQL mixer (its equality to the README's formula is tested in tests/test_compare.py)."""
from __future__ import annotations

import math
from contextlib import ExitStack

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

import recsql
from recsql.dialects import render
from recsql.resampling import draws, poisson_thresholds
from support.engines import ENGINES, start
from support.paired import close
from support.reference_beyond import weighted_global

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning", "ignore::RuntimeWarning")

# (name, options): every weighted global metric, some under other options than their defaults
METRICS = [("exposure_disparity", {}), ("exposure_disparity", {"target": "merit", "combine": "variance"}),
           ("exposure_gini", {}), ("exposure_gini", {"over": "groups", "weight": "log"}),
           ("exposure_entropy", {"weight": "uniform", "base": 2}),
           ("lt_coverage", {"head": 0.5, "split": "interactions"}), ("pop_rsp", {"split": "interactions"}),
           ("pop_reo", {"head": 0.6, "split": "interactions"}),
           # the head from the items' flags (head_col, given to every evaluation here)
           ("lt_coverage", {"split": "items"}), ("pop_rsp", {"split": "items"}), ("pop_reo", {"split": "items"})]


def spelled(name: str, options: dict, k: int) -> str:
    inner = ",".join(f"{key}={value}" for key, value in options.items())
    return f"{name}({inner})@{k}" if inner else f"{name}@{k}"


def weights_and_signs(n: int, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """w[b − 1, i − 1] and s[b − 1, i − 1] of resample b and user index i, from recsql.resampling.draws."""
    u = draws(seed, "weights", resamples, n)
    w = np.searchsorted(np.array(poisson_thresholds()), u, side="right")
    s = 1 - 2 * (draws(seed, "flips", resamples, n) % 2)
    return w, s


@st.composite
def inputs(draw, per_run=False):
    """Two runs' lists over items 0..7 for 2..7 users (a user may lack one run's list), truth with grades 0..2
    (``per_run``: each run its own truth, drawn apart, with the run column), interactions of those users and two
    others over items 0..6, the items' categories (one item without) and head flags (every item flagged;
    head_col="head")."""
    n = draw(st.integers(2, 7))
    recs = []
    for model in ("A", "B"):
        for u in range(n):
            if u > 0 and draw(st.integers(0, 4)) == 0:
                continue
            items = draw(st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True))
            recs += [(model, u, i, float(len(items) - r)) for r, i in enumerate(items)]
    truth = [(*model, u, i, float(g)) for model in ((("A",), ("B",)) if per_run else ((),))
             for u in range(n) if draw(st.booleans())
             for i, g in draw(st.dictionaries(st.integers(0, 7), st.integers(0, 2), min_size=1, max_size=4)).items()]
    truth_columns = ["model"] * per_run + ["user_id", "item_id", "relevance"]
    seen = draw(st.lists(st.tuples(st.integers(0, n + 1), st.integers(0, 6)), min_size=1, max_size=20, unique=True))
    categories = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=8, max_size=8))
    categories[draw(st.integers(0, 7))] = None
    return (pd.DataFrame(recs, columns=["model", "user_id", "item_id", "score"]),
            pd.DataFrame(truth or [(*("A",) * per_run, 0, 0, 1.0)], columns=truth_columns),
            pd.DataFrame(seen, columns=["user_id", "item_id"]),
            pd.DataFrame({"item_id": range(8), "category": categories,
                          "head": draw(st.lists(st.booleans(), min_size=8, max_size=8))}))


def records(frame: pd.DataFrame) -> list[dict]:
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]


class Reference:
    """The runs' lists by user index, and each metric's value over weighted lists from the reference."""

    def __init__(self, recs, truth, interactions, items):
        users = sorted(set(recs["user_id"]))  # the users compared: those with a list (dense index 1..n)
        self.index = {u: i for i, u in enumerate(users)}
        self.lists = {run: {self.index[u]: records(g.drop(columns="model")) for u, g in recs[recs["model"] == run]
                            .groupby("user_id")} for run in ("A", "B")}
        self.n = len(users)
        # truth per run (a run column): each user's truth rows in each run, given with each of the run's lists
        self.truths = None if "model" not in truth.columns else \
            {run: {self.index.get(u): records(g.drop(columns="model")) for u, g in truth[truth["model"] == run]
                   .groupby("user_id")} for run in ("A", "B")}
        self.given = dict(truth=records(truth.drop(columns="model", errors="ignore")), items=records(items),
                          interactions=records(interactions))

    def value(self, name, options, k, lists):
        return weighted_global(name, k, options, lists, **self.given)

    def listed(self, run, i, w):
        """(w, user i's list in run) with, given truth per run, the user's truth in that run: judged by it."""
        return (w, self.lists[run][i]) if self.truths is None else (w, self.lists[run][i], self.truths[run].get(i, []))

    def run(self, name, options, k, run, weights, users=None):
        """The metric over the run's lists weighted by ``weights``, of ``users`` only (user indices; None: all)."""
        return self.value(name, options, k, [self.listed(run, i, weights[i]) for i in self.lists[run]
                                             if users is None or i in users])

    def sides(self, name, options, k, signs, users=None):
        """The two randomized sides of (B, A): side 1 B's list where the sign is +1, A's where −1 (``users`` only);
        with truth per run each list with its own run's truth (a user's list and truth swapped together)."""
        kept = [i for i in range(self.n) if users is None or i in users]
        one = [self.listed("B" if signs[i] == 1 else "A", i, 1) for i in kept
               if i in self.lists["B" if signs[i] == 1 else "A"]]
        two = [self.listed("A" if signs[i] == 1 else "B", i, 1) for i in kept
               if i in self.lists["A" if signs[i] == 1 else "B"]]
        return self.value(name, options, k, one), self.value(name, options, k, two)


def statistics(recs, truth, interactions, items, metrics, resamples, seed, segments=None) -> pd.DataFrame:
    """compare's statement (to_sql) run on DuckDB up to the weighted global metrics' values: cmp_global_weighted
    (run, baseline, metric, resample, side, stat), runs numbered 1 (A) and 2 (B); with ``segments`` (user_id,
    cohort), compared within each cohort: metric = segment·M + the metric's position, segments numbered 1.. in
    cohort order."""
    con = duckdb.connect()
    tables = (("recs", recs), ("truth", truth), ("interactions", interactions), ("items", items),
              *((("cohorts", segments),) if segments is not None else ()))
    for name, table in tables:
        con.register(f"{name}_frame", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    within = {"segments": "cohorts", "segment_cols": ["cohort"]} if segments is not None else {}
    sql = recsql.to_sql(metrics=metrics, run_cols="model", items="items", interactions="interactions", head_col="head",
                        truth_has_run_cols="model" in truth.columns,
                        compare={"baseline": "A", "resamples": resamples, "seed": seed, **within})
    tree = sqlglot.parse_one(sql, read="duckdb")
    final = sqlglot.parse_one("SELECT run, baseline, metric, resample, side, stat FROM cmp_global_weighted")
    final.set("with_", tree.args["with_"])
    return con.execute(render(final, "duckdb")).df()


@settings(max_examples=10, deadline=None)
@given(inputs(), st.integers(1, 3), st.integers(0, 300))
def test_each_resampled_statistic_is_the_metric_over_the_drawn_weights_and_swapped_lists(data, k, seed):
    """Every statistic compare computes (each run's value under each resample's weights, each pair's two
    randomized sides) equals the reference's, to 1e-12."""
    recs, truth, interactions, items = data
    resamples = 12
    metrics = [spelled(name, options, k) for name, options in METRICS]
    got = statistics(recs, truth, interactions, items, metrics, resamples, seed)
    assert same_statistics(got, Reference(recs, truth, interactions, items), k, resamples, seed) > 0


def same_statistics(got: pd.DataFrame, ref: Reference, k: int, resamples: int, seed: int, metrics=METRICS) -> int:
    """Assert each statistic of ``got`` (statistics()'s rows, every metric of ``metrics``, (name, options) at metric
    ids 0..) is the reference's, to 1e-12; the number of defined values of the runs' resamples checked."""
    w, s = weights_and_signs(ref.n, resamples, seed)
    ones = np.ones(ref.n, dtype=int)
    stats = {(int(r.run), int(r.baseline), int(r.metric), int(r.resample), int(r.side)): r.stat
             for r in got.itertuples() if not pd.isna(r.stat)}
    checked = 0
    for m, (name, options) in enumerate(metrics):
        for run_index, run in ((1, "A"), (2, "B")):
            for b in range(resamples + 1):
                want = ref.run(name, options, k, run, ones if b == 0 else w[b - 1])
                mine = stats.get((run_index, 0, m, b, 3))
                assert (mine is None) == (want is None) and (want is None or abs(mine - want) <= 1e-12), \
                    (name, options, run, b, mine, want)
                checked += want is not None
        for b in range(1, resamples + 1):
            for side, want in zip((1, 2), ref.sides(name, options, k, s[b - 1])):
                mine = stats.get((2, 1, m, b, side))
                assert (mine is None) == (want is None) and (want is None or abs(mine - want) <= 1e-12), \
                    (name, options, b, side, mine, want)
    return checked


def same_runs_and_pair(result, ref, metric: str, spec: tuple, w, s, n_users: dict, n: int,
                       tolerance=lambda b: 1e-12) -> None:
    """compare's rows for ``metric`` (``spec``: the reference's name, options and k) at ci=0.9 are the reference's
    (``ref.run`` under each resample's weights ``w``, ``ref.sides`` under each draw's signs ``s``): each run's
    observed value, interval (numpy.quantile) and users (``n_users``), and B against A its users (``n``), mean
    difference, interval and randomization p ((1 + extreme) / (B + 1)); each number within ``tolerance(b)`` of the
    reference's b."""
    resamples, ones = len(w), np.ones(len(w[0]), dtype=int)

    def interval(values):
        values = [v for v in values if v is not None]
        return np.quantile(values, [0.05, 0.95]) if values else (math.nan, math.nan)

    def same(a, b):
        return (pd.isna(a) and (b is None or math.isnan(b))) or (b is not None and abs(a - b) <= tolerance(b))

    values = {}
    for run in ("A", "B"):
        row = result.runs[(result.runs["run"] == run) & (result.runs["metric"] == metric)].iloc[0]
        values[run] = [ref.run(*spec, run, w[b]) for b in range(resamples)]
        low, high = interval(values[run])
        assert same(row["mean"], ref.run(*spec, run, ones)), (metric, run)
        assert same(row["ci_low"], low) and same(row["ci_high"], high), (metric, run)
        assert row["n_users"] == n_users[run]
    row = result.tests[result.tests["metric"] == metric].iloc[0]
    assert row["n"] == n
    observed_b, observed_a = ref.run(*spec, "B", ones), ref.run(*spec, "A", ones)
    if observed_a is None or observed_b is None:
        assert pd.isna(row["mean_diff"]) and pd.isna(row["p_randomization"])
        return
    diffs = [None if a is None or z is None else a - z for a, z in zip(values["B"], values["A"])]
    low, high = interval(diffs)
    assert same(row["mean_diff"], observed_b - observed_a)
    assert same(row["ci_low"], low) and same(row["ci_high"], high), metric
    extreme = 0
    for b in range(resamples):
        one, two = ref.sides(*spec, s[b])
        if one is not None and two is not None:
            extreme += abs(one - two) >= abs(observed_b - observed_a) - 1e-9 * (abs(observed_b) + abs(observed_a))
    assert row["p_randomization"] == (1 + extreme) / (resamples + 1), metric


@settings(max_examples=6, deadline=None)
@given(inputs(), st.integers(1, 3), st.integers(0, 300))
def test_intervals_and_randomization_counts_are_the_references(data, k, seed):
    """compare's observed values, bootstrap intervals (numpy.quantile of the reference's statistics) and
    randomization p ((1 + extreme) / (B + 1), extreme counted from the reference's swapped sides)."""
    recs, truth, interactions, items = data
    resamples = 30
    metrics = [spelled(name, options, k) for name, options in METRICS]
    result = recsql.compare(recs, truth, metrics, run_cols="model", baseline="A", items=items, head_col="head",
                            interactions=interactions, resamples=resamples, seed=seed, ci=0.9)
    ref = Reference(recs, truth, interactions, items)
    w, s = weights_and_signs(ref.n, resamples, seed)
    for metric, (name, options) in zip(metrics, METRICS):
        same_runs_and_pair(result, ref, metric, (name, options, k), w, s, {run: len(ref.lists[run]) for run in "AB"},
                           len(set(ref.lists["A"]) | set(ref.lists["B"])))


@settings(max_examples=2, deadline=None)
@given(inputs(), st.integers(1, 3), st.integers(0, 300), st.data())
def test_within_segments_each_statistic_is_the_metric_over_the_segments_users(data, k, seed, more):
    """Within segments (two cohorts), every statistic compare computes of a cohort (each run's value under each
    resample's weights, each pair's two randomized sides) is the reference's over that cohort's users only, the
    catalog-level inputs (the items, their categories and head flags, the popularity in interactions) as given."""
    recs, truth, interactions, items = data
    users = sorted(set(recs["user_id"]) | set(truth["user_id"]) | set(interactions["user_id"]))
    drawn = more.draw(st.lists(st.sampled_from(["x", "y"]), min_size=len(users), max_size=len(users)))
    segments = pd.DataFrame({"user_id": users, "cohort": drawn})
    resamples = 6
    metrics = [spelled(name, options, k) for name, options in METRICS]
    got = statistics(recs, truth, interactions, items, metrics, resamples, seed, segments)
    ref = Reference(recs, truth, interactions, items)
    w, s = weights_and_signs(ref.n, resamples, seed)
    ones = np.ones(ref.n, dtype=int)
    stats = {(int(r.run), int(r.baseline), int(r.metric), int(r.resample), int(r.side)): r.stat
             for r in got.itertuples() if not pd.isna(r.stat)}
    cohort = dict(zip(segments["user_id"], segments["cohort"]))
    checked = 0
    for segment, name_of in enumerate(sorted(set(drawn)), start=1):
        members = {i for u, i in ref.index.items() if cohort[u] == name_of}
        for m, (name, options) in enumerate(METRICS):
            metric = segment * len(METRICS) + m
            for run_index, run in ((1, "A"), (2, "B")):
                for b in range(resamples + 1):
                    want = ref.run(name, options, k, run, ones if b == 0 else w[b - 1], members)
                    mine = stats.get((run_index, 0, metric, b, 3))
                    assert (mine is None) == (want is None) and (want is None or abs(mine - want) <= 1e-12), \
                        (name_of, name, options, run, b, mine, want)
                    checked += want is not None
            for b in range(1, resamples + 1):
                for side, want in zip((1, 2), ref.sides(name, options, k, s[b - 1], members)):
                    mine = stats.get((2, 1, metric, b, side))
                    assert (mine is None) == (want is None) and (want is None or abs(mine - want) <= 1e-12), \
                        (name_of, name, options, b, side, mine, want)
    assert checked > 0
    assert all(metric >= len(METRICS) for _, _, metric, _, _ in stats)  # no value outside a segment


def test_within_segments_the_observed_value_is_evaluates_within_the_segment():
    """compare(segments=)'s observed value of every weighted global metric in a segment is evaluate(segments=)'s
    for that segment, and its n_users the segment's users with a list in the run; a user without a segment is
    refused, as for the other metrics."""
    rng = np.random.default_rng(3)
    recs = pd.DataFrame([(model, u, int(i), float(s)) for model in ("A", "B") for u in range(10)
                         if (u + ord(model)) % 7 for s, i in enumerate(rng.choice(8, 3, replace=False))],
                        columns=["model", "user_id", "item_id", "score"])  # A lacks user 5's list, B user 4's
    truth = pd.DataFrame([(u, int(i), float(rng.integers(0, 3))) for u in range(10)
                          for i in rng.choice(8, 2, replace=False)], columns=["user_id", "item_id", "relevance"])
    interactions = pd.DataFrame([(u, i) for u in range(12) for i in range(7) if (u * 3 + i * 5) % 7 < 3],
                                columns=["user_id", "item_id"])
    items = pd.DataFrame({"item_id": range(8), "category": ["x", "y", "z", "x", "y", None, "z", "x"],
                          "head": [True, False, True, False, False, True, False, True]})
    segments = pd.DataFrame({"user_id": range(10), "cohort": ["new" if u % 3 == 0 else "old" for u in range(10)]})
    metrics = [spelled(name, options, 3) for name, options in METRICS]
    given = dict(run_cols="model", items=items, interactions=interactions, head_col="head", segments=segments)
    result = recsql.compare(recs, truth, metrics, baseline="A", resamples=10, **given)
    summary = recsql.evaluate(recs, truth, metrics, **given).summary.set_index(["model", "cohort"])
    assert len(result.runs) == 2 * 2 * len(metrics)
    defined = 0
    for row in result.runs.itertuples():
        want = summary.loc[(row.run, row.cohort), row.metric]
        assert (pd.isna(row.mean) and pd.isna(want)) or close(row.mean, want), (row.cohort, row.run, row.metric)
        defined += not pd.isna(want)
        members = set(segments[segments["cohort"] == row.cohort]["user_id"])
        assert row.n_users == len(set(recs[recs["model"] == row.run]["user_id"]) & members)
    assert defined >= len(metrics)
    # a user with a list but no segment: refused, as for every metric compared within segments
    with pytest.raises(recsql.RecsqlError, match="no row in segments"):
        recsql.compare(recs, truth, metrics, baseline="A", resamples=10, **{**given, "segments": segments.iloc[1:]})


def test_one_resample_worked_by_hand():
    """exposure_entropy(weight=uniform)@2, seed 32: resample 1 draws the weights w = (2, 0, 1) and the signs
    s = (−1, +1, −1) for users 1, 2, 3 (recsql.resampling.draws). Lists: A: u1 [1, 2], u2 [2, 3], u3 [1, 3];
    B: u1 [3, 4], u2 [4, 1], u3 [2, 4].
    - A under w: item 1 is listed by u1 (twice) and u3: attention 3; item 2 by u1: 2; item 3 by u3: 1 (u2 weighs 0).
      H = ln 6 − (3 ln 3 + 2 ln 2 + 1 ln 1) / 6 = 1.0114042647...
    - side 1 of (B, A): B's list for u2 (s = +1), A's for u1 and u3: [1, 2], [4, 1], [1, 3]: attention 3, 1, 1, 1;
      H = ln 6 − 3 ln 3 / 6 = 1.2424533248...
    - side 2: A's list for u2, B's for u1 and u3: [3, 4], [2, 3], [2, 4]: attention 2, 2, 2; H = ln 3."""
    w, s = weights_and_signs(3, 1, 32)
    assert w[0].tolist() == [2, 0, 1] and s[0].tolist() == [-1, 1, -1]
    lists = {"A": {1: [1, 2], 2: [2, 3], 3: [1, 3]}, "B": {1: [3, 4], 2: [4, 1], 3: [2, 4]}}
    recs = pd.DataFrame([(run, u, item, float(2 - r)) for run, by_user in lists.items() for u, top in by_user.items()
                         for r, item in enumerate(top)], columns=["model", "user_id", "item_id", "score"])
    truth = pd.DataFrame({"user_id": [1], "item_id": [1], "relevance": [1.0]})
    interactions = pd.DataFrame({"user_id": [1], "item_id": [1]})
    items = pd.DataFrame({"item_id": [1, 2, 3, 4], "category": ["x", "x", "y", "y"]})
    got = statistics(recs, truth, interactions, items, ["exposure_entropy(weight=uniform)@2"], 1, 32)
    stat = {(int(r.run), int(r.baseline), int(r.resample), int(r.side)): r.stat for r in got.itertuples()}
    assert abs(stat[(1, 0, 1, 3)] - (math.log(6) - (3 * math.log(3) + 2 * math.log(2)) / 6)) <= 1e-12
    assert abs(stat[(1, 0, 1, 3)] - 1.0114042647073518) <= 1e-12
    assert abs(stat[(2, 1, 1, 1)] - (math.log(6) - 3 * math.log(3) / 6)) <= 1e-12
    assert abs(stat[(2, 1, 1, 2)] - math.log(3)) <= 1e-12


@settings(max_examples=8, deadline=None)
@given(inputs(per_run=True), st.integers(1, 3), st.integers(0, 300))
def test_with_truth_per_run_each_list_is_judged_by_its_own_runs_truth(data, k, seed):
    """Truth per run (each run its own truth, drawn apart): every statistic (each run's value under each resample's
    weights; each pair's two randomized sides, where a user's list comes with the truth of the run it came from)
    is the reference's, to 1e-12; the observed values are evaluate's with truth per run."""
    recs, truth, interactions, items = data
    resamples = 8
    metrics = [spelled(name, options, k) for name, options in METRICS]
    got = statistics(recs, truth, interactions, items, metrics, resamples, seed)
    assert same_statistics(got, Reference(recs, truth, interactions, items), k, resamples, seed) > 0
    summary = recsql.evaluate(recs, truth, metrics, run_cols="model", items=items, interactions=interactions,
                              head_col="head").summary.set_index("model")
    observed = {(int(r.run), int(r.metric)): r.stat for r in got.itertuples()
                if r.baseline == 0 and r.resample == 0 and r.side == 3}
    for m, metric in enumerate(metrics):
        for run_index, run in ((1, "A"), (2, "B")):
            want, mine = summary.loc[run, metric], observed.get((run_index, m))
            assert (pd.isna(want) and (mine is None or pd.isna(mine))) or close(mine, want, tol=1e-12), (metric, run)




@pytest.mark.parametrize("name", ENGINES)
def test_every_engine_gives_the_same_numbers_with_truth_per_run(name):
    """Truth per run (two runs, each its own truth; text ids), the weighted global metrics that read truth: each
    engine's numbers are DuckDB's in memory, themselves the reference's (the test above); and they are not those
    of one run's truth shared."""
    rng = np.random.default_rng(11)
    runs, users = ("A", "B"), [f"u{u:02d}" for u in range(8)]
    recs = pd.DataFrame([(m, u, int(i), float(4 - r)) for m in runs for u in users
                         for r, i in enumerate(rng.choice(8, 3 + (u < "u03"), replace=False))],
                        columns=["model", "user_id", "item_id", "score"]).astype({"model": "string", "user_id": "string"})
    # each run's truth: its own lists' first two items (relevance 1 or 2) and one more drawn item, so that every
    # category has relevant listings (exposure_disparity's merit is NULL otherwise) and the runs' truths differ
    firsts = recs.sort_values("score", ascending=False).groupby(["model", "user_id"]).head(2)
    truth = pd.concat([
        firsts[["model", "user_id", "item_id"]].assign(relevance=rng.integers(1, 3, len(firsts)).astype(float)),
        pd.DataFrame([(m, u, int(rng.integers(0, 8)), 1.0) for m in runs for u in users],
                     columns=["model", "user_id", "item_id", "relevance"]),
    ]).drop_duplicates(["model", "user_id", "item_id"]).astype({"model": "string", "user_id": "string"})
    items = pd.DataFrame({"item_id": range(8), "category": ["x", "y", "x", "z", "y", "x", "z", "y"]})
    interactions = pd.DataFrame([(u, i) for u in [*users, "u99"] for i in range(8) if (int(u[1:]) * 3 + i * 5) % 7 < 3],
                                columns=["user_id", "item_id"]).astype({"user_id": "string"})
    # the metrics that read truth (the others' statement does not change with it: the engine tests above)
    metrics = ["exposure_disparity(target=merit,combine=variance)@3", "pop_rsp(split=interactions)@3",
               "pop_reo(split=interactions)@3"]
    options = dict(run_cols="model", resamples=20, seed=4, tests=("t", "randomization"))
    want = recsql.compare(recs, truth, metrics, items=items, interactions=interactions, **options)
    assert want.tests["p_randomization"].notna().sum() == want.tests["ci_low"].notna().sum() == len(metrics)
    assert want.runs["ci_low"].notna().all() and (want.runs["ci_low"] < want.runs["ci_high"]).all()
    shared = recsql.compare(recs, truth[truth["model"] == "A"].drop(columns="model"), metrics, items=items,
                            interactions=interactions, **options)
    assert not all(close(a, b) for a, b in zip(want.tests["p_randomization"], shared.tests["p_randomization"]))
    with ExitStack() as stack:
        engine = start(name, stack)
        got = recsql.compare(engine.load(recs), engine.load(truth), metrics, items=engine.load(items),
                             interactions=engine.load(interactions), con=engine.con, **options)
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
        for column in mine.columns:
            for a, b in zip(mine[column], theirs[column]):
                assert a == b if isinstance(b, str) else close(a, b), (name, column, a, b)


@pytest.mark.parametrize("name", ENGINES)
def test_every_engine_gives_one_row_per_run_when_every_metric_is_global(name):
    """Only global metrics (no per-user metric, so no per-user value to compare; text ids, three runs every pair):
    exactly one row per (run, metric) and per (run, baseline, metric), each run's mean evaluate's and each
    difference the difference of evaluate's, and each engine's numbers DuckDB's in memory. DataFusion once
    returned each run's row twice, the second one without its mean, from a relation of per-user values
    that was not empty (recsql/comparison_sql.py's cmp_values)."""
    rng = np.random.default_rng(3)
    runs, users = ("A", "B", "C"), [f"u{u:02d}" for u in range(7)]
    recs = pd.DataFrame([(m, u, int(i), float(4 - r)) for m in runs for u in users
                         for r, i in enumerate(rng.choice(8, 3, replace=False))],
                        columns=["model", "user_id", "item_id", "score"]).astype({"model": "string", "user_id": "string"})
    truth = pd.DataFrame([(u, int(i), 1.0) for u in users for i in rng.choice(8, 2, replace=False)],
                         columns=["user_id", "item_id", "relevance"]).astype({"user_id": "string"})
    items = pd.DataFrame({"item_id": range(8), "category": ["x", "y", "x", "z", "y", "x", "z", "y"]})
    interactions = pd.DataFrame([(u, i) for u in [*users, "u99"] for i in range(8) if (int(u[1:]) * 3 + i * 5) % 7 < 3],
                                columns=["user_id", "item_id"]).astype({"user_id": "string"})
    metrics = ["exposure_gini@3", "exposure_disparity@3", "exposure_entropy@3", "lt_coverage(split=interactions)@3",
               "pop_rsp(split=interactions)@3", "pop_reo(split=interactions)@3"]
    given_inputs = dict(items=items, interactions=interactions, run_cols="model")
    options = dict(resamples=12, seed=4, tests=("t", "randomization"), baseline=None)
    want = recsql.compare(recs, truth, metrics, **given_inputs, **options)
    summary = recsql.evaluate(recs, truth, metrics, **given_inputs).summary.set_index("model")
    assert sorted(zip(want.runs["run"], want.runs["metric"])) == sorted((r, m) for r in runs for m in metrics)
    for row in want.runs.itertuples():
        assert close(row.mean, summary.loc[row.run, row.metric], tol=1e-12), (row.run, row.metric)
    pairs = list(zip(want.tests["run"], want.tests["baseline"], want.tests["metric"]))
    assert len(pairs) == len(set(pairs)) == 3 * len(metrics)
    for row in want.tests.itertuples():
        difference = summary.loc[row.run, row.metric] - summary.loc[row.baseline, row.metric]
        assert close(row.mean_diff, difference, tol=1e-12), (row.run, row.baseline, row.metric)
    with ExitStack() as stack:
        engine = start(name, stack)
        got = recsql.compare(engine.load(recs), engine.load(truth), metrics, items=engine.load(items),
                             interactions=engine.load(interactions), run_cols="model", con=engine.con, **options)
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
        for column in mine.columns:
            for a, b in zip(mine[column], theirs[column]):
                assert a == b if isinstance(b, str) else close(a, b), (name, column, a, b)
