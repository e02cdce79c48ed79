"""The `recsql` command: evaluate (table / csv / json, per-user file, --db), sql, metrics, errors."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import recsql
from support.cases import TREC_EVAL as TREC
from recsql.cli import main

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")


def test_evaluate_json_matches_the_api(capsys):
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10", "-m", "map@10", "--run-col", "model", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    api = recsql.evaluate(RECS, TRUTH, ["ndcg@10", "map@10"], run_cols=["model"]).summary
    assert [row["model"] for row in out] == list(api["model"])
    assert [row["ndcg@10"] for row in out] == pytest.approx(list(api["ndcg@10"]), abs=1e-12)


def test_evaluate_table_is_aligned_and_reports_time(capsys):
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10", "-m", "hr@10", "--run-col", "model"]) == 0
    captured = capsys.readouterr()
    header, row, _ = captured.out.splitlines()
    assert header.split() == ["model", "n_users", "ndcg@10", "hr@10", "users_without_recs", "recs_users_without_truth"]
    assert len(header) == len(row)
    assert "metric(s)" in captured.err and "11,480 recommendation rows" in captured.err and " s" in captured.err


def test_evaluate_csv_and_per_user_file(tmp_path, capsys):
    out = tmp_path / "users.parquet"
    assert main(["evaluate", RECS, TRUTH, "-m", "recall@20", "--run-col", "model", "--format", "csv",
                 "--per-user", str(out)]) == 0
    summary = capsys.readouterr().out.splitlines()
    assert summary[0].startswith("model,n_users,recall@20")
    per_user = pd.read_parquet(out)
    assert list(per_user.columns) == ["model", "user_id", "recall@20"]
    assert len(per_user) == sum(int(line.split(",")[1]) for line in summary[1:])


def test_several_runs_without_run_keys_are_refused_with_the_fix(capsys):
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10"]) == 2
    err = capsys.readouterr().err
    assert "duplicated (user_id, item_id)" in err and "--run-col model" in err


def test_evaluate_tables_in_a_duckdb_file(tmp_path, capsys):
    db = tmp_path / "recs.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE recs AS SELECT * FROM '{RECS}'")
    con.execute(f"CREATE TABLE truth AS SELECT * FROM '{TRUTH}'")
    con.close()
    assert main(["evaluate", "recs", "truth", "--db", str(db), "-m", "mrr@10", "--format", "csv", "--run-col", "model"]) == 0
    assert capsys.readouterr().out.startswith("model,n_users,mrr@10")


def test_sql_prints_one_query(capsys):
    assert main(["sql", "-m", "ndcg@10", "-m", "map@10", "--recs", "db.recs", "--truth", "db.truth"]) == 0
    sql = capsys.readouterr().out
    header = [line for line in sql.splitlines() if line.startswith("/* ")]
    assert sql.startswith("/* recsql ") and len(header) == 3 and header[0].endswith("ndcg@10, map@10 (summary: one row per run) */")
    assert sql.split("*/\n")[3].startswith("WITH") and '"db"."recs"' in sql and '"ndcg@10"' in sql


def test_metrics_lists_the_registry(capsys):
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    for name in recsql.registry():
        assert f"\n{name}" in f"\n{out}"
    assert "option ideal = truth (choices: truth | list | binary | k_slots)" in out


def test_errors_exit_2_with_a_message_and_no_traceback(capsys):
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("recsql: error:") and "k must be >= 1" in err and "Traceback" not in err


def test_installed_console_script_runs():
    exe = shutil.which("recsql")
    assert exe, "the recsql console script is not installed (pip install -e .)"
    done = subprocess.run([exe, "evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--format", "csv"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("model,n_users,ndcg@10")


def test_progress_bar_is_switched_on_only_when_asked():
    from recsql.engines.duckdb import DuckDBRunner
    setting = "SELECT current_setting('enable_progress_bar')"
    with DuckDBRunner(progress=True) as runner:
        assert runner.fetch_rows(setting) == [(True,)]
    # on a user's connection recsql works on the connection itself (what the user's own SELECT
    # sees): it reads the user's setting, switches the bar on only when asked, and sets it back
    user = duckdb.connect()
    user.execute("SET enable_progress_bar = false")
    with DuckDBRunner(user) as runner:
        assert runner.fetch_rows(setting) == [(False,)]
    with DuckDBRunner(user, progress=True) as runner:
        assert runner.fetch_rows(setting) == [(True,)]
    assert user.execute(setting).fetchall() == [(False,)]


def test_sql_for_another_dialect(capsys):
    assert main(["sql", "-m", "ndcg@10", "--dialect", "bigquery", "--recs", "proj.ds.recs", "--truth", "proj.ds.truth"]) == 0
    sql = capsys.readouterr().out
    assert "`proj`.`ds`.`recs`" in sql and "FLOAT64" in sql
    assert main(["sql", "-m", "ndcg@10", "--dialect", "nosuchsql"]) == 2
    assert "is not supported" in capsys.readouterr().err


def _trec_eval_all(name: str) -> dict[str, float]:
    """{measure: value} of the 'all' rows of one of trec_eval's expected output files."""
    rows = [line.split() for line in (TREC / name).read_text().splitlines() if line.strip()]
    return {m: float(v) for m, q, v in rows if q == "all" and m != "runid"}


def test_evaluate_trec_files_with_a_convention(capsys):
    """`--run/--qrels --convention trec` prints trec_eval's own numbers (out.test: trec_eval -c)."""
    assert main(["evaluate", "--run", str(TREC / "results.test"), "--qrels", str(TREC / "qrels.test"),
                 "-m", "map", "-m", "P@10", "-m", "bpref", "-m", "num_rel_ret", "--convention", "trec",
                 "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    want = _trec_eval_all("out.test")
    assert row["map"] == pytest.approx(want["map"], abs=5.0001e-5)
    assert row["P@10"] == pytest.approx(want["P_10"], abs=5.0001e-5)
    assert row["bpref"] == pytest.approx(want["bpref"], abs=5.0001e-5)
    assert row["num_rel_ret"] == want["num_rel_ret"]


def test_evaluate_trec_run_against_a_truth_file_and_input_errors(tmp_path, capsys):
    qrels = pd.read_csv(TREC / "qrels.test", sep=r"\s+", header=None, names=["user_id", "it", "item_id", "relevance"],
                        dtype={"user_id": str, "item_id": str})
    truth_file = tmp_path / "truth.parquet"
    qrels[["user_id", "item_id", "relevance"]].to_parquet(truth_file)
    with_qrels = main(["evaluate", "--run", str(TREC / "results.test"), str(truth_file), "-m", "ndcg@10", "--format", "json"])
    from_files = json.loads(capsys.readouterr().out)[0]["ndcg@10"]
    assert with_qrels == 0
    api = recsql.evaluate(recsql.trec_run(TREC / "results.test"), qrels[["user_id", "item_id", "relevance"]], ["ndcg@10"])
    assert from_files == pytest.approx(api.summary["ndcg@10"].iloc[0], abs=1e-12)
    assert main(["evaluate", RECS, TRUTH, "--qrels", str(TREC / "qrels.test"), "-m", "map@10"]) == 2
    assert "name each input once" in capsys.readouterr().err
    assert main(["evaluate", "-m", "map@10"]) == 2
    assert "--run RUN_FILE --qrels QRELS_FILE" in capsys.readouterr().err


def test_ties_option_reaches_the_query(tmp_path, capsys):
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"
    recs.write_text("user_id,item_id,score\n1,1,0.5\n1,2,0.5\n")
    truth.write_text("user_id,item_id\n1,2\n")
    for ties, want in (("item_id", 0.0), ("item_id_desc", 1.0), ("average", 0.5)):
        assert main(["evaluate", str(recs), str(truth), "-m", "precision@1", "--ties", ties, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["precision@1"] == want


def test_beyond_metrics_from_the_command_line(tmp_path, capsys):
    """Side inputs by path; truth may be left out when no metric needs it."""
    interactions = tmp_path / "train.parquet"
    pd.read_parquet(TRUTH)[["user_id", "item_id"]].to_parquet(interactions)
    assert main(["evaluate", RECS, "-m", "novelty@10", "-m", "coverage@10", "-m", "diversity@5", "--run-col", "model",
                 "--items", str(DATA / "items.parquet"), "--interactions", str(interactions), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    api = recsql.evaluate(RECS, None, ["novelty@10", "coverage@10", "diversity@5"], run_cols=["model"],
                          items=str(DATA / "items.parquet"), interactions=str(interactions)).summary
    assert [r["coverage@10"] for r in rows] == pytest.approx(list(api["coverage@10"]), abs=1e-12)
    assert [r["novelty@10"] for r in rows] == pytest.approx(list(api["novelty@10"]), abs=1e-12)
    assert main(["evaluate", RECS, "-m", "ndcg@10"]) == 2
    said = capsys.readouterr().err
    assert "needs truth" in said and "give truth (the TRUTH argument after RECS, or --qrels)" in said, said
    assert "truth=" not in said
    assert main(["sql", "-m", "personalization@10", "--no-truth", "--recs", "db.recs"]) == 0
    out = capsys.readouterr().out
    assert '"db"."recs"' in out and '"truth"' not in out  # no truth table is read


# --- newcomer friction: --version, exact JSON, readable `recsql metrics`, outputs refused up front ---


def test_version_prints_the_package_version(capsys):
    import importlib.metadata
    import tomllib
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"recsql {importlib.metadata.version(recsql.DISTRIBUTION)}\n"
    assert importlib.metadata.version(recsql.DISTRIBUTION) == pyproject["project"]["version"] == recsql.__version__


def test_json_prints_every_digit_and_null_for_nan(tmp_path, capsys):
    """recall@1 = 1/3 must read back as exactly 1/3 (not 15 digits); AUC of an all-relevant list is NULL."""
    recs, truth = tmp_path / "r.csv", tmp_path / "t.csv"
    recs.write_text("user_id,item_id,score\n1,1,0.9\n1,2,0.8\n1,3,0.7\n")
    truth.write_text("user_id,item_id\n1,1\n1,2\n1,3\n")
    per_user = tmp_path / "users.json"
    assert main(["evaluate", str(recs), str(truth), "-m", "recall@1", "-m", "auc@3", "--format", "json",
                 "--per-user", str(per_user)]) == 0
    text = capsys.readouterr().out

    def no_nan(constant):
        raise AssertionError(f"not JSON: {constant}")

    for document in (text, per_user.read_text()):
        row = json.loads(document, parse_constant=no_nan)[0]
        assert row["recall@1"] == 1 / 3 and row["auc@3"] is None
    assert repr(1 / 3) in text  # 0.3333333333333333: all 16 digits


def test_metrics_shows_every_default_readably(capsys):
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    err = out[out.index("\nerr[@k]"):]
    err = err[: err.index("\n", err.index("cite:"))]
    assert "    option max_grade = auto (the largest relevance in truth; choices: auto | a number in (0, inf))" in err
    assert "option p = 0.8 (choices: a number in (0, 1))" in out  # rbp: persistence strictly between 0 and 1
    options = [line.strip() for line in out.splitlines() if line.strip().startswith("option ")]
    assert options and all(re.fullmatch(r"option \w+ = \S+ \(.+\)", line) for line in options), options
    assert not re.search(r"seed|SPEC|notebook", out)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_per_user_onto_an_input_is_refused_before_anything_is_read(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("recs.csv").write_text("user_id,item_id,score\n1,1,0.9\n1,2,0.8\n")
    Path("truth.csv").write_text("user_id,item_id\n1,2\n")
    Path("link.csv").symlink_to(tmp_path / "truth.csv")
    before = {name: _sha(Path(name)) for name in ("recs.csv", "truth.csv")}
    for per_user, refused in (("recs.csv", "RECS 'recs.csv'"), (str(tmp_path / "recs.csv"), "RECS 'recs.csv'"),
                              ("link.csv", "TRUTH 'truth.csv'")):
        assert main(["evaluate", "recs.csv", "truth.csv", "-m", "ndcg@10", "--per-user", per_user]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""  # no summary: nothing was evaluated
        assert captured.err.startswith(f"recsql: error: --per-user {per_user!r} is the input {refused}")
        assert "metric(s)" not in captured.err
        assert {name: _sha(Path(name)) for name in before} == before


def test_out_onto_an_input_table_is_refused_before_anything_is_read(tmp_path, capsys):
    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE recs AS SELECT 1 AS user_id, 2 AS item_id, 0.5 AS score")
    con.execute("CREATE TABLE truth AS SELECT 1 AS user_id, 2 AS item_id")
    con.close()
    before = _sha(db)
    for extra, words in ((["--summary-table", "main.RECS"], "--summary-table 'main.RECS' is an input table"),
                         (["--per-user-table", "truth"], "--per-user-table 'truth' is an input table"),
                         (["--summary-table", "m", "--per-user-table", "M"], "--summary-table and --per-user-table name the same table"),
                         (["--per-user", str(db.with_suffix(".csv"))], None)):
        code = main(["evaluate", "recs", "truth", "--db", str(db), "-m", "ndcg@10", *extra])
        captured = capsys.readouterr()
        if words is None:  # a new file beside the database is fine
            assert code == 0 and "ndcg@10" in captured.out
            continue
        assert code == 2 and captured.out == "" and words in captured.err, captured
        assert _sha(db) == before
    assert main(["evaluate", "recs", "truth", "-m", "ndcg@10", "--summary-table", "metrics"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "pass --db FILE.duckdb" in captured.err
    assert main(["evaluate", "recs", "truth", "--db", str(db), "-m", "ndcg@10", "--per-user", str(db)]) == 2
    assert "--per-user" in capsys.readouterr().err and _sha(db) == before


def test_old_option_names_still_work_one_release_with_a_one_line_warning(tmp_path, capsys):
    """--out / --out-per-user (evaluate's tables: now --summary-table / --per-user-table) and --baseline
    (another recommender's lists in evaluate and sql: now --expected-recs; in compare and report
    --baseline is the run compared against) still work, each with one line naming the new option."""
    db = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE recs AS SELECT * FROM '{RECS}'")
    con.execute(f"CREATE TABLE truth AS SELECT * FROM '{TRUTH}'")
    con.close()
    assert main(["evaluate", "recs", "truth", "--db", str(db), "-m", "ndcg@10", "--run-col", "model",
                 "--out", "metrics", "--out-per-user", "by_user"]) == 0
    err = capsys.readouterr().err
    assert "recsql: warning: --out is renamed --summary-table; --out will be removed in the next release" in err
    assert "recsql: warning: --out-per-user is renamed --per-user-table" in err
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM metrics").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM by_user").fetchone()[0] > 2
    con.close()
    assert main(["evaluate", "recs", "truth", "--db", str(db), "-m", "ndcg@10", "--out", "a", "--summary-table",
                 "b"]) == 2
    assert "--out is the old name of --summary-table: pass --summary-table only" in capsys.readouterr().err
    # --baseline in evaluate: the expected lists (the run of model 'popular' as another recommender's lists)
    popular = tmp_path / "popular.parquet"
    pd.read_parquet(RECS).query("model == 'popular'").drop(columns="model").to_parquet(popular)
    args = ["evaluate", RECS, TRUTH, "-m", "unexpectedness@5", "--run-col", "model", "--format", "csv"]
    assert main([*args, "--expected-recs", str(popular)]) == 0
    new = capsys.readouterr()
    assert main([*args, "--baseline", str(popular)]) == 0
    old = capsys.readouterr()
    import io
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(old.out)), pd.read_csv(io.StringIO(new.out)), rtol=1e-12)
    assert "unexpectedness@5" in new.out
    assert "recsql: warning: --baseline is renamed --expected-recs" in old.err and "warning" not in new.err
    assert main(["compare", RECS, TRUTH, "-m", "unexpectedness@5", "--run-col", "model", "--baseline", "popular",
                 "--baseline-recs", str(popular), "--resamples", "20"]) == 0
    compared = capsys.readouterr()
    assert "recsql: warning: --baseline-recs is renamed --expected-recs" in compared.err and "personal" in compared.out
    assert main(["sql", "-m", "unexpectedness@5", "--baseline", "popular"]) == 0
    sql = capsys.readouterr()
    assert "popular" in sql.out and "--baseline is renamed --expected-recs" in sql.err


def test_the_old_python_spellings_warn_and_give_the_same_results():
    """evaluate(baseline=) / to_sql(baseline=) and compare(baseline_recs=): expected_recs' old names,
    accepted one release with a FutureWarning naming the new one; both at once is an error."""
    recs = pd.read_parquet(RECS)
    popular = recs[recs["model"] == "popular"].drop(columns="model")
    new = recsql.evaluate(recs, TRUTH, ["unexpectedness@5"], run_cols="model", expected_recs=popular)
    with pytest.warns(FutureWarning, match="baseline= is renamed expected_recs="):
        old = recsql.evaluate(recs, TRUTH, ["unexpectedness@5"], run_cols="model", baseline=popular)
    pd.testing.assert_frame_equal(old.summary, new.summary, rtol=1e-12)
    with pytest.warns(FutureWarning, match="baseline= is renamed expected_recs="):
        assert recsql.to_sql(metrics=["unexpectedness@5"], baseline="popular") == recsql.to_sql(metrics=["unexpectedness@5"],
                                                                                         expected_recs="popular")
    with pytest.raises(recsql.RecsqlError, match="pass expected_recs= only"):
        recsql.evaluate(recs, TRUTH, ["unexpectedness@5"], expected_recs=popular, baseline=popular)
    with pytest.warns(FutureWarning, match="baseline_recs= is renamed expected_recs="):
        compared = recsql.compare(recs, TRUTH, ["unexpectedness@5"], run_cols="model", baseline_recs=popular,
                                  resamples=20)
    again = recsql.compare(recs, TRUTH, ["unexpectedness@5"], run_cols="model", expected_recs=popular, resamples=20)
    pd.testing.assert_frame_equal(compared.tests, again.tests, rtol=1e-9)
    with pytest.raises(recsql.RecsqlError, match="needs expected_recs"):
        recsql.evaluate(recs, TRUTH, ["unexpectedness@5"])


@pytest.mark.parametrize("command", ["evaluate", "sql", "metrics", "compare", "report", "dbt"])
def test_every_command_help_renders(command, capsys):
    """argparse reads a help text as a %-format: a bare % prints a dict of the option instead."""
    from recsql.cli import COMMANDS
    assert command in COMMANDS
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "option_strings" not in out and out.startswith("usage: recsql " + command)
