{#
  recsql compare's gates (`recsql compare --fail-if`) on a summary model of `recsql dbt generate`, which
  writes the arguments from the evaluation's `gates:` (docs/dbt.md, "Gates"). One row per condition,
  run, metric (and segment) that fails; one row when the baseline run is missing. dbt fails the test
  when it returns a row; --store-failures keeps them.
  - kind `worse`: on the summary, the run is worse than the baseline run, in the metric's direction, by
    more than the margin (`relative`: that share of the baseline's value).
  - kinds `noninferior` and `loss`: the paired t-test on the per-user model `per_user`, over the users
    with a value in both runs (within a segment): n (users), mean difference, sample sd from the sum of
    squared deviations (two passes), t, and Student's t quantile at the condition's level: the table
    `t_quantiles` for df = n − 1 up to the level's df_max, its Cornish-Fisher expansion in 1/df beyond.
    Non-inferiority fails unless t > quantile (higher is better: t = (mean + margin)/se; lower:
    t = (mean − margin)/se < −quantile); a loss fails when the mean is worse and |t| > quantile (level
    1 − alpha/2: the two-sided p-value below alpha); a zero spread decides by the sign, as t = ±inf.
  Text literals are escaped by dbt's escape_single_quotes (a backslash on BigQuery, Spark, Snowflake).
  dbt before 1.10.5 passes the `arguments:` mapping as one argument, unpacked here.
#}
{% test gate(model, baseline=none, conditions=none, segment_cols=[], per_user=none, user_col='user_id',
             t_quantiles=none, arguments=none) %}
{%- if arguments is not none -%}
  {%- set baseline, conditions = arguments.baseline, arguments.conditions -%}
  {%- set segment_cols, per_user = arguments.get('segment_cols', []), arguments.get('per_user') -%}
  {%- set user_col, t_quantiles = arguments.get('user_col', 'user_id'), arguments.get('t_quantiles') -%}
{%- endif -%}
{%- set keys = (baseline.keys() | list) + segment_cols -%}
{%- set names = {} -%}
{%- for name in keys + [user_col] + conditions | map(attribute='column') | list -%}
  {%- do names.update({name: name if modules.re.fullmatch('[a-z_][a-z0-9_]*', name) else adapter.quote(name)}) -%}
{%- endfor -%}
{%- set is_baseline = {'baseline.': [], 'tested.': [], '': [], 'b.': []} -%}
{%- for name, value in baseline.items() -%}
  {%- set literal = "'" ~ dbt.escape_single_quotes(value) ~ "'" if value is string else value -%}
  {%- for prefix in is_baseline -%}
    {%- do is_baseline[prefix].append(prefix ~ names[name] ~ ' = ' ~ literal) -%}
  {%- endfor -%}
{%- endfor -%}
{%- set float, integer = dbt.type_float(), dbt.type_int() -%}
select *
from (
{%- for condition in conditions %}
{%- set column = names[condition.column] %}
{%- set sign = '' if condition.better == 'lower' else '-' %}
{%- if not loop.first %}
    union all
{%- endif %}
{%- if condition.kind | default('worse') == 'worse' %}
{%- set tested, reference = 'tested.' ~ column, 'baseline.' ~ column %}
    select * from (
    select '{{ dbt.escape_single_quotes(condition.gate) }}' as gate,
        '{{ dbt.escape_single_quotes(condition.metric) }}' as metric,
        {%- for name in keys %} tested.{{ names[name] }},{% endfor %}
        {{ tested }} as run_value, {{ reference }} as baseline_value, {{ tested }} - {{ reference }} as difference,
        {{ sign }}({{ tested }} - {{ reference }}) as worse_by,
        {{ condition.margin }}{{ ' * abs(' ~ reference ~ ')' if condition.relative }} as margin,
        cast(null as {{ integer }}) as users, cast(null as {{ float }}) as t, cast(null as {{ float }}) as t_quantile,
        cast(null as {{ float }}) as bound
    from {{ model }} tested
    join {{ model }} baseline on {{ is_baseline['baseline.'] | join(' and ') }}
        {%- for name in segment_cols %} and baseline.{{ names[name] }} = tested.{{ names[name] }}{% endfor %}
    where not ({{ is_baseline['tested.'] | join(' and ') }})
    ) c{{ loop.index }}
    where worse_by > margin
{%- else %}
{%- set level = condition.level %}
{%- set e = level.expansion %}
{%- set df = 'cast(s.users - 1 as ' ~ float ~ ')' %}
{%- set se = 'case when s.users >= 2 then sqrt((case when s.ss > 0 then s.ss else 0 end) / (s.users - 1) / s.users) end' %}
{#- the users with a value in both runs (within a segment): the pairs of the t-test #}
{%- set paired %}
                from {{ ref(per_user) }} tested
                join {{ ref(per_user) }} baseline on {{ is_baseline['baseline.'] | join(' and ') }}
                    and baseline.{{ names[user_col] }} = tested.{{ names[user_col] }}
                    {%- for name in segment_cols %} and baseline.{{ names[name] }} = tested.{{ names[name] }}{% endfor %}
                where not ({{ is_baseline['tested.'] | join(' and ') }})
                    and tested.{{ column }} is not null and baseline.{{ column }} is not null
{%- endset %}
{%- set quantile = 'case when s.users - 1 <= ' ~ level.df_max ~ ' then q.quantile else ' ~ e[0] ~ ' + (' ~ e[1] ~ ' + ('
    ~ e[2] ~ ' + (' ~ e[3] ~ ' + ' ~ e[4] ~ ' / ' ~ df ~ ') / ' ~ df ~ ') / ' ~ df ~ ') / ' ~ df ~ ' end' %}
{%- if condition.kind == 'noninferior' %}
{%- set margin = condition.margin ~ (' * abs(s.baseline_value)' if condition.relative else '') %}
{%- set gap = 'x.difference ' ~ ('- ' if condition.better == 'lower' else '+ ') ~ 'x.margin' %}
{%- else %}
{%- set margin = 'cast(null as ' ~ float ~ ')' %}
{%- endif %}
    select gate, metric, {% for name in keys %}{{ names[name] }}, {% endfor %}run_value, baseline_value, difference,
        worse_by, margin, users, t, t_quantile, bound
    from (
    select '{{ dbt.escape_single_quotes(condition.gate) }}' as gate,
        '{{ dbt.escape_single_quotes(condition.metric) }}' as metric,
        {%- for name in keys %} x.{{ names[name] }},{% endfor %}
        x.run_value, x.baseline_value, x.difference, {{ sign }}x.difference as worse_by, x.margin, x.users,
        {%- if condition.kind == 'noninferior' %}
        case when x.se > 0 then ({{ gap }}) / x.se end as t, x.t_quantile,
        x.difference {{ '+' if condition.better == 'lower' else '-' }} x.t_quantile * x.se as bound,
        case when x.users >= 2 and ((x.se > 0 and ({{ gap }}) / x.se {{ '< -' if condition.better == 'lower' else '>' }} x.t_quantile)
            or (x.se = 0 and ({{ gap }}) {{ '<' if condition.better == 'lower' else '>' }} 0)) then 0 else 1 end as failed
        {%- else %}
        case when x.se > 0 then x.difference / x.se end as t, x.t_quantile, cast(null as {{ float }}) as bound,
        case when x.users >= 2 and {{ sign }}x.difference > 0 and (x.se = 0 or {{ sign }}x.difference / x.se > x.t_quantile)
            then 1 else 0 end as failed
        {%- endif %}
    from (
        select {% for name in keys %}s.{{ names[name] }}, {% endfor %}s.users, s.difference, s.run_value, s.baseline_value,
            {{ margin }} as margin, {{ se }} as se, {{ quantile }} as t_quantile
        from (
            select {% for name in keys %}m.{{ names[name] }}, {% endfor %}m.users, m.difference,
                sum((d.v - m.difference) * (d.v - m.difference)) as ss, max(rm.mean) as run_value, max(bm.mean) as baseline_value
            from (
                select {% for name in keys %}tested.{{ names[name] }}, {% endfor %}tested.{{ column }} - baseline.{{ column }} as v
                {{- paired }}
            ) d
            join (
                select {% for name in keys %}tested.{{ names[name] }}, {% endfor %}count(*) as users,
                    avg(tested.{{ column }} - baseline.{{ column }}) as difference
                {{- paired }}
                group by {% for name in keys %}tested.{{ names[name] }}{{ ', ' if not loop.last }}{% endfor %}
            ) m on {% for name in keys %}d.{{ names[name] }} = m.{{ names[name] }}{{ ' and ' if not loop.last }}{% endfor %}
            left join (
                select {% for name in keys %}{{ names[name] }}, {% endfor %}avg({{ column }}) as mean
                from {{ ref(per_user) }} where {{ column }} is not null
                group by {% for name in keys %}{{ names[name] }}{{ ', ' if not loop.last }}{% endfor %}
            ) rm on {% for name in keys %}rm.{{ names[name] }} = m.{{ names[name] }}{{ ' and ' if not loop.last }}{% endfor %}
            left join (
                select {% for name in keys %}{{ names[name] }}, {% endfor %}avg({{ column }}) as mean
                from {{ ref(per_user) }} b where {{ is_baseline['b.'] | join(' and ') }} and {{ column }} is not null
                group by {% for name in keys %}{{ names[name] }}{{ ', ' if not loop.last }}{% endfor %}
            ) bm on 1 = 1 {%- for name in segment_cols %} and bm.{{ names[name] }} = m.{{ names[name] }}{% endfor %}
            group by {% for name in keys %}m.{{ names[name] }}, {% endfor %}m.users, m.difference
        ) s
        left join {{ ref(t_quantiles) }} q on q.level = '{{ level.level }}' and q.df = s.users - 1
    ) x
    ) c{{ loop.index }}
    where failed = 1
{%- endif %}
{%- endfor %}
) compared
union all
select '{{ dbt.escape_single_quotes('no baseline run (' ~ is_baseline[''] | join(' and ') ~ ') in the model') }}' as gate,
    null as metric,{% for name in keys %} null as {{ names[name] }},{% endfor %}
    null as run_value, null as baseline_value, null as difference, null as worse_by, null as margin,
    null as users, null as t, null as t_quantile, null as bound
from (select count(*) as baseline_rows from {{ model }} baseline where {{ is_baseline['baseline.'] | join(' and ') }}) found
where baseline_rows = 0
{% endtest %}
