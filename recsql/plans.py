"""The composer's plan (:class:`recsql.compose.Plan`) of one evaluation: from the options alone
(:func:`build_plan`: to_sql and dbt, which read no table) or from the bound inputs, validated on
the engine (:func:`validated_plan`: their columns found, typed and keyed like recs)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from .arguments import EXTRA_COLUMNS, refuse_result_name
from .compose import ITEM_VALUE_INVALID, Plan, target_policy
from .compose.intents import grouped_from
from .compose.policy import PER_POSITION
from .conventions import convention as get_convention
from .dialects import dialect as get_dialect
from .errors import RecsqlError
from .inputs import ROLES
from .metrics import Metric
from .sources import Source
from .validate import (family, id_cast, order_type, refuse_unnamed_grades, require_number, require_one_type,
                       require_same_ids, resolve_column, resolve_order)

if TYPE_CHECKING:  # a type only: to_sql and dbt build plans without importing an engine (or pandas)
    from .engines.base import Runner

# The optional inputs beside recs and truth (docs/guide/inputs.md), by their plan names (recsql.inputs).
EXTRA_INPUTS = ROLES[2:]


# Items columns read for a metric's needs (recsql/compose/needs.py _REQUIREMENTS): need -> column option.
_ITEM_NEEDS = {"price": "price_col", "probability": "probability_col", "category": "category_col", "head": "head_col"}


def checked_logs_run_cols(given: Any, cols: dict[str, Any], has_logs: bool, where: str = "") -> tuple[str, ...]:
    """to_sql's and dbt's ``logs_run_cols`` (they read no table, so they are told which run columns the logs
    carry): run columns, with logs given; refused otherwise, naming the run columns."""
    names = (given,) if isinstance(given, str) else tuple(given or ())
    wrong = [c for c in names if c not in cols["run_cols"]]
    if wrong:
        raise RecsqlError(f"{where}logs_run_cols: {wrong[0]!r} is not a run column; name some of run_cols "
                          f"({', '.join(map(repr, cols['run_cols'])) or 'none given'}), the columns the logs carry too")
    if names and not has_logs:
        raise RecsqlError(f"{where}logs_run_cols names run columns of logs, which were not given: pass logs= or "
                          "leave logs_run_cols out")
    return names


def build_plan(relations: dict[str, exp.Expression | None], cols: dict[str, Any], target: str, **resolved: Any) -> Plan:
    """The composer's plan from the bound relations and the user's options (``resolved`` overrides
    columns found by validation)."""
    settings = dict(
        user_col=cols["user_col"], item_col=cols["item_col"],
        score_col=None if cols["rank_col"] else cols["score_col"], rank_col=cols["rank_col"],
        relevance_col=cols["relevance_col"], price_col=cols["price_col"], run_cols=tuple(cols["run_cols"]),
        threshold=cols["threshold"], population=cols["population"], ties=cols["ties"],
        convention=cols["convention"], negative_unjudged=get_convention(cols["convention"]).negative_unjudged,
        gain_rule=get_convention(cols["convention"]).gain_rule, rules=cols["rules"],
        id_order=get_convention(cols["convention"]).id_order, id_text=get_dialect(target).id_text,
        duplicates="best" if cols["duplicates"] in ("best", "max") else "error",
        id_collation=get_dialect(target).collation, topk=get_dialect(target).topk, inline=get_dialect(target).inline,
        dialect=target, sample_col=cols["sample_col"], interaction_weight_col=cols["interaction_weight_col"],
        position_col=cols["position_col"], slate_propensity_col=cols["slate_propensity_col"],
        cascade_propensity_col=cols["cascade_propensity_col"], head_col=cols["head_col"],
        **{c: cols[c] for c in EXTRA_COLUMNS},
    )
    if relations.get("intents") is not None:  # to_sql and dbt read no table: the intents' grades in relevance_col
        settings["intent_relevance_col"] = cols["relevance_col"]
    settings.update(resolved)
    if relations.get("segments") is not None:  # the segment columns: the last run keys (Plan.segment_cols)
        segment_cols = tuple(resolved.get("segment_cols", cols["segment_cols"]))
        if not segment_cols:
            raise RecsqlError("segments: name the segment columns, e.g. segment_cols=['country'] (to_sql and dbt read "
                              "no table, so they cannot take every column but the user's as evaluate does)")
        settings.update(segment_cols=segment_cols, run_cols=(*settings["run_cols"], *segment_cols))
        settings.setdefault("segment_user", settings["user_col"])
    else:
        refuse_unread_segment_cols(cols["segment_cols"])
    return Plan(**relations, **settings)


def refuse_unread_segment_cols(segment_cols: Any) -> None:
    """Refuse segment columns named without segments (evaluate's and compare's): left unread, they would
    give a result over no segments where the user asked for one within them."""
    if segment_cols:
        named = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols)
        raise RecsqlError(f"segment_cols={named!r} names columns of segments, and no segments were given: pass "
                          "segments= too (CLI: --segments FILE --segment-col COLUMN)")


def _id_casts(sources: dict[str, Source], cols: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(input, internal id) -> how that input's id column is read to compare by value (validate.id_cast)."""
    casts = {}
    for role, src in sources.items():
        for internal, option in (("user_id", "user_col"), ("item_id", "item_col")):
            column = {c.lower(): c for c in src.columns}.get(cols[option].lower())
            if column is not None and id_cast(src.columns[column]):
                casts[role, internal] = id_cast(src.columns[column])
    return casts


def validated_plan(runner: Runner, sources: dict[str, Source], cols: dict[str, Any], metrics: list[Metric]) -> Plan:
    for src in sources.values():
        src.columns = runner.describe(src)
    recs, truth = sources["recs"], sources.get("truth")
    user = resolve_column(recs, cols["user_col"], "user_col")
    item = resolve_column(recs, cols["item_col"], "item_col")
    order = resolve_order(recs, cols["score_col"], cols["rank_col"])
    require_number(recs, order, "rank (1 is best)" if cols["rank_col"] else "score (higher is better)", runner)
    # every other input keys rows by user and/or item like recs
    keyed = {"truth": ("user", "item"), "interactions": ("user", "item"), "expected_recs": ("user", "item"),
             "items": ("item",), "catalog": ("item",), "item_features": ("item",), "intents": ("user", "item"),
             "logs": ("user", "item"), "reward_model": ("user", "item"), "segments": ("user",)}
    require_one_type(recs, user)
    require_one_type(recs, item)
    for role, src in sources.items():
        if role != "recs":
            ids = [(label, recs_col, resolve_column(src, cols[f"{label}_col"], f"{label}_col"))
                   for label, recs_col in (("user", user), ("item", item)) if label in keyed[role]]
            for _, _, column in ids:
                require_one_type(src, column)
            require_same_ids(recs, src, ids)
    if "expected_recs" in sources:
        require_number(sources["expected_recs"], resolve_column(sources["expected_recs"], order, "rank_col" if cols["rank_col"]
                                                           else "score_col"), "expected_recs' order (the recs' column)", runner)
    relevance = None
    if truth is not None and cols["relevance_col"] and (cols["relevance_col"].lower() in {c.lower() for c in truth.columns}
                                                        or cols["relevance_col"] != "relevance"):
        relevance = resolve_column(truth, cols["relevance_col"], "relevance_col")
        require_number(truth, relevance, "relevance", runner)
    elif truth is not None and cols["relevance_col"] and not get_convention(cols["convention"]).every_truth_row_relevant:
        # the default 'relevance', absent, and a convention that reads grades (replay's and msr's read none)
        refuse_unnamed_grades(truth, {c.lower() for c in (cols["user_col"], cols["item_col"], *cols["run_cols"])})
    runs = tuple(resolve_column(recs, c, "run_cols") for c in cols["run_cols"])
    sample = resolve_column(recs, cols["sample_col"], "sample_col") if cols["sample_col"] else None
    truth_has = [c for c in runs if truth is not None and c.lower() in {t.lower() for t in truth.columns}]
    # logs per run (docs/guide/logs.md, "Logs per run"): the run columns the logs carry, each run estimated on its rows
    logs_has = tuple(c for c in runs if "logs" in sources and c.lower() in {t.lower() for t in sources["logs"].columns})
    needs = set().union(*(m.spec.requires(m.all_options()) for m in metrics))
    item_columns = {}
    if "items" in sources:
        for need, option in _ITEM_NEEDS.items():
            if need in needs:
                item_columns[option] = resolve_column(sources["items"], cols[option], option)
                if need not in ("category", "head"):  # a head flag: true/false or 1/0, checked in the query
                    require_number(sources["items"], item_columns[option], need, runner)
        if "features" in needs and "item_features" not in sources:
            item_columns["features_col"] = resolve_column(sources["items"], cols["features_col"], "features_col")
    if "item_features" in sources:
        for option in ("feature_col", "value_col"):
            item_columns[option] = resolve_column(sources["item_features"], cols[option], option)
        require_number(sources["item_features"], item_columns["value_col"], "feature value", runner)
    if "intents" in sources:
        intents = sources["intents"]
        item_columns["intent_col"] = resolve_column(intents, cols["intent_col"], "intent_col")
        item_columns["intent_relevance_col"] = None
        if cols["relevance_col"] and cols["relevance_col"].lower() in {c.lower() for c in intents.columns}:
            item_columns["intent_relevance_col"] = resolve_column(intents, cols["relevance_col"], "relevance_col")
            require_number(intents, item_columns["intent_relevance_col"], "intent relevance", runner)
    if cols["interaction_weight_col"]:
        if "interactions" not in sources:
            raise RecsqlError(f"interaction_weight_col={cols['interaction_weight_col']!r} weighs the interactions, "
                              "which were not given: pass interactions= (CLI --interactions) or leave the option out")
        weight = resolve_column(sources["interactions"], cols["interaction_weight_col"], "interaction_weight_col")
        require_number(sources["interactions"], weight, "interaction weight", runner)
        item_columns["interaction_weight_col"] = weight
    item_columns.update(_log_columns(sources, cols))
    item_columns.update(_policy_columns(recs, cols, metrics))
    # text ids and run keys take the dialect's binary collation (bytewise order, 'B' and 'b' two runs);
    # dates and other non-text ids compare by value as they are
    staged_runs = (*runs, sample) if sample else runs  # a sample column is the stage's last run key (compose.staged)
    keyed_ids = (("user_id", user), ("item_id", item), *((f"_run{i}", c) for i, c in enumerate(staged_runs)))
    text_ids = frozenset(internal for internal, column in keyed_ids if family(recs.columns[column]) == "string")
    segmented = {}
    if "segments" in sources:
        segmented = _segment_columns(sources["segments"], cols, runs)
        text_ids |= {f"_run{len(runs) + i}" for i, c in enumerate(segmented["segment_cols"])
                     if family(sources["segments"].columns[c]) == "string"}
    relations = {role: sources[role].relation if role in sources else None for role in ("recs", "truth", *EXTRA_INPUTS)}
    orders = {"ord_type": order_type(recs.columns[order], runner.dialect), "id_casts": _id_casts(sources, cols),
              "item_needs": frozenset(needs & set(ITEM_VALUE_INVALID))}
    if "expected_recs" in sources:
        expected = sources["expected_recs"]
        orders["expected_ord_type"] = order_type(expected.columns[resolve_column(expected, order, "score_col")],
                                                 runner.dialect)
    orders["intent_grouped_from"] = grouped_from(runner.dialect, get_dialect(runner.dialect).step_depth) \
        if runner.long_in_steps else 0
    return build_plan(relations, cols, runner.dialect, **orders,
                      user_col=user, item_col=item, score_col=None if cols["rank_col"] else order,
                      rank_col=order if cols["rank_col"] else None, relevance_col=relevance,
                      run_cols=runs, truth_has_runs=len(truth_has) == len(runs) and bool(runs), text_ids=text_ids,
                      logs_run_cols=logs_has,
                      sample_col=sample,
                      **item_columns, **segmented)


def _log_columns(sources: dict[str, Source], cols: dict[str, Any]) -> dict[str, Any]:
    """The columns of logs (position: optional, every impression the one slot without it; propensity and
    reward, numbers) and of the reward model (its reward column: the predicted reward), as they spell them."""
    found: dict[str, Any] = {}
    if "logs" in sources:
        logs = sources["logs"]
        position = cols["position_col"]
        found["position_col"] = None
        if position and (position.lower() in {c.lower() for c in logs.columns} or position != "position"):
            found["position_col"] = resolve_column(logs, position, "position_col")
            require_number(logs, found["position_col"], "position (1 is the first)")
        for option, what in (("propensity_col", "propensity (the logging policy's probability)"),
                             ("reward_col", "reward")):
            found[option] = resolve_column(logs, cols[option], option)
            require_number(logs, found[option], what)
        for option, what in (("slate_propensity_col", "slate propensity (the logging policy's probability of the "
                                                      "whole slate)"),
                             ("cascade_propensity_col", "cascade propensity (the logging policy's probability of the "
                                                        "slate's positions up to this one)")):
            if cols[option]:
                found[option] = resolve_column(logs, cols[option], option)
                require_number(logs, found[option], what)
    else:
        named = next((o for o in ("slate_propensity_col", "cascade_propensity_col") if cols[o]), None)
        if named:
            raise RecsqlError(f"{named}={cols[named]!r} names a column of logs, which were not given: pass logs= "
                              "(CLI --logs) or leave the option out")
    if "reward_model" in sources:
        found["model_reward_col"] = resolve_column(sources["reward_model"], cols["reward_col"], "reward_col")
        require_number(sources["reward_model"], found["model_reward_col"], "predicted reward")
    return found


def _policy_columns(recs: Source, cols: dict[str, Any], metrics: list[Metric]) -> dict[str, Any]:
    """What the recs are to the estimators' target (recsql/compose/policy.py), and for a policy per position
    (target=positions) or of the logged slates' prefixes (target=slates) the recs' position column: the logs' name, ``position_col``, as recs spell it."""
    policy = target_policy(metrics)
    if policy not in PER_POSITION:
        return {"policy": policy}
    column = resolve_column(recs, cols["position_col"] or "position", "position_col")
    require_number(recs, column, "position (1 is the first) of the target policy's probabilities")
    return {"policy": policy, "recs_position_col": column}


def _segment_columns(segments: Source, cols: dict[str, Any], runs: tuple[str, ...]) -> dict[str, Any]:
    """The segments input's user column and segment columns (``segment_cols``; default: every column
    but the user's), as the input spells them."""
    user = resolve_column(segments, cols["user_col"], "user_col")
    named = cols["segment_cols"] or tuple(c for c in segments.columns if c != user)
    if not named:
        raise RecsqlError(f"segments: the input has only the user column {user!r}; add the segment columns "
                          "(one row per user: user, country, ...)")
    columns = tuple(resolve_column(segments, c, "segment_cols") for c in named)
    for column in columns:
        refuse_result_name(column, "segment_cols", "segment column", "segment")
        if column.lower() in {c.lower() for c in (*runs, user)}:
            raise RecsqlError(f"segments: the column {column!r} is also a run column (run_cols) or the user column; "
                              f"rename it in segments, or name the segment columns: segment_cols=[...]")
    return {"segment_cols": columns, "segment_user": user}
