"""recsql: recommender and ranking metrics as SQL.

>>> import recsql
>>> str(recsql.Metric("ndcg", 10, gain="exponential"))
'ndcg(gain=exponential)@10'
"""
from __future__ import annotations

from .api import Evaluation, RecsqlWarning, evaluate, to_sql
from .errors import RecsqlError
from .conventions import CONVENTIONS
from .metrics import Metric, parse_metric, registry
from .trec import trec_qrels, trec_run

__all__ = ["CONVENTIONS", "Evaluation", "Metric", "RecsqlError", "RecsqlWarning", "evaluate", "parse_metric",
           "registry", "to_sql", "trec_qrels", "trec_run"]
__version__ = "0.1.0"
