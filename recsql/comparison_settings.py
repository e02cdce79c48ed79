"""compare's own options (:class:`Settings`: the tests, the interval's level, the resamples, the seed,
the correction, the baseline run), checked, and the tests' names and p-value columns.

>>> Settings.checked("t", 0.9, 200, 1, None, "A").quantiles()
{'low_num': 1, 'high_num': 19, 'den': 20}
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

from .errors import RecsqlError
from .resampling import MAX_RESAMPLES, P
from .significance import CORRECTIONS

TESTS = ("t", "wilcoxon", "randomization")  # the default tests
ALL_TESTS = (*TESTS, "tukey")  # tukey: the randomized Tukey HSD over every pair of runs (asked for by name)
OPTION_KEYS = ("baseline", "tests", "ci", "resamples", "seed", "correction")  # to_sql(compare={...})'s keys
SEGMENT_KEYS = ("segments", "segment_cols")  # ... and its segments (recsql.api)
# Why a global metric's percentile interval (coverage, gini, personalization: one number per run) can miss its
# value: written once for the report's legend and the command line's note.
GLOBAL_INTERVAL_BIAS = ("a resample repeats some users and drops others, so its lists hold fewer distinct items than "
                        "the users' own; the percentile interval of such a metric is biased (coverage low, gini high) "
                        "and can exclude the value itself")


def resampled_globals(metrics: Any) -> set[str]:
    """The columns of the global metrics among ``metrics`` whose interval :data:`GLOBAL_INTERVAL_BIAS` explains
    (not the off-policy estimators, resampled over the logged contexts)."""
    return {m.column for m in metrics if m.spec.population == "global" and m.spec.family != "off_policy"}


def excludes(mean: Any, low: Any, high: Any) -> bool:
    """Whether the interval [low, high] excludes ``mean``; False when either is missing (NULL, NaN)."""
    def given(value: Any) -> bool:
        return value is not None and value == value
    return given(mean) and given(low) and given(high) and not low <= mean <= high


UNCORRECTED = {"tukey"}  # tests that control the family-wise error themselves
# The p-value columns of each test (and the statistic beside them).
TEST_COLUMNS = {"t": ("t", "p_t"), "wilcoxon": ("p_wilcoxon",), "randomization": ("p_randomization",),
                "tukey": ("p_tukey",)}


@dataclass(frozen=True)
class Settings:
    """compare's own options, checked: which tests, the interval's level, the resamples, the seed,
    the correction, and the baseline run (None: every pair)."""

    tests: tuple[str, ...] = TESTS
    ci: float = 0.95
    resamples: int = 1000
    seed: int = 0
    correction: str | None = "holm"
    baseline: Any = None

    @classmethod
    def checked(cls, tests: Any, ci: Any, resamples: Any, seed: Any, correction: Any, baseline: Any) -> "Settings":
        chosen = (tests,) if isinstance(tests, str) else tuple(tests or ())
        unknown = [t for t in chosen if t not in ALL_TESTS]
        if unknown or not chosen:
            raise RecsqlError(f"tests={tests!r}: choose one or more of {', '.join(ALL_TESTS)} (paired t, Wilcoxon "
                              "signed-rank, Fisher's randomization by sign flips, randomized Tukey HSD)")
        if isinstance(ci, bool) or not isinstance(ci, numbers.Real) or not 0 < ci < 1:
            raise RecsqlError(f"ci={ci!r}: the interval's level must be a number between 0 and 1, e.g. ci=0.95")
        if isinstance(resamples, bool) or not isinstance(resamples, numbers.Integral) or not 1 <= resamples <= MAX_RESAMPLES:
            raise RecsqlError(f"resamples={resamples!r}: pass a whole number of resamples from 1 to {MAX_RESAMPLES:,} "
                              "(bootstrap resamples and sign-flip permutations; e.g. resamples=1000)")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < P:
            raise RecsqlError(f"seed={seed!r}: pass a whole number from 0 to {P - 1} (the same seed always gives "
                              "the same resamples)")
        if correction is not None and correction not in CORRECTIONS:
            raise RecsqlError(f"correction={correction!r} is not valid; choose one of {', '.join(CORRECTIONS)} "
                              "or None (no correction)")
        return cls(tuple(dict.fromkeys(chosen)), float(ci), int(resamples), int(seed), correction, baseline)

    def quantiles(self) -> dict[str, int]:
        """The interval's quantiles (1 − ci)/2 and (1 + ci)/2 as exact fractions num/den of the
        decimal ``ci`` (0.95 -> 1/40 and 39/40), so the SQL interpolates with integer arithmetic."""
        level = Fraction(repr(self.ci))
        low, high = (1 - level) / 2, (1 + level) / 2
        den = math.lcm(low.denominator, high.denominator)
        return {"low_num": low.numerator * den // low.denominator, "high_num": high.numerator * den // high.denominator,
                "den": den}

    @classmethod
    def from_options(cls, options: Any) -> "Settings":
        """The settings of ``to_sql(compare={...})`` (its segment keys taken out first)."""
        if not isinstance(options, dict):
            raise RecsqlError(f"compare must be a dict of compare's options (baseline, tests, ci, resamples, seed, "
                              f"correction), got {options!r}; e.g. compare={{'baseline': 'A', 'resamples': 1000}}")
        unknown = sorted(set(options) - {*OPTION_KEYS, *SEGMENT_KEYS})
        if unknown:
            raise RecsqlError(f"compare: unknown option {unknown[0]!r}; choose from {', '.join(OPTION_KEYS)}, "
                              f"{', '.join(SEGMENT_KEYS)}")
        given = {key: value for key, value in options.items() if key in OPTION_KEYS}
        return cls.checked(**{**dict(tests=TESTS, ci=0.95, resamples=1000, seed=0, correction="holm", baseline=None),
                              **given})

    def baseline_kinds(self, run_cols: Sequence[str]) -> list[str]:
        """Each run column's kind (``number`` or ``string``) as the baseline names it, for its literal."""
        def kind(value: Any) -> str:
            return "number" if isinstance(value, numbers.Real) else "string"
        if isinstance(self.baseline, (tuple, list)):
            return [kind(v) for v in self.baseline]
        if isinstance(self.baseline, dict):
            lower = {str(k).lower(): v for k, v in self.baseline.items()}
            return [kind(lower.get(c.lower())) for c in run_cols]
        return [kind(self.baseline)] * len(run_cols)
