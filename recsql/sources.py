"""Bind the user's inputs (tables, files, DataFrames) to relations the query reads.

Every user-supplied name becomes a quoted identifier and every path a string literal, built as
sqlglot nodes — never spliced into SQL text. DataFrames are registered on the connection under a
private name for the duration of one evaluation and unregistered afterwards.

>>> table_relation("db.main.recs").sql("duckdb")
'"db"."main"."recs"'
>>> file_relation("data/recs.parquet").sql("duckdb")
"READ_PARQUET('data/recs.parquet')"
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from sqlglot import exp

from .errors import RecsqlError
from .trec import TrecFile

_READERS = {
    ".parquet": "read_parquet", ".pq": "read_parquet",
    ".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv",
    ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json",
}


@dataclass
class Source:
    """One bound input: the relation to read, its columns and types when known, and cleanup."""

    role: str
    relation: exp.Expression
    columns: dict[str, str] = field(default_factory=dict)  # name -> engine type (empty: unknown)
    cleanup: Callable[[], None] = lambda: None
    described: str = ""
    table: str | None = None  # the user's table name, when the input is a table
    # a column name (lowercase) -> the input's columns of that name, where it has two or more ('score'
    # twice in a DataFrame, 'score' and 'Score' in a CSV header): engines read one of them silently
    # (DuckDB renames the other 'score_1'), so validate.resolve_column refuses the name
    doubled: dict[str, tuple[str, ...]] = field(default_factory=dict)


def doubled_names(names: list[str]) -> dict[str, tuple[str, ...]]:
    """Names that occur twice or more, ignoring case (as DuckDB, SQLite, MySQL and Spark read them).

    >>> doubled_names(["user_id", "score", "Score", "item_id"])
    {'score': ('score', 'Score')}
    """
    seen: dict[str, list[str]] = {}
    for name in names:
        seen.setdefault(str(name).lower(), []).append(str(name))
    return {key: tuple(group) for key, group in seen.items() if len(group) > 1}


def table_relation(name: str) -> exp.Table:
    """``a.b.c`` -> the quoted table ``"a"."b"."c"`` (each part one identifier)."""
    parts = [p for p in name.split(".")]
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise RecsqlError(f"table name {name!r} must be 'table', 'schema.table' or 'db.schema.table'")
    ids = [exp.to_identifier(p, quoted=True) for p in parts]
    return exp.Table(this=ids[-1], db=ids[-2] if len(ids) > 1 else None,
                     catalog=ids[-3] if len(ids) > 2 else None)


def _reader(path: str) -> str | None:
    lower = path.lower()
    for ext, reader in _READERS.items():
        if lower.endswith(ext) or lower.endswith(ext + ".gz") or lower.endswith(ext + ".zst"):
            return reader
    return None


def looks_like_path(value: str) -> bool:
    """A string is a file input if it names a known file type (a glob too: ``runs/*.parquet``) or has a
    path separator; a name with glob characters only (``r?x``, ``r[1]``) is a table name.

    >>> looks_like_path("runs/*.parquet"), looks_like_path("r*.csv"), looks_like_path("r?x"), looks_like_path("r[1]")
    (True, True, False, False)
    """
    return _reader(value) is not None or os.sep in value or "/" in value


def file_relation(path: str) -> exp.Expression:
    """``read_parquet('path')`` (or read_csv / read_json by the file's ending)."""
    reader = _reader(path)
    if reader is None:
        raise RecsqlError(
            f"cannot tell the file type of {path!r}: recsql reads .parquet, .csv/.tsv and .json/.jsonl "
            "files (optionally .gz); rename the file or load it into a table first")
    return exp.Anonymous(this=reader, expressions=[exp.Literal.string(path)])


def bind(role: str, obj: Any, runner: Any | None) -> Source:
    """Bind one input (``role`` is 'recs', 'truth' or 'items') for ``runner`` (None: render only).

    A string is a file path (when the engine reads files and it looks like one and is not a table
    there) or a table name; anything else is a DataFrame the runner may register for this run."""
    if isinstance(obj, TrecFile):
        if runner is not None:
            if runner.dialect != "duckdb":
                raise RecsqlError(f"{role}: TREC files are read by DuckDB (con=None or a DuckDB connection); on "
                                  f"{runner.name}, load the file into a table first")
            obj.check(runner.fetch_rows)
        return Source(role, obj.relation(), described=repr(obj))
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    if isinstance(obj, str):
        reads_files = runner is None or runner.reads_files
        if reads_files and looks_like_path(obj) and not (runner is not None and runner.is_table(table_relation_or_none(obj))):
            relation = file_relation(obj)
            if runner is not None and not (glob.glob(obj) or obj.startswith(("s3://", "gs://", "http://", "https://"))):
                raise RecsqlError(f"{role}: file {obj!r} does not exist; check the path (globs like 'data/*.parquet' are allowed)")
            doubled = {}
            if runner is not None and relation.name == "read_csv":
                _check_rows(role, obj, relation, runner)
                doubled = doubled_names(_csv_header(obj, runner))
            return Source(role, relation, described=f"file {obj!r}", doubled=doubled)
        return Source(role, table_relation(obj), described=f"table {obj!r}", table=obj)
    if runner is None:
        raise RecsqlError(f"{role}: to render SQL, pass a table name or a file path, not a {type(obj).__name__}")
    if type(obj).__module__.split(".")[0] in {"pandas", "polars", "pyarrow", "pyspark"}:
        _check_frame_types(role, obj)
        frame = _rescannable(obj)
        source = runner.bind_frame(role, frame)
        source.doubled = doubled_names(_frame_names(frame))
        return source
    raise RecsqlError(
        f"{role}: cannot read a {type(obj).__name__}; pass a table or view name, a Parquet/CSV/JSON path "
        "or glob, a pandas or polars DataFrame, or an Arrow table")


# Column types no engine reads, by the frame library's type name: what to cast to instead.
_UNREADABLE = {"complex": "a real number (e.g. the real part: df[col].real) or two columns",
               "Int128": "Int64, or a Decimal if the values need more than 63 bits",
               "UInt128": "Int64, or a Decimal if the values need more than 63 bits"}


def _check_frame_types(role: str, frame: Any) -> None:
    """A pandas or polars column of a type the engines cannot read (complex numbers, 128-bit
    integers) is refused by name, before an engine fails on it."""
    schema = getattr(frame, "collect_schema", None)
    if callable(schema):  # polars
        types = {name: str(kind) for name, kind in schema().items()}
    elif hasattr(frame, "dtypes") and hasattr(frame, "columns") and type(frame).__module__.startswith("pandas"):
        types = {str(name): ("complex" if getattr(kind, "kind", "") == "c" else str(kind))
                 for name, kind in frame.dtypes.items()}
    else:
        return
    for name, kind in types.items():
        if kind in _UNREADABLE:
            raise RecsqlError(f"{role} column {name!r} holds {kind} values, which recsql's engines cannot read; "
                              f"cast it to {_UNREADABLE[kind]}")


def _frame_names(frame: Any) -> list[str]:
    """A DataFrame's or Arrow table's column names, duplicates kept."""
    schema = getattr(frame, "schema", None)
    if type(frame).__module__.startswith("pyarrow") and schema is not None:
        return list(schema.names)
    return [str(name) for name in getattr(frame, "columns", ())]


def _csv_header(path: str, runner: Any) -> list[str]:
    """The column names of a CSV file's header as written (DuckDB renames a repeated one)."""
    relation = exp.Anonymous(this="read_csv", expressions=[
        exp.Literal.string(path), exp.EQ(this=exp.var("header"), expression=exp.false()),
        exp.EQ(this=exp.var("all_varchar"), expression=exp.true())])
    try:
        rows = runner.fetch_rows(exp.select("*").from_(relation).limit(1).sql("duckdb"))
    except RecsqlError:
        return []
    return [str(value) for value in rows[0]] if rows else []


def _rescannable(obj: Any) -> Any:
    """An input every check and the query can read again: a polars LazyFrame is collected and a
    pyarrow RecordBatchReader (which can be read only once) read into a table; DataFrames, Arrow
    tables and datasets are returned as they are."""
    kind = type(obj).__module__.split(".")[0], type(obj).__name__
    if kind == ("polars", "LazyFrame"):
        return obj.collect()
    if kind[0] == "pyarrow" and hasattr(obj, "read_all") and hasattr(obj, "read_next_batch"):
        return obj.read_all()
    return obj


def _check_rows(role: str, path: str, relation: exp.Expression, runner: Any) -> None:
    """A CSV file with a header and no rows has no column types (DuckDB reads every column as text):
    say that the input is empty rather than that its score is not a number."""
    try:
        rows = runner.fetch_rows(exp.select("1").from_(relation.copy()).limit(1).sql("duckdb"))
    except RecsqlError:
        return  # the checks that follow name what is wrong with the file
    if not rows:
        raise RecsqlError(f"{role}: file {path!r} has no rows (a header only, or nothing at all): there is nothing to "
                          "evaluate and no column types to read; check that the file was written completely, or pass "
                          "a Parquet file or DataFrame with typed columns")


def table_relation_or_none(name: str) -> exp.Expression | None:
    try:
        return table_relation(name)
    except RecsqlError:
        return None
