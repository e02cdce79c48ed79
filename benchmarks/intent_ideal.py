"""The intent-aware metrics' greedy ideal list on DuckDB: the per-user lists against the portable chain.

    python benchmarks/intent_ideal.py                   # MovieLens-100K-shaped and dense intents, k = 100
    python benchmarks/intent_ideal.py --shapes movielens

``intent_ideal`` alone, written two ways, on the same relevant judgments (``intent_judged``) in one DuckDB
(``memory_limit = '4GB'``), two alphas (0.5 and 0.3):

- **lists**: sql/_intent_ideal.duckdb.sql, what ``evaluate`` runs on DuckDB: each user's items as a list, the
  greedy picks a fold over the steps;
- **chain**: recsql/compose/intents.py's chain of one CTE per step, three window passes over every
  (user, alpha, item, intent) row each, what the other engines run (and DuckDB ran before the lists).

Shapes: ``movielens`` is benchmarks/engines.py's ``movielens_shaped`` intents (943 users, about 201,000
relevant (user, item, intent) judgments, 20 to 200 items per user with 1 to 3 intents each); ``dense`` is 1,000
users with 1,000 relevant items each, every item with 1 to 3 of 20 intents (2M judgments). Each case runs in
a fresh process (``--worker``), which records the query's wall time and the process's peak resident memory;
the two forms' rows are compared (steps equal, gains to 1e-12). Results: ``benchmarks/results/intent_ideal.md``
and ``.json`` (date, commit, machine, load, versions).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import commit, provenance, publish  # noqa: E402

K = 100
ALPHAS = (0.5, 0.3)
DENSE = ("SELECT DISTINCT u AS user_id, i AS item_id, 'g' || ((i * 7 + u + j * 3) % 20) AS intent "
         "FROM range(1000) AS a(u), range(1000) AS b(i), range(1 + CAST((u + i) % 3 AS INTEGER)) AS c(j)")


def statement(form: str, k: int) -> str:
    """``intent_ideal``'s query over the tables intent_judged and intent_alphas."""
    from recsql.compose.intents import ideal_chain, list_values
    from recsql.compose.rewrite import substitute
    from recsql.templates import read_template
    from recsql.trees import parse
    if form == "chain":
        ctes, ideal = ideal_chain(k)
        return "WITH " + ", ".join(c.sql("duckdb") for c in ctes) + " " + ideal.sql("duckdb")
    name = "_intent_ideal.duckdb"
    return substitute(parse(read_template(name)[1], read="duckdb"), list_values(k), name).sql("duckdb")


def worker(shape: str, form: str, rows_out: Path) -> dict:
    import duckdb
    con = duckdb.connect(config={"memory_limit": "4GB", "preserve_insertion_order": False})
    if shape == "movielens":
        from engines import movielens_shaped
        con.register("intents_frame", movielens_shaped()["intents"])
        con.execute("CREATE TABLE intent_judged AS SELECT DISTINCT user_id, item_id, intent FROM intents_frame "
                    "WHERE relevance >= 1")
    else:
        con.execute(f"CREATE TABLE intent_judged AS {DENSE}")
    con.execute("CREATE TABLE intent_alphas AS SELECT CAST(UNNEST(?) AS DOUBLE) AS alpha", [list(ALPHAS)])
    judgments = con.execute("SELECT COUNT(*) FROM intent_judged").fetchone()[0]
    sql = statement(form, K)
    start = time.perf_counter()
    rows = con.execute(f"SELECT user_id, alpha, step, gain FROM ({sql}) AS q ORDER BY 1, 2, 3").fetchall()
    seconds = time.perf_counter() - start
    rows_out.write_text(json.dumps(rows))
    return {"seconds": round(seconds, 2), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "judgments": judgments, "rows": len(rows)}


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x[:3] == y[:3] and abs(x[3] - y[3]) <= 1e-12 for x, y in zip(a, b))


def markdown(result: dict) -> str:
    lines = []
    for shape, case in result["shapes"].items():
        lists, chain = case["lists"], case["chain"]
        lines.append(f"| {shape} | {lists['judgments']:,} | {lists['seconds']:.2f} s, {lists['peak_mb']:,} MB | "
                     f"{chain['seconds']:.2f} s, {chain['peak_mb']:,} MB | {chain['seconds'] / lists['seconds']:.1f}× | "
                     f"{'yes' if case['same'] else '**no**'} |")
    return f"""# The greedy ideal list on DuckDB: per-user lists against the chain of steps

- **Date**: {result['date']}; recsql commit `{result['commit']}`
- **Machine**: {result['machine']}
- **Load average** (1, 5, 15 min) before {tuple(result['load_before'])}, after {tuple(result['load_after'])}
- **Versions**: {', '.join(f'{k} {v}' for k, v in result['versions'].items())}
- `intent_ideal` alone at k = {K}, alphas {', '.join(map(str, ALPHAS))}, DuckDB under a 4 GB memory limit; each
  case one run in a fresh process, peak resident memory of that process (benchmarks/intent_ideal.py's docstring).

| shape | relevant judgments | lists (sql/_intent_ideal.duckdb.sql) | chain (recsql/compose/intents.py) | chain ÷ lists | same rows |
|---|---:|---:|---:|---:|---|
{chr(10).join(lines)}

Made by `python benchmarks/intent_ideal.py` (benchmarks/README.md).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", default="movielens,dense", help="comma-separated: movielens, dense")
    parser.add_argument("--out", type=Path, default=HERE / "results", help="the folder of intent_ideal.md and .json")
    parser.add_argument("--worker", nargs=3, metavar=("SHAPE", "FORM", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], Path(args.worker[2]))))
        return 0
    import duckdb
    load_before, measured = os.getloadavg(), commit()
    shapes = {}
    for shape in args.shapes.split(","):
        case, found = {}, {}
        for form in ("lists", "chain"):
            rows = args.out / f".intent_ideal_{shape}_{form}.json"
            args.out.mkdir(parents=True, exist_ok=True)
            done = subprocess.run([sys.executable, __file__, "--worker", shape, form, str(rows)], check=True,
                                  capture_output=True, text=True)
            case[form] = json.loads(done.stdout.strip().splitlines()[-1])
            found[form] = json.loads(rows.read_text())
            rows.unlink()
            print(shape, form, case[form], flush=True)
        case["same"] = same(found["lists"], found["chain"])
        shapes[shape] = case
    result = {**provenance(measured, load_before, {"python": platform.python_version(), "duckdb": duckdb.__version__}),
              "shapes": shapes}
    return publish(args.out, "intent_ideal", result, markdown(result))


if __name__ == "__main__":
    sys.exit(main())
