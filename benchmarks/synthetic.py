"""Synthetic recommendations and truth, as Parquet, for the sample data in fixtures/data/ and the
benchmarks: U users x L recommendations per run, graded truth that overlaps the lists, tied
scores, users missing from the recommendations, and users with recommendations but no truth.

    python benchmarks/synthetic.py --users 300 --per-user 20 --out fixtures/data
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd


def generate(users: int, per_user: int, items: int, runs: tuple[str, ...], seed: int = 7) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    popularity = rng.zipf(1.3, size=items).astype(float)
    popularity /= popularity.sum()
    recs = []
    for run_index, run in enumerate(runs):
        listed = rng.random(users) > 0.05  # about 5% of users get no recommendations in each run
        for user in np.flatnonzero(listed):
            chosen = rng.choice(items, size=per_user, replace=False, p=popularity if run_index == 0 else None)
            score = np.round(rng.random(per_user), 2)  # two decimals: some scores tie
            recs.append(pd.DataFrame({"model": run, "user_id": user + 1, "item_id": chosen + 1, "score": score}))
    recs_df = pd.concat(recs, ignore_index=True)
    truth = []
    for user in range(users - users // 50):  # the last 2% of users have no truth at all
        n = int(rng.integers(1, 12))
        chosen = rng.choice(items, size=n, replace=False, p=popularity)
        truth.append(pd.DataFrame({"user_id": user + 1, "item_id": chosen + 1,
                                   "relevance": rng.choice([0, 1, 2, 3, 4, 5], size=n, p=[.15, .3, .2, .15, .1, .1])}))
    truth_df = pd.concat(truth, ignore_index=True)
    items_df = pd.DataFrame({"item_id": np.arange(1, items + 1),
                             "price": np.round(rng.lognormal(3, 1, items), 2),
                             "category": rng.choice(["books", "music", "films", "games"], size=items)})
    return {"recs": recs_df, "truth": truth_df, "items": items_df}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=300)
    parser.add_argument("--per-user", type=int, default=20)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--runs", default="popular,personal")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("fixtures/data"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    frames = generate(args.users, args.per_user, args.items, tuple(args.runs.split(",")), args.seed)
    for name, frame in frames.items():
        frame.to_parquet(args.out / f"{name}.parquet", index=False)
        print(f"{args.out / name}.parquet: {len(frame)} rows")


if __name__ == "__main__":
    main()
