"""One small runner per engine, all with the same interface (see :class:`engines.duckdb.DuckDBRunner`)."""
