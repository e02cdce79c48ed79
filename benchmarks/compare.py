"""Benchmark recsql.compare against ranx's compare on the same data: time and peak memory.

    python benchmarks/compare.py --users 100000 --runs 3 --resamples 1000 [--tools recsql,ranx-student,ranx-fisher]

Synthetic data (made in memory, the same seed for every tool): each run recommends 20 of 1,000 items
to every user with random scores; truth holds 5 items per user. The six metrics are ndcg@10, map@10,
mrr@10, recall@10, precision@10 and hit_rate@10. Every tool runs in its own process, one after the
other; each reports its wall time (from the DataFrames to the result table, data generation
excluded). Peak memory: the tool process's RSS sampled with psutil every 0.1 s from the parent (data
generation included, so it is the process's peak), and at least the process's own peak (VmHWM).
The results, with the load average before and after (other work on the machine slows every tool),
are written to benchmarks/results/compare.json and compare.md.

- ``recsql``: ``recsql.compare(..., convention="ranx", baseline=None)`` on DuckDB: every pair of runs, the
  paired t, Wilcoxon and randomization tests, bootstrap intervals of each run and each difference
  (``--resamples`` resamples and sign flips), Holm correction.
- ``ranx-student``: ranx ``compare(..., stat_test="student")`` (paired t on every pair), ranx's dicts
  built from the same frames (building them is timed, numba's JIT warm-up is not).
- ``ranx-fisher``: ranx ``compare(..., stat_test="fisher", n_permutations=--resamples)`` (randomization test).

The paired-t p-values of recsql and ranx are compared (they must agree to 1e-8).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

METRICS = ["ndcg@10", "map@10", "mrr@10", "recall@10", "precision@10", "hit_rate@10"]


def data(users: int, runs: int, seed: int = 0):
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    per_list, catalog, relevant = 20, 1_000, 5
    user = np.repeat(np.arange(users), per_list)
    frames = []
    for r in range(runs):
        items = np.concatenate([rng.choice(catalog, per_list, replace=False) for _ in range(users)])
        frames.append(pd.DataFrame({"model": f"run{r}", "user_id": user, "item_id": items,
                                    "score": rng.random(users * per_list)}))
    recs = pd.concat(frames, ignore_index=True)
    truth = pd.DataFrame({"user_id": np.repeat(np.arange(users), relevant),
                          "item_id": np.concatenate([rng.choice(catalog, relevant, replace=False) for _ in range(users)])})
    return recs, truth


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_recsql(args, recs, truth) -> dict:
    import recsql
    started = time.perf_counter()
    result = recsql.compare(recs, truth, METRICS, run_cols="model", convention="ranx", resamples=args.resamples)
    seconds = time.perf_counter() - started
    p = {f"{r.run}|{r.baseline}|{r.metric}": r.p_t for r in result.tests.itertuples()}
    return {"seconds": seconds, "p_t": p}


def _nested(frame, value: str) -> dict:
    """{str(user): {str(item): value}} (what ranx takes)."""
    out: dict = {}
    for user, item, v in zip(frame["user_id"].tolist(), frame["item_id"].tolist(), frame[value].tolist()):
        out.setdefault(str(user), {})[str(item)] = v
    return out


def _ranx_inputs(recs, truth):
    from ranx import Qrels, Run
    qrels = Qrels.from_dict(_nested(truth.assign(relevance=1), "relevance"))
    runs = []
    for name, group in recs.groupby("model"):
        run = Run.from_dict(_nested(group, "score"))
        run.name = name
        runs.append(run)
    return qrels, runs


def run_ranx(args, recs, truth, test: str) -> dict:
    from ranx import compare
    small_q, small_runs = _ranx_inputs(recs.head(200), truth)  # numba's JIT warm-up, not timed
    compare(small_q, small_runs, METRICS, stat_test=test, n_permutations=10, make_comparable=True)
    started = time.perf_counter()
    qrels, runs = _ranx_inputs(recs, truth)
    report = compare(qrels, runs, METRICS, stat_test=test, n_permutations=args.resamples, max_p=0.05)
    seconds = time.perf_counter() - started
    p = {}
    if test == "student":
        for a in report.model_names:
            for b in report.model_names:
                if a != b:
                    for m in METRICS:
                        p[f"{a}|{b}|{m}"] = report.comparisons[frozenset([a, b])][m]["p_value"]
    return {"seconds": seconds, "p_t": p}


TOOLS = {"recsql": run_recsql, "ranx-student": lambda a, r, t: run_ranx(a, r, t, "student"),
         "ranx-fisher": lambda a, r, t: run_ranx(a, r, t, "fisher")}


def child(args) -> None:
    recs, truth = data(args.users, args.runs)
    out = TOOLS[args.child](args, recs, truth)
    out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--child", choices=sorted(TOOLS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    load_before = os.getloadavg()
    results = {}
    for tool in args.tools.split(","):
        command = [sys.executable, __file__, "--child", tool, "--users", str(args.users), "--runs", str(args.runs),
                   "--resamples", str(args.resamples)]
        done, sampled = sampled_run(command)
        if done.returncode:
            sys.exit(f"{tool} failed:\n{done.stderr}")
        results[tool] = json.loads(done.stdout.strip().splitlines()[-1])
        results[tool]["peak_rss_mb"] = max(results[tool]["peak_rss_mb"], sampled)
    load_after = os.getloadavg()
    title = f"{args.users:,} users x {args.runs} runs x {len(METRICS)} metrics, {args.resamples:,} resamples"
    lines = [title, f"{'tool':<14} {'seconds':>9} {'peak MB':>9}"]
    lines += [f"{tool:<14} {out['seconds']:>9.2f} {out['peak_rss_mb']:>9.0f}" for tool, out in results.items()]
    gaps = []
    if "recsql" in results and "ranx-student" in results:
        ours, theirs = results["recsql"]["p_t"], results["ranx-student"]["p_t"]
        gaps = [abs(ours[k] - theirs[k]) for k in ours if k in theirs]
        lines.append(f"paired t p-values compared: {len(gaps)}, largest difference {max(gaps):.2e}")
    print("\n".join(lines))
    write_results(args, results, gaps, load_before, load_after)
    if gaps and max(gaps) > 1e-8 or ("recsql" in results and "ranx-student" in results and not gaps):
        sys.exit("recsql's and ranx's paired t p-values differ")


def sampled_run(command: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``command``; its output and the peak RSS (MB) of its process tree, sampled every 0.1 s with psutil."""
    import psutil
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watched, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        try:
            rss = watched.memory_info().rss + sum(c.memory_info().rss for c in watched.children(recursive=True))
            peak = max(peak, rss)
        except psutil.Error:  # the process ended between poll and sample
            pass
        time.sleep(0.1)
    out, err = process.communicate()
    return subprocess.CompletedProcess(command, process.returncode, out, err), peak / 2**20


def write_results(args, results: dict, gaps: list[float], load_before, load_after) -> None:
    """benchmarks/results/compare.json and compare.md: the figures, the command, the machine and its load."""
    import importlib.metadata as metadata
    versions = {}
    for package in ("recsql-eval", "duckdb", "ranx", "numba", "numpy", "pandas", "scipy", "psutil"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    record = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "command": "python benchmarks/compare.py " + " ".join(sys.argv[1:]),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                          "load_average_before": [round(v, 2) for v in load_before],
                          "load_average_after": [round(v, 2) for v in load_after]},
              "packages": versions, "users": args.users, "runs": args.runs, "metrics": METRICS,
              "resamples": args.resamples,
              "tools": {tool: {"seconds": round(out["seconds"], 3), "peak_rss_mb": round(out["peak_rss_mb"], 1)}
                        for tool, out in results.items()},
              "p_t_compared": len(gaps), "p_t_largest_difference": max(gaps) if gaps else None}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compare.json").write_text(json.dumps(record, indent=2) + "\n")
    rows = "\n".join(f"| {tool} | {out['seconds']:.2f} | {out['peak_rss_mb']:.0f} |" for tool, out in results.items())
    (RESULTS / "compare.md").write_text(
        f"# recsql.compare vs ranx compare\n\n- **Date**: {record['date']} — command: `{record['command']}`\n"
        f"- **Machine**: {record['machine']['cpus']} logical CPUs, {record['machine']['platform']}, Python "
        f"{record['machine']['python']}; load average before {' '.join(map(str, record['machine']['load_average_before']))}, "
        f"after {' '.join(map(str, record['machine']['load_average_after']))} (other work shared the machine)\n"
        f"- **Packages**: {', '.join(f'{k} {v}' for k, v in versions.items())}\n"
        f"- **Data**: {args.users:,} users x {args.runs} runs (20 of 1,000 items per list, random scores; 5 truth "
        f"items per user); metrics {', '.join(METRICS)}; {args.resamples:,} resamples\n"
        f"- **recsql**: every pair of runs, paired t + Wilcoxon + randomization (sign flips) + bootstrap intervals of "
        f"each run and each difference, Holm; **ranx-student**: paired t on every pair; **ranx-fisher**: "
        f"randomization test with {args.resamples:,} permutations\n\n"
        f"| tool | seconds | peak RSS MB |\n|---|---:|---:|\n{rows}\n\n"
        + (f"Paired t p-values compared with ranx's: {len(gaps)}, largest difference {max(gaps):.2e}.\n" if gaps else ""))


if __name__ == "__main__":
    main()
