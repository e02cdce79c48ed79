"""Off-policy benchmark: recsql's estimators from logs (DuckDB, memory-limited) against obp and a DuckDB floor.

    python benchmarks/logs.py --rows 100k,1M,10M [--duckdb-memory-limit 4GB] [--obp-python PATH]
    python benchmarks/logs.py --rows 100M --tools recsql,floor --out benchmarks/results/logs-100M

For each size: generate (or reuse) bandit logs under benchmarks/data/logs-<rows>/ (DuckDB SQL from range() and
hash(), see ``generate``), then run each tool in its own process (benchmarks/logs_tools.py; obp in its own
virtual environment) on the same Parquet files, one after the other, with run.py's worker mechanism (files in
the page cache, wall time, peak RSS of the process tree, --timeout / --mem-limit-mb kills). obp's dense
inputs take k · n · n_actions · 8 bytes (k = 1 for its IPS estimators, 5 for DM and DR: action_dist,
q̂ and obp's own copies of both and their product); a size where that exceeds --mem-limit-mb is skipped
by size, with that reason. Every obp number (and the floor's IPS) must equal recsql's to 1e-9 relative,
or the exit status is 1. Writes logs.json and logs.md to --out. Details: benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import datagen  # noqa: E402
import run  # noqa: E402
from logs_tools import CAP, METRICS, OBP_METRICS  # noqa: E402

GENERATOR_VERSION = 2
N_ACTIONS = 1_000
EPSILON = 0.3          # the logging policy: its greedy item with probability 1 - ε, else uniform over the catalog
TARGET_AGREES = 0.7    # share of users whose recommended item is the logging policy's greedy one
ALL_TOOLS = ["recsql", "floor", "obp-ips", "obp-dr"]
LABELS = {"recsql": "recsql (DuckDB)", "floor": "DuckDB floor (plain IPS only)",
          "obp-ips": "obp: ips, snips, clipped ips, ess", "obp-dr": "obp: dm, dr"}
ARRAYS = {"obp-ips": 1, "obp-dr": 5}  # (n, n_actions) float64 arrays obp holds at once
TOLERANCE = 1e-9
OBP_VENV_PYTHON = Path.home() / ".cache" / "recsql-obp" / "bin" / "python"


def _sql(n: int, seed: int) -> dict[str, str]:
    """The three files' SELECTs. Per user u (one logged impression, the context): g(u) the logging policy's
    greedy item; the logged item is g(u) with probability 1 - ε, else uniform over the N items, so its
    propensity is 1 - ε + ε/N when it is g(u) and ε/N otherwise (the policy's true probability of the logged
    item). The target recommends t(u) = g(u) for a share TARGET_AGREES of the users, an independent uniform
    item for the others. Reward ~ Bernoulli(q(u, a)), q = 0.02 + 0.3 · quality(a) + 0.2 · [a = t(u)];
    the reward model is q plus uniform noise in ±0.05, clipped to [0, 1], for the logged and the recommended
    item of each user (the pairs DM and DR read with target=list)."""
    N, eps = N_ACTIONS, EPSILON

    def h(*keys: str) -> str:
        # hashed twice: DuckDB's hash of several values combines the values' hashes so that
        # hash(s, u, 3) % 1000 and hash(s, u, 5) % 1000 never coincide (0 of 1M users; 1,033 hashed twice)
        return f"hash(hash({seed}, {', '.join(keys)}))"

    def u01(*keys: str) -> str:
        return f"(({h(*keys)} % 1000000) / 1000000.0)"

    base = f"""
        SELECT i + 1 AS user_id, {h('i + 1', '1')} % {N} + 1 AS greedy,
               CASE WHEN {u01('i + 1', '2')} < {eps} THEN {h('i + 1', '3')} % {N} + 1
                    ELSE {h('i + 1', '1')} % {N} + 1 END AS item_id,
               CASE WHEN {u01('i + 1', '4')} < {TARGET_AGREES} THEN {h('i + 1', '1')} % {N} + 1
                    ELSE {h('i + 1', '5')} % {N} + 1 END AS target
        FROM range({n}) AS t(i)"""
    q = "(0.02 + 0.3 * {quality} + CASE WHEN {item} = target THEN 0.2 ELSE 0 END)"

    def q_of(item: str) -> str:
        return q.format(quality=f"(({h(item, '6')} % 1000) / 1000.0)", item=item)

    def q_hat(item: str) -> str:
        return f"greatest(0.0, least(1.0, {q_of(item)} + ({u01('user_id', item, '8')} - 0.5) * 0.1))"

    logs = f"""
        SELECT user_id::BIGINT AS user_id, item_id::BIGINT AS item_id,
               (CASE WHEN item_id = greedy THEN 1 - {eps} + {eps} / {N} ELSE {eps} / {N} END)::DOUBLE AS propensity,
               ({u01('user_id', '7')} < {q_of('item_id')})::INTEGER::DOUBLE AS reward
        FROM ({base})"""
    recs = f"SELECT user_id::BIGINT AS user_id, target::BIGINT AS item_id, 1.0::DOUBLE AS score FROM ({base})"
    model = f"""
        SELECT user_id::BIGINT AS user_id, item_id::BIGINT AS item_id, ({q_hat('item_id')})::DOUBLE AS reward
        FROM ({base})
        UNION ALL
        SELECT user_id::BIGINT, target::BIGINT, ({q_hat('target')})::DOUBLE FROM ({base}) WHERE target <> item_id"""
    return {"logs": logs, "recs": recs, "reward_model": model}


def generate(n: int, root: Path, *, seed: int = 42, verbose: bool = True) -> tuple[Path, dict]:
    """Write logs.parquet, recs.parquet and reward_model.parquet for n logged impressions under
    root/logs-<label>/, unless the same generator version and arguments made them already."""
    import duckdb
    folder = root / f"logs-{datagen.label_rows(n)}"
    want = {"generator_version": GENERATOR_VERSION, "rows": n, "n_actions": N_ACTIONS, "epsilon": EPSILON,
            "target_agrees": TARGET_AGREES, "seed": seed}
    meta_path = folder / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in want} == want:
            return folder, meta
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    con = duckdb.connect(config={"preserve_insertion_order": False})
    try:
        for name, sql in _sql(n, seed).items():
            tmp = folder / f"{name}.tmp.parquet"
            con.execute(f"COPY ({sql}) TO '{tmp}' (FORMAT parquet, COMPRESSION zstd)")
            tmp.replace(folder / f"{name}.parquet")
        rows = {name: con.execute(f"SELECT count(*) FROM read_parquet('{folder / name}.parquet')").fetchone()[0]
                for name in ("logs", "recs", "reward_model")}
    finally:
        con.close()
    meta = {**want, "rows_per_file": rows, "generated_seconds": round(time.perf_counter() - started, 2),
            "bytes": {p.name: p.stat().st_size for p in folder.glob("*.parquet")}}
    assert rows["logs"] == rows["recs"] == n, rows
    meta_path.write_text(json.dumps(meta, indent=1))
    if verbose:
        print(f"generated {folder}: {n:,} impressions in {meta['generated_seconds']} s", flush=True)
    return folder, meta


def run_logs_tool(tool: str, folder: Path, _unused, work: Path, args, repeat: int = 0) -> dict:
    """One tool's process (run.run_worker), in the signature run.best_of calls."""
    result = work / f"{tool}.{repeat}.json"
    python = str(args.obp_python) if tool.startswith("obp") else sys.executable
    cmd = [python, str(HERE / "logs_tools.py"), tool, "--data", str(folder), "--result", str(result),
           *(["--duckdb-memory-limit", args.duckdb_memory_limit] if args.duckdb_memory_limit else [])]
    # obp's venv gets no PYTHONPATH: it must not import this interpreter's packages
    env = dict(run.os.environ, PYTHONPATH="", PYTHONWARNINGS="ignore") if tool.startswith("obp") else None
    return run.run_worker(cmd, tool, result, work / f"{tool}.{repeat}.log", work, args,
                          warm=sorted(folder.glob("*.parquet")), env=env)


def memory_limits(text: str | None) -> dict[int | None, str | None]:
    """--duckdb-memory-limit: ``4GB`` for every size, or ``4GB,100M=3GB``, a size's own limit after the
    default (key None)."""
    limits: dict[int | None, str | None] = {None: None}
    for part in filter(None, (text or "").split(",")):
        size, _, limit = part.rpartition("=")
        limits[datagen.parse_rows(size) if size else None] = limit.strip() or None
    return limits


def obp_need_mb(tool: str, n: int) -> float:
    return ARRAYS[tool] * n * N_ACTIONS * 8 / 2 ** 20


def relative_diff(value: float, reference: float) -> float:
    return abs(value - reference) / abs(reference) if reference else abs(value)


def check(res: dict, ref: dict) -> None:
    res["rel_diff"] = {m: relative_diff(v, ref["metrics"][m]) for m, v in res["metrics"].items()}
    res["agrees"] = max(res["rel_diff"].values()) <= TOLERANCE


def _limits_text(text: str | None) -> str:
    limits = memory_limits(text)
    sizes = [f"{datagen.label_rows(n)}: {v or 'none'}" for n, v in limits.items() if n is not None]
    return (limits[None] or "none") + (f" ({', '.join(sizes)})" if sizes else "")


def write_markdown(data: dict, path: Path) -> None:
    m = data["machine"]
    c = data["config"]
    lines = [
        "# recsql off-policy benchmark: estimators from logs",
        "",
        f"- **Date**: {m['date']}; **measured at recsql commit {m['recsql_commit']}** — command: `{data['command']}`",
        f"- **Machine**: {m['cpu']}, {m['usable_cpus']} usable of {m['logical_cpus']} logical CPUs, {m['ram_gb']} GB RAM;"
        f" load average at start {' '.join(m['loadavg_start'])}, at end {' '.join(data.get('loadavg_end', ['?']))}",
        f"- **Versions**: Python {m['python']}, duckdb {m['packages']['duckdb']}, obp {data.get('obp_version', '?')}"
        " (its own venv)",
        f"- **Data**: one logged impression per user (the context), {N_ACTIONS:,} actions; ε-greedy logging policy"
        f" (ε = {EPSILON}) with its true propensity of the logged item; binary rewards; the target recommends one"
        f" item per user (target=list), the logging policy's greedy one for {TARGET_AGREES:.0%} of the users; a"
        " reward model of the logged and the recommended item per user. DuckDB SQL from range()/hash()"
        " (benchmarks/logs.py), Parquet, files in the page cache",
        f"- **Settings**: DuckDB memory_limit {_limits_text(c['duckdb_memory_limit'])} (recsql and the floor); per-tool"
        f" timeout {c['timeout']} s, memory limit {c['mem_limit_mb']} MB; repeat {c['repeat']} (best wall kept)",
        f"- **Metrics**: recsql `{', '.join(METRICS)}` in one call; obp's IPW, SNIPW, IPW(lambda_={CAP}) and ESS of its"
        " weights in one process, DM and DR in another",
        "",
        "Wall = Parquet files → estimates (obp: build = reading and the dense arrays, evaluate = its estimators)."
        " Peak RSS = the process tree, polled every 0.1 s and at least the worker's VmHWM, up to the end of the"
        " timed part. Max rel. diff = the largest |tool − recsql| / |recsql| over the tool's metrics.",
        "",
        "| rows | tool | wall s | build s | evaluate s | peak RSS MB | ÷ recsql | max rel. diff vs recsql |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size in data["sizes"]:
        base = next((r for r in size["results"] if r["tool"] == "recsql" and r["status"] == "ok"), None)
        for r in size["results"]:
            label = LABELS[r["tool"]]
            if r["status"] != "ok":
                lines.append(f"| {size['label']} | {label} | {r['status']} (after {r['process_s']:.0f} s) | | | | | |")
                continue
            ratio = f"{r['wall_s'] / base['wall_s']:.2f}×" if base else "—"
            diff = "reference" if r["tool"] == "recsql" else (
                run.fmt_e(max(r["rel_diff"].values())) + ("" if r["agrees"] else " **(disagrees)**")
                if "rel_diff" in r else "—")
            lines.append(f"| {size['label']} | {label} | {run.fmt_s(r['wall_s'])} | {run.fmt_s(r.get('build_s'))} | "
                         f"{run.fmt_s(r.get('evaluate_s'))} | {r['peak_rss_mb']:.0f} | {ratio} | {diff} |")
        for tool, why in size["skipped"].items():
            lines.append(f"| {size['label']} | {LABELS[tool]} | skipped by size: {why} | | | | | |")
    lines += ["", "## recsql's estimates", "", "| rows | " + " | ".join(f"`{x}`" for x in METRICS) + " |",
              "|---:|" + "---:|" * len(METRICS)]
    for size in data["sizes"]:
        r = next((r for r in size["results"] if r["tool"] == "recsql" and r["status"] == "ok"), None)
        if r:
            lines.append(f"| {size['label']} | " + " | ".join(f"{r['metrics'][x]:.9g}" for x in METRICS) + " |")
    path.write_text("\n".join(lines) + "\n")


def _save(data: dict, out: Path) -> None:
    (out / "logs.json").write_text(json.dumps(run._repo_relative(data), indent=1, default=run._json_default))
    write_markdown(data, out / "logs.md")


def main(argv: list[str] | None = None) -> int:
    import psutil
    mem_total_mb = psutil.virtual_memory().total // 2 ** 20
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100k,1M,10M", help="comma-separated impressions, e.g. 100k,1M,10M,100M")
    parser.add_argument("--tools", default=",".join(ALL_TOOLS), help=f"comma-separated, of {', '.join(ALL_TOOLS)}"
                        " (recsql, the reference, always runs)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--data", type=Path, default=HERE / "data", help="data cache (default benchmarks/data)")
    parser.add_argument("--obp-python", type=Path, default=OBP_VENV_PYTHON, help="the Python of obp's venv")
    parser.add_argument("--duckdb-memory-limit", default="4GB",
                        help="DuckDB memory_limit of recsql and the floor: 4GB, or 4GB,100M=3GB (a size's own)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per tool and size; the best wall is kept")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per tool run (default 3600)")
    parser.add_argument("--mem-limit-mb", type=int, default=int(mem_total_mb * 0.8),
                        help="kill a tool whose process tree exceeds this (default 80%% of RAM)")
    parser.add_argument("--min-free-mb", type=int, default=1024,
                        help="kill a tool when the machine's available memory falls below this")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    limits = memory_limits(args.duckdb_memory_limit)
    tools = [t for t in ALL_TOOLS if t in {"recsql", *args.tools.split(",")}]
    if any(t.startswith("obp") for t in tools) and not args.obp_python.is_file():
        raise SystemExit(f"obp's Python is not at {args.obp_python}: run `bash .ci/engines.sh` or pass --obp-python")
    args.out.mkdir(parents=True, exist_ok=True)
    argv0 = Path(sys.argv[0]).resolve()
    data = {"command": "python " + " ".join(shlex.quote(a) for a in [
                str(argv0.relative_to(REPO)) if argv0.is_relative_to(REPO) else sys.argv[0]] + (argv or sys.argv[1:])),
            "machine": run.machine_info(), "sizes": [],
            "config": {"tools": tools, "duckdb_memory_limit": args.duckdb_memory_limit, "timeout": args.timeout,
                       "mem_limit_mb": args.mem_limit_mb, "repeat": args.repeat, "tolerance_relative": TOLERANCE,
                       "metrics": METRICS, "obp_metrics": OBP_METRICS}}
    failed = False
    for n in (datagen.parse_rows(t) for t in args.rows.split(",")):
        label = datagen.label_rows(n)
        folder, meta = generate(n, args.data, seed=args.seed)
        work = args.data / "work" / f"logs-{label}"
        work.mkdir(parents=True, exist_ok=True)
        limit = limits.get(n, limits[None])
        size = {"rows": n, "label": label, "data": meta, "duckdb_memory_limit": limit, "results": [], "skipped": {}}
        args_n = argparse.Namespace(**{**vars(args), "duckdb_memory_limit": limit})
        data["sizes"].append(size)
        ref = None
        for tool in tools:
            if tool in ARRAYS and obp_need_mb(tool, n) > args.mem_limit_mb:
                size["skipped"][tool] = (f"its arrays need about {obp_need_mb(tool, n) / 1024:,.0f} GB"
                                         f" ({ARRAYS[tool]} × n × {N_ACTIONS:,} × 8 bytes), over --mem-limit-mb"
                                         f" {args.mem_limit_mb}")
                print(f"[{label}] {tool} skipped: {size['skipped'][tool]}", flush=True)
                continue
            best = run.best_of(tool, folder, None, work, args_n, label, run=run_logs_tool)
            if tool == "recsql":
                ref = best if best["status"] == "ok" else None
                failed |= ref is None
            elif best["status"] == "ok" and ref is not None:
                check(best, ref)
                if not best["agrees"]:
                    failed = True
                    print(f"  DISAGREES with recsql: {best['rel_diff']}", flush=True)
            if best["status"] == "ok" and tool.startswith("obp"):
                data["obp_version"] = best["versions"]["obp"]
            size["results"].append(best)
            _save(data, args.out)
    data["loadavg_end"] = run._read("/proc/loadavg").split()[:3]
    _save(data, args.out)
    print(f"wrote {args.out / 'logs.md'} and logs.json")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
