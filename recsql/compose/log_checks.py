"""The input checks of logged impressions and of a reward model (docs/guide/logs.md), columns of the
one query's ``checks`` row like the other inputs' (recsql/compose/checks.py):

- ``logs_invalid_rows``: rows of logs with a NULL context, item, position, propensity or reward, a NaN or
  infinite number, a propensity outside (0, 1] (a zero propensity cannot weigh an impression: the
  estimators divide by it) or a position that is not a whole number >= 1;
- ``logs_duplicate_rows``: extra copies of a (context, item, position) impression, whatever
  ``duplicates`` says: two rows of one impression are two observations or one logged twice, and only the
  user can tell (give each request its own context id);
- ``reward_model_invalid_rows`` / ``reward_model_duplicate_rows``: a NULL key or reward, a NaN or
  infinite reward; extra copies of a (context, item) prediction;
- ``reward_model_missing_rows``: logged (context, item) pairs and recommended (context, item) pairs of the
  logged contexts that the reward model does not predict (the direct method would read them as 0).
"""

from __future__ import annotations

from sqlglot import exp

from ..trees import parse
from .plan import Plan

LOG_CHECKS = ("logs_invalid_rows", "logs_duplicate_rows", "reward_model_invalid_rows", "reward_model_duplicate_rows",
              "reward_model_missing_rows")

_LOGS_INVALID = """
SELECT CAST(COALESCE(SUM(CASE WHEN user_id IS NULL OR item_id IS NULL OR position IS NULL OR propensity IS NULL
                              OR reward IS NULL OR NOT (propensity > 0 AND propensity <= 1)
                              OR NOT (position >= 1 AND position = FLOOR(position) AND position < 1E15)
                              OR NOT (reward BETWEEN -1.7976931348623157E308 AND 1.7976931348623157E308)
                         THEN 1 ELSE 0 END), 0) AS BIGINT) AS logs_invalid_rows
FROM logs_in
"""

_MODEL_INVALID = """
SELECT CAST(COALESCE(SUM(CASE WHEN user_id IS NULL OR item_id IS NULL OR reward IS NULL
                              OR NOT (reward BETWEEN -1.7976931348623157E308 AND 1.7976931348623157E308)
                         THEN 1 ELSE 0 END), 0) AS BIGINT) AS reward_model_invalid_rows
FROM reward_model_in
"""

_COPIES = """
SELECT CAST(COALESCE(SUM(n - 1), 0) AS BIGINT) AS {name}
FROM (SELECT COUNT(*) AS n FROM {table} GROUP BY {keys}) AS g
"""

_MISSING = """
SELECT CAST(COUNT(*) AS BIGINT) AS reward_model_missing_rows
FROM (
    SELECT l.user_id, l.item_id FROM logs_in AS l
    UNION ALL
    SELECT r.user_id, r.item_id FROM recs_in AS r
    WHERE r.user_id IN (SELECT user_id FROM logs_in)
) AS pairs
WHERE NOT EXISTS (SELECT 1 FROM reward_model_in AS q WHERE q.user_id = pairs.user_id AND q.item_id = pairs.item_id)
"""


def log_checks(plan: Plan, read: set[str]) -> list[exp.Select]:
    """The one-row counts of the logs and the reward model, when given and read by the query (a NaN is
    neither in nor out of a range: ``NOT (x BETWEEN ...)`` and ``NOT (p > 0 AND p <= 1)`` count it)."""
    parts: list[exp.Select] = []
    if plan.logs is not None and "logs_in" in read:
        parts += [parse(_LOGS_INVALID), parse(_COPIES.format(name="logs_duplicate_rows", table="logs_in",
                                                             keys="user_id, item_id, position"))]
    if plan.reward_model is not None and "reward_model_in" in read:
        parts += [parse(_MODEL_INVALID), parse(_COPIES.format(name="reward_model_duplicate_rows",
                                                              table="reward_model_in", keys="user_id, item_id")),
                  parse(_MISSING)]
    return parts
