"""The checks of the column and definition options every entry point shares (evaluate's keywords,
:class:`recsql.Inputs`' fields): :func:`checked_options` checks them together, the convention
filling in the tie rule and population not given; :func:`run_columns` reads ``run_cols`` and
``segment_cols``.

>>> checked_options(**{**{name: None for name in COLUMN_OPTIONS}, "user_col": "user_id", "item_col": "item_id",
...                    "score_col": "score", "relevance_col": "relevance", "price_col": "price", "duplicates": "error",
...                    "convention": "trec", **EXTRA_COLUMNS, "run_cols": (), "segment_cols": ()})["ties"]
'item_id_desc'
"""
from __future__ import annotations

import numbers
import sys
from typing import Any, Iterable


from .compose import DIAGNOSTICS, TIES
from .conventions import convention as get_convention
from .conventions import measure_rules
from .errors import RecsqlError
from .metrics import parse_metrics

DUPLICATE_POLICIES = ("error", "best", "max")
# Column options of the optional inputs beside recs and truth (Plan fields), with their defaults.
EXTRA_COLUMNS = {"probability_col": "probability", "category_col": "category", "features_col": "features",
                 "feature_col": "feature", "value_col": "value", "intent_col": "intent",
                 "propensity_col": "propensity", "reward_col": "reward"}
DEFAULT_SCORE_COL = "score"  # the recs' order when no rank_col is given (recsql.Inputs, recsql.evaluate)
# evaluate's options that describe the columns and definitions (checked together by checked_options).
COLUMN_OPTIONS = ("user_col", "item_col", "score_col", "rank_col", "relevance_col", "price_col", "threshold",
                  "population", "duplicates", "convention", "ties", *EXTRA_COLUMNS, "interaction_weight_col", "sample_col",
                  "position_col", "slate_propensity_col", "cascade_propensity_col", "head_col")


def checked_options(**cols: Any) -> dict[str, Any]:
    """The column and definition options shared by evaluate and to_sql, checked; the convention
    fills in the tie rule and population the user did not give."""
    conv = get_convention(cols["convention"])
    # the convention's per-measure rules, less those the user's ties= / population= replace for every metric
    cols["rules"] = measure_rules(conv.name, ties_given=cols["ties"] is not None,
                                  population_given=cols["population"] is not None)
    cols["population"] = cols["population"] or conv.population
    cols["ties"] = cols["ties"] or conv.ties
    if cols["threshold"] is None:  # every truth row relevant: the lowest threshold there is
        cols["threshold"] = -1.7976931348623157e308 if conv.every_truth_row_relevant else 1
    if cols["ties"] not in TIES:
        raise RecsqlError(f"ties={cols['ties']!r} is not valid; choose one of {', '.join(TIES)} ('item_id': equal "
                          "scores ordered by item id ascending; 'item_id_desc': descending; 'average': the expected "
                          "value over every order of the tied items)")
    cols["threshold"] = _number(cols["threshold"])
    _check_options(cols["population"], cols["duplicates"], cols["threshold"], cols["rank_col"], cols["score_col"])
    _check_columns(cols)
    return cols


def _check_options(population: str, duplicates: str, threshold: float, rank_col: str | None, score_col: str | None) -> None:
    if duplicates not in DUPLICATE_POLICIES:
        raise RecsqlError(f"duplicates={duplicates!r} is not valid; choose one of {', '.join(DUPLICATE_POLICIES)} "
                          "('best' keeps each recommendation's best-ranked row, 'max' the truth row with the highest relevance)")
    if _is_bool(threshold) or not isinstance(threshold, numbers.Real) or threshold != threshold or abs(threshold) == float("inf"):
        raise RecsqlError(f"threshold must be a finite number (an item is relevant iff relevance >= threshold), got {threshold!r}")
    if rank_col is None and score_col is None:
        raise RecsqlError("recs need an order: pass score_col='<column>' (higher is better) or rank_col='<column>' (1 is best)")
    if rank_col is not None and score_col not in (None, DEFAULT_SCORE_COL):
        raise RecsqlError(f"score_col={score_col!r} and rank_col={rank_col!r} both order the recs: pass one of them "
                          "(score_col for scores, higher is better; rank_col for ranks, 1 is best)")


def _is_bool(value: Any) -> bool:
    """A Python or numpy bool (numpy's is no ``bool``, and is a ``numbers.Real`` to no one; a numpy value
    exists only once numpy is imported, so the options are checked without importing it)."""
    numpy = sys.modules.get("numpy")
    return isinstance(value, bool) or (numpy is not None and isinstance(value, numpy.bool_))


def _number(value: Any) -> Any:
    """A numpy or other ``numbers.Real`` value as a Python int or float (numpy's ``np.int64(2)`` is a
    number too); anything else is returned for :func:`_check_options` to refuse."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


# Column options that must name a column (a non-empty string) / that may be None (no such column).
_REQUIRED_COLUMNS = ("user_col", "item_col", "price_col", "probability_col", "category_col", "features_col",
                     "feature_col", "value_col", "intent_col", "propensity_col", "reward_col")
_OPTIONAL_COLUMNS = ("score_col", "rank_col", "relevance_col", "interaction_weight_col", "sample_col", "position_col",
                     "slate_propensity_col", "cascade_propensity_col", "head_col")
# Columns of the summary / per-user rows recsql adds beside the run keys.
_OUTPUT_COLUMNS = ("n_users", "n_users_with_recs", "users_without_recs", "recs_users_without_truth", *DIAGNOSTICS)


def _is_metric_name(name: str) -> bool:
    try:
        parse_metrics([name])
    except RecsqlError:
        return False
    return True


def _check_columns(cols: dict[str, Any]) -> None:
    """Every column option names a column (a non-empty string; None only where the column is
    optional), no two options of one input name the same column (names compare case-insensitively,
    as engines and :func:`recsql.validate.resolve_column` do), and no run key column is named like
    a column recsql adds to the results."""
    for option in (*_REQUIRED_COLUMNS, *_OPTIONAL_COLUMNS):
        value = cols[option]
        if value is None and option in _OPTIONAL_COLUMNS:
            continue
        if not isinstance(value, str) or not value:
            default = {"user_col": "user_id", "item_col": "item_id", "price_col": "price",
                       **EXTRA_COLUMNS}.get(option)
            fix = f"leave it out for the default {default!r}" if default else "or None for none"
            raise RecsqlError(f"{option} must be a column name (a non-empty string), got {value!r}; pass the "
                              f"column's name, e.g. {option}={(default or 'score')!r} ({fix})")
    order = ("rank_col", cols["rank_col"]) if cols["rank_col"] else ("score_col", cols["score_col"])
    groups = {"recs": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]), order,
                       *(("run_cols", c) for c in cols["run_cols"]), ("sample_col", cols["sample_col"])],
              "truth": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]),
                        ("relevance_col", cols["relevance_col"])],
              "item_features": [("item_col", cols["item_col"]), ("feature_col", cols["feature_col"]),
                                ("value_col", cols["value_col"])],
              "intents": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]),
                          ("intent_col", cols["intent_col"]), ("relevance_col", cols["relevance_col"])],
              "interactions": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]),
                               ("interaction_weight_col", cols["interaction_weight_col"])],
              "logs": [("user_col", cols["user_col"]), ("item_col", cols["item_col"]),
                       ("position_col", cols["position_col"]), ("propensity_col", cols["propensity_col"]),
                       ("slate_propensity_col", cols["slate_propensity_col"]),
                       ("cascade_propensity_col", cols["cascade_propensity_col"]),
                       ("reward_col", cols["reward_col"])]}
    for role, named in groups.items():
        seen: dict[str, str] = {}
        for option, column in named:
            if column is None:
                continue
            if column.lower() in seen:
                raise RecsqlError(f"{seen[column.lower()]} and {option} both name the {role} column {column!r}; "
                                  "each option needs its own column: name the right one for each")
            seen[column.lower()] = option
    for column in cols["run_cols"]:
        refuse_result_name(column, "run_cols", "run column", "run")
    for column in cols["segment_cols"]:
        refuse_result_name(column, "segment_cols", "segment column", "segment")
        if column.lower() in {c.lower() for c in (*cols["run_cols"], cols["user_col"])}:
            raise RecsqlError(f"segment_cols: {column!r} is also a run column or the user column; a segment column "
                              "names each user's segment in segments: name another (rename it in segments)")


def refuse_result_name(column: str, option: str, what: str, example: str) -> None:
    """Refuse a key column named like a column recsql adds to the results."""
    lower = column.lower()
    if lower in _OUTPUT_COLUMNS or lower.startswith("n_users_") or _is_metric_name(column):
        raise RecsqlError(f"{option}: the {what} {column!r} is named like a column recsql adds to the "
                          f"results (n_users, users_without_recs, recs_users_without_truth, a metric such as "
                          f"ndcg@10); rename it first, e.g. SELECT \"{column}\" AS {example}, ... and {option}='{example}'")


def run_columns(run_cols: Any, option: str = "run_cols") -> tuple[str, ...]:
    """``run_cols`` as a tuple of column names: one string is one column (``"model"``, not the
    letters m, o, d, e, l); a list or tuple of strings is several; None or ``()`` is none.

    >>> run_columns("model"), run_columns(["model", "date"]), run_columns(None)
    (('model',), ('model', 'date'), ())
    """
    if run_cols is None:
        return ()
    if isinstance(run_cols, str):
        return (run_cols,)
    example = ("'model'", "['model', 'date']") if option == "run_cols" else ("'country'", "['country', 'cohort']")
    fix = f"pass one column name ({option}={example[0]}) or a list of names ({option}={example[1]})"
    what = "the run key columns of recs" if option == "run_cols" else "segment columns of segments"
    if isinstance(run_cols, (bytes, dict)) or not isinstance(run_cols, Iterable):
        raise RecsqlError(f"{option} must name {what}, got {run_cols!r}; {fix}")
    columns = tuple(run_cols)
    wrong = [c for c in columns if not isinstance(c, str) or not c]
    if wrong:
        raise RecsqlError(f"{option} must be column names (non-empty strings), got {wrong[0]!r} in {run_cols!r}; {fix}")
    return columns
