"""``recsql --version`` and ``recsql metrics``, cold: a fresh process each, as a user types them.

    python benchmarks/cold_start.py                 # 9 processes per command
    python benchmarks/cold_start.py --repeat 21

Each repeat is a new interpreter (``python -m recsql ...``, the console command's entry point, with
this checkout first on ``PYTHONPATH``) timed from outside, wall clock and CPU (user + system), with
``python -c pass`` beside it: the interpreter's own start (and the site packages' ``.pth`` files),
which no change to recsql can remove. The commands are interleaved, so load falls on all of them
alike. One more process per command runs with ``python -X importtime``: the modules that cost most
(cumulative microseconds, top 8) are written beside the times, so a regression names its import.
What these commands may import is a test (tests/test_cli_imports.py); their times are measured here.

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
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from report import commit  # noqa: E402

COMMANDS = {"python -c pass": ["-c", "pass"], "recsql --version": ["-m", "recsql", "--version"],
            "recsql metrics": ["-m", "recsql", "metrics"]}


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "", "PYTHONWARNINGS": "ignore"}


def run_once(args: list[str]) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=REPO, env=env(), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": wall, "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def top_imports(args: list[str], count: int = 8) -> list[list]:
    """The ``count`` modules of largest cumulative import time (µs) in one ``-X importtime`` process."""
    ran = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=REPO, env=env(), capture_output=True,
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
    rows = "\n".join(f"| `{name}` | {s['wall_median'] * 1000:.0f} ms | {s['wall_best'] * 1000:.0f} ms | "
                     f"{s['cpu_median'] * 1000:.0f} ms | {s['repeats']} |" for name, s in result["commands"].items())
    imports = "\n".join(f"- `{name}`: " + ", ".join(f"{module} {us / 1000:.0f} ms" for module, us in top)
                        for name, top in result["top_imports"].items())
    return f"""# `recsql --version` and `recsql metrics`, cold

- **Date**: {result['date']}; recsql commit `{result['commit']}`
- **Machine**: {result['machine']}
- **Load average** (1, 5, 15 min) before {tuple(result['load_before'])}, after {tuple(result['load_after'])} (the
  machine is shared: other work slows every repeat; CPU time is the steadier figure)
- **Versions**: {', '.join(f'{k} {v}' for k, v in result['versions'].items())}
- Each repeat a fresh process, `python -m recsql ...` (the console command's entry point), interleaved;
  `python -c pass` is the interpreter's own start.

| command | wall, median | wall, best | CPU, median | repeats |
|---|---:|---:|---:|---:|
{rows}

Largest imports (cumulative, one `python -X importtime` process each):

{imports}

Made by `python benchmarks/cold_start.py` (benchmarks/README.md).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=9, help="fresh processes per command")
    parser.add_argument("--out", default=str(HERE / "results"), help="the folder of cold_start.md and .json")
    args = parser.parse_args(argv)
    load_before, measured = os.getloadavg(), commit()
    for command in COMMANDS.values():  # the bytecode written once, as after an install
        run_once(command)
    runs: dict[str, list[dict]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, command in COMMANDS.items():
            runs[name].append(run_once(command))
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": measured,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        "load_before": [round(v, 2) for v in load_before], "load_after": [round(v, 2) for v in os.getloadavg()],
        "versions": versions(),
        "commands": {name: {"wall_median": round(statistics.median(r["wall"] for r in rs), 4),
                            "wall_best": round(min(r["wall"] for r in rs), 4),
                            "cpu_median": round(statistics.median(r["cpu"] for r in rs), 4),
                            "repeats": len(rs), "runs": rs} for name, rs in runs.items()},
        "top_imports": {name: top_imports(command) for name, command in COMMANDS.items() if name.startswith("recsql")},
    }
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cold_start.json").write_text(json.dumps(result, indent=2) + "\n")
    (folder / "cold_start.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
