"""Compose any set of metrics into ONE query: one scan of each input, one join, one GROUP BY.

The shared stage ``sql/_ranked.sql`` produces ranked, judged rows; each metric template
contributes one aggregate expression; this package substitutes parameters as typed literals,
expands the stage's macros (run keys, GAIN(), DISCOUNT(), calls to other metrics), prunes stage
features nobody asked for, folds constant CASE branches, and assembles the statement.

One module per job, in the order a statement is built:

- :mod:`.plan` — the :class:`Plan` (bound relations, column names, options) and shared constants;
- :mod:`.inputs` — the input relations with internal column names and ids that compare by value;
- :mod:`.needs` — metrics fitted to the inputs given, their populations and ranking views;
- :mod:`.policy` — what the recs are to the off-policy estimators' target (lists, or probabilities);
- :mod:`.checks` — the input checks as one diagnostics row inside the query;
- :mod:`.rewrite` — tree rewrites: literals, constant folding, run keys, pruning, UNION ALL;
- :mod:`.expressions` — each metric's template expanded into one aggregate expression;
- :mod:`.stage` — the ranked-rows stage fitted to the metrics asked;
- :mod:`.statement` — the final statement (:func:`compose`) and its finishing select (:func:`finalize`);
- :mod:`.readable` — the pass that makes it read well before rendering (:func:`readable`): inputs not
  given (:mod:`.empty`) and what nothing reads (:mod:`.unread`) taken out, formula comments and a
  header; each metric's column is named after it throughout (:mod:`.columns`).
"""

from ..trees import not_finite
from .checks import DIAGNOSTICS, ITEM_VALUE_INVALID, MAX_EXPONENT, RECS_ROWS, uses_exponent
from .columns import metric_columns
from .expressions import metric_expression
from .inputs import ITEM_VALUES, expected_in, intents_in, logs_in, recs_in, reward_model_in, truth_in, whole_id
from .needs import check_inputs, fit_to_inputs, given_roles, metric_population
from .plan import OUTPUTS, POPULATIONS, RUN_KEYS, TIES, Plan, input_runs, internal_runs, quoted_column, truth_runs
from .policy import target_policy, with_policy
from .readable import readable
from .rewrite import prune, union_all
from .statement import compose, finalize, per_run_only, population_counts

__all__ = ["DIAGNOSTICS", "ITEM_VALUES", "ITEM_VALUE_INVALID", "MAX_EXPONENT", "OUTPUTS", "POPULATIONS", "RECS_ROWS", "RUN_KEYS",
           "TIES", "Plan", "expected_in", "intents_in", "logs_in", "reward_model_in", "check_inputs", "compose", "finalize", "fit_to_inputs", "given_roles", "input_runs", "internal_runs",
           "metric_columns", "metric_expression", "metric_population", "not_finite", "per_run_only", "population_counts",
           "prune", "quoted_column",
           "readable", "recs_in", "target_policy", "truth_in", "truth_runs", "union_all", "uses_exponent", "whole_id",
           "with_policy"]
