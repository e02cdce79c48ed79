"""Writing results: tables into a DuckDB database (all in one transaction, CREATE OR REPLACE, never
over a table the evaluation read, nor over one recsql did not write unless asked to: each table recsql
writes carries the comment :data:`WRITTEN`); JSON with every digit of each number; and, before anything is
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

import contextlib
import datetime
import decimal
import glob
import json
import math
import os
import uuid
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import duckdb

from .database import in_transaction, open_database
from .errors import RecsqlError
from .files import check_file_output, stop_if_signalled, write_file  # noqa: F401 - write_file: recsql.output's since the start
from .sources import looks_like_path, table_relation

if TYPE_CHECKING:  # the frames written are pandas', loaded by whoever made them; the checks need no pandas
    import pandas as pd


Key = tuple[str, str, str]  # (catalog, schema, table), lower-cased: DuckDB compares names case-insensitively
WRITTEN = "written by recsql"  # how every table recsql writes begins its comment (COMMENT ON TABLE)


def _parts(name: str) -> list[str]:
    """The lower-cased parts of a table name (``a.b.c``), checked as :func:`table_relation` does."""
    table = table_relation(name)
    return [p.lower() for p in (table.catalog, table.db, table.name) if p]


def _candidates(parts: list[str], database: str, schema: str) -> set[Key]:
    """Every object a name may denote from ``database.schema`` under DuckDB's rules: ``t`` is the
    current schema's (or a temporary) table; ``a.b`` is schema ``a``'s table ``b`` or catalog
    ``a``'s ``main.b``; ``a.b.c`` is itself. Both readings are kept, so a guard never misses one."""
    if len(parts) == 1:
        return {(database, schema, parts[0]), ("temp", "main", parts[0])}
    if len(parts) == 2:
        return {(database, parts[0], parts[1]), (parts[0], "main", parts[1])}
    return {tuple(parts)}  # type: ignore[arg-type]


class Catalog:
    """The tables and views of a DuckDB connection, to resolve names to the objects they denote
    (views expanded to every table they read, transitively). Without a connection, names resolve
    against an empty database named ``""`` (plain name comparison, case-insensitive)."""

    def __init__(self, con: Any = None) -> None:
        self.database, self.schema, self.views, self.tables = "", "main", {}, {}
        if con is None:
            return
        # read on the connection itself: a cursor would not see its current database (USE) or temporary views
        self.database, self.schema = (v.lower() for v in con.execute(
            "SELECT current_database(), current_schema()").fetchone())
        self.views = {(d.lower(), s.lower(), v.lower()): sql for d, s, v, sql in con.execute(
            "SELECT database_name, schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()}
        self.tables = {(d.lower(), s.lower(), t.lower()): comment or "" for d, s, t, comment in con.execute(
            "SELECT database_name, schema_name, table_name, comment FROM duckdb_tables() WHERE NOT internal").fetchall()}

    def outputs(self, name: str) -> set[Key]:
        """The objects ``CREATE OR REPLACE TABLE name`` may replace."""
        return _candidates(_parts(name), self.database, self.schema)

    def inputs(self, name: str) -> set[Key]:
        """The objects reading ``name`` may read: the table, or a view and every table behind it."""
        try:
            found = _candidates(_parts(name), self.database, self.schema)
        except RecsqlError:
            return set()  # not a table name (a path): no table to protect
        todo = list(found)
        while todo:
            key = todo.pop()
            if key in self.views:
                for parts in _view_reads(self.views[key]):
                    for read in _candidates(parts, key[0], key[1]) - found:
                        found.add(read)
                        todo.append(read)
        return found


    def files(self, name: str) -> list[str]:
        """The paths and globs the views behind ``name`` read (read_parquet('x'), FROM 'x.csv', ...)."""
        return [path for key in sorted(self.inputs(name)) if key in self.views for path in _view_files(self.views[key])]


def _view_files(sql: str) -> list[str]:
    """Every string a view's SQL holds that may be a file it reads: string literals (the arguments of
    read_parquet, read_csv, ...) and quoted table names (FROM 'x.parquet'); comparing more strings
    than needed only ever refuses more."""
    import sqlglot
    from sqlglot import exp
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except Exception:  # noqa: BLE001 - unparsable: every string token
        from sqlglot.tokens import Tokenizer, TokenType
        return [t.text for t in Tokenizer().tokenize(sql) if t.token_type == TokenType.STRING]
    strings = [lit.this for lit in tree.find_all(exp.Literal) if lit.is_string]
    return strings + [t.name for t in tree.find_all(exp.Table) if t.name and looks_like_path(t.name)]


def _view_reads(sql: str) -> list[list[str]]:
    """The table names a view's SQL reads (lower-cased parts); when sqlglot cannot parse it, every
    identifier in it (so the guard errs on the side of refusing)."""
    import sqlglot
    from sqlglot import exp
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
        query = tree.expression if isinstance(tree, exp.Create) else tree
        tables = [t for t in query.find_all(exp.Table) if t.name]
        return [[p.lower() for p in (t.catalog, t.db, t.name) if p] for t in tables]
    except Exception:  # noqa: BLE001 - any parse failure: fall back to every word
        from sqlglot.tokens import Tokenizer, TokenType
        words = [t.text for t in Tokenizer().tokenize(sql) if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)]
        return [[w.lower()] for w in words]


def _plain(value: Any) -> Any:
    """One cell as a JSON value: NULL, NaN and ±infinity become null (JSON has no NaN); numbers
    stay exact (Python writes a float with the shortest digits that read back to the same double)."""
    import numpy as np
    import pandas as pd
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
    import numpy as np
    import pandas as pd
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


def _same_table(catalog: Catalog, tables: Mapping[str, str]) -> None:
    """Refuse two outputs that would be one table (``m`` and ``M``, ``recs`` and ``main.recs``)."""
    named = list(tables.items())
    for i, (option, name) in enumerate(named):
        for other, other_name in named[i + 1:]:
            if catalog.outputs(name) & catalog.outputs(other_name):
                raise RecsqlError(f"{option} and {other} name the same table ({name!r}, {other_name!r}; DuckDB "
                                  "compares names case-insensitively); choose two different names")


def _guard_tables(catalog: Catalog, tables: Mapping[str, str], inputs: Iterable[str], what: str) -> None:
    """Refuse an output table that is an input, or a table behind an input view, however named."""
    read = {name: catalog.inputs(name) for name in inputs if name}
    for option, name in tables.items():
        for source, keys in read.items():
            if catalog.outputs(name) & keys:
                behind = "" if catalog.outputs(name) & catalog.outputs(source) else f" (read through {source!r})"
                raise RecsqlError(f"{option} {name!r} is an input table of this evaluation{behind}; choose another "
                                  f"name (recsql never replaces its inputs){what}")


def _guard_existing(catalog: Catalog, tables: Mapping[str, str], replace: bool, flag: str) -> None:
    """Refuse an output that would replace a view, or a table recsql did not write (its comment does not
    begin with :data:`WRITTEN`), unless ``replace``; ``flag`` is how the caller says replace."""
    for option, name in tables.items():
        for key in sorted(catalog.outputs(name)):
            if key in catalog.views:
                raise RecsqlError(f"{option} {name!r} is a view in the database; choose another name (recsql writes "
                                  "tables, and never replaces a view)")
            if key in catalog.tables and not catalog.tables[key].startswith(WRITTEN) and not replace:
                raise RecsqlError(f"{option} {name!r}: the database already has a table {'.'.join(key)!r} that recsql "
                                  f"did not write; choose another name, or pass {flag} to replace it")


def _open_output_database(con: Any, what: str) -> tuple[Any, Any]:
    """(connection, owned connection or None) to write ``what`` into; a clear error for anything
    DuckDB cannot write to."""
    if isinstance(con, (str, os.PathLike)):
        path = os.fspath(con)
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise RecsqlError(f"cannot write {what}: {path!r} is a directory; pass a .duckdb file path")
        if not os.path.isdir(folder):
            raise RecsqlError(f"cannot write {what}: the directory {folder!r} of {path!r} does not exist; create it "
                              "first or pass a .duckdb file in an existing directory")
        try:
            owned = duckdb.connect(path)
        except duckdb.Error as err:
            first = str(err).splitlines()[0]
            fix = ("close the other program (or connection) that has it open, then write again"
                   if "lock" in first.lower() or "already" in first.lower() else
                   "pass a DuckDB database file (a new path creates one)")
            raise RecsqlError(f"cannot write {what} into {path!r}: {first}; {fix}; nothing was written") from None
        return owned, owned
    if isinstance(con, duckdb.DuckDBPyConnection):
        return con, None
    raise RecsqlError(f"cannot write {what} to a {type(con).__module__}.{type(con).__name__}: Evaluation.write writes "
                      "DuckDB tables (pass a DuckDB connection or a .duckdb path); for another database write the "
                      "DataFrames yourself, e.g. result.summary.to_sql('metrics', connection)")


def check_outputs(tables: Mapping[str, str | None], files: Mapping[str, str | None],
                  table_inputs: Iterable[str], file_inputs: Mapping[str, str | None], db: str | None = None,
                  replace: bool = False) -> None:
    """Refuse, before anything is read, outputs that cannot be written or would replace an input (or,
    without ``replace``, the command line's ``--replace``, a table recsql did not write):
    ``tables`` and ``files`` are option -> output (a table name in the ``db`` file, a file path),
    ``table_inputs`` the input strings that may name tables, ``file_inputs`` option -> input path or
    glob. Table names are resolved to the objects they denote in ``db`` (catalog, schema,
    case-insensitive name; views to the tables they read); files are compared as the files they
    are (symbolic links and hard links resolved), globs by the files they match.

    >>> check_outputs({"--out": "Recs"}, {}, ["recs"], {})
    Traceback (most recent call last):
    ...
    recsql.errors.RecsqlError: --out 'Recs' is an input table of this evaluation; choose another name (recsql never replaces its inputs)
    """
    chosen = {option: name for option, name in tables.items() if name}
    for option, name in chosen.items():
        table_relation(name)  # a valid name, or a clear error
    catalog = Catalog()
    if (chosen or any(files.values())) and db and os.path.isfile(db):
        con = open_database(db)  # read-only: only the catalog is looked at
        try:
            catalog = Catalog(con)
        finally:
            con.close()
    _same_table(catalog, chosen)
    _guard_tables(catalog, chosen, table_inputs, "")
    _guard_existing(catalog, chosen, replace, "--replace")
    # a file a view reads is an input too: `CREATE VIEW recs AS FROM 'recs.parquet'` protects recs.parquet
    file_inputs = {**file_inputs, **{f"{name}, a view reading": path for name in table_inputs
                                     for path in catalog.files(name)}}
    for option, path in files.items():
        if not path:
            continue
        check_file_output(option, path)
        if not os.path.exists(path):
            continue  # a new file cannot be an input
        for source_option, pattern in file_inputs.items():
            if not pattern:
                continue
            for source in glob.glob(pattern) or [pattern]:
                if os.path.exists(source) and os.path.samefile(path, source):
                    raise RecsqlError(f"{option} {path!r} is the input {source_option} {source!r}; choose another "
                                      "path (recsql never overwrites its inputs)")


def write_tables(con: Any, tables: Mapping[str, pd.DataFrame], protected: Iterable[str] = (),
                 replace: bool = False) -> None:
    """``CREATE OR REPLACE TABLE name AS <frame>`` for every entry, in one transaction (see
    :func:`write_outputs`)."""
    write_outputs(con, [("output table", name, frame) for name, frame in tables.items()], protected, replace)


def write_outputs(con: Any, outputs: list[tuple[str, Any, pd.DataFrame]], protected: Iterable[str] = (),
                  replace: bool = False) -> None:
    """Write each ``(label, table name, frame)`` as ``CREATE OR REPLACE TABLE``, in one transaction,
    after checking every name and the database: two outputs may not be one table, no output may
    be a ``protected`` (input) table or a table behind an input view, however it is qualified or
    capitalised, nor a view, nor (without ``replace``) a table recsql did not write. Each table
    written carries the comment "written by recsql: <label>", which lets the next write replace it.
    Every refusal happens before anything is written."""
    for label, name, _ in outputs:
        if not isinstance(name, str) or not name:
            raise RecsqlError(f"{label}: a table name must be a non-empty string, got {name!r}; e.g. 'metrics'")
        table_relation(name)  # 'table', 'schema.table' or 'db.schema.table'
    if not outputs:
        raise RecsqlError("nothing to write: name the tables, e.g. write(con, summary='metrics', "
                          "per_user='metrics_by_user')")
    named = {label: name for label, name, _ in outputs}
    _same_table(Catalog(), named)
    what = ", ".join(repr(name) for _, name, _ in outputs)
    con, owned = _open_output_database(con, what)
    try:
        # the user's connection itself, as the user's own CREATE TABLE would run: in its current
        # database and schema (USE), and inside its open transaction, if any
        try:
            catalog = Catalog(con)
        except duckdb.Error as err:
            raise RecsqlError(f"cannot write {what}: {str(err).splitlines()[0]}; pass an open DuckDB connection "
                              "or a .duckdb path") from None
        _same_table(catalog, named)
        _guard_tables(catalog, named, protected, "")
        _guard_existing(catalog, named, replace, "replace=True")
        _create(con, {name: (label, frame) for label, name, frame in outputs}, what)
    finally:
        if owned is not None:
            owned.close()


def _create(con: Any, tables: dict[str, tuple[str, pd.DataFrame]], what: str) -> None:
    """Create the tables in one transaction: recsql's own, or the user's open one, which the user
    then commits or rolls back (DuckDB aborts a transaction on any failed statement, so a failure
    inside the user's says so)."""
    own = not in_transaction(con)
    views: list[str] = []
    if own:
        con.execute("BEGIN TRANSACTION")
    try:
        for name, (label, frame) in tables.items():
            views.append(f"__recsql_out_{uuid.uuid4().hex[:12]}")
            con.register(views[-1], frame)
            table = table_relation(name).sql("duckdb")
            con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {views[-1]}")
            con.execute(f"COMMENT ON TABLE {table} IS '{WRITTEN}: {label.replace(chr(39), chr(39) * 2)}'")
        if own:
            stop_if_signalled()  # the command line's signal, even if its KeyboardInterrupt was swallowed
            con.execute("COMMIT")
    except duckdb.Error as err:
        if own:
            con.execute("ROLLBACK")
            raise RecsqlError(f"could not write {what}: {str(err).splitlines()[0]}; nothing was written") from None
        raise RecsqlError(f"could not write {what}: {str(err).splitlines()[0]}; DuckDB aborted the transaction open "
                          "on your connection, as it does on any failed statement: roll it back with con.rollback()"
                          ) from None
    except BaseException:  # Ctrl-C: nothing half written
        if own:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
        raise
    finally:
        for view in views:
            with contextlib.suppress(duckdb.Error):
                con.unregister(view)
