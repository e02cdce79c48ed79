"""``recsql.compare`` with the global metrics at MovieLens-100K scale: coverage, Gini and personalization.

    python benchmarks/compare_global.py                  # 908 users x 4 runs x 1,000 resamples, top 10
    python benchmarks/compare_global.py --resamples 100 --repeat 3

Synthetic data the size of MovieLens-100K's test users (made in memory, seed 0): 908 users, 1,682 items,
four runs of 20 scored items per user (two drawn uniformly, two from a Zipf popularity), so coverage,
Gini and personalization differ between runs. ``recsql.compare(..., ["coverage@10", "gini@10",
"personalization@10"], run_cols="model")`` on DuckDB: every pair of runs, bootstrap intervals and the
randomization test (each user's lists swapped), ``--resamples`` resamples. Each repeat is timed in this
one process (data generation excluded): the first call composes the statement, the others find it in
recsql's statement cache. Wall and CPU time (all threads) of each call, the load average before and
after (the machine may be shared), the date and the commit are written to
``benchmarks/results/compare_global.md`` and ``compare_global.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
METRICS = ["coverage@10", "gini@10", "personalization@10"]


def data(users: int = 908, runs: int = 4, items: int = 1682, per_list: int = 20, seed: int = 0):
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    popularity = rng.zipf(1.3, items).astype(float)
    skewed = popularity / popularity.sum()
    frames = []
    for r in range(runs):
        chosen = np.concatenate([rng.choice(items, per_list, replace=False, p=skewed if r % 2 else None)
                                 for _ in range(users)])
        frames.append(pd.DataFrame({"model": f"run{r}", "user_id": np.repeat(np.arange(users), per_list),
                                    "item_id": chosen, "score": rng.random(users * per_list)}))
    recs = pd.concat(frames, ignore_index=True)
    truth = pd.DataFrame({"user_id": np.repeat(np.arange(users), 5),
                          "item_id": np.concatenate([rng.choice(items, 5, replace=False) for _ in range(users)])})
    return recs, truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2, help="calls in this process (the first composes)")
    args = parser.parse_args()
    import recsql
    recs, truth = data()
    load_before = os.getloadavg()
    calls = []
    for _ in range(args.repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = recsql.compare(recs, truth, METRICS, run_cols="model", resamples=args.resamples)
        calls.append({"wall": round(time.perf_counter() - wall, 3), "cpu": round(time.process_time() - cpu, 3)})
    load_after = os.getloadavg()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent).stdout.strip()
    record = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
              "command": f"python benchmarks/compare_global.py --resamples {args.resamples} --repeat {args.repeat}",
              "cpus": os.cpu_count(), "load_average_before": [round(v, 2) for v in load_before],
              "load_average_after": [round(v, 2) for v in load_after], "metrics": METRICS,
              "resamples": args.resamples, "calls": calls, "pairs": len(result.tests)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "compare_global.json").write_text(json.dumps(record, indent=2) + "\n")
    rows = "\n".join(f"| {i + 1} | {c['wall']:.2f} | {c['cpu']:.2f} |" for i, c in enumerate(calls))
    (RESULTS / "compare_global.md").write_text(
        f"# recsql.compare with global metrics, MovieLens-100K scale\n\n- **Date**: {record['date']}, commit "
        f"{commit}; command: `{record['command']}`\n- **Machine**: {record['cpus']} logical CPUs; load average "
        f"before {' '.join(map(str, record['load_average_before']))}, after "
        f"{' '.join(map(str, record['load_average_after']))}\n- **Data**: 908 users x 4 runs, top 10 of 20 scored "
        f"items from 1,682; {', '.join(METRICS)}; {args.resamples:,} resamples\n\n| call | wall s | CPU s |\n"
        f"|---:|---:|---:|\n{rows}\n")
    print((RESULTS / "compare_global.md").read_text())


if __name__ == "__main__":
    main()
