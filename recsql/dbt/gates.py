"""Gates in dbt: ``recsql compare --fail-if`` conditions decided by a plain SELECT on a summary model,
written into the model's YAML as the package's ``recsql.gate`` test (dbt/macros/gate.sql), so a worse
run fails ``dbt build``. An evaluation of ``recsql.yml`` declares them::

    gates:
      baseline: {model: popular}                     # the baseline run, by its run column values
      fail_if: ["ndcg@10 worse by 0.01", "any worse by 5%"]
      lower_is_better: [gini@10]                     # optional: the metrics where lower is better

The conditions are read by :meth:`recsql.comparison_decisions.Gate.parse` (the words of the command
line's ``--fail-if``). Only ``worse by`` is allowed: the difference of the summary's values is the mean
of the paired per-user differences ``recsql compare`` gates on when every run averages over the same
users, and the relative margin is the same share of the baseline's value. The other forms, and metrics
whose users differ by run, are refused (:data:`REFUSED`, :func:`_same_users`): never approximated.
"""
from __future__ import annotations

import numbers
from typing import Any

from ..compose import input_runs
from ..compose.needs import metric_population
from ..comparison_decisions import Gate
from ..errors import RecsqlError
from .model import ModelSpec, spec_plan
from .names import output_name

KEYS = ("baseline", "fail_if", "lower_is_better")
# Why each form of --fail-if that is not `worse by` stays on the command line
REFUSED = {
    "noninferior": "non-inferiority needs the t distribution's quantile and the comparison's multiple-testing "
                   "correction, which warehouse SQL does not have",
    "loss": "a significant loss needs the paired t-test's or the randomization test's p-value, which warehouse "
            "SQL cannot compute",
}
# Populations every run averages over alike (a truth population, or one value per run): there the
# difference of the summary's values is the mean of the paired per-user differences
SAME_USERS = ("relevant", "judged", "global")
# The columns of the test's rows: a run or segment column may not take one of these names
ROW_COLUMNS = ("gate", "metric", "run_value", "baseline_value", "difference", "worse_by", "margin")


def _refuse(spec: ModelSpec, text: str) -> RecsqlError:
    return RecsqlError(f"evaluation {spec.name!r}: gates: {text}")


def _same_users(spec: ModelSpec, plan: Any, metric: Any) -> None:
    """Refuses a gate on a metric whose runs may average over different users."""
    population = metric_population(plan, metric)
    if plan.truth_has_runs or population not in SAME_USERS:
        why = ("the truth has run columns" if plan.truth_has_runs
               else f"it averages over population {population!r}, which differs by run")
        raise _refuse(spec, f"{metric.column}: {why}, so the difference of the summary's values is not the paired "
                            "difference recsql compare gates on; use a population every run shares (relevant, "
                            "judged), or run `recsql compare --fail-if` in CI")


def _baseline(spec: ModelSpec, value: Any, runs: list[str]) -> dict[str, Any]:
    if not runs:
        raise _refuse(spec, "a gate compares runs: name the run columns (run_cols) and the baseline run")
    if not isinstance(value, dict) or sorted(map(str, value)) != sorted(runs) or not all(
            isinstance(v, (str, numbers.Real)) and not isinstance(v, bool) for v in value.values()):
        example = ", ".join(f"{c}: ..." for c in runs)
        raise _refuse(spec, f"baseline: give the baseline run's value of every run column ({', '.join(runs)}) as "
                            f"text or a number, e.g. baseline: {{{example}}}")
    return {str(k): v for k, v in value.items()}


def _parsed(spec: ModelSpec, texts: Any) -> list[Gate]:
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise _refuse(spec, "fail_if: a list of conditions, e.g. fail_if: ['ndcg@10 worse by 0.01']")
    gates = []
    for text in texts:
        try:
            gate = Gate.parse(text)
        except RecsqlError as err:
            raise _refuse(spec, f"fail_if: {err}") from None
        if gate.kind in REFUSED:
            raise _refuse(spec, f"fail_if {text!r}: {REFUSED[gate.kind]}; in dbt only 'METRIC worse by MARGIN' "
                                "is decided; run `recsql compare --fail-if` in CI for this one")
        gates.append(gate)
    return gates


def gate_test(spec: ModelSpec) -> dict[str, Any]:
    """The model's ``recsql.gate`` data test (its YAML entry) for the evaluation's ``gates``: one
    condition per (gate, metric) with the metric's column, direction and absolute or relative margin."""
    gates = spec.gates
    if not isinstance(gates, dict) or "baseline" not in gates or "fail_if" not in gates or set(gates) - set(KEYS):
        raise _refuse(spec, f"a mapping of {', '.join(KEYS)} (baseline and fail_if required)")
    if spec.output != "summary":
        raise _refuse(spec, "a gate reads the summary: set output: summary (the default)")
    plan, metrics = spec_plan(spec)
    segments, runs = list(plan.segment_cols), list(input_runs(plan))
    clash = sorted({*runs, *segments} & set(ROW_COLUMNS))
    if clash:
        raise _refuse(spec, f"run or segment column {clash[0]!r} has the name of a column of the test's rows "
                            f"({', '.join(ROW_COLUMNS)}); rename it in a model upstream")
    baseline = _baseline(spec, gates["baseline"], runs)
    parsed = _parsed(spec, gates["fail_if"])
    lower = gates.get("lower_is_better") or []
    lower = [lower] if isinstance(lower, str) else lower
    by_column = {m.column: m for m in metrics}
    for name in [*lower, *(g.metric for g in parsed if g.metric != "any")]:
        if name not in by_column:
            raise _refuse(spec, f"{name!r} is not a metric of the evaluation; its metrics are "
                                f"{', '.join(by_column)} (or 'any' in fail_if)")
    conditions = []
    for gate in parsed:
        for metric in metrics if gate.metric == "any" else [by_column[gate.metric]]:
            _same_users(spec, plan, metric)
            conditions.append({"gate": gate.text, "metric": metric.column,
                               "column": output_name(metric.column) if spec.column_names == "safe" else metric.column,
                               "better": "lower" if metric.column in lower else "higher",
                               "margin": gate.margin, "relative": gate.relative})
    arguments = {"baseline": baseline, "conditions": conditions, **({"segment_cols": segments} if segments else {})}
    return {"recsql.gate": {"name": f"recsql_gate_{spec.name}", "arguments": arguments}}
