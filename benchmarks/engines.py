"""Every metric of the registry at k = 100 on every executed engine, on MovieLens-100K-shaped data.

    python benchmarks/engines.py                          # all seven engines (PostgreSQL and MariaDB started here)
    python benchmarks/engines.py --engines duckdb,sqlite  # a subset
    python benchmarks/engines.py -m diversity@100 -m kendall@100  # some metrics, not the registry's

The data (``movielens_shaped``, NumPy with a fixed seed, so the same tables on every run): 943 users with
100 recommendations each (94,300 rows, scores on a 3-decimal grid, so ties occur), 1,682 items, about
104,000 graded truth rows (relevance 1..5, popular items drawn more often), items with a category, a
price and a probability, 1 to 3 features per item (diversity by feature vectors), the truth pairs as
interactions, and a most-popular list as ``expected_recs``. One ``recsql.evaluate`` asks for every metric
of the registry at ``@100`` (those without a cutoff as they are) plus ``diversity(by=features)@100``:
64 metrics in one query (38 at 27ee818). That query has 191 CTEs, the intent-aware metrics' greedy ideal
list at @100 a chain of 101 of them, and MariaDB, SQLite, Spark, ClickHouse and DataFusion run it in steps
(recsql/engines/steps.py, docs/guide/engines.md).

Each engine runs in a fresh process (``--worker``): the engine is started (servers by the test harness,
``tests/support``), the tables are loaded (not timed), then one ``evaluate`` call is timed, cold (the
statement cache of a private, empty folder). The peak resident memory of the process and of everything
it started (the server, Spark's JVM) is sampled every 50 ms while the call runs. DuckDB runs with
``memory_limit = '4GB'`` and DataFusion with a 4 GB memory pool; the other engines have no limit to set
from a connection, so their peak is what is recorded. Every engine's per-metric summary is compared with
DuckDB's.

The machine's speed changes from hour to hour (DuckDB's call has taken 2.9 s in one hour and 9.1 s in
another), more than some engines differ from each other. So DuckDB runs again, in a fresh process, just
before each other engine, and each engine's ratio is to that DuckDB call, a minute apart at most, not to
one taken at the start of the run. The DuckDB row gives its first call and the range of all of them.

Results: ``benchmarks/results/engines.md`` and ``engines.json`` (date, commit, machine, load before and
after, versions, each engine's seconds, peak memory, ratio to DuckDB and largest difference).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ENGINES = ("duckdb", "sqlite", "postgres", "mysql", "spark", "clickhouse", "datafusion")
LIMIT_GB = 4
ROLES = ("recs", "truth", "items", "interactions", "expected_recs", "item_features", "intents")  # movielens_shaped's


def movielens_shaped(seed: int = 0) -> dict:
    """The benchmark's tables as pandas frames (see the module's docstring)."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    users, n_items, k = 943, 1682, 100
    popularity = rng.zipf(1.3, n_items).astype(float)
    popularity /= popularity.sum()
    recs, truth = [], []
    for user in range(1, users + 1):
        judged = rng.choice(n_items, size=int(rng.integers(20, 200)), replace=False, p=popularity) + 1
        truth.append(pd.DataFrame({"user_id": user, "item_id": judged, "relevance": rng.integers(1, 6, len(judged))}))
        recs.append(pd.DataFrame({"user_id": user, "item_id": rng.choice(n_items, size=k, replace=False) + 1,
                                  "score": np.round(rng.random(k), 3)}))
    truth_frame = pd.concat(truth, ignore_index=True)
    items = pd.DataFrame({"item_id": np.arange(1, n_items + 1), "category": rng.integers(0, 19, n_items).astype(str),
                          "price": np.round(rng.random(n_items) * 20, 2), "probability": rng.random(n_items)})
    features = pd.DataFrame([(item, f"g{g}", 1.0) for item in range(1, n_items + 1)
                             for g in rng.choice(19, size=int(rng.integers(1, 4)), replace=False)],
                            columns=["item_id", "feature", "value"])
    top = truth_frame.groupby("item_id").size().sort_values(ascending=False, kind="stable").head(k).index
    expected = pd.DataFrame([(u, int(i), float(k - j)) for u in range(1, users + 1) for j, i in enumerate(top)],
                            columns=["user_id", "item_id", "score"])
    intents = truth_frame.merge(features[["item_id", "feature"]], on="item_id").rename(columns={"feature": "intent"})
    return {"recs": pd.concat(recs, ignore_index=True), "truth": truth_frame, "items": items,
            "interactions": truth_frame[["user_id", "item_id"]], "expected_recs": expected, "item_features": features,
            "intents": intents[["user_id", "item_id", "intent", "relevance"]]}


def metrics() -> list[str]:
    """Every metric of the registry whose inputs the benchmark's tables give (at @100 where it takes a
    cutoff), and diversity by feature vectors."""
    import recsql
    from recsql.compose.needs import check_inputs
    from recsql.errors import RecsqlError
    from recsql.metrics import parse_metric
    given = set(ROLES)
    asked = ["diversity(by=features)@100"]
    for name, spec in recsql.registry().items():
        text = name + ("@100" if spec.k_rule != "none" else "")
        try:
            check_inputs([parse_metric(text)], given, {})
        except (RecsqlError, KeyError):
            continue  # an input the benchmark's data does not have (logs, a reward model, ...)
        asked.append(text)
    return asked


class PeakMemory:
    """The largest resident memory of this process, its descendants and ``roots`` (a server not started
    as a child) with theirs, sampled every 50 ms. Shared memory (PostgreSQL's buffers) counts once per
    process that maps it, so a server's figure is an upper bound."""

    def __init__(self, roots: tuple = ()) -> None:
        import psutil
        self.roots = [psutil.Process(), *roots]
        self.peak, self._stop = 0, threading.Event()

    def _total(self) -> int:
        total = 0
        processes = {p.pid: p for root in self.roots for p in [root, *root.children(recursive=True)]}
        for proc in processes.values():
            try:
                total += proc.memory_info().rss
            except Exception:  # noqa: BLE001 (a child that ended between the listing and the read)
                pass
        return total

    def __enter__(self) -> "PeakMemory":
        def sample() -> None:
            while not self._stop.wait(0.05):
                self.peak = max(self.peak, self._total())
        self.peak = self._total()
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._total())


def worker(name: str, asked: list[str]) -> dict:
    """Start engine ``name``, load the tables, time one evaluate of the metrics ``asked``."""
    sys.path.insert(0, str(REPO / "tests"))
    import recsql
    from support.engines import start
    frames = movielens_shaped()
    with ExitStack() as stack:
        engine = start(name, stack)
        if name == "duckdb":
            engine.con.execute(f"SET memory_limit = '{LIMIT_GB}GB'")
        if name == "datafusion":  # a fresh context whose memory pool is the limit
            from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext
            engine.con = SessionContext(SessionConfig(), RuntimeEnvBuilder().with_fair_spill_pool(LIMIT_GB * 2**30))
        if name == "duckdb":  # from the frames themselves: the harness's INSERT ... VALUES text took DuckDB's
            # parser 27 s and left 2 GB resident, which the peak of the timed call then counted
            for role, frame in frames.items():
                engine.con.execute(f"CREATE TABLE {role} AS SELECT * FROM frame")
            tables = {role: role for role in frames}
        else:
            tables = {role: engine.load(frame) for role, frame in frames.items()}
        roots = ()
        if name == "postgres":  # started by pg_ctl, so not our child: the postmaster serving this connection
            import psutil
            backend = engine.con.execute("SELECT pg_backend_pid()").fetchone()[0]
            roots = (psutil.Process(backend).parent(),)
        with PeakMemory(roots) as memory:
            started = time.perf_counter()
            result = recsql.evaluate(tables["recs"], tables["truth"], asked, con=engine.con,
                                     **{role: tables[role] for role in frames if role not in ("recs", "truth")})
            seconds = time.perf_counter() - started
        summary = result.summary.iloc[0]
        return {"engine": name, "seconds": seconds, "peak_mb": memory.peak / 2**20, "metrics": len(asked),
                "values": {m: (None if summary[m] is None or summary[m] != summary[m] else float(summary[m]))
                           for m in asked}}


def run_worker(name: str, asked: list[str], cache: Path, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
           "RECSQL_CACHE_DIR": str(cache)}  # private and empty: every call composes its statement
    try:
        done = subprocess.run([sys.executable, __file__, "--worker", name, *(flag for m in asked for flag in ("-m", m))], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"engine": name, "error": f"stopped after {timeout:.0f} s (--timeout)"}
    if done.returncode != 0:
        return {"engine": name, "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _said(result: dict) -> str:
    return result.get("error") or f"{result['seconds']:.2f} s, {result['peak_mb']:,.0f} MB"


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return "-"


def table(results: list[dict]) -> str:
    base = next((r for r in results if r["engine"] == "duckdb" and "seconds" in r), None)
    lines = ["| engine | metrics | seconds | DuckDB just before | ÷ DuckDB | peak memory (process and servers) "
             "| largest difference from DuckDB |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['engine']} | | failed: {r['error'][:120]} | | | | |")
            continue
        duckdb = r.get("duckdb_seconds", base["seconds"] if base else None)
        ratio = f"{r['seconds'] / duckdb:.1f}×" if duckdb else "-"
        before = (f"{duckdb:.2f}" if "duckdb_seconds" in r
                  else f"{min(r['runs']):.2f}–{max(r['runs']):.2f} in all" if len(r.get("runs", ())) > 1 else "")
        diff = "-"
        if base:
            gaps = [abs(v - base["values"][m]) for m, v in r["values"].items()
                    if v is not None and base["values"].get(m) is not None]
            mismatched = [m for m, v in r["values"].items() if (v is None) != (base["values"].get(m) is None)]
            diff = f"{max(gaps):.1e}" + (f" ({len(mismatched)} NULL where DuckDB has a value)" if mismatched else "")
            if r is base and "runs_gap" in r:
                diff = f"{r['runs_gap']:.1e} between its calls"
        lines.append(f"| {r['engine']} | {r['metrics']} | {r['seconds']:.2f} | {before} | {ratio} | {r['peak_mb']:,.0f} MB "
                     f"| {diff} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--out", default=str(HERE / "results"))
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per engine (start, load and query)")
    parser.add_argument("-m", "--metric", action="append", dest="metrics", metavar="METRIC",
                        help="a metric to ask, as recsql evaluate's -m; repeat it (default: every metric of the registry)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # this checkout's recsql, as the workers' PYTHONPATH gives them
    asked = args.metrics or metrics()
    if args.worker:
        print(json.dumps(worker(args.worker, asked)))
        return
    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = sorted(set(names) - set(ENGINES))
    if unknown:
        parser.error(f"--engines: unknown {unknown[0]!r}; choose from {', '.join(ENGINES)}")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="recsql-bench-cache-") as cache:
        results, beside = [], []
        for name in names:
            if name != "duckdb" and "duckdb" in names:  # DuckDB again, just before: the ratio's own minute
                print(f"duckdb, before {name} ...", flush=True)
                beside.append(run_worker("duckdb", asked, Path(cache) / f"duckdb-before-{name}", args.timeout))
                print("  " + _said(beside[-1]), flush=True)
            print(f"{name} ...", flush=True)
            results.append(run_worker(name, asked, Path(cache) / name, args.timeout))
            if beside and name != "duckdb" and "seconds" in beside[-1]:
                results[-1]["duckdb_seconds"] = beside[-1]["seconds"]
            print("  " + _said(results[-1]), flush=True)
        for r in results:
            if r["engine"] == "duckdb" and "seconds" in r:
                r["runs"] = [r["seconds"], *(b["seconds"] for b in beside if "seconds" in b)]
                r["runs_gap"] = max((abs(v - r["values"][m]) for b in beside if "seconds" in b
                                     for m, v in b["values"].items() if v is not None and r["values"][m] is not None),
                                    default=0.0)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "command": "python benchmarks/engines.py" + (f" --engines {args.engines}" if args.engines != ",".join(ENGINES) else "")
                       + "".join(f" -m '{m}'" for m in args.metrics or ()),
            "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
            "load_before": [round(x, 1) for x in load_before], "load_after": [round(x, 1) for x in os.getloadavg()],
            "versions": {p: _version(p) for p in ("duckdb", "psycopg", "pymysql", "pyspark", "chdb", "datafusion")}}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "engines.json").write_text(json.dumps({**meta, "results": results}, indent=1) + "\n")
    (out / "engines.md").write_text(
        "# Every metric at k = 100 on every executed engine\n\n"
        f"{meta['date']}, commit {commit}, `{meta['command']}`; {meta['machine']}; load average "
        f"{meta['load_before'][0]} before, {meta['load_after'][0]} after; versions: "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".\n\n"
        + f"One cold `recsql.evaluate` of {'every metric' if not args.metrics else 'the metrics asked'} ({len(asked)}) "
        "on MovieLens-100K-shaped data, a statement "
        "too large for an engine run in steps (benchmarks/engines.py's docstring). Each engine's ratio is to "
        "DuckDB's call in a fresh process just before it.\n\n"
        + table(results) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
