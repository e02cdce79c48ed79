"""The statement's own name for each metric's per-user column: its canonical name as an identifier
that every dialect reads unquoted, used from the CTE that computes it to the last SELECT (which
names it as the user asked).

``ndcg@10`` is ``ndcg_at_10``; a metric over the whole list (no cutoff) ends in ``_all``. So a name
always ends in ``_at_<k>`` or ``_all``, which no SQL keyword of any dialect does (``map`` and
``precision`` are keywords in some) and no column of the ranked-rows stage or the checks does.

>>> from recsql.metrics import parse_metrics
>>> metric_columns(parse_metrics(["ndcg@10", "map(denominator=relevant)@5", "map", "P@10"]))
['ndcg_at_10', 'map_denominator_relevant_at_5', 'map_all', 'precision_at_10']
"""
from __future__ import annotations

import re
from typing import Sequence

from ..metrics import Metric

# PostgreSQL cuts identifiers at 63 bytes (NAMEDATALEN - 1) without an error, so two long names
# could become one; every other dialect takes at least as many (MySQL 64, Oracle 12.2+ 128).
MAX_LENGTH = 63


def column_name(metric: Metric, tag: str = "") -> str:
    """``metric``'s canonical name as a plain identifier: lower-case letters, digits and ``_``, then
    ``tag``, then its cutoff as ``_at_<k>`` (or ``_all``); at most :data:`MAX_LENGTH` characters (the
    options are cut first). Not yet unique: :func:`metric_columns`."""
    options = ",".join(f"{k}={v}" for k, v in metric.options)
    words = re.sub(r"[^a-z0-9]+", "_", f"{metric.name} {options}".lower()).strip("_")
    suffix = tag + ("_all" if metric.k is None else f"_at_{metric.k}")
    return words[:MAX_LENGTH - len(suffix)].rstrip("_") + suffix


def metric_columns(metrics: Sequence[Metric]) -> list[str]:
    """One column name per metric, in order, all different: a name already taken (the same
    canonical metric asked twice with different explicit options) gets ``_2``, ``_3``, ... before its
    cutoff."""
    names: list[str] = []
    for metric in metrics:
        name, n = column_name(metric), 1
        while name in names:
            n += 1
            name = column_name(metric, f"_{n}")
        names.append(name)
    return names
