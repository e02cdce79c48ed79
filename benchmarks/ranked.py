"""``evaluate`` with a rank column (lists already ranked) against a plain scan of recs and truth.

    python benchmarks/ranked.py                      # 1M and 10M rows, 7 interleaved repeats
    python benchmarks/ranked.py --rows 10M --repeat 9

The data are benchmarks/datagen.py's (the same files as ``run.py``), with each user's 100 recommendations
ranked 1..100 by score (ties by item id) and written once as ``recs_ranked.parquet`` beside them
(user_id, item_id, rank, rows in rank order). In one DuckDB process, interleaved, each a new in-memory
connection with ``preserve_insertion_order = false`` (as recsql's own):

- **recsql, rank column**: ``recsql.evaluate("recs_ranked.parquet", "truth.parquet", six metrics @10,
  rank_col="rank")``, the result frames included;
- **plain scan**: one query that reads every column recsql reads from both files (``SUM`` of each), the
  issue's yardstick for a rank column (target: recsql ≤ 2× it);
- **top-k floor, ranked**: each user's top 10 by (rank, item id) from the heap recsql uses
  (``min_by(item_id, (rank, item_id), 10)``), counted;
- **recsql on lists cut at 10**: the same call over a view of the rows with rank ≤ 10, which needs no
  top-k selection: what recsql costs once ranking is taken away;
- **judging floor**: the cheapest query that still judges each top 10 against truth, trusting the ranks
  (``rank <= 10`` joined to truth, hits counted per user): no input check, no metric.

Medians of ``--repeat`` calls (one untimed call each first). Results: ``benchmarks/results/ranked.md``
and ``ranked.json`` (date, commit, machine, load average, versions).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import datagen  # noqa: E402
from report import commit, provenance, publish  # noqa: E402
from tools import METRICS_TREC  # noqa: E402


def ranked(folder: Path) -> Path:
    """``recs_ranked.parquet`` beside the generated recs: each user's rows ranked 1..n by score, ties by item."""
    import duckdb
    out = folder / "recs_ranked.parquet"
    if not out.exists() or out.stat().st_mtime < (folder / "recs.parquet").stat().st_mtime:
        partial = folder / "recs_ranked.parquet.partial"
        duckdb.connect().execute(
            "COPY (SELECT user_id, item_id, CAST(ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY score DESC, item_id) "
            "AS INTEGER) AS rank FROM read_parquet(?) ORDER BY user_id, rank) TO '" + str(partial).replace("'", "''")
            + "' (FORMAT parquet)", [str(folder / "recs.parquet")])
        partial.rename(out)
    return out


def cases(recs: Path, truth: Path) -> dict:
    import duckdb
    import recsql

    def con():
        c = duckdb.connect()
        c.execute("SET preserve_insertion_order = false")
        return c

    def with_rank():
        recsql.evaluate(str(recs), str(truth), METRICS_TREC, rank_col="rank", con=con()).summary

    def scan():
        con().execute("SELECT (SELECT SUM(user_id) + SUM(item_id) + SUM(rank) FROM read_parquet(?)), "
                      "(SELECT SUM(user_id) + SUM(item_id) + SUM(relevance) FROM read_parquet(?))",
                      [str(recs), str(truth)]).fetchall()

    def floor():
        con().execute("SELECT COUNT(*), SUM(len(top)) FROM (SELECT user_id, min_by(item_id, (rank, item_id), 10) AS top "
                      "FROM read_parquet(?) GROUP BY user_id)", [str(recs)]).fetchall()

    def cut():
        c = con()
        c.execute(f"CREATE VIEW cut AS SELECT * FROM read_parquet('{recs}') WHERE rank <= 10")
        recsql.evaluate("cut", str(truth), METRICS_TREC, rank_col="rank", con=c).summary

    def judged():
        con().execute("SELECT COUNT(*), SUM(hits) FROM (SELECT r.user_id, COUNT(t.item_id) AS hits "
                      "FROM (SELECT user_id, item_id FROM read_parquet(?) WHERE rank <= 10) AS r "
                      "LEFT JOIN (SELECT user_id, item_id FROM read_parquet(?) WHERE relevance >= 1) AS t "
                      "ON r.user_id = t.user_id AND r.item_id = t.item_id GROUP BY r.user_id)",
                      [str(recs), str(truth)]).fetchall()

    return {"recsql, rank column": with_rank, "plain scan of recs and truth": scan, "top-k floor, ranked": floor,
            "recsql on lists cut at 10": cut, "judging floor": judged}


def measure(size: str, data: Path, repeat: int) -> dict:
    scored, truth = datagen.paths(datagen.parse_rows(size), data)
    datagen.generate(datagen.parse_rows(size), data, verbose=False)
    recs = ranked(scored.parent)
    calls = cases(recs, truth)
    for call in calls.values():
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(round(time.perf_counter() - started, 4))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    scan = medians["plain scan of recs and truth"]
    return {"rows": size, "medians": medians, "times": times,
            "ratio_to_scan": {name: round(m / scan, 2) for name, m in medians.items()}}


def markdown(result: dict) -> str:
    blocks = []
    for size in result["sizes"]:
        rows = "\n".join(f"| {name} | {size['medians'][name]:.3f} s | {size['ratio_to_scan'][name]:.2f}× |"
                         for name in size["medians"])
        blocks.append(f"### {size['rows']} rows\n\n| case | median | ÷ plain scan |\n|---|---:|---:|\n{rows}\n")
    return f"""# `evaluate` with a rank column, against a plain scan of recs and truth

- **Date**: {result['date']}; recsql commit `{result['commit']}`
- **Machine**: {result['machine']}
- **Load average** (1, 5, 15 min) before {tuple(result['load_before'])}, after {tuple(result['load_after'])}
- **Versions**: {', '.join(f'{k} {v}' for k, v in result['versions'].items())}
- Six metrics @10 ({', '.join(METRICS_TREC)}); medians of {result['repeat']} interleaved calls in one process
  (the cases: benchmarks/ranked.py's docstring).

{chr(10).join(blocks)}
Made by `python benchmarks/ranked.py` (benchmarks/README.md).
"""


def main(argv: list[str] | None = None) -> int:
    import duckdb
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1M,10M", help="comma-separated sizes (default 1M,10M)")
    parser.add_argument("--repeat", type=int, default=7, help="timed calls per case (interleaved)")
    parser.add_argument("--data", type=Path, default=HERE / "data", help="data cache (default benchmarks/data)")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="the folder of ranked.md and .json")
    args = parser.parse_args(argv)
    load_before, measured = os.getloadavg(), commit()
    sizes = [measure(size, args.data, args.repeat) for size in args.rows.split(",")]
    result = {**provenance(measured, load_before, {"python": platform.python_version(), "duckdb": duckdb.__version__}),
              "repeat": args.repeat, "sizes": sizes}
    return publish(args.out, "ranked", result, markdown(result))


if __name__ == "__main__":
    sys.exit(main())
