"""TREC run and qrels files, read by DuckDB with trec_eval's parsing rules (get_trec_results.c,
get_qrels.c): fields are separated by any whitespace; blank lines and lines whose first
non-blank character is ``#`` are skipped (a ``#`` inside a field, as in docnos like
``CR93E-3103#37``, is data); fields after the last one used are ignored.

- run: ``qid iter docno rank score tag [ignored...]`` -> columns ``user_id``, ``item_id``,
  ``score`` (DOUBLE), ``rank`` (the file's rank column, which trec_eval ignores: it ranks by
  score), ``tag`` (the run tag; pass ``run_cols=["tag"]`` to evaluate several runs of one file).
- qrels: ``qid iter docno rel [ignored...]`` -> ``user_id``, ``item_id``, ``relevance``.

Ids stay strings, so equal scores are broken by comparing docnos as strings, as trec_eval does.

>>> trec_run("runs/bm25.txt")
trec_run('runs/bm25.txt')
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from .errors import RecsqlError

# kind -> (fields a line needs, what a line looks like, [(column, field number, cast)])
_LAYOUT = {
    "run": (6, "qid Q0 docno rank score tag", [
        ("user_id", 1, None), ("item_id", 3, None), ("score", 5, "DOUBLE"), ("tag", 6, None)]),
    "qrels": (4, "qid 0 docno relevance", [("user_id", 1, None), ("item_id", 3, None), ("relevance", 4, "DOUBLE")]),
}


@dataclass(frozen=True)
class TrecFile:
    """A TREC run or qrels file (or glob), to pass as ``recs`` / ``truth`` to :func:`recsql.evaluate`."""

    path: str
    kind: str  # "run" | "qrels"

    def __repr__(self) -> str:
        return f"trec_{self.kind}({self.path!r})"

    def _fields(self) -> str:
        """SQL for the file's content lines, split into fields (one row per line)."""
        lines = exp.Anonymous(this="read_csv", expressions=[
            exp.Literal.string(self.path),
            *[exp.EQ(this=exp.var(key), expression=value) for key, value in (
                ("columns", sqlglot.parse_one("{'line': 'VARCHAR'}", read="duckdb")),
                ("delim", exp.Literal.string("\x1f")), ("quote", exp.Literal.string("")),
                ("escape", exp.Literal.string("")), ("header", exp.false()), ("auto_detect", exp.false()))]])
        return (f"SELECT REGEXP_SPLIT_TO_ARRAY(REGEXP_REPLACE(line, '^\\s+|\\s+$', '', 'g'), '\\s+') AS f "
                f"FROM {lines.sql('duckdb')} WHERE NOT REGEXP_MATCHES(line, '^\\s*(#|$)')")

    def relation(self) -> exp.Expression:
        """The file as a relation with the columns named in the module docstring."""
        _, _, columns = _LAYOUT[self.kind]
        select = ", ".join(f"CAST(f[{i}] AS {cast}) AS {name}" if cast else f"f[{i}] AS {name}"
                           for name, i, cast in columns)
        if self.kind == "run":  # the file's own rank, which trec_eval ignores (it ranks by score)
            select += ", TRY_CAST(f[4] AS BIGINT) AS rank"
        return exp.Subquery(this=sqlglot.parse_one(f"SELECT {select} FROM ({self._fields()}) AS lines", read="duckdb"),
                            alias=exp.TableAlias(this=exp.to_identifier(f"trec_{self.kind}")))

    def check(self, fetch_rows) -> None:
        """Refuse a missing file, short lines and non-numeric scores/relevances, naming the line."""
        if not glob.glob(self.path):
            raise RecsqlError(f"TREC {self.kind} file {self.path!r} does not exist; check the path")
        need, layout, columns = _LAYOUT[self.kind]
        numeric = [(name, i) for name, i, cast in columns if cast]
        bad = " OR ".join([f"LEN(f) < {need}"] + [f"TRY_CAST(f[{i}] AS DOUBLE) IS NULL" for _, i in numeric])
        rows = fetch_rows(f"SELECT ARRAY_TO_STRING(f, ' ') AS line, LEN(f) AS n FROM ({self._fields()}) AS lines "
                          f"WHERE {bad} LIMIT 1")
        if rows:
            line, n = rows[0]
            what = (f"has {n} field(s), fewer than the {need} of '{layout}'" if n < need else
                    f"has a non-numeric {' or '.join(name for name, _ in numeric)} where '{layout}' expects a number")
            raise RecsqlError(f"TREC {self.kind} file {self.path!r}: the line {line!r} {what}; fix or remove that line "
                              "(lines starting with # are comments)")


def trec_run(path: str | os.PathLike) -> TrecFile:
    """A TREC run file: ``qid Q0 docno rank score tag`` per line."""
    return TrecFile(os.fspath(path), "run")


def trec_qrels(path: str | os.PathLike) -> TrecFile:
    """A TREC qrels file: ``qid 0 docno relevance`` per line."""
    return TrecFile(os.fspath(path), "qrels")
