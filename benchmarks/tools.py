"""One benchmarked tool, run in its own process by benchmarks/run.py (so its peak memory is its own):

    python benchmarks/tools.py TOOL --recs RECS.parquet --truth TRUTH.parquet --result OUT.json
                               [--per-user OUT.parquet] [--spark-driver-memory 4g]

TOOL is one of recsql, floor, ranx, pytrec_eval, pandas, spark-recsql, spark-mllib.

Every tool starts from the two Parquet files on disk and ends with a table of mean metrics.
Timings (seconds, time.perf_counter):

- setup:    work a tool needs once per process and that does not depend on the data: starting
            Spark (plus one tiny query), ranx's numba JIT warm-up on a two-query toy input.
            Imports are not counted anywhere. Not part of wall.
- build:    reading the files and building the tool's input structures (dicts, Qrels/Run,
            RelevanceEvaluator, the cached prediction/label DataFrame for MLlib).
- evaluate: computing the metrics from those structures.
- wall:     build + evaluate, i.e. files on disk -> result table. recsql does both in one call,
            so it reports wall only.

After the timed part, a tool writes its per-user values (untimed) so run.py can compare users
one by one, not only the means. Metric values are keyed by the recsql metric that has the same
definition (see METRICS_TREC and the notes per tool).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the recsql of this checkout, not whatever is installed
    sys.path.insert(0, str(REPO))

K = 10
# The comparison convention (trec_eval's): recsql name -> (ranx name, trec_eval name)
METRICS_TREC = ["ndcg@10", "map(denominator=relevant)@10", "mrr@10", "recall@10", "precision@10", "hit_rate@10"]
RANX = {"ndcg@10": "ndcg@10", "map(denominator=relevant)@10": "map@10", "mrr@10": "mrr@10",
        "recall@10": "recall@10", "precision@10": "precision@10", "hit_rate@10": "hit_rate@10"}
TREC = {"ndcg@10": "ndcg_cut_10", "map(denominator=relevant)@10": "map_cut_10", "mrr@10": "recip_rank",
        "recall@10": "recall_10", "precision@10": "P_10", "hit_rate@10": "success_10"}
# Spark MLlib RankingMetrics -> the recsql metric with the same definition
MLLIB = {"ndcg(gain=binary,ideal=binary)@10": "ndcgAt(10)",
         "map@10": "meanAveragePrecisionAt(10)", "precision@10": "precisionAt(10)", "recall@10": "recallAt(10)"}
# what recsql computes, untimed, as the reference for every tool's convention
METRICS_REFERENCE = METRICS_TREC + [m for m in MLLIB if m not in METRICS_TREC]


def _now() -> float:
    return time.perf_counter()


def _peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM (ru_maxrss would include the RSS of the parent that forked us)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return _mb(int(line.split()[1]))
    except OSError:
        pass
    return _mb(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _timed_done(args, out: dict) -> None:
    """Mark the end of the timed part: run.py freezes its peak-RSS reading here, so untimed checks
    that follow (per-user output, reference values) do not count."""
    out["self_peak_rss_timed_mb"] = _peak_rss_mb()
    Path(str(args.result) + ".timed").touch()


def _mb(kilobytes: int) -> float:
    return round(kilobytes / 1024, 1)


# ----------------------------------------------------------------------------------------- recsql
def _duckdb(args):
    """An in-memory DuckDB, with --duckdb-memory-limit (spilling to a temporary directory) if given."""
    import atexit
    import shutil
    import tempfile
    import duckdb
    spill = tempfile.mkdtemp(prefix="recsql-bench-")
    atexit.register(shutil.rmtree, spill, ignore_errors=True)  # the worker's spill folder goes with it
    config = {"temp_directory": spill, "preserve_insertion_order": False}
    if args.duckdb_memory_limit:
        config["memory_limit"] = args.duckdb_memory_limit
    return duckdb.connect(config=config)


def _import_recsql():
    """recsql with its API loaded: ``import recsql`` is lazy (``recsql.api``, with sqlglot, loads on first
    use, and pandas when a result frame is first read), and imports are not timed, for recsql as for every
    other tool (ranx's and pytrec_eval's pandas included), so both are imported here, before the clock."""
    import pandas  # noqa: F401 - Evaluation.summary builds a DataFrame; without this its import was timed
    import recsql
    recsql.evaluate  # noqa: B018 - the lazy attribute imports recsql.api
    return recsql


def run_recsql(args, out: dict) -> None:
    import duckdb
    recsql = _import_recsql()
    t0 = _now()
    result = recsql.evaluate(str(args.recs), str(args.truth), METRICS_TREC, con=_duckdb(args))
    summary = result.summary
    out["wall_s"] = _now() - t0
    _timed_done(args, out)
    row = summary.iloc[0]
    out["metrics"] = {m: float(row[m]) for m in METRICS_TREC}
    out["n_users"] = int(row["n_users"])
    out["diagnostics"] = {"users_without_recs": int(row["users_without_recs"]),
                          "recs_users_without_truth": int(row["recs_users_without_truth"])}
    out["result_table"] = summary.to_dict("records")
    if args.per_user:
        result.per_user.to_parquet(args.per_user, index=False)
    # untimed: the reference for every convention, and the same numbers from the rounded (tied) scores
    ref = recsql.evaluate(str(args.recs), str(args.truth), METRICS_REFERENCE).summary.iloc[0]
    out["reference"] = {m: float(ref[m]) for m in METRICS_REFERENCE}
    con = duckdb.connect()
    con.execute("CREATE VIEW recs_rounded AS SELECT user_id, item_id, round(score, 3) AS score "
                f"FROM read_parquet('{_sql_str(args.recs)}')")
    tied = recsql.evaluate("recs_rounded", str(args.truth), METRICS_REFERENCE, con=con).summary.iloc[0]
    out["rounded_scores_max_abs_diff"] = max(abs(float(tied[m]) - float(ref[m])) for m in METRICS_REFERENCE)
    out["versions"] = {"recsql": getattr(recsql, "__version__", "?"), "recsql_path": recsql.__file__,
                       "duckdb": duckdb.__version__}


def run_floor(args, out: dict) -> None:
    """DuckDB's cheapest query that still selects each user's top 10 with deterministic ties
    (score descending, then item id), counted, not fetched."""
    import duckdb
    t0 = _now()
    con = _duckdb(args)
    users, items = con.execute(
        "SELECT count(*), sum(len(top)) FROM (SELECT user_id, min_by(item_id, (-score, item_id), 10) AS top "
        "FROM read_parquet(?) GROUP BY user_id)", [str(args.recs)]).fetchone()
    out["wall_s"] = _now() - t0
    _timed_done(args, out)
    out["n_users"] = int(users)
    out["notes"] = f"{users} users, {items} top-10 items selected; truth not read, no metric computed"
    out["versions"] = {"duckdb": duckdb.__version__}


# ------------------------------------------------------------------------------- shared helpers
def _read(path: Path, columns: list[str]):
    import pandas as pd
    return pd.read_parquet(path, columns=columns)


def _nested(users, items, values) -> dict:
    """{str(user): {str(item): value}} from arrays sorted by user (what ranx and pytrec_eval take)."""
    import numpy as np
    if len(users) == 0:
        return {}
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    ends = np.r_[starts[1:], len(users)]
    keys = users[starts].astype(str).tolist()
    item_s = items.astype(str).tolist()
    vals = values.tolist()
    return {key: dict(zip(item_s[s:e], vals[s:e])) for key, s, e in zip(keys, starts.tolist(), ends.tolist())}


def _qrels_frame(truth):
    """Only relevant rows (relevance >= 1): queries without a relevant item leave the population,
    as in recsql; grade-0 rows change none of the six metrics in either tool."""
    rel = truth[truth["relevance"] >= 1]
    return rel.sort_values(["user_id", "item_id"], kind="stable")


def _sql_str(path) -> str:
    return str(path).replace("'", "''")


def _write_per_user(path, frame) -> None:
    if path:
        frame.to_parquet(path, index=False)


# ------------------------------------------------------------------------------------------ ranx
def run_ranx(args, out: dict) -> None:
    import numba
    import numpy as np
    import pandas as pd
    import ranx
    from ranx import Qrels, Run, evaluate

    metrics = [RANX[m] for m in METRICS_TREC]
    # numba JIT warm-up on a toy input. ranx turns doc ids into fixed-width unicode arrays and numba
    # compiles its dict/list code for each width, so the toy's ids have the same widths as the
    # data's (looked up here, untimed); otherwise the timed calls would include seconds of compiling.
    t0 = _now()
    import duckdb
    wq, wr = duckdb.connect().execute(
        f"SELECT (SELECT max(length(item_id::VARCHAR)) FROM read_parquet('{_sql_str(args.truth)}') WHERE relevance >= 1),"
        f" (SELECT max(length(item_id::VARCHAR)) FROM read_parquet('{_sql_str(args.recs)}'))").fetchone()
    q, r = 10 ** (wq - 1), 10 ** (wr - 1)
    evaluate(Qrels.from_dict({"1": {str(q): 1, str(q + 1): 2}, "2": {str(q): 3}, "3": {str(q + 2): 1}}),
             Run.from_dict({"1": {str(r + 1): 0.5, str(r + 2): 0.4}, "2": {str(r): 0.1}, "4": {str(r): 0.2}}),
             metrics, make_comparable=True)
    out["setup_s"] = _now() - t0

    t0 = _now()
    truth = _qrels_frame(_read(args.truth, ["user_id", "item_id", "relevance"]))
    recs = _read(args.recs, ["user_id", "item_id", "score"]).sort_values("user_id", kind="stable")
    qrels = Qrels.from_dict(_nested(truth["user_id"].to_numpy(), truth["item_id"].to_numpy(),
                                    truth["relevance"].to_numpy()))
    run = Run.from_dict(_nested(recs["user_id"].to_numpy(), recs["item_id"].to_numpy(), recs["score"].to_numpy()))
    t1 = _now()
    # make_comparable: queries of the qrels missing from the run get an empty list (score 0),
    # queries of the run missing from the qrels are dropped -- recsql's population
    scores = evaluate(qrels, run, metrics, make_comparable=True)
    t2 = _now()
    out.update(build_s=t1 - t0, evaluate_s=t2 - t1, wall_s=t2 - t0)
    _timed_done(args, out)
    out["metrics"] = {m: float(scores[RANX[m]]) for m in METRICS_TREC}
    out["n_users"] = len(qrels.keys())
    out["native_names"] = RANX
    out["versions"] = {"ranx": getattr(ranx, "__version__", _dist_version("ranx")), "numba": numba.__version__}
    if args.per_user:  # untimed: ranx keeps the per-query scores of an evaluation on the run
        run_c = run.make_comparable(qrels)
        evaluate(qrels, run_c, metrics)
        qids = list(qrels.keys())
        frame = pd.DataFrame({"user_id": np.array(qids, dtype=np.int64)})
        for m in METRICS_TREC:
            frame[m] = [float(run_c.scores[RANX[m]][q]) for q in qids]
        _write_per_user(args.per_user, frame)


# ----------------------------------------------------------------------------------- pytrec_eval
def run_pytrec_eval(args, out: dict) -> None:
    import numpy as np
    import pandas as pd
    import pytrec_eval

    measures = {"ndcg_cut.10", "map_cut.10", "recip_rank", "recall.10", "P.10", "success.10"}
    t0 = _now()
    truth = _qrels_frame(_read(args.truth, ["user_id", "item_id", "relevance"]))
    recs = _read(args.recs, ["user_id", "item_id", "score"])
    # only each query's top 10 goes in: recip_rank has no cutoff in trec_eval, and the other five
    # only look at the top 10 anyway. Same order as trec_eval's (score descending; no ties here).
    top = recs.sort_values(["user_id", "score", "item_id"], ascending=[True, False, True]) \
              .groupby("user_id", sort=False).head(K)
    qrels = _nested(truth["user_id"].to_numpy(), truth["item_id"].to_numpy(), truth["relevance"].to_numpy())
    run = _nested(top["user_id"].to_numpy(), top["item_id"].to_numpy(), top["score"].to_numpy())
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    t1 = _now()
    per_query = evaluator.evaluate(run)
    # trec_eval skips queries that are not in the run: they count 0 here (recsql's population)
    means = {}
    for m in METRICS_TREC:
        name = TREC[m]
        means[m] = sum(per_query[q][name] if q in per_query else 0.0 for q in qrels) / len(qrels)
    t2 = _now()
    out.update(build_s=t1 - t0, evaluate_s=t2 - t1, wall_s=t2 - t0)
    _timed_done(args, out)
    out["metrics"] = means
    out["n_users"] = len(qrels)
    out["queries_missing_from_run_added_as_0"] = sum(1 for q in qrels if q not in per_query)
    out["native_names"] = TREC
    out["versions"] = {"pytrec_eval-terrier": _dist_version("pytrec-eval-terrier")}
    if args.per_user:
        qids = list(qrels)
        frame = pd.DataFrame({"user_id": np.array(qids, dtype=np.int64)})
        for m in METRICS_TREC:
            frame[m] = [per_query[q][TREC[m]] if q in per_query else 0.0 for q in qids]
        _write_per_user(args.per_user, frame)


# --------------------------------------------------------------------------- pandas (seed style)
# Per-user Python functions in the style of metric tutorials, under the trec convention.
def hit_rate_at_k(recommended, relevant, k):
    return 1.0 if any(item in relevant for item in recommended[:k]) else 0.0


def precision_at_k(recommended, relevant, k):
    return sum(1 for item in recommended[:k] if item in relevant) / k


def recall_at_k(recommended, relevant, k):
    return sum(1 for item in recommended[:k] if item in relevant) / len(relevant)


def ap_at_k(recommended, relevant, k):
    hits, total = 0, 0.0
    for rank, item in enumerate(recommended[:k], start=1):
        if item in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


def rr_at_k(recommended, relevant, k):
    for rank, item in enumerate(recommended[:k], start=1):
        if item in relevant:
            return 1.0 / rank
    return 0.0


def dcg_at_k(gains, k):
    import numpy as np
    return sum(gain / np.log2(rank + 1) for rank, gain in enumerate(gains[:k], start=1))


def ndcg_at_k(recommended, grades, k):
    dcg = dcg_at_k([max(grades.get(item, 0), 0) for item in recommended[:k]], k)
    idcg = dcg_at_k(sorted((max(g, 0) for g in grades.values()), reverse=True), k)
    return dcg / idcg if idcg > 0 else 0.0


def run_pandas(args, out: dict) -> None:
    import numpy as np
    import pandas as pd
    t0 = _now()
    recs = pd.read_parquet(args.recs)
    truth = pd.read_parquet(args.truth)
    t1 = _now()
    recs = recs.sort_values(["user_id", "score", "item_id"], ascending=[True, False, True])
    rec_lists = recs.groupby("user_id")["item_id"].apply(lambda s: list(s.head(K))).to_dict()
    grades = truth.groupby("user_id").apply(lambda g: dict(zip(g["item_id"], g["relevance"])),
                                            include_groups=False).to_dict()
    rows = []
    for user, user_grades in grades.items():
        relevant = {item for item, grade in user_grades.items() if grade >= 1}
        if not relevant:  # no relevant truth: not in the population
            continue
        recommended = rec_lists.get(user, [])
        rows.append((user, ndcg_at_k(recommended, user_grades, K), ap_at_k(recommended, relevant, K),
                     rr_at_k(recommended, relevant, K), recall_at_k(recommended, relevant, K),
                     precision_at_k(recommended, relevant, K), hit_rate_at_k(recommended, relevant, K)))
    per_user = pd.DataFrame(rows, columns=["user_id"] + METRICS_TREC)
    means = per_user[METRICS_TREC].mean()
    t2 = _now()
    out.update(build_s=t1 - t0, evaluate_s=t2 - t1, wall_s=t2 - t0)
    _timed_done(args, out)
    out["metrics"] = {m: float(means[m]) for m in METRICS_TREC}
    out["n_users"] = len(per_user)
    out["versions"] = {"pandas": pd.__version__, "numpy": np.__version__}
    _write_per_user(args.per_user, per_user)


# ----------------------------------------------------------------------------------------- Spark
def _spark(args):
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(f"local[{args.spark_cores}]").appName("recsql-benchmark")
             .config("spark.driver.memory", args.spark_driver_memory)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.shuffle.partitions", str(args.spark_shuffle_partitions))
             .config("spark.sql.warehouse.dir", str(Path(args.result).parent / "spark-warehouse"))
             .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={Path(args.result).parent}")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(10).selectExpr("sum(id)").collect()  # JVM and Spark warm-up, same for both Spark tools
    return spark


def run_spark_recsql(args, out: dict) -> None:
    import pyspark
    recsql = _import_recsql()
    t0 = _now()
    spark = _spark(args)
    out["setup_s"] = _now() - t0
    try:
        result, build_s, evaluate_s = recsql_on_spark(spark, recsql, args.recs, args.truth)
        out.update(build_s=build_s, evaluate_s=evaluate_s, wall_s=build_s + evaluate_s)
        _timed_done(args, out)
        row = result.summary.iloc[0]
        out["metrics"] = {m: float(row[m]) for m in METRICS_TREC}
        out["n_users"] = int(row["n_users"])
        out["versions"] = {"pyspark": pyspark.__version__}
        if args.per_user:
            result.per_user.to_parquet(args.per_user, index=False)
    finally:
        spark.stop()


def mllib_metrics(spark, recs_path, truth_path) -> tuple[dict[str, float], int, float, float]:
    """Spark MLlib's metrics from the two Parquet files: (values keyed by the recsql metric of the same
    definition, users, build seconds, evaluate seconds). Build = the (top-10 prediction list, relevant
    labels) rows per user, cached; evaluate = ``RankingMetrics``' four metrics. The cache is dropped after."""
    from pyspark.mllib.common import JavaModelWrapper, callMLlibFunc
    from pyspark.mllib.evaluation import RankingMetrics
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    t0 = _now()
    recs = spark.read.parquet(str(recs_path))
    truth = spark.read.parquet(str(truth_path))
    order = Window.partitionBy("user_id").orderBy(F.col("score").desc(), F.col("item_id").asc())
    pred = (recs.withColumn("pos", F.row_number().over(order)).where(F.col("pos") <= K)
            .groupBy("user_id")
            .agg(F.sort_array(F.collect_list(F.struct("pos", "item_id"))).alias("ranked"))
            .select("user_id", F.col("ranked.item_id").alias("pred")))
    # labels = the relevant items. No relevance values: PySpark's RankingMetrics accepts
    # (prediction, labels, relevance) rows since 3.4, but its Python bridge
    # (PythonMLLibAPI.newRankingMetrics) passes only the first two columns to Scala, so ndcgAt
    # is the binary NDCG either way (checked on a toy in run_spark_mllib and recorded in the result)
    lab = truth.where(F.col("relevance") >= 1).groupBy("user_id").agg(F.collect_list("item_id").alias("labels"))
    data = (lab.join(pred, "user_id", "left")  # users without recommendations: empty list, 0
            .select(F.coalesce("pred", F.array().cast("array<bigint>")).alias("pred"), "labels")
            .cache())
    n_users = data.count()
    # RankingMetrics(rdd) converts a Python RDD to this DataFrame first; we hand it the
    # DataFrame directly (no Python serialization of the rows)
    metrics = RankingMetrics.__new__(RankingMetrics)
    JavaModelWrapper.__init__(metrics, callMLlibFunc("newRankingMetrics", data._jdf))
    t1 = _now()
    values = {"ndcg(gain=binary,ideal=binary)@10": metrics.ndcgAt(K),
              "map@10": metrics.meanAveragePrecisionAt(K),
              "precision@10": metrics.precisionAt(K),
              "recall@10": metrics.recallAt(K)}
    t2 = _now()
    data.unpersist()
    return values, n_users, t1 - t0, t2 - t1


def recsql_on_spark(spark, recsql, recs_path, truth_path) -> tuple[object, float, float]:
    """recsql's six metrics on Spark from the two Parquet files: (the result, build s, evaluate s)."""
    t0 = _now()
    recs = spark.read.parquet(str(recs_path))
    truth = spark.read.parquet(str(truth_path))
    t1 = _now()
    result = recsql.evaluate(recs, truth, METRICS_TREC, con=spark)
    result.summary  # noqa: B018 - the frames are part of the call
    return result, t1 - t0, _now() - t1


def run_spark_mllib(args, out: dict) -> None:
    import pyspark
    from pyspark.mllib.evaluation import RankingMetrics

    t0 = _now()
    spark = _spark(args)
    out["setup_s"] = _now() - t0
    try:
        values, n_users, build_s, evaluate_s = mllib_metrics(spark, args.recs, args.truth)
        out.update(build_s=build_s, evaluate_s=evaluate_s, wall_s=build_s + evaluate_s)
        _timed_done(args, out)
        out["metrics"] = {m: float(v) for m, v in values.items()}
        out["n_users"] = n_users
        out["native_names"] = MLLIB
        out["versions"] = {"pyspark": pyspark.__version__}
        # untimed probe: does ndcgAt use relevance values given as a third column? One query,
        # prediction [1, 2], labels [2, 1] with relevance [3, 1]: graded NDCG@2 = 0.7098, binary 1.0
        probe = RankingMetrics(spark.sparkContext.parallelize([([1, 2], [2, 1], [3.0, 1.0])])).ndcgAt(2)
        out["mllib_ndcg_uses_relevance_values"] = abs(probe - 1.0) > 1e-9
    finally:
        spark.stop()


TOOLS = {"recsql": run_recsql, "floor": run_floor, "ranx": run_ranx, "pytrec_eval": run_pytrec_eval,
         "pandas": run_pandas, "spark-recsql": run_spark_recsql, "spark-mllib": run_spark_mllib}


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tool", choices=sorted(TOOLS))
    parser.add_argument("--recs", type=Path, required=True)
    parser.add_argument("--truth", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--per-user", type=Path)
    parser.add_argument("--spark-driver-memory", default="4g")
    parser.add_argument("--duckdb-memory-limit", default=None, help="e.g. 4GB (recsql and the floor)")
    parser.add_argument("--spark-cores", default="*")
    parser.add_argument("--spark-shuffle-partitions", type=int, default=8)
    args = parser.parse_args()
    out: dict = {"tool": args.tool, "pid": os.getpid()}
    TOOLS[args.tool](args, out)
    out["self_peak_rss_mb"] = _peak_rss_mb()
    args.result.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
