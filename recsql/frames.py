"""The results an engine's runner returns, read alike whatever they are: a pandas DataFrame, an
Arrow table, or a frame with ``to_pandas()`` (Spark, DataFusion).

>>> import pyarrow as pa
>>> table = pa.table({"n": pa.array([3, None, 5], pa.int64())})
>>> columns_of(table), rows_of(table), records(table)[1]
(['n'], 3, {'n': None})

Nothing here imports pandas: a frame that is one was made by pandas, already loaded.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa


def columns_of(frame: Any) -> list[str]:
    """The column names of a fetched result (pandas, Arrow, or a frame with ``to_pandas``)."""
    return list(frame.column_names if hasattr(frame, "column_names") else frame.columns)


def rows_of(frame: Any) -> int:
    """The number of rows of a fetched result."""
    return frame.num_rows if hasattr(frame, "num_rows") else len(frame)


def records(frame: Any) -> list[dict[str, Any]]:
    """The rows of a fetched result as dicts (an Arrow table's as Python values, a NULL as None)."""
    if isinstance(frame, pa.Table):
        return frame.to_pylist()
    table = frame if hasattr(frame, "to_dict") else frame.to_pandas()  # pandas, or a frame that makes one
    return table.to_dict("records")
