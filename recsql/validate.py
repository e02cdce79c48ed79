"""Checks on the bound inputs before the query runs: columns present, types usable, duplicates.

Each failure raises :class:`RecsqlError` naming the input, the column and the fix.
"""
from __future__ import annotations

import re
from typing import Any, NamedTuple

from .errors import RecsqlError
from .sources import Source

# Type names across engines: DuckDB, SQLite, PostgreSQL (psycopg names), MySQL, Spark, ClickHouse, Arrow.
_NUMERIC = re.compile(r"^(TINYINT|SMALLINT|MEDIUMINT|INTEGER|INT|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT"
                      r"|UHUGEINT|INT[248]|FLOAT[48]?|REAL|DOUBLE( PRECISION)?|DECIMAL(\(.*\))?|NUMERIC(\(.*\))?"
                      r"|U?INT(8|16|32|64|128|256)|FLOAT(16|32|64)|DECIMAL(32|64|128|256)?\(.*\)|LONG|SHORT|BYTE)$", re.I)
_STRINGY = re.compile(r"^(VARCHAR|TEXT|STRING|CHAR|BPCHAR|CHARACTER( VARYING)?|UUID|BLOB|UTF8|LARGE_?UTF8|UTF8_?VIEW"
                      r"|LARGE_STRING|STRING_VIEW|FIXEDSTRING)(\(.*\))?$", re.I)



def _bare(engine_type: str) -> str:
    """A type name without ClickHouse's Nullable(...) / LowCardinality(...) wrapper."""
    name = engine_type.strip()
    inner = re.fullmatch(r"(?:Nullable|LowCardinality)\((.*)\)", name)
    return inner.group(1) if inner else name


_TEMPORAL = re.compile(r"^(DATE(32|64)?(\[.*\])?|DATETIME(64)?(\(.*\))?|TIME(STAMP)?(TZ|_NTZ|_LTZ|_S|_MS|_NS)?"
                       r"(\s*\(.*\)|\[.*\])?( WITH(OUT)? TIME ZONE)?)$", re.I)


def family(engine_type: str) -> str:
    """'number', 'string', 'time' (dates, times, timestamps), 'mixed' (SQLite values of several
    types), 'unknown' (an untyped empty SQLite column) or 'other' for a type name.

    >>> family("BIGINT"), family("timestamp with time zone"), family("Nullable(String)"), family("BOOLEAN")
    ('number', 'time', 'string', 'other')
    """
    name = _bare(engine_type)
    if _NUMERIC.match(name):
        return "number"
    if _STRINGY.match(name) or _ENUM.match(name):
        return "string"
    if _TEMPORAL.match(name):
        return "time"
    if name.upper().startswith("MIXED("):
        return "mixed"
    return "unknown" if name.upper() == "UNKNOWN" else "other"


# Integer types wider than a DOUBLE's 53-bit mantissa, by engine: ordered as BIGINT (exact for every
# signed 64-bit value) or, unsigned or wider, as DECIMAL(38, 0); an overflow is the engine's error,
# never a silent tie. SQLite's INTEGER is 64-bit; DuckDB's INTEGER is 32-bit and fits a DOUBLE.
_WIDE_SIGNED = re.compile(r"^(BIGINT|INT8|INT64|LONG|INTEGER\[sqlite\])$", re.I)
_WIDE_UNSIGNED = re.compile(r"^(UBIGINT|UINT64|HUGEINT|UHUGEINT|U?INT(128|256)|DECIMAL\(\s*(1[6-9]|[2-9]\d|\d{3,})\s*,\s*0\s*\))$", re.I)
_DECIMAL = re.compile(r"^(?:DECIMAL|NUMERIC|DECIMAL(?:32|64|128|256))(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?$", re.I)
DOUBLE_DIGITS = 15  # decimal digits every DOUBLE holds exactly


# Engines whose own DECIMAL holds every value of their decimal columns (PostgreSQL's numeric up to 1000
# digits or unconstrained, MySQL/MariaDB's DECIMAL up to 65): such a score is ranked in its own type.
_NATIVE_DECIMALS = ("postgres", "mysql")


def order_type(engine_type: str, dialect: str) -> str:
    """The type the order column (score or rank) is ranked in: DOUBLE unless the column holds values
    a DOUBLE cannot tell apart (integers above 2^53, decimals with more than 15 digits), which are
    ranked exactly: BIGINT, DECIMAL(38, scale), or on PostgreSQL the column's own
    DECIMAL(precision, scale) (a bare DECIMAL: the unconstrained numeric, any digits) and on
    MySQL/MariaDB DECIMAL(65, scale), which holds every DECIMAL of that scale.

    >>> order_type("DOUBLE", "duckdb"), order_type("BIGINT", "duckdb"), order_type("DECIMAL(20,4)", "duckdb")
    ('DOUBLE', 'BIGINT', 'DECIMAL(38, 4)')
    >>> order_type("numeric(40,6)", "postgres"), order_type("numeric", "postgres"), order_type("DECIMAL(22,4)", "mysql")
    ('DECIMAL(40, 6)', 'DECIMAL', 'DECIMAL(65, 4)')
    """
    name = _bare(engine_type)
    tagged = f"{name}[sqlite]" if dialect == "sqlite" else name
    if _WIDE_SIGNED.match(name) or _WIDE_SIGNED.match(tagged):
        return "BIGINT"
    decimal = _DECIMAL.match(name)
    if decimal and dialect in _NATIVE_DECIMALS:
        if decimal.group(1) is None:
            return "DECIMAL" if dialect == "postgres" else "DECIMAL(65, 30)"  # MySQL: holds every DECIMAL
        precision, scale = int(decimal.group(1)), int(decimal.group(2) or 0)
        if precision <= DOUBLE_DIGITS:
            return "DOUBLE"
        return f"DECIMAL({precision}, {scale})" if dialect == "postgres" else f"DECIMAL(65, {scale})"
    if _WIDE_UNSIGNED.match(name):
        return "DECIMAL(38, 0)"
    if decimal and (decimal.group(1) is None or int(decimal.group(1)) > DOUBLE_DIGITS):
        return f"DECIMAL(38, {min(int(decimal.group(2) or 0) if decimal.group(1) else 10, 37)})"
    return "DOUBLE"


_ENUM = re.compile(r"^(ENUM\(.*\)|Enum(8|16)?\(.*\)|Dictionary\(.*\)|dictionary<.*>)$", re.I | re.S)
_FLOAT = re.compile(r"^(FLOAT[48]?|REAL|DOUBLE( PRECISION)?|FLOAT(16|32|64)|HALF_FLOAT)$", re.I)


def id_cast(engine_type: str) -> str | None:
    """How an id column of this type is read so that it compares by value (compose._ID_CASTS):
    'text' for enumerations (ordered by their codes otherwise) and UUIDs (which take no collation),
    'whole' for floats, None as it is.

    >>> id_cast("ENUM('b', 'a')"), id_cast("DOUBLE"), id_cast("BIGINT")
    ('text', 'whole', None)
    """
    name = _bare(engine_type)
    return "text" if _ENUM.match(name) or name.upper() == "UUID" else "whole" if _FLOAT.match(name) else None


def resolve_column(source: Source, column: str, option: str) -> str:
    """The source's own spelling of ``column``; a clear error when it is missing, or when the input
    has two columns of that name (``Source.doubled``), of which an engine would read one silently."""
    twins = source.doubled.get(column.lower())
    if twins:
        raise RecsqlError(
            f"{source.role} ({source.described}) has {len(twins)} columns named {column!r} "
            f"({', '.join(map(repr, twins))}{'' if len(set(twins)) == 1 else ': engines read names regardless of case'})"
            ": recsql would read one of them silently. Rename all but one (a DataFrame's columns, or the file's header)")
    if column in source.columns:
        return column
    folded = {c.lower(): c for c in source.columns}
    if column.lower() in folded:
        return folded[column.lower()]
    raise RecsqlError(
        f"{source.role} ({source.described}) has no column {column!r}; its columns are "
        f"{', '.join(map(repr, source.columns))}. Pass {option}='<your column>' to name it."
    )


# Column names that hold a rank (1 is best), never a score: recs with one and no score column are told
# to pass rank_col, since a rank read as a score would put rank 10 above rank 1.
RANK_NAMES = ("rank", "position", "pos")


def resolve_order(recs: Source, score_col: str | None, rank_col: str | None) -> str:
    """The recs column that orders each list: ``rank_col`` when given, else ``score_col``; a missing
    score with a rank-like column (:data:`RANK_NAMES`) beside it is refused with ``rank_col=``."""
    if rank_col:
        return resolve_column(recs, rank_col, "rank_col")
    ranks = [c for c in recs.columns if c.lower() in RANK_NAMES]
    if score_col.lower() not in {c.lower() for c in recs.columns} and ranks:
        raise RecsqlError(
            f"recs ({recs.described}) have no score column {score_col!r} but a rank column {ranks[0]!r}: pass "
            f"rank_col={ranks[0]!r} (1 is best). Named as the score, it would rank the largest number first: "
            "rank 10 above rank 1")
    return resolve_column(recs, score_col, "score_col")


def refuse_unnamed_grades(truth: Source, keys: set[str]) -> None:
    """Truth without the default relevance column but with a numeric column beside its keys (a
    ``rating``, a ``grade``) is refused: every row would count as relevant, rating 0 too. Truth of
    only keys is every row relevant, as documented."""
    graded = [c for c, t in truth.columns.items() if c.lower() not in keys and family(t) == "number"]
    if graded:
        raise RecsqlError(
            f"truth ({truth.described}) has no column 'relevance' but a numeric column {graded[0]!r}: pass "
            f"relevance_col={graded[0]!r} to grade the items by it (relevant iff it is >= threshold), or "
            "relevance_col=None to count every truth row as relevant")


def require_one_type(source: Source, column: str) -> None:
    """A column whose values are of several kinds (SQLite: integers and text) would match and order
    by kind before value: refused."""
    if family(source.columns[column]) == "mixed":
        raise RecsqlError(
            f"{source.role} column {column!r} holds values of several types ({source.columns[column][6:-1]}): "
            f"1 and '1' would never match. Cast the column to one type (CAST({column} AS INTEGER) or AS TEXT)")


def require_number(source: Source, column: str, what: str, runner: Any = None) -> None:
    """A column that must hold numbers; one of text on DuckDB (a CSV file's, say) is read once more to say
    what its values are (:func:`_text_values`), so that the fix named is the one that works."""
    engine_type = source.columns[column]
    require_one_type(source, column)
    if family(engine_type) not in ("number", "unknown"):
        seen = _text_values(runner, source, column) if family(engine_type) == "string" else None
        said, must, fix = "", "a number", f"cast it (e.g. CAST({column} AS DOUBLE)) or name another column"
        if seen is not None and seen.numbers == seen.values and seen.not_finite:
            in_file = getattr(source.relation, "key", "") == "anonymous"  # read_csv(...): a file
            must = "a finite number"
            said = (f" (numbers written as text, {seen.not_finite:,} of them NaN or infinite, e.g. {seen.example!r}"
                    f"{', which a CSV reader leaves as text' if in_file else ''})")
            fix = ("replace those values with finite numbers or drop those rows" +
                   ("; the file's column is then read as numbers" if in_file
                    else f", then cast the column (e.g. CAST({column} AS DOUBLE))"))
        elif seen is not None and seen.numbers == seen.values:
            said = " (numbers written as text)"
        elif seen is not None:
            wrong = seen.values - seen.numbers
            said = f" ({wrong:,} of its {seen.values:,} values {'is' if wrong == 1 else 'are'} not a number, e.g. {seen.example!r})"
            fix = "replace or drop the values that are not numbers, or name another column"
        raise RecsqlError(f"{source.role} column {column!r} holds {engine_type}{said}, but the {what} must be {must}; {fix}")


class _TextValues(NamedTuple):
    values: int  # not NULL
    numbers: int  # of those, read as a number
    not_finite: int  # of those, NaN or infinite
    example: str | None  # a value that is not a number, else one that is not finite


def _text_values(runner: Any, source: Source, column: str) -> _TextValues | None:
    """What a text column's values read as, on DuckDB (one scan; None elsewhere, or when it fails)."""
    if runner is None or runner.dialect != "duckdb":
        return None
    quoted = '"' + column.replace('"', '""') + '"'
    value = f"CAST({quoted} AS VARCHAR)"
    number = f"TRY_CAST({value} AS DOUBLE)"
    sql = (f"SELECT COUNT({value}), COUNT({number}), COUNT(CASE WHEN NOT ISFINITE({number}) THEN 1 END), "
           f"COALESCE(MIN(CASE WHEN {number} IS NULL THEN {value} END), MIN(CASE WHEN NOT ISFINITE({number}) THEN {value} END)) "
           f"FROM {source.relation.sql('duckdb')}")
    try:
        values, numbers, not_finite, example = runner.fetch_rows(sql)[0]
    except Exception:  # noqa: BLE001 - only a better message is lost: the error raised says the type
        return None
    return _TextValues(int(values), int(numbers), int(not_finite), example)


# The kinds of id that never match one another on every engine alike: some engines refuse to compare
# them, others cast one side (DuckDB reads '2024-01-01' as a date), so ids of two kinds are refused.
_ID_KINDS = {"number": "numbers", "string": "strings", "time": "dates or times"}


def require_same_ids(recs: Source, truth: Source, pairs: list[tuple[str, str, str]]) -> None:
    """User and item ids must be of one kind (numbers, strings, or dates and times) in recs and in
    ``truth`` (any input keyed like recs; its role names it)."""
    for label, rcol, tcol in pairs:
        rf, tf = family(recs.columns[rcol]), family(truth.columns[tcol])
        if rf != tf and rf in _ID_KINDS and tf in _ID_KINDS:
            raise RecsqlError(
                f"{label} ids differ in type: recs column {rcol!r} is {recs.columns[rcol]} ({_ID_KINDS[rf]}) but "
                f"{truth.role} column {tcol!r} is {truth.columns[tcol]} ({_ID_KINDS[tf]}); engines match ids of two "
                f"kinds differently or never. Cast one side so both are {_ID_KINDS[rf]} or both are {_ID_KINDS[tf]} "
                f"(e.g. CAST({tcol} AS {recs.columns[rcol]}))")


def duplicate_report(rows: list[tuple], total: int, role: str, keys: list[str], fix: str) -> RecsqlError:
    """The error for ``total`` duplicated rows (extra copies of a key; among the ranked rows the
    metrics read, for recs) of ``role``, with example keys ``rows``."""
    examples = "; ".join(", ".join(f"{k}={v!r}" for k, v in zip(keys, row)) for row in rows)
    where = " among the ranked rows the metrics read" if role in ("recs",) else ""
    return RecsqlError(
        f"{role} has {total} duplicated ({', '.join(keys)}) row(s) (extra copies of a key{where})"
        f"{', e.g. ' + examples if examples else ''}. {fix}")
