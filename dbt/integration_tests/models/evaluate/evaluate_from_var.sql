{# recsql.evaluate with everything from var(): tests/test_dbt.py builds it with several --vars and
   compares every number with recsql.evaluate. The depends_on lines declare the side inputs' seeds,
   which var('recsql_interactions'), var('recsql_items'), var('recsql_catalog'), var('recsql_baseline')
   and var('recsql_item_features') may name. #}
-- depends_on: {{ ref('interactions') }}
-- depends_on: {{ ref('items') }}
-- depends_on: {{ ref('catalog') }}
-- depends_on: {{ ref('baseline') }}
-- depends_on: {{ ref('item_features') }}
{{ config(materialized='table') }}
{{ recsql.evaluate(
    recs=ref(var('recsql_recs', 'recs')),
    truth=ref(var('recsql_truth', 'truth')),
    metrics=var('recsql_metrics', ['ndcg@10', 'map(denominator=relevant)@10']),
    run_cols=var('recsql_run_cols', ['model']),
    output=var('recsql_output', 'summary'),
    score_col=var('recsql_score_col', 'score'),
    rank_col=var('recsql_rank_col', none),
    threshold=var('recsql_threshold', none),
    population=var('recsql_population', none),
    duplicates=var('recsql_duplicates', 'error'),
    ties=var('recsql_ties', none),
    convention=var('recsql_convention', 'recsql'),
    relevance_col=var('recsql_relevance_col', 'relevance'),
    column_names=var('recsql_column_names', 'safe'),
    text_ids=var('recsql_text_ids', none),
    interactions=(ref(var('recsql_interactions')) if var('recsql_interactions', none) is not none else none),
    items=(ref(var('recsql_items')) if var('recsql_items', none) is not none else none),
    catalog=(ref(var('recsql_catalog')) if var('recsql_catalog', none) is not none else none),
    baseline=(ref(var('recsql_baseline')) if var('recsql_baseline', none) is not none else none),
    item_features=(ref(var('recsql_item_features')) if var('recsql_item_features', none) is not none else none)) }}
