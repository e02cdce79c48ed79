"""End-to-end benchmark: recsql against ranx, pytrec_eval, pandas and Spark MLlib, from Parquet files.

    python benchmarks/run.py --rows 1M,10M[,100M] [--tools recsql,ranx,pytrec_eval,pandas,spark]
                             [--out benchmarks/results]

For each size: generate (or reuse) synthetic data under benchmarks/data/ (benchmarks/datagen.py),
then run every tool in its own process (benchmarks/tools.py) on the same two files, one after the
other, measuring wall time from files to a result table and the process tree's peak RSS, and check
that every tool gives recsql's numbers (means and user by user). Writes results.md, results.json
and time_vs_rows.png to --out. Details: benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
from tools import MLLIB, METRICS_REFERENCE, METRICS_TREC  # noqa: E402

ALL_TOOLS = ["recsql", "floor", "ranx", "pytrec_eval", "pandas", "spark-recsql", "spark-mllib"]
GROUPS = {"spark": ["spark-recsql", "spark-mllib"], "all": ALL_TOOLS}
LABELS = {"recsql": "recsql (DuckDB)", "floor": "DuckDB floor (top-10 only)", "ranx": "ranx",
          "pytrec_eval": "pytrec_eval", "pandas": "pandas (seed style)", "spark-recsql": "recsql (Spark local)",
          "spark-mllib": "Spark MLlib RankingMetrics"}
TOLERANCE = 1e-9
POLL_SECONDS = 0.1


# ------------------------------------------------------------------------------------ machine
def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def machine_info() -> dict:
    cpuinfo = _read("/proc/cpuinfo")
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                 platform.processor() or "?")
    meminfo = {line.split(":")[0]: line.split(":")[1].strip() for line in _read("/proc/meminfo").splitlines() if ":" in line}
    mem_kb = int(meminfo.get("MemTotal", "0 kB").split()[0])
    os_name = next((line.split("=", 1)[1].strip('"') for line in _read("/etc/os-release").splitlines()
                    if line.startswith("PRETTY_NAME=")), platform.system())
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        java = "not found"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "recsql", "sql"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        commit += " (recsql/ or sql/ modified)" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model, "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "ram_gb": round(mem_kb / 1024 / 1024, 1),
        "os": f"{os_name}, kernel {platform.release()}",
        "python": platform.python_version(),
        "java": java,
        "recsql_commit": commit,
        "packages": {name: _version(name) for name in
                     ("recsql-eval", "duckdb", "sqlglot", "pandas", "numpy", "pyarrow", "ranx", "numba",
                      "pytrec-eval-terrier", "pyspark", "psutil", "matplotlib")},
        "loadavg_start": _read("/proc/loadavg").split()[:3],
    }


# ------------------------------------------------------------------------------------- running
def _tree_rss(proc) -> int:
    import psutil
    total = 0
    try:
        procs = [proc] + proc.children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_tool(tool: str, recs: Path, truth: Path, work: Path, args, repeat: int = 0) -> dict:
    """Run one tool in a fresh process; poll the process tree's RSS until the tool marks the end
    of its timed part; enforce --timeout and --mem-limit-mb by killing the process group. Each
    repeat writes its own files, so a later repeat killed midway leaves the best one's intact."""
    stem = f"{tool}.{repeat}"
    result, per_user = work / f"{stem}.json", work / f"{stem}.per_user.parquet"
    per_user.unlink(missing_ok=True)
    cmd = [sys.executable, str(HERE / "tools.py"), tool, "--recs", str(recs), "--truth", str(truth),
           "--result", str(result), "--per-user", str(per_user),
           "--spark-driver-memory", args.spark_driver_memory,
           *(["--duckdb-memory-limit", args.duckdb_memory_limit] if args.duckdb_memory_limit else []),
           "--spark-shuffle-partitions", str(args.spark_shuffle_partitions)]
    out = run_worker(cmd, tool, result, work / f"{stem}.log", work, args, warm=(recs, truth))
    if out["status"] == "ok":
        out["per_user_file"] = str(per_user) if per_user.exists() else None
    return out


def run_worker(cmd: list[str], tool: str, result: Path, log: Path, work: Path, args, warm=(), env=None) -> dict:
    """Run one worker process (``cmd``, which writes its JSON to ``result`` and touches ``result.timed`` at
    the end of its timed part), with ``warm`` files read into the page cache first; poll its process tree's
    RSS until that mark; enforce --timeout, --mem-limit-mb and --min-free-mb by killing its process group.
    Returns the worker's JSON plus ``status``, ``process_s``, ``log`` and the peak RSS. ``env``: the
    worker's environment (default: this one, with the checkout first on PYTHONPATH)."""
    import psutil
    marker = Path(str(result) + ".timed")
    for f in (result, marker):
        f.unlink(missing_ok=True)
    if env is None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
                   PYTHONWARNINGS="ignore")
    _warm_page_cache(*warm)
    started = time.perf_counter()
    with open(log, "w") as log_f:
        popen = subprocess.Popen(cmd, stdout=log_f, stderr=subprocess.STDOUT, env=env, cwd=str(work),
                                 start_new_session=True)
    proc = psutil.Process(popen.pid)
    peak, status, timed_peak = 0, "ok", None
    limit = args.mem_limit_mb * 1024 * 1024
    while popen.poll() is None:
        rss = _tree_rss(proc)
        peak = max(peak, rss)
        if timed_peak is None and marker.exists():
            timed_peak = peak
        if rss > limit:
            status = f"killed: process tree over --mem-limit-mb {args.mem_limit_mb}"
        elif psutil.virtual_memory().available < args.min_free_mb * 1024 * 1024:
            status = f"killed: machine's available memory under --min-free-mb {args.min_free_mb}"
        elif time.perf_counter() - started > args.timeout:
            status = f"killed: over --timeout {args.timeout} s"
        if status != "ok":
            os.killpg(popen.pid, signal.SIGKILL)  # the worker's own session: it and its JVM
            popen.wait()
            break
        time.sleep(POLL_SECONDS)
    elapsed = time.perf_counter() - started
    if timed_peak is None and marker.exists():
        timed_peak = peak
    out: dict = {"tool": tool, "process_s": round(elapsed, 3), "log": str(log)}
    if status == "ok" and popen.returncode != 0:
        # the exception's last line (its message), with this checkout's paths relative to it
        last = (log.read_text(errors="replace").strip().splitlines() or [""])[-1]
        status = f"error: exit {popen.returncode}: " + last.replace(f"{REPO}{os.sep}", "")[:600]
    if status == "ok":
        out.update(json.loads(result.read_text()))
        polled_mb = (timed_peak if timed_peak is not None else peak) / 1024 / 1024
        out["polled_peak_rss_mb"] = round(polled_mb, 1)
        out["peak_rss_mb"] = round(max(polled_mb, out.get("self_peak_rss_timed_mb", 0)), 1)
    out["status"] = status
    return out


def _warm_page_cache(*files: Path) -> None:
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


# ---------------------------------------------------------------------------------- agreement
def agreement(res: dict, ref: dict, ref_per_user_path: str | None) -> None:
    """Compare a tool's means (and per-user values, when it has them) with recsql's reference."""
    diffs = {m: abs(v - ref["reference"][m]) for m, v in res.get("metrics", {}).items() if m in ref["reference"]}
    res["abs_diff"] = diffs
    res["max_abs_diff"] = max(diffs.values()) if diffs else None
    res["population_matches"] = res.get("n_users") == ref.get("n_users")
    pu = res.get("per_user_file")
    if pu and ref_per_user_path and res["tool"] != "recsql":
        import pandas as pd
        mine, theirs = pd.read_parquet(pu), pd.read_parquet(ref_per_user_path)
        joined = theirs.merge(mine, on="user_id", how="outer", suffixes=("_recsql", ""), indicator=True)
        res["per_user_users_only_in_one"] = int((joined["_merge"] != "both").sum())
        both = joined[joined["_merge"] == "both"]
        res["per_user_max_abs_diff"] = {m: float((both[m] - both[m + "_recsql"]).abs().max())
                                        for m in METRICS_TREC if m in mine.columns and m + "_recsql" in both.columns}
    worst = [res["max_abs_diff"] or 0.0] + list(res.get("per_user_max_abs_diff", {}).values())
    res["agrees"] = bool(res["population_matches"] and max(worst) <= TOLERANCE
                         and res.get("per_user_users_only_in_one", 0) == 0)


# ------------------------------------------------------------------------------------- output
def fmt_s(x) -> str:
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def fmt_e(x) -> str:
    if x is None:
        return "—"
    return "0" if x == 0 else f"{x:.0e}"


def write_markdown(data: dict, path: Path) -> None:
    m = data["machine"]
    lines = [
        "# recsql end-to-end benchmark",
        "",
        f"- **Date**: {m['date']} — command: `{data['command']}`",
        f"- **Machine**: {m['cpu']}, {m['usable_cpus']} usable of {m['logical_cpus']} logical CPUs, "
        f"{m['ram_gb']} GB RAM; load average at start {' '.join(m['loadavg_start'])}, at end "
        f"{' '.join(data.get('loadavg_end', ['?']))}",
        f"- **OS**: {m['os']}; **Python** {m['python']}; **Java**: {m['java']}",
        "- **Packages**: " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()) + f"; recsql commit {m['recsql_commit']}",
        f"- **Data**: {data['config']['data_note']}",
        f"- **Settings**: repeat {data['config']['repeat']} (best wall kept), Spark local[*] with driver memory "
        f"{data['config']['spark_driver_memory']} and {data['config']['spark_shuffle_partitions']} shuffle partitions, "
        f"Spark up to {datagen.label_rows(data['config']['spark_max_rows'])} rows, per-tool timeout "
        f"{data['config']['timeout']} s and memory limit {data['config']['mem_limit_mb']} MB",
        "",
        "Wall = files on disk → result table (build + evaluate). Setup (not in wall) = Spark start-up,"
        " ranx's numba JIT warm-up. Peak RSS = the tool's whole process tree (Python + JVM), sampled every"
        f" {POLL_SECONDS} s, and at least the worker process's own peak (VmHWM), up to the end of the timed part. Speed-up = tool wall ÷ recsql (DuckDB) wall."
        " Max |diff| = the largest difference from recsql over the tool's metrics (means, and user by user"
        " where the tool gives per-user values), each compared with the recsql metric of the same definition.",
        "",
        "| rows | tool | wall s | build s | evaluate s | setup s | peak RSS MB | speed-up vs recsql | max \\|diff\\| vs recsql |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in data["sizes"]:
        base = next((r for r in size["results"] if r["tool"] == "recsql" and r["status"] == "ok"), None)
        for r in size["results"]:
            label = LABELS.get(r["tool"], r["tool"])
            if r["status"] != "ok":
                lines.append(f"| {size['label']} | {label} | {r['status']} | | | | | | |")
                continue
            speed = f"{r['wall_s'] / base['wall_s']:.1f}×" if base and r["tool"] != "recsql" else "1×" if base else "—"
            if r["tool"] == "floor":
                speed = f"{r['wall_s'] / base['wall_s']:.2f}×" if base else "—"
            diff = "—" if r["tool"] == "floor" else "0 (reference)" if r["tool"] == "recsql" else (
                fmt_e(max([r.get("max_abs_diff") or 0.0] + list(r.get("per_user_max_abs_diff", {}).values())))
                + ("" if r.get("agrees") else " (tied scores)" if data["config"]["ties"] else " **(disagrees)**"))
            lines.append(f"| {size['label']} | {label} | {fmt_s(r.get('wall_s'))} | {fmt_s(r.get('build_s'))} | "
                         f"{fmt_s(r.get('evaluate_s'))} | {fmt_s(r.get('setup_s'))} | {r['peak_rss_mb']:.0f} | "
                         f"{speed} | {diff} |")
    lines += ["", "## Ratios", ""]
    for size in data["sizes"]:
        s = size.get("summary", {})
        parts = []
        if "recsql_over_floor" in s:
            parts.append(f"recsql ÷ DuckDB floor = {s['recsql_over_floor']:.1f}")
        for tool in ("ranx", "pytrec_eval", "pandas"):
            if f"{tool}_over_recsql" in s:
                parts.append(f"{LABELS[tool]} ÷ recsql = {s[f'{tool}_over_recsql']:.1f}")
        if "spark_mllib_over_spark_recsql" in s:
            parts.append(f"Spark MLlib ÷ recsql on Spark = {s['spark_mllib_over_spark_recsql']:.2f}")
        lines.append(f"- **{size['label']} rows**: " + "; ".join(parts))
    if any(size.get("skipped") for size in data["sizes"]):
        lines.append("")
        for size in data["sizes"]:
            for tool, why in size.get("skipped", {}).items():
                lines.append(f"- {size['label']}: {LABELS.get(tool, tool)} skipped ({why})")
    # agreement matrix
    cols = METRICS_TREC + [c for c in METRICS_REFERENCE if c not in METRICS_TREC]
    lines += ["", "## Agreement with recsql, per metric", "",
              "max |tool − recsql| of the mean; in parentheses the largest per-user difference where the tool"
              " gives per-user values. Every tool is compared with the recsql metric that has its definition:"
              " ranx and trec_eval with `map(denominator=relevant)@10`; Spark MLlib's `ndcgAt` with"
              " `ndcg(gain=binary,ideal=binary)@10` and its `meanAveragePrecisionAt` with recsql's default"
              " `map@10` (denominator min(k, R)). Blank: the tool has no such metric (MLlib has no MRR or hit"
              " rate).", "",
              "| rows | tool | n_users | " + " | ".join(f"`{c}`" for c in cols) + " |",
              "|---:|---|---:|" + "---:|" * len(cols)]
    for size in data["sizes"]:
        for r in size["results"]:
            if r["status"] != "ok" or r["tool"] in ("floor", "recsql"):
                continue
            cells = []
            for c in cols:
                if c not in r.get("abs_diff", {}):
                    cells.append("")
                    continue
                cell = fmt_e(r["abs_diff"][c])
                if c in r.get("per_user_max_abs_diff", {}):
                    cell += f" ({fmt_e(r['per_user_max_abs_diff'][c])})"
                cells.append(cell)
            pop = str(r.get("n_users")) + ("" if r.get("population_matches") else " ≠ recsql")
            lines.append(f"| {size['label']} | {LABELS.get(r['tool'], r['tool'])} | {pop} | " + " | ".join(cells) + " |")
    lines += ["", "## recsql's values (the reference)", "",
              "| rows | n_users | users without recs | recs users without truth | " + " | ".join(f"`{c}`" for c in cols)
              + " | rounded scores: max \\|diff\\| |", "|---:|---:|---:|---:|" + "---:|" * (len(cols) + 1)]
    for size in data["sizes"]:
        r = next((r for r in size["results"] if r["tool"] == "recsql" and r["status"] == "ok"), None)
        if r:
            d = r.get("diagnostics", {})
            lines.append(f"| {size['label']} | {r['n_users']} | {d.get('users_without_recs')} | "
                         f"{d.get('recs_users_without_truth')} | "
                         + " | ".join(f"{r['reference'][c]:.6f}" for c in cols)
                         + f" | {fmt_e(r.get('rounded_scores_max_abs_diff'))} |")
    notes = list(dict.fromkeys(data.get("notes", [])))  # a note found at several sizes is said once
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    path.write_text("\n".join(lines) + "\n")


def write_plot(data: dict, path: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for tool in ALL_TOOLS:
        pts = [(size["rows"], r["wall_s"]) for size in data["sizes"] for r in size["results"]
               if r["tool"] == tool and r["status"] == "ok"]
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", linestyle="--" if tool == "floor" else "-", label=LABELS[tool])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("recommendation rows (100 per user)")
    ax.set_ylabel("wall time, s (files → result table)")
    m = data["machine"]
    ax.set_title(f"six metrics @10 — {m['usable_cpus']} CPUs, {m['ram_gb']} GB RAM", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------- main
def parse_tools(text: str) -> list[str]:
    chosen: list[str] = []
    for name in text.split(","):
        name = name.strip()
        for t in GROUPS.get(name, [name]):
            if t not in ALL_TOOLS:
                raise SystemExit(f"unknown tool {t!r}; choose from {', '.join(ALL_TOOLS + list(GROUPS))}")
            chosen.append(t)
    chosen += ["recsql", "floor"]  # the reference every other tool is compared with, and its floor
    return [t for t in ALL_TOOLS if t in chosen]


def main() -> int:
    mem_total_mb = 0
    try:
        import psutil
        mem_total_mb = psutil.virtual_memory().total // (1024 * 1024)
    except ImportError:
        raise SystemExit("psutil is needed: pip install psutil")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1M,10M", help="comma-separated sizes: 100k,1M,10M,100M (default 1M,10M)")
    parser.add_argument("--tools", default="all",
                        help="comma-separated: recsql,ranx,pytrec_eval,pandas,spark (= spark-recsql,spark-mllib);"
                             " recsql (the reference) and its DuckDB floor always run (default all)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--data", type=Path, default=HERE / "data", help="data cache (default benchmarks/data)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool and size; the best wall is kept")
    parser.add_argument("--ties", action="store_true",
                        help="keep tied (3-decimal) scores: ranx and trec_eval then break ties their own way"
                             " and differ from recsql by design")
    parser.add_argument("--spark-max-rows", default="10M", help="skip Spark above this size (default 10M)")
    parser.add_argument("--spark-driver-memory", default="6g")
    parser.add_argument("--duckdb-memory-limit", default=None,
                        help="DuckDB memory_limit for recsql and the floor, e.g. 4GB (spills to disk beyond it)")
    parser.add_argument("--spark-shuffle-partitions", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per tool run (default 3600)")
    parser.add_argument("--mem-limit-mb", type=int, default=int(mem_total_mb * 0.8),
                        help="kill a tool whose process tree exceeds this (default 80%% of RAM)")
    parser.add_argument("--min-free-mb", type=int, default=1024,
                        help="kill a tool when the machine's available memory falls below this (default 1024)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    sizes = [datagen.parse_rows(t) for t in args.rows.split(",")]
    tools = parse_tools(args.tools)
    spark_max = datagen.parse_rows(args.spark_max_rows)
    args.out.mkdir(parents=True, exist_ok=True)
    work_root = args.data / "work"
    data = {
        "command": "python " + " ".join(shlex.quote(a) for a in
                                        [str(Path(sys.argv[0]).resolve().relative_to(REPO))
                                         if Path(sys.argv[0]).resolve().is_relative_to(REPO) else sys.argv[0]]
                                        + sys.argv[1:]),
        "machine": machine_info(),
        "config": {"rows": sizes, "tools": tools, "repeat": args.repeat, "ties": args.ties,
                   "spark_max_rows": spark_max, "spark_driver_memory": args.spark_driver_memory,
                   "spark_shuffle_partitions": args.spark_shuffle_partitions, "timeout": args.timeout,
                   "mem_limit_mb": args.mem_limit_mb, "tolerance": TOLERANCE,
                   "metrics_trec": METRICS_TREC, "metrics_reference": METRICS_REFERENCE, "mllib": MLLIB},
        "sizes": [],
        "notes": [],
    }
    data["config"]["data_note"] = (
        f"U users × {datagen.LIST_LENGTH} recommendations (rows = U × {datagen.LIST_LENGTH}), "
        f"{datagen.N_ITEMS:,} items, graded truth 0..3 (~8 truth items in each list, 0..4 outside it), ~2% of the"
        " recommended users without truth, ~3% of the truth users without recommendations; scores on a"
        " 3-decimal grid " + ("left tied (--ties)" if args.ties else
                              "plus an id-based epsilon, (100 − the item's rank by id in its list) × 1e-6, that breaks"
                              " ties by item id ascending (recsql's own tie-break), so every tool sees the same"
                              " strict order, even in trec_eval's single-precision scores")
        + "; generated by DuckDB SQL (benchmarks/datagen.py), cached in benchmarks/data/")
    failed = False
    for rows in sizes:
        label = datagen.label_rows(rows)
        meta = datagen.generate(rows, args.data, seed=args.seed, ties=args.ties)
        recs, truth = datagen.paths(rows, args.data, ties=args.ties)
        work = work_root / (label + ("-ties" if args.ties else ""))
        work.mkdir(parents=True, exist_ok=True)
        size = {"rows": rows, "label": label, "data": meta, "results": [], "skipped": {}}
        data["sizes"].append(size)
        ref = None
        for tool in tools:
            if tool.startswith("spark") and rows > spark_max:
                size["skipped"][tool] = f"more than --spark-max-rows {args.spark_max_rows}"
                continue
            best = best_of(tool, recs, truth, work, args, label)
            if tool == "recsql":
                ref = best if best["status"] == "ok" else None
                if ref is None:
                    print("recsql failed: no reference for the agreement check", file=sys.stderr)
                    failed = True
            if best["status"] == "ok" and ref is not None and tool != "floor":
                agreement(best, ref, ref.get("per_user_file"))
                if not best["agrees"] and not args.ties:
                    failed = True
                    print(f"  DISAGREES with recsql: {best.get('abs_diff')} {best.get('per_user_max_abs_diff')}",
                          flush=True)
            size["results"].append(best)
            _summaries(size)
            _save(data, args.out)
    data["machine"]["loadavg_end"] = data["loadavg_end"] = _read("/proc/loadavg").split()[:3]
    _notes(data, args)
    _save(data, args.out, plot=True)
    print(f"wrote {args.out / 'results.md'}, results.json, time_vs_rows.png")
    return 1 if failed else 0


def best_of(tool: str, recs: Path, truth: Path, work: Path, args, label: str, run=run_tool) -> dict:
    """Up to ``args.repeat`` runs of ``tool`` (``run``: :func:`run_tool`), stopping at the first that
    fails or is killed; the fastest successful run, with every successful wall time, or the failed
    run when none succeeded. Each repeat writes its own files, and only the others' per-user files
    are removed, so the best run's per-user values are there for the agreement check even when a
    later repeat was killed midway."""
    runs = []
    for i in range(args.repeat):
        print(f"[{label}] {tool} (run {i + 1}/{args.repeat}) ...", end=" ", flush=True)
        r = run(tool, recs, truth, work, args, repeat=i)
        print(f"{r['status']}" + (f": wall {r['wall_s']:.3f} s, peak {r['peak_rss_mb']:.0f} MB"
                                  if r["status"] == "ok" else ""), flush=True)
        runs.append(r)
        if r["status"] != "ok":
            break
    ok = [r for r in runs if r["status"] == "ok"]
    best = min(ok, key=lambda r: r["wall_s"]) if ok else runs[-1]
    best["all_walls_s"] = [round(r["wall_s"], 4) for r in ok]
    for r in runs:  # only the best run's per-user values are compared; the others' files go
        if r is not best and r.get("per_user_file"):
            Path(r["per_user_file"]).unlink(missing_ok=True)
    return best


def _summaries(size: dict) -> None:
    by = {r["tool"]: r for r in size["results"] if r["status"] == "ok"}
    s = {}
    if "recsql" in by:
        base = by["recsql"]["wall_s"]
        if "floor" in by:
            s["recsql_over_floor"] = base / by["floor"]["wall_s"]
        for tool in ("ranx", "pytrec_eval", "pandas", "spark-recsql", "spark-mllib"):
            if tool in by:
                s[f"{tool.replace('-', '_')}_over_recsql"] = by[tool]["wall_s"] / base
    if "spark-recsql" in by and "spark-mllib" in by:
        s["spark_mllib_over_spark_recsql"] = by["spark-mllib"]["wall_s"] / by["spark-recsql"]["wall_s"]
    size["summary"] = s


def _notes(data: dict, args) -> None:
    notes = data["notes"]
    for size in data["sizes"]:
        for r in size["results"]:
            if r.get("mllib_ndcg_uses_relevance_values") is False and not any("relevance values" in n for n in notes):
                notes.append("Spark MLlib: `RankingMetrics` documents (prediction, labels, relevance) rows for graded"
                             " NDCG since 3.4, but PySpark's bridge (`PythonMLLibAPI.newRankingMetrics`) passes only"
                             " the first two columns to Scala, so from Python `ndcgAt` is always the binary NDCG"
                             " (probe: prediction [1, 2], labels [2, 1] with relevance [3, 1] gives 1.0, not 0.7098)."
                             " It is compared with recsql's `ndcg(gain=binary,ideal=binary)@10`.")
            if r["tool"] == "pytrec_eval" and r.get("queries_missing_from_run_added_as_0") and \
                    not any("trec_eval skips" in n for n in notes):
                notes.append("pytrec_eval: trec_eval skips queries that are not in the run; the harness adds each"
                             " relevant-truth user without recommendations as 0 before averaging (e.g."
                             f" {r['queries_missing_from_run_added_as_0']} users at {size['label']}).")
    notes.append("ranx and trec_eval average over every query of the qrels, including queries whose judged items are"
                 " all grade 0 (they score 0); recsql leaves such users out of the population and counts them. The"
                 " harness therefore gives both tools the relevant truth rows only (grade ≥ 1), which changes none of"
                 " the six metrics for any query; ranx gets `make_comparable=True` so users without recommendations"
                 " score 0.")
    notes.append("trec_eval's `recip_rank` has no cutoff: pytrec_eval is given each user's top 10 only (sorted by"
                 " score, descending), which is `mrr@10` and leaves the other five measures unchanged.")
    if not args.ties:
        notes.append("Ties: recsql breaks score ties by item id ascending, trec_eval by docno descending (as strings),"
                     " ranx by its own sort; and trec_eval keeps scores as 32-bit floats, so scores closer than ~1e-7 tie in"
                     " it even when they differ as doubles. The data therefore carries an id-based epsilon"
                     " ((100 − rank by id) × 1e-6, decreasing in item id) on top of 3-decimal scores; the last column of the reference table shows recsql gives the"
                     " same numbers on the rounded, tied scores. Run with `--ties` to time on tied scores (ranx and"
                     " trec_eval then differ from recsql by design).")


def _save(data: dict, out: Path, plot: bool = False) -> None:
    (out / "results.json").write_text(json.dumps(_repo_relative(data), indent=1, default=_json_default))
    write_markdown(data, out / "results.md")
    if plot:
        write_plot(data, out / "time_vs_rows.png")


def _repo_relative(o):
    """A copy of ``o`` with paths inside the checkout written relative to it, so that results.json
    names no directory of the machine it ran on."""
    if isinstance(o, dict):
        return {k: _repo_relative(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_repo_relative(v) for v in o]
    if isinstance(o, (str, Path)) and Path(o).is_absolute() and Path(o).is_relative_to(REPO):
        return Path(o).relative_to(REPO).as_posix()
    return o


def _json_default(o):
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if hasattr(o, "item"):
        return o.item()
    return str(o)


if __name__ == "__main__":
    sys.exit(main())
