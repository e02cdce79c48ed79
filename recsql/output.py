"""Writing results: tables into a DuckDB database (all in one transaction, CREATE OR REPLACE, never
over a table the evaluation read); JSON with every digit of each number; and, before anything is
read, refusing every output that would replace an input.

>>> import duckdb, pandas as pd
>>> con = duckdb.connect()
>>> write_tables(con, {"metrics": pd.DataFrame({"ndcg@10": [0.5]})}, protected=("recs",))
>>> con.execute("SELECT * FROM metrics").fetchall()
[(0.5,)]
>>> print(to_json(pd.DataFrame({"p@3": [1 / 3, float("nan")]}), indent=None))
[{"p@3": 0.3333333333333333}, {"p@3": null}]
"""
from __future__ import annotations

import datetime
import decimal
import glob
import json
import math
import os
import uuid
from typing import Any, Iterable, Mapping

import duckdb
import numpy as np
import pandas as pd

from .errors import RecsqlError
from .sources import table_relation


def _key(name: str) -> tuple[str, str]:
    """(schema, table) of a name, lower-cased, DuckDB's default schema filled in."""
    parts = [p.lower() for p in name.split(".")]
    return ("main", parts[0]) if len(parts) == 1 else (parts[-2], parts[-1])


def _plain(value: Any) -> Any:
    """One cell as a JSON value: NULL, NaN and ±infinity become null (JSON has no NaN); numbers
    stay exact (Python writes a float with the shortest digits that read back to the same double)."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, (datetime.date, datetime.time)):  # pandas Timestamps included
        return value.isoformat()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    return value


def _column_json(column: pd.Series) -> list[str]:
    """Each cell of a column as JSON text; numeric columns without a Python call per cell."""
    values = column.to_numpy() if isinstance(column.dtype, np.dtype) else None
    if values is None or values.dtype.kind not in "fiub":  # text, dates, nullable types: each distinct value once
        codes, distinct = pd.factorize(column, use_na_sentinel=True)
        texts = np.array([json.dumps(_plain(v), allow_nan=False, default=str) for v in distinct] + ["null"], dtype=object)
        return texts[codes].tolist()  # code -1 (NULL) is the last: null
    if values.dtype.kind == "f":
        texts = list(map(float.__repr__, values.astype(np.float64).tolist()))
        for i in np.flatnonzero(~np.isfinite(values)).tolist():
            texts[i] = "null"
        return texts
    if values.dtype.kind in "iu":
        return list(map(str, values.tolist()))
    return ["true" if v else "false" for v in values.tolist()]


def to_json(frame: pd.DataFrame, indent: int | None = 2) -> str:
    """The frame as a JSON array of records (laid out as ``json.dumps`` does), each number written
    with every digit its double has (``float.__repr__``, as in CSV: it reads back to the same
    value); NaN, NULL and ±infinity are ``null``."""
    keys = [json.dumps(str(c)).replace("{", "{{").replace("}", "}}") for c in frame.columns]
    columns = [_column_json(frame.iloc[:, i]) for i in range(frame.shape[1])]
    cells = zip(*columns) if keys else [()] * len(frame)
    if indent is None:
        row = "{{" + ", ".join(f"{key}: {{}}" for key in keys) + "}}"
        return "[" + ", ".join(row.format(*c) for c in cells) + "]"
    pad = " " * indent
    row = (pad + "{{\n" + ",\n".join(f"{pad * 2}{key}: {{}}" for key in keys) + "\n" + pad + "}}") if keys else pad + "{{}}"
    rows = [row.format(*c) for c in cells]
    return "[\n" + ",\n".join(rows) + "\n]" if rows else "[]"


def check_outputs(tables: Mapping[str, str | None], files: Mapping[str, str | None],
                  table_inputs: Iterable[str], file_inputs: Mapping[str, str | None]) -> None:
    """Refuse, before anything is read, outputs that would replace an input: ``tables`` and
    ``files`` are option -> output (a table name, a file path), ``table_inputs`` the input strings
    that may name tables, ``file_inputs`` option -> input path or glob. Files are compared as the
    files they are (symbolic links and hard links resolved), globs by the files they match.

    >>> check_outputs({"--out": "Recs"}, {}, ["recs"], {})
    Traceback (most recent call last):
    ...
    recsql.errors.RecsqlError: --out 'Recs' is an input table of this evaluation; choose another name (recsql never replaces its inputs)
    """
    chosen = {option: name for option, name in tables.items() if name}
    for option, name in chosen.items():
        if any(_key(name) == _key(source) for source in table_inputs):
            raise RecsqlError(f"{option} {name!r} is an input table of this evaluation; choose another name "
                              "(recsql never replaces its inputs)")
    names = list(chosen.items())
    for i, (option, name) in enumerate(names):
        for other, other_name in names[i + 1:]:
            if _key(name) == _key(other_name):
                raise RecsqlError(f"{option} and {other} name the same table {name!r}; choose two names")
    for option, path in files.items():
        if not path or not os.path.exists(path):
            continue  # a new file cannot be an input
        for source_option, pattern in file_inputs.items():
            if not pattern:
                continue
            for source in glob.glob(pattern) or [pattern]:
                if os.path.exists(source) and os.path.samefile(path, source):
                    raise RecsqlError(f"{option} {path!r} is the input {source_option} {source!r}; choose another "
                                      "path (recsql never overwrites its inputs)")


def write_tables(con: Any, tables: dict[str, pd.DataFrame], protected: Iterable[str] = ()) -> None:
    """``CREATE OR REPLACE TABLE name AS <frame>`` for every entry, in one transaction."""
    guarded = {_key(p) for p in protected}
    for name in tables:
        if _key(name) in guarded:
            raise RecsqlError(f"output table {name!r} is an input of this evaluation; choose another name "
                              "(recsql never replaces its inputs)")
    owned = None
    if isinstance(con, (str, os.PathLike)):
        owned = con = duckdb.connect(os.fspath(con))
    cursor = con.cursor()
    try:
        cursor.execute("BEGIN TRANSACTION")
        try:
            for name, frame in tables.items():
                view = f"__recsql_out_{uuid.uuid4().hex[:12]}"
                cursor.register(view, frame)
                cursor.execute(f"CREATE OR REPLACE TABLE {table_relation(name).sql('duckdb')} AS SELECT * FROM {view}")
                cursor.unregister(view)
            cursor.execute("COMMIT")
        except duckdb.Error as err:
            cursor.execute("ROLLBACK")
            raise RecsqlError(f"could not write {', '.join(map(repr, tables))}: {str(err).splitlines()[0]}; "
                              "nothing was written") from None
    finally:
        cursor.close()
        if owned is not None:
            owned.close()
