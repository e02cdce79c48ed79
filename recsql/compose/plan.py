"""What the composer is given: the :class:`Plan` (bound relations, column names, options) and the
constants every part of it shares.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

from sqlglot import exp

from ..conventions import MeasureRule


RUN_KEYS = "run_keys"


POPULATIONS = ("relevant", "intersection", "judged")


TIES = ("item_id", "item_id_desc", "average")


# Which users each population averages over, from a user's flags (relevant truth items, truth rows, recs).
POPULATION_SQL = {
    "relevant": "_n_rel > 0",
    "intersection": "_n_rel > 0 AND _has_recs = 1",
    "judged": "_n_truth > 0",
}


# The same for the intent-aware metrics (header `population: intents`), intents in the role of truth:
# _n_intents = the user's intents with a relevant item (NULL: the user has no row in intents).
INTENT_POPULATION_SQL = {
    "relevant": "_n_intents > 0",
    "intersection": "_n_intents IS NOT NULL AND _has_recs = 1",
    "judged": "_n_intents IS NOT NULL",
}


# Whose values each metric's population holds (header `population:`, recsql/metrics.py).
METRIC_POPULATION_SQL = {"lists": "_has_recs = 1", "global": "_is_global = 1"}


# Stage features read from the main list's rows (src 1) by other CTEs: a metric ranked under a
# second tie rule (src 9) cannot use them.
MAIN_LIST_FEATURES = {"list_ideal", "pairs", "corr", "cascade", "exposure", "tie_bounds", "agreement", "category_shares",
                      "intents", "intent_depths", "attention", "attention_groups", "popularity_bias",
                      "expected_exposure", "logs"}


SECOND_SRC = 9  # sql/_ranked.sql: the list under a second tie rule
GLOBAL_SRC = (5, 14, 15, 16, 18)  # sql/_ranked.sql: a run's rows of no user (exposure, attention, groups' attention, logs)


OUTPUTS = ("per_user", "summary", "raw", "checks", "runs")


MAX_SLOTS = 10_000  # positions sql/_ranked.sql's slot_positions generates (four digit tables)


TOPK_MAX_K = 100_000  # above this a per-user heap is no faster than sorting (DuckDB's MIN_BY takes n < 1e6)


@dataclass
class Plan:
    """Everything the composer needs besides the metrics: bound relations and column names."""

    recs: exp.Expression
    truth: exp.Expression
    items: exp.Expression | None = None
    user_col: str = "user_id"
    item_col: str = "item_id"
    score_col: str | None = "score"
    rank_col: str | None = None
    relevance_col: str | None = "relevance"
    price_col: str = "price"
    run_cols: tuple[str, ...] = ()
    truth_has_runs: bool = False
    threshold: float = 1.0
    population: str = "relevant"
    duplicates: str = "error"
    text_ids: frozenset = frozenset()  # internal id columns ("user_id", "item_id") holding strings
    topk: str | None = None  # engine whose top-k override (sql/_topk.<engine>.sql) replaces ROW_NUMBER
    intent_grouped_from: int = 0  # the cutoff from which the greedy chain is grouped (compose/intents.py; 0: never)
    inline: tuple[str, ...] = ()  # CTEs to write AS NOT MATERIALIZED (recsql/dialects.py)
    id_collation: str | None = None  # binary collation for text ids (recsql/dialects.py)
    ties: str = "item_id"  # tie rule: item_id (ascending), item_id_desc, or average (expected value)
    id_order: str = "native"  # "text": tied ids compare as text, bytewise (trec_eval's strcmp), whatever their type
    id_text: str = "VARCHAR"  # the type ids are cast to for that (a bytewise-comparing one: recsql/dialects.py)
    rules: dict[str, MeasureRule] = field(default_factory=dict)  # per-measure rules of the convention in force
    negative_unjudged: bool = False  # truth rows with relevance < 0 mean "unjudged" (trec_eval): dropped
    gain_rule: str = "all"  # "relevant": items below the threshold give no gain (ranx)
    convention: str = "recsql"  # fills in the metric options the user did not write (recsql/conventions.py)
    dialect: str = "duckdb"
    ord_type: str = "DOUBLE"  # the type recs are ranked in (validate.order_type: exact for wide integers/decimals)
    expected_ord_type: str = "DOUBLE"
    id_casts: dict[tuple[str, str], str] = field(default_factory=dict)  # (input, internal id) -> _ID_CASTS key
    item_needs: frozenset = frozenset()  # the items' value columns the metrics read (explaining a failed check)
    # Inputs of the beyond-accuracy metrics (docs/guide/metrics.md, "Beyond accuracy and user models"), each optional.
    interactions: exp.Expression | None = None  # (user, item) seen in training
    catalog: exp.Expression | None = None  # items; default: the items input, else truth ∪ recs items
    expected_recs: exp.Expression | None = None  # another recommender's lists, ordered like recs
    item_features: exp.Expression | None = None  # (item, feature, value) rows
    intents: exp.Expression | None = None  # (user, item, intent, relevance): judgments per intent (subtopic)
    probability_col: str = "probability"
    category_col: str = "category"
    head_col: str | None = None  # an items column flagging the head (the long-tail metrics' split = items)
    features_col: str = "features"  # an items column holding a feature vector (array; DuckDB)
    feature_col: str = "feature"
    value_col: str = "value"
    intent_col: str = "intent"
    # interactions' weight column (miscalibration's history weights w_ui; None: every item weighs 1)
    interaction_weight_col: str | None = None
    intent_relevance_col: str | None = None  # the intents' relevance column (None: every row relevant)
    # Logged impressions (docs/guide/logs.md): (context, item, position, propensity, reward) rows of the
    # logging policy, read by the off-policy estimators; a reward model's (context, item, reward) predictions.
    logs: exp.Expression | None = None
    reward_model: exp.Expression | None = None
    position_col: str | None = "position"  # None: every logged impression is the one slot (position 1)
    propensity_col: str = "propensity"
    # the slate estimators' logged propensities of each slate (None: not logged): the joint one of the whole
    # slate, the same on each of its rows, and the cascade one of its positions up to the row's
    slate_propensity_col: str | None = None
    cascade_propensity_col: str | None = None
    reward_col: str = "reward"
    # What the recs are to the off-policy estimators' target (docs/guide/logs.md, "The target policy"): None,
    # lists; "scores", the probability π_e(a | x) of each (context, item) in the score column; "positions", the
    # probability π_e(a at k | x) of each (context, item, position) row, the position in the recs' column
    # ``recs_position_col`` (the logs' position column, as recs spells it). Set from the metrics asked
    # (recsql.compose.target_policy).
    policy: str | None = None
    recs_position_col: str | None = None
    model_reward_col: str | None = None  # the reward model's reward column as it spells it (None: reward_col)
    # The logs carry the run keys: each run estimated on its own rows of them (recsql.compare's resampled
    # contexts, recsql/comparison_logged.py), never a user's option.
    logs_has_runs: bool = False
    # The run columns (as recs spells them) that the user's logs carry too (docs/guide/logs.md, "Logs per run"):
    # each run is estimated on the rows of its own values of them (a week's logs for each model's lists of that
    # week); the other runs' keys it shares. Empty: every run on all the logs.
    logs_run_cols: tuple[str, ...] = ()
    # compare's resampled traffic: the logs' column numbering the copies of a context drawn several times, each
    # copy its own slate (recsql/comparison_logged.py); None: a slate is a context's rows
    logs_copy_col: str | None = None
    # Segments (docs/guide/populations.md, "Segments"): a relation (user, segment columns) giving each
    # user one segment; its columns are the last run keys (run_cols ends with segment_cols), read by
    # recs and truth through a join on the user, so each (run, segment) is evaluated as a run.
    segments: exp.Expression | None = None
    segment_cols: tuple[str, ...] = ()  # the segments' columns, the last len(segment_cols) of run_cols
    segment_user: str = "user_id"  # the segments' user column
    # Sampled runs (docs/guide/metrics.md, "Sampled rankings"): a recs column numbering each user's sampled
    # lists of a stochastic run; the stage reads it as one more run key (staged), and the per-user values
    # are the means over a run's samples.
    sample_col: str | None = None
    sampled: bool = False  # a staged plan whose last run column is the sample column
    # A recs column giving each (run, user)'s list its weight in the run's global rows (sql/_ranked.sql's
    # list_weight): recsql.compare's resampled lists (recsql/comparison_weighted.py), never a user's option.
    weight_col: str | None = None


def text_rules(plan: "Plan") -> dict[str, object]:
    """The plan's dialect rules for ids as text (``id_collation``, ``id_text``) where the composer reads
    them, else their defaults: it reads them for text ids (:func:`recsql.compose.inputs.collation`) and
    when the convention orders tied ids as text (``stage._tie_key``) only. A cache of statements keys
    on these, so dialects that differ in nothing else share one composition."""
    if plan.text_ids or plan.id_order == "text":
        return {"id_collation": plan.id_collation, "id_text": plan.id_text}
    return {"id_collation": None, "id_text": "VARCHAR"}


def order_datatype(name: str) -> exp.DataType:
    """The order key's type (``Plan.ord_type``); a bare DECIMAL stays unconstrained (PostgreSQL's numeric
    of any digits), where DuckDB's reading of it would be DECIMAL(18, 3)."""
    return exp.DataType.build(name, dialect="" if name.strip().upper() == "DECIMAL" else "duckdb")


def quoted_column(name: str, table: str | None = None) -> exp.Column:
    """A user-named column as a quoted identifier."""
    return exp.column(exp.to_identifier(name, quoted=True), table=table)


def internal_runs(plan: Plan) -> list[str]:
    """Internal names of the run key columns: _run0, _run1, ..."""
    return [f"_run{i}" for i in range(len(plan.run_cols))]


def logs_run_pairs(plan: Plan) -> list[tuple[str, str]]:
    """The run keys the logs carry, each as (its column in the logs, its internal name): every one for compare's
    resampled traffic, else those of ``logs_run_cols``."""
    return [(column, internal) for column, internal in zip(input_runs(plan), internal_runs(plan))
            if plan.logs_has_runs or column in plan.logs_run_cols]


def logs_runs(plan: Plan) -> list[str]:
    """Internal names of the run keys the logs carry (:func:`logs_run_pairs`)."""
    return [internal for _, internal in logs_run_pairs(plan)]


def input_runs(plan: Plan) -> tuple[str, ...]:
    """The run key columns recs (and truth that has run keys) hold: run_cols less the segments'."""
    return plan.run_cols[: len(plan.run_cols) - len(plan.segment_cols)]


def segment_runs(plan: Plan) -> list[str]:
    """Internal names of the segments' run keys (the last ones)."""
    return internal_runs(plan)[len(input_runs(plan)):]


def staged(plan: Plan) -> Plan:
    """The plan the stage is built from: with a sample column, the sample is the last run key, so each
    (run, sample) is ranked, judged and scored as a run; without one, ``plan`` itself."""
    if plan.sample_col is None:
        return plan
    return dataclasses.replace(plan, run_cols=(*plan.run_cols, plan.sample_col), sample_col=None, sampled=True)


def policy_runs(plan: Plan) -> list[str]:
    """The internal run keys of a staged plan's runs without their sample (the last key of a sampled
    plan): a stochastic run, a policy, whose samples the expected-exposure rows gather."""
    keys = internal_runs(plan)
    return keys[:-1] if plan.sampled else keys


def truth_runs(plan: Plan) -> list[str]:
    """Internal names of the run keys truth_in carries: every one when truth has the run columns,
    else the segments' (the user's segment: truth is shared by the runs, not by the segments)."""
    return internal_runs(plan) if plan.truth_has_runs else segment_runs(plan)


View = tuple  # (tie rule, negative_unjudged): how a list is ranked and judged for a metric


def _plain(value: object) -> object:
    """A plan field as a hashable, order-independent value."""
    if isinstance(value, exp.Expression):
        return ("sql", value.sql("duckdb"))
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted(map(repr, value))))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), repr(v)) for k, v in value.items())))
    return repr(value)


def statement_key(plan: Plan, metrics: Sequence, output: str, dialect_name: str, pretty: bool) -> tuple:
    """The plan's fields and the metrics asked as plain values: what a composed statement depends on."""
    fields = tuple((f.name, _plain(getattr(plan, f.name))) for f in dataclasses.fields(plan))
    asked = tuple((m.name, m.k, m.options, tuple(sorted(m.explicit)), m.asked) for m in metrics)
    return fields, asked, output, dialect_name, pretty
