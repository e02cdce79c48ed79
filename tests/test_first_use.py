"""What a new user trips over on first use: hints that led to wrong numbers (a rank read as a score,
a rating column ignored), unknown keywords, `recsql metrics NAME`, the report's default file, the
compare table, error messages in the command line's words, the evaluate line's counts, LaTeX."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import recsql
from recsql import RecsqlError
from recsql.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")

# one user, two items: item 1 at rank 1 (relevant, rating 5), item 2 at rank 10 (rating 0)
RANKED = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "rank": [1, 10]})
RATED = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 2], "rating": [5, 0]})


def _files(tmp_path: Path, **frames: pd.DataFrame) -> list[str]:
    paths = []
    for name, frame in frames.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
        paths.append(str(tmp_path / f"{name}.csv"))
    return paths


@pytest.mark.parametrize("column", ["rank", "position", "pos", "Rank"])
def test_recs_with_a_rank_column_and_no_score_are_told_rank_col(column):
    recs = RANKED.rename(columns={"rank": column})
    with pytest.raises(RecsqlError) as err:
        recsql.evaluate(recs, RATED, ["precision@1"], relevance_col="rating")
    assert f"rank_col={column!r}" in str(err.value) and "score_col=" not in str(err.value)
    ranked = recsql.evaluate(recs, RATED, ["precision@1"], rank_col=column, relevance_col="rating")
    assert ranked.summary["precision@1"].tolist() == [1.0]  # rank 1 first: the relevant item


def test_rank_hint_on_the_command_line_names_the_flag(tmp_path, capsys):
    recs, truth = _files(tmp_path, recs=RANKED, truth=RATED[["user_id", "item_id"]])
    assert main(["evaluate", recs, truth, "-m", "precision@1"]) == 2
    err = capsys.readouterr().err
    assert "--rank-col rank" in err and "score" in err and "--score-col" not in err and "rank_col" not in err
    assert main(["evaluate", recs, truth, "-m", "precision@1", "--rank-col", "rank"]) == 0
    assert capsys.readouterr().out.split()[-3:] == ["1.000000", "0", "0"]


def test_a_score_and_a_rank_column_named_together_are_refused(tmp_path, capsys):
    """Both named, one would order the lists and the other be ignored: refused in each interface's words.
    The default score column beside a rank column is not a conflict (rank_col alone orders)."""
    recs = RANKED.assign(score=[0.1, 0.9])  # the score puts item 2 first, the rank item 1
    for call in (lambda: recsql.evaluate(recs, RATED, ["precision@1"], score_col="points", rank_col="rank"),
                 lambda: recsql.to_sql(recs, RATED, ["precision@1"], score_col="points", rank_col="rank"),
                 lambda: recsql.compare(recs.assign(run="a"), RATED, ["precision@1"], run_cols="run",
                                        score_col="points", rank_col="rank")):
        with pytest.raises(RecsqlError, match=r"score_col='points' and rank_col='rank' both order the recs"):
            call()
    ranked = recsql.evaluate(recs, RATED, ["precision@1"], rank_col="rank", relevance_col="rating")
    assert ranked.summary["precision@1"].tolist() == [1.0]  # the rank orders: item 1 first
    files = _files(tmp_path, recs=recs, truth=RATED)
    assert main(["evaluate", *files, "-m", "precision@1", "--score-col", "points", "--rank-col", "rank"]) == 2
    err = capsys.readouterr().err
    assert "--score-col points and --rank-col rank both order the recs" in err and "rank_col" not in err


def test_truth_with_a_numeric_column_but_no_relevance_is_refused_with_both_fixes():
    with pytest.raises(RecsqlError) as err:
        recsql.evaluate(RANKED, RATED, ["precision@2"], rank_col="rank")
    assert "relevance_col='rating'" in str(err.value) and "relevance_col=None" in str(err.value)
    graded = recsql.evaluate(RANKED, RATED, ["precision@2"], rank_col="rank", relevance_col="rating").summary
    every = recsql.evaluate(RANKED, RATED, ["precision@2"], rank_col="rank", relevance_col=None).summary
    keys_only = recsql.evaluate(RANKED, RATED[["user_id", "item_id"]], ["precision@2"], rank_col="rank").summary
    assert graded["precision@2"].tolist() == [0.5]  # rating 0 is not relevant
    assert every["precision@2"].tolist() == keys_only["precision@2"].tolist() == [1.0]


@pytest.mark.parametrize("convention", ["replay", "msr"])
def test_conventions_that_read_no_grades_take_truth_with_a_rating_as_it_is(convention):
    as_given = recsql.evaluate(RANKED, RATED, ["precision@2"], rank_col="rank", convention=convention).summary
    unread = recsql.evaluate(RANKED, RATED, ["precision@2"], rank_col="rank", convention=convention,
                             relevance_col=None).summary
    assert as_given["precision@2"].tolist() == unread["precision@2"].tolist() == [1.0]


def test_truth_keeping_its_run_keys_is_not_taken_for_a_grade():
    recs = pd.DataFrame({"run": [1, 1, 2], "user_id": [1, 1, 1], "item_id": [1, 2, 1], "score": [0.9, 0.8, 0.7]})
    truth = pd.DataFrame({"run": [1, 2], "user_id": [1, 1], "item_id": [1, 2]})
    summary = recsql.evaluate(recs, truth, ["hit_rate@1"], run_cols="run").summary
    assert summary["hit_rate@1"].tolist() == [1.0, 0.0]


def test_unnamed_grade_on_the_command_line_names_the_flags(tmp_path, capsys):
    recs, truth = _files(tmp_path, recs=RANKED, truth=RATED)
    assert main(["evaluate", recs, truth, "-m", "precision@2", "--rank-col", "rank"]) == 2
    err = capsys.readouterr().err
    assert "--relevance-col rating" in err and "--no-relevance" in err and "relevance_col" not in err
    assert main(["evaluate", recs, truth, "-m", "precision@2", "--rank-col", "rank", "--no-relevance"]) == 0
    assert capsys.readouterr().out.split()[-3] == "1.000000"
    assert main(["evaluate", recs, truth, "-m", "precision@2", "--rank-col", "rank", "--relevance-col", "rating"]) == 0
    assert capsys.readouterr().out.split()[-3] == "0.500000"


@pytest.mark.parametrize("call", [
    lambda: recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_col="model"),
    lambda: recsql.to_sql(metrics=["ndcg@10"], run_col="model"),
    lambda: recsql.compare(RECS, TRUTH, ["ndcg@10"], run_cols="model", run_col="model"),
])
def test_a_keyword_close_to_a_real_one_is_named(call):
    with pytest.raises(RecsqlError) as err:
        call()
    assert "run_cols" in str(err.value) and "did you mean" in str(err.value)


def test_metrics_name_shows_only_that_metric(capsys):
    assert main(["metrics", "ndcg"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ndcg") and not re.search(r"(?m)^(map|recall|hit_rate)\b", out)
    assert "trec_eval and ir_measures names" not in out
    assert main(["metrics", "hr", "P_10"]) == 0
    assert [line.split("[")[0].split("@")[0] for line in capsys.readouterr().out.splitlines()
            if not line.startswith(" ")] == ["hit_rate", "precision"]


def test_metrics_unknown_name_is_an_error_with_the_close_match(capsys):
    assert main(["metrics", "ndgc"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'ndgc'" in err and "did you mean 'ndcg'" in err


def test_report_writes_recsql_report_html_and_never_replaces_it_without_force(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["report", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--no-curves", "--resamples", "20",
            "--quiet"]
    assert main(args) == 0
    page = tmp_path / "recsql-report.html"
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    capsys.readouterr()
    page.write_text("mine", encoding="utf-8")
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err and page.read_text(encoding="utf-8") == "mine"
    assert main([*args, "--force"]) == 0
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def _certain(tmp_path: Path) -> list[str]:
    """Two runs that differ by exactly 1 for each of 30 users: a zero spread, so the t-test's p is 0.0."""
    users = range(1, 31)
    recs = pd.DataFrame([{"model": m, "user_id": u, "item_id": u if m == "good" else 1000 + u, "score": 1.0}
                         for m in ("bad", "good") for u in users])
    truth = pd.DataFrame({"user_id": list(users), "item_id": list(users)})
    return _files(tmp_path, recs=recs, truth=truth)


def test_compare_prints_a_compact_table_and_never_a_p_value_of_zero(tmp_path, capsys):
    recs, truth = _certain(tmp_path)
    api = recsql.compare(recs, truth, ["hit_rate@1"], run_cols="model", baseline="bad", resamples=50)
    assert api.tests["p_t"].tolist() == [0.0]  # the premise: a p-value that underflows to 0
    args = ["compare", recs, truth, "-m", "hit_rate@1", "--run-col", "model", "--baseline", "bad", "--resamples", "50"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("tests"))) + 1
    assert lines[header].split() == ["run", "baseline", "metric", "difference", "95%", "interval", "p(t)",
                                     "p(wilcoxon)", "p(randomization)", "verdict"]
    assert "< 1e-16" in lines[header + 1] and lines[header + 1].split()[-1] == "higher"
    assert main([*args, "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()
    cells = _cells(wide[-2], wide[-1])
    assert {"p_t", "p_t_adj", "effect_size", "wins"} <= set(cells)
    assert cells["p_t"] == cells["p_t_adj"] == "< 1e-16"
    assert all(float(cells[c].replace("< ", "")) > 0 for c in cells if c.startswith("p_"))  # never printed as 0


def test_compare_says_why_a_global_metric_s_interval_excludes_its_value(capsys):
    """The bootstrap of coverage is biased low (a resample shows fewer distinct items): its interval can lie below
    the value. The table says so under the runs, naming each (metric, run) where it does, and only those; the
    premise is read from the API's own numbers."""
    args = ["compare", RECS, TRUTH, "-m", "ndcg@10", "-m", "coverage@10", "--run-col", "model", "--baseline", "popular",
            "--resamples", "200"]
    runs = recsql.compare(RECS, TRUTH, ["ndcg@10", "coverage@10"], run_cols="model", baseline="popular",
                          resamples=200).runs
    outside = runs[(runs["ci_low"] > runs["mean"]) | (runs["ci_high"] < runs["mean"])]
    assert set(outside["metric"]) == {"coverage@10"} and len(outside) >= 1  # the premise
    assert main(args) == 0
    out = capsys.readouterr().out
    named = ", ".join(f"coverage@10 of {run}" for run in outside["run"])
    assert f"note: the interval excludes the value for {named}: a resample repeats some users" in out
    assert out.index("note:") < out.index("tests (")
    assert main([*args[:5], *args[7:]]) == 0  # ndcg@10 alone: its interval holds its value, no note
    assert "note:" not in capsys.readouterr().out


def _cells(header: str, row: str) -> dict[str, str]:
    """A right-aligned table row's cells by column name (each cell ends where its column's name ends)."""
    ends = [(m.group(), m.end()) for m in re.finditer(r"\S+", header)]
    return {name: row[start:end].strip() for (name, end), start in zip(ends, [0, *(e for _, e in ends[:-1])])}


def test_compare_verdict_follows_alpha(tmp_path, capsys):
    args = ["compare", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--baseline", "popular", "--resamples", "20"]
    assert main([*args, "--alpha", "0.01"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("not significant")  # p(randomization) 1/21 > 0.01
    assert main([*args, "--alpha", "0.1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].split()[-1] == "lower"


def test_cli_errors_name_flags_not_python_keywords(tmp_path, capsys):
    text_scores = pd.DataFrame({"user_id": [1], "item_id": [1], "score": ["high"]})
    recs, truth = _files(tmp_path, recs=text_scores, truth=RATED[["user_id", "item_id"]])
    mistakes = {  # arguments -> the flag (or fix) the error names
        ("evaluate", RECS, TRUTH, "-m", "ndcg@10"): ("--run-col model", "--duplicates best"),
        ("evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--user-col", "user"): ("--user-col",),
        ("evaluate", RECS, TRUTH, "-m", "novelty@10", "--run-col", "model"): ("--interactions",),
        ("evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--user-col", "item_id"):
            ("--user-col and --item-col",),
        # a value that is not a number: the fix is in the file (a cast in a view of a --db file would fail)
        ("evaluate", recs, truth, "-m", "ndcg@10"): ("(1 of its 1 values is not a number, e.g. 'high')",
                                                     "replace or drop the values that are not numbers"),
    }
    for args, flags in mistakes.items():
        assert main(list(args)) == 2, args
        err = capsys.readouterr().err
        assert all(flag in err for flag in flags), (args, err)
        assert not re.search(r"\b[a-z]+_cols?\b|\b(duplicates|interactions|run_cols)=|\(CLI:", err), (args, err)


def test_evaluate_line_says_runs_users_and_run_user_rows(capsys):
    assert main(["evaluate", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model"]) == 0
    assert "2 run(s), 289 user(s), 578 (run, user) rows, 11,480 recommendation rows" in capsys.readouterr().err


def test_latex_bolds_the_best_value_and_names_its_packages():
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@10", "recall@20"], run_cols="model")
    latex = evaluation.to_latex()
    assert latex.splitlines()[0].startswith("%") and r"\usepackage{booktabs}" in latex.splitlines()[0]
    popular = next(line for line in latex.splitlines() if "popular" in line)
    personal = next(line for line in latex.splitlines() if "personal" in line)
    assert popular.count(r"\textbf{") == 2 and r"\textbf{" not in personal
    assert r"\textbf{0.3020}" in popular
    assert "Bold" in latex


@pytest.mark.parametrize("argv", [["--version"], ["metrics"], ["metrics", "ndcg"]])
def test_version_and_metrics_load_no_dataframe_or_engine(argv):
    probe = ("import sys\nfrom recsql.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pandas', 'duckdb', 'sqlglot', 'numpy', 'yaml', 'scipy') if m in sys.modules),"
             " file=sys.stderr)") % argv
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == "[]"
