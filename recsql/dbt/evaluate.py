"""The package macro ``{{ recsql.evaluate(recs=ref('recs'), truth=ref('truth'), metrics=var('metrics')) }}``.

dbt expands Jinja without Python, so a metric list from ``var()`` is only known at Jinja time. This
module writes, from the composer and the ``sql/`` templates (never by hand), per adapter:

- ``<adapter>__recsql_evaluate_sql``: the composed statement, each CTE written once per variant of
  the *switches* it depends on (number of run keys, score or rank, output, whole list or
  cut, exponential gains; and, factorised, the duplicates policy, a missing relevance column, the
  tie rule: item_id or item_id_desc, auc's tie-group bounds, what a convention sets: negative
  relevance unjudged, no gain below the threshold, tied ids compared as text, the items given,
  whose CTE ``items_in`` is written only then, and their prices and probabilities read, the catalog
  given, and the item feature vectors read),
  with every value substituted as a Jinja expression (column names, the relevance threshold, the
  list's cutoff) and the metric projections as a loop over the parsed metrics; the lists of run keys
  as loops over the call's run columns (:mod:`recsql.dbt.run_loops`), checked against the statements
  composed for 0 to :data:`MAX_RUNS` run keys, so that any number of run keys is served;
- ``<adapter>__recsql_metric_sql``: each metric's per-user expression for every choice of its options,
  its cutoff and numeric options substituted as Jinja expressions.

The statements are composed with sentinel values (:data:`SENTINELS`) which are then replaced by Jinja
expressions; every statement is composed a second time with other sentinels and the two must agree
once both are replaced, so a sentinel can never replace a number that happens to be equal to it.

The base switches (:data:`BASE_SWITCHES`) are composed for every combination of their values. The
extra switches (:data:`EXTRA_SWITCHES`) are factorised (:func:`_factorised`): each switch alone is
composed at a few base keys (:data:`PROBES`) to find the CTEs it changes (:func:`switches_of`), and
each CTE is composed again for each combination of its own switches' values, at every value of the
base switches it depends on; the macro picks it by ``rs.<switch>`` before the base text.
:func:`_check_switches` checks that a switch leaves the CTEs it does not change alone in combination
too. tests/test_dbt_macro.py renders the package with jinja2 for random calls and compares the
numbers with recsql.evaluate's: that is what makes factorising safe.

Text ids: every id is composed as text under a placeholder collation (:data:`COLLATION_SENTINEL`),
and each COLLATE is written behind ``{% if rs.text.<id> %}`` with the adapter's binary collation
(dropped where the dialect has none): the macro fills ``rs.text`` from ``text_ids`` or, when dbt
executes on an adapter with such a collation, from the column types of recs.

The statements go through :func:`recsql.dbt.model.without_empty`: an input not given leaves no
always-empty CTE and no join of one.

The optional parts of the ranked-rows stage that cascades, pairs, rank correlations, the list's own
ideal order and k slots add are written only when a metric asked needs them (:mod:`recsql.dbt.features`).

The metrics it serves (:func:`served`) are those whose SQL reads only recs, truth and the side
inputs of :data:`NEED_INPUT` (interactions; items for their prices, probabilities and categories; a baseline;
item_features for feature vectors) and needs no other optional part of the stage than those, the tie
bounds and the categories and feature vectors compared in pairs (:data:`SWITCH_PARTS`): every metric of
the registry today. Any other would raise a compiler error naming ``recsql dbt model``, as does a
metric its convention ranks or judges unlike its others (a second view of the list: the macro of
recsql/dbt/jinja.py refuses it). The
global metrics (one value per run: coverage, gini, personalization) are served: with one asked, the
per-user rows and the final select come from the wide statement (:data:`GLOBAL_CTES`). A metric
averaged over a population of its own (msr's ndcg) is served: whom each metric averages over is
the macro's to fill in (:data:`POPULATION_MARK`), so the statements are composed at one population.
Under ties='average' the statements are composed with the metrics that have an exact
expected value over tied positions (:func:`averaged`); the macro refuses the others with
recsql.evaluate's message.
"""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
import itertools
import multiprocessing
import os
from pathlib import Path
import re
from functools import lru_cache

import sqlglot
from sqlglot import exp

from ..compose import metric_expression, uses_exponent
from ..compose.inputs import collation as id_collation
from ..compose.plan import METRIC_POPULATION_SQL, POPULATION_SQL
from ..compose.stage import stage_features
from ..dialects import _native_window_nulls, dialect as get_dialect
from ..errors import RecsqlError
from ..metrics import Metric, parse_metric, registry
from . import features as feat
from . import run_loops
from .adapters import ADAPTERS, DEFAULT, adapter
from .model import GENERATED, ModelSpec, _comment, _jinja_relations, _statement, _unquote

# Sentinels: (first, second) values composed; both must give the same Jinja text.
SENTINELS = {"k": (7919, 7907), "max_k": (7877, 7883), "threshold": (0.6180339, 0.4142135)}
NUMBER_SENTINELS = (0.3141592, 0.2718281)  # a numeric metric option
# the second, third... numeric option of a metric (pfound's p_break besides max_grade): (first, second)
MORE_NUMBER_SENTINELS = ((0.1414213, 0.1732050), (0.2236067, 0.2449489))
COLUMNS = {"user_col": "recsql_c_user", "item_col": "recsql_c_item", "score_col": "recsql_c_order",
           "rank_col": "recsql_c_order", "relevance_col": "recsql_c_relevance", "price_col": "recsql_c_price",
           "probability_col": "recsql_c_probability", "category_col": "recsql_c_category",
           "feature_col": "recsql_c_feature", "value_col": "recsql_c_value"}
# The items' attribute columns a metric may read (its needs), and the macro's column option for each:
# the macro writes the column where a metric asked reads it and NULL otherwise (recsql.evaluate's items_in
# holds NULL for an attribute no metric reads, and its checks then find nothing wrong with it).
ITEM_ATTRIBUTES = {"price": "price_col", "probability": "probability_col", "category": "category_col"}
# The item feature vectors' columns (item_features= rows: item, feature, value) and the macro's option for each.
FEATURE_COLUMNS = {"feature": "feature_col", "value": "value_col"}
# What the macro's metrics may need besides recs and truth (recsql.compose.needs), and the input that
# gives it: interactions (the wide statement's features, recsql.dbt.features), the items' prices, probabilities
# and categories (a factorised switch: items_in, ranked's join of it, the items' checks; the categories
# compared in pairs by the wide statement), a baseline (a switch:
# baseline_in, its ranks joined by ranked, its checks); serendipity takes a baseline or else
# interactions (the macro names interactions, the default, in its messages); the item feature vectors
# (a switch: features_in and its checks; the vectors compared in pairs by the wide statement), read
# from item_features= rows only (recsql.evaluate also reads an array column of the items on DuckDB).
NEED_INPUT = {"interactions": "interactions", "price": "items", "probability": "items", "category": "items", "baseline": "baseline",
              "interactions_or_baseline": "interactions", "features": "item_features"}
# The side inputs the macro takes: those and the catalog (coverage and gini count its items; without
# it the items', else every item of truth and recs).
MACRO_INPUTS = tuple(sorted({*NEED_INPUT.values(), "catalog"}))
RUN_SENTINEL = "recsql_c_run{}"
# Every id is composed as text under this collation (text_ids): :func:`_collated` writes each COLLATE
# behind the macro's `rs.text.<id>` (user_id, item_id, run0..run3) with the adapter's binary collation.
COLLATION_SENTINEL = "recsql_collate"
ALWAYS = "always"  # the collation marker of an id cast to text: collated whatever rs.text says
MAX_RUNS = run_loops.TOP  # the most run keys a statement is composed for (any number served: run_loops)
# Whom each metric averages over is the macro's to say (its rs.populations, m.population, rs.counts),
# so the statements are composed at one population, and three places are written as Jinja over
# POPULATION_SQL rendered in the adapter's dialect (recsql_population_sql): each metric's values
# kept for its population's users (per_user), the _in_population flag (any of them) and the
# summary's user counts (n_users, n_users_<metric>). Each is composed as a predicate ``marker = 0``
# (a bare column there would be rewritten by some dialects: T-SQL writes ``marker <> 0``).
COMPOSED_POPULATION = "relevant"
POPULATION_MARK = {"metric": "recsql_population_metric", "any": "recsql_population_any",
                   "count": "recsql_population_count", "counts": "recsql_population_counts", "name": "recsql_count_name"}
MARK = {"raw": "recsql_metrics_raw", "flagged": "recsql_metrics_flagged", "final": "recsql_metrics_final",
        "column": "recsql_metric_column"}
POPULATIONS = ("relevant", "intersection", "judged")
# The switches, in the order of a key: Jinja expressions over the namespace `rs` the macro fills in.
BASE_SWITCHES = ("runs", "order", "output", "whole", "exponent")
# Switches composed by factorising (:func:`_factorised`): each value but the first (the default) is
# composed only for the CTEs it changes, at the values of the base switches those CTEs depend on.
# ties='item_id_desc' changes list_ranked only (DuckDB's top-k serves item_id, a window the other).
# tie_bounds='on' (auc: the first and last position of each tie group) changes list_ranked (a window,
# which keeps the order key), list_judged and list_rows; the stacked and ranked CTEs that carry the
# bounds on are the wide statement's, which has an auc metric (the macro sets rs.wide).
# The convention switches (README, "Conventions"): negative='yes' reads a relevance below 0 as unjudged
# (truth_judged, truth_ordered); gain='relevant' gives judgments below the threshold no gain (ranked);
# id_cast='on' orders tied items by their id's text, bytewise, when the item id is not text already
# (list_ranked; the item id is then composed as a non-text id, so its COLLATE leaves recs_in and truth_in).
# The side inputs read by parts of the statement other than the optional stage parts: items_input='given'
# (items_in and its checks, as recsql.evaluate checks any items given; ranked's join of it; the
# catalog's items when no catalog is given), items_input='read' (their attributes read too: the prices
# of the money metrics, the probabilities of novelty(p=items), the categories of diversity, compared in
# pairs by the wide statement, each column NULL unless a metric asked reads it, :data:`ITEM_ATTRIBUTES`); catalog='on' (the catalog's items from the catalog input); baseline='on' (a baseline read:
# unexpectedness, serendipity); features_input='on' (the item feature vectors read: features_in and its
# checks, the vectors compared in pairs by the wide statement: diversity by features).
# (A switch is never named like a method of the macro's dict ``rs``: Jinja's ``rs.items`` is dict.items.)
EXTRA_SWITCHES = {"duplicates": ("error", "best"), "relevance": ("column", "none"),
                  "ties": ("item_id", "item_id_desc", "average"),
                  "tie_bounds": ("off", "on"), "negative": ("no", "yes"), "gain": ("all", "relevant"),
                  "id_cast": ("off", "on"), "items_input": ("off", "given", "read"), "catalog": ("off", "on"),
                  "baseline": ("off", "on"), "features_input": ("off", "on")}
# The parts of the stage served by a factorised switch of the same name (not by recsql.dbt.features).
BOUNDS = "tie_bounds"
BASELINE = "baseline"
FEATURES_INPUT = "features_input"
# Every truth row (money_recall), not the ideal order cut at the largest cutoff: what the statements
# for the whole list (the base switch ``whole``) read, which the macro then sets.
WHOLE_TRUTH = "truth_rows"
# The items' categories compared in pairs (diversity by category): the wide statement's pairs read them
# whenever the items' attributes are read (items_input='read', which a metric reading categories sets).
CATEGORIES = "categories"
# The item feature vectors compared in pairs (diversity by features): whenever the vectors are read
# (features_in, features_input='on', which a metric reading them sets).
FEATURE_VECTORS = "feature_vectors"
# The parts of the stage a factorised switch serves with nothing for the macro to fill in.
SWITCH_PARTS = (CATEGORIES, FEATURE_VECTORS)
SWITCHES = (*BASE_SWITCHES, *EXTRA_SWITCHES)
DEFAULTS = {name: values[0] for name, values in EXTRA_SWITCHES.items()}


def _variants(name: str) -> list[dict[str, str]]:
    """Every combination of the choice options of a metric (enum and discount presets; a number
    option defaulting to ``auto`` as ``auto`` or a number, marked ``#``)."""
    params = registry()[name].params
    axes = {p: (list(v.choices) if v.kind != "number" else (["auto", "#"] if v.default == "auto" else ["#"]))
            for p, v in params.items()}
    return [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())]


def _metric(name: str, k: int | None, options: dict[str, str], number: float | list[float]) -> Metric:
    """The metric variant with its numeric options (``#``) at ``number``, or at ``number[i]`` for the i-th."""
    numbers = iter(number if isinstance(number, list) else itertools.repeat(number))
    return Metric(name, k, **{p: (repr(next(numbers)) if v == "#" else v) for p, v in options.items()})


def _numbers(sentinel: int) -> list[float]:
    """A distinct sentinel for each numeric option of a metric."""
    return [NUMBER_SENTINELS[sentinel], *(pair[sentinel] for pair in MORE_NUMBER_SENTINELS)]


def _cutoffs(name: str) -> list[bool]:
    """Whether the metric is written with a cutoff: [True], [False] or both."""
    rule = registry()[name].k_rule
    return {"required": [True], "none": [False], "optional": [True, False]}[rule]


def _filled(options: dict[str, str]) -> dict[str, str]:
    """A variant's options with each numeric one (``#``) at a number: what its choices decide alone."""
    return {p: ("1" if v == "#" else v) for p, v in options.items()}


def variant_features(name: str, options: dict[str, str]) -> set[str]:
    """The optional parts of the ranked-rows stage a metric variant needs."""
    return registry()[name].features(_filled(options))


def variant_averaged(name: str, options: dict[str, str]) -> bool:
    """Whether a metric variant has an exact expected value under ties='average'."""
    return registry()[name].supports_ties("average", _filled(options))


def variant_needs(name: str, options: dict[str, str]) -> set[str]:
    """What a metric variant needs besides recs and truth (recsql.compose.needs: interactions, price, ...)."""
    return registry()[name].requires(_filled(options))


def served(name: str, options: dict[str, str]) -> str:
    """Why ``recsql.evaluate`` cannot compute this metric variant ('' when it can)."""
    spec = registry()[name]
    needs = variant_needs(name, options)
    if needs - set(NEED_INPUT):
        return f"it reads side inputs ({', '.join(sorted(needs))}) the macro does not take yet"
    features = variant_features(name, options) - set(feat.FEATURES) - {BOUNDS, BASELINE, WHOLE_TRUTH, *SWITCH_PARTS}
    if features:
        return f"it needs a part of the ranked-rows stage not generated for the macro yet ({', '.join(sorted(features))})"
    if spec.population not in ("truth", "lists", "global"):
        return f"its population is {spec.population}"
    return ""


@lru_cache(maxsize=None)
def _representatives(whole: bool, exponent: bool, k: int, average: bool = False) -> list[str]:
    """A metric list reading every column of the stage the served metrics read: the whole list
    (``whole``) or cut at ``k``, with or without exponential gains; under ties='average' (``average``)
    of the metrics exact under it (the composer refuses the others)."""
    out = []
    for name in registry():
        spec = registry()[name]
        for options in _variants(name):
            if (served(name, options) or variant_features(name, options) or variant_needs(name, options)
                    or (spec.full_list and not whole)):
                continue
            for with_k in _cutoffs(name):
                if not with_k and not whole:
                    continue
                metric = _metric(name, k if with_k else None, options, NUMBER_SENTINELS[0])
                if refused(metric) or (average and not averaged(metric)):
                    continue
                if exponent or not raises_to_relevance(str(metric)):
                    out.append(metric)
    if exponent and not any(raises_to_relevance(str(m)) for m in out):
        raise RuntimeError("no served metric uses exponential gains")
    chosen = _cover(out, "average" if average else "item_id")
    if whole and all(parse_metric(m).k is not None for m in chosen):  # the whole list read: a metric without a cutoff
        chosen.append(next(str(m) for m in out if m.k is None))
    return chosen


def averaged(metric: Metric) -> bool:
    """Whether the metric has an exact expected value under ties='average' (its ``ties:`` header)."""
    return metric.spec.supports_ties("average", metric.all_options())


# The optional stage parts a metric exact under ties='average' can need (k slots); the others' metrics
# (err, pfound, kendall, spearman, ndcg(ideal=list)) and auc's tie bounds are refused under it.
AVERAGE_FEATURES = frozenset(f for f, ms in feat.metrics(0).items() if all(averaged(parse_metric(m)) for m in ms))


def refused(metric: Metric) -> str:
    """The composer's refusal of a metric variant (a cutoff it needs with these options), or '': the
    stage's first, as the composer checks it first."""
    try:
        stage_features([metric])
        metric_expression(metric)
    except RecsqlError as err:
        return str(err)
    return ""


def _cover(metrics: list[Metric], ties: str) -> list[str]:
    """Few metrics reading together every stage column ``metrics`` read under the tie rule ``ties``
    (greedy set cover), one summed and one averaged metric among them (the final select's two forms),
    an exponential one if any."""
    read = {str(m): {c.name for c in metric_expression(m, {"ties": ties}).find_all(exp.Column)} for m in metrics}
    chosen = [next(str(m) for m in metrics if m.spec.summary == "sum"), next(str(m) for m in metrics if m.spec.summary == "mean")]
    chosen += [str(m) for m in metrics if raises_to_relevance(str(m))][:1]
    covered = set().union(*(read[m] for m in chosen))
    every = set().union(*read.values())
    while covered != every:
        best = max(read, key=lambda m: len(read[m] - covered))
        chosen.append(best)
        covered |= read[best]
    return list(dict.fromkeys(chosen))


@lru_cache(maxsize=None)
def raises_to_relevance(metric: str) -> bool:
    """Whether the statement for this metric alone raises 2 to a relevance (its input checks then
    refuse relevances above 1000: README, "Safety")."""
    parsed = parse_metric(metric)
    inputs = {role: role for role in ("recs", "truth", *sorted({NEED_INPUT[n] for n in parsed.spec.requires(parsed.all_options())}))}
    statement, _ = _statement(ModelSpec("probe", [metric], inputs=inputs, output="per_user"), "duckdb")
    return uses_exponent(statement)


def _spec(key: dict, sentinel: int, wide: frozenset = frozenset()) -> ModelSpec:
    runs = [RUN_SENTINEL.format(i) for i in range(key["runs"])]
    options = {"user_col": COLUMNS["user_col"], "item_col": COLUMNS["item_col"],
               **{column: COLUMNS[column] for column in (*ITEM_ATTRIBUTES.values(), *FEATURE_COLUMNS.values())},
               "relevance_col": COLUMNS["relevance_col"] if key["relevance"] == "column" else None, "run_cols": runs,
               "threshold": SENTINELS["threshold"][sentinel], "population": COMPOSED_POPULATION,
               "duplicates": key["duplicates"], "ties": key["ties"]}
    if key["order"] == "rank":
        options.update(score_col=None, rank_col=COLUMNS["rank_col"])
    else:
        options.update(score_col=COLUMNS["score_col"])
    average = key["ties"] == "average"
    wide = frozenset(f for f in wide if f in AVERAGE_FEATURES or not average)
    metrics = _representatives(key["whole"], key["exponent"], SENTINELS["max_k"][sentinel], average)
    metrics = metrics + [m for f, ms in feat.metrics(sentinel).items() if f in wide for m in ms]
    if (wide and not average) or key[BOUNDS] == "on":  # an auc: the tie bounds in stacked and ranked (the wide ones serve them)
        metrics = metrics + ["auc" if key["whole"] else f"auc@{SENTINELS['max_k'][sentinel]}"]
    if key["items_input"] == "read":  # the items' attributes read: items_in's columns, their checks
        metrics = metrics + [f"money_precision@{SENTINELS['max_k'][sentinel]}",
                             f"novelty(p=items)@{SENTINELS['max_k'][sentinel]}"]
        if "pairs" in wide:  # and the categories compared in pairs
            metrics = metrics + [f"diversity(by=category)@{feat.SENTINELS['pairs'][sentinel]}"]
    if key[BASELINE] == "on":  # the baseline's ranks, joined by ranked, and its checks
        metrics = metrics + [f"unexpectedness@{SENTINELS['max_k'][sentinel]}"]
    if key[FEATURES_INPUT] == "on" and "pairs" in wide:  # the item feature vectors compared in pairs
        metrics = metrics + [f"diversity(by=features)@{feat.SENTINELS['pairs'][sentinel]}"]
    items = () if key["id_cast"] == "on" else (COLUMNS["item_col"],)
    given = ({feat.INPUTS[f] for f in wide if f in feat.INPUTS} | ({"items"} if key["items_input"] != "off" else set())
             | ({"catalog"} if key["catalog"] == "on" else set()) | ({"baseline"} if key[BASELINE] == "on" else set())
             | ({"item_features"} if key[FEATURES_INPUT] == "on" else set()))
    inputs = {role: role for role in ("recs", "truth", *sorted(given))}
    return ModelSpec("recsql_evaluate", metrics, inputs=inputs, output=key["output"], options=options,
                     text_ids=(COLUMNS["user_col"], *items, *runs))


def _plan_fields(key: dict) -> dict:
    """The plan's fields a key's convention switches set (:func:`recsql.dbt.model._statement`'s ``plan``)."""
    return {"negative_unjudged": key["negative"] == "yes", "gain_rule": key["gain"],
            "id_order": "text" if key["id_cast"] == "on" else "native",
            # every attribute column of the items read: the macro writes NULL for those no metric asked reads;
            # the feature vectors and their checks whenever they are read, pairs or not
            "read_item_columns": frozenset([*(ITEM_ATTRIBUTES if key["items_input"] == "read" else ()),
                                            *(["features"] if key[FEATURES_INPUT] == "on" else [])])}


def _keys() -> list[dict]:
    keys = []
    for runs, order, output, whole, exponent in itertools.product(
            range(MAX_RUNS + 1), ("score", "rank"), ("summary", "per_user"), (False, True), (False, True)):
        if output == "per_user" and exponent:
            continue  # the input checks (the only part exponential gains change) are in summaries only
        keys.append(dict(runs=runs, order=order, output=output, whole=whole, exponent=exponent,
                         **DEFAULTS))
    return keys


# Base keys the extra switches are first tried at (to find the CTEs each changes): between them every
# base switch takes two values, summary and per-user outputs included.
PROBES = (dict(runs=1, order="score", output="summary", whole=False, exponent=True),
          dict(runs=0, order="rank", output="per_user", whole=True, exponent=False),
          dict(runs=2, order="score", output="summary", whole=True, exponent=False))


def _marked(statement: exp.Select, parsed: list[Metric]) -> tuple[exp.Select, dict[str, str]]:
    """The statement with the metric projections replaced by one marker column each (per_user_raw,
    per_user, final select), and the projection each marker stands for (of the first metric, and for
    the final select of the first summed metric too), as templates."""
    statement = statement.copy()
    statement.set("order", None)
    names = {m.column for m in parsed}
    pieces: dict[str, str] = {}

    def mark(select: exp.Select, is_metric, marker: str) -> list[exp.Expression]:
        found = [p for p in select.expressions if is_metric(p)]
        kept, placed = [], False
        for p in select.expressions:
            if not is_metric(p):
                kept.append(p)
            elif not placed:
                kept.append(exp.column(marker))
                placed = True
        select.set("expressions", kept)
        return found

    ctes = {c.alias: c.this for c in statement.args["with_"].expressions}
    is_m = lambda p: re.fullmatch(r"_m\d+", p.alias_or_name) is not None  # noqa: E731
    mark(ctes["per_user_raw"], is_m, MARK["raw"])
    per_user = ctes["per_user_all"] if "per_user_all" in ctes else ctes["per_user"]
    flagged = mark(per_user, is_m, MARK["flagged"])
    by_alias = {f"_m{i}": m for i, m in enumerate(parsed)}
    pieces["flagged"] = _population_marked(next(p for p in flagged if not _global(by_alias[p.alias])), "metric")
    for p in flagged:  # a global metric's one value, on the run's global row, copied to each user's row
        if _global(by_alias[p.alias]):
            pieces.setdefault("flagged_global", p)
    _population_marked(next(p for p in per_user.expressions if p.alias_or_name == "_in_population"), "any")
    counts = [p for p in statement.expressions if p.alias_or_name.startswith("n_users")]
    if counts:  # the summary's (n_users; n_users_with_recs too in the wide statement, whose final select is not used)
        if counts[0].alias_or_name != "n_users" or {p.alias_or_name for p in counts[1:]} - {"n_users_with_recs"}:
            raise RuntimeError(f"the composed summary has other user counts ({[p.alias_or_name for p in counts]})")
        counts[0].replace(exp.column(POPULATION_MARK["counts"]))
        for p in counts[1:]:
            p.pop()
    final = mark(statement, lambda p: p.alias_or_name in names, MARK["final"])
    by_name = {m.column: m for m in parsed}
    for p in final:
        metric = by_name[p.alias_or_name]
        kind = "global" if _global(metric) else metric.spec.summary
        template = p.copy()
        template.set("alias", exp.to_identifier(MARK["column"]))
        pieces.setdefault(f"final_{kind}", template)
        pieces.setdefault("final", template)
    return statement, pieces


def _global(metric: Metric) -> bool:
    """Whether the metric has one value for all users (coverage, gini, personalization)."""
    return metric.spec.population == "global"


def _population_marked(projection: exp.Expression, marker: str) -> exp.Expression:
    """A ``CASE WHEN <population> THEN ...`` projection with its condition as ``POPULATION_MARK[marker] = 0``."""
    case = projection.this
    if not isinstance(case, exp.Case) or len(case.args["ifs"]) != 1:
        raise RuntimeError(f"{projection.sql()} is not CASE WHEN <population> THEN ...")
    case.args["ifs"][0].set("this", exp.column(POPULATION_MARK[marker]).eq(0))
    return projection


_CONDITION = "({{ recsql_population_sql[%s] }})"


@lru_cache(maxsize=None)
def _count_jinja(target: str) -> str:
    """One user count of the summary in the dialect ``target``, over the loop variable ``c`` of ``rs.counts``."""
    count = sqlglot.parse_one(f"CAST(COALESCE(SUM(CASE WHEN {POPULATION_MARK['count']} = 0 THEN 1 ELSE 0 END), 0) AS BIGINT)")
    count = _projection(exp.alias_(count, POPULATION_MARK["name"]), target)
    return _marker(count, "count", _CONDITION % "c.population").replace(POPULATION_MARK["name"], "{{ c.name }}")


def _population_jinja(text: str, target: str) -> str:
    """The population markers of :func:`_marked` as Jinja over ``recsql_population_sql``."""
    any_of = ("{% for p in rs.populations %}{% if not loop.first %} OR {% endif %}" + _CONDITION % "p"
              + "{% else %}1 = 0{% endfor %}")  # global metrics alone: no user's row
    text = _marker(_marker(text, "metric", _CONDITION % "m.population"), "any", any_of)
    counts = "{% for c in rs.counts %}" + _count_jinja(target) + ",\n  {% endfor %}"
    return re.sub(r"\b" + POPULATION_MARK["counts"] + r",\s*", lambda _m: counts, text)


def _marker(text: str, marker: str, jinja: str) -> str:
    return re.sub(r"\b" + POPULATION_MARK[marker] + r" = 0\b", lambda _m: jinja, text)


def population_sql(target: str) -> dict[str, str]:
    """Each population's condition on the per-user rows, in the dialect ``target``."""
    conditions = {**{p: POPULATION_SQL[p] for p in POPULATIONS}, "lists": METRIC_POPULATION_SQL["lists"]}
    return {p: sqlglot.parse_one(sql).sql(dialect=target) for p, sql in conditions.items()}


def _sql(node: exp.Expression, sqlglot_dialect: str, pretty: bool = True) -> str:
    """A node's SQL text. The generator's dialect transforms may rewrite the node in place
    (``copy=False``, not a copy per CTE): every node rendered is the generator's own copy of a
    composition, rendered once."""
    return node.sql(dialect=sqlglot_dialect, pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)


def _projection(node: exp.Expression, sqlglot_dialect: str) -> str:
    """One projection's SQL text, its metric index as ``{{ loop.index0 }}``."""
    text = exp.select(node).sql(dialect=sqlglot_dialect, unsupported_level=sqlglot.ErrorLevel.RAISE, copy=False)
    text = text[len("SELECT "):]
    return re.sub(r"\b_m\d+\b", "_m{{ loop.index0 }}", text)


_LOOP = ("{%- for m in rs.metrics %}{% if not loop.first %},\n    {% endif %}" "{body}" "{%- endfor %}")
# The per-user final select's metrics besides the user id, global ones left out (each with its comma).
_LOCAL_LOOP = "{%- for m in rs.metrics if m.population != 'global' %},\n  {body}{%- endfor %}"


def _jinja_values(text: str, sentinel: int) -> str:
    """Sentinel names and values as the Jinja expressions the macro fills in."""
    for role, name in COLUMNS.items():
        text = re.sub(r"[`\"\[]?\b" + name + r"\b[`\"\]]?", "{{ rs.order_col }}" if name == "recsql_c_order"
                      else "{{ rs.%s }}" % role, text)
    for i in range(MAX_RUNS):
        text = re.sub(r"[`\"\[]?\b" + RUN_SENTINEL.format(i) + r"\b[`\"\]]?", "{{ rs.run_cols[%d] }}" % i, text)
    text = re.sub(r"\b" + str(SENTINELS["max_k"][sentinel]) + r"\b", "{{ rs.max_k }}", text)
    text = re.sub(r"(?<![\d.])" + re.escape(str(SENTINELS["threshold"][sentinel])) + r"(?![\d])", "{{ rs.threshold }}", text)
    return text


def _id_key(column: exp.Expression) -> str:
    """The macro's ``rs.text`` key of an id column sentinel (user_id, item_id, run0...); ``always`` for
    an id cast to text (id_cast: tied items ordered by their id's text), collated whatever its type."""
    if isinstance(column, exp.Cast) and isinstance(column.this, exp.Column) and column.this.name == "item_id":
        return ALWAYS
    name = column.name if isinstance(column, exp.Column) else ""
    keys = {COLUMNS["user_col"]: "user_id", COLUMNS["item_col"]: "item_id",
            **{RUN_SENTINEL.format(i): f"run{i}" for i in range(MAX_RUNS)}}
    if name not in keys:
        raise RuntimeError(f"a COLLATE of text ids applies to {column.sql()}, not to an id column")
    return keys[name]


def _collated(tree: exp.Expression, dialect_name: str) -> exp.Expression:
    """Each COLLATE of a text id (:data:`COLLATION_SENTINEL`) as a marker :func:`_jinja_collations`
    writes behind ``rs.text.<id>``, or dropped where the dialect compares text bytewise already."""
    for node in list(tree.find_all(exp.Collate)):
        if not (isinstance(node.expression, exp.Var) and node.expression.name == COLLATION_SENTINEL):
            continue
        if get_dialect(dialect_name).collation:
            node.set("expression", exp.var(f"{COLLATION_SENTINEL}_{_id_key(node.this)}"))
        else:
            node.replace(node.this)
    return tree


@lru_cache(maxsize=None)
def _collate_suffix(dialect_name: str) -> str:
    """`` COLLATE <binary>`` as this dialect writes the collation recsql.evaluate gives text ids ('' for none)."""
    collation = get_dialect(dialect_name).collation
    if not collation:
        return ""
    written = exp.Collate(this=exp.column("x"), expression=id_collation(collation)).sql(dialect=get_dialect(dialect_name).sqlglot)
    return written[len("x"):]


def _jinja_collations(text: str, dialect_name: str) -> str:
    """The markers of :func:`_collated` as ``{% if rs.text.<id> %} COLLATE <binary>{% endif %}``."""
    suffix = _collate_suffix(dialect_name)
    if not suffix:
        return text
    return re.sub(r" COLLATE " + COLLATION_SENTINEL + r"_(\w+)",
                  lambda m: suffix if m.group(1) == ALWAYS else "{% if rs.text." + m.group(1) + " %}" + suffix + "{% endif %}",
                  text)


def _choice(*cases: tuple[str | None, str]) -> str:
    """Jinja writing the text of the first case whose condition holds: (condition, text) pairs, the
    last one's condition None (otherwise); one case is its text alone."""
    if len(cases) == 1:
        return cases[0][1]
    out = "".join(("{% if " if n == 0 else "{% elif ") + condition + " %}" + text for n, (condition, text) in enumerate(cases[:-1]))
    return out + "{% else %}" + cases[-1][1] + "{% endif %}"


def _statement_parts(key: dict, dialect_name: str, sentinel: int, wide: frozenset = frozenset()
                     ) -> list[tuple[str, str]]:
    """(CTE name or '' for the final select, Jinja text) of the statement for one switch key, with the
    optional stage parts ``wide`` (:mod:`recsql.dbt.features`)."""
    spec = _spec(key, sentinel, wide)
    statement, parsed = _composed(spec, dialect_name, _plan_fields(key))
    statement, pieces = _marked(statement, parsed)
    statement = _collated(statement, dialect_name)
    _unquote(statement)
    target = get_dialect(dialect_name).sqlglot
    tree = _native_window_nulls(statement, target)
    for transform in get_dialect(dialect_name).transforms:
        tree = transform(tree)
    is_global = "m.population == 'global'"
    flagged_body = _choice(*([(is_global, _projection(pieces["flagged_global"], target))] if "flagged_global" in pieces else []),
                           (None, _projection(pieces["flagged"], target)))
    final_loop, own_comma = _LOOP, False
    if key["output"] == "summary":
        final_body = _choice(*([(is_global, _projection(pieces["final_global"], target))] if "final_global" in pieces else []),
                             ("m.summary == 'sum'", _projection(pieces["final_sum"], target)),
                             (None, _projection(pieces["final_mean"], target)))
    else:
        final_body = _projection(pieces["final"], target)
        if "flagged_global" in pieces:  # a global metric has no per-user value; the user id comes first
            final_loop, own_comma = _LOCAL_LOOP, True
            final_body = final_body.replace("{{ loop.index0 }}", "{{ m.index }}")
    loops = {
        MARK["raw"]: _LOOP.replace("{body}", "{{ m.sql }} AS _m{{ loop.index0 }} /* {{ m.comment }} */"),
        MARK["flagged"]: _LOOP.replace("{body}", flagged_body),
        MARK["final"]: final_loop.replace("{body}", final_body),
    }
    parts = []
    for cte in tree.args["with_"].expressions:
        if wide and cte.alias == "stacked":
            parts.append((cte.alias, feat.guarded_stacked(cte, lambda node: _sql(node, target))))
        elif cte.alias == "ranked":
            parts.append((cte.alias, feat.guarded_ranked(cte, lambda node: _sql(node, target),
                                                         lambda node: _projection(node, target),
                                                         {name: g[0] for name, g in RANKED_SWITCHES.items()})))
        else:
            parts.append((cte.alias, _sql(cte, target)))
    tree.set("with_", None)  # its CTEs written: the final select alone (the tree is this call's own copy)
    parts.append(("", _sql(tree, target)))
    out = []
    for name, text in parts:
        text = _jinja_relations(text, spec)
        for marker, loop in loops.items():
            comma = r",\s*" if marker == MARK["final"] and own_comma else ""  # the loop writes it
            text = re.sub(comma + r"\b" + marker + r"\b", lambda _m, loop=loop: loop, text)
        text = text.replace(f'"{MARK["column"]}"', MARK["column"]).replace(MARK["column"], "{{ m.column_sql }}")
        text = _jinja_values(_jinja_collations(_population_jinja(text, target), dialect_name), sentinel)
        if wide:
            text = feat.jinja_values(name, text, sentinel)
        left = [str(v) for v in (*SENTINELS["max_k"], *SENTINELS["threshold"], *COLUMNS.values()) if str(v) in text]
        left += feat.left(text) + [COLLATION_SENTINEL] * (COLLATION_SENTINEL in text)
        left += [m for m in POPULATION_MARK.values() if m in text]
        if left:
            raise RuntimeError(f"sentinel {left[0]} left in the SQL of {name or 'the final select'} for {dialect_name}")
        out.append((name, text))
    return out


_COMPOSED: dict = {}
_COMPOSED_GROUP: list = [None]  # the (top-k, inlining) of the dialects the cache serves


def _composed(spec: ModelSpec, dialect_name: str, plan: dict):
    """The composer's statement (shared by dialects whose plan is the same), ``plan``: fields of the plan
    the convention switches set. The cache keeps one group of dialects' statements: a worker handed a
    dialect of another group (:func:`_bodies`) composes afresh and drops the old group's (gigabytes of
    trees it would never read again)."""
    d = get_dialect(dialect_name)
    group = (d.topk, d.inline)
    if group != _COMPOSED_GROUP[0]:
        _COMPOSED.clear()
        _COMPOSED_GROUP[0] = group
    # The plan differs between dialects only in DuckDB's top-k and inlining, the binary collation of
    # text ids and the type ids are cast to when a convention orders them as text: the macro composes
    # a placeholder collation (written per adapter by _jinja_collations), so one composition serves
    # every dialect with the same first two (and the same text type, where ids are cast to text).
    cache_key = (repr(spec), d.topk, d.inline, tuple(sorted(plan.items())), d.id_text if plan.get("id_order") == "text" else None)
    if cache_key not in _COMPOSED:
        # no list_heads: the factorised switches (ties, tie_bounds) turn DuckDB's heaps on and off
        _COMPOSED[cache_key] = _statement(spec, dialect_name, collation=COLLATION_SENTINEL, heads=False, plan=plan)
    return _COMPOSED[cache_key]


def _jinja_key(key: dict, dims: list[str]) -> str:
    def value(name: str) -> str:
        v = key[name]
        return repr(v).lower() if isinstance(v, bool) else repr(v)
    return " and ".join(f"rs.{d} == {value(d)}" for d in dims) or "true"


def _dims(texts: dict[int, str | None], keys: list[dict], switches: tuple[str, ...] = BASE_SWITCHES) -> list[str]:
    """The switches a CTE's text depends on: those whose value alone changes it between two keys."""
    index = {tuple(k[o] for o in switches): i for i, k in enumerate(keys)}
    dims = []
    if len(set(texts.values())) > 1:
        for n, d in enumerate(switches):
            for combo, i in index.items():
                if any(texts[i] != texts[j] for other, j in index.items()
                       if other[:n] + other[n + 1:] == combo[:n] + combo[n + 1:] and other[n] != combo[n]):
                    dims.append(d)
                    break
    return dims


def _cte_text(name: str, texts: dict[int, str | None], keys: list[dict], dims: list[str] | None = None) -> str:
    """The Jinja for one CTE (or the final select): its text per variant of the switches it depends on,
    the run keys it lists as loops (:mod:`recsql.dbt.run_loops`) rather than a variant per number of them."""
    dims = _dims(texts, keys) if dims is None else dims
    cases = _run_looped(texts, keys, dims) if "runs" in dims else None
    refusal = ""
    if cases is None:
        if "runs" in dims:  # a text per number of run keys: none for more than were composed
            refusal = _runs_refusal(name)
        cases = {}
        for i, key in enumerate(keys):
            cases.setdefault(_jinja_key(key, dims), texts[i])
    by_text: dict[str | None, list[str]] = {}
    for condition, text in cases.items():
        by_text.setdefault(text, []).append(condition)
    if len(by_text) == 1:
        (text,) = by_text
        return text or ""
    # the keys where the CTE is not written need no branch: no condition of the others holds there
    by_text.pop(None, None)
    by_text.pop("", None)
    out = [refusal]
    for n, (text, conditions) in enumerate(by_text.items()):
        test = " or ".join(f"({c})" for c in conditions)
        out.append(("{%- if " if n == 0 else "{%- elif ") + test + " %}\n" + (text or ""))
    return "".join(out) + "{%- endif %}\n"


# The words of the refusal a CTE written per number of run keys carries (tests: no adapter's has one).
PER_RUNS = "is written per number of run columns"


def _runs_refusal(name: str) -> str:
    """The refusal of more run keys than the statements are composed for, written before a CTE that
    has a text per number of them (no loop found)."""
    message = f"recsql.evaluate: at most {MAX_RUNS} run columns: the SQL of {name or 'the final select'} {PER_RUNS}; got "
    return (f"{{%- if rs.runs > {MAX_RUNS} %}}{{{{ exceptions.raise_compiler_error({message!r} ~ (rs.run_cols | join(', '))) }}}}"
            "{%- endif %}\n")


def _run_looped(texts: dict[int, str | None], keys: list[dict], dims: list[str]) -> dict[str, str | None] | None:
    """Condition -> text of a CTE that depends on the number of run keys, each text with loops over
    them (:func:`recsql.dbt.run_loops.run_loop`) and, where the loops do not write its text without run
    keys, that one behind ``rs.runs == 0``; None when a text is not one with loops."""
    others = [d for d in dims if d != "runs"]
    groups: dict[str, dict[int, str | None]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(_jinja_key(key, others), {}).setdefault(key["runs"], texts[i])
    cases: dict[str, str | None] = {}
    for condition, by_runs in groups.items():
        if sorted(by_runs) != list(range(MAX_RUNS + 1)):
            return None
        if len(set(by_runs.values())) == 1:  # the same text (or none) whatever the run keys
            cases[condition] = by_runs[0]
            continue
        pieces = run_loops.run_loop(by_runs)
        if pieces is None:
            return None
        looped = run_loops.jinja(pieces)
        if run_loops.writes_none(pieces, by_runs[0]):
            cases[condition] = looped
        else:
            base = "" if condition == "true" else f"{condition} and "
            cases[f"{base}rs.runs == 0"] = by_runs[0]
            cases[f"{base}rs.runs > 0"] = looped
    return cases


def _parts(key: dict, target: str, wide: frozenset = frozenset()) -> dict[str, str]:
    """The statement's Jinja text per CTE for one switch key (a copy: rendered once per key)."""
    return dict(_rendered(tuple(sorted(key.items())), target, wide))


@lru_cache(maxsize=None)
def _rendered(items: tuple, target: str, wide: frozenset) -> tuple[tuple[str, str], ...]:
    key = dict(items)
    parts = dict(_marked_parts(items, target, wide))
    full = _full(key, wide)
    if full != key and "ranked" in parts:  # ranked as the switches' fullest values compose it, guarded
        ranked = dict(_marked_parts(tuple(sorted(full.items())), target, wide))["ranked"]
        if _switched(ranked, key) != _switched(parts["ranked"], key):
            raise RuntimeError(f"ranked differs from its guarded text at {key} by more than its switched joins")
        parts["ranked"] = ranked
    return tuple((name, _switch_jinja(text)) for name, text in parts.items())


@lru_cache(maxsize=None)
def _marked_parts(items: tuple, target: str, wide: frozenset) -> tuple[tuple[str, str], ...]:
    """The statement's parts for one switch key, ranked's switched joins marked (:data:`RANKED_SWITCHES`)."""
    key = dict(items)
    first = _statement_parts(key, target, 0, wide)
    # The second composition checks the sentinels (once per composition the dialects share, on the
    # keys that vary what the numbers of the SQL are: the list's cut, run keys, output, checks).
    checked = target in ("duckdb", "postgres") and key["order"] == "score"
    if checked and first != _statement_parts(key, target, 1, wide):
        raise RuntimeError(f"a sentinel value of the recsql.evaluate macro appears in the SQL as another value ({key})")
    return tuple(first)


# ranked's joins that a factorised switch adds, and the columns that read them: guard -> (the joins'
# aliases and the other columns the switch adds, the switch, its values that write the joins, those that
# write the columns). With the items' attributes read, the wide statement compares the items'
# categories in pairs (diversity: :func:`_spec`), which ranked reads from stacked. ranked is
# composed at the fullest values the key allows (:func:`_full`) and each of them is written behind
# its switch, so ranked is one text for every value of these switches (and :func:`_rendered` checks
# that this text, its guards applied, is the key's own). Not the baseline in the wide statement: a
# baseline given, serendipity reads it instead of the popular items' ranks (the part popularity's
# column pop_rank), so the wide ranked's columns depend on it beyond its join.
RANKED_SWITCHES = {"items": ({"i", "s.pair_category_dissim"}, "items_input", ("given", "read"), ("read",)),
                   "baseline": ({"b"}, BASELINE, ("on",), ("on",)),
                   "features": ({"s.pair_feature_dissim"}, FEATURES_INPUT, ("on",), ("on",))}
_NARROW_ONLY = {"baseline"}
_SWITCHED = re.compile(r"(\n?)" + feat.SWITCH_IF + r"(\w+?)_(join|columns)(.*?)" + feat.SWITCH_ENDIF, re.S)


def _full(key: dict, wide: frozenset) -> dict:
    """The key with each of :data:`RANKED_SWITCHES` (in the wide statement, but the baseline) at its
    last value that :func:`possible` allows."""
    full = dict(key)
    for name, (_, switch, _joins, _columns) in RANKED_SWITCHES.items():
        if not (wide and name in _NARROW_ONLY):
            full[switch] = next(v for v in reversed(EXTRA_SWITCHES[switch]) if possible({**full, switch: v}))
    return full


def _switch_values(match: re.Match) -> tuple[str, tuple[str, ...]]:
    _, switch, joins, columns = RANKED_SWITCHES[match.group(2)]
    return switch, joins if match.group(3) == "join" else columns


def _switched(text: str, key: dict) -> str:
    """A text with its switched joins and columns kept or dropped as the key's switch values say."""
    def keep(match: re.Match) -> str:
        switch, values = _switch_values(match)
        return match.group(1) + match.group(4) if key[switch] in values else ""
    return _SWITCHED.sub(keep, text)


def _switch_jinja(text: str) -> str:
    """A text's switched joins and columns behind their Jinja conditions."""
    def guard(match: re.Match) -> str:
        switch, values = _switch_values(match)
        return f"{match.group(1)}{{%- if rs.{switch} in {list(values)!r} %}}{match.group(4)}{{%- endif %}}"
    return _SWITCHED.sub(guard, text)


Extra = dict  # CTE name -> [(assignment, base keys, texts at those keys, the base switches they depend on)]
# The CTEs the optional stage parts change besides their own: taken from the wide statement when any is asked.
WIDE_CTES = ("stacked", "ranked")
# The CTEs the global metrics change besides their own (per_user_all), taken from the wide statement
# when one is asked (the part ``exposure``): the per-user rows gain the global row's flag, ``per_user``
# leaves that row out, the final select writes their one value ('' is the final select).
GLOBAL = "exposure"
GLOBAL_CTES = ("per_user_raw", "per_user", "")


def _changed(target: str, assignment: dict, wide: frozenset, kept, owner: dict[str, tuple[str, ...]] | None = None) -> set[str]:
    """The CTEs (among ``kept``) an assignment of extra switches changes at the :data:`PROBES` base
    keys, in the statement with the stage parts ``wide``: those whose text it changes, those it adds
    (the items' CTE, written only under items_input='given' or 'read') and those it removes (the
    checks' copy counts under a de-duplicating policy), whose branch then writes nothing; but not the
    own CTEs of a stage part that ties='average' cannot have (``owner``: CTE -> its parts), never
    written then."""
    unavailable = _unavailable(assignment, owner or {})
    changed: set[str] = set()
    for probe in PROBES:
        at = _parts({**probe, **DEFAULTS}, target, wide)
        varied = _parts({**probe, **DEFAULTS, **assignment}, target, wide)
        changed |= {n for n in {*varied, *(set(at) - unavailable)}
                    if _material(varied.get(n), assignment) != _material(at.get(n), assignment) and kept(n, assignment)}
    return changed


def _unavailable(assignment: dict, owner: dict[str, tuple[str, ...]]) -> set[str]:
    """The own CTEs of the stage parts an assignment cannot have (ties='average': those of the parts
    no metric exact under it needs), which the macro never writes then."""
    if assignment.get("ties") != "average":
        return set()
    return {n for n, fs in owner.items() if not set(fs) & AVERAGE_FEATURES}


def possible(assignment: dict) -> bool:
    """Whether the macro can set these switch values together: auc's tie bounds, the items' attributes,
    a baseline and feature vectors are never read under ties='average' (auc, the money metrics, novelty,
    unexpectedness, serendipity and diversity have no exact expected value there)."""
    return not (assignment.get("ties") == "average"
                and (assignment.get(BOUNDS) == "on" or assignment.get("items_input") == "read" or assignment.get(BASELINE) == "on"
                     or assignment.get(FEATURES_INPUT) == "on"))


_ITEM_COLLATE = re.compile(r"\{% if rs\.text\.item_id %\}.*?\{% endif %\}")


def _material(text: str | None, assignment: dict) -> str | None:
    """A CTE's text as the macro renders it under an assignment: with id_cast='on' (set only when the
    item id is not text) the item id's COLLATE, written behind ``rs.text.item_id``, is never written;
    the item id composed as a non-text id drops it, and that is no change."""
    if text is None or assignment.get("id_cast") != "on":
        return text
    return _ITEM_COLLATE.sub("", text)


def _narrow_kept(owner: dict[str, tuple[str, ...]]):
    """Which CTEs the statement without stage parts gives the macro under an assignment: not a part's
    own, and ``stacked``/``ranked`` only while no part is asked (tie_bounds='on' asks one)."""
    return lambda name, assignment: name not in owner and (name not in WIDE_CTES or assignment.get(BOUNDS, "off") == "off")


def _wide_kept(owner: dict[str, tuple[str, ...]]):
    """Which CTEs the wide statement gives the macro: the parts' own, ``stacked`` and ``ranked``, and
    those the global metrics change (:data:`GLOBAL_CTES`)."""
    return lambda name, assignment: name in owner or name in WIDE_CTES or name in GLOBAL_CTES


def switches_of(target: str, wide: frozenset, kept, owner: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """CTE -> the extra switches that change it (each switch's values alone, at the probes, in the
    statement with the stage parts ``wide``). A CTE's branches are the combinations of its own
    switches only, so the generator composes, per CTE, the product of those switches' values and not
    of all (:func:`_check_switches` checks that the others leave it alone in combination too)."""
    touched: dict[str, list[str]] = {}
    for switch, values in EXTRA_SWITCHES.items():
        for value in values[1:]:
            for name in _changed(target, {switch: value}, wide, kept, owner):
                if switch not in touched.setdefault(name, []):
                    touched[name].append(switch)
    # and those that change it only together with others (gains change the averaged list_judged)
    for together in _COMBINED:
        for switch in together:
            alone = {**together, switch: DEFAULTS[switch]}
            if together[switch] == DEFAULTS[switch] or not possible(alone):
                continue
            for probe in PROBES:
                varied, other = _parts({**probe, **together}, target, wide), _parts({**probe, **alone}, target, wide)
                for name in varied:
                    if (name in other and kept(name, together) and _material(varied[name], together) != _material(other[name], together)
                            and switch not in touched.setdefault(name, [])):
                        touched[name].append(switch)
    return {name: tuple(s for s in EXTRA_SWITCHES if s in switches) for name, switches in touched.items()}


# Every switch away from its default, as the macro can set them together: negative='yes' only with a
# relevance column (without one no relevance is negative), no tie bounds, prices, baseline or feature vectors
# under ties='average'.
_LAST = {s: values[-1] for s, values in EXTRA_SWITCHES.items()}
_COMBINED = ({**_LAST, "negative": "no", "ties": "item_id_desc"},
             {**_LAST, BOUNDS: "off", "relevance": "column", "items_input": "given", BASELINE: "off", FEATURES_INPUT: "off"})


def _factorised(target: str, keys: list[dict], dims: dict[str, list[str]], switches: dict[str, tuple[str, ...]],
                wide: frozenset, kept, owner: dict[str, tuple[str, ...]]) -> Extra:
    """The extra switches (:data:`EXTRA_SWITCHES`) without composing every key for each of their values:
    for each CTE, each combination of the values of its own switches (:func:`switches_of`) but the
    defaults (the other switches at theirs) that changes it at the :data:`PROBES` base keys, the CTE
    composed at every value of the base switches it depends on (``dims``). tests/test_dbt_macro.py
    renders the result for random calls and compares with recsql.evaluate: what makes factorising safe."""
    out: Extra = {}
    for name, own in switches.items():
        assignments = [dict(zip(own, combo)) for combo in itertools.product(*(EXTRA_SWITCHES[s] for s in own))]
        for assignment in [a for a in assignments[1:] if possible(a)]:
            if name not in _changed(target, assignment, wide, kept, owner):
                continue
            name_dims = [*dims[name], *_more_dims(target, name, assignment, wide, dims[name])]
            chosen: dict[tuple, int] = {}
            for i, key in enumerate(keys):
                chosen.setdefault(tuple(key[d] for d in name_dims), i)
            sub_keys = [keys[i] for i in chosen.values()]
            texts = {j: _parts({**key, **assignment}, target, wide).get(name) for j, key in enumerate(sub_keys)}
            out.setdefault(name, []).append((assignment, sub_keys, texts, name_dims))
    return out


_BASE_VALUES = {"runs": tuple(range(MAX_RUNS + 1)), "order": ("score", "rank"),
                "output": ("summary", "per_user"), "whole": (False, True), "exponent": (False, True)}


def _more_dims(target: str, name: str, assignment: dict, wide: frozenset, dims: list[str]) -> list[str]:
    """The base switches besides ``dims`` (those the CTE depends on at the defaults) that its text
    depends on under an assignment of extra switches (under ties='average' ``stacked`` carries the
    exponential gains only when they are read): each other value of each switch, from each probe."""
    more = []
    for switch, values in _BASE_VALUES.items():
        if switch in dims:
            continue
        for probe in PROBES:
            at = _parts({**probe, **DEFAULTS, **assignment}, target, wide).get(name)
            flips = [{**probe, switch: v} for v in values if v != probe[switch]]
            if any(_parts({**f, **DEFAULTS, **assignment}, target, wide).get(name) != at for f in flips
                   if not (f["output"] == "per_user" and f["exponent"])):
                more.append(switch)
                break
    return more


def _check_switches(target: str, switches: dict[str, tuple[str, ...]], wide: frozenset, kept,
                    owner: dict[str, tuple[str, ...]]) -> None:
    """Every switch set away from its default together gives, at each probe, each CTE the text (or
    the absence) the same values of its own switches alone give it: a switch leaves the CTEs it does
    not change alone in combination too."""
    for together in _COMBINED:
        for probe in PROBES:
            varied = _parts({**probe, **together}, target, wide)
            for name in {*varied, *(set(_parts({**probe, **DEFAULTS}, target, wide)) - _unavailable(together, owner))}:
                if not kept(name, together):
                    continue
                own = {s: together[s] for s in switches.get(name, ())}
                expected = _parts({**probe, **DEFAULTS, **own}, target, wide).get(name)
                if _material(varied.get(name), together) != _material(expected, together):
                    raise RuntimeError(f"switches other than {sorted(own)} change {name} in combination ({together})")


def _feature_ctes(target: str, base: dict[str, str], key: dict) -> dict[str, tuple[str, ...]]:
    """Each optional stage part's own CTEs (CTE -> the features that write it): those the statement
    gains with one of them alone (the interactions' CTEs serve popularity and interaction users)."""
    owner: dict[str, tuple[str, ...]] = {}
    for feature in feat.FEATURES:
        for name in set(_parts(key, target, frozenset({feature}))) - set(base):
            owner[name] = (*owner.get(name, ()), feature)
    return owner


def _merged_order(sequences: list[list[str]]) -> list[str]:
    """One order of every CTE that keeps each statement's order: of the CTEs whose predecessors in
    every statement are placed, the first seen comes next."""
    before: dict[str, set[str]] = {}
    for sequence in sequences:
        for n, name in enumerate(sequence):
            before.setdefault(name, set()).update(sequence[n - 1:n])
    order: list[str] = []
    while len(order) < len(before):
        ready = [name for name in before if name not in order and before[name] <= set(order)]
        if not ready:
            raise RuntimeError("the CTEs of the recsql.evaluate statement come in different orders")
        order.append(ready[0])  # dicts keep the order names were first seen in
    return order


def statement_macro(adapter_name: str) -> str:
    """``<adapter>__recsql_evaluate_sql(rs)``: the statement for every switch key, CTE by CTE."""
    target = adapter(adapter_name).dialect
    keys = _keys()
    variants = [_parts(key, target) for key in keys]
    every = frozenset(feat.FEATURES)
    wide = [_parts(key, target, every) for key in keys]
    # (the item feature vectors' pairs CTEs, feature_norms and pair_dots, exist only when they are read)
    vectors = {**keys[0], FEATURES_INPUT: "on"}
    owner = {**_feature_ctes(target, variants[0], keys[0]), **_feature_ctes(target, _parts(vectors, target), vectors)}
    # CTEs a switch adds (the items' and the baseline's, and their checks), alone and with the others
    assignments = [*({s: v} for s, values in EXTRA_SWITCHES.items() for v in values[1:]), *_COMBINED]
    added = [_parts({**probe, **DEFAULTS, **a}, target, w) for probe in PROBES for w in (frozenset(), every)
             for a in assignments if possible(a)]
    order = _merged_order([list(parts) for parts in variants + wide + added])
    for parts in variants + wide + added:
        positions = [order.index(n) for n in parts]
        if positions != sorted(positions):
            raise RuntimeError("the CTEs of the recsql.evaluate statement come in different orders")
    order = [n for n in order if n] + [""]
    dims = {name: _dims({i: v.get(name) for i, v in enumerate(variants)}, keys) for name in order}
    wide_dims = {name: _dims({i: v.get(name) for i, v in enumerate(wide)}, keys) for name in (*owner, *WIDE_CTES, *GLOBAL_CTES)}
    narrow_kept, wide_kept = _narrow_kept(owner), _wide_kept(owner)
    narrow_switches = switches_of(target, frozenset(), narrow_kept, owner)
    wide_switches = switches_of(target, every, wide_kept, owner)
    extra = _factorised(target, keys, dims, narrow_switches, frozenset(), narrow_kept, owner)
    wide_extra = _factorised(target, keys, wide_dims, wide_switches, every, wide_kept, owner)
    _check_switches(target, narrow_switches, frozenset(), narrow_kept, owner)
    _check_switches(target, wide_switches, every, wide_kept, owner)

    def framed(position: int, name: str, texts: dict[int, str | None]) -> dict[int, str | None]:
        if not name:
            return texts
        return {i: (None if t is None else ("WITH " if position == 0 else ", ") + t + "\n") for i, t in texts.items()}

    def branched(position: int, name: str, statements: list[dict[str, str]], name_dims: list[str], changes: Extra) -> str:
        """A CTE's text per base key, and before it one branch per text an assignment of extra switches gives it."""
        text = _cte_text(name, framed(position, name, {i: v.get(name) for i, v in enumerate(statements)}), keys, name_dims)
        if name not in changes:
            return text
        tests: dict[str, list[str]] = {}
        for assignment, sub_keys, texts, assignment_dims in changes[name]:
            branch = _cte_text(name, framed(position, name, texts), sub_keys, assignment_dims)
            tests.setdefault(branch, []).append(" and ".join(f"rs.{s} == {v!r}" for s, v in assignment.items()))
        branches = [("{%- if " if n == 0 else "{%- elif ") + " or ".join(f"({t})" for t in conditions) + " %}\n" + branch
                    for n, (branch, conditions) in enumerate(tests.items())]
        return "".join(branches) + "{%- else %}\n" + text + "{%- endif %}\n"

    body = []
    for position, name in enumerate(order):
        if name in owner:  # a feature's own CTE
            text = branched(position, name, wide, wide_dims[name], wide_extra)
            guard = " or ".join(f"rs.features.{f}" for f in owner[name])
            body.append(f"{{%- if {guard} %}}\n{text}{{%- endif %}}\n")
            continue
        text = branched(position, name, variants, dims[name], extra)
        if name in WIDE_CTES:
            with_features = branched(position, name, wide, wide_dims[name], wide_extra)
            text = "{%- if rs.wide %}\n" + with_features + "{%- else %}\n" + text + "{%- endif %}\n"
        elif name in GLOBAL_CTES:
            with_global = branched(position, name, wide, wide_dims[name], wide_extra)
            text = f"{{%- if rs.features.{GLOBAL} %}}\n" + with_global + "{%- else %}\n" + text + "{%- endif %}\n"
        elif name in wide_extra:
            raise RuntimeError(f"{name} is changed by a factorised switch in the wide statement only")
        body.append(text)
    _rendered.cache_clear()  # an adapter's texts serve only its own macro
    _marked_parts.cache_clear()
    inputs = "".join(f", {role}=none" for role in MACRO_INPUTS)
    return (f"{{% macro {adapter_name}__recsql_evaluate_sql(rs, recs, truth{inputs}) -%}}\n"
            + f"{{%- set recsql_population_sql = {population_sql(get_dialect(target).sqlglot)!r} %}}\n" + "".join(body)
            + "{%- endmacro %}\n")


def _piece_text(metric_name: str, options: dict[str, str], with_k: bool, target: str, sentinel: int,
                ties: str = "item_id", has_baseline: str = "no") -> str:
    numbers = _numbers(sentinel)
    metric = _metric(metric_name, SENTINELS["k"][sentinel] if with_k else None, options, numbers)
    node = exp.cast(metric_expression(metric, {"ties": ties, "has_baseline": has_baseline}), "DOUBLE")
    text = _sql(exp.select(node), target, pretty=False)[len("SELECT "):]
    text = re.sub(r"\b" + str(SENTINELS["k"][sentinel]) + r"\b", "{{ m.k }}", text)
    for p, number in zip([p for p, v in options.items() if v == "#"], numbers):
        text = re.sub(r"(?<![\d.])" + re.escape(repr(number)) + r"(?![\d])", "{{ m.numbers.%s }}" % p, text)
    left = [repr(n) for n in numbers if repr(n) in text]
    if left:
        raise RuntimeError(f"sentinel {left[0]} left in the SQL of metric {metric_name}")
    return text


def metric_macro(adapter_name: str) -> str:
    """``<adapter>__recsql_metric_sql(m)``: a served metric's per-user expression, by name, options and cutoff."""
    target = get_dialect(adapter(adapter_name).dialect).sqlglot
    branches = []
    for name in registry():
        for options in _variants(name):
            if served(name, options):
                continue
            for with_k in _cutoffs(name):
                conditions = [f"m.name == {name!r}", f"m.has_k == {str(with_k).lower()}"]
                conditions += [f"m.choices.{p} == {v!r}" for p, v in options.items()]
                refusal = refused(_metric(name, 7 if with_k else None, options, NUMBER_SENTINELS[0]))
                if refusal:
                    message = refusal.replace("\\", "\\\\").replace("'", "\\'")  # a Jinja string literal
                    branches.append((" and ".join(conditions),
                                     "{{ exceptions.raise_compiler_error('recsql.evaluate: %s') }}" % message))
                    continue
                texts = {}
                for ties, has_baseline in (("item_id", "no"), ("average", "no"), ("item_id", "yes")):
                    first = _piece_text(name, options, with_k, target, 0, ties, has_baseline)
                    second = _piece_text(name, options, with_k, target, 1, ties, has_baseline)
                    if first != second:
                        raise RuntimeError(f"a sentinel of metric {name} appears in its SQL as another value")
                    texts[ties, has_baseline] = first
                if texts["average", "no"] != texts["item_id", "no"]:  # its expected value over tied positions
                    branches.append((" and ".join([*conditions, "m.average"]), texts["average", "no"]))
                if texts["item_id", "yes"] != texts["item_id", "no"]:  # a baseline given (serendipity's, else the popular items)
                    branches.append((" and ".join([*conditions, "m.baseline"]), texts["item_id", "yes"]))
                branches.append((" and ".join(conditions), texts["item_id", "no"]))
    out = [f"{{% macro {adapter_name}__recsql_metric_sql(m) -%}}\n"]
    for n, (condition, text) in enumerate(branches):
        out.append(("{%- if " if n == 0 else "{%- elif ") + condition + " %}" + text + "\n")
    out.append("{%- else %}{{ exceptions.raise_compiler_error('recsql.evaluate: no SQL for metric ' ~ m.canonical) }}\n"
               "{%- endif %}\n{%- endmacro %}\n")
    return "".join(out)


def collation_macro(adapter_name: str) -> str:
    """``<adapter>__recsql_text_collation()``: whether the adapter's SQL gives text ids a binary
    collation (the macro then reads which ids are text from the warehouse when ``text_ids`` is not given)."""
    collated = bool(get_dialect(adapter(adapter_name).dialect).collation)
    return (f"{{% macro {adapter_name}__recsql_text_collation() -%}}\n{{{{ return({str(collated).lower()}) }}}}\n"
            "{%- endmacro %}\n")


def evaluate_files(macros: Path, jobs: int | None = None) -> dict[Path, str]:
    """The package's ``recsql.evaluate``: the macro and parser, the registry, and per adapter whose SQL
    differs from the one dbt's dispatch would fall back to, its statement and metric macros
    (``default__``: the PostgreSQL rendering); ``jobs``: the processes writing them (:func:`_bodies`)."""
    from .jinja import EVALUATE, PARSER, registry_macro
    files = {macros / "evaluate.sql": EVALUATE, macros / "evaluate_parser.sql": PARSER,
             macros / "evaluate_registry.sql": registry_macro()}
    bodies = _bodies(jobs)
    default = bodies[DEFAULT]
    files[macros / "evaluate_sql" / "default.sql"] = _header("default") + default.replace(f"{DEFAULT}__", "default__")
    for name, body in bodies.items():
        parent = ADAPTERS[name].falls_back_to or DEFAULT
        inherited = bodies[parent].replace(f"{parent}__", f"{name}__")
        if name != DEFAULT and body != inherited:
            files[macros / "evaluate_sql" / f"{name}.sql"] = _header(name) + body
    return files


def _body(adapter_name: str) -> str:
    """An adapter's three macros."""
    return statement_macro(adapter_name) + "\n" + metric_macro(adapter_name) + "\n" + collation_macro(adapter_name)


def _bodies(jobs: int | None = None) -> dict[str, str]:
    """Every adapter's macros, written by ``jobs`` processes (default: one per core; ``spawn``: a forked
    copy of a process running DuckDB's threads is not safe). The adapters are handed out in
    :data:`ADAPTERS` order, one at a time, and a worker keeps its compositions (:func:`_composed`) for
    the next adapter it gets, so each worker composes each statement once for all the dialects sharing
    it. A worker holds several gigabytes of them at its peak, returned when it exits: even one job runs
    in a process of its own. The text does not depend on which process wrote it (nor on its hash seed:
    tests/test_dbt.py regenerates it in a fresh process)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = max(1, min(len(ADAPTERS), jobs or cores))
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return dict(zip(ADAPTERS, pool.map(_body, ADAPTERS)))


def _header(name: str) -> str:
    return f"{{# {GENERATED} #}}\n{{# recsql.evaluate's SQL for dbt-{name} (recsql/dbt/evaluate.py) #}}\n"
