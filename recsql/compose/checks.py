"""The input checks inside the query: one row of diagnostics counting invalid and duplicate rows
(:data:`DIAGNOSTICS`), read by every path (evaluate, the CLI, rendered SQL, dbt).
"""

from __future__ import annotations

from sqlglot import exp

from ..trees import nodes, not_finite, parse
from .log_checks import LOG_CHECKS, LOG_KEYS, MISSING_PREDICTIONS, inconsistent_slates, invalid_log_row, slate_rules
from .plan import Plan, internal_runs, logs_runs, segment_runs, truth_runs
from .policy import PER_POSITION, invalid_probability, policy_excess, slate_mismatch
from .rewrite import union_all


# The summary's diagnostic columns (docs/guide/safety.md), in order: each is there when its input is
# given and read by the query. *_invalid_rows: rows of the whole input with a NULL key, order or
# relevance, or a NaN/±inf order or relevance; *_duplicate_rows: extra copies of a key (a key held
# by n rows counts n - 1) among the rows the metrics read (recs: the ranked rows kept, positions <=
# the largest k, or the whole list), always 0 under a de-duplicating policy (the query keeps one row
# per key). One value per input, over every run, copied onto every summary row.
DIAGNOSTICS = ("recs_invalid_rows", "recs_duplicate_rows", "recs_policy_excess", "recs_slate_mismatch",
               "truth_invalid_rows", "truth_duplicate_rows",
               "expected_recs_invalid_rows", "expected_recs_duplicate_rows", "items_invalid_rows", "items_duplicate_rows",
               "item_features_duplicate_rows", "intents_invalid_rows", "intents_duplicate_rows",
               "interactions_invalid_rows", "users_without_segment", "segment_duplicate_users",
               "segment_null_rows", *LOG_CHECKS)


# With segments (docs/guide/populations.md, "Segments"): users of recs or truth with no segment (no
# row in segments, or a NULL segment value), and extra rows giving a user a second segment.
SEGMENT_CHECKS = ("users_without_segment", "segment_duplicate_users", "segment_null_rows")


RECS_ROWS = "_recs_rows"  # the recommendation rows read (raw rows only: Evaluation.rows_in)
LOGS_ROWS = "_logs_rows"  # the logged impressions n, with logs (raw rows only: evaluate's warning on the weights)


MAX_EXPONENT = 1000  # largest relevance 2^rel is taken of: a sum of up to 2^23 terms 2^1000 stays finite


def _rows_where(condition: exp.Expression) -> exp.Expression:
    """How many rows meet ``condition`` (0 for no rows: SUM of none is NULL), as BIGINT."""
    count = exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))],
                                  default=exp.Literal.number(0)))
    return exp.cast(exp.Coalesce(this=count, expressions=[exp.Literal.number(0)]), "BIGINT")


def _bad_row(columns: list[str], numbers: list[str], also: exp.Expression | None = None) -> exp.Expression:
    """A row with a NULL in ``columns`` or a non-finite value in ``numbers`` (a NULL is counted by IS
    NULL, whatever the engine's NULL ordering), or meeting ``also``."""
    return exp.or_(*[exp.Is(this=exp.column(c), expression=exp.null()) for c in columns],
                   *[not_finite(exp.column(c)) for c in numbers], *([also] if also is not None else []))


def _invalid(table: str, columns: list[str], numbers: list[str], name: str, total: str | None = None,
             also: exp.Expression | None = None) -> exp.Select:
    """One row: ``name`` = the rows of the input CTE ``table`` (internal names; one scan of each input)
    that are :func:`_bad_row`, and the row count."""
    select = exp.select(exp.alias_(_rows_where(_bad_row(columns, numbers, also)), name)).from_(table)
    return select.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), total)) if total else select


def _extra_copies(table: str, keys: list[str], name: str, max_rank: int | None = None) -> exp.Select:
    """One row: ``name`` = Σ (n - 1) over the keys of ``table`` held by n rows (its rows ranked <=
    ``max_rank`` when given)."""
    groups = exp.select(exp.alias_(exp.Count(this=exp.Star()), "n")).from_(table)
    if max_rank is not None:
        groups = groups.where(exp.column("rank") <= exp.Literal.number(max_rank))
    groups = groups.group_by(*keys)
    return exp.select(exp.alias_(_rows_where_sum(exp.column("n") - 1), name)).from_(groups.subquery("g"))


# list_heads' columns for the checks: each user's invalid rows and rows, counted in the heap's scan
_HEAD_INVALID, _HEAD_ROWS = "_invalid_rows", "_rows"


def _heads_checks(heads: exp.Select, keys: list[str], also: exp.Expression | None = None) -> exp.Select:
    """recs' invalid rows and row count from the per-user top-k heaps (DuckDB's stage CTE
    list_heads, which groups every row of recs_in by run and user): the heaps' aggregate counts each
    group's rows with a NULL key or order or a non-finite order, so recs is scanned once, by the
    heaps, and not kept as a whole. Same counts as :func:`_invalid` over recs_in."""
    heads.select(exp.alias_(_rows_where(_bad_row([*keys, "ord"], ["ord"], also)), _HEAD_INVALID),
                 exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), _HEAD_ROWS), copy=False)
    return exp.select(exp.alias_(_rows_where_sum(exp.column(_HEAD_INVALID)), "recs_invalid_rows"),
                      exp.alias_(_rows_where_sum(exp.column(_HEAD_ROWS)), RECS_ROWS)).from_("list_heads")


def _heads_copies(heads: exp.Select) -> exp.Select:
    """``d`` = Σ (n - 1) over the (run, user, item) keys of the ranked rows kept, from each user's heap
    (``top``: the item ids of its first k rows, the largest cutoff): its ids less its distinct ids.
    Exact, like :func:`_extra_copies` over list_ranked, without grouping its rows again. A heap holds
    no NULL id (MIN_BY leaves NULL values out, so those rows are not ranked: they are counted as
    invalid rows, which the metrics then refuse). ``top`` is list_heads' own, or list_tops' where the
    heaps are on the order alone (recsql/compose/stage.py, sql/_topk_split.duckdb.sql)."""
    copies = parse("LEN(top) - LIST_UNIQUE(top)", read="duckdb")
    table = "list_heads" if "top" in heads.named_selects else "list_tops"
    return exp.select(exp.alias_(_rows_where_sum(copies), "d")).from_(table)


def _rows_where_sum(value: exp.Expression) -> exp.Expression:
    return exp.cast(exp.Coalesce(this=exp.Sum(this=value), expressions=[exp.Literal.number(0)]), "BIGINT")


def _price_invalid(value: exp.Expression) -> exp.Expression:
    """A price that is NaN, infinite or negative (a NULL price is no price: the item weighs 0, as an
    item missing from items)."""
    return exp.or_(not_finite(value.copy()), exp.LT(this=value.copy(), expression=exp.Literal.number(0)))


def _probability_invalid(value: exp.Expression) -> exp.Expression:
    """A probability that is NaN, infinite or outside [0, 1] (NULL or 0: the item adds 0 novelty)."""
    return exp.or_(not_finite(value.copy()), exp.LT(this=value.copy(), expression=exp.Literal.number(0)),
                   exp.GT(this=value.copy(), expression=exp.Literal.number(1)))


# items' attribute columns that a metric reads (its header's needs) and what makes one invalid
def _head_invalid(value: exp.Expression) -> exp.Expression:
    """A head flag that is no flag: NULL, or anything but true/false and 1/0 (items_in reads it NULL then:
    recsql/compose/inputs.py, head_flag). Unlike a price, a missing flag is refused: an item without one
    would silently fall in neither group."""
    return exp.Is(this=value.copy(), expression=exp.null())


ITEM_VALUE_INVALID = {"price": _price_invalid, "probability": _probability_invalid, "head": _head_invalid}


def uses_exponent(tree: exp.Expression) -> bool:
    """Whether a query raises 2 to a relevance (gain=exponential, ERR and pFound's grades)."""
    return any(isinstance(p.this, exp.Literal) and p.this.name == "2" and not isinstance(p.expression, exp.Literal)
               for p in nodes(tree, exp.Pow))


def input_checks(plan: Plan, needed: set[str], read: set[str], cuts: dict[str, int | None],
            exponent: bool = False, heads: exp.Select | None = None
            ) -> tuple[list[tuple[str, exp.Select]], exp.Select, list[str]]:
    """The checks: one CTE per count, ``checks_<input>_invalid`` and ``checks_<input>_copies`` (one row
    each: a count of one input, so each varies only with what that count reads), then the ``checks``
    CTE (one row, the diagnostic columns of the inputs given and read, and ``_recs_rows``), and the
    diagnostic names it holds. ``cuts``: the ranked list CTEs (list_ranked,
    second_ranked: before the join to truth, which a duplicated truth row would multiply) -> the
    largest position the metrics read from it (None: the whole list). ``exponent``: the metrics
    raise 2 to a relevance, so a relevance above MAX_EXPONENT is invalid (2^1024 overflows a DOUBLE).
    ``heads``: the select of the main list's per-user top-k heaps (DuckDB, stage CTE list_heads),
    which this adds recs' counts to: see :func:`_heads_checks`."""
    runs = internal_runs(plan)
    dedup = plan.duplicates == "best"
    parts: list[exp.Select] = []  # one-row subqueries
    zeros: list[str] = []  # duplicate counts of a de-duplicating policy: the query kept one row per key
    names: list[str] = []

    def duplicates(name: str, table: str, keys: list[str]) -> None:
        names.append(name)
        if dedup:
            zeros.append(name)
        else:
            parts.append(_extra_copies(table, keys, name))

    # over the input CTEs (a de-duplicating policy's one row per key: the rows the metrics read)
    recs_keys = [*runs, "user_id", "item_id"]
    improbable = invalid_probability(plan)  # a target policy's probability out of range (recsql/compose/policy.py)
    if heads is not None:
        parts.append(_heads_checks(heads, recs_keys, improbable))
    else:
        parts.append(_invalid("recs_in", [*recs_keys, "ord"], ["ord"], "recs_invalid_rows", RECS_ROWS, improbable))
    names.append("recs_invalid_rows")
    if dedup:
        duplicates("recs_duplicate_rows", "", [])
    else:  # the ranked rows kept, of the main list and of a second view's list: the larger count
        names.append("recs_duplicate_rows")
        # a policy per position holds an item on several rows, one per position: its key has the position; the
        # probabilities of the logged slates' prefixes are one per context and position, whatever the item
        per_position = [*runs, "user_id", "position"] if plan.policy == "slates" else [*recs_keys, "position"]
        per_list = union_all([_extra_copies("recs_in", per_position, "d")] if plan.policy in PER_POSITION
                             else [_heads_copies(heads) if heads is not None and t == "list_ranked"
                                   else _extra_copies(t, recs_keys, "d", cut) for t, cut in cuts.items() if t in read])
        parts.append(exp.select(exp.alias_(exp.cast(exp.Max(this=exp.column("d")), "BIGINT"), "recs_duplicate_rows"))
                     .from_(per_list.subquery("l")))
    if plan.policy is not None:
        parts.append(policy_excess(plan, runs))
        names.append("recs_policy_excess")
    if plan.policy == "slates" and plan.logs is not None:
        parts.append(slate_mismatch(plan, runs))
        names.append("recs_slate_mismatch")
    if plan.truth is not None and "truth_in" in read:
        too_large = exp.GT(this=exp.column("relevance"), expression=exp.Literal.number(MAX_EXPONENT)) if exponent else None
        parts.append(_invalid("truth_in", [*truth_runs(plan), "user_id", "item_id", "relevance"],
                              ["relevance"], "truth_invalid_rows", also=too_large))
        names.append("truth_invalid_rows")
        duplicates("truth_duplicate_rows", "truth_in", [*truth_runs(plan), "user_id", "item_id"])
    if plan.expected_recs is not None and "expected_in" in read:
        parts.append(_invalid("expected_in", ["user_id", "item_id", "ord"], ["ord"], "expected_recs_invalid_rows"))
        names.append("expected_recs_invalid_rows")
        duplicates("expected_recs_duplicate_rows", "expected_in", ["user_id", "item_id"])
    if plan.items is not None and "items_in" in read:
        parts.append(_invalid("items_in", ["item_id"], [], "items_invalid_rows",
                              also=exp.or_(*[ITEM_VALUE_INVALID[n](exp.column(n)) for n in ITEM_VALUE_INVALID
                                             if n in needed] or [exp.false()])))
        names.append("items_invalid_rows")
        duplicates("items_duplicate_rows", "items_in", ["item_id"])
    if plan.item_features is not None and "features" in needed and "features_in" in read:
        duplicates("item_features_duplicate_rows", "features_in", ["item_id", "feature"])
    if plan.intents is not None and "intents_in" in read:
        parts.append(_invalid("intents_in", ["user_id", "item_id", "intent", "relevance"], ["relevance"],
                              "intents_invalid_rows"))
        names.append("intents_invalid_rows")
        duplicates("intents_duplicate_rows", "intents_in", ["user_id", "item_id", "intent"])
    if plan.interactions is not None and plan.interaction_weight_col and "interactions_in" in read:
        # a weight of the history (miscalibration's w_ui): NULL, NaN, infinite or negative
        parts.append(_invalid("interactions_in", ["weight"], ["weight"], "interactions_invalid_rows",
                              also=exp.LT(this=exp.column("weight"), expression=exp.Literal.number(0))))
        names.append("interactions_invalid_rows")
    if plan.logs is not None and "logs_in" in read:  # whatever ``duplicates`` says (recsql/compose/log_checks.py)
        parts += [_invalid("logs_in", [], [], "logs_invalid_rows", LOGS_ROWS, also=invalid_log_row(plan)),
                  _extra_copies("logs_in", [*logs_runs(plan), *LOG_KEYS], "logs_duplicate_rows")]
        names += ["logs_invalid_rows", "logs_duplicate_rows"]
        if slate_rules(plan):
            parts.append(inconsistent_slates(plan))
            names.append("logs_inconsistent_slates")
    if plan.reward_model is not None and "reward_model_in" in read:
        parts += [_invalid("reward_model_in", ["user_id", "item_id", "reward"], ["reward"], "reward_model_invalid_rows"),
                  _extra_copies("reward_model_in", ["user_id", "item_id"], "reward_model_duplicate_rows"),
                  parse(MISSING_PREDICTIONS)]
        names += ["reward_model_invalid_rows", "reward_model_duplicate_rows", "reward_model_missing_rows"]
    if plan.segments is not None:
        parts += _segment_checks(plan, "list_heads" if heads is not None else "recs_in", "truth_in" in read)
        names += SEGMENT_CHECKS
    ctes = [(_cte_name(part), part) for part in parts]
    aliases = {n: name for name, part in ctes for n in [e.alias for e in part.expressions]}
    select = exp.select(*[exp.alias_(exp.column(n, table=aliases[n]) if n in aliases
                                     else exp.cast(exp.Literal.number(0), "BIGINT"), n) for n in [*names, *carried_counts(aliases)]])
    select = select.from_(ctes[0][0])
    for name, _ in ctes[1:]:
        select = select.join(name, join_type="cross")
    return ctes, select, names


def carried_counts(columns) -> list[str]:
    """The row counts the raw rows carry beside the diagnostic columns: ``_recs_rows``, and ``_logs_rows``
    when the checks count the logs (``columns``: the checks' column names)."""
    return [RECS_ROWS, *([LOGS_ROWS] if LOGS_ROWS in columns else [])]


def _segment_checks(plan: Plan, recs: str, truth: bool) -> list[exp.Select]:
    """The segment checks: the distinct users of recs (read from ``recs``: recs_in, or the heaps,
    which group its rows by run and user) and of truth whose segment keys are NULL (the inputs' LEFT
    JOIN to segments_in found no segment), Σ (n - 1) over the users of segments held by n rows, and
    the rows of segments with a NULL segment column."""
    unsegmented = exp.or_(*[exp.Is(this=exp.column(k), expression=exp.null()) for k in segment_runs(plan)])
    users = [exp.select("user_id").from_(t).where(unsegmented) for t in [recs, *(["truth_in"] if truth else [])]]
    missing = exp.select(exp.alias_(exp.cast(exp.Count(this=exp.Distinct(expressions=[exp.column("user_id")])), "BIGINT"),
                                    SEGMENT_CHECKS[0])).from_(union_all(users).subquery("u"))
    nulls = exp.select(exp.alias_(exp.cast(exp.Count(this=exp.Star()), "BIGINT"), SEGMENT_CHECKS[2])) \
        .from_("segments_in").where(exp.or_(*[exp.Is(this=exp.column(k), expression=exp.null()) for k in segment_runs(plan)]))
    return [missing, _extra_copies("segments_in", ["user_id"], SEGMENT_CHECKS[1]), nulls]


def _cte_name(part: exp.Select) -> str:
    """A count's CTE, named for its first column: ``recs_invalid_rows`` -> ``checks_recs_invalid``,
    ``truth_duplicate_rows`` -> ``checks_truth_copies``."""
    column = part.expressions[0].alias
    return "checks_" + column.removesuffix("_rows").replace("_duplicate", "_copies")
