"""The errors of the logs' and the reward model's input checks (recsql/compose/log_checks.py): which
column holds what, with a few example rows, and the fix (docs/guide/logs.md)."""
from __future__ import annotations

from sqlglot import exp

from .compose import Plan, logs_in, reward_model_in
from .compose.plan import logs_run_pairs
from .compose.log_checks import LOG_RULES, inconsistent_slates, invalid_log_value, logged_rules, slate_rules
from .dialects import render
from .engines.base import Runner
from .errors import RecsqlError
from .validate import duplicate_report

def _count_where(body: exp.Select, condition: exp.Expression) -> exp.Select:
    return exp.select("COUNT(*)").from_(body.subquery("l")).where(condition)


def refuse_logs(runner: Runner, plan: Plan, found: dict[str, int]) -> None:
    """Raise for the first check of the logs or the reward model that found something."""
    if found.get("logs_invalid_rows"):
        columns = {"user_id": plan.user_col, "item_id": plan.item_col, "propensity": plan.propensity_col,
                   "reward": plan.reward_col, "position": plan.position_col or "position",
                   "slate_propensity": plan.slate_propensity_col, "cascade_propensity": plan.cascade_propensity_col}
        for internal in logged_rules(plan):
            rule = LOG_RULES[internal][1]
            where = _count_where(logs_in(plan), invalid_log_value(internal))
            count = runner.fetch_rows(render(where, runner.dialect, pretty=False))[0][0]
            if count:
                raise RecsqlError(f"logs column {columns[internal]!r} has {int(count)} invalid value(s): {rule}; "
                                  f"fix or drop those rows (NULL, NaN and infinity are not values)")
        raise RecsqlError(f"logs has {found['logs_invalid_rows']} invalid row(s)")
    if found.get("reward_model_invalid_rows"):
        raise RecsqlError(f"reward_model has {found['reward_model_invalid_rows']} row(s) with a NULL context or item "
                          f"or a NULL, NaN or infinite {plan.model_reward_col or plan.reward_col!r}: a prediction is "
                          "a finite number; fix or drop those rows")
    runs = [(internal, column) for column, internal in logs_run_pairs(plan)]  # logs per run: one row of its run's logs
    keyed = {"logs": (logs_in, [*(i for i, _ in runs), "user_id", "item_id", "position"],
                      [*(c for _, c in runs), plan.user_col, plan.item_col, plan.position_col or "position"],
                      "An impression is one row: if these are different requests of one user, give each request "
                      "its own context id (user_col='<request id column>'); if they were logged twice, drop the "
                      "copies. recsql does not guess which (duplicates= does not apply to logs)."),
             "reward_model": (reward_model_in, ["user_id", "item_id"], [plan.user_col, plan.item_col],
                              "Keep one prediction per (context, item).")}
    for role, (make, keys, names, fix) in keyed.items():
        if found.get(f"{role}_duplicate_rows"):
            body = exp.select(*[exp.alias_(exp.cast(exp.column(k), "BIGINT"), k) if k == "position" else k
                                for k in keys]).from_(make(plan).subquery("l"))  # a whole position, as logged
            groups = exp.select(*keys).from_(body.subquery("s")).group_by(*keys).having("COUNT(*) > 1")
            query = exp.select(*keys).from_(groups.subquery("d")).order_by(*keys).limit(3)
            rows = runner.fetch_rows(render(query, runner.dialect, pretty=False))
            raise duplicate_report(rows, found[f"{role}_duplicate_rows"], role, names, fix)
    if found.get("logs_inconsistent_slates"):
        _refuse_slates(runner, plan, found["logs_inconsistent_slates"])
    if found.get("reward_model_missing_rows"):
        raise RecsqlError(f"reward_model predicts no reward for {found['reward_model_missing_rows']} (context, item) "
                          "pair(s) the estimators read: every logged (context, item) of logs and every recommended "
                          "(context, item) of recs for the logged contexts needs a prediction (the direct method "
                          "would read a missing one as 0); add those rows to reward_model")


# each slate rule: what its slates hold, and the fix (in the words of the option naming the column)
SLATE_FAULTS = {
    "slate_propensity": ("two different values of slate_propensity_col={column!r} (a slate's joint propensity, the "
                         "logging policy's probability of the whole slate, is one number, the same on each row)",
                         "log each slate's one joint probability on every row of it"),
    "position": ("two rows at one position (a slate holds one item per slot)",
                 "keep one row per position, or give each slate its own context id (user_col='<slate id column>')"),
    "cascade_propensity": ("a cascade propensity (cascade_propensity_col={column!r}) that rises down the slate: the "
                           "probability of the slate's items at positions 1..k is a product of probabilities, so it "
                           "never grows with k",
                           "log at position k the probability of the items at positions 1..k"),
}


def _refuse_slates(runner: Runner, plan: Plan, count: int) -> None:
    """Raise for the first slate rule that some slate breaks, with up to three of its contexts."""
    columns = {"slate_propensity": plan.slate_propensity_col, "position": plan.position_col,
               "cascade_propensity": plan.cascade_propensity_col}
    for rule in slate_rules(plan):
        query = inconsistent_slates(plan, [rule], examples=True)
        query = query.with_("logs_in", as_=logs_in(plan))
        rows = runner.fetch_rows(render(query, runner.dialect, pretty=False))
        if rows:
            what, fix = SLATE_FAULTS[rule]
            shown = ", ".join(repr(r[0]) for r in rows)
            raise RecsqlError(f"logs has {count} slate(s) whose rows disagree, e.g. context(s) {shown}: "
                              f"{what.format(column=columns[rule])}; {fix}. The slate estimators read each row's "
                              f"value as given, so such a slate would change their number silently")
    raise RecsqlError(f"logs has {count} slate(s) whose rows disagree")

