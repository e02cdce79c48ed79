"""Where DuckDB spends the six-metric query's time: the query alone against the floor, warm, and their
JSON profiles, operator by operator (docs/performance.md, reasons 1 and 2).

    python benchmarks/duckdb_profile.py --rows 10M
    python benchmarks/duckdb_profile.py --rows 1M --repeat 15

The query is the one ``recsql.evaluate`` runs on the benchmark's files (``result.sql``), the floor
``run.py``'s, in one in-memory DuckDB with the benchmark's settings (``--duckdb-memory-limit``, default
4GB; insertion order not preserved). Each runs once untimed; then both run ``--repeat`` times,
interleaved, timed (the median is reported: the query alone, without recsql's Python around it); then
once each profiled. Writes
``profile_<rows>.md`` to ``--out`` (default ``benchmarks/results``): each plan as an indented tree of
operators with their CPU seconds (the CTE or function where DuckDB names one), and the totals.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import tools  # noqa: E402
from run import machine_info  # noqa: E402

FLOOR = ("SELECT count(*), sum(len(top)) FROM (SELECT user_id, min_by(item_id, (-score, item_id), 10) AS top "
         "FROM read_parquet('{recs}') GROUP BY user_id)")


def _profile(con, sql: str) -> dict:
    """DuckDB's JSON profile of one run of ``sql`` (warmed by :func:`_medians` before)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "profile.json"
        con.execute("PRAGMA enable_profiling = 'json'")
        con.execute(f"PRAGMA profiling_output = '{path}'")
        con.execute(sql).fetchall()
        con.execute("PRAGMA disable_profiling")
        return json.loads(path.read_text())


def _medians(con, queries: list[str], repeat: int) -> list[float]:
    """The median wall seconds of each query, run ``repeat`` times, interleaved, after one untimed run."""
    times: list[list[float]] = [[] for _ in queries]
    for sql in queries:
        con.execute(sql).fetchall()
    for _ in range(repeat):
        for i, sql in enumerate(queries):
            start = time.perf_counter()
            con.execute(sql).fetchall()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _tree(node: dict, depth: int = 0) -> list[str]:
    extra = node.get("extra_info") or {}
    name = extra.get("CTE Name") or extra.get("Function") or ""
    line = f"{'  ' * depth}{node['name']}{f' ({name})' if name else ''}: {node['timing']:.3f} s"
    return [line] + [x for child in node.get("children", []) for x in _tree(child, depth + 1)]


def _total(node: dict) -> float:
    return node["timing"] + sum(_total(c) for c in node.get("children", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10M")
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--duckdb-memory-limit", default="4GB")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs of each query (median reported)")
    args = parser.parse_args()
    rows = datagen.parse_rows(args.rows)
    datagen.generate(rows, args.data)
    recs, truth = datagen.paths(rows, args.data)
    recsql = tools._import_recsql()
    con = tools._duckdb(args)
    query = recsql.evaluate(str(recs), str(truth), tools.METRICS_TREC, con=con).sql
    label = datagen.label_rows(rows)
    machine = machine_info()
    lines = [f"# DuckDB's profile of the six-metric query at {label} rows", "",
             f"- **Date**: {machine['date']}; recsql commit `{machine['recsql_commit']}`; DuckDB "
             f"{machine['packages']['duckdb']}; {machine['cpu']}, {machine['usable_cpus']} usable CPUs",
             f"- **Command**: `python benchmarks/duckdb_profile.py {' '.join(sys.argv[1:])}`",
             "- Operator CPU seconds as DuckDB's profiler reports them (summed over threads).", ""]
    plans = (("recsql's query", query), ("the floor", FLOOR.format(recs=recs)))
    medians = _medians(con, [sql for _, sql in plans], args.repeat)
    lines += [f"Warm wall time, median of {args.repeat} interleaved runs: recsql's query {medians[0]:.3f} s, "
              f"the floor {medians[1]:.3f} s ({medians[0] / medians[1]:.2f}×).", ""]
    for title, sql in plans:
        profile = _profile(con, sql)
        operators = profile["operator"]
        cpu = sum(_total(op) for op in operators)
        lines += [f"## {title}: {cpu:.2f} s of operator CPU", "", "```", *(x for op in operators for x in _tree(op)), "```", ""]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"profile_{label}.md"
    path.write_text("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
