{#
  A recsql input check must be 0: fails when the column (one of the diagnostic columns every model
  of `recsql dbt generate` carries, on the summary and on each per-user row) counts bad input rows
  (NULL or NaN keys and values, duplicated keys). The failing check is named twice: in the test's
  name (recsql_input_check_<model>_<column>) and in the row it returns (--store-failures keeps it).
#}
{% test input_check(model, column_name) %}
select failing_check, bad_rows
from (
    select '{{ column_name }}' as failing_check, max({{ column_name }}) as bad_rows
    from {{ model }}
) checked
where bad_rows <> 0
{% endtest %}
