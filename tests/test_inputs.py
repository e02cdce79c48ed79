"""Inputs (docs/guide/inputs.md): files, globs, DataFrames, Arrow, DuckDB tables and read-only .duckdb files,
renamed columns, run keys in recs and truth, and the population diagnostics (docs/guide/populations.md, step 5)."""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import recsql

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
METRICS = ["ndcg@10", "map@10", "recall@20", "precision@5", "mrr@10", "hr@10"]


@pytest.fixture(scope="module")
def expected() -> pd.DataFrame:
    return recsql.evaluate(str(DATA / "recs.parquet"), str(DATA / "truth.parquet"), METRICS, run_cols=["model"]).summary


def test_sample_data_summary_shape(expected):
    assert list(expected["model"]) == ["personal", "popular"]
    assert list(expected.columns) == ["model", "n_users", "ndcg@10", "map@10", "recall@20", "precision@5",
                                      "mrr@10", "hr@10", "users_without_recs", "recs_users_without_truth"]
    assert (expected["n_users"] > 250).all() and (expected["users_without_recs"] > 0).all()


@pytest.mark.parametrize("convert", [
    lambda df: df,
    lambda df: pl.from_pandas(df),
    lambda df: pa.Table.from_pandas(df),
], ids=["pandas", "polars", "arrow"])
def test_dataframes_give_the_file_result(expected, convert):
    recs, truth = pd.read_parquet(DATA / "recs.parquet"), pd.read_parquet(DATA / "truth.parquet")
    got = recsql.evaluate(convert(recs), convert(truth), METRICS, run_cols=["model"]).summary
    pd.testing.assert_frame_equal(got, expected)


def test_csv_and_glob(tmp_path, expected):
    recs = pd.read_parquet(DATA / "recs.parquet")
    for model, part in recs.groupby("model"):
        part.to_parquet(tmp_path / f"recs-{model}.parquet", index=False)
    pd.read_parquet(DATA / "truth.parquet").to_csv(tmp_path / "truth.csv", index=False)
    got = recsql.evaluate(str(tmp_path / "recs-*.parquet"), str(tmp_path / "truth.csv"), METRICS, run_cols=["model"]).summary
    pd.testing.assert_frame_equal(got, expected)


def _database(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE recs AS SELECT * FROM read_parquet('{DATA / 'recs.parquet'}')")
    con.execute(f"CREATE TABLE truth AS SELECT * FROM read_parquet('{DATA / 'truth.parquet'}')")
    con.close()


def test_duckdb_file_is_opened_read_only_and_left_byte_identical(tmp_path, expected):
    path = tmp_path / "eval.duckdb"
    _database(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    got = recsql.evaluate("recs", "truth", METRICS, con=str(path), run_cols=["model"]).summary
    pd.testing.assert_frame_equal(got, expected)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert not list(tmp_path.glob("*.wal"))


def test_user_connection_keeps_no_trace(expected):
    con = duckdb.connect()
    con.execute(f"CREATE VIEW recs AS SELECT * FROM read_parquet('{DATA / 'recs.parquet'}')")
    objects = "SELECT table_name FROM information_schema.tables ORDER BY 1"
    before = con.execute(objects).fetchall()
    truth = pd.read_parquet(DATA / "truth.parquet")  # a DataFrame registered for the run only
    got = recsql.evaluate("recs", truth, METRICS, con=con, run_cols=["model"]).summary
    pd.testing.assert_frame_equal(got, expected)
    assert con.execute(objects).fetchall() == before


def test_renamed_columns_and_rank_input():
    recs = pd.DataFrame({"uid": ["a", "a", "b"], "sku": ["x", "y", "x"], "pos": [2, 1, 1]})
    truth = pd.DataFrame({"uid": ["a", "b"], "sku": ["x", "z"], "stars": [3, 5]})
    result = recsql.evaluate(recs, truth, ["mrr@5", "ndcg@2"], user_col="uid", item_col="sku",
                             rank_col="pos", relevance_col="stars", threshold=3)
    # user a: x at position 2 -> mrr 1/2, ndcg = (3/log2 3) / 3; user b: nothing relevant listed
    assert list(result.per_user["uid"]) == ["a", "b"]
    assert result.per_user["mrr@5"].tolist() == [0.5, 0.0]
    assert math.isclose(result.per_user["ndcg@2"][0], 1 / math.log2(3))


def test_result_columns_are_named_as_asked():
    """docs/guide/metrics.md: one column per metric, named as asked; a Metric object gives its canonical name;
    a metric asked twice under two spellings is computed once, under the first spelling."""
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.9, 0.2]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [2]})
    asked = ["P@2", " NDCG@2 ", "precision@2", "map@2", recsql.Metric("mrr", 2), "hr@1"]
    result = recsql.evaluate(recs, truth, asked)
    assert list(result.summary.columns) == ["n_users", "P@2", "NDCG@2", "map@2", "mrr@2", "hr@1",
                                            "users_without_recs", "recs_users_without_truth"]
    assert list(result.per_user.columns) == ["user_id", "P@2", "NDCG@2", "map@2", "mrr@2", "hr@1"]
    # one relevant item at position 2: P@2 = 1/2, nDCG@2 = (1/log2 3) / 1, AP@2 = 1/2, RR = 1/2, HR@1 = 0
    assert result.summary[["P@2", "map@2", "mrr@2", "hr@1"]].iloc[0].tolist() == [0.5, 0.5, 0.5, 0.0]
    assert math.isclose(result.summary["NDCG@2"].iloc[0], 1 / math.log2(3))
    assert 'AS "P@2"' in recsql.to_sql(metrics=["P@2"])


def test_truth_without_relevance_column_means_relevance_one():
    recs = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "score": [0.2, 0.9]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [1]})
    result = recsql.evaluate(recs, truth, ["mrr@2", "cg@2"])
    assert result.summary[["mrr@2", "cg@2"]].iloc[0].tolist() == [0.5, 1.0]


def test_truth_carrying_run_keys_is_matched_per_run():
    recs = pd.DataFrame({"day": [1, 1, 2, 2], "user_id": [1, 1, 1, 1], "item_id": [1, 2, 1, 2], "score": [2, 1, 2, 1]})
    truth = pd.DataFrame({"day": [1, 2], "user_id": [1, 1], "item_id": [1, 2]})
    result = recsql.evaluate(recs, truth, ["mrr@2"], run_cols=["day"])
    assert result.summary[["day", "mrr@2"]].values.tolist() == [[1, 1.0], [2, 0.5]]


def test_population_diagnostics_and_intersection():
    recs = pd.DataFrame({"user_id": [1, 1, 9], "item_id": [1, 2, 1], "score": [2.0, 1.0, 1.0]})
    truth = pd.DataFrame({"user_id": [1, 2, 3], "item_id": [1, 1, 1], "relevance": [1, 1, 0]})
    relevant = recsql.evaluate(recs, truth, ["hr@1"]).summary.iloc[0]
    # users 1 and 2 have relevant truth; 2 has no recs (scores 0); 3 has none relevant; 9 has no truth
    assert (relevant["n_users"], relevant["hr@1"]) == (2, 0.5)
    assert (relevant["users_without_recs"], relevant["recs_users_without_truth"]) == (1, 1)
    inter = recsql.evaluate(recs, truth, ["hr@1"], population="intersection").summary.iloc[0]
    assert (inter["n_users"], inter["hr@1"]) == (1, 1.0)


def test_each_population_has_its_own_count():
    """``n_users`` counts the users the truth metrics average over, whatever else is asked;
    ``n_users_with_recs`` those the list-only metrics average over; global metrics none; the truth
    diagnostics are there only with truth."""
    recs, truth = pd.read_parquet(DATA / "recs.parquet"), pd.read_parquet(DATA / "truth.parquet")
    seen = truth[["user_id", "item_id"]]
    hr = recsql.evaluate(recs, truth, ["hit_rate@10"], run_cols=["model"]).summary
    both = recsql.evaluate(recs, truth, ["hit_rate@10", "arp@10"], interactions=seen, run_cols=["model"]).summary
    assert list(hr.columns) == ["model", "n_users", "hit_rate@10", "users_without_recs", "recs_users_without_truth"]
    assert list(both.columns) == ["model", "n_users", "n_users_with_recs", "hit_rate@10", "arp@10",
                                  "users_without_recs", "recs_users_without_truth"]
    assert both["n_users"].tolist() == hr["n_users"].tolist()
    relevant = truth[truth["relevance"] >= 1]["user_id"].nunique()
    assert hr["n_users"].tolist() == [relevant, relevant]
    assert both["n_users_with_recs"].tolist() == recs.groupby("model")["user_id"].nunique().tolist()
    assert list(recsql.evaluate(recs, None, ["coverage@10"], run_cols=["model"]).summary.columns) == \
        ["model", "coverage@10"]
    lists = recsql.evaluate(recs, None, ["arp@10"], interactions=seen, run_cols=["model"]).summary
    assert list(lists.columns) == ["model", "n_users_with_recs", "arp@10"]
    with_truth = recsql.evaluate(recs, truth, ["coverage@10"], run_cols=["model"]).summary
    assert list(with_truth.columns) == ["model", "coverage@10", "users_without_recs", "recs_users_without_truth"]


def test_a_convention_with_a_population_per_metric_counts_each():
    """msr averages ndcg over every truth user and precision over users of both inputs: two counts."""
    recs = pd.DataFrame({"user_id": [1, 1, 9], "item_id": [1, 2, 1], "score": [2.0, 1.0, 1.0]})
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 1]})
    result = recsql.evaluate(recs, truth, ["ndcg@2", "precision@2"], convention="msr")
    summary = result.summary.iloc[0]
    assert list(result.summary.columns) == ["n_users", "n_users_ndcg", "ndcg@2", "precision@2", "users_without_recs",
                                            "recs_users_without_truth"]
    assert summary[["n_users", "n_users_ndcg", "ndcg@2", "precision@2"]].tolist() == [1, 2, 0.5, 0.5]
    assert list(result.per_user["user_id"]) == [1, 2]  # every population's users, each column empty outside its own
    assert pd.isna(result.per_user["precision@2"][1])
    only_ndcg = recsql.evaluate(recs, truth, ["ndcg@2"], convention="msr").summary
    assert list(only_ndcg.columns) == ["n_users_ndcg", "ndcg@2", "users_without_recs", "recs_users_without_truth"]
    # population= written by the user applies to every metric: one population, one count
    one = recsql.evaluate(recs, truth, ["ndcg@2", "precision@2"], convention="msr", population="intersection").summary
    assert list(one.columns)[:3] == ["n_users", "ndcg@2", "precision@2"] and one["ndcg@2"].iloc[0] == 1.0


def test_empty_population_gives_null_and_a_warning():
    recs = pd.DataFrame({"user_id": [1], "item_id": [1], "score": [1.0]})
    truth = pd.DataFrame({"user_id": [1], "item_id": [1], "relevance": [0]})
    with pytest.warns(recsql.RecsqlWarning, match="no user has a relevant truth item"):
        result = recsql.evaluate(recs, truth, ["ndcg@5"])
    assert result.summary["n_users"].iloc[0] == 0 and pd.isna(result.summary["ndcg@5"].iloc[0])
    assert result.per_user.empty
    two = pd.concat([recs.assign(model="A"), recs.assign(model="B", user_id=2)])
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 1], "relevance": [0, 1]})
    with pytest.warns(recsql.RecsqlWarning) as said:  # one warning, naming the runs whose population is empty
        # (and the warning that each user is under one model: these runs split the users)
        recsql.evaluate(two, truth.assign(relevance=[0, 0]), ["ndcg@5"], run_cols="model")
        recsql.evaluate(two, truth.assign(model=["A", "B"], user_id=[1, 2]), ["ndcg@5"], run_cols="model")  # truth by run
    assert [str(w.message).split(":")[0] for w in said if str(w.message).startswith("no user")] == [
        "no user has a relevant truth item (relevance >= threshold = 1) in runs 'A', 'B'",
        "no user has a relevant truth item (relevance >= threshold = 1) in run 'A'"]


def test_money_metrics_read_prices_from_items():
    recs = pd.DataFrame({"user_id": [1, 1, 1], "item_id": [1, 2, 3], "score": [3.0, 2.0, 1.0]})
    truth = pd.DataFrame({"user_id": [1, 1], "item_id": [2, 4]})
    items = pd.DataFrame({"item_id": [1, 2, 3, 4], "price": [10.0, 30.0, 60.0, 90.0]})
    result = recsql.evaluate(recs, truth, ["money_precision@2", "money_recall@3"], items=items)
    assert result.summary["money_precision@2"].iloc[0] == 30 / 40
    assert result.summary["money_recall@3"].iloc[0] == 30 / 120


def test_one_statement_reads_each_input_once():
    sql = recsql.to_sql("db.s.recs", "db.s.truth", ["ndcg@10", "map@10", "recall@50", "precision@5"])
    import sqlglot
    from sqlglot import exp
    tree = sqlglot.parse_one(sql, read="duckdb")
    tables = [t.sql("duckdb") for t in tree.find_all(exp.Table) if t.db]
    assert sorted(tables) == ['"db"."s"."recs"', '"db"."s"."truth"']
    assert len(sqlglot.parse(sql, read="duckdb")) == 1


def test_installed_package_loads_every_template():
    from recsql.compose import metric_expression
    from recsql.templates import sql_dir
    assert (sql_dir() / "_ranked.sql").is_file()
    for name, spec in recsql.registry().items():
        assert metric_expression(recsql.Metric(name, None if not spec.needs_k else 3)) is not None


# ---------------------------------------------------------------- one description of the inputs


def test_entry_points_take_exactly_the_inputs_fields_with_its_defaults():
    """evaluate, to_sql and compare build one recsql.Inputs from their keywords: each takes every field
    of it, by the same name and (but for to_sql's table names) with the same default, and nothing else
    beyond its own few options; a keyword added to one entry point and not to Inputs fails here."""
    import dataclasses
    import inspect
    fields = {f.name: f.default for f in dataclasses.fields(recsql.Inputs)}
    # (baseline: expected_recs' old name, accepted one release)
    own = {"evaluate": {"metrics", "con", "progress", "baseline", "min_ess_share"},
           "to_sql": {"metrics", "dialect", "output", "truth_has_run_cols", "logs_run_cols", "text_ids", "order_type",
                      "compare", "pretty",
                      "baseline"}}
    for name, extra in own.items():
        parameters = inspect.signature(getattr(recsql, name)).parameters
        assert set(parameters) - extra == set(fields), name
        for field, default in fields.items():
            if field not in ("recs", "truth"):  # evaluate: positional, required; to_sql: tables named recs, truth
                assert parameters[field].default == default, (name, field)
    assert inspect.signature(recsql.to_sql).parameters["recs"].default == "recs"
    # compare takes evaluate's options by name (**options), and run_cols, expected_recs and segments as its own
    # (baseline_recs: expected_recs' old name, accepted one release)
    compare = inspect.signature(recsql.compare).parameters
    assert {"run_cols", "expected_recs", "segments", "baseline_recs"} <= set(compare) and "options" in compare
    with pytest.raises(recsql.RecsqlError, match="unknown option 'user_column'.*did you mean 'user_col'"):
        recsql.compare("recs.parquet", None, ["coverage@5"], run_cols="model", user_column="u")


def test_inputs_checks_options_in_one_place():
    assert recsql.Inputs(recs="r", run_cols="model").options()["run_cols"] == ("model",)
    with pytest.raises(recsql.RecsqlError, match="duplicates='maybe' is not valid"):
        recsql.Inputs(recs="r", duplicates="maybe").options()
    with pytest.raises(recsql.RecsqlError, match="duplicates='maybe' is not valid"):
        recsql.to_sql(metrics=["ndcg@10"], duplicates="maybe")
    with pytest.raises(recsql.RecsqlError, match="duplicates='maybe' is not valid"):
        recsql.evaluate(pd.DataFrame({"user_id": [1], "item_id": [1], "score": [1.0]}), None, ["coverage@5"],
                        duplicates="maybe")


def test_every_entry_point_takes_an_inputs_as_its_keywords():
    """evaluate, to_sql, compare, the report and the dbt generator take one recsql.Inputs in place of
    recs (truth left out: the metrics come next): the same results and SQL as the keyword form.
    An input or option given both in the Inputs and as a keyword is an error."""
    from recsql.dbt.model import ModelSpec, model_sql
    from recsql.report.build import build_report
    recs, truth = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")
    inputs = recsql.Inputs(recs=recs, truth=truth, run_cols="model", relevance_col=None, convention="trec")
    keywords = dict(run_cols="model", relevance_col=None, convention="trec")
    metrics = ["ndcg@10", "map@10"]
    by_keywords = recsql.evaluate(recs, truth, metrics, **keywords)
    for by_inputs in (recsql.evaluate(inputs, metrics), recsql.evaluate(inputs, metrics=metrics)):
        assert by_inputs.sql == by_keywords.sql
        pd.testing.assert_frame_equal(by_inputs.summary, by_keywords.summary, rtol=1e-12)
        pd.testing.assert_frame_equal(by_inputs.per_user, by_keywords.per_user, rtol=1e-12)
    tables = recsql.Inputs(recs="db.recs", truth="db.truth", run_cols="model", relevance_col=None, convention="trec")
    assert recsql.to_sql(tables, metrics, dialect="postgres") == recsql.to_sql("db.recs", "db.truth", metrics,
                                                                            dialect="postgres", **keywords)
    compared = recsql.compare(inputs, ["ndcg@10"], baseline="popular", resamples=30)
    again = recsql.compare(recs, truth, ["ndcg@10"], baseline="popular", resamples=30, **keywords)
    assert compared.sql == again.sql
    pd.testing.assert_frame_equal(compared.tests, again.tests, rtol=1e-9)
    report = build_report(inputs, ["ndcg@5"], baseline="popular", resamples=20, curves=False).data
    again = build_report(recs, truth, ["ndcg@5"], baseline="popular", resamples=20, curves=False, **keywords).data
    assert report.sql == again.sql and report.fingerprint == again.fingerprint
    pd.testing.assert_frame_equal(report.tests, again.tests, rtol=1e-9)
    dbt = ModelSpec("by_inputs", metrics, recsql.Inputs(recs="recs", truth="truth", run_cols="model"))
    assert model_sql(dbt, "duckdb") == model_sql(ModelSpec("by_inputs", metrics, {"recs": "recs", "truth": "truth"},
                                                           options={"run_cols": "model"}), "duckdb")
    for call in (lambda: recsql.evaluate(inputs, metrics, run_cols="day"),
                 lambda: recsql.to_sql(tables, metrics, user_col="u"),
                 lambda: recsql.compare(inputs, ["ndcg@10"], convention="ranx"),
                 lambda: build_report(inputs, ["ndcg@5"], items="items.parquet")):
        with pytest.raises(recsql.RecsqlError, match="given both in the Inputs and as a keyword"):
            call()
    with pytest.raises(recsql.RecsqlError, match="the Inputs holds truth; pass the metrics after it"):
        recsql.evaluate(inputs, truth, metrics)
    with pytest.raises(recsql.RecsqlError, match="name the metrics"):
        recsql.evaluate(inputs)


def test_to_sql_takes_evaluates_order_and_the_old_one_for_a_release():
    """to_sql(recs, truth, metrics), as evaluate; the old to_sql(metrics, recs, truth) gives the same SQL
    with a FutureWarning while its first argument is clearly metrics."""
    new = recsql.to_sql("db.recs", "db.truth", ["ndcg@10"])
    assert new == recsql.to_sql(recs="db.recs", truth="db.truth", metrics=["ndcg@10"])
    with pytest.warns(FutureWarning, match=r"now to_sql\(recs, truth, metrics\)"):
        assert recsql.to_sql(["ndcg@10"], "db.recs", "db.truth") == new
    with pytest.warns(FutureWarning, match=r"now to_sql\(recs, truth, metrics\)"):
        assert recsql.to_sql(["ndcg@10"], recs="db.recs", truth="db.truth") == new
