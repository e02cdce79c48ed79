"""The gates of a dbt evaluation (recsql.yml's ``gates:``) decided two ways, as the lines of
``recsql compare --fail-if``: by :func:`recsql.comparison_decisions.gate_failures` on
:func:`recsql.compare` of the inputs, and from the rows the package's ``recsql.gate`` test returned.
The lines of the gates that test keep what both say: non-inferiority's bound (the CLI's line also
has the corrected p-value, which the test's SQL has no tail to compute; it decides by t against the
t quantile instead), a loss's difference."""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import pandas as pd

import recsql
from recsql.comparison_decisions import Gate, gate_failures
from recsql.dbt.model import ModelSpec, relation_name
from recsql.run_labels import label


def _run(row: Any, runs: list[str]) -> str:
    return str(row[runs[0]]) if len(runs) == 1 else label([row[c] for c in runs], runs)


def _common(line: str) -> str:
    """A compare line of a gate that tests, cut to what the test's row holds."""
    if "non-inferiority by" in line:
        bound = re.search(r"bound ([^)]+)\)$", line)
        return re.sub(r" \((corrected p|a global metric)[^()]*\)$", f" (bound {bound.group(1) if bound else '+nan'})", line)
    return re.sub(r", p_t(_adj)? [^ ]+ < [^ ]+$", "", line)


def compare_lines(spec: ModelSpec, seed: Callable[[str], pd.DataFrame]) -> list[str]:
    """gate_failures' lines for the evaluation's gates, recsql.compare reading the inputs (``seed``:
    a relation's name -> its rows) with the evaluation's options, alpha and correction."""
    inputs = {role: seed(relation_name(ref)) for role, ref in spec.inputs.items()}
    correction = spec.gates.get("correction", "holm")
    comparison = recsql.compare(inputs.pop("recs"), inputs.pop("truth", None), spec.metrics, **inputs,
                                **spec.options, baseline=spec.gates["baseline"], resamples=99,
                                correction=None if correction == "none" else correction)
    gates = [Gate.parse(text) for text in spec.gates["fail_if"]]
    lines = gate_failures(comparison, gates, alpha=spec.gates.get("alpha", 0.05),
                          lower_is_better=spec.gates.get("lower_is_better", ()))
    assert all(", p_randomization" not in line for line in lines)  # the t-test decided every loss
    return sorted(_common(line) for line in lines)


def row_lines(spec: ModelSpec, rows: pd.DataFrame) -> list[str]:
    """The same lines from the recsql.gate test's failing rows (a missing baseline: the row's own text)."""
    runs = list(spec.gates["baseline"])
    baseline = _run(spec.gates["baseline"], runs)
    segments = spec.options.get("segment_cols", [])
    lines = []
    for _, row in rows.rename(columns=str.lower).iterrows():
        if pd.isna(row["metric"]):
            lines.append(row["gate"])
            continue
        where = "".join(f", {c}={row[c.lower()]}" for c in segments)
        run = _run({c: row[c.lower()] for c in runs}, runs)
        pair = f"{row['gate']}: {run} vs {baseline} ({row['metric']}{where})"
        kind = Gate.parse(row["gate"]).kind
        number = lambda v: math.nan if v is None or pd.isna(v) else float(v)  # noqa: E731
        if kind == "worse":
            lines.append(f"{pair}: difference {number(row['difference']):+.6g} is worse by more than "
                         f"{number(row['margin']):.6g}")
        elif kind == "noninferior":
            lines.append(f"{pair}: non-inferiority by {number(row['margin']):.6g} not shown "
                         f"(bound {number(row['bound']):+.6g})")
        else:
            lines.append(f"{pair}: difference {number(row['difference']):+.6g}")
    return sorted(lines)
