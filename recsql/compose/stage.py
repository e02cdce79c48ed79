"""The ranked-rows stage (``sql/_ranked.sql``) fitted to the metrics asked: features nobody needs
pruned, the tie rule and the top-k cut applied, run keys expanded.
"""

from __future__ import annotations

from functools import lru_cache

from sqlglot import exp

from ..errors import RecsqlError
from ..metrics import Metric
from ..templates import read_template
from ..trees import CopiedOnRead, nodes, parse
from .inputs import collation
from .features import ATTENTION, ideal_cutoff, largest_cutoff, stage_features
from .intents import ideal_chain, list_values
from .plan import TOPK_MAX_K, Plan, View, internal_runs, logs_runs, order_datatype, truth_runs as truth_run_keys
from .policy import target_rows
from .samples import gather_samples
from .weights import FIXED_FEATURES, WEIGHTED_BRANCHES, WEIGHTED_FEATURES, unweighted, users_of_shared_truth
from .rewrite import (alias_projections, drop_join, drop_joins, expand_run_keys, fold_constants, key_join, null_column,
                      pad_union, reachable, substitute, union_all, union_branches)


def _literal(value: object) -> exp.Expression:
    if value is None:
        return exp.null()
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)


def _key_rows(columns: list[tuple[str, str | None]], rows: list[tuple]) -> exp.Expression:
    """A table of literal rows, ``SELECT v AS name, CAST(w AS type) AS name2 ... UNION ALL ...``: the keys a
    stage feature is built for (``columns``: each column's name and the type it is cast to, or None)."""
    return union_all([exp.select(*[exp.alias_(exp.cast(_literal(v), type_) if type_ else _literal(v), name)
                                   for (name, type_), v in zip(columns, row)]) for row in rows])


def _cutoffs_select(ks: list[int]) -> exp.Expression:
    return _key_rows([("k", None)], [(k,) for k in ks])


def _cascades_select(keys: list[tuple[str, str]]) -> exp.Expression:
    """(kind, grade) rows for the cascade metrics asked: grade NULL = the largest relevance in truth."""
    return _key_rows([("kind", None), ("grade", "DOUBLE")],
                     [(kind, None if grade == "auto" else grade) for kind, grade in keys])


@lru_cache(maxsize=1)
def _parsed_stage() -> exp.Select:
    return parse(read_template("_ranked")[1], read="duckdb")


# Optional parts of the stage, each kept only when an asked metric's header names its feature.
# UNION ALL branches of `stacked`, by the CTE they read:
BRANCHES = {"list_ideal": "list_ideal", "slots": "slots", "exposure": "exposure_rows", "pairs": "pair_rows",
             "category_spread": "category_spread_rows", "feature_spread": "feature_spread_rows",
             "corr": "corr_rows", "cascade": "cascade_rows",
             "agreement": "agreement_rows", "category_shares": "category_rows", "intents": "intent_rows",
             "intent_depths": "intent_depths", "attention": "attention_rows", "attention_groups": "attention_groups",
             "popularity_bias": "bias_rows", "expected_exposure": "ee_rows",
             "logs": "log_positions"}


# Joins (CTE, aliases): dropped with their columns, which become NULL, when the feature is off.
_JOINS = {"popularity": ("ranked", {"pop"}), "expected_recs": ("ranked", {"b", "bl"}), "interaction_users": ("ranked", {"iu"}),
          "intents": ("ranked", {"ius"}), "intent_ideal": ("intent_depths", {"i"}),
          "catalog": ("ranked", {"cs"}), "tail_items": ("ranked", {"tl"}), "category_targets": ("category_rows", {"t"}),
          # the logged impressions' joins, each read by the estimators of one target or of the reward model
          "log_list": ("log_rows", {"s"}), "log_scores": ("log_rows", {"c"}), "log_factual": ("log_rows", {"qf"}),
          "log_model_list": ("log_rows", {"a", "qa"}), "log_model_scores": ("log_rows", {"p"}),
          "log_pbm": ("log_rows", {"ex", "ep"})}


# Columns (CTE, column, type) replaced by a typed NULL when the feature is off (None: the order's type).
_COLUMNS = {"tie_bounds": (("list_judged", "ord", None), ("list_rows", "tie_first", "BIGINT"),
                           ("list_rows", "tie_last", "BIGINT"))}


# Features keyed by cutoff get a table of the cutoffs asked: CTE -> feature.
_CUT_TABLES = {"list_ideal_cuts": "list_ideal", "exposure_cuts": "exposure", "corr_cuts": "corr",
               "category_spread_cuts": "category_spread", "feature_spread_cuts": "feature_spread",
               "agreement_cuts": "agreement", "bias_cuts": "popularity_bias"}


def _tie_key(plan: Plan) -> exp.Expression:
    """What tied items are ordered by: the item id, or under a convention whose tool compares ids as
    text (``id_order="text"``: trec_eval's strcmp, Python's str order) its text compared bytewise,
    whatever the column type: a cast to the dialect's bytewise text type, with its binary collation
    where the default is not bytewise. A text id needs no cast: recs_in gave it that collation."""
    item = exp.column("item_id")
    if plan.id_order != "text" or "item_id" in plan.text_ids:
        return item
    text = exp.cast(item, exp.DataType.build(plan.id_text))
    if plan.id_collation and plan.id_text.upper().startswith("VARCHAR"):
        return exp.Collate(this=text, expression=collation(plan.id_collation))
    return text


def _slate_per_copy(select: exp.Select) -> None:
    """log_rows' windows over a logged slate (partitioned by run and context) partitioned by the copy too: in
    compare's resampled traffic a context drawn w times is w slates."""
    for window in nodes(select, exp.Window):
        keys = window.args.get("partition_by") or []
        if any(isinstance(k, exp.Column) and k.name == "user_id" and k.table == "l" for k in keys):
            window.set("partition_by", [*keys, exp.column("copy", table="l")])


def _key_examination(ctes: dict[str, exp.CTE], keys: list[str]) -> None:
    """``log_examination`` per value of the logs' run ``keys`` and position, and log_rows' two joins of it on
    the row's own keys: each run's examination estimated from its own logs."""
    select = ctes["log_examination"].this
    select.set("expressions", [*(exp.column(k) for k in keys), *select.expressions])
    select.set("group", exp.Group(expressions=[*(exp.column(k) for k in keys), exp.column("position")]))
    for join in ctes["log_rows"].this.args["joins"]:
        if join.this.name == "log_examination":
            alias = join.this.alias_or_name
            join.set("on", exp.and_(join.args["on"], *[exp.column(k, table=alias).eq(exp.column(k, table="l"))
                                                       for k in keys]))


def _order_ties(node: exp.Expression, ties: str, key: exp.Expression) -> None:
    """Tied items (``ORDER BY ord ASC, item_id ASC``) ordered by ``key``, descending for item_id_desc."""
    for ordered in nodes(node, exp.Ordered):
        if isinstance(ordered.this, exp.Column) and ordered.this.name == "item_id":
            ordered.set("this", key.copy())
            ordered.set("desc", ties == "item_id_desc")


def _ranking(plan: Plan, cte: exp.CTE, ties: str, max_k: int | None, features: dict) -> None:
    """Set the ranking of a list CTE (list_ranked, second_ranked) for a tie rule: DuckDB's top-k
    override where it applies (ascending ties, a cutoff), else ROW_NUMBER with the tie key. The main list,
    its ties broken by the item id itself, takes heaps on the order alone, by rank or by score
    (sql/_topk_split.duckdb.sql: 17% less time at 10M pre-ranked rows; on scores, 10M rows under a 400 MB
    memory limit, where heaps keyed by (order, item id) ran out of memory, in about the same time);
    else heaps on (order, tie key) (sql/_topk.duckdb.sql)."""
    key = _tie_key(plan)
    if (ties == "item_id" and plan.topk and max_k is not None and max_k <= TOPK_MAX_K
            and "tie_bounds" not in features):
        split = cte.alias == "list_ranked" and isinstance(key, exp.Column)
        name = f"_topk_split.{plan.topk}" if split else f"_topk.{plan.topk}"
        override = substitute(parse(read_template(name)[1], read="duckdb"), {"max_k": max_k},
                               f"sql/{name}.sql")
        for tup in nodes(override, exp.Tuple):
            for col in nodes(tup, exp.Column):
                if col.name == "item_id":
                    col.replace(key.copy())
        cte.set("this", override)
    else:
        _order_ties(cte.this, ties, key)


def _intent_ideal(plan: Plan, order: list[str], ctes: dict[str, exp.CTE], features: dict) -> None:
    """The alphas the intent-aware metrics ask (``intent_alphas``) and, when one is normalised by the
    ideal list, its greedy picks: on DuckDB from per-user lists (sql/_intent_ideal.duckdb.sql), elsewhere
    the chain of picks before ``intent_ideal`` (recsql/compose/intents.py)."""
    alphas = sorted({alpha for feature in ("intent_depths", "intent_ideal") for alpha, _ in features.get(feature, ())})
    ctes["intent_alphas"].set("this", union_all([exp.select(exp.alias_(exp.cast(exp.Literal.number(a), "DOUBLE"),
                                                                        "alpha")) for a in alphas or [0.5]]))
    if "intent_ideal" not in features:
        return
    steps = max(k for _, k in features["intent_ideal"])
    if plan.topk:
        name = f"_intent_ideal.{plan.topk}"
        override = parse(read_template(name)[1], read="duckdb")
        ctes["intent_ideal"].set("this", substitute(override, list_values(steps), f"sql/{name}.sql"))
        return
    chain, ideal = ideal_chain(steps, grouped=0 < plan.intent_grouped_from <= steps)
    ctes["intent_ideal"].set("this", ideal)
    _insert_before(order, ctes, "intent_ideal", chain)


HEADS = "list_heads"  # DuckDB's per-user top-k heaps, when the main list is ranked by them
TOPS = "list_tops"  # each user's top k from the heaps on the order alone (sql/_topk_split.duckdb.sql)


def _heads(order: list[str], ctes: dict[str, exp.CTE]) -> None:
    """The main list's heaps (the top-k override's subquery ``lists``) as their own CTE, :data:`HEADS`, before
    list_ranked, which unnests them: the input checks read recs' row counts and duplicates from the same scan
    (recsql/compose/checks.py). Heaps on the order alone: each user's top k (``tops``) is :data:`TOPS`."""
    lists = next((q for q in nodes(ctes["list_ranked"].this, exp.Subquery) if q.alias == "lists"), None)
    if lists is None:  # ranked by ROW_NUMBER
        return
    heads = exp.CTE(this=lists.this.copy(), alias=exp.to_identifier(HEADS))
    tops = next((q for q in nodes(ctes["list_ranked"].this, exp.Subquery) if q.alias == "tops"), None)
    lists.replace(exp.alias_(exp.to_table(HEADS), "lists", table=True) if tops is not None else exp.to_table(HEADS))
    new = [heads]
    if tops is not None:  # sql/_topk_split.duckdb.sql, whose tops read the heaps twice, as ``lists`` and by name
        new.append(exp.CTE(this=tops.this.copy(), alias=exp.to_identifier(TOPS)))
        tops.replace(exp.to_table(TOPS))
    _insert_before(order, ctes, "list_ranked", new)


def _insert_before(order: list[str], ctes: dict[str, exp.CTE], name: str, new: list[exp.CTE]) -> None:
    """The CTEs ``new`` added to the stage just before the CTE ``name``."""
    position = order.index(name)
    order[position:position] = [c.alias for c in new]
    ctes.update((c.alias, c) for c in new)


def _ideal_order(plan: Plan, cte: exp.CTE, values: dict) -> None:
    """The truth order (truth_ordered) from DuckDB's per-user heap of the largest relevances
    (sql/_ideal_topk.duckdb.sql) when no metric reads it beyond ``ideal_max_k`` positions; else the
    portable ROW_NUMBER over all of truth."""
    ideal_max_k = values["ideal_max_k"]
    if plan.topk and ideal_max_k is not None and ideal_max_k <= TOPK_MAX_K:
        name = f"_ideal_topk.{plan.topk}"
        override = parse(read_template(name)[1], read="duckdb")
        cte.set("this", fold_constants(substitute(override, values, f"sql/{name}.sql")))


def _read_instead(tree: exp.Expression, table: str, other: str) -> None:
    """``tree`` reads the CTE ``other`` where it read ``table`` (aliases kept)."""
    for node in nodes(tree, exp.Table):
        if node.name == table:
            node.set("this", exp.to_identifier(other))


def build_stage(plan: Plan, metrics: list[Metric], second: View | None = None,
           second_metrics: list[Metric] = ()) -> exp.Select:
    """The ranked-rows stage for ``metrics`` (all asked) of which ``second_metrics`` read the list
    under the ``second`` view (src 9), the others under the plan's."""
    template = _parsed_stage().args["with_"].expressions
    ctes, order = CopiedOnRead(template), [c.alias for c in template]
    features = stage_features(metrics)
    second_ids = {id(m) for m in second_metrics}
    negative = bool(plan.relevance_col) and plan.negative_unjudged
    second_negative = bool(plan.relevance_col) and second is not None and second[1]
    values = {
        "ties": plan.ties,
        "gain_rule": plan.gain_rule,
        "threshold": plan.threshold,
        # the main list serves every other metric (and says who has recommendations: one row is enough)
        "max_k": largest_cutoff([m for m in metrics if id(m) not in second_ids]),
        "max_slot_k": max(features.get("slots", {0})),
        "max_pair_k": max(features.get("pairs", {0})),
        "negative_unjudged": "yes" if negative else "no",
        "second_negative_unjudged": "yes" if second_negative else "no",
        "second_max_k": largest_cutoff(list(second_metrics)),
        "ideal_max_k": ideal_cutoff(metrics, features),
        "intent_max_k": max((k for _, k in features.get("intent_depths", ())), default=1),
    }
    if plan.weight_col is None:
        _ranking(plan, ctes["list_ranked"], plan.ties, values["max_k"], features)
    else:  # weighted lists come ranked (compare's, from the evaluation's own ranking): their order is their rank
        for window in nodes(ctes["list_ranked"].this, exp.Window):
            window.replace(exp.column("ord"))
    _heads(order, ctes)
    _order_ties(ctes["expected_ranked"].this, plan.ties, _tie_key(plan))
    _ideal_order(plan, ctes["truth_ordered"], values)
    if second is not None:
        _ranking(plan, ctes["second_ranked"], second[0], values["second_max_k"], {})
        if second_negative == negative:  # the main list's truth serves: no second copy of truth
            _read_instead(ctes["second_judged"].this, "second_truth", "truth_judged")
    if plan.ties == "average":
        override = parse(read_template("_ties_average")[1], read="duckdb")
        ctes["list_judged"].set("this", fold_constants(substitute(override, values, "sql/_ties_average.sql")))
    for table, feature in _CUT_TABLES.items():
        ctes[table].set("this", _cutoffs_select(sorted(features.get(feature, {1}))))
    ctes["cascade_params"].set("this", _cascades_select(sorted(features.get("cascade", {("err", "auto")}))))
    _intent_ideal(plan, order, ctes, features)
    ctes["category_cuts"].set("this", _key_rows([("k", None), ("weight", "VARCHAR"), ("patience", "DOUBLE")],
                                                 sorted(features.get("category_shares", {(1, "geometric", 1.0)}))))
    attention = sorted({key for feature in ATTENTION for key in features.get(feature, ())})
    ctes["attention_params"].set("this", _key_rows([("kind", None), ("patience", "DOUBLE"), ("k", None)],
                                                   attention or [("log", 0.0, 1)]))
    ctes["ee_keys"].set("this", _key_rows([("model", None), ("patience", "DOUBLE"), ("utility", "DOUBLE"), ("k", None)],
                                          sorted(features.get("expected_exposure", {("rbp", 0.5, 0.0, 1)}))))
    gather_samples(plan, ctes)
    for feature, (cte, aliases) in _JOINS.items():
        if feature not in features:
            drop_joins(ctes[cte].this, aliases)
    for feature, columns in _COLUMNS.items():
        if feature not in features:
            for cte, column, type_ in columns:
                null_column(ctes[cte].this, column, type_ or order_datatype(plan.ord_type))
    # Keep the UNION ALL branches of the features asked for, padded to the same columns.
    unused = {table for feature, table in BRANCHES.items() if feature not in features}
    if second is None:
        unused.add("second_rows")
    if not negative:  # every truth row is judged: no user has only unjudged ones
        unused.add("unjudged_users")
    every = union_branches(ctes["stacked"].this)
    kept = [b for b in every if b.args["from_"].this.name not in unused]
    if plan.weight_col is not None:  # weighted lists serve global metrics only: their runs' rows of no user
        kept = [b for b in kept if b.args["from_"].this.name in WEIGHTED_BRANCHES]
        if not plan.truth_has_runs:  # truth per run: each run (compare's cmp_key) its own truth, read per run
            users_of_shared_truth(ctes)
    pad_union(kept, every)
    ctes["stacked"].set("this", union_all(kept))
    # Shared truth is copied to every run where its rows or counts are per run (truth_runs for
    # truth_users, truth_rows); truth that carries the run keys keeps the rows of the runs the
    # recommendations hold (a run is a key present in recs: truth of another run adds no row); with
    # no runs there is nothing to copy (truth_users reads truth_in). The lists are judged against
    # truth as it is (truth_judged, second_truth): per user when it is shared, so that join reads each
    # truth row once, not once per run.
    # With segments, shared truth carries the user's segment keys (truth_runs): it is read once per
    # user still, and copied only to the runs of the user's segment.
    keys = truth_run_keys(plan)
    if not plan.truth_has_runs:  # truth without run keys is read and ordered once per user
        for name in ("truth_ordered", "truth_judged", "second_truth"):
            ctes[name].set("this", expand_run_keys(ctes[name].this, keys))
        for name in ("list_judged", "second_judged", "bias_relevant"):
            for join in nodes(ctes[name].this, exp.Join):
                if join.this.name in ("truth_judged", "second_truth"):
                    join.set("on", expand_run_keys(join.args["on"], keys))
    if not plan.run_cols:
        _read_instead(ctes["truth_users"].this, "truth_runs", "truth_in")
        # every user of intents in the one run: no runs to cross join (intent_rows' rows)
        for select in nodes(ctes["intent_rows"].this, exp.Select):
            drop_join(select, "runs")
    if not plan.run_cols:  # one run: each logged impression once
        drop_join(ctes["log_rows"].this, "runs")
    elif plan.logs_has_runs:  # each run its own rows of the logs, and a run wherever there are some
        key_join(ctes["log_rows"].this, "runs", "l", internal_runs(plan))
        ctes["log_rows"].this.set("where", None)
        _read_instead(ctes["runs"].this, "recs_in", "logs_in")
    target_rows(plan, ctes)  # a stochastic target per position or per logged prefix (recsql/compose/policy.py)
    if plan.logs_copy_col:  # compare's resampled traffic: a slate is a context's rows within one copy
        _slate_per_copy(ctes["log_rows"].this)
    if logs_runs(plan):  # logs per run: the examination estimated per value of the logs' run keys too
        _key_examination(ctes, logs_runs(plan))
    if plan.run_cols and plan.logs_run_cols:  # each run the rows of its values of the logs' run keys
        key_join(ctes["log_rows"].this, "runs", "l", logs_runs(plan))
    for name in ("truth_runs", "truth_rows"):
        truth_runs = ctes[name].this
        if not plan.run_cols:
            drop_join(truth_runs, "runs")
            for col in nodes(truth_runs, exp.Column):
                if col.table == "runs":
                    col.set("table", exp.to_identifier("t"))
        elif keys:
            key_join(truth_runs, "runs", "t", keys)
    # What ``ranked`` does not read goes before the passes over the whole tree (most of the template serves
    # metrics not asked): the values in, constants folded, run keys expanded, the weights taken out.
    stage = exp.select("*").from_("ranked")
    current = [ctes[name] if name in ctes else ctes.template[name] for name in order]  # the template's unchanged
    stage.set("with_", exp.With(expressions=[ctes[c.alias] for c in reachable(current, stage)]))
    stage = substitute(stage, values, "sql/_ranked.sql")
    if plan.weight_col is None:
        unweighted(stage)
    elif plan.topk or plan.ties == "average" or set(features) - WEIGHTED_FEATURES - FIXED_FEATURES:
        raise RecsqlError("weighted lists (compare's resamples) are ranked by ROW_NUMBER with ties by item id, "
                          f"and serve the stage features {sorted(WEIGHTED_FEATURES | FIXED_FEATURES)} "
                          f"only, not {sorted(set(features) - WEIGHTED_FEATURES - FIXED_FEATURES)}")
    return alias_projections(expand_run_keys(stage, internal_runs(plan)))  # which folds the constants
