"""Find the SQL templates (installed wheel, editable install or source checkout) and read them.

A template starts with ``-- key: value`` header lines, which :mod:`recsql.metrics` turns into the
registry; the SQL after them is parsed with sqlglot (DuckDB dialect) by :mod:`recsql.compose`.
A header ``-- let: v = <expression>; w = <expression>`` names expressions the body repeats: each
``v()`` of the body reads ``(<expression>)``, so a formula that reads one selection of rows many
times states it once.

>>> "ndcg" in template_names()
True
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_CANDIDATES = (_HERE / "sql", _HERE.parent / "sql")


@lru_cache(maxsize=1)
def sql_dir() -> Path:
    """The folder holding the templates: ``recsql/sql`` in a wheel, ``sql/`` in a checkout."""
    for candidate in _CANDIDATES:
        if (candidate / "_ranked.sql").is_file():
            return candidate
    raise FileNotFoundError(f"recsql's SQL templates are missing; looked in {_CANDIDATES}")


def template_names() -> list[str]:
    """Names of the metric templates (files not starting with ``_``), sorted."""
    return sorted(p.stem for p in sql_dir().glob("*.sql") if not p.name.startswith("_"))


@lru_cache(maxsize=None)
def read_template(name: str) -> tuple[dict[str, str], str]:
    """Return ``(header, sql)`` of ``sql/<name>.sql``; header keys are lower-case."""
    text = (sql_dir() / f"{name}.sql").read_text(encoding="utf-8")
    header: dict[str, str] = {}
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not body and stripped.startswith("--"):
            key, sep, value = stripped[2:].partition(":")
            if sep and key.strip().isidentifier():
                header[key.strip().lower()] = value.strip()
            continue
        body.append(line)
    return header, _expand_lets(header.get("let", ""), "\n".join(body).strip())


def _expand_lets(lets: str, body: str) -> str:
    """``body`` with each ``name()`` of a ``let`` (``name = expression; ...``, an expression may use the
    other lets) replaced by its expression."""
    names: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in lets.split(";"))):
        name, sep, expression = part.partition("=")
        if not sep or not name.strip().isidentifier():
            raise RuntimeError(f"a template's `let: {part}` must read 'name = expression'")
        names[f"{name.strip()}()"] = f"({expression.strip()})"
    for _ in range(len(names) + 1):
        for call, expression in names.items():
            body = body.replace(call, expression)
    if any(call in body for call in names):
        raise RuntimeError(f"a template's lets use each other in a circle: {', '.join(names)}")
    return body
