"""Small data: recsql against RecTools on a MovieLens-100K-shaped evaluation, warm and cold.

    python benchmarks/small.py                       # 15 interleaved warm repeats, 5 cold processes per tool
    python benchmarks/small.py --repeat 31 --cold 9 --rectools-python benchmarks/data/rectools-venv/bin/python

Data (``benchmarks/data/small/``, made once with a fixed seed, git-ignored): the shape of MovieLens 100K
(943 users, 1,682 items, 100,000 ratings 1..5, every user with at least 20, item popularity long-tailed),
synthesised because the real file is not in ``fixtures/``. Each user's last 20% of ratings (at least
one) are the truth (``user_id, item_id``: every truth row is relevant, as in RecTools); four models
score the 1,682 items for every user and keep their top 25 (``model, user_id, item_id, score``):
``popular`` (the item's training count: integer scores, so many ties), ``noisy_pop`` and ``pop_plus_genre``
(popularity plus noise of two sizes), ``random``. That makes 94,300 recommendation rows and about 20,000
truth rows, written once as two Parquet files that both tools read.

Every tool runs in a process of its own (RecTools in its own virtual environment when it cannot share
recsql's: ``--rectools-python``), reads the two Parquet files into pandas frames once (untimed), and then:

- **warm**: after one untimed call, ``--repeat`` timed calls, interleaved between the tools (recsql, RecTools,
  recsql, ...) so that load from other work on the machine falls on both alike; best and median reported.
- **cold**: ``--cold`` fresh processes per tool: the import of the tool's package, its first call, and a
  second call in the same process (cold − warm = what the first call pays once per process). recsql keeps
  the statements it composes on disk (recsql/statements.py), so its cold processes read the statement the
  warm workers composed; ``recsql (no statement cache)`` (``RECSQL_CACHE_DIR=off``) is the very first call
  on a machine, or after any change of recsql's sources, its templates or sqlglot.

What each tool's timed call does, from the same frames to the six means per model:

- ``recsql``: ``recsql.evaluate(recs, truth, metrics, run_cols=["model"])``: ranking by score (ties by
  item id), the cut at 10, the input checks, the query, the result frames.
- ``rectools``: the rank column RecTools needs, computed the usual pandas way (sort by model, user, score
  descending, item id; ``cumcount() + 1``: the same tie rule), then ``rectools.metrics.calc_metrics`` (its
  fastest documented path: it merges recommendations with the interactions once and shares that between the
  metrics) per model. ``rectools (calc only)`` is the same without the ranking (ranks computed untimed).

Definitions: the metrics are the ones both tools define the same way: recsql ``ndcg@10`` = RecTools
``NDCG(10, divide_by_achievable=True)``, recsql ``map(denominator=relevant)@10`` = RecTools ``MAP(10)``,
``mrr@10`` = ``MRR(10)``, ``recall@10`` = ``Recall(10)``, ``precision@10`` = ``Precision(10)``,
``hit_rate@10`` = ``HitRate(10)``. Where the defaults differ (README of the benchmarks, "Small data"):
RecTools' default ``NDCG(10)`` divides by the DCG of 10 relevant items for every user (recsql
``ndcg(ideal=k_slots)@10``), recsql's default ``map@10`` divides by min(10, R) where RecTools divides by R.
Both default pairs are compared too (untimed). Every mean must agree to 1e-12 and the user counts must
match, or the run exits with status 1.

Results: ``benchmarks/results/small.md`` and ``small.json`` (machine, versions, date, recsql commit, load
average before and after).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data" / "small"
RESULTS = HERE / "results"
SEED = 100_000
K = 10

# recsql's name -> RecTools' metric (constructor text, evaluated in the RecTools worker)
TIMED = {
    "ndcg@10": "NDCG(10, divide_by_achievable=True)",
    "map(denominator=relevant)@10": "MAP(10)",
    "mrr@10": "MRR(10)",
    "recall@10": "Recall(10)",
    "precision@10": "Precision(10)",
    "hit_rate@10": "HitRate(10)",
}
# the cold rows: worker and environment
COLD = {"recsql": ("recsql", {}), "recsql (no statement cache)": ("recsql", {"RECSQL_CACHE_DIR": "off"}),
        "rectools": ("rectools", {})}
# the defaults that differ, compared untimed: recsql's spelling of RecTools' default, and recsql's default
DEFAULTS = {"ndcg(ideal=k_slots)@10": "NDCG(10)", "map@10": None, "ndcg@10": None}


# ---------------------------------------------------------------- data

def make_data(folder: Path = DATA) -> tuple[Path, Path]:
    """The two Parquet files (made once; the same bytes for the same seed and library versions)."""
    recs_path, truth_path = folder / "recs.parquet", folder / "truth.parquet"
    if recs_path.is_file() and truth_path.is_file():
        return recs_path, truth_path
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(SEED)
    users, items, ratings = 943, 1682, 100_000
    # ratings per user: at least 20, long-tailed, summing to 100,000 (as MovieLens 100K)
    weights = rng.pareto(1.2, users) + 0.05
    counts = 20 + np.floor(weights / weights.sum() * (ratings - 20 * users)).astype(int)
    counts[np.argsort(-weights)[: ratings - counts.sum()]] += 1
    counts = np.minimum(counts, items)
    popularity = 1.0 / np.arange(1, items + 1) ** 0.9
    popularity = popularity[rng.permutation(items)]
    popularity /= popularity.sum()
    rows = []
    for user, n in enumerate(counts, start=1):
        chosen = rng.choice(items, size=int(n), replace=False, p=popularity) + 1
        rows.append(pd.DataFrame({"user_id": user, "item_id": chosen, "rating": rng.integers(1, 6, len(chosen)),
                                  "timestamp": np.sort(rng.integers(874_724_710, 893_286_638, len(chosen)))}))
    data = pd.concat(rows, ignore_index=True)
    data = data.sort_values(["user_id", "timestamp", "item_id"], kind="stable").reset_index(drop=True)
    position = data.groupby("user_id").cumcount()
    size = data.groupby("user_id")["item_id"].transform("size")
    test = position >= size - np.maximum(1, (size * 0.2).round().astype(int))
    train, truth = data[~test], data.loc[test, ["user_id", "item_id"]].reset_index(drop=True)
    seen = train.groupby("item_id").size().reindex(np.arange(1, items + 1), fill_value=0).to_numpy().astype(float)
    models = {
        "popular": seen,
        "noisy_pop": None,
        "pop_plus_genre": None,
        "random": None,
    }
    frames = []
    user_ids = np.arange(1, users + 1)
    for name in models:
        if name == "popular":
            scores = np.tile(seen, (users, 1))
        elif name == "noisy_pop":
            scores = np.log1p(seen)[None, :] + rng.normal(0, 1.0, (users, items))
        elif name == "pop_plus_genre":
            scores = np.log1p(seen)[None, :] + rng.normal(0, 0.3, (users, items))
        else:
            scores = rng.random((users, items))
        # top 25 per user, ties by item id ascending (np.lexsort: last key first)
        item_ids = np.arange(1, items + 1)
        top = np.empty((users, 25), dtype=np.int64)
        for u in range(users):
            order = np.lexsort((item_ids, -scores[u]))[:25]
            top[u] = order
        frames.append(pd.DataFrame({"model": name, "user_id": np.repeat(user_ids, 25),
                                    "item_id": (top + 1).ravel(), "score": np.take_along_axis(scores, top, 1).ravel()}))
    recs = pd.concat(frames, ignore_index=True)
    folder.mkdir(parents=True, exist_ok=True)
    recs.to_parquet(recs_path, index=False)
    truth.to_parquet(truth_path, index=False)
    return recs_path, truth_path


def read_frames(recs_path: Path, truth_path: Path):
    import pandas as pd
    return pd.read_parquet(recs_path), pd.read_parquet(truth_path)


# ---------------------------------------------------------------- the tools (each in its own process)

class RecsqlTool:
    name = "recsql"

    def __init__(self, recs, truth) -> None:
        self.recs, self.truth = recs, truth

    @staticmethod
    def load() -> None:
        import recsql  # noqa: F401
        recsql.evaluate  # noqa: B018 - the lazy attribute imports recsql.api

    def run(self, metrics=tuple(TIMED)) -> dict:
        import recsql
        result = recsql.evaluate(self.recs, self.truth, list(metrics), run_cols=["model"])
        return {row["model"]: {"n_users": int(row["n_users"]), **{m: float(row[m]) for m in metrics}}
                for row in result.summary.to_dict("records")}


class RectoolsTool:
    name = "rectools"

    def __init__(self, recs, truth, calc_only: bool = False) -> None:
        self.recs, self.truth, self.calc_only = recs, truth, calc_only
        self.ranked = self.rank(recs) if calc_only else None

    @staticmethod
    def load() -> None:
        import rectools.metrics  # noqa: F401

    @staticmethod
    def rank(recs):
        ranked = recs.sort_values(["model", "user_id", "score", "item_id"], ascending=[True, True, False, True])
        return ranked.assign(rank=ranked.groupby(["model", "user_id"], sort=False).cumcount() + 1)

    def run(self, metrics=tuple(TIMED)) -> dict:
        import rectools.metrics as rm
        objects = {name: eval(TIMED.get(name) or DEFAULTS[name], vars(rm)) for name in metrics}  # noqa: S307
        ranked = self.ranked if self.calc_only else self.rank(self.recs)
        out = {}
        for model, reco in ranked.groupby("model", sort=True):
            values = rm.calc_metrics(objects, reco, self.truth)
            out[model] = {"n_users": int(self.truth["user_id"].nunique()), **{m: float(values[m]) for m in metrics}}
        return out


def _tool(name: str, recs, truth):
    if name == "recsql":
        return RecsqlTool(recs, truth)
    return RectoolsTool(recs, truth, calc_only=name == "rectools (calc only)")


def _relative(path: Path) -> str:
    """A path as recorded in the results: relative to the repository (no machine's layout)."""
    try:
        return str(Path(path).resolve().relative_to(Path(__file__).resolve().parent.parent))
    except ValueError:
        return Path(path).name


def _versions(tool: str) -> dict:
    from importlib.metadata import PackageNotFoundError, version
    names = ["pandas", "numpy", "pyarrow"] + (["duckdb", "sqlglot"] if tool == "recsql" else ["rectools"])
    found = {"python": platform.python_version()}
    for n in names:
        try:
            found[n] = version(n)
        except PackageNotFoundError:
            found[n] = None
    return found


def worker(args) -> None:
    """Serve timed calls on stdin: ``run`` -> one line of JSON with the seconds; ``values`` -> the means."""
    recs, truth = read_frames(Path(args.recs), Path(args.truth))
    started = time.perf_counter()
    _tool_class = RecsqlTool if args.worker == "recsql" else RectoolsTool
    _tool_class.load()
    imported = time.perf_counter() - started
    tool = _tool(args.worker, recs, truth)
    started = time.perf_counter()
    tool.run()
    first = time.perf_counter() - started
    started = time.perf_counter()
    tool.run()
    second = time.perf_counter() - started
    print(json.dumps({"import": imported, "first": first, "second": second, "versions": _versions(args.worker)}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "run":
            started = time.perf_counter()
            tool.run()
            print(json.dumps({"seconds": time.perf_counter() - started}), flush=True)
        elif command == "values":
            defaults = [m for m in DEFAULTS if args.worker == "recsql" or DEFAULTS[m]]
            print(json.dumps({"timed": tool.run(), "defaults": tool.run(defaults)}), flush=True)
        elif command == "quit":
            return


class Worker:
    def __init__(self, tool: str, python: str, recs: Path, truth: Path, env: dict | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               **(env or {})}
        self.process = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker", tool, "--recs", str(recs), "--truth", str(truth)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
        self.start = self._read()

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.process.args} died (exit {self.process.wait()})")
        return json.loads(line)

    def ask(self, command: str) -> dict:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> None:
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        self.process.wait(timeout=60)


# ---------------------------------------------------------------- the run

def _machine() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    memory = None
    try:
        memory = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                          if line.startswith("MemTotal"))) // 1024
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "logical_cpus": os.cpu_count(), "memory_mb": memory, "platform": platform.platform()}


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _dirty() -> bool | None:
    try:
        return bool(subprocess.run(["git", "--no-optional-locks", "diff", "--stat", "HEAD", "--"], cwd=REPO,
                                   capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return None


def _compare(a: dict, b: dict, pairs: list[tuple[str, str]]) -> tuple[float, bool]:
    worst, users = 0.0, True
    for model in a:
        users &= a[model]["n_users"] == b[model]["n_users"]
        for left, right in pairs:
            worst = max(worst, abs(a[model][left] - b[model][right]))
    return worst, users and set(a) == set(b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15, help="timed warm calls per tool (interleaved)")
    parser.add_argument("--cold", type=int, default=5, help="fresh processes per tool for the cold numbers")
    parser.add_argument("--rectools-python", default=os.environ.get("RECTOOLS_PYTHON", sys.executable),
                        help="the Python that has rectools installed (default: this one)")
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--recs", help=argparse.SUPPRESS)
    parser.add_argument("--truth", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0

    recs_path, truth_path = make_data()
    pythons = {"recsql": sys.executable, "rectools": args.rectools_python, "rectools (calc only)": args.rectools_python}
    load_before = os.getloadavg()
    started = datetime.now(timezone.utc)

    # warm: one process per tool, timed calls interleaved
    workers = {tool: Worker(tool, python, recs_path, truth_path) for tool, python in pythons.items()}
    warm: dict[str, list[float]] = {tool: [] for tool in workers}
    for _ in range(args.repeat):
        for tool, w in workers.items():
            warm[tool].append(w.ask("run")["seconds"])
    values = {tool: w.ask("values") for tool, w in workers.items()}
    versions = {tool: w.start["versions"] for tool, w in workers.items()}
    for w in workers.values():
        w.close()

    # cold: fresh processes, alternating tools; "recsql (no statement cache)" composes as the very first
    # call on a machine does (RECSQL_CACHE_DIR=off: recsql/statements.py)
    cold: dict[str, list[dict]] = {tool: [] for tool in COLD}
    for _ in range(args.cold):
        for tool, (name, env) in COLD.items():
            w = Worker(name, pythons[name], recs_path, truth_path, env)
            cold[tool].append({k: w.start[k] for k in ("import", "first", "second")})
            w.close()
    load_after = os.getloadavg()

    # agreement
    recsql_values, rectools_values = values["recsql"], values["rectools"]
    timed_diff, timed_users = _compare(recsql_values["timed"], rectools_values["timed"], [(m, m) for m in TIMED])
    default_diff, default_users = _compare(recsql_values["defaults"], rectools_values["defaults"],
                                           [("ndcg(ideal=k_slots)@10", "ndcg(ideal=k_slots)@10")])
    ok = timed_diff <= 1e-12 and timed_users and default_diff <= 1e-12 and default_users

    import pandas as pd
    recs, truth = read_frames(recs_path, truth_path)
    record = {
        "date": started.isoformat(timespec="seconds"),
        "recsql_commit": _commit(), "working_tree_modified": _dirty(),
        "machine": _machine(), "load_average_before": load_before, "load_average_after": load_after,
        "versions": versions,
        "data": {"recs_rows": len(recs), "truth_rows": len(truth), "users": int(recs["user_id"].nunique()),
                 "items": 1682, "models": sorted(recs["model"].unique().tolist()), "seed": SEED,
                 "recs_path": _relative(recs_path), "truth_path": _relative(truth_path)},
        "metrics": TIMED, "repeat": args.repeat, "cold_processes": args.cold,
        "warm_seconds": warm,
        "warm": {tool: {"best": min(t), "median": statistics.median(t)} for tool, t in warm.items()},
        "cold": cold,
        "cold_summary": {tool: {k: statistics.median(r[k] for r in runs) for k in ("import", "first", "second")}
                         for tool, runs in cold.items()},
        "values": values,
        "agreement": {"max_abs_diff_timed_metrics": timed_diff, "user_counts_match": timed_users,
                      "max_abs_diff_rectools_default_ndcg": default_diff, "ok": ok},
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "small.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (out / "small.md").write_text(markdown(record), encoding="utf-8")
    print(markdown(record))
    del pd
    return 0 if ok else 1


def markdown(r: dict) -> str:
    warm, cold = r["warm"], r["cold_summary"]
    v = r["versions"]
    ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
    lines = [
        "# Small data: recsql vs RecTools (MovieLens-100K shape)", "",
        f"- **Date**: {r['date']}; recsql commit `{r['recsql_commit']}`"
        + (" (with uncommitted changes)" if r["working_tree_modified"] else ""),
        f"- **Machine**: {r['machine']['cpu']}, {r['machine']['logical_cpus']} logical CPUs, "
        f"{r['machine']['memory_mb']} MB, {r['machine']['platform']}",
        f"- **Load average** (1, 5, 15 min) before {tuple(round(x, 2) for x in r['load_average_before'])}, "
        f"after {tuple(round(x, 2) for x in r['load_average_after'])} (the machine is shared: other work slows every tool)",
        f"- **recsql**: Python {v['recsql']['python']}, duckdb {v['recsql']['duckdb']}, sqlglot {v['recsql']['sqlglot']}, "
        f"pandas {v['recsql']['pandas']}, numpy {v['recsql']['numpy']}, pyarrow {v['recsql']['pyarrow']}",
        f"- **RecTools**: rectools {v['rectools']['rectools']}, Python {v['rectools']['python']}, pandas "
        f"{v['rectools']['pandas']}, numpy {v['rectools']['numpy']} (its own environment)",
        f"- **Data**: {r['data']['recs_rows']:,} recommendation rows ({len(r['data']['models'])} models × "
        f"{r['data']['users']} users × top 25), {r['data']['truth_rows']:,} truth rows, {r['data']['items']} items, "
        f"seed {r['data']['seed']}",
        f"- **Metrics** (@10, the definitions both tools share): {', '.join(r['metrics'])}", "",
        f"## Warm (same process, {r['repeat']} interleaved repeats after one untimed call)", "",
        "| tool | best | median | median ÷ recsql median |", "|---|---:|---:|---:|",
    ]
    for tool, t in warm.items():
        lines.append(f"| {tool} | {ms(t['best'])} | {ms(t['median'])} | {t['median'] / warm['recsql']['median']:.2f} |")
    lines += ["", f"## Cold (fresh process, median of {r['cold_processes']})", "",
              "| tool | import | first call | second call | first − second |", "|---|---:|---:|---:|---:|"]
    for tool, c in cold.items():
        lines.append(f"| {tool} | {ms(c['import'])} | {ms(c['first'])} | {ms(c['second'])} | {ms(c['first'] - c['second'])} |")
    a = r["agreement"]
    lines += ["", "## Agreement", "",
              f"- the six shared metrics, every model: max |recsql − RecTools| = {a['max_abs_diff_timed_metrics']:.2e}, "
              f"user counts match: {a['user_counts_match']}",
              f"- RecTools' default `NDCG(10)` against recsql `ndcg(ideal=k_slots)@10`: max |diff| = "
              f"{a['max_abs_diff_rectools_default_ndcg']:.2e}", "",
              "| model | " + " | ".join(r["metrics"]) + " |", "|---|" + "---:|" * len(r["metrics"])]
    for model, values in r["values"]["recsql"]["timed"].items():
        lines.append(f"| {model} | " + " | ".join(f"{values[m]:.6f}" for m in r["metrics"]) + " |")
    d = r["values"]["recsql"]["defaults"]
    rt = r["values"]["rectools"]["defaults"]
    lines += ["", "Defaults that differ (recsql default / RecTools default):", "",
              "| model | recsql `ndcg@10` | RecTools `NDCG(10)` (= recsql `ndcg(ideal=k_slots)@10`) | recsql `map@10` (÷ min(10, R)) | RecTools `MAP(10)` (÷ R) |",
              "|---|---:|---:|---:|---:|"]
    for model in d:
        lines.append(f"| {model} | {d[model]['ndcg@10']:.6f} | {rt[model]['ndcg(ideal=k_slots)@10']:.6f} | "
                     f"{d[model]['map@10']:.6f} | {r['values']['rectools']['timed'][model]['map(denominator=relevant)@10']:.6f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
