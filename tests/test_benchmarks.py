"""The benchmark harness's own path (benchmarks/run.py), on a small generated data set with real tool
processes: when a later repeat of a tool is killed, the best repeat's per-user values are still there
and the agreement check reads them (each repeat writes its own files; a killed one used to remove
the file the best run needed, and the harness stopped with FileNotFoundError). And the off-policy
benchmark (benchmarks/logs.py) end to end on a small run, against obp."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import datagen  # noqa: E402
import logs  # noqa: E402
import run  # noqa: E402


def harness_args(**given) -> argparse.Namespace:
    """The options run.main would pass run_tool, with the small run's values."""
    defaults = dict(repeat=3, timeout=600.0, mem_limit_mb=8192, min_free_mb=0, spark_driver_memory="1g",
                    duckdb_memory_limit=None, spark_shuffle_partitions=2)
    return argparse.Namespace(**{**defaults, **given})


def test_a_killed_later_repeat_leaves_the_best_runs_per_user_values(tmp_path):
    rows = 2_000
    datagen.generate(rows, tmp_path / "data", verbose=False)
    recs, truth = datagen.paths(rows, tmp_path / "data")
    work = tmp_path / "work"
    work.mkdir()
    args = harness_args()
    attempts = []

    def first_ok_then_killed(tool, recs, truth, work, args, repeat=0):
        """The real run_tool; from the second repeat on with a timeout no run can meet, so the
        harness kills that repeat's process midway, as --timeout or --mem-limit-mb do."""
        attempts.append(repeat)
        given = args if repeat == 0 else argparse.Namespace(**{**vars(args), "timeout": 0.0})
        return run.run_tool(tool, recs, truth, work, given, repeat=repeat)

    best = run.best_of("recsql", recs, truth, work, args, "2k", run=first_ok_then_killed)
    assert attempts == [0, 1]  # the killed repeat ended the repeats
    assert best["status"] == "ok" and len(best["all_walls_s"]) == 1
    assert Path(best["per_user_file"]).is_file()
    other = run.best_of("pandas", recs, truth, work, harness_args(repeat=1), "2k")
    run.agreement(other, best, best["per_user_file"])  # reads the best recsql run's per-user values
    assert other["agrees"] and other["per_user_users_only_in_one"] == 0
    assert len(pd.read_parquet(best["per_user_file"])) == best["n_users"]


def test_only_the_best_repeats_per_user_file_is_kept(tmp_path):
    """Of several successful repeats, the fastest is kept and the others' per-user files removed."""
    made = []

    def fake(tool, recs, truth, work, args, repeat=0):
        path = tmp_path / f"{tool}.{repeat}.per_user.parquet"
        path.write_bytes(b"x")
        made.append(path)
        return {"tool": tool, "status": "ok", "wall_s": [3.0, 1.0, 2.0][repeat], "peak_rss_mb": 1.0,
                "per_user_file": str(path)}

    best = run.best_of("recsql", Path("r"), Path("t"), tmp_path, harness_args(), "x", run=fake)
    assert best["wall_s"] == 1.0 and best["all_walls_s"] == [3.0, 1.0, 2.0]
    assert [p.exists() for p in made] == [False, True, False]


def test_the_logs_benchmark_reads_a_memory_limit_per_size():
    """--duckdb-memory-limit: one limit for every size, or a default then SIZE=LIMIT pairs."""
    assert logs.memory_limits("4GB") == {None: "4GB"}
    assert logs.memory_limits("4GB,100M=3GB") == {None: "4GB", 100_000_000: "3GB"}
    assert logs.memory_limits("") == {None: None}
    assert logs._limits_text("4GB,100M=3GB,10M=3.5GB") == "4GB (100M: 3GB, 10M: 3.5GB)"


def test_the_logs_benchmark_agrees_with_obp_on_a_small_run(tmp_path):
    """benchmarks/logs.py end to end on 10,000 logged impressions: recsql, the floor and obp (in its own
    venv, tests/test_logs_obp.py's) in their own processes; every obp estimate equals recsql's to 1e-9
    relative, and the logging propensities are the policy's true probabilities of the logged item."""
    assert logs.main(["--rows", "10k", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "data"),
                      "--duckdb-memory-limit", "4GB,10k=1GB", "--min-free-mb", "0"]) == 0
    size = json.loads((tmp_path / "out" / "logs.json").read_text())["sizes"][0]
    assert size["duckdb_memory_limit"] == "1GB"  # the size's own limit, over the default
    by = {r["tool"]: r for r in size["results"]}
    assert sorted(by) == ["floor", "obp-dr", "obp-ips", "recsql"] and not size["skipped"]
    assert all(r["status"] == "ok" for r in by.values())
    assert sorted(by["obp-ips"]["rel_diff"]) == ["ess", "ips", "ips(cap=10)", "snips"]
    assert sorted(by["obp-dr"]["rel_diff"]) == ["dm", "dr"]
    assert all(by[t]["agrees"] for t in ("floor", "obp-ips", "obp-dr"))
    assert 0 < by["recsql"]["metrics"]["ips"] < 1 and by["recsql"]["metrics"]["ess"] > 1
    # ε-greedy: the greedy item is logged with probability 1 - ε + ε/N, any other with ε/N
    greedy, other = 1 - logs.EPSILON + logs.EPSILON / logs.N_ACTIONS, logs.EPSILON / logs.N_ACTIONS
    share, values = duckdb.connect().execute(
        "SELECT avg((propensity > 0.5)::INT), list(DISTINCT propensity ORDER BY propensity) "
        f"FROM read_parquet('{tmp_path / 'data' / 'logs-10k' / 'logs.parquet'}')").fetchone()
    assert values == pytest.approx([other, greedy], rel=1e-12)
    assert abs(share - greedy) < 4 * (greedy * (1 - greedy) / 10_000) ** 0.5  # within 4 standard errors


def test_the_report_benchmark_times_cold_processes_and_build_report_in_one_process(tmp_path):
    """benchmarks/report.py end to end on one cold process and one alternated pair in one process: the
    results name both ways of running the two comparisons, and every page written is the same."""
    import report
    assert report.main(["--repeat", "1", "--empty", "0", "--in-process", "1", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "report.json").read_text())
    assert result["pages"] == 1 and result["cases"]["warm"]["repeats"] == 1
    assert set(result["in_process"]) == {"side by side", "in turn"}
    assert all(t["pairs"] == 1 and len(t["seconds"]) == 1 and t["median"] > 0 for t in result["in_process"].values())
    assert "| side by side |" in (tmp_path / "report.md").read_text()


def test_the_engines_benchmark_takes_each_ratio_to_duckdb_just_before(tmp_path):
    """benchmarks/engines.py end to end on two engines and one metric, real worker processes: DuckDB runs
    first and again just before SQLite, each call composes its statement (an empty cache of its own), and
    SQLite's ratio is to the DuckDB call just before it; SQLite's summary is compared with DuckDB's."""
    import subprocess
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "engines.py"), "--engines", "duckdb,sqlite",
                           "-m", "ndcg@10", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    results = {r["engine"]: r for r in json.loads((tmp_path / "engines.json").read_text())["results"]}
    duckdb_row, sqlite_row = results["duckdb"], results["sqlite"]
    assert len(duckdb_row["runs"]) == 2 and duckdb_row["runs"][0] == duckdb_row["seconds"]
    assert sqlite_row["duckdb_seconds"] == duckdb_row["runs"][1]
    assert duckdb_row["runs_gap"] < 1e-12
    assert sqlite_row["values"]["ndcg@10"] == pytest.approx(duckdb_row["values"]["ndcg@10"], abs=1e-12)
    assert 0 < duckdb_row["values"]["ndcg@10"] < 1
    table = (tmp_path / "engines.md").read_text()
    ratio = sqlite_row["seconds"] / sqlite_row["duckdb_seconds"]
    assert f"| sqlite | 1 | {sqlite_row['seconds']:.2f} | {sqlite_row['duckdb_seconds']:.2f} | {ratio:.1f}× |" in table
