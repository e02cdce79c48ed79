"""One tool of the off-policy benchmark (benchmarks/logs.py), run in its own process:

    python benchmarks/logs_tools.py TOOL --data DIR --result OUT.json [--duckdb-memory-limit 4GB]

TOOL is one of recsql, floor (the DuckDB interpreter of this checkout) or obp-ips, obp-dr (the Python of
obp's own virtual environment, which has no DuckDB: this file imports nothing at the top but the standard
library and benchmarks/tools.py, whose top is the standard library too). DIR holds logs.parquet,
recs.parquet and reward_model.parquet (benchmarks/logs.py writes them). Wall = files on disk -> the
estimates; obp's build (reading the files, the dense action_dist and reward-model arrays) and evaluate
(its estimators) are reported apart, as in benchmarks/tools.py.

- recsql:  ``recsql.evaluate(recs, None, METRICS, logs=..., reward_model=..., con=<DuckDB>)``, one call.
- floor:   the cheapest DuckDB SQL for plain IPS with target=list and one item per user: the logs joined
           to the recs on (user, item), Σ r / π0 over the matches, divided by the logged rows.
- obp-ips: obp 0.5.7's InverseProbabilityWeighting (plain and lambda_=CAP) and
           SelfNormalizedInverseProbabilityWeighting on action_dist (n, n_actions, 1), one-hot at the
           user's recommended item; ess = (Σ w)² / Σ w² of obp's weights action_dist[i, a_i, 0] / pscore_i.
- obp-dr:  obp's DirectMethod and DoublyRobust, with action_dist and estimated_rewards_by_reg_model
           (n, n_actions, 1) holding q̂ of the logged and the recommended item (0 elsewhere: action_dist
           is 0 there, so no estimator reads it).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tools import _duckdb, _import_recsql, _now, _peak_rss_mb, _sql_str, _timed_done  # noqa: E402

CAP = 10
METRICS = ["ips", "snips", f"ips(cap={CAP})", "dm", "dr", "ess"]
OBP_METRICS = {"obp-ips": ["ips", "snips", f"ips(cap={CAP})", "ess"], "obp-dr": ["dm", "dr"]}


def run_recsql(args, out: dict) -> None:
    import duckdb
    recsql = _import_recsql()
    files = {name: str(args.data / f"{name}.parquet") for name in ("logs", "recs", "reward_model")}
    t0 = _now()
    result = recsql.evaluate(files["recs"], None, METRICS, logs=files["logs"], reward_model=files["reward_model"],
                             con=_duckdb(args))
    summary = result.summary
    out["wall_s"] = _now() - t0
    _timed_done(args, out)
    out["metrics"] = {m: float(summary[m].iloc[0]) for m in METRICS}
    out["versions"] = {"recsql": getattr(recsql, "__version__", "?"), "duckdb": duckdb.__version__}


def run_floor(args, out: dict) -> None:
    import duckdb
    logs, recs = (_sql_str(args.data / f"{name}.parquet") for name in ("logs", "recs"))
    t0 = _now()
    value, matched, n = _duckdb(args).execute(
        f"SELECT sum(l.reward / l.propensity) / (SELECT count(*) FROM read_parquet('{logs}')), count(*),"
        f" (SELECT count(*) FROM read_parquet('{logs}'))"
        f" FROM read_parquet('{logs}') AS l JOIN read_parquet('{recs}') AS r USING (user_id, item_id)").fetchone()
    out["wall_s"] = _now() - t0
    _timed_done(args, out)
    out["metrics"] = {"ips": float(value)}
    out["notes"] = f"{n} logged rows, {matched} where the logged item is the user's recommended one"
    out["versions"] = {"duckdb": duckdb.__version__}


def _obp_inputs(data: Path, with_model: bool) -> dict:
    """obp's arrays from the Parquet files: logs in user order, action index = item_id - 1 (the catalog is
    1..n_actions), action_dist one-hot at the user's recommended item, and (with_model) q̂."""
    import numpy as np
    import pandas as pd
    meta = json.loads((data / "meta.json").read_text())
    n_actions = meta["n_actions"]
    logs = pd.read_parquet(data / "logs.parquet", columns=["user_id", "item_id", "propensity", "reward"])
    recs = pd.read_parquet(data / "recs.parquet", columns=["user_id", "item_id"])
    rows = logs[["user_id"]].assign(row=np.arange(len(logs)))
    target = rows.merge(recs, on="user_id", how="left").sort_values("row")["item_id"].to_numpy()
    n = len(logs)
    action = logs["item_id"].to_numpy() - 1
    action_dist = np.zeros((n, n_actions, 1))
    action_dist[np.arange(n), target - 1, 0] = 1.0
    given = dict(reward=logs["reward"].to_numpy(), action=action, pscore=logs["propensity"].to_numpy(),
                 action_dist=action_dist, position=None)
    if with_model:
        model = pd.read_parquet(data / "reward_model.parquet").merge(rows, on="user_id")
        q_hat = np.zeros((n, n_actions, 1))
        q_hat[model["row"].to_numpy(), model["item_id"].to_numpy() - 1, 0] = model["reward"].to_numpy()
        given["estimated_rewards_by_reg_model"] = q_hat
    return given


def run_obp(args, out: dict) -> None:
    import numpy as np
    import obp
    from obp.ope import (DirectMethod, DoublyRobust, InverseProbabilityWeighting,
                         SelfNormalizedInverseProbabilityWeighting)
    t0 = _now()
    given = _obp_inputs(args.data, with_model=args.tool == "obp-dr")
    t1 = _now()
    values = {}
    if args.tool == "obp-ips":
        values["ips"] = InverseProbabilityWeighting().estimate_policy_value(**given)
        values["snips"] = SelfNormalizedInverseProbabilityWeighting().estimate_policy_value(**given)
        values[f"ips(cap={CAP})"] = InverseProbabilityWeighting(lambda_=CAP).estimate_policy_value(**given)
        n = len(given["action"])
        w = given["action_dist"][np.arange(n), given["action"], 0] / given["pscore"]
        values["ess"] = w.sum() ** 2 / (w ** 2).sum()
    else:
        values["dm"] = DirectMethod().estimate_policy_value(**given)
        values["dr"] = DoublyRobust().estimate_policy_value(**given)
    t2 = _now()
    out.update(build_s=t1 - t0, evaluate_s=t2 - t1, wall_s=t2 - t0)
    _timed_done(args, out)
    out["metrics"] = {m: float(v) for m, v in values.items()}
    out["versions"] = {"obp": obp.__version__, "numpy": np.__version__}


TOOLS = {"recsql": run_recsql, "floor": run_floor, "obp-ips": run_obp, "obp-dr": run_obp}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tool", choices=sorted(TOOLS))
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--duckdb-memory-limit", default=None, help="e.g. 4GB (recsql and the floor)")
    args = parser.parse_args()
    out: dict = {"tool": args.tool, "pid": os.getpid()}
    TOOLS[args.tool](args, out)
    out["self_peak_rss_mb"] = _peak_rss_mb()
    args.result.write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
