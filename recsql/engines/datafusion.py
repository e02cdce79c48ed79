"""Run recsql's query on Apache DataFusion through a ``datafusion.SessionContext`` whose tables
the user registered (``ctx.register_parquet``, ``ctx.register_record_batches``, ...)."""
from __future__ import annotations

import pandas as pd

from ..dialects import dialect
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

    in_steps = True  # it plans every CTE again where it is read: a minute of planning for compare's recomputing one
    long_in_steps = True  # and holds every operator of a statement at once, within its memory pool (dialects.py)

    def materialize(self, name: str, sql: str) -> None:
        """The rows collected into memory and registered as the context's table ``name``: a later step plans a
        scan of them, not this step's plan again. The batches are given the step's schema without metadata: a
        UNION of tables registered from two DataFrames yields batches carrying each one's pandas metadata,
        which DataFusion's in-memory table refuses ("Mismatch between schema and batches"; every metric at
        @100 with items and item features did)."""
        import pyarrow as pa
        try:
            with self.settings_applied():
                frame = self.con.sql(sql)
                schema = frame.schema().remove_metadata()
                batches = [batch.replace_schema_metadata(None) for batch in frame.collect()]
            batches = [batch if batch.schema.equals(schema) else batch.cast(schema) for batch in batches]
            self.con.register_record_batches(name, [batches or [pa.RecordBatch.from_pylist([], schema=schema)]])
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None

    def release(self, name: str) -> None:
        self.con.deregister_table(name)

    def fetch_whole(self, sql: str) -> pd.DataFrame:
        """The rows of ``sql``, run as one statement (one of more than 64 CTEs, or nesting more than 64 SELECTs
        through them, whose operators DataFusion would hold at once, runs in steps: :meth:`Runner.fetch`)."""
        try:
            with self.settings_applied():
                return self.con.sql(sql).to_pandas()
        except Exception as err:  # noqa: BLE001
            raise self.failed(err) from None

    def query_settings(self) -> dict[str, str]:
        """The dialect's settings (recsql/dialects.py says why), on the user's context for the query alone."""
        return dict(dialect(self.dialect).settings)

    def read_settings(self, names: list[str]) -> dict[str, str]:
        """Reading a setting needs the information schema: when it is off, it is switched on to read
        and off again."""
        schema = "datafusion.catalog.information_schema"
        try:
            self._show(schema)
            opened = False
        except Exception:  # noqa: BLE001 (DataFusion: "SHOW is not supported unless information_schema is enabled")
            self.con.sql(f"SET {schema} = true").collect()
            opened = True
        try:
            return {name: self._show(name) for name in names}
        finally:
            if opened:
                self.con.sql(f"SET {schema} = false").collect()

    def write_settings(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self.con.sql(f"SET {name} = {value}").collect()

    def _show(self, name: str) -> str:
        return str(self.con.sql(f"SHOW {name}").to_pandas()["value"].iloc[0])
