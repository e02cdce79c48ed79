"""Rendering the composed query for a SQL dialect: which dialects recsql supports, how each is
checked, and the few overrides sqlglot's transpiler does not make by itself.

Every difference is a named switch with its reason:

- ``collation``: the binary collation applied to text id columns where the default collation is
  not bytewise, or may not be: ties are broken by ``item_id`` and ids are joined and grouped, so a
  locale or case-insensitive collation would change the numbers (PostgreSQL's locale order; MySQL's
  and SQL Server's case-insensitive defaults merge 'a' and 'A'; a DuckDB column declared
  ``COLLATE NOCASE`` or a connection's ``default_collation``; a SQLite column ``COLLATE NOCASE``).
- ``settings``: ClickHouse fills unmatched LEFT JOIN columns with 0/'' instead of NULL unless
  ``join_use_nulls = 1``; unjudged items would count as judged.
- ``id_text``: the type an id is cast to when a convention orders tied ids as text (trec_eval
  compares docnos with strcmp: '9' after '10'), whatever the column type: one that compares
  bytewise together with ``collation`` (MySQL: BINARY, whose bytes compare with no padding; SQL
  Server and Oracle need a length).
- ``topk``: DuckDB selects each user's top k with ``MIN_BY(item, (ord, item), k)`` (a bounded heap
  per user) instead of ROW_NUMBER over whole partitions; same order, ties included.
- ``inline``: CTEs DuckDB must not materialize. The input checks read ``truth_in`` a second time;
  a CTE read twice is materialized, its row estimate is lost and the joins after it are planned
  as if truth had one row: 10M recommendation rows then ran out of a 400 MB memory limit and 100M
  out of 4 GB, and fit (faster) with ``truth_in AS NOT MATERIALIZED``. ``recs_in`` is written so
  too where the top-k heaps (list_heads) are its only reader (recsql/compose/statement.py). ``ranked``
  and ``stacked`` are read twice by evaluate's statement where every metric is global (output ``runs``:
  the run's users and its global rows apart); inlined, each reader filters the union's branches
  (``user_id IS NULL``) instead of materializing every stacked row. ``logs_in`` and ``reward_model_in``
  (read by the estimators' joins and by the input checks) are scanned by each reader, its own columns
  only, instead of held whole. At 10M logged impressions under a 4 GB memory_limit (benchmarks/logs.py),
  the query took 32 s with ranked and stacked materialized, 19 s inlined, 14 s with the logs and the
  reward model inlined too (and spilled nothing, 0.5 GB before).
- ``exact_sums``: DuckDB adds up a group's rows in parallel and in no fixed order, so ``SUM`` and
  ``AVG`` of DOUBLE values could differ in the last bits between two runs of the same statement on
  the same data (a bootstrap interval's 16th digit did). DuckDB's ``FSUM``/``FAVG`` (Kahan–Babuška
  compensated summation) give the same bits every run and are at least as accurate; sums cast
  straight to an integer type and window sums keep ``SUM``.
- ``from_dual``: Oracle needs ``FROM DUAL`` on a SELECT without a table and has no boolean literal.
- ``with_limit``: MariaDB refuses a WITH clause of more than 64 elements (error 4003, "Too many WITH
  elements"; :func:`recsql.compare`'s statement with global metrics has more): CTEs read once are
  written in place as derived tables, the last first, until 64 remain. It is one of the dialect's
  ``whole`` transforms, which fit a statement into what one statement may be: recsql's own MariaDB
  runner renders for :func:`for_steps` instead, leaves every CTE a CTE and runs a statement of more
  than ``step_ctes`` in steps (recsql/engines/steps.py), which is how the intent-aware metrics' greedy
  ideal list at @100 (a chain of 101 CTEs) runs there.

Everything else — integer division, NULL ordering, log argument order, type names — is kept
identical by the templates (explicit DOUBLE casts, NULLIF, LN) and by sqlglot.

>>> sorted(d for d, spec in DIALECTS.items() if spec.executed)
['clickhouse', 'datafusion', 'duckdb', 'mysql', 'postgres', 'spark', 'sqlite']
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import sqlglot
from sqlglot import exp

from .errors import RecsqlError
from .trees import nodes

Transform = Callable[[exp.Expression], exp.Expression]


def _native_window_nulls(tree: exp.Expression, target: str) -> exp.Expression:
    """Window ORDER BY keys are never NULL (recsql rejects NULL ids, scores, ranks and relevances
    before the query runs), so they take the target's own NULL placement instead of DuckDB's;
    sqlglot would otherwise have to emulate NULLS LAST, which some engines cannot do in windows."""
    ordering = sqlglot.Dialect.get_or_raise(target).NULL_ORDERING
    for window in nodes(tree, exp.Window):
        for ordered in nodes(window, exp.Ordered):
            desc = bool(ordered.args.get("desc"))
            ordered.set("nulls_first", ordering == ("nulls_are_large" if desc else "nulls_are_small"))
    return tree


def _clickhouse_settings(tree: exp.Expression) -> exp.Expression:
    """``join_use_nulls = 1`` after the statement's own settings (recsql.compare's: see its module)."""
    tree.set("settings", [*(tree.args.get("settings") or []),
                          exp.EQ(this=exp.var("join_use_nulls"), expression=exp.Literal.number(1))])
    return tree


def _oracle_dual(tree: exp.Expression) -> exp.Expression:
    for select in nodes(tree, exp.Select):
        if not select.args.get("from_"):
            select.from_("DUAL", copy=False)
    for boolean in nodes(tree, exp.Boolean):
        one = exp.Literal.number(1)
        boolean.replace(exp.EQ(this=one, expression=exp.Literal.number(1 if boolean.this else 0)))
    return tree


def _duckdb_exact_sums(tree: exp.Expression) -> exp.Expression:
    """``SUM``/``AVG`` as ``FSUM``/``FAVG``: the same bits on every run whatever the threads' order
    (sums cast straight to an integer type, and window sums, stay ``SUM``)."""
    def swap(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, (exp.Sum, exp.Avg)) or isinstance(node.parent, exp.Window):
            return node
        parent = node.parent
        if isinstance(parent, exp.Cast) and parent.to.this in exp.DataType.INTEGER_TYPES:
            return node
        name = "FSUM" if isinstance(node, exp.Sum) else "FAVG"
        return exp.Anonymous(this=name, expressions=[node.this])
    return tree.transform(swap)


def _crossed_first(tree: exp.Expression) -> exp.Expression:
    """In a select that has other joins too, each ``CROSS JOIN`` of a table moved before the ``FROM``
    it joins: ``FROM s LEFT JOIN u ON … CROSS JOIN cs`` becomes ``FROM cs CROSS JOIN s LEFT JOIN u
    ON …``, the same rows (a product commutes, and no ``ON`` can read a later relation). DataFusion
    holds the left input of a cross join in memory and streams the right one; recsql's ranked rows
    (``stacked``, every source of every metric) are crossed with one-row relations (the catalog's
    size, the number of interaction users), which therefore go left. A select of cross joins alone is
    left as written: DataFusion 55 then fails on a registered Arrow table that carries schema metadata
    (pandas') ("Physical input schema should be the same as the one converted from logical input
    schema"), and those are small. Joins of anything but a table (``UNNEST``, a subquery) stay."""
    for select in nodes(tree, exp.Select):
        joins = select.args.get("joins") or []
        crossed = [j for j in joins if isinstance(j.this, exp.Table) and j.kind == "CROSS" and not j.args.get("on")
                   and not j.args.get("using") and not j.side]
        source = select.args.get("from_")
        if not crossed or source is None or not isinstance(source.this, exp.Table) or len(crossed) == len(joins):
            continue
        rest = [j for j in joins if j not in crossed]
        old_first = exp.Join(this=source.this.copy(), kind="CROSS")
        select.set("from_", exp.From(this=crossed[0].this.copy()))
        select.set("joins", [*crossed[1:], old_first, *rest])
    return tree


MARIADB_WITH_ELEMENTS = 64
MARIADB_SELECT_NESTING = 64  # SELECTs one inside another, the statement's own counted: "Too high level of nesting"


def _select_depth(tree: exp.Expression) -> int:
    """The most SELECTs nested one inside another in ``tree`` (walked without recursion: a deep tree is
    the case it is asked about)."""
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, exp.Select):
            depth += 1
            deepest = max(deepest, depth)
        stack.extend((child, depth) for child in node.iter_expressions())
    return deepest


def _mariadb_with_limit(tree: exp.Expression) -> exp.Expression:
    """At most :data:`MARIADB_WITH_ELEMENTS` CTEs: the last ones read exactly once become derived tables
    where they are read (the same query: a CTE read once is a subquery with a name). The reads are counted
    in one walk: moving a CTE's body to where it is read changes no other CTE's reads. A statement then
    nesting more SELECTs than MariaDB and MySQL run (:data:`MARIADB_SELECT_NESTING`; the intent-aware
    metrics' greedy ideal list is a chain of CTEs, one per position, four SELECTs each once inlined) is
    refused with the cutoff that made it. recsql's own MariaDB runner renders without this transform and
    runs such a statement in steps (:func:`for_steps`)."""
    with_ = tree.args.get("with_")
    ctes = list(with_.expressions) if with_ else []
    if len(ctes) <= MARIADB_WITH_ELEMENTS:
        return tree
    steps = sum(1 for cte in ctes if cte.alias.startswith("intent_pick_")) - 1
    reads: dict[str, list[exp.Table]] = {}
    for table in nodes(tree, exp.Table):
        if not table.db:
            reads.setdefault(table.name, []).append(table)
    while len(ctes) > MARIADB_WITH_ELEMENTS:
        cte = next((cte for cte in reversed(ctes) if len(reads.get(cte.alias, ())) == 1), None)
        if cte is None:
            raise RecsqlError(f"the query has {len(ctes)} CTEs, more than MariaDB's {MARIADB_WITH_ELEMENTS}, and "
                              "none read once to inline; ask for fewer metrics or tests at a time")
        ctes.remove(cte)
        with_.set("expressions", ctes)
        (read,) = reads.pop(cte.alias)
        read.replace(exp.Subquery(this=cte.this, alias=exp.TableAlias(this=exp.to_identifier(read.alias or cte.alias))))
    depth = _select_depth(tree)
    if depth > MARIADB_SELECT_NESTING:
        why = (f"the intent-aware metrics' greedy ideal list (alpha_ndcg, alpha_dcg, nerr_ia, nnrbp and their kin) "
               f"takes one step per position up to their largest cutoff, {steps} here, and MariaDB allows at most "
               f"{MARIADB_WITH_ELEMENTS} CTEs, so the steps past that nest: in one statement, ask for them at a "
               "smaller cutoff (62 on their own, less with other metrics or inputs in the same call: 50 with five "
               "others)"
               if steps > 0 else "in one statement, ask for fewer metrics at a time")
        raise RecsqlError(f"the query cannot be written for MariaDB or MySQL as one statement: it nests {depth} "
                          f"SELECTs, more than the {MARIADB_SELECT_NESTING} they run; {why}. recsql.evaluate and "
                          "recsql.compare on a MariaDB connection run it in steps, each a temporary table")
    return tree


@dataclass(frozen=True)
class Dialect:
    """A target: its sqlglot writer, whether CI executes it, and recsql's overrides."""

    name: str
    sqlglot: str
    executed: str = ""  # the engine CI runs it on ("" = rendered and parsed back only)
    collation: str | None = None
    id_text: str = "VARCHAR"  # ids compared as text (ties under trec, ir_measures, ranx): cast to this type
    topk: str | None = None  # sql/_topk.<topk>.sql replaces the portable ROW_NUMBER top-k
    inline: tuple[str, ...] = ()  # CTEs written AS NOT MATERIALIZED
    transforms: tuple[Transform, ...] = field(default=())
    # transforms that fit the statement into one statement's limits, after ``transforms``; left out by
    # :func:`for_steps`, for a runner that runs a statement of more than ``step_ctes`` CTEs in steps
    whole: tuple[Transform, ...] = field(default=())
    step_ctes: int = 0  # the most CTEs one statement may hold (0: no limit)
    step_depth: int = 0  # the most SELECTs one statement may nest, counted through its CTEs (0: no limit)
    step_piece: int = 0  # in steps, the most SELECTs each step nests (0: step_depth)
    note: str = ""
    # What a session running the rendered SQL should set first, each (name, value): recsql's own runners
    # set them for the query alone (recsql/engines/mysql.py, recsql/engines/datafusion.py), and the header
    # of the rendered SQL says so (:attr:`session`), as ``set_statement`` spells it, with ``set_scope``
    # (which servers) before and ``set_why`` after.
    settings: tuple[tuple[str, str], ...] = ()
    set_statement: str = "SET {name} = {value}"
    set_scope: str = ""
    set_why: str = ""

    @property
    def session(self) -> str:
        """The header's advice: the statements that set :attr:`settings`, and why ("" for none)."""
        if not self.settings:
            return ""
        sets = "; ".join(self.set_statement.format(name=name, value=value) for name, value in self.settings)
        return f"{self.set_scope}{sets}" + (f" ({self.set_why})" if self.set_why else "")


def _session_line(tree: exp.Expression, spec: "Dialect") -> exp.Expression:
    """The dialect's :attr:`Dialect.session` advice as the last line of the statement's header comment."""
    holder = tree.args.get("with_") or tree
    holder.comments = [*(holder.comments or []), f" before running it: {spec.session} "]
    return tree


DIALECTS: dict[str, Dialect] = {d.name: d for d in (
    Dialect("duckdb", "duckdb", executed="DuckDB", topk="duckdb", collation='"binary"',
            inline=("truth_in", "logs_in", "reward_model_in", "ranked", "stacked"),
            transforms=(_duckdb_exact_sums,)),
    # step_depth: SQLite writes out each CTE where it is read and counts the SELECTs that nests against its
    # expression depth limit (1,000): alpha_ndcg@46 alone (195 SELECTs nested through its CTEs) ran, @48
    # (203) failed with "Expression tree is too large"; its runner runs a statement nesting more than this
    # in steps (recsql/engines/steps.py; every metric at @100 but the intent-aware ones nests 15)
    Dialect("sqlite", "sqlite", executed="SQLite (Python's sqlite3)", collation='"BINARY"', step_depth=128),
    Dialect("postgres", "postgres", executed="PostgreSQL 15", collation='"C"'),
    Dialect("mysql", "mysql", executed="MariaDB 10.11", collation="utf8mb4_bin", id_text="BINARY",
            # a statement of more than 64 CTEs or nesting more than 64 SELECTs through them runs in steps
            # (recsql/engines/steps.py), each nesting at most 8. MariaDB holds each window's rows in an in-memory
            # table of fixed-width rows (a utf8mb4 text column at its full width), up to the 512 MB below: every
            # metric at @100 on MovieLens-100K-shaped data (benchmarks/engines.py) with steps of 64 CTEs of the
            # intent-aware metrics' greedy ideal list (three windows each) took the server to 24 GB and the
            # kernel killed it; with steps nesting 64, 32 and 16 SELECTs it passed 5 GB, 5 GB and peaked at
            # 3.1 GB; with 8 the whole call peaked at 2.1 GB in 240 s
            whole=(_mariadb_with_limit,), step_ctes=MARIADB_WITH_ELEMENTS, step_depth=MARIADB_SELECT_NESTING,
            step_piece=8,
            note="MySQL 8 or MariaDB 10.4+; text ids must be utf8mb4 (compared as utf8mb4_bin)",
            # ndcg@100 alone on MovieLens-100K-shaped data (benchmarks/engines.py): over 90 s at the default
            # level 2 (block nested loops only), 2.7 s at 4 (hash joins) on MariaDB 10.11. A hash join hashes
            # a join buffer's worth of its outer rows and scans the inner table once per buffer, and a grouping
            # whose table outgrows tmp_table_size and max_heap_table_size moves to disk: at the defaults (256 KB
            # buffers, 2 MB for all of a query's, 16 MB tables) compare with coverage, gini and personalization
            # on MovieLens-100K (908 users, 4 runs, 100 resamples) took 66 s, with these sizes 10 s
            settings=(("join_cache_level", "4"), ("join_buffer_size", str(64 << 20)),
                      ("join_buffer_space_limit", str(256 << 20)), ("tmp_table_size", str(512 << 20)),
                      ("max_heap_table_size", str(512 << 20))), set_statement="SET SESSION {name} = {value}",
            set_scope="on MariaDB, ", set_why="hash joins with 64 MB buffers, groupings in memory up to 512 MB; at "
                                             "the default join_cache_level 2 a large evaluation takes minutes "
                                             "instead of seconds; MySQL 8 has hash joins of its own and recsql "
                                             "sets nothing there"),
    # Spark's analyser resolves nested SELECTs a level per pass, at most 100 passes: alpha_ndcg@10 alone (51
    # SELECTs nested through its CTEs) ran, @15 (71) failed with "Max iterations (100) reached for batch
    # Resolution"
    Dialect("spark", "spark", executed="Apache Spark (pyspark, local mode)", step_depth=40),
    Dialect("clickhouse", "clickhouse", executed="ClickHouse (chdb)", transforms=(_clickhouse_settings,),
            # every metric at @100 (benchmarks/engines.py, 64 metrics) is a statement of 277 KB, more than the
            # 256 KB ClickHouse parses by default ("Max query size exceeded")
            settings=(("max_query_size", str(16 << 20)),),
            # ClickHouse writes out each CTE where it is read and nests at most 100 subqueries: alpha_ndcg@20
            # alone (91 SELECTs nested through its CTEs) ran, @23 (103) failed with "Too deep subqueries"
            step_depth=64,
            set_why="the statement with many metrics is longer than the 256 KB ClickHouse parses by default"),
    # step_ctes, step_depth: DataFusion runs all of a plan's operators at once and computes a CTE again at each
    # read. On MovieLens-100K-shaped data in a 4 GB pool (benchmarks/engines.py), the intent-aware metrics at
    # @100 (a greedy ideal list of 101 CTEs, three windows each, 419 SELECTs nested through them) failed in
    # 3 s ("Not enough memory to continue external sort"), and every other metric at @100 (57 in a statement
    # of 87 CTEs) too, with one partition or smaller sort reservations as well; in steps the 57 took 42 s
    # and peaked at 1.8 GB
    Dialect("datafusion", "postgres", executed="Apache DataFusion", transforms=(_crossed_first,),
            step_ctes=64, step_depth=64,
            note="sqlglot has no DataFusion writer; its PostgreSQL SQL runs there unchanged",
            # DataFusion runs all of a plan's joins together and does not share a CTE read twice: every metric
            # at k = 100 on MovieLens-100K-shaped data (benchmarks/engines.py) peaked at 6.0 GB with hash joins
            # (and failed in a 2 GB memory pool), at 0.8 GB with sort-merge joins, in about the same time
            # DataFusion 55 refuses to plan an aggregate over a cross join of two tables that carry different
            # schema metadata (pandas' own, in a table registered from a DataFrame): "Physical input schema
            # should be the same as the one converted from logical input schema"; the check is skipped
            settings=(("datafusion.optimizer.prefer_hash_join", "false"),
                      ("datafusion.execution.skip_physical_aggregate_schema_check", "true")),
            set_why="sort-merge joins, which spill: with hash joins every metric at k = 100 took 6 GB where "
                    "sort-merge took 0.8 GB; an aggregate over a cross join of tables registered from "
                    "DataFrames (pandas' schema metadata) fails to plan without the second"),
    Dialect("databricks", "databricks", note="Spark SQL, as executed on Spark"),
    Dialect("bigquery", "bigquery"),
    Dialect("snowflake", "snowflake"),
    Dialect("redshift", "redshift"),
    Dialect("trino", "trino"),
    Dialect("presto", "presto"),
    Dialect("athena", "athena"),
    Dialect("tsql", "tsql", collation="Latin1_General_BIN2", id_text="VARCHAR(8000)", note="SQL Server 2022+ (GREATEST/LEAST)"),
    Dialect("oracle", "oracle", id_text="VARCHAR(4000)", transforms=(_oracle_dual,), note="quoted identifiers are case-sensitive"),
)}
ALIASES = {"mariadb": "mysql", "postgresql": "postgres", "sqlserver": "tsql", "mssql": "tsql", "pyspark": "spark",
           "chdb": "clickhouse"}


STEPS = ":steps"
# each dialect with whole-statement transforms, as a runner that runs long statements in steps renders it
_FOR_STEPS = {d.name + STEPS: replace(d, name=d.name + STEPS, whole=()) for d in DIALECTS.values() if d.whole}


def for_steps(name: str) -> str:
    """The name under which :func:`render` writes dialect ``name``'s SQL for a runner that runs a statement
    of more than :attr:`Dialect.step_ctes` CTEs in steps (recsql/engines/steps.py): without the
    :attr:`Dialect.whole` transforms. ``name`` itself where there are none. Not a dialect a user names:
    :func:`dialect` refuses it."""
    return name + STEPS if name + STEPS in _FOR_STEPS else name


def spec(name: str) -> Dialect:
    """What :func:`render` writes for ``name``: :func:`dialect`'s, and the names :func:`for_steps` gives."""
    return _FOR_STEPS.get(name) or dialect(name)


def dialect(name: str) -> Dialect:
    """The :class:`Dialect` for a name or alias; a clear error for anything else."""
    key = ALIASES.get(name.lower(), name.lower())
    if key not in DIALECTS:
        raise RecsqlError(
            f"dialect {name!r} is not supported: recsql renders for {', '.join(sorted(DIALECTS))} "
            f"(aliases: {', '.join(sorted(ALIASES))}); a dialect is added once its SQL is checked")
    return DIALECTS[key]


def render(statement: exp.Expression, name: str, *, pretty: bool = True, copy: bool = True) -> str:
    """SQL text of ``statement`` for dialect ``name``; raises when sqlglot cannot express a part.
    ``copy=False``: the caller gives up ``statement`` (rendering changes it), sparing a copy of the tree."""
    target = spec(name)
    tree = _native_window_nulls(statement.copy() if copy else statement, target.sqlglot)
    for transform in (*target.transforms, *target.whole):
        tree = transform(tree)
    if target.session:
        tree = _session_line(tree, target)
    try:
        return tree.sql(dialect=target.sqlglot, pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE,
                        copy=False)  # the tree is this call's own: sqlglot need not copy it again
    except sqlglot.errors.UnsupportedError as err:
        raise RecsqlError(f"the query cannot be written in {target.name.removesuffix(STEPS)}: {err}") from None
    except RecursionError:
        raise RecsqlError(f"the query cannot be written in {target.name.removesuffix(STEPS)}: it is nested too "
                          "deeply for sqlglot to write; ask for fewer metrics at a time") from None
