"""Gates in dbt: ``recsql compare --fail-if`` conditions decided by a plain SELECT on a summary model,
written into the model's YAML as the package's ``recsql.gate`` test (dbt/macros/gate.sql), so a worse
run fails ``dbt build``. An evaluation of ``recsql.yml`` declares them::

    gates:
      baseline: {model: popular}                     # the baseline run, by its run column values
      fail_if: ["ndcg@10 worse by 0.01", "any worse by 5%"]
      lower_is_better: [gini@10]                     # optional: the metrics where lower is better

The conditions are read by :meth:`recsql.gates.Gate.parse` (the words of the command
line's ``--fail-if``) and decided as compare decides them, never approximated:

- ``worse by``: on the summary, whose difference of values is the mean of the paired per-user
  differences ``recsql compare`` gates on when every run averages over the same users; a relative
  margin is the same share of the baseline's value.
- ``not noninferior by`` and ``significant loss``: the paired t-test's, on the per-user model
  ``<name>_per_user`` that generate writes alongside (:func:`per_user_spec`): per (run, metric,
  segment) the users with a value in both runs, their n, mean and sample sd of differences, and t
  against Student's t quantile (:mod:`recsql.dbt.quantiles`) at the gates' ``alpha``. Compare's
  correction must be ``none`` (``correction: none``, as ``recsql compare --correction none``).

Refused, with the reason (:data:`REFUSED`, :data:`CORRECTIONS`, :func:`_same_users`): metrics whose
users differ by run, a global metric's test, and every correction but none.
"""
from __future__ import annotations

import numbers
from typing import Any

from ..compose import input_runs
from ..compose.needs import metric_population
from ..errors import RecsqlError
from ..gates import Gate
from .model import ModelSpec, spec_plan
from .names import output_name
from .quantiles import MODEL, quantile_argument

KEYS = ("baseline", "fail_if", "lower_is_better", "alpha", "correction")
TESTED = ("noninferior", "loss")  # the gates that test, on the per-user model
# Why a correction of recsql compare's cannot be decided by the test's SQL
CORRECTIONS = {
    "holm": "Holm's correction orders the pairs by their p-values, which need the t distribution's tail that "
            "warehouse SQL lacks",
    "bh": "Benjamini-Hochberg orders the pairs by their p-values, which need the t distribution's tail that "
          "warehouse SQL lacks",
    "bonferroni": "Bonferroni tests each pair at alpha over the number of tests, a level only the data fixes, so its "
                  "t quantile cannot be tabled when recsql dbt generate runs",
}
# Why a gate that tests is refused for a global metric (one number per run, no per-user differences)
REFUSED = {
    "noninferior": "it has no per-user differences, so recsql compare fails this gate whatever the data",
    "loss": "it has no per-user differences; recsql compare reads the randomization test's p-value there, which "
            "needs resampled runs that warehouse SQL cannot draw",
}
# Populations every run averages over alike (a truth population, or one value per run): there the
# difference of the summary's values is the mean of the paired per-user differences
SAME_USERS = ("relevant", "judged", "global")
# The columns of the test's rows: a run or segment column may not take one of these names
ROW_COLUMNS = ("gate", "metric", "run_value", "baseline_value", "difference", "worse_by", "margin", "users", "t",
               "t_quantile", "bound")


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
        gates.append(gate)
    return gates


def _alpha(spec: ModelSpec) -> float:
    value = spec.gates.get("alpha", 0.05)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value < 0.5:
        raise _refuse(spec, f"alpha: {value!r}: the level of the tests, a number between 0 and 0.5 as recsql "
                            "compare's --alpha, e.g. alpha: 0.05")
    return float(value)


def _tested_gates(spec: ModelSpec, parsed: list[Gate]) -> list[Gate]:
    """The gates that test (on the per-user model); refuses a correction the test's SQL cannot decide."""
    tested = [g for g in parsed if g.kind in TESTED]
    correction = spec.gates.get("correction")
    if not tested:
        return tested
    if correction in (None, "holm", "bh", "bonferroni"):
        why = CORRECTIONS[correction or "holm"]
        given = f"correction: {correction}" if correction else "no correction: key (recsql compare's default is holm)"
        raise _refuse(spec, f"fail_if {tested[0].text!r} with {given}: {why}. Set correction: none in gates: and decide "
                            "alike on the command line with `recsql compare --correction none --fail-if ...`, or keep "
                            "this gate in CI with `recsql compare --fail-if`")
    if correction != "none":
        raise _refuse(spec, f"correction: {correction!r}: write correction: none (the only correction decided in dbt)")
    return tested


def tests_per_user(spec: ModelSpec) -> bool:
    """Whether the evaluation's gates test on its per-user model (a well-formed ``fail_if`` assumed)."""
    gates = spec.gates if isinstance(spec.gates, dict) else {}
    texts = gates.get("fail_if") if isinstance(gates.get("fail_if"), list) else []
    kinds = set()
    for text in texts:
        try:
            kinds.add(Gate.parse(text).kind)
        except (RecsqlError, TypeError):
            continue  # gate_test refuses it
    return bool(kinds & set(TESTED))


def per_user_name(spec: ModelSpec) -> str:
    return f"{spec.name}_per_user"


def per_user_spec(spec: ModelSpec) -> ModelSpec:
    """The per-user model of the same evaluation that the tested gates read (generate writes it beside)."""
    return ModelSpec(per_user_name(spec), list(spec.metrics), dict(spec.inputs), "per_user", spec.column_names,
                     spec.materialized, dict(spec.options), spec.text_ids, spec.truth_has_run_cols,
                     spec.logs_run_cols)


def levels(spec: ModelSpec) -> list[float]:
    """The t quantile levels the evaluation's tested gates use: 1 − alpha (non-inferiority, one-sided) and
    1 − alpha/2 (a loss: the two-sided paired t-test's p-value below alpha)."""
    kinds = {Gate.parse(t).kind for t in spec.gates["fail_if"]} & set(TESTED)
    alpha = _alpha(spec)
    return [{"noninferior": 1 - alpha, "loss": 1 - alpha / 2}[kind] for kind in sorted(kinds)]


def gate_test(spec: ModelSpec) -> dict[str, Any]:
    """The model's ``recsql.gate`` data test (its YAML entry) for the evaluation's ``gates``: one
    condition per (gate, metric) with the metric's column, direction and absolute or relative margin;
    for the gates that test, the per-user model, its user column and the t quantiles' levels."""
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
    alpha = _alpha(spec)
    tested = _tested_gates(spec, parsed)
    lower = gates.get("lower_is_better") or []
    lower = [lower] if isinstance(lower, str) else lower
    by_column = {m.column: m for m in metrics}
    for name in [*lower, *(g.metric for g in parsed if g.metric != "any")]:
        if name not in by_column:
            raise _refuse(spec, f"{name!r} is not a metric of the evaluation; its metrics are "
                                f"{', '.join(by_column)} (or 'any' in fail_if)")
    level = {"noninferior": 1 - alpha, "loss": 1 - alpha / 2}
    conditions = []
    for gate in parsed:
        for metric in metrics if gate.metric == "any" else [by_column[gate.metric]]:
            _same_users(spec, plan, metric)
            if gate.kind in TESTED and metric_population(plan, metric) == "global":
                raise _refuse(spec, f"fail_if {gate.text!r}: {metric.column} is a global metric (one number per "
                                    f"run): {REFUSED[gate.kind]}; gate it with 'worse by', or name the metrics")
            condition = {"gate": gate.text, "metric": metric.column, "kind": gate.kind,
                         "column": output_name(metric.column) if spec.column_names == "safe" else metric.column,
                         "better": "lower" if metric.column in lower else "higher"}
            if gate.kind != "loss":
                condition.update(margin=gate.margin, relative=gate.relative)
            if gate.kind in TESTED:
                condition["level"] = quantile_argument(level[gate.kind])
            conditions.append(condition)
    arguments = {"baseline": baseline, "conditions": conditions, **({"segment_cols": segments} if segments else {})}
    if tested:
        arguments.update(per_user=per_user_name(spec), user_col=str(spec.options.get("user_col", "user_id")),
                         t_quantiles=MODEL)
    return {"recsql.gate": {"name": f"recsql_gate_{spec.name}", "arguments": arguments}}
