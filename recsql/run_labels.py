"""Run labels: the name a run goes by in compare's tables, the report, and ``baseline=``.

With one run column a run's label is its value. With several it is ``col=value/col=value`` in
run-column order, and a backslash, ``/`` or ``=`` inside a column name or a value is escaped with a
backslash, so two different runs never share a label and a label reads back into exactly one run:

>>> label(["A/day=1", "2"], ["model", "day"])
'model=A\\\\/day\\\\=1/day=2'
>>> label(["A", "1/day=2"], ["model", "day"])
'model=A/day=1\\\\/day\\\\=2'
>>> parse(label(["A/day=1", "2"], ["model", "day"]), ["model", "day"])
['A/day=1', '2']
>>> parse("model=A/day=1", ["model", "day"])
['A', '1']
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from .errors import RecsqlError

_SPECIAL = re.compile(r"([\\/=])")


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds; anything else unchanged."""
    return value.item() if hasattr(value, "item") else value


def escape(text: str) -> str:
    """``text`` with each backslash, ``/`` and ``=`` escaped by a backslash."""
    return _SPECIAL.sub(r"\\\1", text)


def label(values: Sequence[Any], names: Sequence[str]) -> str:
    """The label of the run whose run columns ``names`` hold ``values`` (several columns)."""
    return "/".join(f"{escape(str(n))}={escape(str(plain(v)))}" for n, v in zip(names, values))


def named(values: Sequence[Any], names: Sequence[str]) -> str:
    """A run as a message names it: its label for several run columns, its one value's repr for one.

    >>> named(["A"], ["model"]), named(["A", 2], ["model", "k"])
    ("'A'", 'model=A/k=2')
    """
    return label(values, names) if len(names) > 1 else repr(plain(values[0]))


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` not escaped by a backslash, the pieces still escaped."""
    parts, current, i = [], [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i:i + 2])
            i += 2
            continue
        if char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse(text: str, names: Sequence[str]) -> list[str] | None:
    """The values of the run labelled ``text`` (as text), or None when ``text`` is not a label of
    runs keyed by ``names``."""
    parts = _split(text, "/")
    if len(parts) != len(names):
        return None
    values = []
    for part, name in zip(parts, names):
        pair = _split(part, "=")
        if len(pair) != 2 or _unescape(pair[0]) != str(name):
            return None
        values.append(_unescape(pair[1]))
    return values


def refuse_shared(pairs: Iterable[tuple[Any, Any]], what: str) -> None:
    """Refuse two different runs (the first of each ``(run key, label)`` pair) that would go by one
    label (the second)."""
    seen: dict[str, Any] = {}
    for run, text in pairs:
        first = seen.setdefault(str(text), run)
        if repr(first) != repr(run):
            raise RecsqlError(f"{what}: two runs, {first!r} and {run!r}, would both be labelled {str(text)!r}; "
                              "give them run key values that differ as text")
