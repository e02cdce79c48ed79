"""What each engine the tests start can do, one table, as Ibis marks its backends by capability.

A test that needs a capability takes its engines from here (``engines_with("transactions")``)
instead of keeping its own list of names, and a test with a branch for the engines that lack one
asks the engine (``engine.can("dataframes")``). Each flag is named for the reason a test needs it
and says which engines lack it and why. An engine without a flag is not run by the tests that need
it: it lacks the capability, or the harness (support/engines.py) does not offer it there (said on
the flag). Adding an engine is one row here and one class in the harness; every test whose flags
it has then runs on it."""
from __future__ import annotations

FLAGS = {
    "dataframes": "takes the user's DataFrames as inputs: pandas on DuckDB, Spark DataFrames on Spark "
                  "(the others refuse a pandas frame, naming the fix: load it into a table there)",
    "non_finite": "stores NaN and ±infinity in a DOUBLE column (MariaDB cannot; SQLite stores NaN as NULL)",
    "any_table_name": "names a table with any characters, quoted (Spark's temporary views take "
                      "identifier names only; its columns are free)",
    "closable": "a connection the user can close and hand over closed (Spark's session and "
                "DataFusion's context have no closed state)",
    "time_ids": "ids in a date or time column, beside ids of another type (SQLite has no date type: "
                "dates are text there; the harness loads no time column into Spark)",
    "outliving_views": "a view outlives the table it reads, broken (PostgreSQL's DROP TABLE needs "
                       "CASCADE; MariaDB's broken view fails as a missing table; not tried elsewhere)",
    "transactions": "the user's connection holds an open transaction and temporary tables, which "
                    "recsql reads as the user does and leaves as they were (ClickHouse, Spark and "
                    "DataFusion have no transaction a user holds open)",
    "collations": "a server whose text columns usually compare under a case-insensitive or locale "
                  "collation, which recsql must not follow (PostgreSQL, MariaDB)",
    "wide_decimals": "a DECIMAL wider than DuckDB's 38 digits, ranked exactly (PostgreSQL's numeric, "
                     "MariaDB's DECIMAL(65, s))",
}

# engine -> its flags, in the order the parametrized tests run them
CAPABILITIES: dict[str, frozenset[str]] = {
    "duckdb": frozenset({"dataframes", "non_finite", "any_table_name", "closable", "time_ids", "outliving_views",
                         "transactions"}),
    "sqlite": frozenset({"non_finite", "any_table_name", "closable", "outliving_views", "transactions"}),
    "postgres": frozenset({"non_finite", "any_table_name", "closable", "time_ids", "transactions", "collations",
                           "wide_decimals"}),
    "mysql": frozenset({"any_table_name", "closable", "time_ids", "transactions", "collations", "wide_decimals"}),
    "spark": frozenset({"dataframes", "non_finite"}),
    "clickhouse": frozenset({"non_finite", "any_table_name", "closable", "time_ids"}),
    "datafusion": frozenset({"non_finite", "any_table_name", "time_ids"}),
}

ENGINES = list(CAPABILITIES)


def has(engine: str, flag: str) -> bool:
    """Whether ``engine`` has capability ``flag`` (a flag not in FLAGS is an error, not False)."""
    if flag not in FLAGS:
        raise KeyError(f"unknown engine capability {flag!r}: one of {sorted(FLAGS)}")
    return flag in CAPABILITIES[engine]


def engines_with(*flags: str) -> list[str]:
    """The engines that have every one of ``flags``, in ENGINES order."""
    return [name for name in ENGINES if all(has(name, flag) for flag in flags)]
