"""A result table as text for reading, from an Arrow table (or columns of Python values), without pandas: the text pandas writes for the same
rows (``DataFrame.to_string(index=False, float_format=lambda v: f"{v:.6f}")`` of DuckDB's ``.df()``), so the
command line prints the same table whether or not it loaded pandas, and need not load it (a third of a second).

Written only for the columns a summary has, whose text is plain: whole numbers and booleans without NULL,
doubles (NULL and NaN written ``NaN``), and text without NULL or line breaks and tabs; every cell and name at
most :data:`WIDEST` characters, where pandas starts to cut, and every name printable, without space at either
end. Anything else (no rows, no columns, another type) is None: the caller asks pandas. ``tests/test_table_text.py`` holds this to pandas on random tables.

The layout is pandas': each column as wide as its widest cell or name, right-aligned, one space between
columns; the name of a numeric column (and a boolean one) has one space before it.

>>> import pyarrow as pa
>>> print(table_text(pa.table({"run": ["a", "bb"], "n": [3, 12], "ndcg@10": [0.5, None]})))
run  n  ndcg@10
  a  3 0.500000
 bb 12      NaN
>>> table_text(pa.table({"when": pa.array([1], pa.date32())})) is None
True
>>> print(lists_text({"run": [1, 20], "verdict": ["higher", "not significant"]}))
 run         verdict
   1          higher
  20 not significant
"""
from __future__ import annotations

import math
from typing import Any, Callable

WIDEST = 50  # pandas' display.max_colwidth: a longer cell is cut ("...")
PLAIN_BREAKS = ("\t", "\r", "\n")  # pandas writes these escaped


INT64 = range(-2 ** 63, 2 ** 63)  # pandas' int64: a larger whole number makes another column type


def _float(value: Any) -> str:
    return "NaN" if value is None or math.isnan(value) else f"{value:.6f}"


def _int(value: Any) -> str:
    return f"{value:d}"


def _column(type_: Any) -> tuple[bool, Callable[[Any], str]] | None:
    """(whether pandas reads the column as numeric, each cell's text), or None for a type not written here."""
    import pyarrow as pa
    if pa.types.is_float64(type_):
        return True, _float
    if pa.types.is_integer(type_):
        return True, _int
    if pa.types.is_boolean(type_):
        return True, str
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return False, str
    return None


def _kind(cells: list[Any]) -> tuple[bool, Callable[[Any], str]] | None:
    """As :func:`_column`, for Python values as pandas infers a column of them: all text, all booleans, or all
    whole numbers within int64 (no None, no float)."""
    types = {type(cell) for cell in cells}
    if types == {str}:
        return False, str
    if types == {bool}:
        return True, str
    if types == {int} and all(cell in INT64 for cell in cells):
        return True, _int
    return None


def _plain(text: str) -> bool:
    return len(text) <= WIDEST and not any(c in text for c in PLAIN_BREAKS)


def _laid_out(columns: list[tuple[str, tuple[bool, Callable[[Any], str]] | None, list[Any]]]) -> str | None:
    """The text of (name, kind, cells) columns, or None (module docstring)."""
    if not columns or not columns[0][2]:
        return None
    laid = []
    for name, kind, values in columns:
        if kind is None or not name.isprintable() or name != name.strip():
            return None
        numeric, write = kind
        if write is not _float and any(value is None for value in values):
            return None
        cells = [write(value) for value in values]
        header = (" " if numeric else "") + name
        if not all(_plain(cell) for cell in [header, *cells]):
            return None
        width = max(len(cell) for cell in [header, *cells])
        laid.append([cell.rjust(width) for cell in [header, *cells]])
    return "\n".join(" ".join(row) for row in zip(*laid))


def table_text(table: Any) -> str | None:
    """``table`` (Arrow) as pandas writes it with six decimals, or None where this does not write it (see the
    module)."""
    return _laid_out([(name, _column(column.type), column.to_pylist())
                      for name, column in zip(table.column_names, table.columns)])


def lists_text(columns: dict[str, list[Any]]) -> str | None:
    """Columns of Python values (name -> cells, as many each) as pandas writes the DataFrame it makes of them
    (``to_string(index=False)``), or None where this does not write it: text, booleans and whole numbers only."""
    return _laid_out([(name, _kind(cells), cells) for name, cells in columns.items()])
