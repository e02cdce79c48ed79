"""Expected exposure (ee_d, ee_r, ee_l) and sampled runs (``sample_col``): a stochastic run gives each
user several sampled lists, numbered by a recs column.

- expeval's worked example (the reference implementation of Diaz, Mitra, Ekstrand, Biega & Carterette,
  CIKM 2020, github.com/diazf/expeval: ``exposure.expected``, ``exposure.target``, ``metrics``), computed
  by hand from its code: two samples of four items, rbp and gerr;
- random sampled runs (hypothesis) against the plain-Python reference (tests/support/reference_beyond.py,
  ``expected_exposure``), users missing from some samples included;
- a per-list metric of a sampled run is the mean over the run's samples of tests/support/reference.py's
  value on each sample;
- what a sampled run cannot be evaluated with yet is refused by name, on the library and the command line.
"""
from __future__ import annotations

import io
import math
import re

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import recsql
from recsql.errors import RecsqlError
from support.reference import reference
from support.reference_beyond import expected_exposure, reference_beyond

RELEVANT = pd.DataFrame({"user_id": [1, 1], "item_id": ["d1", "d2"], "relevance": [1, 1]})
# expeval's example: two samples, [d1, d3, d2, d4] and [d2, d1, d4, d3] (score = 4..1 down each list)
SAMPLES = pd.DataFrame({"user_id": [1] * 8, "sample": [1] * 4 + [2] * 4,
                        "item_id": ["d1", "d3", "d2", "d4", "d2", "d1", "d4", "d3"], "score": [4, 3, 2, 1] * 2})


@pytest.mark.parametrize("model, expected", [
    # rbp, patience 0.5: e = 1, .5, .25, .125; eps(d1) = (1 + .5)/2 = .75, d2 = (.25 + 1)/2 = .625,
    # d3 = (.5 + .125)/2 = .3125, d4 = (.125 + .25)/2 = .1875; target: one grade of 2 items, (1 - .25)/(2·.5) = .75
    ("rbp", (1.0859375, 1.03125, 0.1484375)),
    # gerr, patience = utility = 0.5: sample 1 d1 = 1, d3 = .25, d2 = .125, d4 = .0625 (one relevant above each but
    # d1, two above d4); sample 2 d2 = 1, d1 = .25, d4 = .0625, d3 = .03125: eps = .625, .5625, .140625, .046875;
    # target q = .25: (1 - .0625)/(2·.75) = .625 each
    ("gerr", (0.72900390625, 0.7421875, 0.02587890625)),
])
def test_expevals_worked_example(model, expected):
    metrics = [f"{name}(model={model})@4" for name in ("ee_d", "ee_r", "ee_l")]
    got = recsql.evaluate(SAMPLES, RELEVANT, metrics, sample_col="sample").summary.iloc[0]
    assert [got[m] for m in metrics] == pytest.approx(list(expected), abs=1e-15)


def test_a_run_without_samples_is_its_own_one_sample():
    one = SAMPLES[SAMPLES["sample"] == 1]
    got = recsql.evaluate(one.drop(columns="sample"), RELEVANT, ["ee_l@4"]).summary.iloc[0]["ee_l@4"]
    assert got == recsql.evaluate(one, RELEVANT, ["ee_l@4"], sample_col="sample").summary.iloc[0]["ee_l@4"]
    assert got == pytest.approx(expected_exposure([["d1", "d3", "d2", "d4"]], {"d1": 1, "d2": 1}, 4, "rbp", 0.5, 0.5)[2])


ITEMS = [f"i{n}" for n in range(7)]
# a random truth may hold no relevant item for a run's users: evaluate warns, the values are checked all the same
quiet = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")


@st.composite
def sampled_run(draw):
    """Two runs of 1-3 samples; each (run, sample) lists some of 4 users (a user may be missing from a
    sample); truth with grades 0-3 for some of the users."""
    rows = []
    for run in ("A", "B"):
        for sample in range(draw(st.integers(1, 3))):
            for user in draw(st.lists(st.integers(1, 4), unique=True, max_size=4)):
                items = draw(st.lists(st.sampled_from(ITEMS), unique=True, min_size=1, max_size=5))
                rows += [{"model": run, "sample": sample, "user_id": user, "item_id": item, "score": float(-p)}
                         for p, item in enumerate(items)]
    truth = [{"user_id": user, "item_id": item, "relevance": float(draw(st.integers(0, 3)))}
             for user in draw(st.lists(st.integers(1, 4), unique=True, min_size=1, max_size=4))
             for item in draw(st.lists(st.sampled_from(ITEMS), unique=True, min_size=1, max_size=4))]
    return rows, truth


def _per_sample(rows, run):
    """Each sample's recs rows of ``run`` (user, item, score), in sample order: the run's samples as runs of
    their own, for the references."""
    samples = sorted({r["sample"] for r in rows if r["model"] == run})
    return [[{"user_id": r["user_id"], "item_id": r["item_id"], "score": r["score"]} for r in rows
             if (r["model"], r["sample"]) == (run, s)] for s in samples]


def _lists(rows, run, sample, user):
    return [r["item_id"] for r in sorted((r for r in rows if (r["model"], r["sample"], r["user_id"]) == (run, sample, user)),
                                         key=lambda r: (-r["score"], r["item_id"]))]


@quiet
@settings(max_examples=60, deadline=None)
@given(sampled_run(), st.integers(1, 5), st.sampled_from([("rbp", 0.5, 0.5), ("gerr", 0.5, 0.5), ("rbp", 0.8, 0.5),
                                                          ("gerr", 0.75, 0.25)]))
def test_expected_exposure_of_random_sampled_runs_equals_the_reference(run, k, model):
    rows, truth = run
    if not rows:
        return
    name, patience, utility = model
    asked = [f"{m}(model={name},patience={patience},utility={utility})@{k}" for m in ("ee_d", "ee_r", "ee_l")]
    got = recsql.evaluate(pd.DataFrame(rows), pd.DataFrame(truth), asked, run_cols="model", sample_col="sample")
    per_user = got.per_user.set_index(["model", "user_id"])
    grades = {}
    for t in truth:
        grades.setdefault(t["user_id"], {})[t["item_id"]] = t["relevance"]
    users = [u for u, g in grades.items() if max(g.values()) >= 1]  # the population: users with a relevant item
    checked = 0
    for run_key in sorted({r["model"] for r in rows}):
        samples = sorted({r["sample"] for r in rows if r["model"] == run_key})
        for user in users:
            want = expected_exposure([_lists(rows, run_key, s, user) for s in samples], grades[user], k, name, patience,
                                     utility)
            values = per_user.loc[(run_key, user), asked].tolist()
            assert values == pytest.approx(list(want), rel=1e-12, abs=1e-12), (run_key, user, values, want)
            checked += 1
    assert len(per_user) == checked


@quiet
@settings(max_examples=40, deadline=None)
@given(sampled_run(), st.sampled_from(["ndcg@3", "recall@2", "map@4", "mrr"]))
def test_a_per_list_metric_of_a_sampled_run_is_its_mean_over_the_samples(run, metric):
    rows, truth = run
    if not rows:
        return
    got = recsql.evaluate(pd.DataFrame(rows), pd.DataFrame(truth), [metric], run_cols="model", sample_col="sample")
    per_user = got.per_user.set_index(["model", "user_id"])[metric]
    name, _, k = metric.partition("@")
    for run_key in sorted({r["model"] for r in rows}):
        values = [reference(recs, truth, name, int(k) if k else None) for recs in _per_sample(rows, run_key)]
        for user in values[0]:  # the population is truth's, the same in every sample
            want = sum(v[user] for v in values) / len(values)
            assert per_user[(run_key, user)] == pytest.approx(want, rel=1e-12, abs=1e-12)
        summary = got.summary.set_index("model").loc[run_key, metric]
        want_summary = sum(sum(v.values()) for v in values) / len(values) / len(values[0]) if values[0] else None
        if want_summary is None:
            assert pd.isna(summary)
        else:
            assert summary == pytest.approx(want_summary, rel=1e-12)


@quiet
@settings(max_examples=40, deadline=None)
@given(sampled_run(), st.sampled_from(["coverage@3", "gini@2", "personalization@3", "exposure_gini@3"]))
def test_a_global_metric_of_a_sampled_run_is_its_mean_over_the_samples(run, metric):
    rows, truth = run
    if not rows:
        return
    catalog = pd.DataFrame({"item_id": ITEMS})
    got = recsql.evaluate(pd.DataFrame(rows), pd.DataFrame(truth), [metric], run_cols="model", sample_col="sample",
                          catalog=catalog).summary.set_index("model")[metric]
    name, _, k = metric.partition("@")
    for run_key in sorted({r["model"] for r in rows}):
        values = [reference_beyond(name, int(k), {}, recs, truth, catalog=[{"item_id": i} for i in ITEMS])
                  for recs in _per_sample(rows, run_key)]
        defined = [v for v in values if v is not None]
        if len(defined) < len(values) and not defined:
            assert pd.isna(got[run_key])
        else:
            assert got[run_key] == pytest.approx(sum(defined) / len(defined), rel=1e-12, abs=1e-12)


def test_compare_gives_a_sampled_runs_global_metric_counted_from_item_exposure_as_evaluate():
    """compare of a sampled run's coverage, gini and personalization (counted from item exposure per sample:
    tests/test_compare_sampled.py) observes evaluate's mean over the samples."""
    asked = ["ndcg@3", "exposure_gini@3", "coverage@3", "gini@3", "personalization@3"]
    recs = pd.concat([SAMPLES.assign(model="A"), SAMPLES.assign(model="B", score=-SAMPLES["score"]),
                      SAMPLES.assign(model="A", user_id=2), SAMPLES.assign(model="B", user_id=2)])
    runs = recsql.compare(recs, RELEVANT, asked, run_cols="model", sample_col="sample", resamples=10).runs
    summary = recsql.evaluate(recs, RELEVANT, asked, run_cols="model", sample_col="sample").summary.set_index("model")
    for row in runs[runs["metric"].isin(asked[2:])].itertuples():
        assert row.mean == pytest.approx(summary.loc[row.run, row.metric], rel=1e-12, abs=1e-12), row
    assert len(runs[runs["metric"].isin(asked[2:])]) == 6


def test_compare_pairs_the_users_expected_values():
    """compare of sampled runs pairs each user's mean over the samples, as evaluate's per-user rows give it."""
    recs = pd.concat([SAMPLES.assign(model="A"), SAMPLES.assign(model="B", score=-SAMPLES["score"]),
                      SAMPLES.assign(model="A", user_id=2), SAMPLES.assign(model="B", user_id=2)])
    truth = pd.concat([RELEVANT, RELEVANT.assign(user_id=2, item_id=["d3", "d4"])])
    asked = ["ee_l@3", "ndcg@2"]
    per_user = recsql.evaluate(recs, truth, asked, run_cols="model", sample_col="sample").per_user
    tests = recsql.compare(recs, truth, asked, run_cols="model", sample_col="sample", baseline="A", resamples=20).tests
    wide = per_user.pivot(index="user_id", columns="model")
    for metric in asked:
        row = tests[tests["metric"] == metric].iloc[0]
        assert row["n"] == 2
        assert row["mean_diff"] == pytest.approx((wide[(metric, "B")] - wide[(metric, "A")]).mean(), abs=1e-15)


@pytest.mark.parametrize("asked, options, named", [
    (["ndcg@3"], {"segments": pd.DataFrame({"user_id": [1], "country": ["fr"]})}, "with segments is not supported yet"),
    (["ndcg@3"], {"truth": RELEVANT.assign(model="A"), "recs": SAMPLES.assign(model="A"), "run_cols": "model"},
     "truth carries the run columns"),
    (["ndcg@3"], {"sample_col": "draw"}, "has no column 'draw'; its columns are 'user_id', 'sample', 'item_id', 'score'. "
                                         "Pass sample_col="),
])
def test_what_a_sampled_run_cannot_do_is_refused_by_name(asked, options, named):
    truth, recs = options.pop("truth", RELEVANT), options.pop("recs", SAMPLES)
    keywords = {"sample_col": "sample", **options}
    with pytest.raises(RecsqlError, match=re.escape(named)):
        recsql.evaluate(recs, truth, asked, **keywords)


def test_the_command_line_takes_the_sample_column(tmp_path, capsys):
    recs, truth = tmp_path / "recs.csv", tmp_path / "truth.csv"
    SAMPLES.to_csv(recs, index=False)
    RELEVANT.to_csv(truth, index=False)
    from recsql.cli import main
    assert main(["evaluate", str(recs), str(truth), "-m", "ee_l@4", "--sample-col", "sample", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert math.isclose(float(pd.read_csv(io.StringIO(out))["ee_l@4"].iloc[0]), 0.1484375, abs_tol=1e-12)
    assert main(["evaluate", str(recs), str(truth), "-m", "ndcg@3", "--sample-col", "sample", "--segments",
                 str(recs)]) == 2
    assert "--sample-col sample" in capsys.readouterr().err
