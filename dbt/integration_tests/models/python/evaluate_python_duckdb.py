"""recsql.evaluate in a dbt-duckdb Python model: `session` is dbt-duckdb's DuckDB connection (a cursor
of its database), passed as con=, so the query runs inside dbt's database on its tables.
tests/test_dbt.py compares the table it builds with recsql.evaluate on the seeds."""


def model(dbt, session):
    dbt.config(materialized="table")
    import recsql

    dbt.ref("recs"), dbt.ref("truth")  # declares the dependencies; the tables are read by name below
    schema = f"{dbt.this.database}.{dbt.this.schema}"
    result = recsql.evaluate(f"{schema}.recs", f"{schema}.truth", ["ndcg@10", "map(denominator=relevant)@10"],
                             run_cols=["model"], con=session)
    return result.summary
