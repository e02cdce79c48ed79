"""The command line's words for the library's: an error message written for Python
(``run_cols='model'``, ``relevance_col=None``) as the command line says it (``--run-col model``,
``--no-relevance``). The library keeps Python's words; :func:`recsql.cli.main` translates every
message it prints with the table of the command that ran, read from that command's own parser.

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> _ = parser.add_argument("--run-col", action="append", dest="run_cols")
>>> _ = parser.add_argument("--relevance-col", dest="relevance_col")
>>> _ = parser.add_argument("--no-relevance", dest="relevance_col", action="store_const", const=None)
>>> table = flag_table(parser, {"run_cols", "relevance_col"})
>>> to_flags("pass run_cols=['model', 'day'] (CLI: --run-col model) or relevance_col=None", table)
'pass --run-col model --run-col day or --no-relevance'
>>> to_flags("Pass relevance_col='<your column>' to name it", table)
"Pass --relevance-col '<your column>' to name it"
>>> to_flags("run_cols and relevance_col both name the truth column 'x'", table)
"--run-col and --relevance-col both name the truth column 'x'"
"""
from __future__ import annotations

import argparse
import ast
import re
import shlex

# Parser destinations whose Python keyword has another name.
_KEYWORDS = {"db": "con"}
# A keyword's value as messages write it: a quoted string, a list, a tuple, a dict, None, a number.
_VALUE = r"""(?:'[^']*'|"[^"]*"|\[[^\]]*\]|\([^)]*\)|\{[^}]*\}|None|True|False|[-+]?\d[\w.+-]*)"""
# What only the library's messages say, with the command line's words: the CLI's own spelling of a
# keyword beside it, and SQL to cast a column (on the command line: in a view of a --db file).
_PHRASES = ((re.compile(r"\s*\(CLI: [^)]*\)"), ""),
            (re.compile(r"\(e\.g\. (CAST\([^()]*\))\)"), r"(e.g. \1 in a view of a --db FILE.duckdb)"),
            # truth is the commands' second argument (or --qrels), not an option
            (re.compile(r"\bpass truth=(?=[;\s]| with)"), "give truth (the TRUTH argument after RECS, or --qrels)"))


def python_keywords() -> set[str]:
    """The keywords of recsql.evaluate, recsql.to_sql and recsql.compare: the words translated."""
    import inspect

    from .api import evaluate
    from .comparison import compare
    from .sql_text import to_sql
    return {name for f in (evaluate, to_sql, compare) for name in inspect.signature(f).parameters}


def flag_table(parser: argparse.ArgumentParser, keywords: set[str]) -> dict[str, tuple[str, str | None]]:
    """Python keyword (of ``keywords``) -> (the option that takes its value, the option that means
    None, or None), from a command's parser."""
    table: dict[str, tuple[str | None, str | None]] = {}
    for action in parser._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        if not long or _KEYWORDS.get(action.dest, action.dest) not in keywords:
            continue
        value, none = table.get(_KEYWORDS.get(action.dest, action.dest), (None, None))
        if isinstance(action, argparse._StoreConstAction) and action.const is None:
            none = long[0]
        elif action.nargs != 0:
            value = long[0]
        table[_KEYWORDS.get(action.dest, action.dest)] = (value, none)
    return {k: (value or none, none) for k, (value, none) in table.items() if value or none}


def to_flags(message: str, table: dict[str, tuple[str, str | None]]) -> str:
    """``message`` with each ``keyword=value`` of ``table`` written as its option."""
    for pattern, replacement in _PHRASES:
        message = pattern.sub(replacement, message)
    if not table:
        return message
    keywords = "|".join(sorted(map(re.escape, table), key=len, reverse=True))
    message = re.sub(rf"(?<![\w.])({keywords})=({_VALUE})?", lambda m: _spelled(table[m[1]], m[2]), message)
    # a keyword named alone ("user_col and item_col both name ..."): those with an underscore, never a word
    named = "|".join(sorted((re.escape(k) for k in table if "_" in k), key=len, reverse=True))
    return re.sub(rf"(?<![\w.'-])({named})\b(?!')", lambda m: table[m[1]][0], message) if named else message


def _spelled(flags: tuple[str, str | None], value: str | None) -> str:
    """One keyword's value as options: ``--run-col a --run-col b`` for a list, the None option for None."""
    flag, none = flags
    if value is None:
        return flag
    if value == "None":
        return none or flag
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return f"{flag} {value}"
    items = parsed if isinstance(parsed, (list, tuple)) else [parsed]
    return " ".join(f"{flag} {shlex.quote(str(item))}" for item in items)
