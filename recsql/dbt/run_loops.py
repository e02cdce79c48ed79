"""A text composed for each number of run keys as one Jinja text looping over the macro's run keys.

The ``recsql.evaluate`` macro's statement is composed for 0 to :data:`TOP` run keys (the base switch
``runs``). Where a CTE's text differs only by the run keys it lists (``_run0, _run1, ...`` in a select
list, a PARTITION BY, a GROUP BY; ``AND u._run0 = s._run0 AND ...`` in a join), :func:`run_loop` writes
it once, each list as ``{% for ri in range(rs.runs) %}...{% endfor %}``, instead of once per number.

How a loop is found: the tokens the text for ``TOP`` run keys adds to the text for ``TOP - 1`` (a
diff, whitespace left out) are the last unit of a list, the one naming run key ``TOP - 1``; before it
the text must hold the same unit for keys ``TOP - 2`` down to 1 and, for key 0, the unit or a tail of it
(the first of a list written without its separator). Then every number of run keys composed is
rendered from the loops and compared with its own composed text, layout aside (whitespace and line
breaks, which the SQL pretty-printer sets by line length); a text with no run keys (0) may differ
and keeps a branch of its own. Anything else that differs, or any number not rendered exactly, and
the caller keeps one text per number of run keys.

Because every list of run keys is a loop that the composed texts at 1 to ``TOP`` run keys check, a
statement whose CTEs are all loops serves any number of run keys (tests/test_dbt_macro.py compares
the macro with ``recsql.evaluate`` beyond ``TOP``).

>>> texts = {0: "GROUP BY user_id", 1: "GROUP BY _run0, user_id", 2: "GROUP BY _run0, _run1, user_id",
...          3: "GROUP BY _run0, _run1, _run2, user_id", 4: "GROUP BY _run0, _run1, _run2, _run3, user_id"}
>>> jinja(run_loop(texts))
'GROUP BY{% for ri in range(rs.runs) %} _run{{ ri }},{% endfor %} user_id'
"""
from __future__ import annotations

import difflib
import re

TOP = 4  # the most run keys a text is composed for (recsql.dbt.evaluate.MAX_RUNS)
# How a text names run key i: an internal column (_run0), the macro's column name (rs.run_cols[0]),
# whether it is text (rs.text.run0, behind which its COLLATE is written).
_INDEX = re.compile(r"(_run|rs\.run_cols\[|rs\.text\.run)(\d+)\b")
_JINJA_INDEX = {"_run": "_run{{ ri }}", "rs.run_cols[": "rs.run_cols[ri", "rs.text.run": "rs.text['run' ~ ri]"}
_TOKEN = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\w+|[^\w\s]")

Loop = tuple[str, str]  # (the first unit, at run key 0; every other unit, written at run key 0)


def _at(text: str, old: int, new: int) -> str:
    """A text with its references to run key ``old`` made references to run key ``new``."""
    return _INDEX.sub(lambda m: m.group(1) + (str(new) if int(m.group(2)) == old else m.group(2)), text)


def _names(text: str, key: int) -> bool:
    return any(int(m.group(2)) == key for m in _INDEX.finditer(text))


def layout_free(text: str) -> str:
    """A text without its layout: each run of whitespace one space, none just inside parentheses."""
    return re.sub(r"\s+\)", ")", re.sub(r"\(\s+", "(", re.sub(r"\s+", " ", text))).strip()


def render(pieces: list[str | Loop], runs: int) -> str:
    """The text the pieces write for ``runs`` run keys (what :func:`jinja` writes at ``rs.runs == runs``)."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
        else:
            first, unit = piece
            out.extend(first if i == 0 else _at(unit, 0, i) for i in range(runs))
    return "".join(out)


def _loop(full: str, start: int, stop: int) -> tuple[int, int, str, str] | None:
    """The list ending with the unit full[start:stop] (which names run key TOP - 1): its span and loop."""
    chunk = full[start:stop]
    if not _names(chunk, TOP - 1) or _names(chunk, TOP - 2) or "loop." in chunk:
        return None
    unit = _at(chunk, TOP - 1, 0)
    before = full[:start]
    for key in range(TOP - 2, 0, -1):
        written = _at(unit, 0, key)
        if not before.endswith(written):
            return None
        before = before[:-len(written)]
    for cut in range(len(unit)):  # the first unit: the unit itself or a tail of it (no separator)
        first = unit[cut:]
        if (cut == 0 or not first[0].isspace()) and before.endswith(first) and _names(first, 0):
            return len(before) - len(first), stop, first, unit
    return None


def run_loop(texts: dict[int, str | None]) -> list[str | Loop] | None:
    """The texts at 0..TOP run keys as pieces (text and loops) that write each text at 1..TOP run keys
    (layout aside), or None when they are not one text with loops over the run keys."""
    full, previous = texts[TOP], texts[TOP - 1]
    if full is None or previous is None:
        return None
    tokens = list(_TOKEN.finditer(full))
    matcher = difflib.SequenceMatcher(None, _TOKEN.findall(previous), [t.group() for t in tokens], autojunk=False)
    opcodes = matcher.get_opcodes()
    if any(op not in ("equal", "insert") for op, *_ in opcodes):
        return None
    spans = []
    for op, _i1, _i2, j1, j2 in opcodes:
        if op != "insert":
            continue
        found = None
        for shift in range(0, -j1, -1):  # slide the inserted tokens left while they equal those before
            s1, s2 = j1 + shift, j2 + shift
            if s1 == 0 or (shift and tokens[s1].group() != tokens[s2].group()):
                break
            found = _loop(full, tokens[s1 - 1].end(), tokens[s2 - 1].end())
            if found:
                break
        if not found:
            return None
        spans.append(found)
    pieces: list[str | Loop] = []
    position = 0
    for start, stop, first, unit in sorted(spans):
        if start < position:
            return None
        pieces += [full[position:start], (first, unit)]
        position = stop
    pieces.append(full[position:])
    for runs in range(1, TOP + 1):
        if texts[runs] is None or layout_free(render(pieces, runs)) != layout_free(texts[runs]):
            return None
    return pieces


def writes_none(pieces: list[str | Loop], text: str | None) -> bool:
    """Whether the pieces write ``text``, the text at 0 run keys (layout aside)."""
    return text is not None and layout_free(render(pieces, 0)) == layout_free(text)


def jinja(pieces: list[str | Loop]) -> str:
    """The pieces of :func:`run_loop` as Jinja: a loop over ``range(rs.runs)`` per list of run keys."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        first, unit = piece
        body = _INDEX.sub(lambda m: _JINJA_INDEX[m.group(1)] if m.group(2) == "0" else m.group(0), unit)
        if first != unit:
            body = "{% if loop.first %}" + first + "{% else %}" + body + "{% endif %}"
        out.append("{% for ri in range(rs.runs) %}" + body + "{% endfor %}")
    return "".join(out)
