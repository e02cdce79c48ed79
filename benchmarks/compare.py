"""Benchmark recsql.compare against ranx's compare on the same data: time and peak memory.

    python benchmarks/compare.py --users 100000 --runs 3 --resamples 1000 [--tools recsql,ranx-student,ranx-fisher]

Synthetic data (made in memory, the same seed for every tool): each run recommends 20 of 1,000 items
to every user with random scores; truth holds 5 items per user. The six metrics are ndcg@10, map@10,
mrr@10, recall@10, precision@10 and hit_rate@10. Every tool runs in its own process, one after the
other; each reports its wall time (from the DataFrames to the result table, data generation
excluded) and its process's peak RSS (VmHWM).

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
import subprocess
import sys
import time
from pathlib import Path

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
    results = {}
    for tool in args.tools.split(","):
        done = subprocess.run([sys.executable, __file__, "--child", tool, "--users", str(args.users), "--runs",
                               str(args.runs), "--resamples", str(args.resamples)], capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{tool} failed:\n{done.stderr}")
        results[tool] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{args.users:,} users x {args.runs} runs x {len(METRICS)} metrics, {args.resamples:,} resamples")
    print(f"{'tool':<14} {'seconds':>9} {'peak MB':>9}")
    for tool, out in results.items():
        print(f"{tool:<14} {out['seconds']:>9.2f} {out['peak_rss_mb']:>9.0f}")
    if "recsql" in results and "ranx-student" in results:
        ours, theirs = results["recsql"]["p_t"], results["ranx-student"]["p_t"]
        gaps = [abs(ours[k] - theirs[k]) for k in ours if k in theirs]
        print(f"paired t p-values compared: {len(gaps)}, largest difference {max(gaps):.2e}")
        if not gaps or max(gaps) > 1e-8:
            sys.exit("recsql's and ranx's paired t p-values differ")


if __name__ == "__main__":
    main()
