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
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from sqlglot import exp

from .errors import RecsqlError

_READERS = {
    ".parquet": "read_parquet", ".pq": "read_parquet",
    ".csv": "read_csv", ".tsv": "read_csv", ".txt": "read_csv",
    ".json": "read_json", ".jsonl": "read_json", ".ndjson": "read_json",
}
_GLOB_CHARS = set("*?[")


@dataclass
class Source:
    """One bound input: the relation to read, its columns and types when known, and cleanup."""

    role: str
    relation: exp.Expression
    columns: dict[str, str] = field(default_factory=dict)  # name -> engine type (empty: unknown)
    cleanup: Callable[[], None] = lambda: None
    described: str = ""


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
    """A string is a file input if it names a known file type, has a glob or a path separator."""
    return _reader(value) is not None or bool(_GLOB_CHARS & set(value)) or os.sep in value or "/" in value


def file_relation(path: str) -> exp.Expression:
    """``read_parquet('path')`` (or read_csv / read_json by the file's ending)."""
    reader = _reader(path)
    if reader is None:
        raise RecsqlError(
            f"cannot tell the file type of {path!r}: recsql reads .parquet, .csv/.tsv and .json/.jsonl "
            "files (optionally .gz); rename the file or load it into a table first")
    return exp.Anonymous(this=reader, expressions=[exp.Literal.string(path)])


def _is_dataframe(obj: Any) -> bool:
    module = type(obj).__module__.split(".")[0]
    return module in {"pandas", "polars", "pyarrow"}


def bind(role: str, obj: Any, con: Any | None) -> Source:
    """Bind one input (``role`` is 'recs', 'truth' or 'items') to a relation on ``con``."""
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    if isinstance(obj, str):
        if looks_like_path(obj) and not (con is not None and _is_table(con, obj)):
            relation = file_relation(obj)
            if con is not None and not (glob.glob(obj) or obj.startswith(("s3://", "gs://", "http://", "https://"))):
                raise RecsqlError(f"{role}: file {obj!r} does not exist; check the path (globs like 'data/*.parquet' are allowed)")
            return Source(role, relation, described=f"file {obj!r}")
        return Source(role, table_relation(obj), described=f"table {obj!r}")
    if _is_dataframe(obj):
        if con is None:
            raise RecsqlError(f"{role}: a DataFrame needs an engine to run on; use recsql.evaluate, or pass a table name to to_sql")
        name = f"__recsql_{role}_{uuid.uuid4().hex[:12]}"
        frame = obj.to_arrow() if type(obj).__module__.startswith("polars") else obj
        if len(getattr(frame, "columns", ())) == 0:
            raise RecsqlError(f"{role}: the {type(obj).__name__} has no columns; it needs at least "
                              "the user and item columns (see the README's input contract)")
        con.register(name, frame)
        return Source(role, exp.Table(this=exp.to_identifier(name, quoted=True)),
                      cleanup=lambda: con.unregister(name), described=f"{type(obj).__name__}")
    raise RecsqlError(
        f"{role}: cannot read a {type(obj).__name__}; pass a table or view name, a Parquet/CSV/JSON path "
        "or glob, a pandas or polars DataFrame, or an Arrow table")


def _is_table(con: Any, name: str) -> bool:
    """True when ``name`` resolves to a table or view on the DuckDB connection."""
    try:
        con.execute(f"DESCRIBE {table_relation(name).sql('duckdb')}")
        return True
    except Exception:  # noqa: BLE001 - any failure means: not a table
        return False
