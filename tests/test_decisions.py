"""Decisions from a comparison (recsql/decisions.py, recsql/comparison_decisions.py): the paired t-test's
power, the smallest detectable difference and the users needed, against statsmodels' TTestPower;
non-inferiority and equivalence (TOST), against scipy's one-sided t-tests and statsmodels'
ttost_paired on the same per-user differences; hand-worked cases; bad options refused."""
from __future__ import annotations

import math
import re
from pathlib import Path

import mpmath
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats
from statsmodels.stats.power import TTestPower
from statsmodels.stats.weightstats import DescrStatsW, ttost_paired

import recsql
from recsql.comparison_result import Comparison
from recsql.comparison_run import compare_per_user
from recsql.comparison_settings import Settings
from recsql.decisions import detectable, one_sided_t, t_power, users_needed
from recsql.errors import RecsqlError
from recsql.power_simulation import Simulation, detectable as sim_detectable, simulated_power
from support.paired import close, paired

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")


def comparison_of(x: list[float], y: list[float], correction=None) -> Comparison:
    """A Comparison of run B (values ``x``) against run A (``y``), user by user, through compare's SQL."""
    values = pd.DataFrame({"model": ["B"] * len(x) + ["A"] * len(y), "user_id": [*range(len(x)), *range(len(y))],
                           "m": [*x, *y]})
    chosen = Settings.checked(("t",), 0.95, 20, 0, correction, "A")
    tables, _ = compare_per_user(values, ["m"], ["model"], "user_id", chosen)
    return Comparison(tables=tables, metrics=[], settings=chosen)


# ---------------------------------------------------------------- power

@settings(max_examples=60, deadline=None)
@given(st.floats(0.001, 3), st.integers(2, 20000), st.floats(1e-4, 0.2))
def test_power_equals_statsmodels(d, n, alpha):
    """Equal to statsmodels where it has a number; where scipy's noncentral t CDF gives NaN in a far
    tail (and statsmodels with it), equal to the upper tail plus the lower one integrated by mpmath at
    40 digits from the definition T' = (Z + δ)/√(V/df)."""
    want = float(TTestPower().power(d, n, alpha))
    if math.isnan(want):
        c, nc, df = stats.t.isf(alpha / 2, n - 1), d * math.sqrt(n), n - 1
        mpmath.mp.dps = 40
        density = lambda v: mpmath.exp((df / 2 - 1) * mpmath.log(v) - v / 2 - (df / 2) * mpmath.log(2)  # noqa: E731
                                       - mpmath.loggamma(df / 2))
        cdf = lambda x: mpmath.quad(lambda v: mpmath.ncdf(x * mpmath.sqrt(v / df) - nc) * density(v),  # noqa: E731
                                    [0, df / 4, df / 2, df, 2 * df, 4 * df, mpmath.inf])
        want = float(1 - cdf(c) + cdf(-c))
    assert close(t_power(d, n, alpha), want, tol=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.floats(0, 3), st.integers(2, 100_000), st.floats(1e-4, 0.2))
def test_a_lower_tail_the_power_skips_could_not_change_it(d, n, alpha):
    """t_power leaves out P(T' < −c) where Φ(−nc) bounds it below a quarter of the upper tail's last place: the
    double is the one the whole sum gives (computed here with scipy.stats' noncentral t for both tails)."""
    from scipy.special import stdtrit
    c = -float(stdtrit(n - 1, alpha / 2))
    whole = 1.0 - stats.nct.cdf(c, n - 1, d * math.sqrt(n)) + stats.nct.cdf(-c, n - 1, d * math.sqrt(n))
    if not math.isnan(whole):
        assert t_power(d, n, alpha) == whole


def test_the_detectable_differences_of_a_report_need_no_integral():
    """At the fixture's sizes the far lower tails (where scipy's noncentral t is NaN and an integral would be
    needed) are below the upper tail's last place: no integral, and scipy.integrate is not imported."""
    import subprocess
    import sys
    probe = ("import sys\nfrom recsql.decisions import detectable, users_needed\n"
             "[detectable(n, 0.05, 0.8) for n in (3, 30, 289, 10_000)]\nusers_needed(0.1, 0.05, 0.8)\n"
             "print('scipy.integrate' in sys.modules, 'scipy.optimize' in sys.modules)")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert ran.stdout.split() == ["False", "False"], ran.stderr


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 5000), st.floats(1e-3, 0.1), st.floats(0.5, 0.99))
def test_the_detectable_difference_solves_the_power_equation(n, alpha, power):
    """At recsql's root the power is the target to 1e-9; statsmodels' own solver stops near 1e-6 of
    it (so the roots agree to 1e-4 relative, not further)."""
    d = detectable(n, alpha, power)
    assert abs(t_power(d, n, alpha) - power) < 1e-9
    theirs = float(np.ravel(TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power))[0])
    if abs(TTestPower().power(theirs, n, alpha) - power) < 1e-6:  # where statsmodels' solver converged
        assert math.isclose(d, abs(theirs), rel_tol=1e-4)  # its two-sided root may come out negative


@settings(max_examples=25, deadline=None)
@given(st.floats(0.02, 2), st.floats(1e-3, 0.1), st.floats(0.5, 0.99))
def test_users_needed_solves_the_power_equation(d, alpha, power):
    n = users_needed(d, alpha, power)
    if n == 2.0:
        assert t_power(d, 2, alpha) >= power
        return
    assert abs(t_power(d, n, alpha) - power) < 1e-9
    theirs = float(np.ravel(TTestPower().solve_power(effect_size=d, nobs=None, alpha=alpha, power=power))[0])
    if abs(TTestPower().power(d, theirs, alpha) - power) < 1e-6:  # where statsmodels' solver converged
        assert math.isclose(n, theirs, rel_tol=1e-4)


def test_cohens_table():
    """Cohen (1988), Table 2.4.1: a one-sample (paired) two-sided t-test at 0.05 needs 34 users for
    power 0.80 at d = 0.5, and 199 at d = 0.2 (n rounded up)."""
    assert math.ceil(users_needed(0.5, 0.05, 0.8)) == 34
    assert math.ceil(users_needed(0.2, 0.05, 0.8)) == 199


# ---------------------------------------------------------------- simulated power (Wilcoxon, randomization)

def _independent_power(d, shift, n, alpha, test, simulations, flips, seed):
    """The same model simulated apart from recsql: scipy's Wilcoxon, or a plain sign-flip loop, on
    users drawn with another generator."""
    rng = np.random.default_rng(seed)
    d = np.asarray(d)
    if test == "wilcoxon":  # the Hodges-Lehmann estimate: the median of the Walsh averages
        i, j = np.triu_indices(len(d))
        centered = d - np.median((d[i] + d[j]) / 2)
    else:
        centered = d - np.mean(d)
    rejected = 0
    for _ in range(simulations):
        x = centered[rng.integers(0, len(d), n)] + shift
        if test == "wilcoxon":
            x = np.round(x * 1e12) / 1e12
            p = np.nan if not np.any(x) else stats.wilcoxon(x, zero_method="wilcox", correction=False,
                                                             method="approx").pvalue
        else:
            signs = rng.choice([-1.0, 1.0], size=(flips, n))
            extreme = np.sum(np.abs(signs @ x) >= abs(x.sum()) - 1e-9 * np.abs(x).sum())
            p = (1 + extreme) / (flips + 1)
        rejected += bool(p < alpha)
    return rejected / simulations


@pytest.mark.parametrize("test", ["wilcoxon", "randomization"])
@pytest.mark.parametrize("shape, shift", [("normal", 0.0), ("normal", 0.08), ("zeros", 0.05), ("skewed", 0.1)])
def test_simulated_power_is_within_monte_carlo_error_of_an_independent_simulation(test, shape, shift):
    """Pilots of three shapes (normal; most users unchanged; skewed), under the null and away from it: the
    power recsql simulates and scipy's tests simulated apart agree within 4.5 Monte Carlo standard errors
    of their difference."""
    rng = np.random.default_rng(7)
    d = {"normal": rng.normal(0.02, 0.2, 80), "zeros": np.where(rng.random(80) < 0.6, 0.0, rng.normal(0.1, 0.3, 80)),
         "skewed": rng.exponential(0.2, 80) - 0.15}[shape]
    mine = simulated_power(d, shift, 60, 0.05, test, 2000, 3, flips=200)
    theirs = _independent_power(d, shift, 60, 0.05, test, 2000, 200, 11)
    pooled = (mine + theirs) / 2
    assert abs(mine - theirs) <= 4.5 * math.sqrt(2 * max(pooled * (1 - pooled), 0.01) / 2000) + 1e-12, (mine, theirs)


def test_simulated_power_holds_its_size_and_tracks_the_t_test_on_normal_differences():
    """Under the null the rejection rate is alpha (within Monte Carlo error); on normal differences the
    Wilcoxon and randomization tests detect about what the t-test does (their efficiency is 0.955 and 1)."""
    d = np.random.default_rng(5).normal(0.0, 0.2, 400)
    for test in ("wilcoxon", "randomization"):
        size = simulated_power(d, 0.0, 400, 0.05, test, 2000, 1, flips=400)
        assert abs(size - 0.05) <= 4 * math.sqrt(0.05 * 0.95 / 2000)
        found = sim_detectable(d, 400, 0.05, 0.8, test, 1000, 1, flips=400)
        expected = detectable(400, 0.05, 0.8) * float(np.std(d, ddof=1))
        assert 0.93 * expected <= found <= 1.1 * expected, (test, found, expected)


def test_the_simulations_draw_from_recsqls_portable_streams():
    """Simulated user j of simulation b is pilot user ⌊u·n₀/P⌋ and flip b of user j is +1 for an even u,
    u = MIX((MIX((key + b·48271) mod P) + MIX((j·69621 + 12345) mod P)) mod P), key = MIX((seed·1103515245 +
    stream) mod P), streams 4 (users) and 5 (flips), as the README's formula for compare's draws."""
    p = 2_147_483_647

    def mix(x):
        return pow(x, 5, p)

    d, seed = np.arange(7.0), 3
    simulation = Simulation(d, 5, "randomization", 4, seed, 6)
    for stream, rows, got in ((4, 4, simulation.users), (5, 6, simulation.signs)):
        key = mix((seed * 1_103_515_245 + stream) % p)
        for b in range(1, rows + 1):
            for j in range(1, 6):
                u = mix((mix((key + b * 48_271) % p) + mix((j * 69_621 + 12_345) % p)) % p)
                assert got[b - 1, j - 1] == (u * 7 // p if stream == 4 else 1 - 2 * (u % 2))


def test_the_simulated_detectable_difference_is_where_the_power_reaches_the_target():
    d = np.random.default_rng(9).normal(0.01, 0.3, 50)
    for test in ("wilcoxon", "randomization"):
        simulation = Simulation(d, 50, test, 500, 2, 300)
        found = sim_detectable(d, 50, 0.05, 0.8, test, 500, 2, flips=300)
        assert simulation.power(found, 0.05) >= 0.8 > simulation.power(found * (1 - 2e-4), 0.05)


def test_a_fixture_comparison_simulated_from_its_evaluation():
    """compare on the fixture, its power for Wilcoxon and randomization simulated from evaluate's per-user
    values: the pairs' users are compare's, the numbers are the simulation's on the per-user differences,
    a global metric's row is empty, and the table is the same on a second call."""
    metrics = ["ndcg@10", "coverage@10"]
    evaluation = recsql.evaluate(RECS, TRUTH, metrics, run_cols="model")
    comparison = recsql.compare(RECS, TRUTH, metrics, run_cols="model", baseline="popular", resamples=200)
    wide = evaluation.per_user.pivot(index="user_id", columns="model")
    both = wide[[("ndcg@10", "personal"), ("ndcg@10", "popular")]].dropna()
    d = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()
    for test in ("wilcoxon", "randomization"):
        table = comparison.power(0.8, difference=0.05, test=test, pilot=evaluation, simulations=300)
        row = table[table["metric"] == "ndcg@10"].iloc[0]
        assert row["n"] == len(d) == comparison.tests.iloc[0]["n"]
        level = row["alpha_per_test"]
        assert level == 0.05  # one pair with per-user differences: the correction divides by 1
        assert row["power_now"] == simulated_power(d, 0.05, len(d), level, test, 300, 0, flips=200)
        assert close(row["power_se"], math.sqrt(row["power_now"] * (1 - row["power_now"]) / 300))
        assert row["detectable"] == sim_detectable(d, len(d), level, 0.8, test, 300, 0, flips=200)
        assert table[table["metric"] == "coverage@10"][["detectable", "power_now"]].isna().all(axis=None)
        assert table.equals(comparison.power(0.8, difference=0.05, test=test, pilot=evaluation, simulations=300))


@pytest.mark.parametrize("call, named", [
    (lambda c, e: c.power(test="wilcoxon"), "pass pilot="),
    (lambda c, e: c.power(test="sign", pilot=e), "test='sign'"),
    (lambda c, e: c.power(test="wilcoxon", pilot=e, simulations=10), "simulations=10"),
    (lambda c, e: c.power(test="randomization", pilot=recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model",
                                                                       threshold=3)), "pairs"),
])
def test_bad_simulation_options_are_refused_by_name(call, named):
    comparison = recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", baseline="popular", resamples=20)
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model")
    with pytest.raises(RecsqlError, match=re.escape(named)):
        call(comparison, evaluation)


# ---------------------------------------------------------------- non-inferiority and equivalence

def test_worked_one_sided_t():
    """Differences 0.1, 0.2, 0, 0.3 (mean 0.15; deviations ±0.05, ±0.15, so s² = 0.05/3, s = 0.129099,
    s/√4 = 0.0645497) against a margin of 0.05: t = (0.15 + 0.05) / 0.0645497 = 3.0984; with 3 degrees
    of freedom t_{0.95} = 2.353 < t < t_{0.975} = 3.182 (a t table), so 0.025 < p < 0.05."""
    t, p = one_sided_t(4, 0.15, math.sqrt(0.05 / 3), -0.05, greater=True)
    assert round(t, 4) == 3.0984 and 0.025 < p < 0.05


@settings(max_examples=40, deadline=None)
@given(paired(), st.integers(1, 32).map(lambda k: k / 64), st.booleans())
def test_noninferiority_equals_scipy_one_sided_t(xy, margin, lower_better):
    x, y = xy
    d = np.subtract(x, y)
    table = comparison_of(x, y).noninferiority(margin, lower_is_better=("m",) if lower_better else ())
    row = table.iloc[0]
    if np.std(d) == 0:  # every difference equal: scipy gives NaN where recsql gives ±inf (p 0 or 1)
        return
    want = stats.ttest_1samp(d, margin if lower_better else -margin, alternative="less" if lower_better else "greater")
    assert close(row["t"], float(want.statistic)) and close(row["p"], float(want.pvalue))
    low, high = DescrStatsW(d).tconfint_mean(alpha=0.1)  # the one-sided 95% bound is a side of the 90% interval
    assert close(row["bound"], high if lower_better else low)
    assert row["noninferior"] == (want.pvalue < 0.05)
    assert row["better"] == ("lower" if lower_better else "higher")


@settings(max_examples=40, deadline=None)
@given(paired(min_users=3), st.integers(1, 32).map(lambda k: k / 64))
def test_equivalence_equals_statsmodels_tost(xy, margin):
    x, y = xy
    d = np.subtract(x, y)
    if np.std(d) == 0:
        return
    row = comparison_of(x, y).equivalence(margin).iloc[0]
    p, lower, upper = ttost_paired(np.asarray(x, float), np.asarray(y, float), -margin, margin)
    assert close(row["p"], float(p)) and close(row["p_lower"], float(lower[1])) and close(row["p_upper"], float(upper[1]))
    low, high = DescrStatsW(d).tconfint_mean(alpha=0.1)
    assert close(row["ci_low"], low) and close(row["ci_high"], high)
    assert row["equivalent"] == (p < 0.05)


def test_a_fixture_comparison_end_to_end():
    """On the fixture: the pairs' non-inferiority rows are scipy's one-sided tests on the per-user
    differences evaluate gives, Holm-corrected; a relative margin is a share of the baseline's mean;
    the power table's level is alpha over the pairs; a global metric's rows are NaN."""
    recs, truth = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")
    metrics = ["ndcg@10", "recall@20", "coverage@10"]
    comparison = recsql.compare(recs, truth, metrics, run_cols="model", baseline="popular", resamples=20)
    per_user = recsql.evaluate(recs, truth, metrics[:2], run_cols="model").per_user
    wide = per_user.pivot(index="user_id", columns="model")
    table = comparison.noninferiority(0.1, relative=True)
    p_values = []
    for metric in metrics[:2]:
        d = (wide[(metric, "personal")] - wide[(metric, "popular")]).to_numpy()
        baseline_mean = float(comparison.runs.set_index(["run", "metric"]).loc[("popular", metric), "mean"])
        row = table[table["metric"] == metric].iloc[0]
        assert close(row["margin"], 0.1 * abs(baseline_mean)) and row["n"] == len(d)
        want = stats.ttest_1samp(d, -row["margin"], alternative="greater")
        assert close(row["t"], float(want.statistic)) and close(row["p"], float(want.pvalue))
        p_values.append(float(want.pvalue))
    holm = sorted(p_values)
    assert close(table["p_adj"].iloc[:2].min(), min(1.0, 2 * holm[0]))
    global_row = table[table["metric"] == "coverage@10"].iloc[0]
    assert pd.isna(global_row["p"]) and pd.isna(global_row["noninferior"])
    power = comparison.power(0.8, 0.05, difference=0.05)
    assert (power["alpha_per_test"] == 0.025).all()
    row = power[power["metric"] == "ndcg@10"].iloc[0]
    assert close(row["detectable_d"], detectable(int(row["n"]), 0.025, 0.8))
    assert close(row["detectable"], row["detectable_d"] * row["sd_diff"])
    assert close(row["power_now"], t_power(0.05 / row["sd_diff"], int(row["n"]), 0.025))
    assert row["users_needed"] == math.ceil(users_needed(0.05 / row["sd_diff"], 0.025, 0.8))
    assert power[power["metric"] == "coverage@10"][["detectable", "power_now", "users_needed"]].isna().all(axis=None)


@pytest.mark.parametrize("call, named", [
    (lambda c: c.power(1.5), "power=1.5"), (lambda c: c.power(alpha=0), "alpha=0"),
    (lambda c: c.power(difference=-1), "difference=-1"), (lambda c: c.noninferiority(0), "margin=0"),
    (lambda c: c.noninferiority(0.1, lower_is_better="ndcg@5"), "'ndcg@5' is not a metric"),
    (lambda c: c.equivalence(float("nan")), "margin=nan")])
def test_bad_decision_options_are_refused_by_name(call, named):
    comparison = comparison_of([0.1, 0.2, 0.4], [0.0, 0.2, 0.1])
    with pytest.raises(RecsqlError, match=named.replace("(", r"\(").replace("[", r"\[")):
        call(comparison)


# ---------------------------------------------------------------- the command line: tables and gates

COMPARE = ["compare", RECS, TRUTH, "-m", "ndcg@10", "-m", "coverage@10", "--run-col", "model", "--baseline", "popular",
           "--resamples", "50"]


def run_cli(capsys, *extra: str) -> tuple[int, str, str]:
    from recsql.cli import main
    status = main([*COMPARE, *extra])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("condition, fails", [
    ("ndcg@10 worse by 0.01", True),           # personal is 0.29 below popular
    ("ndcg@10 worse than baseline by 0.5", False),
    ("ndcg@10 worse by 50%", True),            # 0.29 is 97% of popular's 0.30
    ("ndcg@10 worse by 99%", False),
    ("ndcg@10 significant loss", True),
    ("coverage@10 significant loss", False),    # personal covers more
    ("coverage@10 worse by 0.01", False),
    ("coverage@10 worse by 0.01", False),
    ("ndcg@10 not noninferior by 0.5", False),  # the bound -0.31 is above -0.5
    ("ndcg@10 not noninferior by 0.1", True),
    ("any not noninferior by 0.5", True),       # coverage@10 is global: non-inferiority cannot be shown
])
def test_fail_if_exits_1_exactly_when_a_condition_holds(capsys, condition, fails):
    status, _, err = run_cli(capsys, "--fail-if", condition)
    assert status == (1 if fails else 0), err
    failing = [line for line in err.splitlines() if line.startswith(f"recsql: --fail-if {condition}: ")]
    assert bool(failing) == fails and all("personal vs popular" in line for line in failing)


def test_lower_is_better_turns_the_gate_around(capsys):
    status, _, err = run_cli(capsys, "--fail-if", "ndcg@10 significant loss", "--lower-is-better", "ndcg@10")
    assert status == 0, err
    status, _, err = run_cli(capsys, "--fail-if", "coverage@10 worse by 0.1", "--lower-is-better", "coverage@10")
    assert status == 1 and "difference +0.818" in err


def test_decision_tables_print_as_the_python_tables(capsys):
    status, out, _ = run_cli(capsys, "--power", "0.8", "--difference", "0.01", "--margin", "2%", "--format", "json")
    assert status == 0
    import json
    decoder, printed, at = json.JSONDecoder(), [], 0
    while at < len(out.strip()):  # three JSON arrays, one after the other
        table, at = decoder.raw_decode(out.strip(), at)
        printed.append(table)
        at += len(out.strip()[at:]) - len(out.strip()[at:].lstrip())
    comparison = recsql.compare(RECS, TRUTH, ["ndcg@10", "coverage@10"], run_cols="model", baseline="popular",
                                resamples=50)
    power = comparison.power(0.8, 0.05, 0.01)
    noninferiority = comparison.noninferiority(0.02, relative=True)
    assert len(printed) == 3  # the tests, the power table, the non-inferiority table
    assert printed[1][0]["users_needed"] == power["users_needed"].iloc[0]
    assert printed[2][0]["p"] == pytest.approx(noninferiority["p"].iloc[0], abs=0)
    assert printed[2][0]["margin"] == pytest.approx(0.02 * 0.302031, rel=1e-5)


def test_the_simulated_power_prints_as_the_python_table(capsys):
    """--power-test wilcoxon: the command line's table is the Python one with the evaluation of the same runs
    as the pilot."""
    import json
    status, out, _ = run_cli(capsys, "--power", "0.8", "--difference", "0.05", "--power-test", "wilcoxon",
                             "--simulations", "200", "--format", "json")
    assert status == 0
    decoder = json.JSONDecoder()
    _, at = decoder.raw_decode(out.strip())
    printed, _ = decoder.raw_decode(out.strip()[at:].lstrip())
    comparison = recsql.compare(RECS, TRUTH, ["ndcg@10", "coverage@10"], run_cols="model", baseline="popular",
                                resamples=50)
    pilot = recsql.evaluate(RECS, TRUTH, ["ndcg@10", "coverage@10"], run_cols="model")
    table = comparison.power(0.8, 0.05, 0.05, test="wilcoxon", pilot=pilot, simulations=200)
    assert printed[0]["test"] == "wilcoxon" and printed[0]["n"] == table["n"].iloc[0]
    assert printed[0]["power_now"] == table["power_now"].iloc[0]
    assert printed[0]["detectable"] == pytest.approx(table["detectable"].iloc[0], abs=0)
    assert printed[0]["users_needed"] == table["users_needed"].iloc[0]


@pytest.mark.parametrize("extra, named", [
    (["--fail-if", "ndcg@10 worse by 0.01", "--lower-is-better", "ndcg@5"], "'ndcg@5' is not a metric"),
    (["--fail-if", "any significant loss", "--lower-is-better", "coverage@5"], "'coverage@5' is not a metric"),
    (["--fail-if", "ndcg@10 is bad"], "--fail-if 'ndcg@10 is bad': write one of"),
    (["--fail-if", "ndcg@5 worse by 0.1"], "'ndcg@5' is not a compared metric"),
    (["--margin", "two"], "--margin 'two'"), (["--difference", "0.1"], "--difference needs --power"),
    (["--equivalence"], "--equivalence needs --margin"), (["--power", "2"], "power=2.0"),
    (["--power-test", "wilcoxon"], "--power-test wilcoxon needs --power"),
    (["--power", "0.8", "--power-test", "randomization", "--simulations", "5"], "--simulations 5")])
def test_bad_decision_flags_exit_2_naming_the_flag(capsys, extra, named):
    status, _, err = run_cli(capsys, *extra)
    assert status == 2 and named in err and "Traceback" not in err


def test_compare_help_names_the_decision_flags(capsys):
    from recsql.cli import main
    with pytest.raises(SystemExit) as done:
        main(["compare", "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "option_strings" not in out
    assert "with % a share of the baseline's mean (e.g. 0.01 or 2%)" in " ".join(out.split())
    for flag in ("--power P", "--difference D", "--margin M", "--equivalence", "--lower-is-better METRIC",
                 "--fail-if CONDITION"):
        assert flag in out


def test_within_segments_each_segment_has_its_own_rows_and_relative_margin():
    truth, recs = pd.read_parquet(TRUTH), pd.read_parquet(RECS)
    users = sorted(set(truth["user_id"]) | set(recs["user_id"]))
    halves = pd.DataFrame({"user_id": users, "half": ["odd" if u % 2 else "even" for u in users]})
    comparison = recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", baseline="popular", segments=halves,
                                resamples=20)
    table = comparison.noninferiority(0.5, relative=True)
    means = comparison.runs.set_index(["half", "run"])["mean"]
    assert sorted(table["half"]) == ["even", "odd"]
    for _, row in table.iterrows():
        assert close(row["margin"], 0.5 * means[(row["half"], "popular")])
        tests_row = comparison.tests[comparison.tests["half"] == row["half"]].iloc[0]
        assert row["n"] == tests_row["n"] and close(row["mean_diff"], tests_row["mean_diff"])
    assert list(comparison.power(0.8).columns[:4]) == ["half", "run", "baseline", "metric"]
