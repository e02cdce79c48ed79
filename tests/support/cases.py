"""Load the JSON cases in fixtures/ and run one through recsql.evaluate."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

import recsql

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# trec_eval's own test files (qrels, runs, expected outputs), copied into the repository with
# their licence: fixtures/trec_eval/README.md. A missing file fails the test that reads it.
TREC_EVAL = FIXTURES / "trec_eval"


def load(relative: str) -> list[dict]:
    return json.loads((FIXTURES / relative).read_text(encoding="utf-8"))


def metric_of(case: dict) -> recsql.Metric:
    spec = case["metric"]
    if isinstance(spec, str):
        return recsql.parse_metric(spec)
    return recsql.Metric(spec["name"], spec.get("k"), **spec.get("options", {}))


def run(case: dict, **overrides) -> recsql.Evaluation:
    """Evaluate a fixture case's metric on its recs/truth/items with recsql."""
    recs = pd.DataFrame(case["recs"]) if case["recs"] else pd.DataFrame(
        {"user_id": pd.Series([], dtype=object), "item_id": pd.Series([], dtype=object), "score": pd.Series([], dtype=float)})
    truth = pd.DataFrame(case["truth"]) if case.get("truth") is not None else None
    frames = {role: pd.DataFrame(case[key]) for role, key in EXTRA_INPUTS.items() if case.get(key)}
    order = {"rank_col": "rank"} if "rank" in recs.columns else {"score_col": "score"}
    kwargs = {**order, **case.get("options", {}), **frames, **overrides}
    return recsql.evaluate(recs, truth, [metric_of(case)], **kwargs)


# evaluate keyword -> fixture key, for the inputs beside recs and truth
EXTRA_INPUTS = {"items": "items", "interactions": "interactions", "catalog": "catalog", "expected_recs": "baseline",
                "item_features": "features", "intents": "intents", "logs": "logs", "reward_model": "reward_model"}


def per_user(result: recsql.Evaluation, metric: recsql.Metric) -> dict[str, float]:
    frame = result.per_user
    return {str(u): v for u, v in zip(frame["user_id"], frame[metric.column])}
