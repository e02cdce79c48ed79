"""The dbt package's macros rendered with plain jinja2, in a minimal dbt-like context: ``return()``,
``exceptions.raise_compiler_error``, ``modules.re``, ``adapter.quote`` and ``adapter.dispatch``
(an adapter's implementation, else the one its dispatch falls back to, else ``default__``), and the
``do`` statement. Enough to render ``recsql.evaluate`` as dbt would, without dbt, many times a second.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import jinja2

from recsql.dbt.adapters import ADAPTERS

PACKAGE = Path(__file__).resolve().parent.parent / "dbt"


class CompilerError(Exception):
    """dbt's compiler error (``exceptions.raise_compiler_error``)."""


class _Return(Exception):
    def __init__(self, value):
        super().__init__()
        self.value = value


def _raise_return(value):
    raise _Return(value)


def _compiler_error(message):
    raise CompilerError(message)


def _returning(macro):
    """A macro as dbt calls it: the value of its ``return()``, else its rendered text."""
    def call(*args, **kwargs):
        try:
            return macro(*args, **kwargs)
        except _Return as done:
            return done.value
    return call


class Package:
    """The macros of ``dbt/macros`` for one adapter; :meth:`evaluate` renders ``recsql.evaluate``."""

    def __init__(self, adapter: str, root: Path = PACKAGE) -> None:
        self.adapter = adapter
        env = jinja2.Environment(extensions=["jinja2.ext.do"], undefined=jinja2.StrictUndefined)
        self.recsql = SimpleNamespace()
        quote = (lambda name: f"`{name}`") if ADAPTERS[adapter].dialect in ("spark", "databricks", "bigquery") \
            else (lambda name: '"' + name.replace('"', '""') + '"')
        env.globals.update({
            "recsql": self.recsql, "return": _raise_return, "modules": SimpleNamespace(re=re), "execute": False,
            "exceptions": SimpleNamespace(raise_compiler_error=_compiler_error),
            "adapter": SimpleNamespace(quote=quote, dispatch=self._dispatch)})
        for path in sorted([*(root / "macros").glob("evaluate*.sql"), *(root / "macros" / "evaluate_sql").glob("*.sql")]):
            template = env.from_string(path.read_text(encoding="utf-8"))
            context = template.new_context()
            for _ in template.root_render_func(context):  # defines the file's macros (private ones too)
                pass
            for name, macro in context.vars.items():
                if isinstance(macro, jinja2.runtime.Macro):
                    setattr(self.recsql, name, _returning(macro))

    def _dispatch(self, name: str, namespace: str = "recsql"):
        chain, current = [], self.adapter
        while current:
            chain.append(current)
            current = ADAPTERS[current].falls_back_to
        for prefix in [*chain, "default"]:
            macro = getattr(self.recsql, f"{prefix}__{name}", None)
            if macro is not None:
                return macro
        raise CompilerError(f"no implementation of {namespace}.{name} for {self.adapter}")

    def evaluate(self, **kwargs) -> str:
        """``{{ recsql.evaluate(**kwargs) }}`` as dbt renders it (relations as given: table names)."""
        return str(self.recsql.evaluate(**kwargs))
