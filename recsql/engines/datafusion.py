"""Run recsql's query on Apache DataFusion through a ``datafusion.SessionContext`` whose tables
the user registered (``ctx.register_parquet``, ``ctx.register_record_batches``, ...)."""
from __future__ import annotations

import pandas as pd

from ..sources import Source
from .base import Runner


class DataFusionRunner(Runner):
    name = "DataFusion"
    dialect = "datafusion"

    def describe(self, source: Source) -> dict[str, str]:
        try:
            schema = self.con.sql(f"SELECT * FROM {source.relation.sql('postgres')} LIMIT 0").schema()
        except Exception as err:  # noqa: BLE001
            raise self.missing(source, err) from None
        return {field.name: str(field.type) for field in schema}

    def fetch(self, sql: str) -> pd.DataFrame:
        try:
            return self.con.sql(sql).to_pandas()
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None
