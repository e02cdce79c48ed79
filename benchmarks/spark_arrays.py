"""What computing the metrics from per-user arrays would gain on Spark: a measurement, not a stage.

    python benchmarks/spark_arrays.py --rows 1M,10M --calls 5

recsql's six metrics of ``run.py`` (``tools.METRICS_TREC``) written by hand as one Spark SQL statement in
the form MLlib's ``RankingMetrics`` uses: each user's top 10 by (score desc, item id) as an array, after
one window, truth collected once per user into a map (item -> relevance) and its sorted gains, and each
metric an expression over those arrays (``aggregate``, ``transform``). It is timed call after call in one
SparkSession against ``recsql.evaluate(..., con=spark)``, recsql's own statement without its input
checks (``to_sql(..., dialect="spark")``; evaluate's query also counts invalid and duplicate rows) and MLlib (``tools.recsql_on_spark``,
``tools.mllib_metrics``), the four alternating, from the Parquet files to the metrics. Before the
timing, its per-user values are compared with recsql's per-user rows on the same data (the largest
difference is printed and written; a difference above 1e-9 stops the run).

This is not how recsql computes on Spark: a metric is one SQL file over ranked rows, shared by every
engine; this form would be a second definition of each metric for one engine. The script says what
that second definition would buy. Writes ``spark_arrays.json`` and ``spark_arrays.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import tools  # noqa: E402
from run import machine_info  # noqa: E402

K = 10
# hit_i = relevance of the i-th item >= 1; gain = relevance (linear), discount log2(i + 1) (transform's i is 0-based);
# the ideal DCG from the user's 10 largest truth relevances; MAP's denominator the relevant count (R)
ARRAYS_SQL = f"""
WITH top AS (
  SELECT user_id, transform(sort_array(collect_list(struct(pos, item_id))), x -> x.item_id) AS items
  FROM (SELECT user_id, item_id,
               row_number() OVER (PARTITION BY user_id ORDER BY score DESC, item_id ASC) AS pos
        FROM recs) WHERE pos <= {K}
  GROUP BY user_id
), judged AS (
  SELECT user_id, map_from_entries(collect_list(struct(item_id, CAST(relevance AS DOUBLE)))) AS rel,
         slice(sort_array(collect_list(CAST(relevance AS DOUBLE)), false), 1, {K}) AS ideal,
         count_if(relevance >= 1) AS n_rel
  FROM truth GROUP BY user_id
), gains AS (
  SELECT j.user_id, j.n_rel, j.ideal,
         transform(coalesce(t.items, CAST(array() AS ARRAY<BIGINT>)), x -> coalesce(j.rel[x], 0D)) AS g
  FROM judged j LEFT JOIN top t ON j.user_id = t.user_id
  WHERE j.n_rel > 0
), per_user AS (
  SELECT user_id, n_rel,
         size(filter(g, x -> x >= 1)) AS hits,
         aggregate(transform(g, (x, i) -> x / log2(i + 2)), 0D, (a, x) -> a + x) AS dcg,
         aggregate(transform(ideal, (x, i) -> x / log2(i + 2)), 0D, (a, x) -> a + x) AS idcg,
         aggregate(transform(g, (x, i) -> named_struct('hit', x >= 1, 'i', i + 1)),
                   named_struct('h', 0, 's', 0D),
                   (a, p) -> named_struct('h', a.h + CAST(p.hit AS INT),
                                          's', a.s + CASE WHEN p.hit THEN (a.h + 1) / p.i ELSE 0D END)).s AS ap_sum,
         array_position(transform(g, x -> x >= 1), true) AS first_hit
  FROM gains
)
SELECT user_id,
       CASE WHEN idcg > 0 THEN dcg / idcg ELSE 0D END AS `ndcg@10`,
       ap_sum / n_rel AS `map(denominator=relevant)@10`,
       CASE WHEN first_hit > 0 THEN 1D / first_hit ELSE 0D END AS `mrr@10`,
       hits / CAST(n_rel AS DOUBLE) AS `recall@10`,
       hits / {K}D AS `precision@10`,
       CASE WHEN hits > 0 THEN 1D ELSE 0D END AS `hit_rate@10`
FROM per_user
"""


def _views(spark, recs_path, truth_path) -> float:
    """Register the two Parquet files as the views ``recs`` and ``truth``; the seconds it took (the
    build, as ``tools.recsql_on_spark`` counts reading the files)."""
    t0 = tools._now()
    spark.read.parquet(str(recs_path)).createOrReplaceTempView("recs")
    spark.read.parquet(str(truth_path)).createOrReplaceTempView("truth")
    return tools._now() - t0


def arrays_on_spark(spark, recs_path, truth_path):
    """The hand-written array statement's means over its users: (the means, build s, evaluate s)."""
    build_s = _views(spark, recs_path, truth_path)
    t0 = tools._now()
    means = spark.sql(ARRAYS_SQL).selectExpr(
        "count(*) AS n_users", *[f"avg(`{m}`) AS `{m}`" for m in tools.METRICS_TREC]).collect()[0].asDict()
    return means, build_s, tools._now() - t0


def unchecked_on_spark(spark, recsql, recs_path, truth_path):
    """recsql's own summary statement for Spark (``to_sql(..., dialect="spark")``: the same stage and
    metrics as ``evaluate``, without its input checks), collected: (rows, build s, evaluate s)."""
    build_s = _views(spark, recs_path, truth_path)
    t0 = tools._now()
    rows = spark.sql(recsql.to_sql("recs", "truth", tools.METRICS_TREC, dialect="spark")).collect()
    return rows, build_s, tools._now() - t0


def _check(spark, recs_path, truth_path) -> float:
    """The largest per-user difference between the array statement and recsql, on Spark."""
    recsql = tools._import_recsql()
    _views(spark, recs_path, truth_path)
    mine = spark.sql(ARRAYS_SQL).toPandas().set_index("user_id").sort_index()
    theirs = (recsql.evaluate(spark.table("recs"), spark.table("truth"), tools.METRICS_TREC, con=spark)
              .per_user.set_index("user_id").sort_index())
    if list(mine.index) != list(theirs.index):
        raise SystemExit(f"the array statement has {len(mine)} users, recsql {len(theirs)}")
    return max(float((mine[m] - theirs[m]).abs().max()) for m in tools.METRICS_TREC)


def _worker(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recs", type=Path)
    parser.add_argument("truth", type=Path)
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--spark-cores", default="*")
    parser.add_argument("--spark-driver-memory", default="6g")
    parser.add_argument("--spark-shuffle-partitions", type=int, default=8)
    args = parser.parse_args(argv)
    spark = tools._spark(args)
    try:
        diff = _check(spark, args.recs, args.truth)
        if diff > 1e-9:
            raise SystemExit(f"the array statement differs from recsql by {diff:.3g}")
        recsql = tools._import_recsql()
        walls: dict[str, list[float]] = {"recsql": [], "unchecked": [], "arrays": [], "mllib": []}
        for _ in range(args.calls):
            _, b, e = tools.recsql_on_spark(spark, recsql, args.recs, args.truth)
            walls["recsql"].append(b + e)
            _, b, e = unchecked_on_spark(spark, recsql, args.recs, args.truth)
            walls["unchecked"].append(b + e)
            _, b, e = arrays_on_spark(spark, args.recs, args.truth)
            walls["arrays"].append(b + e)
            _, _, b, e = tools.mllib_metrics(spark, args.recs, args.truth)
            walls["mllib"].append(b + e)
        args.result.write_text(json.dumps({"largest_difference": diff, "calls": walls}))
    finally:
        spark.stop()


LABELS = {"recsql": "recsql.evaluate on Spark",
          "unchecked": "recsql's statement without its input checks (to_sql, dialect spark)", "arrays": "the metrics from per-user arrays (this script)",
          "mllib": "Spark MLlib RankingMetrics"}


def _markdown(report: dict) -> str:
    m = report["machine"]
    lines = ["# The metrics from per-user arrays on Spark: what they would gain", "",
             f"- **Date**: {report['date']}; recsql commit `{report['commit']}`; command: `{report['command']}`",
             f"- **Machine**: {m['cpu']}, {m['usable_cpus']} usable CPUs, {m['ram_gb']} GB RAM; Python {m['python']}; "
             f"{m['java']}; pyspark {m['packages']['pyspark']}",
             f"- **Settings**: {report['settings']}", "",
             "Each call: from the Parquet files to the metrics, the four alternating in one SparkSession; "
             "the warm median leaves out the first call. MLlib ÷ tool above 1 means the tool is faster than MLlib.", "",
             "| rows | tool | calls (s) | warm median | MLlib ÷ tool (warm) | largest difference from recsql |",
             "|---:|---|---|---:|---:|---:|"]
    for size in report["sizes"]:
        warm = {t: statistics.median(w[1:] or w) for t, w in size["calls"].items()}
        for tool, walls in size["calls"].items():
            diff = {"recsql": "—", "unchecked": "the same statement", "mllib": "other definitions (binary NDCG)",
                    "arrays": f"{size['largest_difference']:.1e}"}[tool]
            lines.append(f"| {size['label']} | {LABELS[tool]} | " + ", ".join(f"{w:.2f}" for w in walls)
                         + f" | {warm[tool]:.2f} s | {warm['mllib'] / warm[tool]:.2f} | {diff} |")
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
    work = args.data / "work" / "spark_arrays"
    work.mkdir(parents=True, exist_ok=True)
    sizes = []
    for rows in (datagen.parse_rows(t) for t in args.rows.split(",")):
        datagen.generate(rows, args.data)
        recs, truth = datagen.paths(rows, args.data)
        label = datagen.label_rows(rows)
        result = work / f"{label}.json"
        print(f"[{label}] {args.calls} calls of each ...", flush=True)
        subprocess.run([sys.executable, __file__, "--worker", str(recs), str(truth), "--calls", str(args.calls),
                        "--result", str(result), "--spark-driver-memory", args.spark_driver_memory,
                        "--spark-shuffle-partitions", str(args.spark_shuffle_partitions)], check=True)
        size = {"rows": rows, "label": label, **json.loads(result.read_text())}
        for tool, walls in size["calls"].items():
            print(f"[{label}] {tool}: " + ", ".join(f"{w:.2f}" for w in walls) + " s", flush=True)
        sizes.append(size)
    machine = machine_info()
    report = {"date": machine["date"], "commit": machine["recsql_commit"], "machine": machine,
              "command": "python benchmarks/spark_arrays.py " + " ".join(sys.argv[1:]), "n_calls": args.calls,
              "settings": f"Spark local[*], driver memory {args.spark_driver_memory}, "
                          f"{args.spark_shuffle_partitions} shuffle partitions", "sizes": sizes}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spark_arrays.json").write_text(json.dumps(report, indent=1))
    (args.out / "spark_arrays.md").write_text(_markdown(report))
    print(f"wrote {args.out / 'spark_arrays.md'}")


if __name__ == "__main__":
    main()
