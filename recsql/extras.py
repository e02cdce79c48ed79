"""The optional dependencies: which extra of ``recsql-eval`` installs each, and the one-line error
when one is missing.

``pip install recsql-eval`` installs what ``evaluate``, ``sql``, ``metrics``, ``compare`` and
``report`` need (the report's figures are SVG recsql writes itself); the dbt commands, the other
engines' drivers and MLflow logging come with extras (``pip install 'recsql-eval[dbt]'``). Each is imported where it
is used, never when recsql loads.

>>> print(MissingExtra("yaml", "recsql dbt generate"))
recsql dbt generate needs PyYAML, which the dbt extra installs: pip install 'recsql-eval[dbt]'
"""
from __future__ import annotations

import importlib
import threading
from types import ModuleType

# top-level module -> (the extra that installs it, the package's name on the package index)
EXTRAS: dict[str, tuple[str, str]] = {
    "yaml": ("dbt", "PyYAML"),
    "dbt": ("dbt", "dbt-core"),
    "psycopg": ("postgres", "psycopg"),
    "pymysql": ("mysql", "PyMySQL"),
    "pyspark": ("spark", "pyspark"),
    "chdb": ("clickhouse", "chdb"),
    "datafusion": ("datafusion", "datafusion"),
    "polars": ("polars", "polars"),
    "mlflow": ("mlflow", "mlflow-skinny"),
}


class MissingExtra(ModuleNotFoundError):
    """An optional dependency is not installed: the message names the extra that installs it."""

    def __init__(self, module: str, needed_by: str) -> None:
        extra, package = EXTRAS[module]
        super().__init__(f"{needed_by} needs {package}, which the {extra} extra installs: "
                         f"pip install 'recsql-eval[{extra}]'", name=module)


def require(module: str, needed_by: str) -> ModuleType:
    """Import ``module`` (an optional dependency, a key of :data:`EXTRAS`) for ``needed_by``
    (e.g. ``"recsql dbt generate"``); :class:`MissingExtra` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if (err.name or "").split(".")[0] != module:
            raise  # the module is there but one of its own dependencies is not: its own error
        raise MissingExtra(module, needed_by) from None


def missing_extra(err: ModuleNotFoundError, needed_by: str) -> str | None:
    """The one-line message for a missing optional dependency that ``needed_by`` imported (None: not
    one of :data:`EXTRAS`).

    >>> missing_extra(ModuleNotFoundError("No module named 'yaml'", name="yaml"), "recsql dbt")
    "recsql dbt needs PyYAML, which the dbt extra installs: pip install 'recsql-eval[dbt]'"
    """
    if isinstance(err, MissingExtra):
        return str(err)
    module = (err.name or "").split(".")[0]
    return str(MissingExtra(module, needed_by)) if module in EXTRAS else None


def import_ahead(modules: tuple[str, ...]) -> threading.Thread:
    """Import ``modules`` in a background thread, for a command that needs them once its query has run
    (scipy's special functions for the tests' p-values). DuckDB releases the GIL while a query runs, so
    these imports (a quarter of a second or more on a cold start) overlap with the query instead of
    following it; an import that fails here is simply made again, and reported, where it is used.
    Called once the command's own modules, DuckDB's among them, are imported: a native module loaded
    in two threads at once can fail (DuckDB's did, beside pandas)."""
    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - imported again where it is used, which reports it
                return
    thread = threading.Thread(target=load, name="recsql-import-ahead", daemon=True)
    thread.start()
    return thread
