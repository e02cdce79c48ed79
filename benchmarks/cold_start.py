"""The interactive commands, cold: ``recsql --version``, ``recsql metrics``, ``recsql sql``, and
``recsql evaluate`` and ``recsql compare`` on the fixture, a fresh process each, as a user types them.

    python benchmarks/cold_start.py                     # 9 processes per command
    python benchmarks/cold_start.py --repeat 21
    python benchmarks/cold_start.py --baseline efb244d  # and a baseline commit's, alternated

Each repeat is a new interpreter (``python -m recsql ...``, the console command's entry point, with
this checkout first on ``PYTHONPATH``) timed from outside, wall clock and CPU (user + system), with
``python -c pass`` beside it: the interpreter's own start (and the site packages' ``.pth`` files),
which no change to recsql can remove. The commands are interleaved, so load falls on all of them
alike. One more process per command runs with ``python -X importtime``: the modules that cost most
(cumulative microseconds, top 8) are written beside the times, so a regression names its import.
What these commands may import is a test (tests/test_cli_imports.py); their times are measured here.
The evaluation's statement is on disk (a statement cache of this run's own, written by the first,
untimed process), as on every call after a user's first. With ``--baseline REF`` the repository at
``REF`` (``git archive``) runs each command too, alternated with this checkout, with the same
interpreter and packages.

Results: ``benchmarks/results/cold_start.md`` and ``cold_start.json`` (date, commit, machine, load
average before and after, versions).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from compose import checkout  # noqa: E402
from report import commit  # noqa: E402

FIXTURE = ["fixtures/data/recs.parquet", "fixtures/data/truth.parquet"]
COMMANDS = {"python -c pass": ["-c", "pass"], "recsql --version": ["-m", "recsql", "--version"],
            "recsql metrics": ["-m", "recsql", "metrics"],
            "recsql sql -m ndcg@10 -m map@10 --dialect postgres": ["-m", "recsql", "sql", "-m", "ndcg@10", "-m",
                                                                  "map@10", "--dialect", "postgres"],
            "recsql evaluate (the fixture, 2 metrics, 2 runs)": ["-m", "recsql", "evaluate", *FIXTURE, "-m", "ndcg@10",
                                                                 "-m", "map@10", "--run-col", "model"],
            "recsql compare (the fixture, 2 metrics, 2 runs)": ["-m", "recsql", "compare", *FIXTURE, "-m", "ndcg@10",
                                                                "-m", "recall@20", "--run-col", "model", "--baseline",
                                                                "popular"]}


def env(root: Path, cache: Path) -> dict[str, str]:
    """The commands' environment: ``root`` first on the path, and ``cache`` the statement cache of the run."""
    return {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "", "PYTHONWARNINGS": "ignore",
            "RECSQL_CACHE_DIR": str(cache)}


def run_once(args: list[str], root: Path, cache: Path) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=root, env=env(root, cache), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def top_imports(args: list[str], cache: Path, count: int = 8) -> list[list]:
    """The ``count`` modules of largest cumulative import time (µs) in one ``-X importtime`` process."""
    ran = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=REPO, env=env(REPO, cache), capture_output=True,
                         text=True, check=True)
    rows = []
    for line in ran.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append([name.strip(), int(cumulative)])
    return sorted(rows, key=lambda r: -r[1])[:count]


def versions() -> dict[str, str]:
    return {"python": platform.python_version()}


def markdown(result: dict) -> str:
    labels = list(result["runs"])
    header = " | ".join(f"{label}: wall, median | best | CPU, median" for label in labels)
    rows = []
    for name in COMMANDS:
        cells = []
        for label in labels:
            s = result["runs"][label][name]
            cells.append(f"{s['wall_median'] * 1000:.0f} ms | {s['wall_best'] * 1000:.0f} ms | {s['cpu_median'] * 1000:.0f} ms")
        rows.append(f"| `{name}` | " + " | ".join(cells) + f" | {result['repeat']} |")
    imports = "\n".join(f"- `{name}`: " + ", ".join(f"{module} {us / 1000:.0f} ms" for module, us in top)
                        for name, top in result["top_imports"].items())
    baseline = (f" and at the baseline `{result['baseline']}` (a `git archive` of it, the same interpreter and "
                "packages), alternated with it" if result.get("baseline") else "")
    return f"""# The interactive commands, cold

- **Date**: {result['date']}; recsql commit `{result['commit']}`{baseline}
- **Machine**: {result['machine']}
- **Load average** (1, 5, 15 min) before {tuple(result['load_before'])}, after {tuple(result['load_after'])} (the
  machine is shared: other work slows every repeat; CPU time is the steadier figure)
- **Versions**: {', '.join(f'{k} {v}' for k, v in result['versions'].items())}
- Each repeat a fresh process, `python -m recsql ...` (the console command's entry point), interleaved;
  `python -c pass` is the interpreter's own start. The evaluation's statement is in the run's statement
  cache (written by an untimed first process), as on every call after a user's first.

| command | {header} | repeats |
|---|{"---:|---:|---:|" * len(labels)}---:|
{chr(10).join(rows)}

Largest imports at `{result['commit']}` (cumulative, one `python -X importtime` process each):

{imports}

Made by `python benchmarks/cold_start.py{' --baseline ' + result['baseline'] if result.get('baseline') else ''}` (benchmarks/README.md).
"""


def summary(runs: list[dict]) -> dict:
    return {"wall_median": round(statistics.median(r["wall"] for r in runs), 4),
            "wall_best": round(min(r["wall"] for r in runs), 4),
            "cpu_median": round(statistics.median(r["cpu"] for r in runs), 4), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9, help="fresh processes per command")
    parser.add_argument("--baseline", help="a commit to run alternately with this checkout (default: none)")
    parser.add_argument("--out", default=str(HERE / "results"), help="the folder of cold_start.md and .json")
    args = parser.parse_args(argv)
    load_before, measured = os.getloadavg(), commit()
    short = None
    with tempfile.TemporaryDirectory(prefix="recsql-cold-") as tmp:
        cache = Path(tmp) / "statements"  # the run's statement cache, removed with it
        roots = {f"this checkout ({measured})": REPO}
        if args.baseline:
            short = subprocess.run(["git", "rev-parse", "--short", args.baseline], cwd=REPO, capture_output=True,
                                   text=True, check=True).stdout.strip()
            roots[f"baseline {short}"] = checkout(args.baseline, Path(tmp) / "baseline")
        for root in roots.values():  # the bytecode written once, as after an install; the statement cached
            for command in COMMANDS.values():
                run_once(command, root, cache)
        runs: dict[str, dict[str, list[dict]]] = {label: {name: [] for name in COMMANDS} for label in roots}
        for _ in range(args.repeat):
            for name, command in COMMANDS.items():
                for label, root in roots.items():
                    runs[label][name].append(run_once(command, root, cache))
        imports = {name: top_imports(command, cache) for name, command in COMMANDS.items() if "recsql" in name}
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": measured,
        "baseline": short,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        "load_before": [round(v, 2) for v in load_before], "load_after": [round(v, 2) for v in os.getloadavg()],
        "versions": versions(), "repeat": args.repeat,
        "runs": {label: {name: summary(rs) for name, rs in by_name.items()} for label, by_name in runs.items()},
        "top_imports": imports,
    }
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cold_start.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / "cold_start.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
