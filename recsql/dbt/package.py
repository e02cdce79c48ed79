"""Regenerate the dbt package in ``dbt/`` (``recsql dbt --regenerate``).

Everything the package holds besides the integration project's seeds and model list is written
here: ``dbt_project.yml``, the ``input_checks`` model test (from :data:`recsql.compose.DIAGNOSTICS`)
and, for every model listed in ``integration_tests/recsql_models.yml``, its dispatching macro, model
and schema (:mod:`recsql.dbt.model`). :func:`package_files` is what the package must contain;
``tests/test_dbt.py`` compares it with the committed files.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .. import __version__
from ..compose import DIAGNOSTICS
from .evaluate import evaluate_files
from .model import GENERATED, ModelSpec, macro_file, model_file, schema_entry

REQUIRE_DBT = [">=1.7.0", "<3.0.0"]
SPECS = "integration_tests/recsql_models.yml"  # the integration models, by name


def _project() -> str:
    return f"# {GENERATED}\n" + yaml.safe_dump({
        "name": "recsql", "version": __version__, "config-version": 2, "require-dbt-version": REQUIRE_DBT,
        "macro-paths": ["macros"]}, sort_keys=False)


def _input_checks() -> str:
    """A model test failing when any recsql input check column of the model is non-zero."""
    names = ", ".join(f"'{n}'" for n in DIAGNOSTICS)
    return (f"{{# {GENERATED} #}}\n"
            "{# Fails when any recsql input check (README, \"Safety\") of the model is non-zero: the numbers beside\n"
            "   it read bad rows (NULL or NaN values, duplicated keys). #}\n"
            "{% test input_checks(model) %}\n"
            f"{{%- set checks = [{names}] -%}}\n"
            "{%- set present = [] -%}\n"
            "{%- for column in adapter.get_columns_in_relation(model) -%}\n"
            "  {%- if column.name | lower in checks -%}{%- do present.append(column.name) -%}{%- endif -%}\n"
            "{%- endfor %}\n"
            "select * from {{ model }}\n"
            "where {% for column in present %}{{ adapter.quote(column) }} <> 0 or {% endfor %}1 = 0\n"
            "{% endtest %}\n")


def read_specs(root: Path) -> list[ModelSpec]:
    """The integration models listed in ``dbt/integration_tests/recsql_models.yml``."""
    entries: list[dict[str, Any]] = yaml.safe_load((root / SPECS).read_text(encoding="utf-8"))["models"]
    return [ModelSpec(**entry) for entry in entries]


def package_files(root: Path, jobs: int | None = None) -> dict[Path, str]:
    """Every generated file of the package rooted at ``root`` (the repository's ``dbt/``), by path;
    ``jobs``: the processes writing the adapters' macros (default: one per core)."""
    files = {root / "dbt_project.yml": _project(), root / "macros" / "input_checks.sql": _input_checks()}
    files.update(evaluate_files(root / "macros", jobs))
    project = root / "integration_tests"
    for spec in read_specs(root):
        files[project / "macros" / "generated" / f"{spec.name}.sql"] = macro_file(spec, list(_adapters()))
        files[project / "models" / "generated" / f"{spec.name}.sql"] = model_file(spec)
        files[project / "models" / "generated" / f"{spec.name}.yml"] = (
            f"# {GENERATED}\n" + yaml.safe_dump({"version": 2, "models": [schema_entry(spec, package_test=True)]}, sort_keys=False))
    return files


def _adapters() -> list[str]:
    from .adapters import ADAPTERS
    return list(ADAPTERS)


def stale(root: Path, files: dict[Path, str] | None = None, jobs: int | None = None) -> list[Path]:
    """Generated files that are missing or differ from what :func:`package_files` writes, and files in
    the generated folders that it would not write."""
    files = package_files(root, jobs) if files is None else files
    out = [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    for folder in (root / "integration_tests" / "macros" / "generated", root / "integration_tests" / "models" / "generated"):
        out += [p for p in sorted(folder.glob("*")) if p not in files]
    return out


def regenerate(root: Path) -> list[Path]:
    """Write the generated files (and remove stale ones from the generated folders); the paths written."""
    files = package_files(root)
    for path in stale(root, files):
        if path not in files:
            path.unlink()
    written = []
    for path, text in files.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written
