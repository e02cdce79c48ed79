"""recsql in dbt: the composed query as dbt macros, models and tests.

``recsql dbt model NAME -m ndcg@10 ...`` writes, for a metric list, a macro file with one
``adapter.dispatch`` implementation per warehouse (``default__`` plus every adapter whose SQL
differs), a model calling it with ``ref()``/``source()`` relations, and a ``schema.yml`` whose tests
fail ``dbt build`` when an input check (README, "Safety") is non-zero. ``recsql dbt --regenerate``
rewrites the dbt package in ``dbt/`` (its tests and helpers, and the integration project's models)
from the same SQL templates and composer; ``tests/test_dbt.py`` fails when the committed package is
out of date.

The package also holds ``{{ recsql.evaluate(recs=ref('recs'), truth=ref('truth'), metrics=var('metrics')) }}``
(:mod:`recsql.dbt.evaluate`, :mod:`recsql.dbt.jinja`): the metric list, cutoffs and options are read
at Jinja time, and the SQL is generated per adapter from the composer's statements.

Every statement is the composer's (:func:`recsql.compose.compose`) rendered by sqlglot for the
adapter's dialect: no metric is written twice.
"""
from __future__ import annotations

from .adapters import ADAPTERS, adapter
from .model import ModelSpec, render_model, write_model
from .names import output_name

__all__ = ["ADAPTERS", "adapter", "ModelSpec", "render_model", "write_model", "output_name"]
