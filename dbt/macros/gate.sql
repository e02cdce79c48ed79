{#
  recsql compare's gate `METRIC worse by MARGIN` on a summary model of `recsql dbt generate`, which
  writes the arguments from the evaluation's `gates:` (docs/dbt.md, "Gates"). One row per condition,
  run, metric (and segment) where the run is worse than the baseline run, in the metric's direction,
  by more than the margin (`relative`: that share of the baseline's value); one row when the baseline
  run is missing. dbt fails the test when it returns a row; --store-failures keeps them. Text
  literals are escaped by dbt's escape_single_quotes (a backslash on BigQuery, Spark, Snowflake).
#}
{% test gate(model, baseline, conditions, segment_cols=[]) %}
{%- set keys = (baseline.keys() | list) + segment_cols -%}
{%- set names = {} -%}
{%- for name in keys + conditions | map(attribute='column') | list -%}
  {%- do names.update({name: name if modules.re.fullmatch('[a-z_][a-z0-9_]*', name) else adapter.quote(name)}) -%}
{%- endfor -%}
{%- set is_baseline = {'baseline.': [], 'tested.': [], '': []} -%}
{%- for name, value in baseline.items() -%}
  {%- set literal = "'" ~ dbt.escape_single_quotes(value) ~ "'" if value is string else value -%}
  {%- for prefix in is_baseline -%}
    {%- do is_baseline[prefix].append(prefix ~ names[name] ~ ' = ' ~ literal) -%}
  {%- endfor -%}
{%- endfor -%}
select *
from (
{%- for condition in conditions %}
{%- set tested, reference = 'tested.' ~ names[condition.column], 'baseline.' ~ names[condition.column] %}
{%- if not loop.first %}
    union all
{%- endif %}
    select '{{ dbt.escape_single_quotes(condition.gate) }}' as gate,
        '{{ dbt.escape_single_quotes(condition.metric) }}' as metric,
        {%- for name in keys %} tested.{{ names[name] }},{% endfor %}
        {{ tested }} as run_value, {{ reference }} as baseline_value, {{ tested }} - {{ reference }} as difference,
        {% if condition.better == 'higher' %}{{ reference }} - {{ tested }}{% else %}{{ tested }} - {{ reference }}{% endif %} as worse_by,
        {{ condition.margin }}{{ ' * abs(' ~ reference ~ ')' if condition.relative }} as margin
    from {{ model }} tested
    join {{ model }} baseline on {{ is_baseline['baseline.'] | join(' and ') }}
        {%- for name in segment_cols %} and baseline.{{ names[name] }} = tested.{{ names[name] }}{% endfor %}
    where not ({{ is_baseline['tested.'] | join(' and ') }})
{%- endfor %}
) compared
where worse_by > margin
union all
select '{{ dbt.escape_single_quotes('no baseline run (' ~ is_baseline[''] | join(' and ') ~ ') in the model') }}' as gate,
    null as metric,{% for name in keys %} null as {{ names[name] }},{% endfor %}
    null as run_value, null as baseline_value, null as difference, null as worse_by, null as margin
from (select count(*) as baseline_rows from {{ model }} baseline where {{ is_baseline['baseline.'] | join(' and ') }}) found
where baseline_rows = 0
{% endtest %}
