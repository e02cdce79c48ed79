"""``recsql report`` on the repository's fixture, cold, as a user runs it.

    python benchmarks/report.py                 # 5 cold processes with the statement cache warm, 3 with it empty
    python benchmarks/report.py --repeat 9 --empty 5
    python benchmarks/report.py --repeat 9 --empty 3 --in-process 7   # and build_report in one process

The command is the report example of the README and docs/guide/report.md, on ``fixtures/data`` (11,480
recommendation rows, two runs, four metrics: ndcg@10, recall@20, hit_rate@5, coverage@10; 1,000
resamples), with the ``users.parquet`` that example writes (each user of truth with a cohort by the
number of relevant items):

    recsql report fixtures/data/recs.parquet fixtures/data/truth.parquet -m ndcg@10 -m recall@20 \\
        -m hit_rate@5 -m coverage@10 --run-col model --baseline popular --segments users.parquet \\
        --segment-col cohort --out report.html

Each repeat is a fresh process (``python -m recsql report ...``, the interpreter's start and every import
included, with Python's bytecode on disk as in an installed package) timed from outside, wall clock and CPU (user + system, of the process and its children).
recsql keeps the statements it composes on disk (recsql/statements.py), so two cases are timed:

- **cache warm**: a user's second and later reports (the statements of an earlier run on disk; one untimed
  run fills a private cache folder first);
- **cache empty**: the very first report on a machine, or after any change of recsql's sources, its
  templates or sqlglot (a new empty cache folder per repeat).

The machine is shared, so the load average before and after is written beside the times; CPU time is the
steadier figure under load. Results: ``benchmarks/results/report.md`` and ``report.json`` (date, commit,
command, machine, versions), with the number of distinct pages the repeats wrote (SHA-256 of each, the
names under which frames are registered, drawn per process, left out).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
METRICS = ("ndcg@10", "recall@20", "hit_rate@5", "coverage@10")


def write_users(path: Path) -> None:
    """The README's users.parquet: each user of truth with a cohort by its number of relevant items."""
    import numpy as np
    import pandas as pd
    truth = pd.read_parquet(REPO / "fixtures" / "data" / "truth.parquet")
    relevant = truth.assign(hit=truth["relevance"] >= 1).groupby("user_id")["hit"].sum()
    cohort = np.where(relevant <= 3, "light", np.where(relevant <= 6, "medium", "heavy"))
    pd.DataFrame({"user_id": relevant.index, "cohort": cohort}).to_parquet(path, index=False)


def command(users: Path, out: Path) -> list[str]:
    metrics = [flag for m in METRICS for flag in ("-m", m)]
    return [sys.executable, "-m", "recsql", "report", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet",
            *metrics, "--run-col", "model", "--baseline", "popular", "--segments", str(users), "--segment-col",
            "cohort", "--out", str(out), "--quiet"]


def environment(cache: Path) -> dict[str, str]:
    """The processes' environment: the repository first on the path, ``cache`` the statement cache, and Python's
    bytecode written and read (``__pycache__``, as an installed package has it: pip compiles it at install), also
    where the machine sets PYTHONDONTWRITEBYTECODE (compiling recsql's sources again in every process costs about
    0.15 s here); the untimed first run writes it."""
    return {**os.environ, "RECSQL_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": ""}


def run_once(argv: list[str], cache: Path, out: Path, keep: Path | None = None) -> dict[str, float | str]:
    """One cold process: wall and CPU seconds, and the page's SHA-256 (``keep``: a folder to copy each
    distinct page into, named by its digest)."""
    env = environment(cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # the name DuckDB registers a frame under is drawn per process; it shows in the SQL on the page
    page = re.sub(rb"__recsql_[a-z_]+_[0-9a-f]{12}", b"__recsql_frame", out.read_bytes())
    digest = hashlib.sha256(page).hexdigest()
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{digest[:16]}.html").write_bytes(out.read_bytes())
    return {"wall": wall, "cpu": cpu, "page": digest}


IN_PROCESS = """
import json, statistics, sys, time
import recsql.report.build as build
side_by_side = build.side_by_side
in_turn = lambda first, second, concurrent: side_by_side(first, second, False)
metrics = {metrics!r}
def once(turns):
    build.side_by_side = in_turn if turns else side_by_side
    started = time.perf_counter()
    build.build_report("fixtures/data/recs.parquet", "fixtures/data/truth.parquet", metrics, run_cols="model",
                       baseline="popular", segments={users!r}, segment_cols=["cohort"])
    return time.perf_counter() - started
once(False), once(True)  # the statements composed, the imports made
times = {{"side by side": [], "in turn": []}}
for _ in range({pairs}):
    times["side by side"].append(once(False))
    times["in turn"].append(once(True))
print(json.dumps(times))
"""


def in_process(users: Path, pairs: int, cache: Path) -> dict[str, dict]:
    """``pairs`` alternated calls of ``build_report`` in one process (imports and composition before the
    clock): the comparisons side by side (the default without ``con=``) and in turn
    (``recsql.report.build.side_by_side`` told not to run them concurrently)."""
    code = IN_PROCESS.format(metrics=list(METRICS), users=str(users), pairs=pairs)
    env = environment(cache)
    ran = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, text=True)
    times = json.loads(ran.stdout.strip().splitlines()[-1])
    return {case: {"median": round(statistics.median(t), 3), "best": round(min(t), 3), "pairs": pairs,
                   "seconds": [round(x, 3) for x in t]} for case, t in times.items()}


def summary(runs: list[dict]) -> dict[str, float]:
    return {f"{what}_{stat}": round(fn([r[what] for r in runs]), 3)
            for what in ("wall", "cpu") for stat, fn in (("median", statistics.median), ("best", min))}


def versions() -> dict[str, str]:
    from importlib.metadata import version
    return {"python": platform.python_version(), **{p: version(p) for p in ("duckdb", "sqlglot", "pandas", "numpy",
                                                                          "scipy")}}


def commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip()
    return found.stdout.strip() + (" (uncommitted changes)" if dirty else "")


def publish(folder: Path, name: str, result: dict, text: str) -> int:
    """Write ``result`` as ``<name>.json`` and ``text`` as ``<name>.md`` in ``folder``, print the text; 0."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / f"{name}.md").write_text(text)
    print(text)
    return 0


def provenance(measured: str, load_before: tuple, versions: dict[str, str]) -> dict:
    """A result's date (now, UTC), commit, machine, load average before (given) and after (now) and versions."""
    from datetime import datetime, timezone
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": measured,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        "load_before": [round(v, 2) for v in load_before], "load_after": [round(v, 2) for v in os.getloadavg()],
        "versions": versions,
    }


def markdown(result: dict) -> str:
    rows = "\n".join(f"| {case} | {s['wall_median']:.2f} s | {s['wall_best']:.2f} s | {s['cpu_median']:.2f} s | "
                     f"{s['cpu_best']:.2f} s | {s['repeats']} |" for case, s in result["cases"].items())
    return f"""# `recsql report` on the fixture, cold

- **Date**: {result['date']}; recsql commit `{result['commit']}`
- **Command** (from the repository's root): `{result['command']}`
- **Machine**: {result['machine']}
- **Load average** (1, 5, 15 min) before {tuple(result['load_before'])}, after {tuple(result['load_after'])} (the
  machine is shared: other work slows every repeat; CPU time is the steadier figure)
- **Versions**: {', '.join(f'{k} {v}' for k, v in result['versions'].items())}
- Each repeat a fresh process (interpreter start and imports included, Python's bytecode written by the untimed
  first run, as pip writes it at install); {result['pages']} distinct page(s)
  written (one expected: the page holds every number to the last bit, and recsql sums with FSUM/FAVG
  so that the threads' order does not move them).

| statement cache | wall, median | wall, best | CPU, median | CPU, best | repeats |
|---|---:|---:|---:|---:|---:|
{rows}
{_in_process_table(result.get("in_process"))}
Made by `python benchmarks/report.py` (benchmarks/README.md).
"""


def _in_process_table(found: dict | None) -> str:
    if not found:
        return ""
    rows = "\n".join(f"| {case} | {t['median']:.2f} s | {t['best']:.2f} s | {t['pairs']} |" for case, t in found.items())
    return ("\nIn one process (`--in-process`), `build_report` alone, alternated (the imports and the statements' "
            "composition before the clock):\n\n| the two comparisons | median | best | calls |\n|---|---:|---:|---:|\n"
            f"{rows}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="cold processes with the statement cache warm")
    parser.add_argument("--empty", type=int, default=3, help="cold processes with an empty statement cache")
    parser.add_argument("--out", default=str(HERE / "results"), help="the folder of report.md and report.json")
    parser.add_argument("--keep", default=None, help="a folder to copy each distinct page into")
    parser.add_argument("--in-process", type=int, default=0, metavar="N",
                        help="also N alternated build_report calls in one process, the comparisons side by side "
                             "and in turn")
    args = parser.parse_args(argv)
    load_before, measured = os.getloadavg(), commit()
    keep = Path(args.keep) if args.keep else None
    with tempfile.TemporaryDirectory(prefix="recsql-report-bench-") as tmp:
        work = Path(tmp)
        users, out = work / "users.parquet", work / "report.html"
        write_users(users)
        argv_ = command(users, out)
        warm_cache = work / "cache-warm"
        subprocess.run(argv_, cwd=REPO, env=environment(warm_cache), check=True, capture_output=True)
        cases: dict[str, list[dict]] = {"warm": [], "empty": []}
        for i in range(max(args.repeat, args.empty)):  # interleaved, so load falls on both alike
            if i < args.repeat:
                cases["warm"].append(run_once(argv_, warm_cache, out, keep))
            if i < args.empty:
                empty = work / f"cache-empty-{i}"
                cases["empty"].append(run_once(argv_, empty, out, keep))
                shutil.rmtree(empty, ignore_errors=True)
        built = in_process(users, args.in_process, warm_cache) if args.in_process else None
    pages = {r["page"] for runs in cases.values() for r in runs}
    shown = " ".join(a if " " not in a else repr(a) for a in ["recsql", *argv_[3:]])
    shown = shown.replace(str(users), "users.parquet").replace(str(out), "report.html")
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": measured, "command": shown,
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
                         f"{platform.platform()}",
              "load_before": [round(v, 2) for v in load_before], "load_after": [round(v, 2) for v in os.getloadavg()],
              "versions": versions(), "pages": len(pages),
              "cases": {f"{'warm' if case == 'warm' else 'empty'}": {**summary(runs), "repeats": len(runs),
                                                                   "runs": runs}
                        for case, runs in cases.items() if runs},
              **({"in_process": built} if built else {})}
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / "report.md").write_text(markdown(result))
    print(markdown(result))
    if len(pages) != 1:  # the page holds every number to the last bit: two pages mean a sum that moved
        print(f"benchmarks/report.py: the repeats wrote {len(pages)} different pages", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
