"""User text (run names, segment values, column names, titles, paths) made safe for where it goes.

Each context has its own escaping, and each path that carries user text to it uses it:

- HTML: :func:`html_text` escapes ``& < > " '`` and, for text outside ASCII, isolates it in
  ``<bdi>`` so a right-to-left override (U+202E) or right-to-left letters in a name cannot reorder
  the words around it;
- a JSON block inside ``<script>``: :func:`script_json` writes ``<``, ``>``, ``&``, U+2028 and
  U+2029 as ``\\u`` escapes, so no ``</script``, ``<!--`` or line separator in a name can end or
  change the block (the JSON parses to the same values);
- plain text drawn by a browser (a figure's labels, the page's ``<title>``): :func:`isolated`
  wraps text outside ASCII in the Unicode isolates FSI ... PDI (U+2068, U+2069); the figures
  (:mod:`recsql.report.svg`) write text as SVG text, never read as mathtext or LaTeX;
- a terminal: :func:`for_terminal` writes every character that is not printable (escape
  sequences, carriage returns, bidirectional controls) as its Python escape (``\\x1b``,
  ``\\u202e``), so a name cannot move the cursor, recolour or rewrite the terminal;
- an SQL block comment (the rendered statement's header and formulas): :func:`sql_comment` breaks
  ``*/`` and ``/*`` apart and writes line breaks and other unprintable characters as their Python
  escapes, so a metric's name cannot end the comment, open a nested one (PostgreSQL nests them) or
  start a line of its own; the text starts with a space, so no comment becomes MySQL's executable
  ``/*!`` or an optimizer hint ``/*+``.

>>> html_text("a<b")
'a&lt;b'
>>> html_text("x\\u202ey")
'<bdi>x\\u202ey</bdi>'
>>> script_json({"run": "<!--<script>"})
'{"run": "\\\\u003c!--\\\\u003cscript\\\\u003e"}'
>>> for_terminal("red\\x1b[31m\\u202e")
'red\\\\x1b[31m\\\\u202e'
>>> sql_comment("ndcg@10 */ DROP TABLE t; /*\\n")
' ndcg@10 * / DROP TABLE t; / *\\\\n '
"""
from __future__ import annotations

import html
import json
import re
from typing import Any

FSI, PDI = "\u2068", "\u2069"  # first strong isolate, pop directional isolate

_SCRIPT = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def html_text(value: Any) -> str:
    """``value`` as HTML text: escaped, and isolated in ``<bdi>`` when it holds any character outside
    ASCII (ASCII text has no right-to-left letter or direction control, so it needs no isolation)."""
    text = str(value)
    escaped = html.escape(text)
    return escaped if text.isascii() else f"<bdi>{escaped}</bdi>"


def isolated(value: Any) -> str:
    """``value`` as plain text that a browser lays out on its own: outside ASCII, between FSI and PDI."""
    text = str(value)
    return text if text.isascii() else f"{FSI}{text}{PDI}"


def script_json(value: Any, **options: Any) -> str:
    """``value`` as JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&``
    (which JSON holds only inside strings) and the line separators U+2028 and U+2029 as ``\\u``
    escapes; ``json.loads`` of the text gives ``value`` back."""
    text = json.dumps(value, **options)
    return "".join(_SCRIPT.get(ch, ch) for ch in text) if any(ch in text for ch in _SCRIPT) else text


def for_terminal(text: str, keep: str = "\n\t") -> str:
    """``text`` with every character that is not printable (but those in ``keep``) as its Python
    escape: ``\\x1b``, ``\\r``, ``\\u202e``, ... (printable text, any script, is left as it is)."""
    if text.isprintable() or all(ch.isprintable() or ch in keep for ch in text):
        return text
    return "".join(ch if ch.isprintable() or ch in keep else repr(ch)[1:-1] for ch in text)


def html_code(value: Any) -> str:
    """Code (SQL) as HTML text, kept exactly (its copied text is the code): escaped, with every run of
    characters outside ASCII isolated in its own ``<bdi>``, so a direction control inside a quoted
    name reorders nothing but itself."""
    return "".join(html.escape(part) if i % 2 == 0 else f"<bdi>{html.escape(part)}</bdi>"
                   for i, part in enumerate(_NON_ASCII.split(str(value))))


_NON_ASCII = re.compile(r"([^\x00-\x7f]+)")


def sql_comment(text: str) -> str:
    """``text`` as the body of an SQL block comment that it cannot end or leave: ``*/`` and ``/*``
    broken apart, every unprintable character (line breaks included) as its Python escape, and a
    space at each end."""
    body = for_terminal(str(text), keep="")
    while "*/" in body or "/*" in body:
        body = body.replace("*/", "* /").replace("/*", "/ *")
    return f" {body} "
