"""The decision tables of a :class:`recsql.Comparison` (its ``power``, ``noninferiority`` and
``equivalence``): the functions of :mod:`recsql.decisions` applied to each pair of its ``tests`` table,
from the pair's users ``n``, mean difference ``mean_diff`` and standard deviation of differences
``sd_diff``. Global metrics (one number per run) have no per-user differences: their rows are NaN.
Choices and their reasons: docs/guide/decisions.md."""
from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

import pandas as pd

from .decisions import detectable, one_sided_t, t_power, t_quantile, users_needed
from . import power_simulation
from .report.data import run_label
from .errors import RecsqlError
from .report.data import segment_columns
from .gates import Gate
from .significance import corrected


def _level(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 1:
        raise RecsqlError(f"{name}={value!r}: pass a number between 0 and 1, e.g. {name}="
                          f"{'0.8' if name == 'power' else '0.05'}")
    return float(value)


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < math.inf:
        raise RecsqlError(f"{name}={value!r}: pass a positive number in the metric's units (or, with "
                          f"relative=True, a share of the baseline's mean), e.g. {name}=0.01")
    return float(value)


def _keys(comparison: Any) -> pd.DataFrame:
    """Each pair's key columns (segments, run, baseline, metric), one row per row of ``tests``."""
    tests = comparison.tests
    return tests[[*segment_columns(comparison), "run", "baseline", "metric"]].reset_index(drop=True)


def _pairs(comparison: Any) -> tuple[list[int], list[float], list[float]]:
    """Each pair's users n, mean difference and standard deviation of differences."""
    tests = comparison.tests
    return ([int(v) for v in tests["n"]], [float(v) for v in tests["mean_diff"]],
            [float(v) for v in tests["sd_diff"]])


def _margins(comparison: Any, margin: float, relative: bool) -> list[float]:
    """Each pair's absolute margin: ``margin``, or ``margin`` × |the baseline's mean| when relative."""
    tests = comparison.tests
    if not relative:
        return [margin] * len(tests)
    segments = segment_columns(comparison)
    means = {(*(r[c] for c in segments), r["run"], r["metric"]): float(r["mean"])
             for _, r in comparison.runs.iterrows()}
    return [margin * abs(means.get((*(r[c] for c in segments), r["baseline"], r["metric"]), math.nan))
            for _, r in tests.iterrows()]


def lower_is_better_set(comparison: Any, value: Any) -> set[str]:
    """The metrics named in ``value`` (a name or several) where lower is better; a name that is not a
    metric of ``comparison`` is refused (a mistyped one would turn no direction around)."""
    names = {value} if isinstance(value, str) else set(value or ())
    metrics = list(dict.fromkeys(comparison.tests["metric"]))
    unknown = sorted(names - set(metrics))
    if unknown:
        raise RecsqlError(f"lower_is_better: {unknown[0]!r} is not a metric of this comparison; its metrics "
                          f"are {', '.join(metrics)}")
    return names


def _reach(n: int, sd: float, level: float) -> float:
    """t_{level, n−1}·s/√n: the distance from the mean difference to its one-sided ``level`` bound."""
    return t_quantile(n, level) * sd / math.sqrt(n) if n >= 2 else math.nan


def _verdicts(table: pd.DataFrame, column: str, correction: str | None, alpha: float) -> pd.DataFrame:
    """``table`` with ``p_adj`` after ``p`` (the comparison's correction) and ``column``: p_adj < alpha."""
    table.insert(table.columns.get_loc("p") + 1, "p_adj", corrected(table["p"].tolist(), correction))
    table[column] = [pd.NA if math.isnan(p) else bool(p < alpha) for p in table["p_adj"]]
    return table


def power_table(comparison: Any, power: float, alpha: float, difference: float | None, test: str = "t",
                pilot: Any = None, simulations: int = 1000) -> pd.DataFrame:
    """:meth:`recsql.Comparison.power`'s table: the paired t-test's from each pair's n and sd_diff, or the
    Wilcoxon or randomization test's simulated from the pilot's per-user differences
    (:mod:`recsql.power_simulation`)."""
    alpha, target = _level("alpha", alpha), _level("power", power)
    if difference is not None:
        difference = _positive("difference", difference)
    n, _, sd = _pairs(comparison)
    defined = sum(1 for k, s in zip(n, sd) if k >= 2 and not math.isnan(s))
    per_test = alpha / defined if comparison.settings.correction is not None and defined else alpha
    if test != "t":
        return pd.concat([_keys(comparison), simulated_table(comparison, target, per_test, difference, test, pilot,
                                                             simulations)], axis=1)
    rows = []
    for k, s in zip(n, sd):
        d = detectable(k, per_test, target) if k >= 2 and not math.isnan(s) else math.nan
        row = {"n": k, "sd_diff": s, "alpha_per_test": per_test, "detectable": d * s, "detectable_d": d}
        if difference is not None:
            effect = difference / s if s > 0 else (math.inf if s == 0 else math.nan)
            row["power_now"] = (t_power(effect, k, per_test) if k >= 2 and math.isfinite(effect)
                                else (1.0 if effect == math.inf and k >= 2 else math.nan))
            needed = users_needed(effect, per_test, target) if math.isfinite(effect) else \
                (2.0 if effect == math.inf else math.nan)
            row["users_needed"] = math.ceil(needed) if math.isfinite(needed) else needed
        rows.append(row)
    return pd.concat([_keys(comparison), _whole_users(pd.DataFrame(rows))], axis=1)


def _whole_users(table: pd.DataFrame) -> pd.DataFrame:
    if "users_needed" in table and not table["users_needed"].isin([math.inf]).any():
        table["users_needed"] = table["users_needed"].astype("Int64")  # whole users
    return table


def _pilot_differences(comparison: Any, pilot: Any, test: str) -> list[Any]:
    """Each pair's per-user differences (run − baseline over the users with both values, as compare pairs
    them) from ``pilot``, the evaluation of the comparison's runs; None for a global metric's pair."""
    if pilot is None or not hasattr(pilot, "per_user"):
        raise RecsqlError(f"power(test={test!r}) simulates from each pair's per-user differences: pass pilot=, the "
                          f"evaluation of these runs (recsql.evaluate(recs, truth, metrics, run_cols=...), or the "
                          f"Evaluation this comparison came from)")
    if segment_columns(comparison):
        raise RecsqlError(f"power(test={test!r}) of a comparison within segments is not simulated yet; use "
                          f"test='t', or compare one segment's users at a time")
    per_user, run_cols = pilot.per_user, list(pilot.run_cols)
    labels = per_user[run_cols].apply(lambda r: run_label(list(r), run_cols), axis=1) if run_cols else None
    found = []
    for _, row in comparison.tests.iterrows():
        metric = row["metric"]
        if metric not in per_user.columns:
            found.append(None)  # a global metric (one number per run) or one the pilot lacks: no differences
            continue
        sides = [per_user.loc[labels == run, [pilot.user_col, metric]].set_index(pilot.user_col)[metric]
                 for run in (row["run"], row["baseline"])]
        both = pd.concat(sides, axis=1, join="inner").dropna()
        d = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy(dtype=float)
        if len(d) != int(row["n"]):
            raise RecsqlError(f"pilot: {row['run']} vs {row['baseline']} ({metric}) pairs {len(d)} users in the pilot "
                              f"and {int(row['n'])} in the comparison; pass the evaluation of the same runs, inputs "
                              f"and options")
        found.append(d)
    return found


def simulated_table(comparison: Any, target: float, per_test: float, difference: float | None, test: str,
                    pilot: Any, simulations: int) -> pd.DataFrame:
    """The power table of the Wilcoxon or randomization test, simulated from the pilot's differences."""
    if test not in power_simulation.TESTS:
        raise RecsqlError(f"test={test!r}: pass 't' (the paired t-test, computed exactly) or one of "
                          f"{', '.join(repr(t) for t in power_simulation.TESTS)} (simulated from pilot=)")
    if isinstance(simulations, bool) or not isinstance(simulations, numbers.Integral) or simulations < 100:
        raise RecsqlError(f"simulations={simulations!r}: pass a whole number of simulated comparisons, at least 100 "
                          f"(e.g. simulations=1000: a power's Monte Carlo error is then at most 0.016)")
    seed, flips = comparison.settings.seed, comparison.settings.resamples
    if test == "randomization" and 1 / (flips + 1) >= per_test:
        raise RecsqlError(f"power(test='randomization'): with resamples={flips} no p-value falls below the level "
                          f"{per_test:.3g} (the least is 1/(resamples + 1)); compare with more resamples")
    rows = []
    for d in _pilot_differences(comparison, pilot, test):
        row: dict[str, Any] = {"n": math.nan if d is None else len(d), "test": test, "simulations": simulations,
                               "alpha_per_test": per_test, "detectable": math.nan}
        if difference is not None:
            row.update(power_now=math.nan, power_se=math.nan, users_needed=math.nan)
        if d is not None and len(d) >= 2:
            args = (test, simulations, seed, flips)
            simulation = power_simulation.Simulation(d, len(d), *args)  # one draw of users and flips for both
            row["detectable"] = simulation.detectable(per_test, target)
            if difference is not None:
                now = simulation.power(difference, per_test)
                row.update(power_now=now, power_se=math.sqrt(now * (1 - now) / simulations),
                           users_needed=power_simulation.users_needed(d, difference, per_test, target, *args))
        rows.append(row)
    table = pd.DataFrame(rows)
    table["n"] = table["n"].astype("Int64")
    return _whole_users(table)


def noninferiority_table(comparison: Any, margin: float, relative: bool, alpha: float,
                         lower_is_better: Any) -> pd.DataFrame:
    """:meth:`recsql.Comparison.noninferiority`'s table."""
    alpha = _level("alpha", alpha)
    margins = _margins(comparison, _positive("margin", margin), relative)
    lower_better = lower_is_better_set(comparison, lower_is_better)
    rows = []
    for k, m, s, margin, metric in zip(*_pairs(comparison), margins, comparison.tests["metric"]):
        lower = metric in lower_better
        t, p = one_sided_t(k, m, s, margin if lower else -margin, greater=not lower)
        reach = _reach(k, s, 1 - alpha)
        rows.append({"n": k, "mean_diff": m, "margin": margin, "better": "lower" if lower else "higher",
                     "t": t, "p": p, "bound": m + reach if lower else m - reach})
    table = _verdicts(pd.DataFrame(rows), "noninferior", comparison.settings.correction, alpha)
    return pd.concat([_keys(comparison), table], axis=1)


def equivalence_table(comparison: Any, margin: float, relative: bool, alpha: float) -> pd.DataFrame:
    """:meth:`recsql.Comparison.equivalence`'s table."""
    alpha = _level("alpha", alpha)
    margins = _margins(comparison, _positive("margin", margin), relative)
    rows = []
    for k, m, s, margin in zip(*_pairs(comparison), margins):
        t_low, p_low = one_sided_t(k, m, s, -margin, greater=True)
        t_high, p_high = one_sided_t(k, m, s, margin, greater=False)
        reach = _reach(k, s, 1 - alpha)
        rows.append({"n": k, "mean_diff": m, "margin": margin, "t_lower": t_low, "p_lower": p_low,
                     "t_upper": t_high, "p_upper": p_high,
                     "p": math.nan if math.isnan(p_low) or math.isnan(p_high) else max(p_low, p_high),
                     "ci_low": m - reach, "ci_high": m + reach})
    table = _verdicts(pd.DataFrame(rows), "equivalent", comparison.settings.correction, alpha)
    return pd.concat([_keys(comparison), table], axis=1)


def gate_failures(comparison: Any, gates: Sequence[Gate], alpha: float = 0.05,
                  lower_is_better: Any = ()) -> list[str]:
    """One line per (gate, pair) that fails; empty when every gate holds. A pair's difference is
    "worse" in the metric's direction (``lower_is_better`` names the metrics where lower is better).
    "noninferior" fails where non-inferiority is not shown, a global metric's (no per-user test)
    included; "loss" reads the t-test's corrected p-value, or the randomization test's where there is
    no t (global metrics) or the t-test was not run."""
    tests = comparison.tests
    lower = lower_is_better_set(comparison, lower_is_better)
    metrics = list(dict.fromkeys(tests["metric"]))
    failures = []
    for gate in gates:
        if gate.metric != "any" and gate.metric not in metrics:
            raise RecsqlError(f"--fail-if {gate.text!r}: {gate.metric!r} is not a compared metric; they are "
                              f"{', '.join(metrics)} (or 'any')")
        chosen = [position for position, metric in enumerate(tests["metric"]) if gate.metric in ("any", metric)]
        if gate.kind == "noninferior":
            verdicts = noninferiority_table(comparison, gate.margin, gate.relative, alpha, lower)
            for position in chosen:
                verdict = verdicts.iloc[position]
                if verdict["noninferior"] is pd.NA or not bool(verdict["noninferior"]):
                    why = ("a global metric has no per-user differences to test" if pd.isna(verdict["p_adj"])
                           else f"corrected p {verdict['p_adj']:.3g} ≥ {alpha:g}, bound {verdict['bound']:+.6g}")
                    failures.append(f"{gate.text}: {_pair(comparison, position)}: non-inferiority by "
                                    f"{verdict['margin']:.6g} not shown ({why})")
            continue
        margins = _margins(comparison, gate.margin, gate.relative) if gate.kind == "worse" else []
        for position in chosen:
            row = tests.iloc[position]
            worse_by = (1.0 if row["metric"] in lower else -1.0) * float(row["mean_diff"])  # > 0: worse
            if gate.kind == "worse":
                if worse_by > margins[position]:
                    failures.append(f"{gate.text}: {_pair(comparison, position)}: difference "
                                    f"{row['mean_diff']:+.6g} is worse by more than {margins[position]:.6g}")
                continue
            column = next((c for c in ("p_t_adj", "p_t", "p_randomization_adj", "p_randomization")
                           if c in tests.columns and not pd.isna(row[c])), None)
            if column is not None and worse_by > 0 and row[column] < alpha:
                failures.append(f"{gate.text}: {_pair(comparison, position)}: difference {row['mean_diff']:+.6g}, "
                                f"{column} {row[column]:.3g} < {alpha:g}")
    return failures


def _pair(comparison: Any, position: int) -> str:
    """The pair of row ``position`` of ``tests``, as a gate's line names it."""
    row = comparison.tests.iloc[position]
    where = ", ".join(f"{c}={row[c]}" for c in segment_columns(comparison))
    return f"{row['run']} vs {row['baseline']} ({row['metric']}{', ' + where if where else ''})"
