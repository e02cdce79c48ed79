"""Composing statements: ``recsql dbt generate`` on the integration project, and ``recsql.to_sql`` for
a set of metric lists, each in fresh processes with the statement cache off, at this checkout and at
a baseline commit, interleaved in one run.

    python benchmarks/compose.py                       # against HEAD~1, 3 repeats
    python benchmarks/compose.py --baseline 79fa5c9 --repeat 5

Composing is Python work (sqlglot trees rewritten, then rendered per dialect), paid once per
statement: by the first call of an evaluation in a process (the statement cache on disk then keeps
it), by every test that asks for a new statement, and by ``recsql dbt generate`` for every model and
adapter. The baseline is the same repository at another commit (``git archive``), run with the same
interpreter and packages; the two are alternated, so load falls on both alike. Each figure is the
best of the repeats, wall clock and CPU (user + system of the child process).

- ``dbt generate``: ``python -m recsql dbt generate --project <copy of dbt/integration_tests>``, the
  models written into an empty folder (34 evaluations, 10 adapters each).
- ``to_sql``: one process composes and renders every list of :data:`LISTS` for DuckDB and for
  PostgreSQL (``RECSQL_CACHE_DIR=off``), after one warm-up list, so the figure is composition, not
  imports.

Results: ``benchmarks/results/compose.md`` and ``compose.json`` (date, commits, machine, load).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from report import commit  # noqa: E402

LISTS = [  # what people ask for: accuracy at one cutoff, several cutoffs, beyond accuracy, global, logs
    ["ndcg@10", "map@10", "recall@10", "precision@10", "mrr@10", "hit_rate@10"],
    ["ndcg@5", "ndcg@10", "ndcg@20", "recall@20", "map@100"],
    ["coverage@10", "gini@10", "personalization@10", "ndcg@10"],
    ["err@10", "rbp", "bpref", "r_precision", "auc"],
    ["ips", "snips", "ess"],
]

TO_SQL = """
import sys, time
import recsql
lists = {lists!r}
recsql.to_sql(metrics=["ndcg@3"], dialect="duckdb")  # imports and the first templates read
start = time.process_time()
for metrics in lists:
    for dialect in ("duckdb", "postgres"):
        recsql.to_sql(metrics=metrics, dialect=dialect, **({{"logs": "logs"}} if "ips" in metrics else {{}}))
print(time.process_time() - start)
"""


def _timed(argv: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed in {cwd}:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def checkout(ref: str, into: Path) -> Path:
    """The repository's files at ``ref``, unpacked into ``into``."""
    archive = subprocess.run(["git", "archive", "--format=tar", ref], cwd=REPO, capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(into, filter="data")
    return into


def _measure(root: Path, work: Path) -> dict[str, tuple[float, float]]:
    env = {**os.environ, "PYTHONPATH": str(root), "RECSQL_CACHE_DIR": "off"}
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(root / "dbt" / "integration_tests", project,
                    ignore=shutil.ignore_patterns("target", "dbt_packages", "logs"))
    shutil.rmtree(project / "models" / "recsql", ignore_errors=True)
    generate = _timed([sys.executable, "-m", "recsql", "dbt", "generate", "--project", str(project)], root, env)
    script = TO_SQL.format(lists=LISTS)
    wall, cpu, out = _timed([sys.executable, "-c", script], root, env)
    return {"dbt generate": generate[:2], "to_sql": (float(out.strip()), float(out.strip()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="recsql-compose-") as tmp:
        tmp = Path(tmp)
        roots = {"this checkout": REPO, f"baseline {args.baseline}": checkout(args.baseline, tmp / "baseline")}
        runs: dict[str, list[dict]] = {name: [] for name in roots}
        for _ in range(args.repeat):
            for name, root in roots.items():
                runs[name].append(_measure(root, tmp / name.replace(" ", "_")))
    load_after = os.getloadavg()
    best = {name: {what: (min(r[what][0] for r in rs), min(r[what][1] for r in rs)) for what in rs[0]}
            for name, rs in runs.items()}
    baseline_commit = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=REPO, capture_output=True,
                                     text=True, check=True).stdout.strip()
    record = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit(),
              "baseline": baseline_commit, "machine": f"{platform.machine()}, {os.cpu_count()} cores",
              "python": platform.python_version(), "load_before": load_before, "load_after": load_after,
              "repeat": args.repeat, "lists": LISTS, "best": best}
    args.out.mkdir(exist_ok=True)
    (args.out / "compose.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [f"# Composing statements ({record['date']})", "",
             f"`python benchmarks/compose.py --baseline {args.baseline} --repeat {args.repeat}` at {record['commit']} "
             f"against {baseline_commit}, alternated in one run; {record['machine']}, Python {record['python']}, "
             f"load {load_before[0]:.1f} before and {load_after[0]:.1f} after; best of {args.repeat}, the statement "
             "cache off.", "",
             "| | " + " | ".join(best) + " |", "|---|" + "---:|" * len(best)]
    for what, unit in (("dbt generate", "wall / CPU"), ("to_sql", "CPU")):
        cells = [f"{b[what][0]:.2f} s / {b[what][1]:.2f} s" if what == "dbt generate" else f"{b[what][1]:.2f} s"
                 for b in best.values()]
        label = ("`recsql dbt generate` of dbt/integration_tests (34 models × 10 adapters), " + unit
                 if what == "dbt generate" else f"`to_sql` of {len(LISTS)} metric lists × 2 dialects, {unit}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    (args.out / "compose.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
