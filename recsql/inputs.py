"""The one description of what recsql evaluates on: :class:`Inputs`.

The inputs (recommendations, truth and the optional tables), their column names and the options
that define the metrics (threshold, population, ties, convention, duplicates) are one object,
checked in one place (:meth:`Inputs.options`, by recsql/arguments.py). :func:`recsql.evaluate`,
:func:`recsql.to_sql` and :func:`recsql.compare` keep their keyword front doors, and each builds an
:class:`Inputs` from its keywords; a test holds their keyword sets to this class's fields.

>>> Inputs(recs="recs", truth="truth", run_cols="model").options()["run_cols"]
('model',)
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .arguments import COLUMN_OPTIONS, DEFAULT_SCORE_COL, checked_options, run_columns
from .errors import RecsqlError, warn
from .metrics import Metric

ROLES = ("recs", "truth", "items", "interactions", "catalog", "expected_recs", "item_features", "intents",
         "logs", "reward_model", "segments")  # docs/guide/inputs.md


# what renamed() says of expected_recs, whose old name (baseline) now names the run compared against
EXPECTED_RECS_RENAMED = " (another recommender's lists; baseline names the run compared against)"


def renamed(new_name: str, new: Any, old_name: str, old: Any, where: str, what: str = "") -> Any:
    """The value of an option given by its new name or, for one more release, its old one (with a
    FutureWarning naming the new one); both given is an error."""
    if old is None:
        return new
    if new is not None:
        raise RecsqlError(f"{where}: pass {new_name}= only ({old_name}= is its old name{what})")
    warn(f"{where}: {old_name}= is renamed {new_name}={what}; {old_name}= will be removed in the next release",
         FutureWarning)
    return old


@dataclass(frozen=True)
class Inputs:
    """The inputs, their columns and the definition options, as evaluate's keywords name them
    (docs/guide/inputs.md): ``recs`` (required), ``truth`` and the optional tables (a table name, a
    file, a DataFrame: whatever the engine reads); the column options; ``threshold``,
    ``population``, ``duplicates``, ``convention`` and ``ties``; ``segments`` (each user's segment)
    and ``segment_cols`` (its segment columns; default: every column but the user's)."""

    recs: Any = None
    truth: Any = None
    items: Any = None
    interactions: Any = None
    catalog: Any = None
    expected_recs: Any = None
    item_features: Any = None
    intents: Any = None
    logs: Any = None
    reward_model: Any = None
    segments: Any = None
    user_col: str = "user_id"
    item_col: str = "item_id"
    score_col: str | None = DEFAULT_SCORE_COL
    rank_col: str | None = None
    relevance_col: str | None = "relevance"
    price_col: str = "price"
    run_cols: Iterable[str] | str | None = ()
    threshold: float | None = None
    population: str | None = None
    duplicates: str = "error"
    convention: str = "recsql"
    ties: str | None = None
    probability_col: str = "probability"
    category_col: str = "category"
    head_col: str | None = None
    features_col: str = "features"
    feature_col: str = "feature"
    value_col: str = "value"
    intent_col: str = "intent"
    interaction_weight_col: str | None = None
    position_col: str | None = "position"
    propensity_col: str = "propensity"
    slate_propensity_col: str | None = None
    cascade_propensity_col: str | None = None
    reward_col: str = "reward"
    sample_col: str | None = None
    segment_cols: Iterable[str] | str | None = None

    @classmethod
    def of(cls, arguments: dict[str, Any]) -> "Inputs":
        """The inputs among an entry point's arguments (every field by name; the others ignored)."""
        return cls(**{name: arguments[name] for name in field_names() if name in arguments})

    def given(self) -> dict[str, Any]:
        """Each input, by its name (:data:`ROLES`, the composer's plan uses the same) -> what was passed
        (None: not given)."""
        return {role: getattr(self, role) for role in ROLES}

    def given_options(self, cols: dict[str, Any]) -> dict[str, Any]:
        """The options as given (those not at their default), with the convention, and the tie rule
        and population it chose (``cols``: :meth:`options`' result): what an evaluation records."""
        defaults = {f.name: f.default for f in dataclasses.fields(Inputs)}
        given = {name: getattr(self, name) for name in (*COLUMN_OPTIONS, "run_cols", "segment_cols")
                 if not _unchanged(getattr(self, name), defaults[name])}
        return {**given, "convention": cols["convention"], "ties": cols["ties"], "population": cols["population"]}

    def options(self) -> dict[str, Any]:
        """The column and definition options, checked (one error naming the option and the fix); the
        convention fills in the tie rule and population not given."""
        return checked_options(run_cols=run_columns(self.run_cols),
                               segment_cols=run_columns(self.segment_cols, "segment_cols"),
                               **{name: getattr(self, name) for name in COLUMN_OPTIONS})


def field_names() -> list[str]:
    """The names of :class:`Inputs`' fields, in order: the keywords every entry point shares."""
    return [f.name for f in dataclasses.fields(Inputs)]


def input_keywords(arguments: dict[str, Any]) -> dict[str, Any]:
    """The :class:`Inputs` fields beside recs and truth among a call's ``arguments`` (its ``locals()``
    before anything else is bound): evaluate and to_sql take every one by its own name."""
    return {name: arguments[name] for name in field_names() if name not in ("recs", "truth")}


def _unchanged(value: Any, default: Any) -> bool:
    """``value`` is the keyword's default (compared by value only for plain values: a DataFrame is
    never one)."""
    return value is default or (isinstance(value, (str, int, float, tuple, list)) and value == default)


def unpacked(recs: Any, truth: Any, metrics: Any, keywords: dict[str, Any], where: str,
             truth_default: Any = None) -> tuple[Any, Any, Any, dict[str, Any]]:
    """An entry point's ``(recs, truth, metrics, keywords)`` with an :class:`Inputs` in place of
    ``recs`` read out of it: ``evaluate(inputs, ["ndcg@10"])`` (the metrics where truth would be) or
    ``evaluate(inputs, metrics=[...])``. An input or option given both by the Inputs and as a
    keyword (or a truth beside the Inputs) is an error; without an Inputs the arguments are returned
    as they are."""
    if not isinstance(recs, Inputs):
        return recs, truth, metrics, keywords
    if not _unchanged(truth, truth_default):
        if metrics is not None or not metrics_like(truth):
            raise RecsqlError(f"{where}: the Inputs holds truth; pass the metrics after it: "
                              f"{where}(inputs, ['ndcg@10']) or {where}(inputs, metrics=['ndcg@10'])")
        metrics = truth
    defaults = {f.name: f.default for f in dataclasses.fields(Inputs)}
    twice = [k for k, v in keywords.items() if k in defaults and not _unchanged(v, defaults[k])]
    if twice:
        raise RecsqlError(f"{where}: {twice[0]}= is given both in the Inputs and as a keyword; pass the inputs one "
                          f"way: in the Inputs (Inputs(..., {twice[0]}=...)) or as keywords without an Inputs")
    fields = {k: getattr(recs, k) for k in defaults if k not in ("recs", "truth")}
    return recs.recs, recs.truth, metrics, {**keywords, **fields}


def metrics_given(metrics: Any, where: str) -> Any:
    """``metrics``, refusing none."""
    if metrics is None:
        raise RecsqlError(f"{where}: metrics must be a metric name or a list of them; name the metrics, e.g. "
                          f"{where}(recs, truth, ['ndcg@10']) or {where}(recsql.Inputs(recs=..., truth=...), ['ndcg@10'])")
    return metrics


def metrics_like(value: Any) -> bool:
    """A metric or a list of metrics (names or :class:`recsql.Metric`), not an input."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return bool(items) and all(isinstance(m, (str, Metric)) for m in items) and \
        (isinstance(value, (list, tuple)) or isinstance(value, Metric) or "@" in value)


def metrics_first(function: Callable[..., str]) -> Callable[..., str]:
    """:func:`recsql.to_sql` taking its arguments in its old order ``(metrics, recs, truth)`` for one more
    release, with a FutureWarning, when the first is clearly metrics (a metric, or a list of them)."""
    @functools.wraps(function)
    def ordered(*args: Any, **kwargs: Any) -> str:
        if args and metrics_like(args[0]) and "metrics" not in kwargs:
            warn("to_sql(metrics, recs, truth) is now to_sql(recs, truth, metrics), in evaluate's order; the "
                 "old order will be refused in the next release", FutureWarning)
            args, kwargs = args[1:], {**kwargs, "metrics": args[0]}
        return function(*args, **kwargs)
    return ordered
