"""The SQL recsql renders explains itself (docs/guide/engines.md, "Reading the SQL"): a header (recsql's
version, the metrics as asked, the output, convention, threshold, population, tie rule, dialect),
each metric's per-user column named after it through the whole statement, its formula beside the
expression that computes it; no CTE that is always empty, no column and no join nobody reads. The
comments survive every dialect's rendering, user text cannot leave them, and the statement runs on
DuckDB and SQLite with the same, hand-worked numbers."""
from __future__ import annotations

import math
import re
import sqlite3
from pathlib import Path

import duckdb
import pandas as pd
import pytest
import sqlglot
from sqlglot import exp

import recsql
from recsql.compose.unread import CHECKED_UNIQUE, drop_unread
from recsql.dialects import DIALECTS
from recsql.trees import parse

ROOT = Path(__file__).resolve().parent.parent
VERSION = re.search(r'(?m)^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text()).group(1)


def formula(name: str) -> str:
    """The ``-- formula:`` line of ``sql/<name>.sql``, read from the file."""
    text = (ROOT / "sql" / f"{name}.sql").read_text(encoding="utf-8")
    return re.search(r"(?m)^-- formula: (.*)$", text).group(1).strip()


def comments(sql: str) -> list[str]:
    """The bodies of the block comments of ``sql``, in order (no recsql statement has ``/*`` in a string)."""
    return [c.strip() for c in re.findall(r"/\*(.*?)\*/", sql, flags=re.S)]


def ctes(tree: exp.Expression) -> dict[str, exp.Expression]:
    return {c.alias: c.this for c in tree.find_all(exp.CTE)}


def test_ndcg_and_map_have_a_header_named_columns_and_their_formulas():
    sql = recsql.to_sql("db.recs", "db.truth", ["ndcg@10", "map@10"])
    lines = sql.splitlines()
    assert lines[:3] == [
        f"/* recsql {VERSION}: ndcg@10, map@10 (summary: one row per run) */",
        "/* convention: recsql; relevant: relevance >= 1; population: relevant (users with a relevant truth item) */",
        "/* ties: item_id (tied items in item id order, ascending); dialect: duckdb */"]
    assert lines[3].startswith("WITH ")
    tree = sqlglot.parse_one(sql, read="duckdb")
    computed = ctes(tree)["per_user_raw"]
    by_name = {e.alias_or_name: e for e in computed.expressions}
    assert f"ndcg@10: {formula('ndcg')}" in " ".join(by_name["ndcg_at_10"].comments or [])
    assert f"map@10: {formula('map')}" in " ".join(by_name["map_at_10"].comments or [])
    # named so from where they are computed to the last SELECT, which names them as asked
    assert {"ndcg_at_10", "map_at_10"} <= {e.alias_or_name for e in ctes(tree)["per_user"].expressions}
    assert [e.sql("duckdb") for e in tree.expressions if e.alias in ("ndcg@10", "map@10")] == [
        'FAVG(ndcg_at_10) AS "ndcg@10"', 'FAVG(map_at_10) AS "map@10"']
    assert not re.search(r"\b_m\d+\b", sql)


def test_the_header_names_the_options_in_force():
    sql = recsql.to_sql(metrics=["P_10", "ndcg@5"], recs="db.recs", truth="db.truth", threshold=2, population="judged",
                        ties="item_id_desc", convention="ir_measures", dialect="postgres", output="per_user")
    assert comments(sql)[:3] == [
        f"recsql {VERSION}: P_10, ndcg@5 (per_user: one row per user of the population)",
        "convention: ir_measures; relevant: relevance >= 2; population: judged (users with a truth row)",
        "ties: item_id_desc (tied items in item id order, descending); dialect: postgres"]
    assert "precision_at_10" in sql and "ndcg_at_5" in sql


def _alone(name: str) -> tuple[str, dict]:
    """A metric of the registry asked alone, with a cutoff where it takes one, and the inputs it needs."""
    spec = recsql.registry()[name]
    metric = recsql.Metric(name, 10 if spec.k_rule != "none" else None)
    needs = spec.requires(metric.all_options())
    inputs = {"items": "db.items"} if needs & {"price", "probability", "category"} else {}
    if "features" in needs:
        inputs["item_features"] = "db.item_features"
    if needs & {"interactions", "interactions_or_expected_recs"}:
        inputs["interactions"] = "db.interactions"
    if "expected_recs" in needs:
        inputs["expected_recs"] = "db.expected_recs"
    if "intents" in needs:
        inputs["intents"] = "db.intents"
    if "logs" in needs:
        inputs["logs"] = "db.logs"
    if "reward_model" in needs:
        inputs["reward_model"] = "db.reward_model"
    if "slate_propensity" in needs:
        inputs["slate_propensity_col"] = "slate_propensity"
    if "cascade_propensity" in needs:
        inputs["cascade_propensity_col"] = "cascade_propensity"
    return str(metric), inputs


def _always_empty(body: exp.Expression, empty: set[str]) -> bool:
    """A query that returns no row whatever the inputs: WHERE FALSE, or FROM an always-empty CTE."""
    if isinstance(body, exp.Union):
        return _always_empty(body.left, empty) and _always_empty(body.right, empty)
    if not isinstance(body, exp.Select):
        return False
    where = body.args.get("where")
    if where is not None and where.this == exp.false():
        return True
    source = body.args.get("from_")
    return source is not None and isinstance(source.this, exp.Table) and source.this.name in empty


def _first_select(body: exp.Expression) -> exp.Select:
    while isinstance(body, exp.Union):
        body = body.left
    return body


def _unread(tree: exp.Expression) -> list[str]:
    """``cte.column`` for each column of a CTE that no other part of the statement names (but a
    column that makes the rows: UNNEST), and ``cte JOIN alias`` for each join of a CTE whose columns
    the joining select never reads (but a LEFT JOIN of an input, ``*_in``, whose duplicate rows,
    which the input checks count, would repeat the rows it joins; not of one the checks hold unique:
    recsql.compose.unread.CHECKED_UNIQUE, the items)."""
    found = []
    with_ = tree.args["with_"]
    parts = {c.alias: c.this for c in with_.expressions}
    final = tree.copy()
    final.set("with_", None)
    parts[""] = final
    for name, body in parts.items():
        if not name:
            continue
        readers = [b for other, b in parts.items() if other != name
                   and any(t.name == name for t in b.find_all(exp.Table))]
        if any(isinstance(e, exp.Star) for r in readers for s in r.find_all(exp.Select) for e in s.expressions):
            continue
        named = {c.name for r in readers for c in r.find_all(exp.Column)}
        found += [f"{name}.{e.alias_or_name}" for e in _first_select(body).expressions
                  if e.alias_or_name not in named and not isinstance(e, exp.Star) and not e.find(exp.Unnest, exp.Explode)]
    for owner, body in parts.items():
        for select in body.find_all(exp.Select):
            for join in select.args.get("joins") or []:
                if not isinstance(join.this, exp.Table) or join.this.name not in parts or (
                        join.side == "LEFT" and join.this.name.endswith("_in") and join.this.name not in CHECKED_UNIQUE):
                    continue
                alias = join.this.alias_or_name
                columns = {e.alias_or_name for e in _first_select(parts[join.this.name]).expressions}
                outside = [c for c in select.find_all(exp.Column) if c.find_ancestor(exp.Join) is not join]
                if not any(c.table == alias or (not c.table and c.name in columns) for c in outside):
                    found.append(f"{owner or 'final'} JOIN {alias}")
    return found


@pytest.mark.parametrize("dialect, output", [("duckdb", "summary"), ("postgres", "per_user")])
def test_every_metric_alone_has_no_empty_cte_and_nothing_unread(dialect, output):
    problems = {}
    for name in sorted(recsql.registry()):
        metric, inputs = _alone(name)
        if recsql.registry()[name].population == "global" and output == "per_user":
            continue  # one number per run: not a per-user column
        sql = recsql.to_sql("db.recs", "db.truth", [metric], dialect=dialect, output=output, **inputs)
        tree = sqlglot.parse_one(sql, read=DIALECTS[dialect].sqlglot)
        empty: set[str] = set()
        for alias, body in ctes(tree).items():
            if _always_empty(body, empty):
                empty.add(alias)
        found = [f"always empty: {e}" for e in sorted(empty)] + _unread(tree)
        if found:
            problems[metric] = found
    assert problems == {}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_comments_survive_every_dialect(dialect):
    sql = recsql.to_sql("db.recs", "db.truth", ["ndcg@10", "map@10"], dialect=dialect)
    found = comments(sql)
    assert found[0] == f"recsql {VERSION}: ndcg@10, map@10 (summary: one row per run)"
    assert found[2].endswith(f"dialect: {dialect}")
    assert f"ndcg@10: {formula('ndcg')}" in found and f"map@10: {formula('map')}" in found
    assert "ndcg_at_10" in sql and "map_at_10" in sql


def test_user_text_cannot_leave_its_comment():
    """A metric asked with a comment of its own in a custom discount: in the header its ``/*``,
    ``*/`` and line break are broken up, so it neither ends the header's comment nor opens a nested
    one (PostgreSQL nests them); the statement runs and the discount is the one asked."""
    asked = "ndcg(discount=1/rank/* x\nDROP TABLE recs; -- */)@3"
    for dialect in ("duckdb", "postgres", "mysql"):
        sql = recsql.to_sql("recs", "truth", [asked], dialect=dialect)
        assert all("/*" not in c for c in comments(sql)), sql
        assert sql.splitlines()[0] == (f"/* recsql {VERSION}: ndcg(discount=1/rank/ * x\\nDROP TABLE recs; -- * /)@3 "
                                       "(summary: one row per run) */")
    con = duckdb.connect()
    con.execute("CREATE TABLE recs AS SELECT * FROM (VALUES (1, 10, 0.9), (1, 11, 0.8)) AS t(user_id, item_id, score)")
    con.execute("CREATE TABLE truth AS SELECT * FROM (VALUES (1, 11, 1.0)) AS t(user_id, item_id, relevance)")
    row = con.execute(recsql.to_sql("recs", "truth", [asked])).fetchone()
    assert row[1] == pytest.approx(0.5)  # (1/2) / (1/1): the relevant item at rank 2
    assert con.execute("SELECT COUNT(*) FROM recs").fetchone()[0] == 2


# (statement, what the pass leaves of it): each keeps its rows (checked on DuckDB below)
REWRITES = [
    ("WITH a AS (SELECT x, y FROM t), b AS (SELECT x, y FROM a WHERE x > 0) SELECT x FROM b",
     "WITH a AS (SELECT x FROM t), b AS (SELECT x FROM a WHERE x > 0) SELECT x FROM b"),
    ("WITH a AS (SELECT x, y FROM t UNION ALL SELECT x, y + 1 FROM u) SELECT x FROM a WHERE x > 0",
     "WITH a AS (SELECT x FROM t UNION ALL SELECT x FROM u) SELECT x FROM a WHERE x > 0"),
    # a pass-through CTE is read as its source; a one-row CTE crossed and not read goes
    ("WITH a AS (SELECT x FROM t), b AS (SELECT x FROM a), c AS (SELECT COUNT(*) AS n FROM t) "
     "SELECT b.x FROM b CROSS JOIN c", "WITH a AS (SELECT x FROM t) SELECT b.x FROM a AS b"),
    # a LEFT JOIN matching at most one row (grouped on the joined key) and not read goes
    ("WITH a AS (SELECT x, MAX(y) AS y FROM u GROUP BY x), b AS (SELECT t.x FROM t LEFT JOIN a ON t.x = a.x) "
     "SELECT x FROM b", "WITH b AS (SELECT t.x FROM t) SELECT x FROM b"),
    # kept: UNION and EXCEPT compare whole rows; a LEFT JOIN that can repeat rows (its unread column goes);
    # a column GROUP BY reads by its alias
    ("WITH a AS (SELECT x, y FROM t UNION SELECT x, y FROM u) SELECT x FROM a", None),
    ("WITH a AS (SELECT x, y FROM t EXCEPT SELECT x, y FROM u) SELECT x FROM a", None),
    ("WITH a AS (SELECT x, y FROM u), b AS (SELECT t.x FROM t LEFT JOIN a ON t.x = a.x) SELECT x FROM b",
     "WITH a AS (SELECT x FROM u), b AS (SELECT t.x FROM t LEFT JOIN a ON t.x = a.x) SELECT x FROM b"),
    ("WITH a AS (SELECT MAX(x) AS x, y % 2 AS z FROM t GROUP BY z) SELECT x FROM a", None),
]


@pytest.mark.parametrize("sql, left", REWRITES)
def test_the_pass_drops_only_what_changes_no_row(sql, left):
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 1), (2, 5), (-1, 3)) AS v(x, y)")
    con.execute("CREATE TABLE u AS SELECT * FROM (VALUES (1, 2), (1, 7), (3, 4)) AS v(x, y)")
    rewritten = drop_unread(parse(sql)).sql("duckdb")
    assert rewritten == (left or sql)
    assert sorted(con.execute(rewritten).fetchall()) == sorted(con.execute(sql).fetchall())


RECS = [(1, "a", 0.9), (1, "b", 0.8), (1, "c", 0.7), (2, "d", 0.5), (3, "e", 0.4)]
TRUTH = [(1, "b", 1.0), (2, "d", 1.0), (2, "f", 2.0), (4, "g", 1.0)]


def _run(con, sql: str) -> dict:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return dict(zip(names, cursor.fetchone()))


def test_the_statement_runs_on_duckdb_and_sqlite_with_the_same_numbers():
    """ndcg@10 and map@10 by hand. User 1: the relevant b at rank 2: nDCG = (1/log2 3) / 1, AP =
    (1/2) / min(10, 1). User 2: d (gain 1) at rank 1, truth d, f (gain 2): nDCG = 1 / (2 + 1/log2 3),
    AP = 1 / min(10, 2). User 4: no recommendations, 0 and 0. User 3 has no truth: not averaged."""
    ndcg = [1 / math.log2(3), 1 / (2 + 1 / math.log2(3)), 0.0]
    ap = [0.5, 0.5, 0.0]
    duck, lite = duckdb.connect(), sqlite3.connect(":memory:")
    for con in (duck, lite):
        con.execute("CREATE TABLE recs (user_id INTEGER, item_id TEXT, score DOUBLE)")
        con.execute("CREATE TABLE truth (user_id INTEGER, item_id TEXT, relevance DOUBLE)")
        con.executemany("INSERT INTO recs VALUES (?, ?, ?)", RECS)
        con.executemany("INSERT INTO truth VALUES (?, ?, ?)", TRUTH)
    rows = {dialect: _run(con, recsql.to_sql("recs", "truth", ["ndcg@10", "map@10"], dialect=dialect))
            for dialect, con in (("duckdb", duck), ("sqlite", lite))}
    assert rows["duckdb"].keys() == rows["sqlite"].keys()
    assert rows["sqlite"] == {name: pytest.approx(value, abs=1e-12) for name, value in rows["duckdb"].items()}
    assert rows["duckdb"]["n_users"] == 3
    assert rows["duckdb"]["ndcg@10"] == pytest.approx(sum(ndcg) / 3, abs=1e-12)
    assert rows["duckdb"]["map@10"] == pytest.approx(sum(ap) / 3, abs=1e-12)


def test_items_no_metric_reads_are_not_joined_and_still_checked():
    """Items given, no attribute of theirs read: the stage joins them no more (their duplicates, which would
    repeat the rows the join meets, are refused by the input checks, which still run); the values are those
    without items."""
    recs = pd.DataFrame({"user_id": [1, 1, 2], "item_id": [1, 2, 1], "score": [0.9, 0.8, 0.7]})
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [2, 1], "relevance": [1, 1]})
    items = pd.DataFrame({"item_id": [1, 2], "price": [3.0, 5.0]})
    plain = recsql.evaluate(recs, truth, ["ndcg@2", "map@2"])
    given = recsql.evaluate(recs, truth, ["ndcg@2", "map@2"], items=items)
    assert "JOIN items_in" not in given.sql and "FROM items_in" in given.sql  # the checks read them
    pd.testing.assert_frame_equal(given.summary, plain.summary)
    priced = recsql.evaluate(recs, truth, ["ndcg@2", "money_precision@2"], items=items)
    assert "LEFT JOIN items_in" in priced.sql
    with pytest.raises(recsql.RecsqlError, match=r"items has 1 duplicated \(item_id\) row"):
        recsql.evaluate(recs, truth, ["ndcg@2"], items=pd.concat([items, items.iloc[:1]]))
