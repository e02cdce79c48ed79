{#- The integration test's reading of the built models (tests/test_dbt.py): every row of each model named
    in `models`, written as JSON to `<directory>/<model>.json` through the adapter's own connection. One
    `dbt run-operation` reads every model, where a `dbt show` per model would start dbt once per model. -#}
{% macro recsql_it_rows(models, directory) %}
  {% for name in models %}
    {% set rows = run_query("select * from " ~ ref(name)) %}
    {% do rows.to_json(directory ~ "/" ~ name ~ ".json") %}
  {% endfor %}
{% endmacro %}
