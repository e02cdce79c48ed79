"""recsql in dbt: the composer writes the models, the package in ``dbt/`` tests them.

A dbt project lists its evaluations in ``recsql.yml``; ``recsql dbt generate`` writes each one as a
model whose SQL is the composer's statement (:mod:`recsql.dbt.model`), with a YAML file whose
``recsql.input_check`` tests fail ``dbt build`` when an input check is non-zero
(:mod:`recsql.dbt.project`), and whose ``recsql.gate`` test fails it when a run is worse than the
baseline run by more than a margin (:mod:`recsql.dbt.gates`). No metric is written twice: every model is
:func:`recsql.compose.compose` rendered by sqlglot for the adapter's dialect.
"""
from __future__ import annotations

from .adapters import ADAPTERS, adapter
from .model import ModelSpec, model_file, model_sql
from .names import output_name
from .project import generate, read_config

__all__ = ["ADAPTERS", "adapter", "ModelSpec", "generate", "model_file", "model_sql", "output_name", "read_config"]
