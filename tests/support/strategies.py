"""Hypothesis strategies: small random recommendation runs and truth with ties and gaps; the
typed frames they become and the check of a recsql result against tests/support/reference.py."""
from __future__ import annotations

import math

import pandas as pd
from hypothesis import strategies as st

import recsql
from support.reference import METRICS as REFERENCE_METRICS
from support.reference import summarize

# The accuracy metrics tests/support/reference.py implements (the default draw); the beyond-accuracy ones
# have their own reference (tests/support/reference_beyond.py) and property tests.
ACCURACY = sorted(REFERENCE_METRICS)
# Every metric that runs on recs, truth and an items table with a price column (no other input).
SELF_CONTAINED = sorted(n for n, spec in recsql.registry().items() if set(spec.needs) <= {"price"})

USERS = [1, 2, 3, 4, 5, 6]
ITEMS = [1, 2, 3, 4, 5, 6, 7, 8, 9]
# Ids whose text order is not their numeric order ("-3" < "10" < "100" < "9" as text), for the
# conventions whose tools compare ids as text (trec_eval's strcmp).
TEXT_ORDER_ITEMS = [-3, 1, 2, 9, 10, 11, 20, 100, 101]
SCORES = [0.1, 0.25, 0.5, 0.5, 0.75, 0.9]  # few values: many ties
RELEVANCES = [-1, 0, 1, 1, 2, 3, 4]
CUSTOM_DISCOUNT = ("1.0 / (rank + 1)", lambda i: 1.0 / (i + 1))

OPTION_VALUES = {
    "judged": {"denominator": ["k", "list"]},
    "set_f": {"beta": [0.5, 1, 2]},
    "rbp": {"p": [0.5, 0.8, 0.95]},
    "precision": {"denominator": ["k", "list"]},
    "map": {"denominator": ["min", "relevant", "hits", "k"]},
    "cg": {"gain": ["linear", "exponential", "binary"]},
    "dcg": {"gain": ["linear", "exponential", "binary"], "discount": ["log2", "jarvelin", CUSTOM_DISCOUNT[0]]},
    "idcg": {"gain": ["linear", "exponential", "binary"], "discount": ["log2", "jarvelin"],
             "ideal": ["truth", "list", "binary", "k_slots"]},
    "ndcg": {"gain": ["linear", "exponential", "binary"], "discount": ["log2", "jarvelin", CUSTOM_DISCOUNT[0]],
             "ideal": ["truth", "list", "binary", "k_slots"]},
}


@st.composite
def metrics(draw, names=None) -> recsql.Metric:
    """A metric from ``names`` (default: the accuracy metrics) with random options and cutoff."""
    name = draw(st.sampled_from(names or ACCURACY))
    options = {opt: draw(st.sampled_from(values)) for opt, values in OPTION_VALUES.get(name, {}).items()
               if draw(st.booleans())}
    rule = recsql.registry()[name].k_rule
    k = None if rule == "none" or (rule == "optional" and draw(st.booleans())) else draw(st.integers(1, 7))
    if k is None and (options.get("ideal") in ("list", "k_slots") or options.get("denominator") == "k"):
        k = draw(st.integers(1, 7))  # these options need a cutoff
    return recsql.Metric(name, k, **options)


@st.composite
def recs_rows(draw, use_rank: bool = False, items: list = ITEMS) -> list[dict]:
    rows, pool = [], items
    for user in draw(st.lists(st.sampled_from(USERS), unique=True, max_size=5)):
        items = draw(st.lists(st.sampled_from(pool), unique=True, max_size=8))
        for item in items:
            if use_rank:
                rows.append({"user_id": user, "item_id": item, "rank": draw(st.integers(1, 6))})  # gaps and ties
            else:
                rows.append({"user_id": user, "item_id": item, "score": draw(st.sampled_from(SCORES))})
    return rows


@st.composite
def truth_rows(draw, items: list = ITEMS) -> list[dict]:
    rows = []
    for user in draw(st.lists(st.sampled_from(USERS), unique=True, max_size=5)):
        for item in draw(st.lists(st.sampled_from(items), unique=True, min_size=1, max_size=6)):
            rows.append({"user_id": user, "item_id": item, "relevance": draw(st.sampled_from(RELEVANCES))})
    return rows


def python_options(metric: recsql.Metric) -> dict:
    """The options the metric was given, defaults written out included (they win over a convention,
    as in recsql), for tests/support/reference.py; a custom discount as a Python callable."""
    given = {o: v for o, v in metric.all_options().items() if o in metric.explicit}
    options = {o: float(v) if metric.spec.params[o].kind == "number" else v for o, v in given.items()}
    if options.get("discount") not in (None, "log2", "jarvelin"):
        options["discount"] = CUSTOM_DISCOUNT[1]
    return options


COLUMNS = {"user_id": "int64", "item_id": "int64", "score": "float64", "rank": "int64", "relevance": "float64"}


def frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    """Generated rows as a DataFrame with fixed dtypes (an empty list keeps its columns' types)."""
    return pd.DataFrame(rows, columns=columns).astype({c: COLUMNS[c] for c in columns})


def check(result: recsql.Evaluation, metric: recsql.Metric, expected: dict) -> None:
    """recsql's per-user values and summary for ``metric`` equal the reference's ``{user: value}``.
    The per-user table holds the users of every asked metric's population; a metric's column is
    empty outside its own (msr: ndcg's population is not precision's)."""
    got = {u: v for u, v in zip(result.per_user["user_id"], result.per_user[metric.column]) if not pd.isna(v)}
    assert set(got) == set(expected), (str(metric), got, expected)
    for user, value in expected.items():
        assert math.isclose(got[user], value, rel_tol=1e-9, abs_tol=1e-12), (str(metric), user, got[user], value)
    summary = result.summary[metric.column].iloc[0]
    want = summarize(expected, metric.spec.summary)
    assert (want is None and pd.isna(summary)) or math.isclose(summary, want, rel_tol=1e-9, abs_tol=1e-12)


def as_probabilities(rows: list[dict], metrics) -> list[dict]:
    """``rows`` (recs with scores) with each user's scores divided by their sum when a metric of ``metrics`` reads
    them as a target policy's probabilities (target=scores: each user's must sum to at most 1), else as they are.
    A positive factor per user keeps every list's order and ties."""
    if not any(m.all_options().get("target") == "scores" and m.spec.family == "off_policy" for m in metrics):
        return rows
    totals: dict = {}
    for row in rows:
        totals[row["user_id"]] = totals.get(row["user_id"], 0.0) + row["score"]
    return [{**row, "score": row["score"] / totals[row["user_id"]]} for row in rows]
