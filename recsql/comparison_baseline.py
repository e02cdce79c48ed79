"""The baseline run of :func:`recsql.compare` as the user names it (its label, a tuple, a dict, or one
value), read into a literal per run column, of the column's kind, for the statistics statement to
compare each run with.

>>> [e.sql() for e in baseline_keys({"model": "popular", "fold": "2"}, ["model", "fold"], ["text", "number"])]
["'popular'", '2']
"""
from __future__ import annotations

import math
import numbers
import re
from typing import Any

from sqlglot import exp

from . import run_labels
from .errors import RecsqlError
from .run_labels import plain


def baseline_keys(baseline: Any, names: list[str], kinds: list[str]) -> list[exp.Expression] | None:
    """The baseline run's key values as literals of its columns' kinds; None for every pair."""
    if baseline is None:
        return None
    example = "/".join(f"{n}=..." for n in names)
    if isinstance(baseline, dict):
        lower = {str(k).lower(): v for k, v in baseline.items()}
        missing = [n for n in names if n.lower() not in lower]
        if missing or len(lower) != len(names):
            raise RecsqlError(f"baseline={baseline!r}: name every run column once ({', '.join(names)})")
        parts = [lower[n.lower()] for n in names]
    elif isinstance(baseline, (tuple, list)):
        parts = list(baseline)
    elif len(names) > 1 and isinstance(baseline, str):
        parts = run_labels.parse(baseline, names)
        if parts is None:
            raise RecsqlError(f"baseline={baseline!r}: with several run columns write the run as {example!r} (a "
                              "backslash before each '/', '=' or backslash inside a value), a tuple of values in the "
                              f"order {names}, or a dict")
    else:
        parts = [baseline]
    if len(parts) != len(names):
        raise RecsqlError(f"baseline={baseline!r}: give one value per run column ({', '.join(names)})")
    return [_key_literal(v, n, k) for v, n, k in zip(parts, names, kinds)]


def _key_literal(value: Any, name: str, kind: str) -> exp.Expression:
    value = plain(value)
    if kind == "number":
        if isinstance(value, str):
            try:
                value = float(value) if re.search(r"[.eEn]", value) else int(value)
            except ValueError:
                raise RecsqlError(f"baseline: run column {name!r} holds numbers, got {value!r}; pass the baseline "
                                  f"run's number") from None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise RecsqlError(f"baseline: run column {name!r} holds numbers, got {value!r}; pass the baseline run's number")
        return exp.Literal.number(repr(value))
    return exp.Literal.string(str(value))
