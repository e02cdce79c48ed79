"""dbt adapters recsql writes SQL for, each with the recsql dialect it renders (recsql/dialects.py).

``executed``: CI runs ``dbt build`` on it and compares every number with :func:`recsql.evaluate`;
otherwise the model is compiled with ``dbt compile`` (no connection) and parsed back by sqlglot.

>>> adapter("sqlserver").dialect
'tsql'
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import RecsqlError


@dataclass(frozen=True)
class Adapter:
    """A dbt adapter type (``target.type``) and the recsql dialect its SQL is rendered in."""

    name: str
    dialect: str
    executed: bool = False
    package: str = ""  # the adapter's distribution on the package index
    falls_back_to: str = ""  # the adapter whose implementation dbt's dispatch uses when this one has none


ADAPTERS: dict[str, Adapter] = {a.name: a for a in (
    Adapter("duckdb", "duckdb", executed=True, package="dbt-duckdb"),
    Adapter("postgres", "postgres", executed=True, package="dbt-postgres"),
    Adapter("sqlite", "sqlite", executed=True, package="dbt-sqlite"),
    Adapter("spark", "spark", executed=True, package="dbt-spark"),
    Adapter("databricks", "databricks", package="dbt-databricks", falls_back_to="spark"),
    Adapter("redshift", "redshift", package="dbt-redshift", falls_back_to="postgres"),
    Adapter("snowflake", "snowflake", package="dbt-snowflake"),
    Adapter("bigquery", "bigquery", package="dbt-bigquery"),
    Adapter("trino", "trino", package="dbt-trino"),
    Adapter("sqlserver", "tsql", package="dbt-sqlserver"),
)}
# The implementation every adapter without its own falls back to (dbt's dispatch: redshift ->
# postgres -> default, databricks -> spark -> default).
DEFAULT = "postgres"


def adapter(name: str) -> Adapter:
    """The :class:`Adapter` for a dbt adapter type; a clear error for anything else."""
    key = name.strip().lower()
    if key not in ADAPTERS:
        raise RecsqlError(f"dbt adapter {name!r} is not supported; choose from {', '.join(ADAPTERS)}")
    return ADAPTERS[key]
