"""recsql on Spark and Spark MLlib ``RankingMetrics``, call after call in one SparkSession per tool:
what a first call costs against the warm ones, and what each costs per million rows once warm.

    python benchmarks/spark_calls.py --rows 1M,10M --calls 5

The same data (``datagen.py``, cached in ``benchmarks/data/``), the same work per call as ``run.py``'s
Spark rows (``tools.recsql_on_spark``, ``tools.mllib_metrics``: from the Parquet files to the metrics),
the same session settings (``tools._spark``). Each tool and size runs in a process of its own, the tools
one after the other. Writes ``spark_calls.json`` and ``spark_calls.md`` to ``--out`` (default
``benchmarks/results``): every call's wall time, and the warm cost per million rows, from the last calls
of the smallest and the largest size.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import tools  # noqa: E402
from run import machine_info  # noqa: E402

LABELS = {"recsql": "recsql on Spark", "mllib": "Spark MLlib RankingMetrics"}


def _calls(tool: str, recs: Path, truth: Path, calls: int, args) -> list[float]:
    """``calls`` timed calls of ``tool`` in this process's SparkSession."""
    spark = tools._spark(args)
    try:
        recsql = tools._import_recsql() if tool == "recsql" else None
        walls = []
        for _ in range(calls):
            if recsql is not None:
                _, build_s, evaluate_s = tools.recsql_on_spark(spark, recsql, recs, truth)
            else:
                _, _, build_s, evaluate_s = tools.mllib_metrics(spark, recs, truth)
            walls.append(build_s + evaluate_s)
        return walls
    finally:
        spark.stop()


def _worker(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tool", choices=sorted(LABELS))
    parser.add_argument("recs", type=Path)
    parser.add_argument("truth", type=Path)
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--spark-cores", default="*")
    parser.add_argument("--spark-driver-memory", default="6g")
    parser.add_argument("--spark-shuffle-partitions", type=int, default=8)
    args = parser.parse_args(argv)
    args.result.write_text(json.dumps(_calls(args.tool, args.recs, args.truth, args.calls, args)))


def _per_million(sizes: list[dict], tool: str) -> float | None:
    """Warm seconds per million rows: the slope between the smallest and largest size's last call."""
    if len(sizes) < 2:
        return None
    low, high = sizes[0], sizes[-1]
    return (high["calls"][tool][-1] - low["calls"][tool][-1]) / ((high["rows"] - low["rows"]) / 1e6)


def _markdown(report: dict) -> str:
    m = report["machine"]
    lines = ["# recsql on Spark and Spark MLlib, call after call", "",
             f"- **Date**: {report['date']}; recsql commit `{report['commit']}`; command: `{report['command']}`",
             f"- **Machine**: {m['cpu']}, {m['usable_cpus']} usable CPUs, {m['ram_gb']} GB RAM; Python {m['python']}; "
             f"{m['java']}; pyspark {m['packages']['pyspark']}",
             f"- **Settings**: {report['settings']}", "",
             "Each call: from the Parquet files to the metrics (build + evaluate), in one SparkSession per tool.", "",
             "| rows | tool | " + " | ".join(f"call {i + 1}" for i in range(report["n_calls"])) + " |",
             "|---:|---|" + "---:|" * report["n_calls"]]
    for size in report["sizes"]:
        for tool, walls in size["calls"].items():
            lines.append(f"| {size['label']} | {LABELS[tool]} | " + " | ".join(f"{w:.2f} s" for w in walls) + " |")
    for tool in LABELS:
        slope = _per_million(report["sizes"], tool)
        if slope is not None:
            lines.append(f"\n- {LABELS[tool]}, warm (last call): {slope:.2f} s per million rows")
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return _worker(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1M,10M")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--spark-driver-memory", default="6g")
    parser.add_argument("--spark-shuffle-partitions", type=int, default=8)
    args = parser.parse_args()
    work = args.data / "work" / "spark_calls"
    work.mkdir(parents=True, exist_ok=True)
    sizes = []
    for rows in (datagen.parse_rows(t) for t in args.rows.split(",")):
        datagen.generate(rows, args.data)
        recs, truth = datagen.paths(rows, args.data)
        label = datagen.label_rows(rows)
        size = {"rows": rows, "label": label, "calls": {}}
        for tool in LABELS:
            result = work / f"{label}-{tool}.json"
            print(f"[{label}] {tool}: {args.calls} calls ...", flush=True)
            subprocess.run([sys.executable, __file__, "--worker", tool, str(recs), str(truth), "--calls", str(args.calls), "--result", str(result),
                            "--spark-driver-memory", args.spark_driver_memory,
                            "--spark-shuffle-partitions", str(args.spark_shuffle_partitions)], check=True)
            size["calls"][tool] = json.loads(result.read_text())
            print(f"[{label}] {tool}: " + ", ".join(f"{w:.2f}" for w in size["calls"][tool]) + " s", flush=True)
        sizes.append(size)
    machine = machine_info()
    report = {"date": machine["date"], "commit": machine["recsql_commit"], "machine": machine,
              "command": "python benchmarks/spark_calls.py " + " ".join(sys.argv[1:]), "n_calls": args.calls,
              "settings": f"Spark local[*], driver memory {args.spark_driver_memory}, "
                          f"{args.spark_shuffle_partitions} shuffle partitions", "sizes": sizes}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spark_calls.json").write_text(json.dumps(report, indent=1))
    (args.out / "spark_calls.md").write_text(_markdown(report))
    print(f"wrote {args.out / 'spark_calls.md'}")


if __name__ == "__main__":
    main()
