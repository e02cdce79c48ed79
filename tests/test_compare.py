"""recsql.compare: paired tests and bootstrap intervals computed in SQL (docs/guide/compare.md).

Every expected value comes from outside recsql: scipy (ttest_rel, wilcoxon), statsmodels
(multipletests), an exact enumeration of every sign flip, numpy's quantiles over resamples drawn
by a plain-Python implementation of the documented mixer, ranx's compare, or a simulation
(bootstrap coverage). The same comparison runs on all seven engines and must give the same
numbers, resampled ones included."""
from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from contextlib import ExitStack

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sqlglot import exp
from statsmodels.stats.multitest import multipletests

import recsql
from support.engines import ENGINES, start
from support.paired import close, grid_values, paired
from recsql.comparison import Settings, compare_per_user
from recsql.comparison_global import stat_expression
from recsql.compose.exposure import resampling_refusal, template_refusal, weighted_refusal, weighted_sums
from recsql.dialects import render
from recsql.engines import runner_for
from recsql.specs import registry

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning", "ignore::RuntimeWarning")

# ---------------------------------------------------------------- the documented mixer, in plain Python

P = 2**31 - 1


def mix(x: int) -> int:
    return x**5 % P


def thresholds() -> list[int]:
    """ceil(F(j)·P) for the Poisson(1) CDF F while below P (scipy's CDF)."""
    out, j = [], 0
    while math.ceil(stats.poisson.cdf(j, 1) * P) < P:
        out.append(math.ceil(stats.poisson.cdf(j, 1) * P))
        j += 1
    return out


def reference_draws(n: int, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights w[b, i] and signs s[b, i] (b = 1..B, user index i = 1..n) as the README defines them."""
    cuts = thresholds()
    key_w, key_s = mix((seed * 1_103_515_245 + 1) % P), mix((seed * 1_103_515_245 + 2) % P)
    users = [mix((i * 69_621 + 12_345) % P) for i in range(1, n + 1)]
    w = np.zeros((resamples, n), dtype=np.int64)
    s = np.zeros((resamples, n), dtype=np.int64)
    for b in range(1, resamples + 1):
        k1, k2 = mix((key_w + b * 48_271) % P), mix((key_s + b * 48_271) % P)
        for i, k in enumerate(users):
            w[b - 1, i] = bisect_right(cuts, mix((k1 + k) % P))
            s[b - 1, i] = 1 - 2 * (mix((k2 + k) % P) % 2)
    return w, s


def frame(runs: dict[str, list[float | None]], metric: str = "m") -> pd.DataFrame:
    """Per-user rows: one run column ``model``, users 0..n-1, one metric column."""
    rows = [(run, u, v) for run, values in runs.items() for u, v in enumerate(values)]
    return pd.DataFrame(rows, columns=["model", "user_id", metric])


def run_values(runs: dict[str, list[float]], baseline=None, **kw):
    options = dict(tests=("t", "wilcoxon", "randomization"), ci=0.95, resamples=200, seed=0, correction="holm")
    options.update(kw)
    (runs_table, tests_table), sql = compare_per_user(frame(runs), ["m"], ["model"], "user_id",
                                                      Settings.checked(**options, baseline=baseline))
    return runs_table.frame(), tests_table.frame(), sql




# ---------------------------------------------------------------- the tests against scipy


@settings(max_examples=40, deadline=None)
@given(paired())
def test_paired_t_equals_scipy_ttest_rel(xy):
    x, y = xy
    _, tests, _ = run_values({"A": y, "B": x}, baseline="A", tests=("t",))
    row = tests.iloc[0]
    want = stats.ttest_rel(x, y)
    d = np.subtract(x, y)
    assert (row["run"], row["baseline"], row["n"]) == ("B", "A", len(x))
    assert close(row["t"], float(want.statistic)) and close(row["p_t"], float(want.pvalue))
    assert close(row["mean_diff"], float(d.mean()))
    sd = float(np.std(d, ddof=1))
    assert close(row["sd_diff"], sd)  # the standard deviation of the per-user differences, as numpy gives it
    assert close(row["effect_size"], float(d.mean()) / sd if sd else (math.nan if d.mean() == 0 else math.copysign(math.inf, d.mean())))
    assert (row["wins"], row["ties"], row["losses"]) == (int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()))
    assert "p_wilcoxon" not in tests and "p_randomization" not in tests


@settings(max_examples=40, deadline=None)
@given(paired())
def test_wilcoxon_equals_scipy(xy):
    x, y = xy
    _, tests, _ = run_values({"A": y, "B": x}, baseline="A", tests=("wilcoxon",))
    d = np.subtract(x, y)
    if not d.any():  # every difference zero: scipy's statistic is 0/0
        assert math.isnan(tests.iloc[0]["p_wilcoxon"])
        return
    want = stats.wilcoxon(x, y, zero_method="wilcox", correction=False, method="approx")
    assert close(tests.iloc[0]["p_wilcoxon"], float(want.pvalue))


def test_wilcoxon_ties_differences_equal_but_for_rounding():
    """0.3 − 0.1 and 0.2 − 0.0 differ in the last bit as doubles; recsql ties them (on every engine);
    scipy ties them once they are rounded the same way."""
    x, y = [0.3, 0.2, 0.7, 0.9, 0.4], [0.1, 0.0, 0.2, 0.3, 0.6]
    assert 0.3 - 0.1 != 0.2 - 0.0
    _, tests, _ = run_values({"A": y, "B": x}, baseline="A")
    d = np.round(np.subtract(x, y) * 1e12) / 1e12
    want = stats.wilcoxon(d, zero_method="wilcox", correction=False, method="approx")
    assert close(tests.iloc[0]["p_wilcoxon"], float(want.pvalue))


# ---------------------------------------------------------------- resampling against the documented procedure


def test_draws_equal_the_documented_mixer():
    """The SQL's integers (weights and signs) equal a plain-Python implementation of the README's formula."""
    from recsql.comparison_sql import _template
    from recsql.resampling import draw_parameters
    users = exp.select(exp.alias_(exp.cast(exp.column("i"), "BIGINT"), "user_idx"),
                       exp.alias_(exp.cast(exp.Literal.number(1), "BIGINT"), "drawn")).from_(
        "(SELECT UNNEST(RANGE(1, 51)) AS i) AS t")  # every user resampled (drawn = 1)
    statement = exp.select("resample", "user_idx", "w", "s").from_("cmp_draws").order_by("resample", "user_idx")
    statement.set("with_", exp.With(expressions=[exp.CTE(this=users, alias=exp.to_identifier("cmp_users")),
                                                 *_template("_compare_draws", draw_parameters(7, 30))]))
    import duckdb
    got = duckdb.sql(render(statement, "duckdb")).df()
    w, s = reference_draws(50, 30, 7)
    assert got["w"].to_numpy().reshape(30, 50).tolist() == w.tolist()
    assert got["s"].to_numpy().reshape(30, 50).tolist() == s.tolist()


def test_the_draws_in_python_are_the_sqls():
    """recsql.resampling.draws, the same stream in numpy (the simulated power's draws), gives the README's
    weights and signs."""
    from recsql.resampling import draws
    w, s = reference_draws(50, 30, 7)
    assert np.searchsorted(thresholds(), draws(7, "weights", 30, 50), side="right").tolist() == w.tolist()
    assert (1 - 2 * (draws(7, "flips", 30, 50) % 2)).tolist() == s.tolist()


def test_weights_are_poisson_and_independent():
    """2000 users x 300 resamples: the weights' frequencies fit Poisson(1), neighbouring users and
    resamples are uncorrelated, signs are balanced."""
    w, s = reference_draws(2000, 300, 3)
    counts = np.bincount(np.minimum(w.ravel(), 5), minlength=6)  # 0, 1, 2, 3, 4 and 5 or more
    expected = np.append(stats.poisson.pmf(np.arange(5), 1), stats.poisson.sf(4, 1)) * w.size
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    assert abs(np.corrcoef(w[:, :-1].ravel(), w[:, 1:].ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(w[:-1].ravel(), w[1:].ravel())[0, 1]) < 0.01
    assert abs(s.mean()) < 0.01 and abs(np.corrcoef(s[:, :-1].ravel(), s[:, 1:].ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(w.ravel(), s.ravel())[0, 1]) < 0.01


@settings(max_examples=15, deadline=None)
@given(paired(min_users=3, max_users=30), st.integers(0, 1000))
def test_bootstrap_and_randomization_equal_numpy_over_the_documented_draws(xy, seed):
    """Intervals = numpy.quantile of Σw·v/Σw over the documented Poisson weights (runs and paired
    differences); randomization p = (1 + #{|Σs·d| ≥ |Σd|}) / (B + 1) over the documented signs."""
    x, y = xy
    resamples = 150
    runs, tests, _ = run_values({"A": y, "B": x}, baseline="A", resamples=resamples, seed=seed, ci=0.9)
    w, s = reference_draws(len(x), resamples, seed)

    def interval(v):
        total = w.sum(axis=1)
        stat = (w @ np.asarray(v))[total > 0] / total[total > 0]
        return np.quantile(stat, [0.05, 0.95])

    for run, v in (("A", y), ("B", x)):
        row = runs[runs["run"] == run].iloc[0]
        low, high = interval(v)
        assert close(row["ci_low"], low) and close(row["ci_high"], high)
        assert close(row["mean"], float(np.mean(v))) and row["n_users"] == len(v)
    d = np.subtract(x, y)
    low, high = interval(d)
    row = tests.iloc[0]
    assert close(row["ci_low"], low) and close(row["ci_high"], high)
    extreme = int((np.abs(s @ d) >= abs(d.sum()) - 1e-9 * np.abs(d).sum()).sum())
    assert row["p_randomization"] == (1 + extreme) / (resamples + 1)


@pytest.mark.parametrize("d", [[0.5, 0.25, -0.125, 0.75, 0.5, 1.0, -0.25, 0.375],
                               [0.1, -0.2, 0.3, 0.05, -0.15, 0.2, 0.25, 0.1, 0.3, -0.05, 0.4, 0.15],
                               [1, 1, 1, 1, 1, 1, -1, 0, 0, 1]])
def test_randomization_p_within_monte_carlo_error_of_every_sign_flip(d):
    """The exact p over all 2^n sign flips, and recsql's with 5000 random flips."""
    n = len(d)
    observed = abs(sum(d))
    flips = sum(1 for signs in itertools.product((1, -1), repeat=n)
                if abs(sum(a * b for a, b in zip(signs, d))) >= observed - 1e-9)
    exact = flips / 2**n
    resamples = 5000
    _, tests, _ = run_values({"A": [0.0] * n, "B": d}, baseline="A", resamples=resamples, tests=("randomization",))
    got = tests.iloc[0]["p_randomization"]
    assert abs(got - exact) <= 4 * math.sqrt(exact * (1 - exact) / resamples) + 2 / resamples, (got, exact)


def test_bootstrap_interval_covers_the_true_mean_near_its_nominal_level():
    """300 independent runs of 60 users with values from Beta(2, 5) (mean 2/7), one comparison:
    the 90% percentile intervals cover the true mean in about 90% of the runs."""
    rng = np.random.default_rng(11)
    runs = {f"r{i:03d}": rng.beta(2, 5, 60).tolist() for i in range(300)}
    table, _, _ = run_values(runs, baseline="r000", resamples=400, ci=0.9, tests=("t",))
    covered = ((table["ci_low"] <= 2 / 7) & (2 / 7 <= table["ci_high"])).mean()
    # binomial standard error at 300 runs: 1.7%; the percentile bootstrap under-covers slightly at n = 60
    assert 0.84 <= covered <= 0.95, covered


# ---------------------------------------------------------------- corrections and determinism


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.sampled_from(["holm", "bonferroni", "bh"]))
def test_corrections_equal_statsmodels(p, method):
    from recsql.significance import corrected
    want = multipletests(p, method={"bh": "fdr_bh"}.get(method, method))[1]
    assert np.allclose(corrected(p, method), want, rtol=1e-12, atol=1e-15)


def test_table_corrections_over_every_row_per_test():
    rng = np.random.default_rng(5)
    base = rng.random(30)
    runs = {"A": base.tolist(), **{r: (base + rng.normal(0.05 * i, 0.2, 30)).tolist() for i, r in enumerate("BCD")}}
    for method in ("holm", "bonferroni", "bh"):
        _, tests, _ = run_values(runs, correction=method)
        assert len(tests) == 6  # every pair once
        for column in ("p_t", "p_wilcoxon", "p_randomization"):
            want = multipletests(tests[column], method={"bh": "fdr_bh"}.get(method, method))[1]
            assert np.allclose(tests[f"{column}_adj"], want, rtol=1e-12)
    _, tests, _ = run_values(runs, correction=None)
    assert tests["p_t_adj"].tolist() == tests["p_t"].tolist()


def recs_truth(runs=("A", "B", "C"), users=25, seed=0, text=False):
    rng = np.random.default_rng(seed)
    rows = [(m, f"u{u:02d}" if text else u, i, float(rng.random())) for m in runs for u in range(users) for i in range(8)]
    recs = pd.DataFrame(rows, columns=["model", "user_id", "item_id", "score"])
    truth = pd.DataFrame([(f"u{u:02d}" if text else u, int(i)) for u in range(users)
                          for i in rng.choice(8, 3, replace=False)], columns=["user_id", "item_id"])
    if text:
        recs = recs.astype({"model": "string", "user_id": "string"})
        truth = truth.astype({"user_id": "string"})
    return recs, truth


def test_same_seed_same_numbers_other_seed_other_resamples():
    recs, truth = recs_truth()
    one = recsql.compare(recs, truth, ["ndcg@5", "recall@5"], run_cols="model", resamples=100, seed=4)
    two = recsql.compare(recs, truth, ["ndcg@5", "recall@5"], run_cols="model", resamples=100, seed=4)
    other = recsql.compare(recs, truth, ["ndcg@5", "recall@5"], run_cols="model", resamples=100, seed=5)
    for mine, theirs in ((one.tests, two.tests), (one.runs, two.runs)):  # to the last bits of a sum's order
        assert list(mine.columns) == list(theirs.columns)
        for column in mine.columns:
            assert all(a == b if isinstance(b, str) else close(a, b, tol=1e-12) for a, b in zip(mine[column], theirs[column]))
    assert all(close(a, b, tol=1e-12) for a, b in zip(one.tests["p_t"], other.tests["p_t"]))  # not resampled
    assert not any(close(a, b, tol=1e-6) for a, b in zip(one.tests["ci_low"], other.tests["ci_low"]))


def test_compare_agrees_with_scipy_on_evaluate_per_user_values():
    """End to end: the paired population is evaluate's (every relevant user in every run, 0 without
    recommendations), and the tests are scipy's on those values."""
    recs, truth = recs_truth(users=30, seed=3)
    recs = recs[~((recs["model"] == "B") & (recs["user_id"] < 4))]  # four users without B's recommendations
    result = recsql.compare(recs, truth, ["ndcg@5", "precision@3"], run_cols="model", baseline="A", resamples=99)
    per_user = recsql.evaluate(recs, truth, ["ndcg@5", "precision@3"], run_cols="model").per_user
    wide = {m: per_user.pivot(index="user_id", columns="model", values=m) for m in ("ndcg@5", "precision@3")}
    assert set(result.tests["run"]) == {"B", "C"} and set(result.tests["baseline"]) == {"A"}
    for _, row in result.tests.iterrows():
        x, y = wide[row["metric"]][row["run"]], wide[row["metric"]]["A"]
        assert row["n"] == 30 and x.notna().all()
        assert close(row["p_t"], float(stats.ttest_rel(x, y).pvalue))
        # differences equal but for rounding (nDCG's sums) tie on recsql's 1e-12 grid (README)
        grid = np.round((x - y).to_numpy() * 1e12)
        assert close(row["p_wilcoxon"], float(stats.wilcoxon(grid, zero_method="wilcox", correction=False,
                                                             method="approx").pvalue))
        assert close(row["mean_diff"], float((x - y).mean()))
    assert (wide["ndcg@5"]["B"].loc[[0, 1, 2, 3]] == 0).all()
    for _, row in result.runs.iterrows():
        assert close(row["mean"], float(wide[row["metric"]][row["run"]].mean())) and row["n_users"] == 30
    evaluation = recsql.evaluate(recs, truth, ["ndcg@5", "precision@3"], run_cols="model")
    again = evaluation.compare("A", resamples=99)
    pd.testing.assert_frame_equal(again.tests, result.tests)
    pd.testing.assert_frame_equal(again.runs, result.runs)


def test_ranx_compare_t_test_p_values_reproduced():
    from ranx import Qrels, Run, compare as ranx_compare
    recs, truth = recs_truth(users=40, seed=8)
    qrels = Qrels({str(u): {str(i): 1 for i in g["item_id"]} for u, g in truth.groupby("user_id")})
    runs = [Run({str(u): {str(i): s for i, s in zip(g["item_id"], g["score"])} for u, g in recs[recs["model"] == m].groupby("user_id")},
                name=m) for m in "ABC"]
    report = ranx_compare(qrels, runs, ["ndcg@5", "map@5"], stat_test="student", max_p=0.05)
    ours = recsql.compare(recs.astype({"user_id": str, "item_id": str}), truth.astype({"user_id": str, "item_id": str}),
                          ["ndcg@5", "map@5"], run_cols="model", convention="ranx", resamples=10, correction=None)
    for _, row in ours.tests.iterrows():
        want = report.comparisons[frozenset([row["run"], row["baseline"]])][row["metric"]]["p_value"]
        assert close(row["p_t"], float(want), tol=1e-8), (row["run"], row["baseline"], row["metric"])


def test_several_run_columns_label_runs_col_equals_value():
    recs, truth = recs_truth(runs=("A", "B"))
    recs["day"] = 1
    recs = pd.concat([recs, recs.assign(day=2, score=recs["score"] * -1)], ignore_index=True)
    result = recsql.compare(recs, truth, ["mrr@5"], run_cols=["model", "day"], baseline={"model": "A", "day": 1},
                            resamples=20)
    assert sorted(result.runs["run"].unique()) == ["model=A/day=1", "model=A/day=2", "model=B/day=1", "model=B/day=2"]
    assert set(result.tests["baseline"]) == {"model=A/day=1"} and len(result.tests) == 3
    same = recsql.compare(recs, truth, ["mrr@5"], run_cols=["model", "day"], baseline="model=A/day=1", resamples=20)
    pd.testing.assert_frame_equal(same.tests, result.tests)


def test_two_runs_whose_values_hold_the_separators_keep_two_labels():
    """('A/day=1', '2') and ('A', '1/day=2') joined plainly are both model=A/day=1/day=2: the
    separators inside values are escaped, so each run keeps its own label and baseline= names one."""
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 2], "relevance": [1, 1]})
    recs = pd.DataFrame({"model": ["A/day=1"] * 2 + ["A"] * 2, "day": ["2", "2", "1/day=2", "1/day=2"],
                         "user_id": [1, 2, 1, 2], "item_id": [1, 2, 1, 3], "score": [1.0] * 4})
    result = recsql.compare(recs, truth, ["hr@1"], run_cols=["model", "day"], resamples=20)
    means = dict(zip(result.runs["run"], result.runs["mean"]))
    assert means == {"model=A\\/day\\=1/day=2": 1.0, "model=A/day=1\\/day\\=2": 0.5}
    for label, other in [("model=A\\/day\\=1/day=2", "model=A/day=1\\/day\\=2"),
                         ("model=A/day=1\\/day\\=2", "model=A\\/day\\=1/day=2")]:
        tests = recsql.compare(recs, truth, ["hr@1"], run_cols=["model", "day"], resamples=20, baseline=label).tests
        assert list(zip(tests["run"], tests["baseline"])) == [(other, label)]
    with pytest.raises(recsql.RecsqlError, match="backslash before each"):
        recsql.compare(recs, truth, ["hr@1"], run_cols=["model", "day"], resamples=20, baseline="model=A/day=1/day=2")


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("kw, words", [
    (dict(run_cols=()), ["run_cols", "--run-col"]),
    (dict(tests=("t", "sign")), ["tests=", "wilcoxon"]),
    (dict(ci=1.5), ["ci=", "0.95"]),
    (dict(resamples=0), ["resamples=", "10,000"]),
    (dict(seed=-1), ["seed=", "whole number"]),
    (dict(correction="fdr"), ["correction=", "holm", "bh"]),
    (dict(baseline="Z"), ["baseline='Z'", "not a run", "'A'"]),
    (dict(baseline="B2"), ["did you mean 'B'"]),
    (dict(treshold=2), ["treshold", "did you mean 'threshold'"]),
    (dict(user_col="uid"), ["user_col", "uid"]),
])
def test_refusals_name_the_option_and_the_fix(kw, words):
    recs, truth = recs_truth()
    options = dict(metrics=["ndcg@5"], run_cols="model", resamples=10) | kw
    with pytest.raises(recsql.RecsqlError) as err:
        recsql.compare(recs, truth, **options)
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_one_run_is_refused():
    recs, truth = recs_truth(runs=("A",))
    with pytest.raises(recsql.RecsqlError, match="at least two runs"):
        recsql.compare(recs, truth, ["ndcg@5"], run_cols="model", resamples=10)


def test_numeric_run_column_baseline_given_as_text():
    """The CLI passes --baseline as text: a numeric run column takes it as a number."""
    recs, truth = recs_truth()
    recs["model"] = recs["model"].map({"A": 1, "B": 2, "C": 3})
    result = recsql.compare(recs, truth, ["ndcg@5"], run_cols="model", baseline="1", resamples=10)
    assert set(result.tests["baseline"]) == {1}
    with pytest.raises(recsql.RecsqlError, match="holds numbers"):
        recsql.compare(recs, truth, ["ndcg@5"], run_cols="model", baseline="one", resamples=10)


def test_dirty_input_is_refused_from_the_checks_in_the_statement():
    recs, truth = recs_truth()
    with pytest.raises(recsql.RecsqlError, match="duplicate"):
        recsql.compare(pd.concat([recs, recs.iloc[[0]]]), truth, ["ndcg@5"], run_cols="model", resamples=10)


# ---------------------------------------------------------------- every engine, the same numbers


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    with ExitStack() as stack:
        yield start(request.param, stack)


ALL = ("t", "wilcoxon", "randomization", "tukey")


@pytest.fixture(scope="module")
def on_duckdb():
    recs, truth = recs_truth(text=True, users=20, seed=2)
    return recs, truth, recsql.compare(recs, truth, ["ndcg@5", "precision@3", "map@5"], run_cols="model",
                                       resamples=150, seed=9, tests=ALL)


def test_every_engine_gives_the_same_numbers_resampled_ones_included(engine, on_duckdb):
    recs, truth, want = on_duckdb
    got = recsql.compare(engine.load(recs), engine.load(truth), ["ndcg@5", "precision@3", "map@5"], run_cols="model",
                         resamples=150, seed=9, tests=ALL, con=engine.con)
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
        for column in mine.columns:
            for a, b in zip(mine[column], theirs[column]):
                assert a == b if isinstance(b, str) else close(a, b), (engine.name, column, a, b)


def test_every_engine_draws_the_same_integers(engine):
    from recsql.comparison_sql import _template
    from recsql.resampling import draw_parameters
    # users 1..40 resampled (drawn = 1) and users 41..45 counted but not resampled (drawn = 0): no draws
    users = engine.load(pd.DataFrame({"user_idx": np.arange(1, 46, dtype="int64"),
                                      "drawn": (np.arange(1, 46) <= 40).astype("int64")}))
    statement = exp.select("resample", "user_idx", "w", "s").from_("cmp_draws").order_by("resample", "user_idx")
    statement.set("with_", exp.With(expressions=[
        exp.CTE(this=exp.select("user_idx", "drawn").from_(exp.to_table(users)), alias=exp.to_identifier("cmp_users")),
        *_template("_compare_draws", draw_parameters(123, 25))]))
    with runner_for(engine.con) as runner:
        got = runner.fetch(render(statement, runner.dialect))
    got = got.to_pandas() if hasattr(got, "to_pandas") else got
    w, s = reference_draws(40, 25, 123)
    assert [int(v) for v in got["w"]] == w.ravel().tolist()
    assert [int(v) for v in got["s"]] == s.ravel().tolist()


# ---------------------------------------------------------------- the CLI and to_sql


DATA = __import__("pathlib").Path(__file__).resolve().parent.parent / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")


def test_cli_compare_prints_the_api_numbers_as_table_csv_and_json(capsys):
    import json
    from recsql.cli import main
    args = ["compare", RECS, TRUTH, "-m", "ndcg@10", "-m", "recall@20", "--run-col", "model", "--baseline", "popular",
            "--resamples", "60", "--seed", "3", "--correction", "bonferroni"]
    api = recsql.compare(RECS, TRUTH, ["ndcg@10", "recall@20"], run_cols="model", baseline="popular", resamples=60,
                         seed=3, correction="bonferroni")
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(r["run"], r["baseline"], r["metric"]) for r in out] == list(zip(api.tests["run"], api.tests["baseline"],
                                                                              api.tests["metric"]))
    for row, (_, want) in zip(out, api.tests.iterrows()):
        for c in ("n", "mean_diff", "ci_low", "ci_high", "p_t_adj", "p_randomization", "wins"):
            assert close(row[c], want[c]), (c, row[c], want[c])
    assert main([*args, "--format", "csv", "--runs"]) == 0
    runs = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert all(close(a, b) for a, b in zip(runs["ci_low"], api.runs["ci_low"]))
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "bootstrap interval" in captured.out and "p(wilcoxon)" in captured.out and "comparison(s)" in captured.err
    assert main([*args, "--wide"]) == 0
    assert "p_wilcoxon_adj" in capsys.readouterr().out
    assert main(["compare", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--baseline", "nope"]) == 2
    assert "not a run" in capsys.readouterr().err
    assert main(["compare", RECS, TRUTH, "-m", "ndcg@10"]) == 2
    assert "--run-col" in capsys.readouterr().err


def test_to_sql_compare_runs_in_another_engine_and_finishes_in_python():
    """The statement to_sql renders for SQLite, run there, finished by finish_rows, gives compare's numbers."""
    import sqlite3
    from recsql.comparison import finish_rows
    recs, truth = recs_truth(text=True)
    want = recsql.compare(recs, truth, ["ndcg@5", "hit_rate@3"], run_cols="model", baseline="B", resamples=80, seed=1)
    con = sqlite3.connect(":memory:")
    recs.astype(object).to_sql("recs", con, index=False)
    truth.astype(object).to_sql("truth", con, index=False)
    sql = recsql.to_sql(metrics=["ndcg@5", "hit_rate@3"], run_cols="model", dialect="sqlite", text_ids=["user_id"],
                        relevance_col=None, compare={"baseline": "B", "resamples": 80, "seed": 1})
    rows = pd.read_sql_query(sql, con)
    assert (rows[["recs_invalid_rows", "recs_duplicate_rows"]] == 0).all().all()
    got = finish_rows(rows, ["ndcg@5", "hit_rate@3"], "model", baseline="B", resamples=80, seed=1)
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns)
        for column in mine.columns:
            assert all(a == b if isinstance(b, str) else close(a, b) for a, b in zip(mine[column], theirs[column])), column
    with pytest.raises(recsql.RecsqlError, match="unknown option 'seeds'"):
        recsql.to_sql(metrics=["ndcg@5"], run_cols="model", compare={"seeds": 1})


def test_every_dialect_renders_the_statistics():
    from recsql.dialects import DIALECTS
    for name in DIALECTS:
        sql = recsql.to_sql(metrics=["ndcg@10", "mrr@10"], run_cols=["model", "day"], dialect=name,
                            compare={"baseline": ("A", 1), "resamples": 500})
        assert "cmp_draws" in sql and "cmp_interval" in sql, name
        sql = recsql.to_sql(metrics=["coverage@10", "gini@10", "personalization@10", "ndcg@10"], run_cols="model",
                            dialect=name, compare={"segments": "cohorts", "segment_cols": ["cohort"]})
        assert "cmp_global_sides" in sql and "cohorts" in sql, name


def test_evaluation_compare_refuses_global_metrics_and_evaluations_without_runs():
    recs, truth = recs_truth()
    with pytest.raises(recsql.RecsqlError, match="personalization@5.*global"):
        recsql.evaluate(recs, truth, ["ndcg@5", "personalization@5"], run_cols="model").compare()
    single = recs[recs["model"] == "A"].drop(columns="model")
    with pytest.raises(recsql.RecsqlError, match="run_cols='model'"):
        recsql.evaluate(single, truth, ["ndcg@5"]).compare()


def test_list_metrics_pair_the_users_with_lists_in_both_runs():
    """novelty@k is defined for users with a list: a user without B's list is paired out (n counts it)."""
    recs, truth = recs_truth(runs=("A", "B"), users=12)
    recs = recs[~((recs["model"] == "B") & (recs["user_id"] == 0))]
    interactions = truth.rename(columns={}).copy()
    result = recsql.compare(recs, None, ["novelty@5"], run_cols="model", baseline="A", interactions=interactions,
                            resamples=30)
    assert result.tests.iloc[0]["n"] == 11
    assert result.runs.set_index("run")["n_users"].to_dict() == {"A": 12, "B": 11}


# ---------------------------------------------------------------- segments


def cohorts(users: int, text: bool = False) -> pd.DataFrame:
    frame = pd.DataFrame({"user_id": [f"u{u:02d}" if text else u for u in range(users)],
                          "cohort": ["new" if u % 3 == 0 else "old" for u in range(users)]})
    return frame.astype("string") if text else frame


def test_segments_compare_within_each_segment_as_scipy_does():
    recs, truth = recs_truth(users=36, seed=6)
    result = recsql.compare(recs, truth, ["ndcg@5", "precision@3"], run_cols="model", baseline="A",
                            segments=cohorts(36), resamples=40)
    per_user = recsql.evaluate(recs, truth, ["ndcg@5", "precision@3"], run_cols="model").per_user
    per_user["cohort"] = np.where(per_user["user_id"] % 3 == 0, "new", "old")
    assert list(result.tests.columns[:4]) == ["cohort", "run", "baseline", "metric"] and len(result.tests) == 8
    for _, row in result.tests.iterrows():
        part = per_user[per_user["cohort"] == row["cohort"]]
        wide = part.pivot(index="user_id", columns="model", values=row["metric"])
        x, y = wide[row["run"]], wide["A"]
        assert row["n"] == len(wide) == (12 if row["cohort"] == "new" else 24)
        assert close(row["p_t"], float(stats.ttest_rel(x, y).pvalue)) and close(row["mean_diff"], float((x - y).mean()))
    for _, row in result.runs.iterrows():
        part = per_user[(per_user["cohort"] == row["cohort"]) & (per_user["model"] == row["run"])]
        assert close(row["mean"], float(part[row["metric"]].mean())) and row["n_users"] == len(part)
    # the correction runs over every row of the table, segments included
    assert np.allclose(result.tests["p_t_adj"], multipletests(result.tests["p_t"], method="holm")[1])


@pytest.mark.parametrize("change, words", [
    (lambda s: s.iloc[1:], ["1 user(s)", "no row in segments"]),
    (lambda s: pd.concat([s, s.iloc[[0]].assign(cohort="other")]), ["second segment"]),
    (lambda s: s[["user_id"]], ["only the user column"]),
    (lambda s: s.assign(user_id=s["user_id"].astype(str)), ["user ids differ in type"]),
])
def test_segment_refusals(change, words):
    recs, truth = recs_truth(users=12)
    with pytest.raises(recsql.RecsqlError) as err:
        recsql.compare(recs, truth, ["ndcg@5"], run_cols="model", segments=change(cohorts(12)), resamples=10)
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_a_user_without_a_segment_is_refused_by_name_with_only_global_metrics():
    """With only global metrics (whose observed values count every user in a segment) the refusal names the
    user without a segment, as with per-user metrics."""
    recs, truth = recs_truth(users=12)
    with pytest.raises(recsql.RecsqlError, match="1 user.* no row in segments"):
        recsql.compare(recs, truth, ["gini@3"], run_cols="model", segments=cohorts(12).iloc[1:], resamples=10)


def test_every_engine_gives_the_same_numbers_within_segments(engine):
    recs, truth = recs_truth(text=True, users=18, seed=5)
    options = dict(run_cols="model", baseline="B", resamples=60, seed=2)
    want = recsql.compare(recs, truth, ["ndcg@5", "recall@5"], segments=cohorts(18, text=True), **options)
    got = recsql.compare(engine.load(recs), engine.load(truth), ["ndcg@5", "recall@5"],
                         segments=engine.load(cohorts(18, text=True)), con=engine.con, **options)
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
        for column in mine.columns:
            for a, b in zip(mine[column], theirs[column]):
                assert a == b if isinstance(b, str) else close(a, b), (engine.name, column, a, b)


def test_intersection_population_pairs_the_users_both_runs_have():
    """population='intersection' keeps, per run, the users with recommendations: a user missing from
    B's lists is in A's mean but not in the pairs."""
    recs, truth = recs_truth(runs=("A", "B"), users=15, seed=9)
    recs = recs[~((recs["model"] == "B") & (recs["user_id"].isin([0, 1])))]
    result = recsql.compare(recs, truth, ["recall@5"], run_cols="model", baseline="A", population="intersection",
                            resamples=20)
    per_user = recsql.evaluate(recs, truth, ["recall@5"], run_cols="model", population="intersection").per_user
    wide = per_user.pivot(index="user_id", columns="model", values="recall@5").dropna()
    assert result.runs.set_index("run")["n_users"].to_dict() == {"A": 15, "B": 13}
    row = result.tests.iloc[0]
    assert row["n"] == len(wide) == 13
    assert close(row["p_t"], float(stats.ttest_rel(wide["B"], wide["A"]).pvalue))


# ---------------------------------------------------------------- randomized Tukey HSD


def reference_tukey(runs: list[list[float]], resamples: int, seed: int) -> dict[tuple[int, int], int]:
    """#{b : range of the shuffled run means ≥ |mean_a − mean_b|} for every pair (a, b) of run indexes
    1..R, each user's values shuffled among the runs as the README defines (stream 3 of the mixer)."""
    values = np.asarray(runs)  # runs x users
    r, n = values.shape
    key = mix((seed * 1_103_515_245 + 3) % P)
    users = [mix((i * 69_621 + 12_345) % P) for i in range(1, n + 1)]
    spreads = []
    for b in range(1, resamples + 1):
        k3 = mix((key + b * 48_271) % P)
        shuffled = np.zeros_like(values)
        for i, ku in enumerate(users):
            z = mix((k3 + ku) % P)
            order = sorted(range(1, r + 1), key=lambda run: (mix((z + run * 16_807) % P), run))
            for label, run in enumerate(order):
                shuffled[label, i] = values[run - 1, i]
        means = shuffled.mean(axis=1)
        spreads.append(means.max() - means.min())
    means = values.mean(axis=1)
    return {(a, c): sum(s >= abs(means[a - 1] - means[c - 1]) - 1e-9 * (abs(means[a - 1]) + abs(means[c - 1]))
                        for s in spreads) for a in range(1, r + 1) for c in range(1, r + 1) if a > c}


@settings(max_examples=8, deadline=None)
@given(st.integers(3, 12), st.integers(3, 4), st.integers(0, 99), st.data())
def test_tukey_hsd_equals_the_documented_shuffles(n, r, seed, data):
    runs = [data.draw(st.lists(grid_values, min_size=n, max_size=n)) for _ in range(r)]
    names = [f"r{i}" for i in range(r)]
    _, tests, _ = run_values(dict(zip(names, runs)), resamples=60, seed=seed, tests=("tukey",))
    want = reference_tukey(runs, 60, seed)
    assert len(tests) == r * (r - 1) // 2 and "p_tukey_adj" not in tests
    for _, row in tests.iterrows():
        a, c = names.index(row["run"]) + 1, names.index(row["baseline"]) + 1
        assert row["p_tukey"] == (1 + want[(a, c)]) / 61, (row["run"], row["baseline"])


def test_tukey_hsd_is_no_less_conservative_than_one_randomization_test():
    """Over five runs that differ, a pair's Tukey p (the largest of all pairs' differences under the
    null) is at least its own randomization p, up to Monte Carlo error."""
    rng = np.random.default_rng(21)
    base = rng.random(40)
    runs = {f"r{i}": np.clip(base + rng.normal(0.03 * i, 0.15, 40), 0, 1).tolist() for i in range(5)}
    _, tests, _ = run_values(runs, resamples=400, tests=("randomization", "tukey"))
    assert (tests["p_tukey"] >= tests["p_randomization"] - 0.05).all()
    assert (tests["p_tukey"] > tests["p_randomization"]).mean() > 0.8


# ---------------------------------------------------------------- global metrics: coverage, gini, personalization


def global_value(name: str, lists: list[tuple[int, list]], catalog: list, k: int) -> float | None:
    """A global metric over weighted lists [(w_u, top k of u)], from its plain definition: coverage =
    #shown catalog items / #catalog; Gini = Σ_j (2j − m − 1)·c_(j) / (m·Σc) over every catalog item
    (zeros included) sorted ascending; personalization = 1 − Σ_{u≠v} w_u·w_v·#(L_u ∩ L_v) /
    (Σ_{u≠v} w_u·w_v · k), pair by pair. None where undefined."""
    lists = [(w, items) for w, items in lists if w > 0]
    if not lists:
        return None
    counts = {i: 0 for i in catalog}
    for w, items in lists:
        for i in items:
            if i in counts:
                counts[i] += w
    m = len(catalog)
    if name == "coverage":
        return sum(c > 0 for c in counts.values()) / m if m else None
    if name == "gini":
        c = np.sort(np.array(list(counts.values()), dtype=float))
        j = np.arange(1, m + 1)
        return float(((2 * j - m - 1) * c).sum() / (m * c.sum())) if m and c.sum() else None
    shared = pairs = 0
    for a, (wa, la) in enumerate(lists):
        for b, (wb, lb) in enumerate(lists):
            if a != b:
                shared += wa * wb * len(set(la) & set(lb))
                pairs += wa * wb
    return 1 - shared / (pairs * k) if pairs else None


def top_lists(recs: pd.DataFrame, run: str, k: int) -> dict:
    """user -> its top k items (score descending, item ascending on ties) in ``run``."""
    part = recs[recs["model"] == run].sort_values(["user_id", "score", "item_id"], ascending=[True, False, True])
    return {u: g["item_id"].tolist()[:k] for u, g in part.groupby("user_id")}


@st.composite
def exposure_runs(draw):
    """Two runs' lists over 6 items for 3..12 users; a user may lack a run's list."""
    n = draw(st.integers(3, 12))
    rows = []
    for model in ("A", "B"):
        for u in range(n):
            if draw(st.integers(0, 5)) == 0 and u > 0:  # no list in this run (user 0 always has one)
                continue
            items = draw(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True))
            rows += [(model, u, i, float(len(items) - r)) for r, i in enumerate(items)]
    return pd.DataFrame(rows, columns=["model", "user_id", "item_id", "score"]), n


# the global metrics compare recomputes by their own templates over weighted lists (tests/test_compare_weighted.py);
# the others it counts from exposure sums (the tests below)
WEIGHTED = {"exposure_disparity", "exposure_gini", "exposure_entropy", "lt_coverage", "pop_rsp", "pop_reo"}
# The off-policy estimators are global too, recomputed over resampled logs (tests/test_compare_logged.py)
OFF_POLICY = frozenset(name for name, spec in registry().items() if spec.family == "off_policy")
SLATES = frozenset(name for name in OFF_POLICY if "log_slates" in registry()[name].features({}))
GLOBAL = tuple(name for name, spec in registry().items()
               if spec.population == "global" and name not in WEIGHTED and name not in OFF_POLICY)


def test_every_global_metric_of_the_registry_has_a_resampled_form():
    """compare resamples a global metric through its template's expression over the exposure sums, or
    by its own template over weighted lists when its stage rows count them; every global metric of the
    registry is one or the other."""
    assert set(GLOBAL) >= {"coverage", "gini", "personalization"}
    assert WEIGHTED <= {name for name, spec in registry().items() if spec.population == "global"}
    for name in GLOBAL:
        assert resampling_refusal(name) is None, name
        stat = stat_expression({0: recsql.parse_metric(f"{name}@4")})
        assert {c.name for c in stat.find_all(exp.Column)} <= {"slot", *weighted_sums()}, name
    for name in WEIGHTED:
        assert "reads" in resampling_refusal(name) and weighted_refusal(recsql.parse_metric(f"{name}@4")) is None, name
    assert "exposure" in weighted_refusal(recsql.parse_metric("gini@4"))
    assert OFF_POLICY >= {"ips", "snips", "dm", "dr", "switch_dr", "ess", "max_weight", "slate_ips", "slate_iips",
                          "slate_rips", "slate_snips", "slate_sniips", "slate_snrips", "pbm_ips"}


@pytest.mark.parametrize("name", sorted(SLATES))
def test_compare_resamples_the_slate_estimators(name):
    """A resampled context drawn w times is w slates (its numbers: tests/test_compare_logged.py); the observed
    value is evaluate's."""
    recs = pd.DataFrame({"model": ["a", "a", "b", "b"] * 2, "user_id": [1, 1, 1, 1, 2, 2, 2, 2],
                         "item_id": [1, 2, 2, 1] * 2, "score": [2.0, 1.0, 2.0, 1.0] * 2})
    logs = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [1, 2, 2, 1], "position": [1, 2, 1, 2],
                         "propensity": [0.5, 0.5, 0.5, 0.5], "reward": [1.0, 0.0, 1.0, 1.0], "slate_p": [0.25] * 4,
                         "cascade_p": [0.5, 0.25] * 2})
    columns = dict(logs=logs, slate_propensity_col="slate_p", cascade_propensity_col="cascade_p", run_cols="model")
    result = recsql.compare(recs, None, [name], resamples=20, **columns)
    evaluated = recsql.evaluate(recs, None, [name], **columns).summary.set_index("model")[name]
    assert result.runs.set_index("run")["mean"].to_dict() == pytest.approx(evaluated.to_dict(), nan_ok=True)
    assert list(result.tests["metric"]) == [name]


@pytest.mark.parametrize("name", sorted(OFF_POLICY - SLATES))
def test_compare_resamples_the_off_policy_estimators_and_refuses_them_with_truth_per_run_or_segments(name):
    """Each estimator is compared (its numbers: tests/test_compare_logged.py); with truth per run (as the global
    metrics recomputed over weighted lists) or within segments (which evaluate refuses too), it is refused,
    naming it and the way to compare it."""
    recs = pd.DataFrame({"model": ["a", "a", "b", "b"], "user_id": [1, 2, 1, 2], "item_id": [1, 2, 2, 1],
                         "score": [1.0, 1.0, 1.0, 1.0]})
    logs = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 1], "position": [1, 1], "propensity": [0.5, 0.5],
                         "reward": [1.0, 0.0]})
    model = pd.DataFrame({"user_id": [1, 1, 2, 2], "item_id": [1, 2, 1, 2], "reward": [0.5] * 4})
    truth = pd.DataFrame({"user_id": [1], "item_id": [1]})
    result = recsql.compare(recs, truth, [name, "ndcg@2"], logs=logs, reward_model=model, run_cols="model",
                            resamples=10)
    assert set(result.tests["metric"]) == {name, "ndcg@2"}
    with pytest.raises(recsql.RecsqlError, match=rf"metric '{name}' is global .*over resampled logs.*with truth per run"):
        recsql.compare(recs, pd.concat([truth.assign(model=m) for m in ("a", "b")]), [name], logs=logs,
                       reward_model=model, run_cols="model", resamples=10)
    with pytest.raises(recsql.RecsqlError, match=rf"metric '{name}' is global .*over resampled logs.*within segments"
                                                 r".*nor does evaluate.*without segments="):
        recsql.compare(recs, truth, [name], logs=logs, reward_model=model, run_cols="model", resamples=10,
                       segments=pd.DataFrame({"user_id": [1, 2], "cohort": ["x", "y"]}))


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_compare_takes_a_weighted_global_metric_with_truth_per_run(name):
    """Compared with truth per run (they were refused): the observed value is evaluate's with truth per run (every
    statistic against the reference: tests/test_compare_weighted.py)."""
    recs = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "user_id": [1, 1, 2, 2] * 2,
                         "item_id": [10, 11, 10, 12, 11, 12, 12, 10], "score": [2.0, 1.0] * 4})
    items = pd.DataFrame({"item_id": [10, 11, 12], "category": ["x", "x", "y"]})
    interactions = pd.DataFrame({"user_id": [1, 2, 3], "item_id": [10, 10, 11]})
    per_run = pd.DataFrame({"model": ["a", "a", "b", "b"], "user_id": [1, 2, 1, 2], "item_id": [10, 12, 11, 10],
                            "relevance": [1, 1, 1, 1]})
    given = dict(run_cols="model", items=items, interactions=interactions)
    result = recsql.compare(recs, per_run, [f"{name}@2"], resamples=10, **given)
    summary = recsql.evaluate(recs, per_run, [f"{name}@2"], **given).summary.set_index("model")
    assert list(result.runs["run"]) == ["a", "b"]
    for row in result.runs.itertuples():
        assert close(row.mean, summary.loc[row.run, f"{name}@2"]), (row.run, row.mean)


def test_a_global_metric_reading_the_ranked_rows_is_refused_with_the_reason():
    sql = ("SELECT user_id, CAST(SUM(CASE WHEN src = 5 AND cut = $k THEN exposure ELSE 0 END) AS DOUBLE) "
           "/ NULLIF(n_catalog(), 0) AS spread FROM ranked GROUP BY user_id")
    reason = template_refusal("spread", sql)
    assert "column exposure" in reason and "SUM()" in reason and "shown_items()" in reason
    assert template_refusal("spread", sql.replace("SUM(CASE WHEN src = 5 AND cut = $k THEN exposure ELSE 0 END)",
                                                  "total_exposure()")) is None


@settings(max_examples=12, deadline=None)
@given(exposure_runs(), st.integers(1, 3), st.integers(0, 500))
def test_global_metrics_resampled_as_the_documented_weights_and_swaps(data, k, seed):
    """Observed values, bootstrap intervals (numpy.quantile of the metric over lists weighted by the
    documented Poisson weights; pairs personalization-weighted w_u·w_v) and randomization p (each user's
    lists swapped between the runs where its documented sign is −1), recomputed from the definitions."""
    recs, _ = data
    resamples = 40
    catalog = pd.DataFrame({"item_id": list(range(8))})  # items 6 and 7 never shown
    metrics = [f"{name}@{k}" for name in GLOBAL]
    result = recsql.compare(recs, None, metrics, run_cols="model", baseline="A", catalog=catalog,
                            resamples=resamples, seed=seed, ci=0.9)
    lists = {run: top_lists(recs, run, k) for run in ("A", "B")}
    # users are numbered 1..n in id order among the users compared (here: those with a list in a run)
    order = {u: i for i, u in enumerate(sorted(set(lists["A"]) | set(lists["B"])))}
    n = len(order)
    lists = {run: {order[u]: items for u, items in by_user.items()} for run, by_user in lists.items()}
    w, s = reference_draws(n, resamples, seed)
    items = list(range(8))
    for name in GLOBAL:
        def value(run, weights):
            return global_value(name, [(weights[u], l) for u, l in lists[run].items()], items, k)

        def interval(stats):
            stats = [v for v in stats if v is not None]
            return np.quantile(stats, [0.05, 0.95]) if stats else (math.nan, math.nan)

        ones = [1] * n
        for run in ("A", "B"):
            row = result.runs[(result.runs["run"] == run) & (result.runs["metric"] == f"{name}@{k}")].iloc[0]
            low, high = interval([value(run, w[b]) for b in range(resamples)])
            assert close(row["mean"], value(run, ones) if value(run, ones) is not None else math.nan)
            assert row["n_users"] == len(lists[run])
            assert close(row["ci_low"], low) and close(row["ci_high"], high), (name, run)
        diffs = []
        for b in range(resamples):
            a, z = value("B", w[b]), value("A", w[b])
            diffs.append(None if a is None or z is None else a - z)
        low, high = interval(diffs)
        observed_b, observed_a = value("B", ones), value("A", ones)
        row = result.tests[result.tests["metric"] == f"{name}@{k}"].iloc[0]
        assert row["n"] == len(set(lists["A"]) | set(lists["B"]))
        if observed_a is None or observed_b is None:  # personalization of one user: undefined, so is the test
            assert pd.isna(row["mean_diff"]) and pd.isna(row["p_randomization"])
            continue
        extreme = 0
        for b in range(resamples):
            side1 = [(1, lists["B" if s[b, u] == 1 else "A"][u]) for u in range(n) if u in lists["B" if s[b, u] == 1 else "A"]]
            side2 = [(1, lists["A" if s[b, u] == 1 else "B"][u]) for u in range(n) if u in lists["A" if s[b, u] == 1 else "B"]]
            one, two = (global_value(name, side, items, k) for side in (side1, side2))
            if one is not None and two is not None:
                extreme += abs(one - two) >= abs(observed_b - observed_a) - 1e-9 * (abs(observed_b) + abs(observed_a))
        assert close(row["mean_diff"], observed_b - observed_a)
        assert close(row["ci_low"], low) and close(row["ci_high"], high), name
        assert row["p_randomization"] == (1 + extreme) / (resamples + 1), name
        assert all(pd.isna(row[c]) for c in ("t", "p_t", "p_wilcoxon", "effect_size", "wins", "ties", "losses"))


@pytest.mark.parametrize("catalog", [False, True])
def test_global_observed_values_equal_evaluate(catalog):
    """Every global metric of the registry, at two cutoffs: compare's observed value (its sums over
    weight-1 counts) is evaluate's (its sums over the ranked stage), and so is each difference."""
    recs, truth = recs_truth(users=15, seed=4)
    metrics = [f"{name}@{k}" for k in (3, 5) for name in GLOBAL]
    given = dict(catalog=pd.DataFrame({"item_id": sorted(set(recs["item_id"]))[:-3] + [10_000]})) if catalog else {}
    result = recsql.compare(recs, truth, metrics, run_cols="model", resamples=20, **given)
    summary = recsql.evaluate(recs, truth, metrics, run_cols="model", **given).summary.set_index("model")
    assert len(result.runs) == len(metrics) * recs["model"].nunique()
    for _, row in result.runs.iterrows():
        assert close(row["mean"], float(summary.loc[row["run"], row["metric"]])), (row["run"], row["metric"])
    for _, row in result.tests.iterrows():
        want = summary.loc[row["run"], row["metric"]] - summary.loc[row["baseline"], row["metric"]]
        assert close(row["mean_diff"], float(want))


@pytest.mark.parametrize("name", GLOBAL)
def test_global_randomization_p_within_monte_carlo_error_of_every_swap(name):
    """Seven users: the exact p over all 2^7 swaps of users' lists between the runs (between 0.015 and
    0.05 here), and recsql's with 4000 random swaps."""
    n, k = 7, 2
    given = {"A": [[0, 1], [1, 0], [0, 2], [0, 1], [1, 2], [0, 1], [2, 0]],  # few items, often the same
             "B": [[0, 3], [4, 5], [1, 5], [2, 4], [3, 0], [5, 1], [4, 0]]}  # spread over the catalog
    rows = [(m, u, i, float(2 - r)) for m, by_user in given.items() for u, top in enumerate(by_user)
            for r, i in enumerate(top)]
    recs = pd.DataFrame(rows, columns=["model", "user_id", "item_id", "score"])
    lists = {run: top_lists(recs, run, k) for run in ("A", "B")}
    items = list(range(6))
    observed = (global_value(name, [(1, l) for l in lists["B"].values()], items, k)
                - global_value(name, [(1, l) for l in lists["A"].values()], items, k))
    scale = sum(abs(global_value(name, [(1, l) for l in lists[r].values()], items, k)) for r in ("A", "B"))
    hits = 0
    for swap in itertools.product((False, True), repeat=n):
        one = [(1, lists["A" if swap[u] else "B"][u]) for u in range(n)]
        two = [(1, lists["B" if swap[u] else "A"][u]) for u in range(n)]
        hits += abs(global_value(name, one, items, k) - global_value(name, two, items, k)) >= abs(observed) - 1e-9 * scale
    exact = hits / 2**n
    resamples = 4000
    result = recsql.compare(recs, None, [f"{name}@{k}"], run_cols="model", baseline="A", resamples=resamples,
                            catalog=pd.DataFrame({"item_id": items}), tests=("randomization",))
    got = result.tests.iloc[0]["p_randomization"]
    assert 0 < exact < 1
    assert abs(got - exact) <= 4 * math.sqrt(exact * (1 - exact) / resamples) + 2 / resamples, (got, exact)


def test_global_metrics_within_segments_are_the_segments_lists():
    recs, truth = recs_truth(runs=("A", "B"), users=18, seed=8)
    segments = cohorts(18)
    metrics = ["coverage@2", "personalization@2", "gini@3"]  # two cutoffs: two sets of lists per segment
    result = recsql.compare(recs, truth, metrics, run_cols="model", baseline="A", segments=segments, resamples=20)
    for cohort, users in segments.groupby("cohort")["user_id"]:
        part = recs[recs["user_id"].isin(users)]
        alone = recsql.compare(part, truth[truth["user_id"].isin(users)], metrics,
                               run_cols="model", baseline="A", resamples=20,
                               catalog=pd.DataFrame({"item_id": sorted(set(recs["item_id"]) | set(truth["item_id"]))}))
        mine = result.runs[result.runs["cohort"] == cohort].reset_index(drop=True)
        for column in ("run", "metric", "mean", "n_users"):
            assert mine[column].tolist() == alone.runs[column].tolist() if column in ("run", "metric", "n_users") \
                else all(close(a, b) for a, b in zip(mine[column], alone.runs[column])), (cohort, column)


def test_every_engine_gives_the_same_numbers_for_global_metrics(engine):
    recs, truth = recs_truth(text=True, users=14, seed=12)
    metrics = [*(f"{name}@3" for name in GLOBAL), "gini@2", "ndcg@3"]
    options = dict(run_cols="model", resamples=40, seed=6, tests=ALL)
    want = recsql.compare(recs, truth, metrics, **options)
    got = recsql.compare(engine.load(recs), engine.load(truth), metrics, con=engine.con, **options)
    assert_same_tables(got, want, engine.name)


# Spark, ClickHouse and DataFusion run these statements one CTE at a time (recsql/engines/steps.py; their own tests below)
@pytest.mark.parametrize("name", ENGINES)
def test_every_engine_gives_the_same_numbers_for_weighted_global_metrics(name):
    """The global metrics recomputed over weighted lists (with a counted one and a per-user one beside
    them), text ids, three runs every pair, within two segments: the same numbers as DuckDB's, themselves
    the reference's (tests/test_compare_weighted.py)."""
    with ExitStack() as stack:
        _weighted_on(start(name, stack))


@pytest.mark.parametrize("name", ENGINES)
def test_every_engine_gives_the_same_numbers_for_the_off_policy_estimators(name):
    """The off-policy estimators recomputed over resampled logs (with a per-user metric beside them), two slate
    estimators (a resampled context's copies each a slate), text ids, a logged context without a list, three runs
    every pair: the same numbers as DuckDB's, themselves the reference's (tests/test_compare_logged.py)."""
    with ExitStack() as stack:
        _logged_on(start(name, stack))


def _logged_on(engine):
    recs, truth = recs_truth(text=True, users=9, seed=5)
    recs = recs[recs["score"] > 0.3]  # lists of different lengths
    rng = np.random.default_rng(8)
    logs = pd.DataFrame([(f"u{u:02d}", int(i), p, float(rng.choice([0.2, 0.5, 1.0])), float(rng.integers(0, 3)))
                         for u in range(10) for p in (1, 2) for i in rng.choice(8, 1)],
                        columns=["user_id", "item_id", "position", "propensity", "reward"]).astype({"user_id": "string"})
    model = pd.DataFrame([(f"u{u:02d}", i, float(rng.random())) for u in range(10) for i in range(8)],
                         columns=["user_id", "item_id", "reward"]).astype({"user_id": "string"})
    metrics = ["ips", "ips(cap=2)", "snips", "dm", "dr", "switch_dr(tau=2)", "ess", "max_weight", "slate_iips", "pbm_ips",
               "ndcg@3"]
    options = dict(run_cols="model", resamples=20, seed=4, tests=("t", "randomization"))
    want = recsql.compare(recs, truth, metrics, logs=logs, reward_model=model, **options)
    got = recsql.compare(engine.load(recs), engine.load(truth), metrics, logs=engine.load(logs),
                         reward_model=engine.load(model), con=engine.con, **options)
    assert want.tests["ci_low"].notna().sum() >= 20
    assert_same_tables(got, want, engine.name)


def _weighted_on(engine):
    recs, truth = recs_truth(text=True, users=9, seed=5)
    recs = recs[recs["score"] > 0.3]  # lists of different lengths
    items = pd.DataFrame({"item_id": [0, 1, 2, 3, 4, 5, 7, 8], "category": ["x", "y", "x", "z", "y", "x", "z", "y"],
                          "head": pd.array([True, False, True, False, False, True, False, False], dtype="boolean")})
    interactions = pd.DataFrame([(f"u{u:02d}", i) for u in range(11) for i in range(8) if (u * 3 + i * 5) % 7 < 3],
                                columns=["user_id", "item_id"]).astype({"user_id": "string"})
    # the long tail by interactions' share (split=interactions written) and by the items' head flags (head_col)
    metrics = ["exposure_disparity(target=merit)@3", "exposure_gini@3", "exposure_gini(over=groups)@2",
               "exposure_entropy(weight=log)@3", "lt_coverage(split=interactions)@3", "pop_rsp(split=interactions)@3",
               "pop_reo(split=interactions)@2", "lt_coverage@2", "pop_rsp@3", "pop_reo@3", "gini@3", "ndcg@3"]
    options = dict(run_cols="model", resamples=20, seed=4, tests=("t", "randomization"), head_col="head")
    want = recsql.compare(recs, truth, metrics, items=items, interactions=interactions, segments=cohorts(9, text=True),
                          **options)
    got = recsql.compare(engine.load(recs), engine.load(truth), metrics, items=engine.load(items),
                         interactions=engine.load(interactions), segments=engine.load(cohorts(9, text=True)),
                         con=engine.con, **options)
    assert set(want.tests["cohort"]) == {"new", "old"} and want.tests["ci_low"].notna().sum() >= 20
    assert_same_tables(got, want, engine.name)


def assert_same_tables(got, want, where: str) -> None:
    """Two comparisons' runs and tests: the same rows, columns and labels, numbers equal to 1e-9."""
    for mine, theirs in ((got.runs, want.runs), (got.tests, want.tests)):
        assert list(mine.columns) == list(theirs.columns) and len(mine) == len(theirs) > 0
        for column in mine.columns:
            for a, b in zip(mine[column], theirs[column]):
                assert a == b if isinstance(b, str) else close(a, b), (where, column, a, b)


# ---------------------------------------------------------------- run keys in bytewise order


def test_every_engine_orders_text_run_keys_bytewise(engine):
    """Runs 'a', 'B', 'b' and '_': two runs that differ in case stay two, and with baseline=None
    every run is compared with each run before it in bytewise order ('B' < '_' < 'a' < 'b', as
    Python's sorted), whatever the engine's collation."""
    recs, truth = recs_truth(runs=("a", "B", "b", "_"), text=True, users=10, seed=3)
    got = recsql.compare(engine.load(recs), engine.load(truth), ["ndcg@3"], run_cols="model", resamples=20,
                         con=engine.con, tests=("t",))
    order = sorted(["a", "B", "b", "_"])
    assert order == ["B", "_", "a", "b"]
    assert got.runs["run"].tolist() == order and (got.runs["n_users"] == 10).all()
    pairs = [(run, baseline) for i, run in enumerate(order) for baseline in order[:i]]
    assert list(zip(got.tests["run"], got.tests["baseline"])) == pairs
    per_user = recsql.evaluate(recs, truth, ["ndcg@3"], run_cols="model").per_user
    for _, row in got.runs.iterrows():
        assert close(row["mean"], float(per_user[per_user["model"] == row["run"]]["ndcg@3"].mean()))


# ---------------------------------------------------------------- segments in every entry point


def test_segments_in_evaluation_compare_and_to_sql_give_compare_numbers():
    """Evaluation.compare(segments=) and to_sql(compare={'segments': ..., 'segment_cols': ...}) (run on
    SQLite, finished by finish_rows) give recsql.compare(segments=)'s tables."""
    import sqlite3
    from recsql.comparison import finish_rows
    recs, truth = recs_truth(users=24, seed=7, text=True)
    segments = cohorts(24, text=True)
    options = dict(baseline="A", resamples=50, seed=3)
    want = recsql.compare(recs, truth, ["ndcg@5", "recall@5"], run_cols="model", segments=segments, **options)
    assert set(want.tests["cohort"]) == {"new", "old"}
    evaluation = recsql.evaluate(recs, truth, ["ndcg@5", "recall@5"], run_cols="model")
    got = evaluation.compare(segments=segments, **options)
    pd.testing.assert_frame_equal(got.tests, want.tests)
    pd.testing.assert_frame_equal(got.runs, want.runs)
    con = sqlite3.connect(":memory:")
    for name, table in (("recs", recs), ("truth", truth), ("cohorts", segments)):
        table.astype(object).to_sql(name, con, index=False)
    sql = recsql.to_sql(metrics=["ndcg@5", "recall@5"], run_cols="model", dialect="sqlite", text_ids=["user_id", "model"],
                        relevance_col=None, compare={**options, "segments": "cohorts", "segment_cols": "cohort"})
    rows = pd.read_sql_query(sql, con)
    again = finish_rows(rows, ["ndcg@5", "recall@5"], "model", segment_cols="cohort", **options)
    assert_same_tables(again, want, "to_sql on SQLite")
    with pytest.raises(recsql.RecsqlError, match="segment columns"):
        recsql.to_sql(metrics=["ndcg@5"], run_cols="model", compare={"segments": "cohorts"})
    with pytest.raises(recsql.RecsqlError, match="no row in segments"):
        evaluation.compare(segments=segments.iloc[1:], resamples=10)


def test_global_metrics_refused_by_evaluation_compare_with_the_way_to_compare_them():
    recs, truth = recs_truth()
    with pytest.raises(recsql.RecsqlError, match="personalization@5.*global.*recsql.compare"):
        recsql.evaluate(recs, truth, ["ndcg@5", "personalization@5"], run_cols="model").compare()


def test_the_input_checks_follow_the_inputs_given_with_the_same_options():
    """Two comparisons with the same options, the first with items and the second without: the second
    reads only the checks of the inputs it has (the checks' memo is keyed by the inputs given, as the
    statement is), so it neither fails nor reports an items check."""
    recs, truth = recs_truth(text=True, users=6, seed=2)
    items = pd.DataFrame({"item_id": list(range(8)), "category": list("xyzxyzxy")})
    options = dict(run_cols="model", resamples=10, seed=1, tests=("t",))
    with_items = recsql.compare(recs, truth, ["ndcg@3"], items=items, **options)
    without = recsql.compare(recs, truth, ["ndcg@3"], **options)
    pd.testing.assert_frame_equal(with_items.tests, without.tests)  # items are not read by ndcg
    assert "items_invalid_rows" not in without.sql and "items_invalid_rows" in with_items.sql
