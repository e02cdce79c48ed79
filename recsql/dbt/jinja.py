"""The Jinja side of ``recsql.evaluate``: the metric registry as a Jinja value, the metric-string
parser, and the macro users call (README, "dbt").

The registry (:func:`registry_macro`) is generated from ``recsql/metrics.py``: names, aliases,
cutoff rules, options with their choices, defaults and intervals, summaries and formulas. The
parser checks a metric string ``name(opt=value,...)@k`` against it and raises a dbt compiler error
naming the problem, as :func:`recsql.parse_metric` does in Python. The per-adapter SQL comes from
:mod:`recsql.dbt.evaluate`.
"""
from __future__ import annotations

import json
import re

from ..conventions import CONVENTIONS
from ..metrics import _INTERVAL_RE, registry, tie_averaged
from ..compose import TIES
from ..compose.plan import MAX_SLOTS
from . import features as feat
from ..compose.needs import _REQUIREMENTS, _alternatives, fit_to_inputs
from .evaluate import (FEATURE_COLUMNS, ITEM_ATTRIBUTES, SWITCH_PARTS, MACRO_INPUTS, NEED_INPUT, POPULATIONS, _variants, raises_to_relevance, refused, served, _metric,
                       variant_averaged, variant_features, variant_needs)
from .model import GENERATED, _comment


def variant_key(name: str, options: dict[str, str]) -> str:
    """A metric variant's key in the registry's ``exponent`` and ``unserved``: its name and its option
    choices in the order of the options' names (the parser's ``dictsort``: the registry's JSON sorts
    the options by name, so their order there is not the metric's)."""
    return "|".join([name, *(options[p] for p in sorted(options))])


# The columns in the messages of a metric whose side input is missing, as the macro fills them in
# (the other columns are the macro's defaults: it does not take their names yet).
COLUMN_MARKS = {"user": "RECSQLxUSERx", "item": "RECSQLxITEMx", "price": "RECSQLxPRICEx",
                "probability": "RECSQLxPROBABILITYx", "category": "RECSQLxCATEGORYx", "feature": "RECSQLxFEATUREx",
                "value": "RECSQLxVALUEx"}
# The macro reads item feature vectors from item_features= rows only: its fix for a metric that needs them
# (recsql.evaluate's also offers an array column of items=, which it reads on DuckDB).
FEATURES_FIX = ("needs item feature vectors: pass item_features= with rows ({item}, {feature}, {value}); "
                "recsql.evaluate in dbt does not read them from an array column of items= (a model written by "
                "`recsql dbt model` for DuckDB does)")


def _missing(name: str, options: dict[str, str]) -> dict:
    """What recsql.evaluate says of a metric variant whose side input was not given (only truth was):
    the fix for its first need and, per enum option the user did not write, the other choices
    and what they need (recsql.compose.needs.check_inputs), id columns as :data:`COLUMN_MARKS`."""
    metric = _metric(name, 7 if registry()[name].k_rule != "none" else None, options, 0.5)
    names = {k: repr(v) for k, v in dict(features="features", **COLUMN_MARKS).items()}
    need = sorted(variant_needs(name, options))[0]
    alternatives = {}
    for param in metric.spec.params:
        metric.explicit = set(metric.spec.params) - {param}
        alternatives[param] = _alternatives(metric, {"truth"}, names)
    # what recsql.evaluate computes instead when the other inputs the macro takes are given (novelty
    # with items and no interactions: p=items), which the macro then computes too
    metric.explicit = set()
    others = {"truth", *(set(NEED_INPUT.values()) - {NEED_INPUT[need]})}
    fitted = fit_to_inputs(metric, others)
    moved = {p: v for p, v in fitted.all_options().items() if v != metric.all_options()[p]}
    inputs, fix = ({NEED_INPUT[need]}, FEATURES_FIX) if need == "features" else _REQUIREMENTS[need]
    return {"fix": fix.format(**names), "alternatives": alternatives, "input": NEED_INPUT[need],
            "inputs": sorted(inputs),
            "fitted": {"choices": moved, "params": sorted(moved),
                       "variant": variant_key(name, {**options, **moved}),
                       "inputs": sorted(set().union(*(_REQUIREMENTS[n][0] for n in fitted.spec.requires(fitted.all_options()))))}
            if moved else None}


def _facts() -> dict:
    metrics = {}
    exponent, unserved, features, average, missing, needs = [], {}, {}, [], {}, {}
    for name, spec in registry().items():
        params = {}
        for p, v in spec.params.items():
            low_side, low, high, high_side = _INTERVAL_RE.match(v.interval).groups() if v.kind == "number" else ("", "", "", "")
            params[p] = {"kind": v.kind, "choices": list(v.choices), "default": v.default,
                         "interval": v.interval if v.kind == "number" else "",
                         "low": low, "low_open": low_side == "(", "high": high, "high_open": high_side == ")"}
        metrics[name] = {"k_rule": spec.k_rule, "summary": spec.summary, "full_list": spec.full_list, "population": spec.population,
                         "formula": _comment(spec.formula), "params": params}
        for options in _variants(name):
            key = variant_key(name, options)
            why = served(name, options)
            if why:
                unserved[key] = why
                continue
            if variant_features(name, options):
                features[key] = sorted(variant_features(name, options))
            if variant_needs(name, options):
                missing[key] = _missing(name, options)
                needs[key] = sorted(variant_needs(name, options))
            if variant_averaged(name, options):
                average.append(key)
            for k in (7, None) if spec.k_rule != "none" else (None,):
                if spec.k_rule == "required" and k is None:
                    continue
                metric = _metric(name, k, options, 0.5)
                if not refused(metric) and raises_to_relevance(str(metric)):
                    exponent.append(key)
    aliases = {a: s.name for s in registry().values() for a in s.aliases}
    conventions = {name: {"ties": c.ties, "population": c.population, "negative": "yes" if c.negative_unjudged else "no",
                          "gain": c.gain_rule, "id_order": c.id_order, "every_row_relevant": c.every_truth_row_relevant,
                          "defaults": c.defaults,
                          "measures": {key: {"ties": r.ties, "population": r.population,
                                             "negative": None if r.negative_unjudged is None
                                             else ("yes" if r.negative_unjudged else "no")}
                                       for key, r in c.measures.items()}}
                   for name, c in CONVENTIONS.items()}
    return {"metrics": metrics, "aliases": aliases, "exponent": sorted(set(exponent)), "unserved": unserved,
            "features": features, "stage_parts": list(feat.FEATURES), "feature_inputs": feat.INPUTS, "max_slots": MAX_SLOTS,
            "populations": list(POPULATIONS), "ties": list(TIES),
            "conventions": conventions, "average": sorted(average), "missing": missing, "needs": needs,
            "column_marks": COLUMN_MARKS, "item_attributes": ITEM_ATTRIBUTES, "switch_parts": list(SWITCH_PARTS),
            "average_metrics": tie_averaged()}


def registry_macro() -> str:
    """``recsql._registry()``: the metric registry as a Jinja value (JSON is a Jinja literal here)."""
    text = json.dumps(_facts(), sort_keys=True, indent=1).replace("true", "True").replace("false", "False")
    text = re.sub(r"\bTrue\b", "true", text)
    text = re.sub(r"\bFalse\b", "false", text)
    text = re.sub(r'(?<=": )null(?=,?\n)', "none", text)  # JSON's null as Jinja's none (a value, not in a string)
    return (f"{{# {GENERATED} #}}\n{{# The metric registry of recsql (recsql/metrics.py), read by recsql._parse_metrics. #}}\n"
            "{% macro _registry() -%}\n{{ return(" + text + ") }}\n{%- endmacro %}\n")


PARSER = r"""{# GENERATED #}
{# Metric strings name(opt=value,...)@k checked against recsql._registry(), as recsql.parse_metric does. #}
{% macro _fail(message) -%}
  {{ exceptions.raise_compiler_error("recsql.evaluate: " ~ message) }}
{%- endmacro %}

{% macro _parse_metric(text, registry, column_names, convention='recsql') -%}
  {%- set re = modules.re -%}
  {%- if text is not string -%}{{ recsql._fail("a metric is a string like 'ndcg@10', got " ~ text) }}{%- endif -%}
  {%- set found = re.match('^\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*(\\(([^()]*)\\))?\\s*(@\\s*([^\\s]*))?\\s*$', text) -%}
  {%- set custom_discount = " (a custom discount is SQL that recsql parses, checks and translates for the warehouse, which Jinja cannot do when dbt compiles: write this model with `recsql dbt model`)" -%}
  {%- if not found and re.search('discount\\s*=', text) -%}
    {{ recsql._fail("metric '" ~ text ~ "': only the discounts log2 and jarvelin are served" ~ custom_discount) }}
  {%- endif -%}
  {%- if not found -%}{{ recsql._fail("cannot read metric '" ~ text ~ "': write it as 'name@k' or 'name(option=value)@k', e.g. 'ndcg@10'") }}{%- endif -%}
  {%- set key = found.group(1) | lower -%}
  {%- set name = registry.aliases.get(key, key) -%}
  {%- if name not in registry.metrics -%}
    {{ recsql._fail("unknown metric '" ~ found.group(1) ~ "' in '" ~ text ~ "'; valid metrics: " ~ (registry.metrics.keys() | list | sort | join(', ')) ~ " (aliases: " ~ (registry.aliases.keys() | list | sort | join(', ')) ~ ")") }}
  {%- endif -%}
  {%- set spec = registry.metrics[name] -%}
  {%- set given = {} -%}
  {%- if found.group(3) is not none and found.group(3).strip() -%}
    {%- for part in found.group(3).split(',') -%}
      {%- set pair = part.split('=') -%}
      {%- set option = pair[0].strip() -%}
      {%- if pair | length != 2 or not option -%}{{ recsql._fail("metric '" ~ text ~ "': options are written name=value, got '" ~ part.strip() ~ "'") }}{%- endif -%}
      {%- if option not in spec.params -%}
        {{ recsql._fail("metric '" ~ text ~ "': unknown option '" ~ option ~ "'; its options are: " ~ ((spec.params.keys() | list | join(', ')) or 'none')) }}
      {%- endif -%}
      {%- if option in given -%}{{ recsql._fail("metric '" ~ text ~ "': option '" ~ option ~ "' is given twice; write it once") }}{%- endif -%}
      {%- do given.update({option: pair[1].strip()}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set choices = {} -%}{%- set numbers = {} -%}{%- set shown = [] -%}
  {%- set defaults = registry.conventions[convention].defaults.get(name, {}) -%}
  {%- for option, param in spec.params.items() -%}
    {%- set value = given.get(option, defaults.get(option, param.default)) -%}
    {%- if param.kind == 'number' and value != 'auto' -%}
      {%- if not re.match('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$', value) -%}
        {{ recsql._fail("metric '" ~ text ~ "': option " ~ option ~ "=" ~ value ~ " must be a finite number" ~ (" or 'auto'" if param.default == 'auto' else '')) }}
      {%- endif -%}
      {%- set number = value | float -%}
      {%- if (param.low != '-inf' and (number < param.low | float or (param.low_open and number == param.low | float)))
            or (param.high != 'inf' and (number > param.high | float or (param.high_open and number == param.high | float))) -%}
        {{ recsql._fail("metric '" ~ text ~ "': option " ~ option ~ "=" ~ value ~ " must lie in " ~ param.interval) }}
      {%- endif -%}
      {%- do choices.update({option: '#'}) -%}{%- do numbers.update({option: number | string}) -%}
    {%- elif param.kind == 'number' -%}
      {%- do choices.update({option: 'auto'}) -%}
    {%- elif value not in param.choices -%}
      {{ recsql._fail("metric '" ~ text ~ "': option " ~ option ~ "=" ~ value ~ " is not valid; choose one of " ~ (param.choices | join(', '))
                      ~ (custom_discount if param.kind == 'discount' else '')) }}
    {%- else -%}
      {%- do choices.update({option: value}) -%}
    {%- endif -%}
    {%- if value != param.default -%}{%- do shown.append(option ~ '=' ~ (numbers[option] if option in numbers else value)) -%}{%- endif -%}
  {%- endfor -%}
  {%- set k_text = found.group(5) -%}
  {%- if found.group(4) is not none and spec.k_rule == 'none' -%}
    {{ recsql._fail("metric '" ~ name ~ "' takes no cutoff; write it as '" ~ name ~ "', not with @k") }}
  {%- endif -%}
  {%- if found.group(4) is none and spec.k_rule == 'required' -%}
    {{ recsql._fail("metric '" ~ name ~ "' needs a cutoff: write it as '" ~ name ~ "@10' (any k >= 1)") }}
  {%- endif -%}
  {%- if found.group(4) is not none and not re.match('^[+]?[0-9]+$', k_text) -%}
    {{ recsql._fail("metric '" ~ text ~ "': cutoff k must be a whole number >= 1, got '" ~ k_text ~ "'") }}
  {%- endif -%}
  {%- set k = (k_text | int) if found.group(4) is not none else none -%}
  {%- if k is not none and k < 1 -%}{{ recsql._fail("metric '" ~ name ~ "': cutoff k must be >= 1, got " ~ k) }}{%- endif -%}
  {%- set variant = ([name] + (choices | dictsort | map(attribute=1) | list)) | join('|') -%}
  {%- if variant in registry.unserved -%}
    {{ recsql._fail("metric '" ~ text ~ "' is not computed by recsql.evaluate yet: " ~ registry.unserved[variant] ~ "; write a model for it with `recsql dbt model`") }}
  {%- endif -%}
  {%- set canonical = name ~ (('(' ~ (shown | join(',')) ~ ')') if shown else '') ~ (('@' ~ k) if k is not none else '') -%}
  {%- set column = text.strip() -%}
  {%- if column_names == 'safe' -%}
    {%- set safe = re.sub('_+', '_', re.sub('[^a-z0-9_]+', '_', column.lower().replace('@', '_at_'))).strip('_') -%}
    {%- set column_sql = safe if (safe and not re.match('^[0-9]', safe)) else 'm_' ~ safe -%}
  {%- else -%}
    {%- set column_sql = adapter.quote(column) -%}
  {%- endif -%}
  {{ return({'name': name, 'k': k, 'has_k': k is not none, 'choices': choices, 'numbers': numbers,
             'canonical': canonical, 'column': column, 'column_sql': column_sql, 'summary': spec.summary,
             'comment': canonical ~ ': ' ~ spec.formula, 'whole': k is none or spec.full_list,
             'exponent': variant in registry.exponent, 'features': registry.features.get(variant, []),
             'key': name ~ '|' ~ k ~ '|' ~ (given.items() | list | sort | join(',')), 'variant': variant,
             'given': given.keys() | list, 'kind': spec.population}) }}
{%- endmacro %}

{% macro _parse_metrics(metrics, column_names='safe', convention='recsql') -%}
  {%- set registry = recsql._registry() -%}
  {%- if metrics is string -%}{%- set metrics = [metrics] -%}{%- endif -%}
  {%- if metrics is mapping or metrics is not iterable or metrics | length == 0 -%}
    {{ recsql._fail("metrics must be a non-empty list of metric strings, e.g. ['ndcg@10', 'map@10'], got " ~ metrics) }}
  {%- endif -%}
  {%- set parsed = [] -%}{%- set keys = [] -%}{%- set columns = {} -%}
  {%- for text in metrics -%}
    {%- set m = recsql._parse_metric(text, registry, column_names, convention) -%}
    {%- if m.key not in keys -%}
      {%- if m.column_sql in columns -%}
        {{ recsql._fail("metrics '" ~ columns[m.column_sql] ~ "' and '" ~ m.column ~ "' get the same column name " ~ m.column_sql ~ "; ask for one, or pass column_names='as_asked'") }}
      {%- endif -%}
      {%- do columns.update({m.column_sql: m.column}) -%}
      {%- do keys.append(m.key) -%}{%- do parsed.append(m) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(parsed) }}
{%- endmacro %}
""".replace("{# GENERATED #}", f"{{# {GENERATED} #}}")


EVALUATE = r"""{# GENERATED #}
{# recsql.evaluate: recsql's metrics over recs and truth relations, metrics from a list or var().
   {{ recsql.evaluate(recs=ref('recs'), truth=ref('truth'), metrics=var('metrics'), run_cols=['model']) }}
   The SQL is the composer's, per adapter (recsql/dbt/evaluate.py); README, "dbt". #}
{% macro _ident(name) -%}
  {%- if modules.re.match('^[a-z_][a-z0-9_]*$', name) -%}{{ name }}{%- else -%}{{ adapter.quote(name) }}{%- endif -%}
{%- endmacro %}

{# Which ids hold text: {user_id, item_id, run0...: bool}; they are compared under the adapter's binary
   collation, as recsql.evaluate compares them. text_ids=none: the id columns of recs that are strings
   (read from the warehouse when dbt executes, on the adapters whose SQL gives text ids a binary
   collation: recsql_text_collation); a list: exactly those columns. #}
{% macro _text_ids(text_ids, recs, user_col, item_col, run_cols) -%}
  {%- set ids = {user_col: 'user_id', item_col: 'item_id'} -%}
  {%- for c in run_cols -%}{%- do ids.update({c: 'run' ~ loop.index0}) -%}{%- endfor -%}
  {%- if text_ids is none -%}
    {%- set text_ids = [] -%}
    {%- if execute and recs is not string and adapter.dispatch('recsql_text_collation', 'recsql')() -%}
      {%- set lowered = {} -%}
      {%- for c in ids -%}{%- do lowered.update({c | lower: c}) -%}{%- endfor -%}
      {%- for column in adapter.get_columns_in_relation(recs) -%}
        {%- if column.is_string() and (column.name | lower) in lowered -%}{%- do text_ids.append(lowered[column.name | lower]) -%}{%- endif -%}
      {%- endfor -%}
    {%- endif -%}
  {%- elif text_ids is string -%}
    {%- set text_ids = [text_ids] -%}
  {%- elif text_ids is mapping or text_ids is not iterable -%}
    {{ recsql._fail("text_ids must name id columns, got " ~ text_ids ~ "; pass text_ids='item_id' or text_ids=['user_id', 'item_id']") }}
  {%- endif -%}
  {%- for c in text_ids -%}
    {%- if c not in ids -%}
      {{ recsql._fail("text_ids: '" ~ c ~ "' is not an id column; name '" ~ user_col ~ "' and/or '" ~ item_col ~ "' (or a run column holding text)") }}
    {%- endif -%}
  {%- endfor -%}
  {%- set text = {} -%}
  {%- for c, key in ids.items() -%}{%- do text.update({key: c in text_ids}) -%}{%- endfor -%}
  {{ return(text) }}
{%- endmacro %}

{% macro evaluate(recs, truth, metrics, run_cols=[], output='summary', user_col='user_id', item_col='item_id',
                  score_col='score', rank_col=none, relevance_col='relevance', threshold=none, population=none,
                  duplicates='error', convention='recsql', ties=none, items=none, interactions=none, catalog=none,
                  baseline=none, item_features=none, column_names='safe', text_ids=none,
                  RECSQL_ITEM_ARGUMENTS) -%}
  {%- if output not in ['summary', 'per_user'] -%}{{ recsql._fail("output='" ~ output ~ "' is not valid; choose summary or per_user") }}{%- endif -%}
  {%- if column_names not in ['safe', 'as_asked'] -%}{{ recsql._fail("column_names='" ~ column_names ~ "' is not valid; choose safe or as_asked") }}{%- endif -%}
  {%- set conventions = recsql._registry().conventions -%}
  {%- if convention not in conventions -%}
    {{ recsql._fail("convention='" ~ convention ~ "' is not valid; choose one of " ~ (conventions.keys() | list | join(', '))) }}
  {%- endif -%}
  {%- set conv = conventions[convention] -%}
  {%- set explicit = {'ties': ties is not none, 'population': population is not none} -%}
  {%- set population = conv.population if population is none else population -%}
  {%- set ties = conv.ties if ties is none else ties -%}
  {%- if population not in recsql._registry().populations -%}
    {{ recsql._fail("population='" ~ population ~ "' is not valid; choose one of " ~ (recsql._registry().populations | join(', '))) }}
  {%- endif -%}
  {%- set item_columns = RECSQL_ITEM_COLUMNS -%}{#- the items' attribute and feature vector columns, by need -#}
  {%- if duplicates not in ['error', 'best', 'max'] -%}
    {{ recsql._fail("duplicates='" ~ duplicates ~ "' is not valid; choose error, best or max") }}
  {%- endif -%}
  {%- if ties not in recsql._registry().ties -%}
    {{ recsql._fail("ties='" ~ ties ~ "' is not valid; choose one of " ~ (recsql._registry().ties | join(', '))) }}
  {%- endif -%}
  {%- if run_cols is string -%}{%- set run_cols = [run_cols] -%}{%- endif -%}
  {%- if (score_col is none) == (rank_col is none) and rank_col is not none -%}
    {{ recsql._fail("pass score_col or rank_col, not both (score_col=none with rank_col)") }}
  {%- endif -%}
  {%- if threshold is none -%}{%- set threshold = -1.7976931348623157e308 if conv.every_row_relevant else 1 -%}{%- endif -%}
  {%- if not modules.re.match('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$', threshold | string) -%}
    {{ recsql._fail("threshold must be a number, got " ~ threshold) }}
  {%- endif -%}
  {%- set parsed = recsql._parse_metrics(metrics, column_names, convention) -%}
  {%- set negative = conv.negative if relevance_col is not none else 'no' -%}
  {%- for m in parsed -%}
    {%- if ties == 'average' and m.variant not in recsql._registry().average -%}
      {{ recsql._fail("metric '" ~ m.canonical ~ "' has no exact expected value under ties='average'; metrics that do: " ~ (recsql._registry().average_metrics | join(', ')) ~ " (ndcg/idcg not with ideal=list). Use ties='item_id' (deterministic) for the others") }}
    {%- endif -%}
    {%- do m.update({'average': ties == 'average', 'baseline': baseline is not none}) -%}
    {%- set rule = conv.measures.get(m.name ~ '@k') if (m.has_k and (m.name ~ '@k') in conv.measures) else conv.measures.get(m.name) -%}
    {%- if rule is not none and ((rule.ties is not none and not explicit.ties and rule.ties != ties)
          or (rule.negative is not none and relevance_col is not none and rule.negative != negative)) -%}
      {{ recsql._fail("convention='" ~ convention ~ "' computes '" ~ m.column ~ "' unlike its other metrics (its own tie rule or reading of negative relevance: README, Conventions), which needs the list ranked and judged a second time; recsql.evaluate in dbt does not write that: write this model with `recsql dbt model`, which does") }}
    {%- endif -%}
    {#- whom it averages over: the users with a list (list-only metrics); nobody (global metrics: one value
        per run); its convention's own population unless population= is given (msr's ndcg); else the call's -#}
    {%- do m.update({'index': loop.index0}) -%}
    {%- if m.kind in ['lists', 'global'] -%}
      {%- do m.update({'population': m.kind}) -%}
    {%- else -%}
      {%- do m.update({'population': rule.population if (rule is not none and rule.population is not none and not explicit.population) else population}) -%}
    {%- endif -%}
    {#- a side input it reads and that was not given: recsql.evaluate's message -#}
    {%- set missing = recsql._registry().missing.get(m.variant) -%}
    {%- set inputs = RECSQL_INPUTS_GIVEN -%}
    {%- set met = namespace(any=false) -%}
    {%- for role in (missing.inputs if missing is not none else []) -%}{%- if inputs[role] -%}{%- set met.any = true -%}{%- endif -%}{%- endfor -%}
    {%- if missing is not none and not met.any -%}
      {%- set fitted = missing.fitted -%}
      {%- set fits = namespace(ok=fitted is not none) -%}
      {%- for name in (fitted.params + fitted.inputs if fitted is not none else []) -%}
        {%- if name in m.given or (name in inputs and not inputs[name]) -%}{%- set fits.ok = false -%}{%- endif -%}
      {%- endfor -%}
      {%- if fits.ok -%}
        {#- computed with the options its inputs allow (novelty with items= and no interactions=: p=items),
            as recsql.evaluate computes it -#}
        {%- do m.choices.update(fitted.choices) -%}
        {%- do m.update({'variant': fitted.variant, 'features': recsql._registry().features.get(fitted.variant, []),
                         'exponent': fitted.variant in recsql._registry().exponent}) -%}
      {%- else -%}
        {%- set marks = recsql._registry().column_marks -%}
        {%- set columns = {'user': user_col, 'item': item_col} -%}{%- do columns.update(item_columns) -%}
        {%- set ns = namespace(text="metric '" ~ m.canonical ~ "' " ~ missing.fix) -%}
        {%- for param, alternative in missing.alternatives.items() -%}
          {%- if param not in m.given -%}{%- set ns.text = ns.text ~ alternative -%}{%- endif -%}
        {%- endfor -%}
        {%- for role, mark in marks.items() -%}{%- set ns.text = ns.text.replace("'" ~ mark ~ "'", "'" ~ columns[role] ~ "'") -%}{%- endfor -%}
        {{ recsql._fail(ns.text) }}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {#- the summary's user counts, as recsql.evaluate writes them: n_users for the call's population first,
      n_users_<metric> for a metric averaged over another; and which users the per-user rows hold -#}
  {%- set counts = [] -%}{%- set populations = [] -%}
  {%- for m in parsed if m.population != 'global' -%}
    {%- set name = 'n_users_with_recs' if m.population == 'lists' else ('n_users' if m.population == population else 'n_users_' ~ m.name) -%}
    {%- set count = {'name': name, 'population': m.population} -%}
    {%- if count not in counts -%}{%- do counts.append(count) -%}{%- endif -%}
    {%- if m.population not in populations -%}{%- do populations.append(m.population) -%}{%- endif -%}
  {%- endfor -%}
  {%- set counts = (counts | selectattr('name', 'equalto', 'n_users') | list)
                   + (counts | rejectattr('name', 'in', ['n_users', 'n_users_with_recs']) | list)
                   + (counts | selectattr('name', 'equalto', 'n_users_with_recs') | list) -%}
  {%- set ks = [] -%}{%- set whole = [] -%}{%- set exponent = [] -%}
  {%- set features = {} -%}{%- set bounds = [] -%}{%- set attributes = [] -%}{%- set baselines = [] -%}{%- set vectors = [] -%}
  {%- set given = {'interactions': interactions is not none} -%}
  {%- for part in recsql._registry().stage_parts -%}{%- do features.update({part: []}) -%}{%- endfor -%}
  {%- for m in parsed -%}
    {%- if m.whole -%}{%- do whole.append(m.name) -%}{%- else -%}{%- do ks.append(m.k) -%}{%- endif -%}
    {%- if m.exponent -%}{%- do exponent.append(m.name) -%}{%- endif -%}
    {%- for f in m.features -%}
      {%- if f == 'tie_bounds' -%}
        {%- do bounds.append(m.name) -%}
      {%- elif f == 'baseline' or (f in recsql._registry().feature_inputs and not given[recsql._registry().feature_inputs[f]]) -%}
        {#- a baseline's ranks when one is given; a part over an input not given is not built (serendipity's
            popular items when a baseline is given: recsql.evaluate leaves them out too) -#}
        {%- if f == 'baseline' and baseline is not none -%}{%- do baselines.append(m.name) -%}{%- endif -%}
      {%- elif f in recsql._registry().switch_parts -%}
        {#- the items' categories or feature vectors, compared in pairs when they are read (a need: its switch) -#}
      {%- elif f == 'truth_rows' -%}
        {%- do whole.append(m.name) -%}
      {%- elif f == 'cascade' -%}
        {%- set row = {'kind': m.name, 'grade': m.numbers.max_grade if 'max_grade' in m.numbers else 'NULL'} -%}
        {%- if row not in features.cascade -%}{%- do features.cascade.append(row) -%}{%- endif -%}
      {%- else -%}
        {%- do features[f].append(m.k) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- for need in recsql._registry().needs.get(m.variant, []) if need in recsql._registry().item_attributes -%}
      {%- do attributes.append(need) -%}
    {%- endfor -%}
    {%- if 'features' in recsql._registry().needs.get(m.variant, []) -%}{%- do vectors.append(m.name) -%}{%- endif -%}
    {%- do m.update({'sql': adapter.dispatch('recsql_metric_sql', 'recsql')(m) | trim}) -%}
  {%- endfor -%}
  {%- if features.slots and features.slots | max > recsql._registry().max_slots -%}
    {{ recsql._fail("ideal=k_slots supports k <= " ~ recsql._registry().max_slots ~ " (its ideal positions are generated in SQL); got k = " ~ (features.slots | max)) }}
  {%- endif -%}
  {%- set rs = {
      'metrics': parsed, 'features': features, 'wide': (features.values() | select | list | length > 0) or (bounds | length > 0),
      'tie_bounds': 'on' if bounds else 'off', 'runs': run_cols | length, 'order': 'rank' if rank_col is not none else 'score',
      'populations': populations, 'counts': counts, 'output': output, 'whole': whole | length > 0, 'exponent': exponent | length > 0,
      'max_k': (ks | max) if ks else none, 'threshold': (threshold | float) | string,
      'user_col': recsql._ident(user_col), 'item_col': recsql._ident(item_col),
      'relevance_col': recsql._ident(relevance_col) if relevance_col is not none else none,
      'relevance': 'column' if relevance_col is not none else 'none',
      'duplicates': 'error' if duplicates == 'error' else 'best', 'ties': ties,
      'items_input': 'read' if attributes else ('given' if items is not none else 'off'),
      'catalog': 'on' if catalog is not none else 'off', 'baseline': 'on' if baselines else 'off',
      'features_input': 'on' if vectors else 'off', 'feature_col': recsql._ident(feature_col), 'value_col': recsql._ident(value_col),
      'negative': negative, 'gain': conv.gain,
      'order_col': recsql._ident(rank_col if rank_col is not none else score_col),
      'run_cols': run_cols | map('string') | map('trim') | list} -%}
  {#- each attribute column of the items where a metric asked reads it, else NULL (recsql.evaluate's items_in) -#}
  {%- for need, option in recsql._registry().item_attributes.items() -%}
    {%- do rs.update({option: recsql._ident(item_columns[need]) if need in attributes else 'NULL'}) -%}
  {%- endfor -%}
  {%- do rs.update({'text': recsql._text_ids(text_ids, recs, user_col, item_col, rs.run_cols)}) -%}
  {%- do rs.update({'id_cast': 'on' if conv.id_order == 'text' and not rs.text.item_id else 'off'}) -%}
  {%- set quoted = [] -%}
  {%- for c in run_cols -%}{%- do quoted.append(recsql._ident(c)) -%}{%- endfor -%}
  {%- do rs.update({'run_cols': quoted}) -%}
  {{ return(adapter.dispatch('recsql_evaluate_sql', 'recsql')(rs, recs, truth, RECSQL_SIDE_INPUTS)) }}
{%- endmacro %}
""".replace("{# GENERATED #}", f"{{# {GENERATED} #}}").replace(
    "RECSQL_SIDE_INPUTS", ", ".join(f"{role}={role}" for role in MACRO_INPUTS)).replace(
    "RECSQL_ITEM_ARGUMENTS", ", ".join(f"{option}='{need}'" for need, option in {**ITEM_ATTRIBUTES, **FEATURE_COLUMNS}.items())).replace(
    "RECSQL_ITEM_COLUMNS", "{" + ", ".join(f"'{need}': {option}" for need, option in {**ITEM_ATTRIBUTES, **FEATURE_COLUMNS}.items()) + "}").replace(
    "RECSQL_INPUTS_GIVEN", "{" + ", ".join(f"'{role}': {role} is not none" for role in MACRO_INPUTS) + "}")
