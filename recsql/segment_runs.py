"""The warning that a run column looks like user segments, given by ``evaluate`` and ``compare`` alike.

When truth is shared by the runs (it lacks the run columns) and, among the users with recommendations,
every user appears under exactly one value of a run column (within each run of the other run columns),
which has two values or more, each such run is scored over every truth user, the users of the other
values counted as 0. That is right only if the column really names runs (users recommended to by one
model each, say), so this warns and does not refuse: ``segments=`` evaluates or compares within segments.

>>> print(counts_query(exp.to_table("recs"), ["model", "cohort"], "user_id", 1).sql())
SELECT a.n, b.n FROM (SELECT MAX(n) AS n FROM (SELECT COUNT(DISTINCT "cohort") AS n FROM recs AS r GROUP BY "model") AS x) AS a CROSS JOIN (SELECT MAX(n) AS n FROM (SELECT COUNT(DISTINCT "cohort") AS n FROM recs AS r GROUP BY "model", "user_id") AS y) AS b
"""
from __future__ import annotations

from typing import Callable, Sequence

from sqlglot import exp

from .errors import warn


def counts_query(relation: exp.Expression, runs: Sequence[str], user: str, i: int) -> exp.Select:
    """The most values run column ``runs[i]`` has within one run of the other run columns (a column they
    determine, a model's version say, has one), and the most any (other runs, user) group has (NULL: no
    group; a NULL value is none), over ``relation`` (the rows of users with recommendations)."""
    def column(name: str) -> exp.Column:
        return exp.column(name, quoted=True)

    others = [column(r) for j, r in enumerate(runs) if j != i]
    distinct = exp.alias_(exp.Count(this=exp.Distinct(expressions=[column(runs[i])])), "n")

    def most(groups: list[exp.Column], name: str) -> exp.Expression:
        inner = exp.select(distinct.copy()).from_(exp.alias_(relation.copy(), "r"))
        inner = inner.group_by(*groups) if groups else inner
        return exp.select(exp.alias_(exp.Max(this=exp.column("n")), "n")).from_(inner.subquery(name))

    return exp.select(exp.column("n", "a"), exp.column("n", "b")) \
        .from_(most(others, "x").subquery("a")) \
        .join(most([*others, column(user)], "y").subquery("b"), join_type="cross")


def warn_segment_like_runs(run_cols: Sequence[str], user_col: str, relation: exp.Expression,
                           columns: Sequence[str], user: str, fetch: Callable[[exp.Select], tuple],
                           doing: str = "evaluate") -> None:
    """Warn for the first run column of ``run_cols`` that looks like user segments. ``relation``: the rows of
    the users with recommendations, whose run columns are ``columns`` (in ``run_cols``' order) and user column
    ``user``; ``fetch``: runs a query and returns its one row. The caller checks that truth lacks the run
    columns and no segments were given."""
    for i, name in enumerate(run_cols):
        values, most = fetch(counts_query(relation, columns, user, i))
        if values is None or values < 2 or most != 1:
            continue
        within = " within one run of the other run columns" if len(run_cols) > 1 else ""
        warn(f"run_cols: every user of recs appears under one value of the run column {name!r} (which "
             f"has {values}{within}), and truth has no {name!r} column: each of its runs is "
             f"scored over every truth user, those of the other values counted as 0 (users_without_recs). "
             f"If {name!r} gives user segments, pass segments= (a table of {user_col!r} -> "
             f"{name!r}; CLI: --segments) instead, to {doing} within each segment")
        return
