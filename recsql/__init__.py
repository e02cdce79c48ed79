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


def _version() -> str:
    """The version in pyproject.toml, its one source: from the installed package's metadata, or, in
    a source checkout that is not installed, from pyproject.toml itself."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("recsql")
    except PackageNotFoundError:
        import re
        from pathlib import Path
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
        found = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
        return found.group(1) if found else "0+unknown"


__version__ = _version()
