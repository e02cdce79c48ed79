"""recsql in dbt: the generated package is up to date, and `dbt build` of the integration project
(dbt/integration_tests) on real adapters gives recsql.evaluate's numbers, summary and per user, to
1e-9; a dirty input fails the build through the input-check tests.

dbt runs from its own virtual environment (``RECSQL_DBT_VENV``, default ``~/.cache/recsql-dbt``,
which ``.ci/engines.sh`` creates): dbt-core pins its own dependencies. A missing dbt fails the test.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

import recsql
from recsql.compose import DIAGNOSTICS
from recsql.dbt.package import read_specs, stale
from recsql.dbt.model import ModelSpec, render_model
from recsql.dbt.names import output_name
from servers import postgres_server

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dbt"
PROJECT = PACKAGE / "integration_tests"
VENV = Path(os.environ.get("RECSQL_DBT_VENV", Path.home() / ".cache" / "recsql-dbt"))
DIRTY = "dirty_recs_fail_the_build"


def dbt_command() -> Path:
    path = VENV / "bin" / "dbt"
    if not path.is_file():
        raise RuntimeError(f"dbt is not installed at {path}: run `bash .ci/engines.sh` (or set RECSQL_DBT_VENV)")
    return path


def test_committed_package_is_up_to_date():
    assert stale(PACKAGE) == [], "run `recsql dbt --regenerate` and commit the result"


def test_output_names():
    assert output_name("ndcg@10") == "ndcg_at_10"
    assert output_name("ndcg(gain=exponential)@10") == "ndcg_gain_exponential_at_10"
    assert output_name("Rprec") == "rprec"


def test_model_sql_has_no_trailing_order_by_and_comments_every_metric():
    spec = ModelSpec("m", ["ndcg@10", "map@10"], options={"run_cols": ["model"]})
    for adapter in ("duckdb", "postgres", "snowflake", "sqlserver"):
        sql = render_model(spec, adapter)
        assert "ORDER BY" not in sql[sql.rfind(")"):]  # the final SELECT, after the last CTE
        assert "/* ndcg@10: nDCG@k" in sql and "/* map@10: AP@k" in sql
        assert "{{ recs }}" in sql and "{{ truth }}" in sql
        assert "AS ndcg_at_10" in sql and '"ndcg@10"' not in sql


# ---------------------------------------------------------------- dbt build


def _seed(name: str) -> pd.DataFrame:
    return pd.read_csv(PROJECT / "seeds" / f"{name}.csv")


def _expected(spec: ModelSpec) -> pd.DataFrame:
    """recsql.evaluate on the seeds, with the model's options; columns renamed as the model names them."""
    inputs = {role: _seed(ref.split("'")[1]) for role, ref in spec.inputs.items()}
    result = recsql.evaluate(inputs.pop("recs"), inputs.pop("truth", None), spec.metrics, **inputs, **spec.options)
    frame = result.per_user if spec.output == "per_user" else result.summary
    return frame.rename(columns={m.column: output_name(m.column) for m in result.metrics})


def _dbt(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DBT_PROFILES_DIR": str(project.parent), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    done = subprocess.run([str(dbt_command()), *args, "--log-path", str(project.parent / "logs")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=1800)
    if check:
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done


def _project(tmp: Path, profile: dict) -> Path:
    """A copy of the integration project using the package by its absolute path, with a profile."""
    project = tmp / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(PACKAGE)}]}))
    (tmp / "profiles.yml").write_text(yaml.safe_dump(
        {"recsql_integration_tests": {"target": "it", "outputs": {"it": profile}}}))
    _dbt(project, "deps")
    return project


def _shown(project: Path, model: str) -> pd.DataFrame:
    done = _dbt(project, "show", "--select", model, "--output", "json", "--limit", "100000", "--log-format", "json",
                "--target-path", str(project.parent / "target"))
    for line in done.stdout.splitlines():
        event = json.loads(line)
        if event["info"]["code"] == "Q041":
            return pd.DataFrame(json.loads(event["data"]["preview"]))
    raise AssertionError(f"dbt show printed no rows for {model}: {done.stdout[-2000:]}")


def _same(actual: pd.DataFrame, expected: pd.DataFrame, spec: ModelSpec) -> None:
    """Every row and number of the model equals recsql.evaluate's (to 1e-9; NULL where it has NaN)."""
    model = spec.name
    actual = actual.rename(columns=str.lower)
    checks = [c for c in DIAGNOSTICS if c in actual.columns]
    assert (actual[checks] == 0).all().all(), (model, actual[checks])  # clean seeds: every input check is 0
    actual = actual.drop(columns=checks)
    assert sorted(actual.columns) == sorted(expected.columns), model
    keys = list(spec.options.get("run_cols", [])) + (["user_id"] if spec.output == "per_user" else [])
    actual = actual[list(expected.columns)]
    if keys:
        actual, expected = (f.sort_values(keys).reset_index(drop=True) for f in (actual, expected))
    assert len(actual) == len(expected), model
    for column in expected.columns:
        for got, want in zip(actual[column], expected[column]):
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert got is None or (isinstance(got, float) and math.isnan(got)), (model, column, got)
            elif isinstance(want, str):
                assert str(got) == want, (model, column, got, want)
            else:
                assert float(got) == pytest.approx(float(want), abs=1e-9, rel=0), (model, column, got, want)


def _build_and_compare(tmp_path: Path, profile: dict) -> None:
    project = _project(tmp_path, profile)
    target = ["--target-path", str(tmp_path / "target")]
    _dbt(project, "build", "--exclude", DIRTY, "recs_dirty", *target)
    specs = [s for s in read_specs(PACKAGE) if s.name != DIRTY]
    for spec in specs:
        _same(_shown(project, spec.name), _expected(spec), spec)
    failed = _dbt(project, "build", "--select", f"+{DIRTY}", *target, check=False)
    assert failed.returncode != 0
    assert "recs_duplicate_rows" in failed.stdout and "Failure in test" in failed.stdout, failed.stdout[-3000:]


def test_dbt_duckdb(tmp_path):
    _build_and_compare(tmp_path, {"type": "duckdb", "path": str(tmp_path / "it.duckdb"), "threads": 1})


def test_dbt_postgres(tmp_path):
    with postgres_server() as params:
        _build_and_compare(tmp_path, {"type": "postgres", "host": params["host"], "port": params["port"],
                                      "user": params["user"], "password": params["password"],
                                      "dbname": params["dbname"], "schema": "recsql_it", "threads": 1})


@pytest.mark.parametrize("name", [a for a, spec in __import__("recsql.dbt.adapters", fromlist=["x"]).ADAPTERS.items()
                                  if not spec.executed])
def test_compiled_only_adapters_parse(name):
    """Every integration model's SQL for an adapter CI does not run parses back with sqlglot in its
    dialect (the relations filled in as dbt would, as qualified table names)."""
    import jinja2
    import sqlglot
    from recsql.dbt.adapters import adapter
    for spec in read_specs(PACKAGE):
        sql = jinja2.Template(render_model(spec, name)).render(**{r: f"analytics.it.{r}" for r in spec.roles})
        tree = sqlglot.parse_one(sql, read=__import__("recsql.dialects", fromlist=["x"]).dialect(adapter(name).dialect).sqlglot)
        assert tree.find(sqlglot.exp.Order) is None or tree.args.get("order") is None, (name, spec.name)


def test_dbt_sqlite(tmp_path):
    _build_and_compare(tmp_path, {"type": "sqlite", "threads": 1, "database": "database", "schema": "main",
                                  "schemas_and_paths": {"main": str(tmp_path / "main.db")},
                                  "schema_directory": str(tmp_path)})
