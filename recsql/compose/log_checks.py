"""The input checks of logged impressions and of a reward model (docs/guide/logs.md), columns of the
one query's ``checks`` row like the other inputs', which recsql/compose/checks.py counts from the rules here:

- ``logs_invalid_rows``: rows of logs with a NULL context, item, position, propensity or reward, a NaN or
  infinite number, a propensity outside (0, 1] (a zero propensity cannot weigh an impression: the
  estimators divide by it) or a position that is not a whole number >= 1; and, where logs carry them (the
  slate estimators'), a slate or cascade propensity that is NULL or outside (0, 1];
- ``logs_duplicate_rows``: extra copies of a (context, item, position) impression, whatever
  ``duplicates`` says: two rows of one impression are two observations or one logged twice, and only the
  user can tell (give each request its own context id);
- ``logs_inconsistent_slates`` (where logs carry a slate or cascade propensity): the slates (contexts) whose
  rows disagree: two slate propensities (the joint probability of the one slate, the same on each of its
  rows), two rows at one position (a slate holds one item per slot), or a cascade propensity that rises down
  the slate (p(s_1..s_k) is a product of probabilities, so it never grows with k; a rise of more than a
  relative 1e-9, past rounding). The slate estimators read each row's value as given, so any of these
  would change their number silently;
- ``reward_model_invalid_rows`` / ``reward_model_duplicate_rows``: a NULL key or reward, a NaN or
  infinite reward; extra copies of a (context, item) prediction;
- ``reward_model_missing_rows``: logged (context, item) pairs and recommended (context, item) pairs of the
  logged contexts that the reward model does not predict (the direct method would read them as 0).
"""

from __future__ import annotations

from sqlglot import exp

from ..trees import not_finite
from .plan import logs_runs

LOG_CHECKS = ("logs_invalid_rows", "logs_duplicate_rows", "logs_inconsistent_slates", "reward_model_invalid_rows",
              "reward_model_duplicate_rows", "reward_model_missing_rows")

LOG_KEYS = ["user_id", "item_id", "position"]  # an impression

# logs_in's column -> (what makes its value invalid, over logs_in; the rule in words, for the error that
# names the column: recsql/explain_logs.py). A NaN is neither in nor out of a range: ``NOT (p > 0 AND
# p <= 1)`` counts it.
LOG_RULES = {
    "user_id": ("user_id IS NULL", "every context (user) id must be set"),
    "item_id": ("item_id IS NULL", "every item id must be set"),
    "propensity": ("propensity IS NULL OR NOT (propensity > 0 AND propensity <= 1)",
                   "a propensity is the logging policy's probability of showing the item there, in (0, 1]: an "
                   "impression logged with propensity 0 cannot be reweighted (log the probability the policy had, "
                   "or drop impressions of a deterministic logging policy, which no estimator here can use)"),
    "reward": (None, "a reward must be a finite number (0 for no click)"),  # NULL or not finite
    "position": ("position IS NULL OR NOT (position >= 1 AND position = FLOOR(position) AND position < 1E15)",
                 "a position must be a whole number >= 1 (1 is the first slot)"),
    # checked only when logged (slate_propensity_col, cascade_propensity_col): logged_rules
    "slate_propensity": ("slate_propensity IS NULL OR NOT (slate_propensity > 0 AND slate_propensity <= 1)",
                         "a slate propensity is the logging policy's probability of the whole logged slate, in (0, 1]"),
    "cascade_propensity": ("cascade_propensity IS NULL OR NOT (cascade_propensity > 0 AND cascade_propensity <= 1)",
                           "a cascade propensity is the logging policy's probability of the slate's items at positions "
                           "1..k (on the row of position k), in (0, 1]"),
}

# LOG_RULES' columns that only some logs have, by the plan's option naming them (None: not logged, not checked)
OPTIONAL_LOG_COLUMNS = {"slate_propensity": "slate_propensity_col", "cascade_propensity": "cascade_propensity_col"}


def logged_rules(plan: object) -> list[str]:
    """LOG_RULES' columns checked on ``plan``'s logs: every one but the optional columns not logged."""
    return [column for column in LOG_RULES
            if column not in OPTIONAL_LOG_COLUMNS or getattr(plan, OPTIONAL_LOG_COLUMNS[column])]


def invalid_log_value(column: str) -> exp.Expression:
    """LOG_RULES' condition for logs_in's ``column``."""
    condition = LOG_RULES[column][0]
    if condition is None:
        return exp.or_(exp.Is(this=exp.column(column), expression=exp.null()), not_finite(exp.column(column)))
    return exp.condition(condition)


def invalid_log_row(plan: object) -> exp.Expression:
    """A row of logs_in that breaks any of LOG_RULES checked on ``plan``'s logs."""
    return exp.or_(*[invalid_log_value(column) for column in logged_rules(plan)])


# a slate's rule (logs_inconsistent_slates) -> the option that logs its column (None: always, with either) and
# the condition over a slate's group of rows (``prior_cascade``: the cascade propensity one position up)
SLATE_RULES = {
    "slate_propensity": ("slate_propensity_col", "MAX(slate_propensity) > MIN(slate_propensity)"),
    "position": ("position_col", "COUNT(*) > COUNT(DISTINCT position)"),
    "cascade_propensity": ("cascade_propensity_col",
                           "MAX(CASE WHEN cascade_propensity > prior_cascade * (1 + 1E-9) THEN 1 ELSE 0 END) = 1"),
}


def slate_rules(plan: object) -> list[str]:
    """SLATE_RULES' names checked on ``plan``'s logs: none unless a slate or cascade propensity is logged."""
    if not (getattr(plan, "slate_propensity_col") or getattr(plan, "cascade_propensity_col")):
        return []
    return [name for name, (option, _) in SLATE_RULES.items() if getattr(plan, option)]


def inconsistent_slates(plan: object, rules: list[str] | None = None, examples: bool = False) -> exp.Select:
    """The count of logs_in's slates breaking ``rules`` (default: :func:`slate_rules`), one row
    ``logs_inconsistent_slates``; with ``examples``, the first three such contexts instead."""
    having = " OR ".join(SLATE_RULES[r][1] for r in (slate_rules(plan) if rules is None else rules))
    slate = ", ".join([*logs_runs(plan), "user_id"])  # a slate: a context's rows (in a run's logs, with logs per run)
    slates = (f"SELECT user_id FROM (SELECT {slate}, position, slate_propensity, cascade_propensity, "
              f"LAG(cascade_propensity) OVER (PARTITION BY {slate} ORDER BY position) AS prior_cascade FROM logs_in) AS l "
              f"GROUP BY {slate} HAVING {having}")
    if examples:
        return exp.select("user_id").from_(exp.maybe_parse(slates).subquery("s")).order_by("user_id").limit(3)
    return exp.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), "logs_inconsistent_slates")) \
        .from_(exp.maybe_parse(slates).subquery("s"))


MISSING_PREDICTIONS = """
SELECT CAST(COUNT(*) AS BIGINT) AS reward_model_missing_rows
FROM (
    SELECT l.user_id, l.item_id FROM logs_in AS l
    UNION ALL
    SELECT r.user_id, r.item_id FROM recs_in AS r
    WHERE r.user_id IN (SELECT user_id FROM logs_in)
) AS pairs
WHERE NOT EXISTS (SELECT 1 FROM reward_model_in AS q WHERE q.user_id = pairs.user_id AND q.item_id = pairs.item_id)
"""
