"""Optional parts of the ranked-rows stage in the ``recsql.evaluate`` macro (README, "dbt").

Some metrics need a part of the stage the others do not (``sql/_ranked.sql``): the ideal order of
the list itself (``ndcg(ideal=list)``), k relevant slots (``ideal=k_slots``), pairs of listed items
(``kendall``), rank correlation rows (``spearman``), cascade rows (``err``, ``pfound``). Each is a
few CTEs of its own and a UNION ALL branch of ``stacked``, with columns of ``ranked`` that read it.
Two read a side input (:data:`INPUTS`): the items' popularity (``arp``, ``novelty``, ``surprisal``)
and the number of interaction users (``novelty``, ``surprisal``), CTEs over ``interactions`` joined
by ``ranked`` (:func:`guarded_ranked` writes each join, and the columns it gives, only when its
feature is asked). Two serve the global metrics: the items' exposure (``personalization``; with the
catalog ``coverage`` and ``gini``), rows of one global row per run and cutoff, and the catalog's
size, joined by ``ranked``; the catalog's own CTE reads the catalog input, else the items, else
truth and recs (a factorised switch of recsql.dbt.evaluate).

Composing every combination of them with every base switch would multiply the statements by 32, so
the macro's statement is composed a second time per base key, *wide*: with one metric of each of
these features besides the representative metrics. The macro then takes

- a feature's own CTEs from the wide statement, each written only when a metric asked needs it
  (``{% if rs.features.<feature> %}``);
- ``stacked`` and ``ranked`` from the wide statement when any feature is asked, their feature
  branches of ``stacked`` each written only when its feature is (the composer pads every branch
  to the columns of all of them, so a branch's text does not depend on the others);
- everything else from the statement without features.

What a feature is built for comes from the metric list at Jinja time: the cutoffs of the tables
``list_ideal_cuts`` and ``corr_cuts``, the (kind, grade) rows of ``cascade_params``, the largest
cutoff of the slots and pairs. The wide statement is composed with sentinel values for them
(:data:`SENTINELS`), replaced by those Jinja expressions.
"""
from __future__ import annotations

import re

from sqlglot import exp

from ..compose.rewrite import union_branches
from ..compose.stage import BRANCHES

# Sentinels (first, second composition): each below the list's cut sentinel (recsql.dbt.evaluate),
# so the list is still cut there, and the slots' below their 10,000 positions.
SENTINELS = {"list_ideal": (7841, 7853), "corr": (7829, 7867), "slots": (7823, 7873), "pairs": (7817, 7879),
             "popularity": (7793, 7789), "interaction_users": (7759, 7757), "exposure": (7753, 7741)}
GRADE = (0.5772156, 0.6931471)  # a cascade's max_grade
CASCADE_CUT = 5  # err's cutoff: it appears in no stage text


def metrics(sentinel: int) -> dict[str, tuple[str, ...]]:
    """The metrics composed into the wide statement for each feature (metric strings): one, or
    those reading different columns of it (the items' popularity: their count, arp; their rank,
    serendipity without a baseline)."""
    s = {f: v[sentinel] for f, v in SENTINELS.items()}
    one = {"list_ideal": f"ndcg(ideal=list)@{s['list_ideal']}", "slots": f"ndcg(ideal=k_slots)@{s['slots']}",
            "pairs": f"kendall@{s['pairs']}", "corr": f"spearman@{s['corr']}",
            "cascade": f"err(max_grade={GRADE[sentinel]})@{CASCADE_CUT}",
            "popularity": f"arp@{s['popularity']}", "interaction_users": f"surprisal@{s['interaction_users']}",
            # the global metrics: one cutoff for both, as exposure_cuts holds each cutoff asked once
            "exposure": f"personalization@{s['exposure']}", "catalog": f"gini@{s['exposure']}"}
    return {f: (m, f"serendipity@{s['popularity']}") if f == "popularity" else (m,) for f, m in one.items()}


FEATURES = tuple(metrics(0))
# The features that read a side input (the wide statement is composed with it given), and the joins
# of ``ranked`` each adds (recsql.compose.stage drops them, with their columns, when it is off).
INPUTS = {"popularity": "interactions", "interaction_users": "interactions"}
SIDE_JOINS = {"popularity": {"pop"}, "interaction_users": {"iu"}, "catalog": {"cs"}}
BRANCH_FEATURE = {table: feature for feature, table in BRANCHES.items() if feature in FEATURES}
_TABLES = {"list_ideal_cuts": "list_ideal", "corr_cuts": "corr", "exposure_cuts": "exposure"}  # cutoff tables: one row per cutoff asked


def guarded_stacked(cte: exp.CTE, render) -> str:
    """``stacked`` with each feature's UNION ALL branch written only when that feature is asked."""
    branches = union_branches(cte.this)
    first, rest = branches[0], branches[1:]
    if first.args["from_"].this.name in BRANCH_FEATURE:
        raise RuntimeError("the first branch of stacked belongs to a feature")
    text = f"{cte.alias} AS (\n" + render(first)
    for branch in rest:
        feature = BRANCH_FEATURE.get(branch.args["from_"].this.name)
        body = "\nUNION ALL\n" + render(branch)
        text += body if feature is None else f"\n{_IF}{feature}{body}\n{_ENDIF}"
    return text + "\n)"


def guarded_ranked(cte: exp.CTE, render, render_projection, switch_joins: dict[str, set[str]] | None = None) -> str:
    """``ranked`` with the joins of a side input's feature (:data:`SIDE_JOINS`), and the columns that
    read them, written only when that feature is asked: the wide statement's ``ranked`` serves every
    call that asks any feature, and a side input not given has no CTE to join. ``switch_joins``: guard
    name -> the aliases of joins a factorised switch adds (recsql.dbt.evaluate), and the columns of
    other tables it adds (``table.column``: the items' categories compared in pairs, read from
    ``stacked``), marked :data:`SWITCH_IF` ``<name>_join`` and ``<name>_columns`` (the columns that
    read them) until that module writes their conditions."""
    select = cte.this.copy()
    if any(select.args.get(a) for a in ("where", "group", "having", "order")):
        raise RuntimeError("ranked is not a plain join: its side joins cannot be appended")
    guards = {f: (mine, _IF + f, _IF + f, _ENDIF) for f, mine in SIDE_JOINS.items()}
    guards.update({name: (mine, f"{SWITCH_IF}{name}_join", f"{SWITCH_IF}{name}_columns", SWITCH_ENDIF)
                   for name, mine in (switch_joins or {}).items()})

    def guard_of(aliases: set[str]) -> tuple | None:
        found = [g for g in guards.values() if aliases & g[0]]
        if len(found) > 1:
            raise RuntimeError(f"a part of ranked reads the joins of two guards ({aliases})")
        return found[0] if found else None

    joins = []
    for join in list(select.args.get("joins") or []):
        guard = guard_of({join.this.alias_or_name})
        if guard:
            joins.append(f"\n{guard[1]}\n{render(join)}\n{guard[3]}")
            join.pop()
    columns: dict[str, tuple[tuple, str]] = {}
    for n, projection in enumerate(list(select.expressions)):
        guard = guard_of({name for c in projection.find_all(exp.Column) for name in (c.table, f"{c.table}.{c.name}")})
        if guard:
            marker = f"recsql_side_column_{n}"
            columns[marker] = (guard, render_projection(projection.copy()))
            projection.replace(exp.column(marker))
    text = render(select)
    for marker, (guard, projection) in columns.items():
        text, found = re.subn(r",\s*\b" + marker + r"\b", lambda _m: f"{guard[2]},\n    {projection}{guard[3]}", text)
        if found != 1:
            raise RuntimeError(f"the column {projection} of ranked is first or written twice")
    return f"{cte.alias} AS (\n" + text + "".join(joins) + "\n)"


# Words standing for the guards of ``stacked``'s branches until the text's values become Jinja.
_IF, _ENDIF = "recsql_feature_if_", "recsql_feature_endif"
# and for the guards of ranked's joins a factorised switch adds (recsql.dbt.evaluate writes them)
SWITCH_IF, SWITCH_ENDIF = "recsql_switch_if_", "recsql_switch_endif"


def _rows(text: str, loop: str, row) -> str:
    """A one-row CTE ``name AS (SELECT ...)`` as a Jinja loop writing one row per item of ``loop``."""
    head, _, rest = text.partition("(")
    body = rest[:rest.rindex(")")].strip()
    return (f"{head}(\n{{%- for r in {loop} %}}{{% if not loop.first %}}\nUNION ALL\n{{% endif %}}"
            f"{row(body)}{{%- endfor %}}\n)")


def jinja_values(name: str, text: str, sentinel: int) -> str:
    """A CTE of the wide statement with the features' sentinels as the Jinja values the macro fills in."""
    if name in _TABLES:
        number = str(SENTINELS[_TABLES[name]][sentinel])
        if len(re.findall(r"\b" + number + r"\b", text)) != 1:
            raise RuntimeError(f"{name} is not one row of the cutoff {number}")
        return _rows(text, f"rs.features.{_TABLES[name]} | unique | sort",
                     lambda body: re.sub(r"\b" + number + r"\b", "{{ r }}", body))
    if name == "cascade_params":
        grade = re.escape(repr(GRADE[sentinel]))
        if len(re.findall(grade, text)) != 1 or text.count("'err'") != 1:
            raise RuntimeError("cascade_params is not one row of (kind, grade)")
        return _rows(text, "rs.features.cascade",
                     lambda body: re.sub(grade, "{{ r.grade }}", body.replace("'err'", "'{{ r.kind }}'")))
    text = re.sub(_IF + r"(\w+)", r"{%- if rs.features.\1 %}", text).replace(_ENDIF, "{%- endif %}")
    for feature in ("slots", "pairs"):
        text = re.sub(r"\b" + str(SENTINELS[feature][sentinel]) + r"\b", "{{ rs.features.%s | max }}" % feature, text)
    return text


def left(text: str) -> list[str]:
    """The sentinels left in a text."""
    values = [str(v) for pair in SENTINELS.values() for v in pair] + [repr(g) for g in GRADE]
    return [v for v in values if v in text]
