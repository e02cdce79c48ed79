""":func:`to_sql`: the SQL that :func:`recsql.evaluate` runs (or the statistics statement of
:func:`recsql.compare`), for tables named, in any dialect. It composes and renders and runs nothing,
so it imports no dataframe library and no engine: ``recsql sql``, the analytics engineer's command,
and ``recsql dbt generate`` start without pandas, numpy or DuckDB (tests/test_cli_imports.py)."""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from .comparison_settings import Settings
from .comparison_sql import statement_for
from .dialects import dialect as get_dialect
from .dialects import render
from .errors import RecsqlError, suggest_keywords
from .inputs import EXPECTED_RECS_RENAMED, Inputs, input_keywords, metrics_first, metrics_given, renamed, unpacked
from .metrics import Metric, parse_metrics
from .plans import build_plan, checked_logs_run_cols
from .sources import bind
from .statements import statement_sql

ORDER_TYPES = re.compile(r"DOUBLE|BIGINT|DECIMAL(\(\s*\d{1,2}\s*,\s*\d{1,2}\s*\))?", re.I)  # order_type's forms


@metrics_first
@suggest_keywords
def to_sql(
    recs: Any = "recs",
    truth: str | None = "truth",
    metrics: Sequence[str | Metric] | str | Metric | None = None,
    *,
    items: str | None = None,
    interactions: str | None = None,
    catalog: str | None = None,
    expected_recs: str | None = None,
    item_features: str | None = None,
    intents: str | None = None,
    logs: str | None = None,
    reward_model: str | None = None,
    segments: str | None = None,
    dialect: str = "duckdb",
    output: str = "summary",
    user_col: str = "user_id",
    item_col: str = "item_id",
    score_col: str | None = "score",
    rank_col: str | None = None,
    relevance_col: str | None = "relevance",
    price_col: str = "price",
    run_cols: Iterable[str] | str | None = (),
    truth_has_run_cols: bool = False,
    logs_run_cols: Iterable[str] | str = (),
    text_ids: Iterable[str] = (),
    order_type: str = "DOUBLE",
    threshold: float | None = None,
    population: str | None = None,
    duplicates: str = "error",
    convention: str = "recsql",
    ties: str | None = None,
    probability_col: str = "probability",
    category_col: str = "category",
    head_col: str | None = None,
    features_col: str = "features",
    feature_col: str = "feature",
    value_col: str = "value",
    intent_col: str = "intent",
    interaction_weight_col: str | None = None,
    position_col: str | None = "position",
    propensity_col: str = "propensity",
    slate_propensity_col: str | None = None,
    cascade_propensity_col: str | None = None,
    reward_col: str = "reward",
    sample_col: str | None = None,
    segment_cols: Iterable[str] | str | None = None,
    compare: dict[str, Any] | None = None,
    pretty: bool = True,
    baseline: str | None = None,
) -> str:
    """The SQL that :func:`evaluate` runs, for (qualified) table names or file paths, in ``dialect``.

    ``output``: ``summary`` (one row per run) or ``per_user``. The summary carries the input checks
    as diagnostic columns (``recs_invalid_rows``, ``recs_duplicate_rows``, ``truth_invalid_rows``, ...:
    docs/guide/safety.md), computed in the same statement: a non-zero one means the metrics beside it
    read bad rows (``evaluate`` raises from them). ``per_user`` carries no checks. With
    ``duplicates='best'`` / ``'max'`` the query de-duplicates and the duplicate columns are 0. ``text_ids``: the id columns
    (``user_col``/``item_col``) and run columns that hold strings, so that dialects whose default collation is
    not bytewise (PostgreSQL, MySQL, SQL Server) compare and order them with a binary collation. ``order_type``:
    the type the score (or rank) is ranked in; DOUBLE unless the column holds integers above 2^53
    (``"BIGINT"``) or decimals with more than 15 digits (``"DECIMAL(38, <scale>)"``), which a DOUBLE
    would tie (``evaluate`` reads it from the column's type).

    On DuckDB each user's top k comes from a bounded heap of its k + 1 best (a tie across the cut read again);
    the other dialects number the rows:

    >>> "ARG_MIN(item_id, ord, 10 + 1)" in to_sql("db.recs", "db.truth", ["ndcg@10"])
    True
    >>> "ROW_NUMBER() OVER" in to_sql("db.recs", "db.truth", ["ndcg@10"], dialect="postgres")
    True
    """
    if output not in ("summary", "per_user"):
        raise RecsqlError(f"output={output!r} is not valid; choose summary or per_user")
    if not isinstance(dialect, str):
        raise RecsqlError(f"dialect must be a dialect's name (a string such as 'duckdb', 'postgres' or 'bigquery'), "
                          f"got {dialect!r}; leave it out for duckdb")
    target = get_dialect(dialect)
    if isinstance(text_ids, str):  # one column, as run_cols: "item_id", not the letters i, t, e, m, ...
        text_ids = (text_ids,)
    elif text_ids is None:
        text_ids = ()
    elif isinstance(text_ids, (bytes, dict)) or not isinstance(text_ids, Iterable):
        raise RecsqlError(f"text_ids must name id columns, got {text_ids!r}; pass text_ids='item_id' or "
                          "text_ids=['user_id', 'item_id']")
    text_ids = tuple(text_ids)
    keywords = input_keywords(locals())
    recs, truth, metrics, keywords = unpacked(recs, truth, metrics, keywords, "to_sql", truth_default="truth")
    keywords["expected_recs"] = renamed("expected_recs", keywords["expected_recs"], "baseline", baseline, "to_sql",
                                        EXPECTED_RECS_RENAMED)
    described = Inputs(recs=recs, truth=truth, **keywords)
    parsed = parse_metrics(metrics_given(metrics, "to_sql"))
    cols = described.options()
    given = described.given()
    relations = {role: bind(role, value, None).relation if value is not None else None
                 for role, value in given.items()}
    keys = (*cols["run_cols"], *(cols["segment_cols"] if described.segments is not None else ()))
    user_col, item_col = cols["user_col"], cols["item_col"]
    named = {user_col: "user_id", item_col: "item_id", **{c: f"_run{i}" for i, c in enumerate(keys)}}
    unknown = [c for c in text_ids if not isinstance(c, str) or c not in named]
    if unknown:
        raise RecsqlError(f"text_ids: {unknown[0]!r} is not an id column; name {user_col!r} and/or {item_col!r} "
                          "(or a run column holding text)")
    if not isinstance(order_type, str) or not ORDER_TYPES.fullmatch(order_type.strip()):
        raise RecsqlError(f"order_type={order_type!r} is not valid; choose DOUBLE, BIGINT or DECIMAL(38, <scale>)")
    plan = build_plan(relations, cols, target.name, truth_has_runs=truth_has_run_cols and bool(cols["run_cols"]),
                      logs_run_cols=checked_logs_run_cols(logs_run_cols, cols, relations.get("logs") is not None),
                      text_ids=frozenset(named[c] for c in text_ids), ord_type=order_type.strip().upper(),
                      expected_ord_type=order_type.strip().upper())
    if compare is not None:  # the statistics of recsql.compare over the per-user query (docs/guide/compare.md)
        settings = Settings.from_options(compare)
        grouping = _segment_relation(compare.get("segments"), compare.get("segment_cols"), user_col)
        statement = statement_for(plan, parsed, settings, settings.baseline_kinds(plan.run_cols), grouping)[0]
        return render(statement, target.name, pretty=pretty)
    return statement_sql(plan, parsed, output, target.name, pretty=pretty)


def _segment_relation(segments: Any, segment_cols: Any, user_col: str) -> tuple | None:
    """to_sql's compare segments: (the segments table's relation, its user column, its segment columns),
    named since to_sql reads no table; None without segments."""
    if segments is None and segment_cols is None:
        return None
    columns = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols or ())
    if not isinstance(segments, str) or not columns or not all(isinstance(c, str) and c for c in columns):
        raise RecsqlError("compare: segments need the table's name and its segment columns, e.g. compare={'segments': "
                          "'cohorts', 'segment_cols': ['cohort']} "
                          f"(one row per user: {user_col!r} and the segment "
                          f"columns); got segments={segments!r}, segment_cols={segment_cols!r}")
    return bind("segments", segments, None).relation, user_col, columns
