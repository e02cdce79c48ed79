"""The errors of the input checks: the checks run inside the evaluation query (recsql/compose/checks.py
DIAGNOSTICS: columns of every raw row); :func:`refuse` raises for the first that found something,
and the functions below it run only then, to name the column and give examples. They read the
inputs again, so if the data changed in between they may find less: the error is raised anyway,
from the counts the query saw. :func:`fetch_checked` runs a statement and names the NULL or NaN
input an engine error came from."""
from __future__ import annotations

from typing import Any, Sequence

from sqlglot import exp

from .compose import (ITEM_VALUES, ITEM_VALUE_INVALID, MAX_EXPONENT, Plan, expected_in, input_runs, intents_in, internal_runs,
                      not_finite, quoted_column, recs_in, truth_in, truth_runs, whole_id)
from .compose.checks import SEGMENT_CHECKS
from .compose.policy import PER_POSITION
from .dialects import render
from .engines.base import Runner
from .explain_logs import refuse_logs
from .errors import RecsqlError
from .validate import duplicate_report


def _count(condition: exp.Expression) -> exp.Expression:
    count = exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))], default=exp.Literal.number(0)))
    return exp.Coalesce(this=count, expressions=[exp.Literal.number(0)])  # SUM of no rows is NULL


def _value_checks(plan: Plan) -> dict[str, tuple[exp.Expression, list[str], list[str]]]:
    """Per input: the relation, the columns that must not be NULL and those that must be finite."""
    order = plan.rank_col or plan.score_col
    relevance = list(filter(None, [plan.relevance_col]))
    return {"recs": (plan.recs, [*input_runs(plan), plan.user_col, plan.item_col, order], [order]),
            "truth": (plan.truth, [*(input_runs(plan) if plan.truth_has_runs else ()), plan.user_col, plan.item_col,
                                   *relevance], relevance),
            "expected_recs": (plan.expected_recs, [plan.user_col, plan.item_col, order], [order]),
            "intents": (plan.intents, [plan.user_col, plan.item_col, plan.intent_col,
                                       *filter(None, [plan.intent_relevance_col])],
                        list(filter(None, [plan.intent_relevance_col])))}


def _explain_values(runner: Runner, plan: Plan, role: str, found: int | None) -> RecsqlError | None:
    """The error for ``found`` invalid rows of ``role``: which column holds NULL, NaN or infinite
    values (None when ``found`` is None and no column does)."""
    relation, columns, numbers = _value_checks(plan)[role]
    name = role
    counts = [_count(exp.Is(this=quoted_column(c), expression=exp.null())) for c in columns]
    counts += [_count(not_finite(quoted_column(c))) for c in numbers]
    query = exp.select(*[exp.alias_(c, f"n{i}") for i, c in enumerate(counts)]).from_(relation.copy())
    row = runner.fetch_rows(render(query, runner.dialect, pretty=False))[0]
    for column, count in zip(columns, row[: len(columns)]):
        if count:
            return RecsqlError(f"{name} column {column!r} has {int(count)} NULL (missing) value(s); recsql needs every "
                               f"{column!r} set: drop or fill those rows first (e.g. WHERE {column} IS NOT NULL)")
    for column, count in zip(numbers, row[len(columns):]):
        if count:
            return RecsqlError(f"{name} column {column!r} has {int(count)} NaN or infinite value(s), which have no "
                               f"place in a ranking; replace them with finite numbers or drop those rows")
    for internal, column in (("user_id", plan.user_col), ("item_id", plan.item_col)):
        if plan.id_casts.get((role, internal)) == "whole":
            value = quoted_column(column)
            broken = exp.and_(exp.Not(this=exp.Is(this=value.copy(), expression=exp.null())),
                              exp.Is(this=whole_id(value), expression=exp.null()))
            query = exp.select(exp.alias_(_count(broken), "n")).from_(relation.copy())
            count = runner.fetch_rows(render(query, runner.dialect, pretty=False))[0][0]
            if count:
                return RecsqlError(
                    f"{name} column {column!r} holds floating-point ids, {int(count)} of them not a whole number "
                    f"within ±2^53 (or NaN/infinite); recsql compares ids exactly and reads float ids as integers. "
                    f"Cast the column to BIGINT (or to text if its ids are not integers)")
    if role == "truth" and plan.relevance_col:
        large = exp.GT(this=exp.cast(quoted_column(plan.relevance_col), "DOUBLE"), expression=exp.Literal.number(MAX_EXPONENT))
        count = runner.fetch_rows(render(exp.select(exp.alias_(_count(large), "n")).from_(relation.copy()),
                                         runner.dialect, pretty=False))[0][0]
        if count:
            return RecsqlError(
                f"truth column {plan.relevance_col!r} has {int(count)} relevance(s) above {MAX_EXPONENT}, too large for "
                f"the exponential gains asked (2^relevance overflows a double beyond 1023): use gain=linear, or "
                f"rescale the relevances (e.g. to grades 0-4)")
    if role == "recs" and plan.policy is not None:
        error = _explain_policy(runner, plan)
        if error is not None:
            return error
    if found is None:
        return None
    return RecsqlError(f"{name} has {found} row(s) with a NULL (missing) value or a NaN or infinite number in "
                       f"{', '.join(map(repr, columns))}; recsql needs them set and finite: drop or fill those rows first")


def _explain_policy(runner: Runner, plan: Plan) -> RecsqlError | None:
    """The error for recs rows whose score is no probability of the target policy (target=scores or
    positions: in [0, 1]), or whose position is not a whole number >= 1 (target=positions)."""
    score = quoted_column(plan.score_col)
    checks = [_count(exp.condition(f"NOT ({score.sql()} >= 0 AND {score.sql()} <= 1)"))]
    if plan.policy in PER_POSITION:
        position = quoted_column(plan.recs_position_col).sql()
        checks.append(_count(exp.condition(f"NOT ({position} >= 1 AND {position} = FLOOR({position}))")))
    query = exp.select(*[exp.alias_(c, f"n{i}") for i, c in enumerate(checks)]).from_(plan.recs.copy())
    row = runner.fetch_rows(render(query, runner.dialect, pretty=False))[0]
    if row[0]:
        what, fix = _PROBABILITY[plan.policy]
        return RecsqlError(f"recs column {plan.score_col!r} has {int(row[0])} score(s) outside [0, 1]; with "
                           f"target={plan.policy} the score is the target policy's probability of {what}: give "
                           f"probabilities ({fix}), or use target=list to evaluate the ranked lists")
    if len(row) > 1 and row[1]:
        return RecsqlError(f"recs column {plan.recs_position_col!r} (position_col) has {int(row[1])} position(s) that "
                           "are not a whole number >= 1 (1 is the first slot), as the logs' positions are")
    return None


_PROBABILITY = {"scores": ("showing the item", "e.g. a softmax of the model's scores per context"),
                "positions": ("showing the item at the position", "e.g. a softmax of the model's scores per context "
                              "and position"),
                "slates": ("the logged slate's items at positions 1..k", "e.g. the product of a Plackett-Luce "
                           "policy's choice probabilities down to the position")}


def explain_policy_excess(plan: Plan, found: int) -> RecsqlError:
    """The error for ``found`` groups of recs whose probabilities sum above 1 (recsql/compose/policy.py), or for
    target=slates ``found`` rows likelier than a shorter prefix of their slate."""
    if plan.policy == "slates":
        return RecsqlError(f"recs column {plan.score_col!r}: with target=slates the score of a row at position k is "
                           "the target policy's probability of the logged slate's items at positions 1..k, which "
                           f"cannot grow with k, and {found} row(s) exceed the score of an earlier position of their "
                           "slate: give each row the product of the target's probabilities of the items at positions "
                           "1..k (obp's evaluation_policy_pscore_cascade), not of the item at k alone")
    groups = ("contexts (users)" if plan.policy == "scores" else
              "groups of a context and a position (one item per slot), or of a context and an item (an item is "
              "shown at most once),")
    per = "context" if plan.policy == "scores" else "context and position"
    return RecsqlError(f"recs column {plan.score_col!r}: with target={plan.policy} the scores are the target policy's "
                       f"probabilities, and {found} {groups} sum above 1, which no policy's do: normalise them per "
                       f"{per} (e.g. a softmax), or use target=list to evaluate the ranked lists")


_ITEM_RULES = {"price": "a price must be a finite number >= 0", "probability": "a probability must be in [0, 1]",
               "head": "a head flag (head_col=) must be true/false or 1/0, and set for every item of items (an "
                       "item without one would fall in neither head nor tail)"}


def _explain_items(runner: Runner, plan: Plan, found: int) -> RecsqlError:
    """The error for ``found`` invalid rows of items: a NULL item id, or a price or probability a
    metric reads that is out of its range (compose.ITEM_VALUE_INVALID)."""
    columns = {"item_id": plan.item_col, "price": plan.price_col, "probability": plan.probability_col,
               "head": plan.head_col}
    checks = {"item_id": exp.Is(this=quoted_column(plan.item_col), expression=exp.null())}
    for name, invalid in ITEM_VALUE_INVALID.items():
        if name in plan.item_needs:
            checks[name] = invalid(ITEM_VALUES[name](quoted_column(columns[name])))
    query = exp.select(*[exp.alias_(_count(c), n) for n, c in checks.items()]).from_(plan.items.copy())
    counts = dict(zip(checks, runner.fetch_rows(render(query, runner.dialect, pretty=False))[0]))
    for name, count in counts.items():
        if count:
            rule = _ITEM_RULES.get(name, "every item id must be set")
            kind = ("NULL is no flag" if name == "head" else
                    "NaN and infinity are not; NULL is no value: the item adds nothing")
            return RecsqlError(f"items column {columns[name]!r} has {int(count)} invalid value(s): {rule} ({kind}); "
                               "fix or drop those rows")
    return RecsqlError(f"items has {found} invalid row(s) (a NULL item id, or a price, probability or head flag out of range)")


def _explain_duplicates(runner: Runner, plan: Plan, role: str, found: int, recs_columns: list[str]) -> RecsqlError:
    """The error for ``found`` duplicated rows of ``role`` (extra copies of a key), with up to three
    example keys."""
    runs = internal_runs(plan)
    best = "Pass duplicates='best' to keep each item's best-ranked row."
    highest = "Pass duplicates='max' to keep the highest relevance."
    # role -> (its rows with internal names, its run keys, its key columns after user and item, the fix)
    position = {"position": plan.recs_position_col} if plan.policy in PER_POSITION else {}  # per position
    keyed = {"recs": (lambda: recs_in(plan), runs, position, best),
             "truth": (lambda: truth_in(plan), truth_runs(plan), {}, highest),
             "expected_recs": (lambda: expected_in(plan), [], {}, best),
             "intents": (lambda: intents_in(plan), [], {"intent": plan.intent_col}, highest)}
    if role in keyed:
        make, run_keys, more, fix = keyed[role]
        body, keys = make(), [*run_keys, "user_id", "item_id", *more]
        names = [*[dict(zip(runs, plan.run_cols))[k] for k in run_keys], plan.user_col, plan.item_col,
                 *more.values()]
        if role == "recs" and plan.policy == "slates":  # one prefix probability per context and position
            keys, names = [k for k in keys if k != "item_id"], [n for n in names if n != plan.item_col]
            fix = "With target=slates give one recs row per logged row: the probability of its slate's prefix."
    else:  # items (item key), item_features (item, feature)
        item = exp.alias_(quoted_column(plan.item_col), "item_id")
        if role == "items":
            body, keys, names = exp.select(item).from_(plan.items.copy()), ["item_id"], [plan.item_col]
        else:
            body = exp.select(item, exp.alias_(quoted_column(plan.feature_col), "feature")).from_(plan.item_features.copy())
            keys, names = ["item_id", "feature"], [plan.item_col, plan.feature_col]
        fix = "Remove the repeated rows, or pass duplicates='best' to keep one row per key (the largest value of each column)."
    if role == "recs":
        known = {c.lower() for c in (plan.user_col, plan.item_col, plan.score_col or "", plan.rank_col or "", *plan.run_cols,
                                     *position.values())}
        extra = [c for c in recs_columns if c.lower() not in known]
        positioned = next((c for c in extra if c.lower() == (plan.position_col or "position").lower()), None)
        if plan.policy == "scores" and positioned:  # a stochastic ranking's rows, one per position
            fix = (f"If the scores are the target's probabilities per position (column {positioned!r}), use "
                   "target=positions instead of target=scores.")
        elif extra and plan.policy != "slates":
            fix = (f"If recs hold several runs, name their key columns: run_cols={extra[:3]!r} "
                   f"(CLI: --run-col {extra[0]}); otherwise pass duplicates='best' to keep each item's best-ranked row.")
    groups = exp.select(*keys).from_(exp.Subquery(this=body, alias="s")).group_by(*keys).having("COUNT(*) > 1")
    query = exp.select(*keys).from_(exp.Subquery(this=groups, alias="d")).order_by(*keys).limit(3)
    rows = runner.fetch_rows(render(query, runner.dialect, pretty=False))
    return duplicate_report(rows, found, role, names, fix)


def refuse(runner: Runner, plan: Plan, found: dict[str, int], recs_columns: list[str]) -> None:
    """Raise for the first input check of the query that found something (``found``: the
    diagnostic columns' values): segments first (a user without one, or with two), then invalid
    values, then duplicates."""
    refuse_segments(found, "of recs or truth", plan.segment_cols)
    for role in ("recs", "truth", "expected_recs", "intents"):
        if found.get(f"{role}_invalid_rows"):
            raise _explain_values(runner, plan, role, found[f"{role}_invalid_rows"])
    if found.get("items_invalid_rows"):
        raise _explain_items(runner, plan, found["items_invalid_rows"])
    if found.get("interactions_invalid_rows"):
        raise RecsqlError(f"interactions column {plan.interaction_weight_col!r} (interaction_weight_col) has "
                          f"{found['interactions_invalid_rows']} invalid weight(s): a weight must be a finite number "
                          ">= 0 (NULL, NaN and infinity are not); fix or drop those rows")
    for role in ("recs", "truth", "expected_recs", "items", "item_features", "intents"):
        if found.get(f"{role}_duplicate_rows"):
            raise _explain_duplicates(runner, plan, role, found[f"{role}_duplicate_rows"], recs_columns)
    if found.get("recs_policy_excess"):
        raise explain_policy_excess(plan, found["recs_policy_excess"])
    refuse_logs(runner, plan, found)
    if found.get("recs_slate_mismatch"):  # after the logs' own checks: an invalid logged row matches nothing
        raise RecsqlError(f"recs (target=slates) and logs disagree on {found['recs_slate_mismatch']} row(s): every "
                          "logged row needs its recs row (same context, position and item: the target's probability "
                          "of the logged slate's items down to that position), and every recs row its logged row; a "
                          "missing probability is not read as 0: give one recs row per logged row (per run), and "
                          "no other")


def fetch_checked(runner: Runner, plan: Plan, sql: str, fetch: Any = None) -> Any:
    """Run ``sql`` (with ``fetch``, default ``runner.fetch``); an engine error that a NULL or NaN
    input caused is reported as that."""
    try:
        return (fetch or runner.fetch)(sql)
    except RecsqlError:  # a NULL or NaN the engine itself choked on: name it if it is that
        for role, (relation, _, _) in _value_checks(plan).items():
            error = _explain_values(runner, plan, role, None) if relation is not None else None
            if error is not None:
                raise error from None
        raise


def refuse_segments(found: dict[str, int], whose: str, columns: Sequence[str] = ()) -> None:
    """Raise for the segment checks (compose.checks.SEGMENT_CHECKS) that found something: users given
    two segments, rows of segments with a NULL in a segment column (``columns``), then users
    ``whose`` (e.g. "of the population") without a row in segments."""
    missing, repeated, nulls = (int(found.get(name) or 0) for name in SEGMENT_CHECKS)
    if repeated:
        raise RecsqlError(f"segments: {repeated} extra row(s) give a user a second segment; give each user one row")
    if nulls:
        named = f" ({', '.join(repr(c) for c in columns)})" if columns else ""
        raise RecsqlError(f"segments: {nulls} row(s) have a NULL segment column{named}; give those users a segment "
                          "(e.g. 'other'), or leave their rows out of segments and of the inputs")
    if missing:
        raise RecsqlError(f"segments: {missing} user(s) {whose} have no row in segments; every user evaluated "
                          "needs a segment (add them, e.g. with a segment 'other', or leave their rows out of the "
                          "inputs)")
