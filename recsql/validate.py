"""Checks on the bound inputs before the query runs: columns present, types usable, duplicates.

Each failure raises :class:`RecsqlError` naming the input, the column and the fix.
"""
from __future__ import annotations

import re

from .errors import RecsqlError
from .sources import Source

# Type names across engines: DuckDB, SQLite, PostgreSQL (psycopg names), MySQL, Spark, ClickHouse, Arrow.
_NUMERIC = re.compile(r"^(TINYINT|SMALLINT|MEDIUMINT|INTEGER|INT|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT"
                      r"|UHUGEINT|INT[248]|FLOAT[48]?|REAL|DOUBLE( PRECISION)?|DECIMAL(\(.*\))?|NUMERIC(\(.*\))?"
                      r"|U?INT(8|16|32|64|128|256)|FLOAT(16|32|64)|DECIMAL(32|64|128|256)?\(.*\)|LONG|SHORT|BYTE)$", re.I)
_STRINGY = re.compile(r"^(VARCHAR|TEXT|STRING|CHAR|BPCHAR|CHARACTER( VARYING)?|UUID|BLOB|UTF8|LARGE_?UTF8|UTF8_?VIEW"
                      r"|LARGE_STRING|STRING_VIEW|FIXEDSTRING)(\(.*\))?$", re.I)



def family(engine_type: str) -> str:
    """'number', 'string', 'unknown' (an untyped empty SQLite column) or 'other' for a type name."""
    name = engine_type.strip()
    inner = re.fullmatch(r"(?:Nullable|LowCardinality)\((.*)\)", name)
    name = inner.group(1) if inner else name
    if _NUMERIC.match(name):
        return "number"
    if _STRINGY.match(name):
        return "string"
    return "unknown" if name.upper() == "UNKNOWN" else "other"


def resolve_column(source: Source, column: str, option: str) -> str:
    """The source's own spelling of ``column``; a clear error when it is missing."""
    if column in source.columns:
        return column
    folded = {c.lower(): c for c in source.columns}
    if column.lower() in folded:
        return folded[column.lower()]
    raise RecsqlError(
        f"{source.role} ({source.described}) has no column {column!r}; its columns are "
        f"{', '.join(map(repr, source.columns))}. Pass {option}='<your column>' to name it."
    )


def require_number(source: Source, column: str, what: str) -> None:
    engine_type = source.columns[column]
    if family(engine_type) not in ("number", "unknown"):
        raise RecsqlError(
            f"{source.role} column {column!r} holds {engine_type}, but the {what} must be a number; "
            f"cast it (e.g. CAST({column} AS DOUBLE)) or name another column")


def require_same_ids(recs: Source, truth: Source, pairs: list[tuple[str, str, str]]) -> None:
    """User and item ids must be of one family (number or string) in recs and truth."""
    for label, rcol, tcol in pairs:
        rf, tf = family(recs.columns[rcol]), family(truth.columns[tcol])
        if {rf, tf} == {"number", "string"}:
            raise RecsqlError(
                f"{label} ids differ in type: recs column {rcol!r} is {recs.columns[rcol]} but truth column "
                f"{tcol!r} is {truth.columns[tcol]}; they would never match. Cast one side so both are "
                "numbers or both are strings")


def duplicate_report(rows: list[tuple], total: int, role: str, keys: list[str], fix: str) -> RecsqlError:
    """The error for ``total`` duplicated rows (extra copies of a key; among the ranked rows the
    metrics read, for recs) of ``role``, with example keys ``rows``."""
    examples = "; ".join(", ".join(f"{k}={v!r}" for k, v in zip(keys, row)) for row in rows)
    where = " among the ranked rows the metrics read" if role in ("recs",) else ""
    return RecsqlError(
        f"{role} has {total} duplicated ({', '.join(keys)}) row(s) (extra copies of a key{where})"
        f"{', e.g. ' + examples if examples else ''}. {fix}")
