"""The gates of a dbt evaluation (recsql.yml's ``gates:``) decided two ways, as the lines of
``recsql compare --fail-if``: by :func:`recsql.comparison_decisions.gate_failures` on
:func:`recsql.compare` of the inputs, and from the rows the package's ``recsql.gate`` test returned."""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

import recsql
from recsql.comparison_decisions import Gate, gate_failures
from recsql.dbt.model import ModelSpec, relation_name
from recsql.run_labels import label


def _run(row: Any, runs: list[str]) -> str:
    return str(row[runs[0]]) if len(runs) == 1 else label([row[c] for c in runs], runs)


def compare_lines(spec: ModelSpec, seed: Callable[[str], pd.DataFrame]) -> list[str]:
    """gate_failures' lines for the evaluation's gates, recsql.compare reading the inputs (``seed``:
    a relation's name -> its rows) with the evaluation's options."""
    inputs = {role: seed(relation_name(ref)) for role, ref in spec.inputs.items()}
    comparison = recsql.compare(inputs.pop("recs"), inputs.pop("truth", None), spec.metrics, **inputs,
                                **spec.options, baseline=spec.gates["baseline"], resamples=99)
    gates = [Gate.parse(text) for text in spec.gates["fail_if"]]
    return sorted(gate_failures(comparison, gates, lower_is_better=spec.gates.get("lower_is_better", ())))


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
        lines.append(f"{row['gate']}: {run} vs {baseline} ({row['metric']}{where}): "
                     f"difference {float(row['difference']):+.6g} is worse by more than {float(row['margin']):.6g}")
    return sorted(lines)
