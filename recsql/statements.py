"""The SQL text of a composed statement, memoised.

Composing (:func:`recsql.compose.compose`) and rendering (:func:`recsql.dialects.render`) a
statement costs tens of milliseconds of Python, as much as the query itself on a million rows.
Everything they produce depends on the plan's options and the metrics, never on what the input
relations are: a relation only ever stands in a FROM clause. So a statement is composed once per
(plan without its relations, metrics, output, dialect, layout), with a unique placeholder table for
each relation, and each call pastes the relations' own SQL text in place of the placeholders.

That text is what the renderer writes for the relation in place: sqlglot renders a table name or a
function call the same wherever it stands, and its decision to break a long argument list over
lines does not depend on indentation, so a relation is the same text inside the statement, its
lines after the first indented as the line it stands on (a file's long path, which the pretty
layout puts on a line of its own). A relation that holds a query is not pasted: that statement is
composed from scratch. ``tests/test_statements.py`` checks byte equality with the uncached path on
every dialect, for short and wrapped relations.

A cold process would still pay for parsing the templates and composing (a few hundred milliseconds)
on its first call. So the split statement is also kept on disk, as a ``.pyc`` keeps compiled code:
one JSON file per statement under ``$RECSQL_CACHE_DIR`` (default ``$XDG_CACHE_HOME/recsql`` or
``~/.cache/recsql``; ``RECSQL_CACHE_DIR=off`` turns it off), in a folder named by a digest of
everything the text can depend on: the content of every Python file of the recsql package and
every SQL template, and sqlglot's version. Any change to either is another folder, so a stale
statement cannot be read; the file also holds its full key, compared on reading. Writing is atomic
(a temporary file renamed); a folder holds at most ``_MAX_FILES`` statements: a statement read is
marked used (its file's modification time), and a write into a full folder first removes the least
recently used eighth, so a full cache never costs a composition per process. A new folder removes
those of other sources beyond the three most recently written or not written for two weeks; a cache
that cannot be read or written is simply not used.

>>> import sqlglot
>>> from recsql.compose import Plan
>>> from recsql.metrics import parse_metrics
>>> plan = Plan(recs=sqlglot.parse_one("db.recs", into=sqlglot.exp.Table), truth=sqlglot.parse_one("db.truth", into=sqlglot.exp.Table))
>>> sql = statement_sql(plan, parse_metrics(["ndcg@10"]), "summary", "duckdb")
>>> "db.recs" in sql and "db.truth" in sql and _TOKEN not in sql
True
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import secrets
import tempfile
import threading
import time
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from sqlglot import exp

from .compose import Plan, finalize
from .compose.plan import statement_key
from .compose.readable import readable_statement
from .dialects import render, spec
from .metrics import Metric
from .templates import sql_dir
from .trees import quoted_name, relation_text  # noqa: F401 - quoted_name: statements.quoted_name, as before

# The plan's relations: each stands only in FROM clauses of the composed statement.
RELATIONS = ("recs", "truth", "items", "interactions", "catalog", "expected_recs", "item_features", "intents", "logs",
             "reward_model")
# Unique per process, so no column name or literal a user writes can be mistaken for a placeholder.
_TOKEN = f"recsql_rel_{secrets.token_hex(8)}"
_SIZE = 64  # statements kept (least recently used dropped)

_cache: OrderedDict[tuple, tuple[list[str], list[str]]] = OrderedDict()
_lock = threading.Lock()


def _relation_text(relation: exp.Expression, dialect_name: str, pretty: bool) -> str | None:
    """The relation's SQL as the statement renders it at indentation 0, or None when it cannot be
    pasted (it holds a query, whose layout depends on its place). A long one (a file's path) spans
    lines in the pretty layout; :func:`_paste` indents its lines as the line it stands on."""
    if relation.find(exp.Query) is not None:
        return None
    quick = relation_text(relation, pretty) if dialect_name == "duckdb" else None
    if quick is not None:
        return quick
    return relation.sql(dialect=spec(dialect_name).sqlglot, pretty=pretty)


# ---------------------------------------------------------------- the statements kept on disk

_PACKAGE = Path(__file__).resolve().parent
_STALE_DAYS = 14  # folders of other recsql sources or sqlglot versions not written this long are removed
_KEEP_OTHERS = 3  # and beyond the three most recently written of them
_MAX_FILES = 512  # statements kept per folder (a few MB); a write into a full folder evicts the least recently used
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # a repr that differs in every process: no use on disk


@lru_cache(maxsize=1)
def _source_digest() -> str:
    """A digest of everything a statement's text depends on besides its key: the recsql package's
    Python files, the SQL templates and sqlglot's version. Taken when this module is imported, right
    after the composer's modules, so it describes the code this process runs; the templates are
    hashed as :func:`read_template` returns them, which keeps that text for the process's lifetime, so
    the process composes from exactly the templates hashed even if a file changes later. recsql's
    version is hashed too: the statement's header names it."""
    import sqlglot
    from .templates import read_template
    from . import __version__  # the header names it; a source checkout reads it from pyproject.toml
    digest = hashlib.sha256(f"sqlglot {sqlglot.__version__}\0recsql {__version__}\0".encode())
    for path in sorted(_PACKAGE.glob("**/*.py")):
        if "__pycache__" not in path.parts:
            digest.update(f"py:{path.relative_to(_PACKAGE).as_posix()}\0".encode() + path.read_bytes() + b"\0")
    for path in sorted(sql_dir().glob("*.sql")):
        header, body = read_template(path.stem)
        digest.update(f"sql:{path.name}\0".encode() + json.dumps([sorted(header.items()), body]).encode() + b"\0")
    return digest.hexdigest()[:24]


def cache_dir() -> Path | None:
    """The folder of this recsql's statements on disk, or None when the cache is off (or the sources
    cannot be read)."""
    setting = os.environ.get("RECSQL_CACHE_DIR")
    if setting is not None and setting.strip().lower() in ("", "0", "off", "no", "false", "none"):
        return None
    if setting:
        root = Path(setting).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(base) / "recsql"
    try:
        return root / f"statements-{_source_digest()}"
    except OSError:
        return None


def _disk_file(key: tuple) -> tuple[Path, str] | None:
    folder = cache_dir()
    if folder is None:
        return None
    text = repr(key)
    if _ADDRESS.search(text) or _TOKEN in text:
        return None
    return folder / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json", text


def _disk_read(key: tuple) -> tuple[list[str], list[str]] | None:
    found = _disk_file(key)
    if found is None:
        return None
    path, text = found
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("key") != text:
            return None
        between, order = record["between"], record["order"]
        if (isinstance(between, list) and isinstance(order, list) and len(between) == len(order) + 1
                and all(isinstance(t, str) for t in between + order)):
            try:
                os.utime(path)  # used now: the last to be evicted
            except OSError:
                pass  # a cache the user may read but not write still serves
            return between, order
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _disk_write(key: tuple, between: list[str], order: list[str]) -> None:
    found = _disk_file(key)
    if found is None:
        return
    path, text = found
    try:
        fresh = not path.parent.is_dir()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the user's own: no one else writes SQL into it
        if not fresh:
            _evict(path.parent)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"key": text, "between": between, "order": order}, out)
            os.replace(temporary, path)
        except BaseException:
            try:
                os.remove(temporary)
            except OSError:
                pass
            raise
        if fresh:
            _prune(path.parent)
    except OSError:
        pass


def _evict(folder: Path) -> None:
    """Make room in a full folder: remove its least recently used statements (oldest modification
    time: written or last read), an eighth of ``_MAX_FILES``, so evictions are rare."""
    entries = []
    for entry in os.scandir(folder):
        if entry.name.startswith(".tmp-"):
            continue  # another process's statement being written: its own to finish
        try:
            entries.append((entry.stat().st_mtime, entry.path))
        except OSError:
            pass  # removed by another process meanwhile
    if len(entries) < _MAX_FILES:
        return
    entries.sort()
    for _, oldest in entries[:len(entries) - _MAX_FILES + max(1, _MAX_FILES // 8)]:
        try:
            os.remove(oldest)
        except OSError:
            pass


def _prune(keep: Path) -> None:
    """Remove the statement folders of other sources (a new recsql or sqlglot, or an edited checkout,
    leaves its predecessor's behind): all but the _KEEP_OTHERS most recently written, and any not
    written for _STALE_DAYS. Another installation still in use simply writes its statements again."""
    limit = time.time() - _STALE_DAYS * 86400
    others = []
    for folder in keep.parent.glob("statements-*"):
        try:
            if folder != keep and folder.is_dir():
                others.append((folder.stat().st_mtime, folder))
        except OSError:
            pass
    others.sort(reverse=True)
    for rank, (written, folder) in enumerate(others):
        if rank < _KEEP_OTHERS and written >= limit:
            continue
        try:
            for item in folder.iterdir():
                item.unlink()
            folder.rmdir()
        except OSError:
            pass


def _placeholders(roles: Sequence[str]) -> dict[str, exp.Table]:
    return {role: exp.to_table(f"{_TOKEN}_{role}") for role in roles}


def _split(sql: str, placeholders: dict[str, exp.Table], dialect_name: str) -> tuple[list[str], list[str]]:
    """``sql`` split at the placeholder tables: (texts between them, the role of each placeholder)."""
    spelled = {placeholder.sql(dialect=spec(dialect_name).sqlglot): role
               for role, placeholder in placeholders.items()}
    pattern = re.compile("|".join(re.escape(s) for s in sorted(spelled, key=len, reverse=True)))
    texts, order, start = [], [], 0
    for match in pattern.finditer(sql):
        texts.append(sql[start:match.start()])
        order.append(spelled[match.group(0)])
        start = match.end()
    texts.append(sql[start:])
    if _TOKEN in "".join(texts):  # a placeholder written some other way: never paste into that
        raise RuntimeError("a relation placeholder was rendered in an unexpected form")
    return texts, order


def _memoised(key: tuple, build) -> tuple[list[str], list[str]]:
    """The split text for ``key``: from memory, else from disk, else ``build()`` (then kept in both)."""
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    found = _disk_read(key)
    if found is None:
        found = build()
        _disk_write(key, *found)
    with _lock:
        _cache[key] = found
        while len(_cache) > _SIZE:
            _cache.popitem(last=False)
    return found


def statement_sql(plan: Plan, metrics: Sequence[Metric], output: str = "summary", dialect_name: str = "duckdb",
                  pretty: bool = True) -> str:
    """``render(readable_statement(plan, metrics, output), dialect_name, pretty=pretty)``, the same text, from a
    statement composed once per plan options, metrics, output and dialect (module docstring)."""
    return statement_and_reads(plan, metrics, output, dialect_name, pretty)[0]


def statement_and_reads(plan: Plan, metrics: Sequence[Metric], output: str = "summary", dialect_name: str = "duckdb",
                        pretty: bool = True) -> tuple[str, frozenset[str] | None]:
    """:func:`statement_sql`'s text and the roles of the input relations it reads (an input no metric or
    check reads is pruned from the statement: recsql/compose/unread.py); None when a relation holding a
    query made the statement be composed without placeholders, so the reads are not known."""
    metrics = list(metrics)
    relations = {role: getattr(plan, role) for role in RELATIONS if getattr(plan, role) is not None}

    def build(given: dict[str, exp.Expression]) -> str:
        return render(readable_statement(dataclasses.replace(plan, **given), metrics, output), dialect_name,
                      pretty=pretty)
    return memoised_and_reads(plan_key(plan, metrics, output, dialect_name, pretty), relations, dialect_name, pretty,
                              build)


def _paste(between: list[str], order: list[str], texts: dict[str, str]) -> str:
    """The statement: the texts between the placeholders with each relation's text in its place, the
    lines after a relation's first indented as the line it starts on (sqlglot's pretty layout)."""
    pieces = [between[0]]
    for role, text in zip(order, between[1:]):
        if "\n" in texts[role]:
            line = "".join(pieces).rpartition("\n")[2]
            indent = line[:len(line) - len(line.lstrip(" "))]
            pieces.append(texts[role].replace("\n", "\n" + indent))
        else:
            pieces.append(texts[role])
        pieces.append(text)
    return "".join(pieces)


def memoised_sql(key: tuple, relations: dict[str, exp.Expression], dialect_name: str, pretty: bool,
                 build: Callable[[dict[str, exp.Expression]], str]) -> str:
    """``build(relations)``, a statement's text that depends on the relations only where they stand
    (FROM clauses) and otherwise on ``key`` alone, memoised as the evaluation's statements are
    (module docstring): built once per key with a placeholder table per relation, then the
    relations' own text pasted in; built directly when a relation cannot be pasted. ``key`` holds
    plain values only (their ``repr`` names the file on disk)."""
    return memoised_and_reads(key, relations, dialect_name, pretty, build)[0]


def memoised_and_reads(key: tuple, relations: dict[str, exp.Expression], dialect_name: str, pretty: bool,
                       build: Callable[[dict[str, exp.Expression]], str]) -> tuple[str, frozenset[str] | None]:
    """:func:`memoised_sql`'s text and the roles of the relations it reads (None: not known), as
    :func:`statement_and_reads`."""
    texts = {role: _relation_text(rel, dialect_name, pretty) for role, rel in relations.items()}
    if any(text is None for text in texts.values()):
        return build(relations), None
    roles = sorted(relations)

    def split() -> tuple[list[str], list[str]]:
        placeholders = _placeholders(roles)
        return _split(build(dict(placeholders)), placeholders, dialect_name)

    between, order = _memoised(("text", key, dialect_name, pretty, tuple(roles)), split)
    return _paste(between, order, texts), frozenset(order)


def memoised_strings(key: tuple, build: Callable[[], list[str]]) -> list[str]:
    """``build()``, a list of strings that depends on ``key`` alone, memoised in memory and on disk."""
    text = _memoised(("strings", key), lambda: ([json.dumps(build())], []))[0][0]
    return [str(item) for item in json.loads(text)]


def plan_key(plan: Plan, metrics: Sequence[Metric], output: str, dialect_name: str, pretty: bool) -> tuple:
    """The plan's options and the metrics as plain values (its relations left out), for a key."""
    return statement_key(dataclasses.replace(plan, **{role: None for role in RELATIONS}), metrics, output, dialect_name,
                pretty)


def finalize_sql(plan: Plan, metrics: Sequence[Metric], output: str) -> str:
    """``finalize(plan, metrics, output)`` rendered for DuckDB (its sums as ``FSUM``/``FAVG``, the
    same bits whatever the threads' order), memoised like the statements: the SQL that turns the raw
    per-user rows (the relation ``per_user``) into the summary or per-user frame. It reads no input
    relation, only whether each is given."""
    metrics = list(metrics)
    given = tuple(sorted(role for role in RELATIONS if getattr(plan, role) is not None))
    key = ("finalize", statement_key(dataclasses.replace(plan, **{role: None for role in RELATIONS}), metrics, output, "duckdb",
                            False), given)
    found = _memoised(key, lambda: ([render(finalize(plan, metrics, output, typed=True), "duckdb", pretty=False)], []))
    return found[0][0]


try:  # the digest of the code just imported (_source_digest)
    _source_digest()
except OSError:
    pass
