"""recsql: recommender and ranking metrics as SQL.

>>> import recsql
>>> str(recsql.Metric("ndcg", 10, gain="exponential"))
'ndcg(gain=exponential)@10'
"""
from __future__ import annotations

import importlib

DISTRIBUTION = "recsql-eval"  # the name on the package index (`pip install recsql-eval`); the module is recsql

# The public names, imported from their modules on first use (PEP 562): `import recsql` stays light,
# so the command line answers Ctrl-C at once and a cold first call pays only for what it uses.
_EXPORTS = {
    "Evaluation": "api", "RecsqlWarning": "errors", "evaluate": "api", "to_sql": "sql_text",
    "Comparison": "comparison", "compare": "comparison", "Inputs": "inputs",
    "RecsqlError": "errors", "CONVENTIONS": "conventions",
    "Metric": "metrics", "parse_metric": "metrics", "registry": "metrics",
    "trec_qrels": "trec", "trec_run": "trec",
    "log_evaluation": "mlflow_log", "log_comparison": "mlflow_log",  # need the mlflow extra when called
    "report": "report",  # the package recsql.report, callable: recsql.report(...) is its function report
}
__all__ = sorted(_EXPORTS, key=str.lower)


def __getattr__(name: str) -> object:
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    if name not in _EXPORTS:
        raise AttributeError(f"module 'recsql' has no attribute {name!r}")
    module = importlib.import_module(f".{_EXPORTS[name]}", __name__)
    value = module if _EXPORTS[name] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


def _version() -> str:
    """The version in pyproject.toml, its one source: from the installed package's metadata, or, in
    a source checkout that is not installed, from pyproject.toml itself."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        import re
        from pathlib import Path
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
        found = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text)
        return found.group(1) if found else "0+unknown"

