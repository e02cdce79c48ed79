"""The greedy ideal order of the intent-aware metrics (alpha_ndcg, nerr_ia), written as a chain of steps.

The ideal list of α-nDCG is NP-hard to find; ndeval, and after it every tool, takes the greedy one
(Clarke et al., SIGIR 2008): at each step the relevant item with the largest gain given the items
already picked, gain(i) = Σ_{s ∈ intents of i} (1 − α)^{c_s}, c_s = the picked items relevant to s;
ties go to the largest item id, as in ndeval (its loop over the items in docno order lets an equal gain
of a later docno replace the best so far: strcmp order, which is the ids' order when their text sorts as
their values do). Gains are compared rounded to 1e-12, so that two items of equal gain tie whatever order an
engine adds an item's terms in (or rounds ``POWER`` in the last place). Each step depends on the one before,
so the chain is unrolled, one CTE per step up to the largest cutoff asked: a plain query every engine runs
(a recursive one would not run on Spark). A step reads the one before once (an engine that inlines CTEs, as Spark does,
would otherwise repeat the earlier steps exponentially often): its rows are the relevant judgments
(user, alpha, item, intent) with the step that picked the item (NULL: not yet) and its gain, and it
marks the best item not yet picked. The first CTE numbers each user's items (1: the largest id) and intents,
so the steps sort and compare small integers, whatever the ids' types (1.13–1.19× faster on SQLite,
docs/performance.md). ``intent_ideal`` then reads (user_id, alpha, step, gain). DuckDB takes the
same picks from per-user lists instead (sql/_intent_ideal.duckdb.sql).

The runners of SQLite, MariaDB and ClickHouse, which run a statement nesting more SELECTs than the
engine takes in steps, each CTE read more than once a temporary table of its own (recsql/engines/steps.py), get
from that cutoff on (:func:`grouped_from`) a chain whose positions are groupings and joins over the items not yet
picked (:func:`_grouped_step`): each reads the position before three times, which costs nothing once it is a
table, and sorts only the open items, once. The same picks; at @100, 2.7× faster on SQLite, 1.6× on MariaDB,
1.35× on ClickHouse (docs/performance.md). Spark's and DataFusion's runners keep the chain of windows: each of
Spark's steps is a local checkpoint, and with the grouped chain's 300 its driver ran out of Java heap; DataFusion
took two metrics in half the time but every metric at @100 no longer fit its 4 GB pool. The SQL that
``to_sql`` writes keeps the chain of windows, which runs in one statement: a grouped chain would not, on an
engine that writes a CTE out at each read.
"""

from __future__ import annotations

from sqlglot import exp

from ..trees import parse

MAX_IDEAL_K = 100  # steps of the chain: a larger cutoff is refused
GAIN_GRAIN = "1e12"  # gains are compared as FLOOR(gain * GAIN_GRAIN + 0.5), in the chain and in the DuckDB lists

_FIRST = ("SELECT j.user_id, a.alpha, j.item_no, j.intent_no, CAST(NULL AS BIGINT) AS step, CAST(NULL AS DOUBLE) AS gain "
          "FROM (SELECT user_id, DENSE_RANK() OVER (PARTITION BY user_id ORDER BY item_id DESC) AS item_no, "
          "DENSE_RANK() OVER (PARTITION BY user_id ORDER BY intent) AS intent_no FROM intent_judged) AS j "
          "CROSS JOIN intent_alphas AS a")

_GROUPED_FIRST = ("SELECT j.user_id, a.alpha, j.item_no, j.intent_no, CAST(0 AS BIGINT) AS seen, CAST(NULL AS BIGINT) AS step, "
                  "CAST(NULL AS DOUBLE) AS gain FROM (" + _FIRST.split(" FROM (", 1)[1])


def _step(before: str, step: int) -> str:
    """Step ``step``: each row's intent seen count c_s among the items picked, each item's gain, the best
    item not yet picked (rank 1: unpicked first, largest gain, smallest number, so largest id) marked with ``step``."""
    seen = ("SELECT s.user_id, s.alpha, s.item_no, s.intent_no, s.step, s.gain, "
            "COUNT(s.step) OVER (PARTITION BY s.user_id, s.alpha, s.intent_no) AS seen "
            f"FROM {before} AS s")
    gains = ("SELECT c.user_id, c.alpha, c.item_no, c.intent_no, c.step, c.gain, "
             "SUM(CASE WHEN c.step IS NULL THEN POWER(1 - c.alpha, c.seen) END) "
             "OVER (PARTITION BY c.user_id, c.alpha, c.item_no) AS item_gain "
             f"FROM ({seen}) AS c")
    ranked = ("SELECT g.user_id, g.alpha, g.item_no, g.intent_no, g.step, g.gain, g.item_gain, "
              "DENSE_RANK() OVER (PARTITION BY g.user_id, g.alpha ORDER BY CASE WHEN g.step IS NULL THEN 0 ELSE 1 END, "
              f"FLOOR(g.item_gain * {GAIN_GRAIN} + 0.5) DESC, g.item_no) AS best "
              f"FROM ({gains}) AS g")
    return ("SELECT r.user_id, r.alpha, r.item_no, r.intent_no, "
            f"CASE WHEN r.step IS NULL AND r.best = 1 THEN CAST({step} AS BIGINT) ELSE r.step END AS step, "
            "CASE WHEN r.step IS NULL AND r.best = 1 THEN r.item_gain ELSE r.gain END AS gain "
            f"FROM ({ranked}) AS r")


# Runners that run a long statement in steps, each CTE read more than once a step of its own (recsql/engines/steps.py):
# there a chain long enough to be run in steps is written with positions of groupings and joins instead of three
# windows each (:func:`_grouped_step`; alpha_ndcg@100 and nerr_ia@100 on MovieLens-100K-shaped data: SQLite 29.8 s
# against 81.8 s for alpha_ndcg alone, MariaDB 36 s against 57 s, ClickHouse 11.5 s against 15.6 s). Not in one
# statement: SQLite writes a CTE out at each read, and a position reads the one before three times. Not Spark: a
# step there is a local checkpoint, and 300 of them ran its driver out of Java heap. Not DataFusion: 12.4 s against
# 25 s for those two metrics, but every metric at @100 then ran out of its 4 GB memory pool in an external sort.
# ("mysql" is MariaDB's: MySQL's runner runs nothing in steps.)
GROUPED = ("sqlite", "mysql", "clickhouse")
SELECTS_PER_POSITION = 4  # the SELECTs a position of either form nests through the one before


def grouped_from(dialect: str, step_depth: int) -> int:
    """The first cutoff from which a runner of ``dialect`` gets the grouped chain: the first whose chain nests more
    SELECTs than ``step_depth`` (the dialect's limit beyond which its runner runs the statement in steps); 0: none."""
    return step_depth // SELECTS_PER_POSITION + 1 if dialect in GROUPED and step_depth else 0


def _grouped_step(before: str, step: int) -> list[tuple[str, str]]:
    """Position ``step`` as (name, query) CTEs, the last one ``intent_pick_<step>``, its rows those of the chain's
    step over the same rows: each open item's gain (a grouping), the best one (largest gain rounded to GAIN_GRAIN,
    then the smallest number: a window over the open items), the intents it covers, and the next relation: the
    picks so far, the new one, and the other open rows with the seen counts of the intents covered raised by one.
    The best item is read twice and the position before three times: each a step of its own."""
    gain, best, cover = (f"intent_{part}_{step}" for part in ("gain", "best", "cover"))
    return [
        (gain, "SELECT user_id, alpha, item_no, SUM(POWER(1 - alpha, seen)) AS gain "
               f"FROM {before} WHERE step IS NULL GROUP BY user_id, alpha, item_no"),
        (best, "SELECT b.user_id, b.alpha, b.item_no, b.gain FROM (SELECT g.user_id, g.alpha, g.item_no, g.gain, "
               f"ROW_NUMBER() OVER (PARTITION BY g.user_id, g.alpha ORDER BY FLOOR(g.gain * {GAIN_GRAIN} + 0.5) DESC, "
               f"g.item_no) AS place FROM {gain} AS g) AS b WHERE b.place = 1"),
        (cover, f"SELECT DISTINCT o.user_id, o.alpha, o.intent_no FROM {before} AS o JOIN {best} AS b "
                "ON b.user_id = o.user_id AND b.alpha = o.alpha AND b.item_no = o.item_no WHERE o.step IS NULL"),
        (f"intent_pick_{step}",
         f"SELECT user_id, alpha, item_no, intent_no, seen, step, gain FROM {before} WHERE step IS NOT NULL "
         f"UNION ALL SELECT b.user_id, b.alpha, b.item_no, CAST(NULL AS BIGINT) AS intent_no, CAST(NULL AS BIGINT) AS seen, "
         f"CAST({step} AS BIGINT) AS step, b.gain FROM {best} AS b "
         "UNION ALL SELECT o.user_id, o.alpha, o.item_no, o.intent_no, "
         "CAST(o.seen + CASE WHEN c.intent_no IS NULL THEN 0 ELSE 1 END AS BIGINT) AS seen, o.step, o.gain "
         f"FROM {before} AS o LEFT JOIN {best} AS b ON b.user_id = o.user_id AND b.alpha = o.alpha "
         f"LEFT JOIN {cover} AS c ON c.user_id = o.user_id AND c.alpha = o.alpha AND c.intent_no = o.intent_no "
         "WHERE o.step IS NULL AND (b.item_no IS NULL OR o.item_no <> b.item_no)"),
    ]


def list_values(steps: int) -> dict[str, object]:
    """The values of sql/_intent_ideal.duckdb.sql's placeholders for ``steps`` picks."""
    return {"intent_ideal_k": steps, "gain_grain": exp.Literal.number(GAIN_GRAIN)}


def ideal_chain(steps: int, grouped: bool = False) -> tuple[list[exp.CTE], exp.Select]:
    """The CTEs of the first ``steps`` greedy picks and the query of ``intent_ideal`` over them: one CTE of windows
    per position, or, ``grouped``, four of groupings and joins, for a runner that runs them in steps."""
    ctes = [exp.CTE(this=parse(_GROUPED_FIRST if grouped else _FIRST, read="duckdb"), alias=exp.to_identifier("intent_pick_0"))]
    for step in range(1, steps + 1):
        before = f"intent_pick_{step - 1}"
        parts = _grouped_step(before, step) if grouped else [(f"intent_pick_{step}", _step(before, step))]
        ctes.extend(exp.CTE(this=parse(query, read="duckdb"), alias=exp.to_identifier(name)) for name, query in parts)
    ideal = parse(f"SELECT user_id, alpha, step, MAX(gain) AS gain FROM intent_pick_{steps} "
                  "WHERE step IS NOT NULL GROUP BY user_id, alpha, step", read="duckdb")
    return ctes, ideal
