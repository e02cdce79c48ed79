"""Custom discounts (docs/guide/metrics.md): every allowed function means the same on every engine, the
arithmetic is DOUBLE (``1/rank`` is not integer division anywhere), ambiguous or engine-dependent
spellings are refused with what to write instead, a discount that is not a finite number at some
rank is refused before any query runs, and an absurdly long or deep one is a RecsqlError."""
from __future__ import annotations

import math
from contextlib import ExitStack

import pandas as pd
import pytest

import recsql
from support.engines import ENGINES, start
from recsql.discounts import CHECKED_RANKS, MAX_DEPTH, MAX_LENGTH, discount_expression, normalize_discount

pytestmark = pytest.mark.filterwarnings("ignore::recsql.RecsqlWarning")

L2 = math.log2
# One discount per allowed function or operator (several integer-only spellings on purpose), with
# the value it must have at rank i, computed in Python in double arithmetic.
DISCOUNTS = {
    "1 / rank": lambda i: 1 / i,  # integer division on PostgreSQL, SQLite, Trino, SQL Server if not cast
    "1 / LOG2(rank + 1)": lambda i: 1 / L2(i + 1),
    "1 / LOG10(rank + 9)": lambda i: 1 / math.log10(i + 9),
    "1 / LOG(3, rank + 2)": lambda i: 1 / math.log(i + 2, 3),  # base first, as DuckDB and PostgreSQL read it
    "1 / LN(rank + 1)": lambda i: 1 / math.log(i + 1),
    "EXP(-rank / 2)": lambda i: math.exp(-i / 2),
    "POWER(0.5, rank - 1)": lambda i: 0.5 ** (i - 1),
    "rank ^ -1": lambda i: i ** -1,
    "1 / SQRT(rank)": lambda i: 1 / math.sqrt(i),
    "1 / (1 + ABS(rank - 3))": lambda i: 1 / (1 + abs(i - 3)),
    "1 / GREATEST(1, rank - 2)": lambda i: 1 / max(1, i - 2),
    "LEAST(1, 3 / rank)": lambda i: min(1, 3 / i),
    "1 / FLOOR((rank + 1) / 2)": lambda i: 1 / math.floor((i + 1) / 2),
    "1 / CEIL(rank / 2)": lambda i: 1 / math.ceil(i / 2),
    "CASE WHEN rank <= 2 THEN 1 ELSE 1 / LOG2(rank) END": lambda i: 1 if i <= 2 else 1 / L2(i),
    "IF(rank = 1, 1, 2 / (rank * 3))": lambda i: 1 if i == 1 else 2 / (i * 3),
    "CASE WHEN rank <> 2 AND NOT rank > 4 OR rank >= 7 THEN 1 ELSE 1 / 2 END":
        lambda i: 1 if (i != 2 and not i > 4) or i >= 7 else 0.5,
    "CAST(1 AS DOUBLE) / rank - -1 / (rank * rank)": lambda i: 1 / i + 1 / (i * i),
    "CASE WHEN rank < 3 THEN 7 / 2 * rank ELSE 1 / (rank - 2) END": lambda i: 3.5 * i if i < 3 else 1 / (i - 2),
}
RANKS = 8


def one_hit_per_rank() -> tuple[pd.DataFrame, pd.DataFrame]:
    """User u's only relevant item (gain 1) is at position u: dcg@8 of user u = disc(u)."""
    recs = pd.DataFrame([{"user_id": u, "item_id": i, "score": float(RANKS - i)}
                         for u in range(1, RANKS + 1) for i in range(RANKS)])
    truth = pd.DataFrame([{"user_id": u, "item_id": u - 1, "relevance": 1.0} for u in range(1, RANKS + 1)])
    return recs.astype({"user_id": "int64", "item_id": "int64"}), truth.astype({"user_id": "int64", "item_id": "int64"})


def metric(text: str) -> recsql.Metric:
    return recsql.Metric("dcg", RANKS, discount=text)


def test_every_discount_is_the_python_value_on_duckdb():
    recs, truth = one_hit_per_rank()
    result = recsql.evaluate(recs, truth, [metric(t) for t in DISCOUNTS]).per_user.set_index("user_id")
    for text, value in DISCOUNTS.items():
        for rank in range(1, RANKS + 1):
            got = result.loc[rank, str(metric(text))]
            assert math.isclose(got, value(rank), rel_tol=1e-12), (text, rank, got, value(rank))


@pytest.fixture(scope="module", params=ENGINES)
def engine(request):
    with ExitStack() as stack:
        yield start(request.param, stack)


def test_every_discount_gives_duckdbs_number_on_every_engine(engine):
    """Every allowed function, integer-looking arithmetic included, in one query on each engine."""
    recs, truth = one_hit_per_rank()
    asked = [metric(t) for t in DISCOUNTS]
    want = recsql.evaluate(recs, truth, asked).per_user.set_index("user_id").sort_index()
    got = recsql.evaluate(engine.load(recs), engine.load(truth), asked, con=engine.con).per_user
    got = got.assign(user_id=got["user_id"].astype("int64")).set_index("user_id").sort_index()
    assert list(got.index) == list(want.index) == list(range(1, RANKS + 1))
    for m in asked:
        for rank in range(1, RANKS + 1):
            a, b = float(got.loc[rank, str(m)]), float(want.loc[rank, str(m)])
            assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (engine.name, str(m), rank, a, b)


@pytest.mark.parametrize("dialect", ["postgres", "sqlite", "mysql", "spark", "clickhouse", "bigquery", "tsql",
                                     "trino", "snowflake", "oracle"])
def test_rendered_discount_has_no_engine_dependent_spelling(dialect):
    """No one-argument LOG, no two-argument LOG whose argument order differs, rank in DOUBLE."""
    from sqlglot import exp
    for text in DISCOUNTS:
        tree = discount_expression(normalize_discount(text, "dcg"), exp.column("position"))
        assert not list(tree.find_all(exp.Log)), text
        sql = tree.sql(dialect=dialect).upper()
        assert "LOG(" not in sql or dialect == "tsql", (text, sql)  # T-SQL spells LN as LOG(x)
        assert "POSITION" in sql and all(c.parent and isinstance(c.parent, exp.Cast) for c in tree.find_all(exp.Column))


@pytest.mark.parametrize("text, words", [
    ("LOG(rank)", ["LOG(x) with one argument", "log10", "natural logarithm", "LOG10(x), LN(x), LOG2(x)"]),
    ("1 / LOG(rank + 1)", ["LOG(x) with one argument"]),
    ("1 / (rank - 1)", ["NULL (a division by zero) at rank 1", "finite number"]),
    ("1 / LN(rank)", ["at rank 1", "finite number"]),
    ("LN(rank - 1)", ["-inf at rank 1"]),
    ("SQRT(2 - rank)", ["nan at rank 3"]),
    ("EXP(rank)", ["inf at rank 710", f"1..{CHECKED_RANKS}"]),
    ("1 / (rank - 5000)", ["at rank 5000"]),
    ("rank % 2", ["`%`", "FLOOR"]),
    ("1 / CAST(rank / 2 AS INT)", ["casts to INT", "FLOOR or CEIL"]),
    ("1 / relevance", ["only `rank` is allowed"]),
    ("1 / 2", ["does not use `rank`"]),
    ("1 / RANDOM() + rank", ["not allowed"]),
    ("(" * 500 + "rank" + ")" * 500, ["too", "deep"] if MAX_LENGTH >= 1004 else ["characters long"]),
    ("1 / (" + "+".join(["rank"] * 80) + ")", ["levels deep", f"at most {MAX_DEPTH}"]),
    ("1 / (" + " + ".join(["rank"] * 200) + ")", ["characters long", f"at most {MAX_LENGTH}"]),
    ("(((((((((((((((((((((((((((((((((((((((((((rank)))))))))))))))))))))))))))))))))))))))))))", ["deep"]),
])
def test_refused_discounts_name_the_problem(text, words):
    with pytest.raises(recsql.RecsqlError) as caught:
        recsql.Metric("ndcg", 5, discount=text)
    message = str(caught.value)
    assert all(w in message for w in words), message
    assert len(message) < 1000  # a huge discount is not echoed whole


def test_deep_discount_is_a_recsql_error_not_a_recursion_error():
    for depth in (50, 500, 5000):
        with pytest.raises(recsql.RecsqlError):
            recsql.parse_metric(f"ndcg(discount={'(' * depth}1 / rank{')' * depth})@5")
        with pytest.raises(recsql.RecsqlError):
            recsql.Metric("dcg", 3, discount="1 / (" + "-".join(["rank"] * depth) + " + 10000000)")


def test_custom_discount_round_trips_and_evaluates():
    m = recsql.parse_metric("ndcg(discount=1.0 / CASE WHEN rank <= 2 THEN rank ELSE LOG2(rank) END,ideal=k_slots)@5")
    assert recsql.parse_metric(str(m)) == m
    recs, truth = one_hit_per_rank()
    values = recsql.evaluate(recs, truth, [m]).per_user.set_index("user_id")[m.column]
    ideal = sum(1 / (i if i <= 2 else L2(i)) for i in range(1, 6))
    for rank in range(1, 6):
        assert math.isclose(values[rank], (1 / (rank if rank <= 2 else L2(rank))) / ideal)
