"""recsql.compare of a sampled run's global metrics (``sample_col``; docs/guide/compare.md, "Sampled runs"): per
draw, each sample's value over its users' weighted lists, as for an unsampled run, then the mean over the run's
samples (recsql/comparison_samples.py), the statistic evaluate gives on the drawn users.

Every expected value comes from evaluate (the observed values) or from the plain-Python references, averaged over
the samples by hand: tests/support/reference_beyond.py's weighted_global (each sample's users weighted by copies)
for the metrics recomputed over weighted lists, tests/test_compare.py's global_value (each sample's users weighted
w_u, pairs w_u·w_v) for those counted from item exposure (coverage, gini, personalization); with weights and signs
drawn by recsql.resampling's Python twin of the SQL mixer (tests/test_compare_weighted.py's weights_and_signs)."""
from __future__ import annotations

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
from support.engines import ENGINES, start
from support.paired import close
from support.reference_beyond import weighted_global
from test_compare import global_value
from test_compare_weighted import METRICS, records, same_runs_and_pair, same_statistics, spelled, weights_and_signs

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning", "ignore::RuntimeWarning")
RUNS = ("A", "B")
COUNTED = [("coverage", {}), ("gini", {}), ("personalization", {})]  # counted from item exposure


@st.composite
def sampled_inputs(draw):
    """Two runs' sampled lists (2 or 3 samples, numbered 1..) over items 0..7 for 2..6 users, a user's list missing
    from some samples (user 0 always in sample 1 of each run), truth with grades 0..2, interactions of those users
    and two others over items 0..6, the items' categories (one item without) and head flags."""
    n, samples = draw(st.integers(2, 6)), draw(st.integers(2, 3))
    recs = []
    for model in RUNS:
        for sample in range(1, samples + 1):
            for u in range(n):
                if (u, sample) != (0, 1) and draw(st.integers(0, 3)) == 0:
                    continue
                items = draw(st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True))
                recs += [(model, sample, u, i, float(len(items) - r)) for r, i in enumerate(items)]
    truth = [(u, i, float(g)) for u in range(n) if draw(st.booleans())
             for i, g in draw(st.dictionaries(st.integers(0, 7), st.integers(0, 2), min_size=1, max_size=4)).items()]
    seen = draw(st.lists(st.tuples(st.integers(0, n + 1), st.integers(0, 6)), min_size=1, max_size=20, unique=True))
    categories = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=8, max_size=8))
    categories[draw(st.integers(0, 7))] = None
    return (pd.DataFrame(recs, columns=["model", "sample", "user_id", "item_id", "score"]),
            pd.DataFrame(truth or [(0, 0, 1.0)], columns=["user_id", "item_id", "relevance"]),
            pd.DataFrame(seen, columns=["user_id", "item_id"]),
            pd.DataFrame({"item_id": range(8), "category": categories,
                          "head": draw(st.lists(st.booleans(), min_size=8, max_size=8))}))


class SampledReference:
    """Each run's lists by sample and user index; a metric's value over weighted lists: the mean over the samples
    of the reference's value on each sample's weighted lists (a sample with no list of positive weight, or whose
    value is undefined, left out; None when none is left)."""

    def __init__(self, recs, truth, interactions, items):
        users = sorted(set(recs["user_id"]))  # the users compared: those with a list in a sample (index 1..n)
        self.index = {u: i for i, u in enumerate(users)}
        self.n = len(users)
        self.samples = sorted(set(recs["sample"]))
        self.lists = {(run, j): {self.index[u]: records(g.drop(columns=["model", "sample"]))
                                 for u, g in recs[(recs["model"] == run) & (recs["sample"] == j)].groupby("user_id")}
                      for run in RUNS for j in self.samples}
        self.given = dict(truth=records(truth), items=records(items), interactions=records(interactions))

    def value(self, name, options, k, lists):
        """The metric on one sample's [(w, the user's recs rows)]."""
        return weighted_global(name, k, options, lists, **self.given)

    def mean(self, name, options, k, per_sample):
        """The mean over the samples of the metric on ``per_sample[j]``: [(w, the user's list)] of sample j."""
        values = [self.value(name, options, k, lists) for lists in per_sample if any(w > 0 for w, _ in lists)]
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else None

    def run(self, name, options, k, run, weights):
        return self.mean(name, options, k, [[(weights[i], rows) for i, rows in self.lists[run, j].items()]
                                            for j in self.samples])

    def sides(self, name, options, k, signs):
        """The two randomized sides of (B, A): in each sample j, side 1 holds B's sample-j list of each user whose
        sign is +1 and A's sample-j list of the others, side 2 the rest; each the mean over the samples."""
        def side(plus, minus):
            return self.mean(name, options, k, [[(1, self.lists[plus if signs[i] == 1 else minus, j][i])
                                                 for i in range(self.n)
                                                 if i in self.lists[plus if signs[i] == 1 else minus, j]]
                                                for j in self.samples])
        return side("B", "A"), side("A", "B")


class CountedReference(SampledReference):
    """The same means over the samples of coverage, gini and personalization, each sample's value from the metric's
    plain definition over that sample's weighted top k lists (tests/test_compare.py's global_value: a user of
    weight w_u counts w_u times in each item's count, pairs of distinct users weigh w_u·w_v, the sample's users
    those with a list in it); the catalog is the items input."""

    def value(self, name, options, k, lists):
        def top(rows):
            return [r["item_id"] for r in sorted(rows, key=lambda r: (-r["score"], r["item_id"]))][:k]
        catalog = [r["item_id"] for r in self.given["items"]]
        return global_value(name, [(w, top(rows)) for w, rows in lists], catalog, k)


GIVEN = dict(run_cols="model", sample_col="sample", head_col="head")


def statistics(recs, truth, interactions, items, metrics, resamples, seed,
               relation="cmp_global_weighted") -> pd.DataFrame:
    """compare's statement (to_sql) run on DuckDB up to the global metrics' values of ``relation``
    (cmp_global_weighted: those recomputed over weighted lists; cmp_global_counted_means: those counted from item
    exposure, averaged over the samples), rows (run, baseline, metric, resample, side, stat), runs numbered 1 (A)
    and 2 (B)."""
    con = duckdb.connect()
    for name, table in (("recs", recs), ("truth", truth), ("interactions", interactions), ("items", items)):
        con.register(f"{name}_frame", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    sql = recsql.to_sql(metrics=metrics, items="items", interactions="interactions", **GIVEN,
                        compare={"baseline": "A", "resamples": resamples, "seed": seed})
    tree = sqlglot.parse_one(sql, read="duckdb")
    final = sqlglot.parse_one(f"SELECT run, baseline, metric, resample, side, stat FROM {relation}")
    final.set("with_", tree.args["with_"])
    return con.execute(render(final, "duckdb")).df()


@settings(max_examples=8, deadline=None)
@given(sampled_inputs(), st.integers(1, 3), st.integers(0, 300))
def test_each_resampled_statistic_is_the_mean_over_the_samples_of_the_metric_on_the_drawn_users(data, k, seed):
    """Every statistic compare computes of a sampled run (each run's value under each resample's weights, each
    pair's two randomized sides) is the reference's mean over the samples, to 1e-12."""
    recs, truth, interactions, items = data
    resamples = 8
    metrics = [spelled(name, options, k) for name, options in METRICS]
    got = statistics(recs, truth, interactions, items, metrics, resamples, seed)
    ref = SampledReference(recs, truth, interactions, items)
    checked = same_statistics(got, ref, k, resamples, seed)
    assert checked > 0


@settings(max_examples=4, deadline=None)
@given(sampled_inputs(), st.integers(1, 3), st.integers(0, 300))
def test_intervals_and_randomization_counts_are_the_references(data, k, seed):
    """compare's bootstrap intervals (numpy.quantile of the reference's means over the samples on the drawn users)
    and randomization p ((1 + extreme) / (B + 1), from the reference's swapped sides) of a sampled run."""
    recs, truth, interactions, items = data
    resamples = 20
    metrics = [spelled(name, options, k) for name, options in METRICS]
    result = recsql.compare(recs, truth, metrics, baseline="A", items=items, interactions=interactions,
                            resamples=resamples, seed=seed, ci=0.9, **GIVEN)
    ref = SampledReference(recs, truth, interactions, items)
    w, s = weights_and_signs(ref.n, resamples, seed)
    users = {run: len(set(recs[recs["model"] == run]["user_id"])) for run in RUNS}  # a list in any sample
    for metric, (name, options) in zip(metrics, METRICS):
        same_runs_and_pair(result, ref, metric, (name, options, k), w, s, users, ref.n)


@settings(max_examples=8, deadline=None)
@given(sampled_inputs(), st.integers(1, 3), st.integers(0, 300))
def test_each_counted_statistic_is_the_mean_over_the_samples_of_the_metric_on_the_drawn_users(data, k, seed):
    """Coverage, gini and personalization of a sampled run: every statistic compare computes (each run's value under
    each resample's weights, each pair's two randomized sides) is the reference's mean over the samples of each
    sample's value, to 1e-12."""
    recs, truth, interactions, items = data
    resamples = 8
    metrics = [spelled(name, options, k) for name, options in COUNTED]
    got = statistics(recs, truth, interactions, items, metrics, resamples, seed, relation="cmp_global_counted_means")
    ref = CountedReference(recs, truth, interactions, items)
    assert same_statistics(got, ref, k, resamples, seed, metrics=COUNTED) > 0


@settings(max_examples=4, deadline=None)
@given(sampled_inputs(), st.integers(1, 3), st.integers(0, 300))
def test_counted_intervals_and_randomization_counts_are_the_references(data, k, seed):
    """Coverage, gini and personalization of a sampled run, beside a weighted metric and a per-user one: compare's
    intervals, randomization p and n are the reference's (the run's users with a list in any sample)."""
    recs, truth, interactions, items = data
    resamples = 20
    metrics = [spelled(name, options, k) for name, options in COUNTED]
    result = recsql.compare(recs, truth, [*metrics, f"exposure_gini@{k}", f"ndcg@{k}"], baseline="A", items=items,
                            interactions=interactions, resamples=resamples, seed=seed, ci=0.9, **GIVEN)
    ref = CountedReference(recs, truth, interactions, items)
    w, s = weights_and_signs(ref.n, resamples, seed)
    users = {run: len(set(recs[recs["model"] == run]["user_id"])) for run in RUNS}  # a list in any sample
    for metric, (name, options) in zip(metrics, COUNTED):
        same_runs_and_pair(result, ref, metric, (name, options, k), w, s, users, ref.n)


def fixed_case(text_ids: bool = False):
    """Two runs of three samples over 8 items for 8 users; user u has no list in sample s of run A when
    (u + s) % 4 == 3, in run B when (u + 2s) % 5 == 4; truth, interactions of the users and one more, the items'
    categories and head flags."""
    rng = np.random.default_rng(5)
    user = (lambda u: f"u{u:02d}") if text_ids else (lambda u: u)
    recs = pd.DataFrame([(m, s, user(u), int(i), float(4 - r)) for m in RUNS for s in (1, 2, 3) for u in range(8)
                         if (u + s) % 4 != 3 if m == "A" or (u + 2 * s) % 5 != 4
                         for r, i in enumerate(rng.choice(8, 3 + (u < 3), replace=False))],
                        columns=["model", "sample", "user_id", "item_id", "score"])
    truth = pd.DataFrame([(user(u), int(i), float(rng.integers(1, 3))) for u in range(8)
                          for i in rng.choice(8, 2, replace=False)], columns=["user_id", "item_id", "relevance"])
    interactions = pd.DataFrame([(user(u), i) for u in range(9) for i in range(8) if (u * 3 + i * 5) % 7 < 3],
                                columns=["user_id", "item_id"])
    items = pd.DataFrame({"item_id": range(8), "category": ["x", "y", "x", "z", "y", None, "z", "y"],
                          "head": [True, False, True, False, False, True, False, False]})
    if text_ids:
        recs, truth, interactions = (f.astype({"user_id": "string"}) for f in (recs, truth, interactions))
        recs = recs.astype({"model": "string"})
    return recs, truth, interactions, items


def test_the_observed_value_is_evaluates_mean_over_the_samples():
    """compare's observed value of every global metric of a sampled run (weighted and counted) (two runs, three samples, users
    missing from some samples) is evaluate's, and its n_users the run's users with a list in any sample."""
    recs, truth, interactions, items = fixed_case()
    metrics = [spelled(name, options, 3) for name, options in [*METRICS, *COUNTED]]
    given = dict(items=items, interactions=interactions, **GIVEN)
    result = recsql.compare(recs, truth, [*metrics, "ndcg@3"], baseline="A", resamples=10, **given)
    summary = recsql.evaluate(recs, truth, [*metrics, "ndcg@3"], **given).summary.set_index("model")
    defined = 0
    for row in result.runs.itertuples():
        want = summary.loc[row.run, row.metric]
        assert (pd.isna(row.mean) and pd.isna(want)) or close(row.mean, want, tol=1e-12), (row.run, row.metric)
        defined += not pd.isna(want)
        assert row.n_users == recs[recs["model"] == row.run]["user_id"].nunique()
    assert defined >= 2 * len(metrics)
    for row in result.tests.itertuples():
        want = summary.loc["B", row.metric] - summary.loc["A", row.metric]
        assert close(row.mean_diff, want, tol=1e-12), row.metric


@pytest.mark.parametrize("metric", ["exposure_gini@3", "coverage@3", "gini@3", "personalization@3"])
def test_the_observed_value_is_not_that_of_the_samples_pooled(metric):
    """The mean over the samples is not the metric over every sample's lists at once (one run without the sample
    column): the samples are averaged, not pooled."""
    recs, truth, interactions, items = fixed_case()
    given = dict(items=items, interactions=interactions, run_cols="model", head_col="head")
    sampled = recsql.compare(recs, truth, [metric], baseline="A", resamples=5, sample_col="sample", **given).runs
    pooled = recsql.compare(recs.assign(user_id=recs["user_id"] * 10 + recs["sample"]), truth, [metric],
                            baseline="A", resamples=5, **given).runs
    assert not close(sampled["mean"].iloc[0], pooled["mean"].iloc[0])


def test_within_segments_a_counted_metric_is_evaluates_over_the_segments_users():
    """Coverage, gini and personalization of a sampled run within segments: each segment's observed value is
    evaluate's mean over the samples on that segment's users alone, and its n the segment's users with a list."""
    recs, truth, interactions, items = fixed_case()
    segments = pd.DataFrame({"user_id": range(8), "cohort": [u % 2 for u in range(8)]})
    metrics = ["coverage@3", "gini@3", "personalization@3"]
    runs = recsql.compare(recs, truth, metrics, baseline="A", items=items, segments=segments, resamples=5,
                          run_cols="model", sample_col="sample").runs
    assert len(runs) == 2 * 2 * len(metrics)
    for row in runs.itertuples():
        part = recs[recs["user_id"] % 2 == row.cohort]
        summary = recsql.evaluate(part, truth, metrics, items=items, run_cols="model",
                                  sample_col="sample").summary.set_index("model")
        assert close(row.mean, summary.loc[row.run, row.metric], tol=1e-12), (row.cohort, row.run, row.metric)
        assert row.n_users == part[part["model"] == row.run]["user_id"].nunique()


@pytest.mark.parametrize("name", ENGINES)
def test_every_engine_gives_the_same_numbers(name):
    """A sampled run's weighted and counted global metrics (text ids; two runs, three samples): each engine's numbers are DuckDB's
    in memory, themselves the reference's (the tests above). Every item has a category, and the head is split on
    interactions (no column of flags): what every engine's loader stores. Only global metrics, no per-user one."""
    recs, truth, interactions, items = fixed_case(text_ids=True)
    items = items.drop(columns="head").assign(category=["x", "y", "x", "z", "y", "x", "z", "y"])
    metrics = ["exposure_gini@3", "lt_coverage(split=interactions)@3", "pop_rsp(split=interactions)@3", "coverage@3",
               "gini@3", "personalization@3"]
    options = dict(resamples=12, seed=4, tests=("t", "randomization"), run_cols="model", sample_col="sample")
    want = recsql.compare(recs, truth, metrics, items=items, interactions=interactions, **options)
    assert want.runs["ci_low"].notna().all() and want.tests["p_randomization"].notna().all()
    with ExitStack() as stack:
        engine = start(name, stack)
        got = recsql.compare(engine.load(recs), engine.load(truth), metrics, items=engine.load(items),
                             interactions=engine.load(interactions), con=engine.con, **options)
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
        for column in mine.columns:
            for a, b in zip(mine[column], theirs[column]):
                assert a == b if isinstance(b, str) else close(a, b), (name, column, a, b)
