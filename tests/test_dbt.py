"""recsql in dbt, on real adapters: the models `recsql dbt generate` writes from the integration
project's recsql.yml (dbt/integration_tests) give recsql.evaluate's numbers, summary and per user, to
1e-9, under `dbt build` on dbt-duckdb, dbt-postgres (a real server), dbt-sqlite and dbt-spark
(session); a dirty input fails the build through the package's input-check test on both outputs,
naming the check; `dbt compile` without a warehouse for the other adapters gives SQL that sqlglot
parses in their dialect; `dbt parse --warn-error` passes.

dbt runs from its own virtual environment (``RECSQL_DBT_VENV``, default ``~/.cache/recsql-dbt``,
which ``.ci/engines.sh`` creates): dbt-core pins its own dependencies. A missing dbt fails the test.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

import recsql
from support.frames import assert_same_values
from recsql.compose import DIAGNOSTICS
from recsql.dbt import generate, read_config
from recsql.dbt.model import ModelSpec, relation_name
from recsql.dbt.names import output_name
from support.gates import compare_lines, row_lines
from support.servers import postgres_server

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dbt"
PROJECT = PACKAGE / "integration_tests"
VENV = Path(os.environ.get("RECSQL_DBT_VENV", Path.home() / ".cache" / "recsql-dbt"))
DIRTY = ("dirty_recs_fail_the_build", "dirty_recs_fail_the_build_per_user")
GATES_FAIL = ("gate_worse_model_fails_the_build", "gate_loss_fails_the_build",  # through recsql.gate
              "gate_missing_baseline_fails_the_build")
PYTHON_MODEL = "evaluate_python_duckdb"  # a dbt-duckdb Python model calling recsql.evaluate(con=session)
BATCH = ROOT / "tests" / "support" / "dbt_batch.py"  # several dbt commands in one dbt process


def dbt_command() -> Path:
    path = VENV / "bin" / "dbt"
    if not path.is_file():
        raise RuntimeError(f"dbt is not installed at {path}: run `bash .ci/engines.sh` (or set RECSQL_DBT_VENV)")
    return path


def _dbt(project: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    # dbt's environment imports this checkout's recsql in the Python model (its dependencies are
    # installed there by .ci/engines.sh)
    env = {**os.environ, "DBT_PROFILES_DIR": str(project.parent), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(dbt_command()), *args, "--log-path", str(project.parent / "logs")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=1800)
    if check:
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done


def _dbt_in_one(project: Path, *commands: list[str]) -> None:
    """Each dbt command (its arguments, as for :func:`_dbt`), one after another in one dbt process
    (tests/support/dbt_batch.py: dbt's dbtRunner, each command reading the project and profile
    afresh), which spares dbt's start-up of all but the first; every command must succeed."""
    env = {**os.environ, "DBT_PROFILES_DIR": str(project.parent), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "PYTHONPATH": str(ROOT)}
    logs = ["--log-path", str(project.parent / "logs")]
    done = subprocess.run([str(dbt_command().with_name("python")), str(BATCH),
                           json.dumps([[*args, *logs] for args in commands])],
                          cwd=project, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def _project(tmp: Path, profile: dict, adapters: list[str], names: list[str] | None = None) -> Path:
    """A copy of the integration project using the package by its absolute path, with a profile, and
    its models generated for ``adapters`` (``names``: only these evaluations); ``dbt deps`` is the
    caller's first dbt command."""
    project = tmp / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages", "recsql"))
    config = yaml.safe_load((project / "recsql.yml").read_text())
    config["adapters"] = adapters
    if names is not None:
        config["evaluations"] = [e for e in config["evaluations"] if e["name"] in names]
    (project / "recsql.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    generate(project)
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(PACKAGE)}]}))
    (tmp / "profiles.yml").write_text(yaml.safe_dump(
        {"recsql_integration_tests": {"target": "it", "outputs": {"it": profile}}}))
    return project


def _seed(name: str) -> pd.DataFrame:
    return pd.read_csv(PROJECT / "seeds" / f"{name}.csv")


def _expected(spec: ModelSpec) -> pd.DataFrame:
    """recsql.evaluate on the seeds, with the evaluation's options; columns named as the model names them."""
    inputs = {role: _seed(relation_name(ref)) for role, ref in spec.inputs.items()}
    result = recsql.evaluate(inputs.pop("recs"), inputs.pop("truth", None), spec.metrics, **inputs, **spec.options)
    frame = result.per_user if spec.output == "per_user" else result.summary
    if spec.column_names == "as_asked":
        return frame
    return frame.rename(columns={m.column: output_name(m.column) for m in result.metrics})


def _rows_command(project: Path, models: list[str]) -> list[str]:
    """The `dbt run-operation` (the integration project's macro recsql_it_rows) that writes every row
    of each built model, read through the adapter's connection, for :func:`_built`."""
    (project.parent / "rows").mkdir(exist_ok=True)
    return ["run-operation", "recsql_it_rows", "--args",
            json.dumps({"models": models, "directory": str(project.parent / "rows")}),
            "--target-path", str(project.parent / "target")]


def _built(project: Path, models: list[str]) -> dict[str, pd.DataFrame]:
    """Every row of each built model, as :func:`_rows_command` wrote them."""
    out = project.parent / "rows"
    return {name: pd.DataFrame(json.loads((out / f"{name}.json").read_text(encoding="utf-8"))) for name in models}


def _same(actual: pd.DataFrame, expected: pd.DataFrame, spec: ModelSpec) -> None:
    """Every row and number of the model equals recsql.evaluate's (to 1e-9; NULL where it has NaN), and
    every input check the model carries (summary and per-user rows alike) is 0 on the clean seeds."""
    model = spec.name
    actual = actual.rename(columns=str.lower)
    expected = expected.rename(columns=str.lower)
    checks = [c for c in DIAGNOSTICS if c in actual.columns]
    assert checks, (model, "carries no input check")
    assert (actual[checks] == 0).all().all(), (model, actual[checks])
    actual = actual.drop(columns=checks)
    assert sorted(actual.columns) == sorted(expected.columns), model
    keys = [c.lower() for c in [*spec.options.get("run_cols", []), *spec.options.get("segment_cols", [])]]
    keys += ["user_id"] if spec.output == "per_user" else []
    actual = actual[list(expected.columns)]
    if keys:
        actual, expected = (f.sort_values(keys).reset_index(drop=True) for f in (actual, expected))
    assert_same_values(actual, expected, model)


def _build_and_compare(tmp_path: Path, profile: dict, names: list[str] | None = None,
                       extra: tuple[str, ...] = ()) -> Path:
    """``dbt build`` of the integration project's clean models (``names``: only these), each model's
    numbers against recsql.evaluate, and each dirty input failing the build through the input-check
    test of its model, summary and per user, with the failing check named (and, for the whole project,
    a worse model and a missing baseline run failing it through their recsql.gate test); the project."""
    adapter = profile["type"]
    project = _project(tmp_path, profile, [adapter], None if names is None else [*names, *DIRTY])
    target = ["--target-path", str(tmp_path / "target")]
    if names is None:
        build = ["build", "--exclude", *DIRTY, *GATES_FAIL, "recs_dirty",
                 *([] if adapter == "duckdb" else [PYTHON_MODEL]), *target]
    else:  # these models and what they read (Spark seeds slowly, and cannot seed the text-id seeds' varchar)
        build = ["build", "--select", *[f"+{name}" for name in names], *target]
    failing = {name: f"recsql_gate_{name}" for name in GATES_FAIL if names is None}  # model -> the test failing it
    specs = [s for s in read_config(project).specs if s.name not in (*DIRTY, *GATES_FAIL)]
    assert specs and (names is None or len(specs) == len(names))
    _dbt_in_one(project, ["deps"], build, _rows_command(project, [spec.name for spec in specs]))
    built = _built(project, [spec.name for spec in specs])
    for spec in specs:
        _same(built[spec.name], _expected(spec), spec)
    for dirty in DIRTY:
        failing[dirty] = f"recsql_input_check_{dirty}_recs_duplicate_rows"
    tested = [f"+{s.name}" for s in read_config(project).specs if s.name.endswith("_per_user")
              and s.name[:-len("_per_user")] in failing]  # the per-user models the gates that test read
    failed = _dbt(project, "build", "--select", *[f"+{name}" for name in failing], *tested, "--store-failures",
                  *target, check=False)  # one dbt for every model that must fail the build, each through its own test
    assert failed.returncode != 0, failed.stdout[-3000:]
    for name, test in failing.items():
        assert f"Failure in test {test}" in failed.stdout, (name, failed.stdout[-3000:])
    return project


def _same_failures(project: Path, stored: Any) -> None:
    """The rows ``dbt build --store-failures`` kept of each failing gate (``stored``: a table's name -> its
    rows) are recsql compare --fail-if's lines for the same inputs and conditions."""
    for spec in [s for s in read_config(project).specs if s.name in GATES_FAIL[:2]]:
        assert row_lines(spec, stored(f"recsql_gate_{spec.name}")) == compare_lines(spec, _seed) != [], spec.name


@pytest.mark.longest
def test_dbt_duckdb(tmp_path):
    project = _build_and_compare(tmp_path, {"type": "duckdb", "path": str(tmp_path / "it.duckdb"), "threads": 1})
    import duckdb  # the Python model's table (built by `dbt build` above) equals recsql.evaluate
    with duckdb.connect(str(tmp_path / "it.duckdb"), read_only=True) as con:
        built = con.sql(f"SELECT * FROM main.{PYTHON_MODEL}").df()
        _same_failures(project, lambda name: con.sql(f"SELECT * FROM main_dbt_test__audit.{name}").df())
    spec = ModelSpec(PYTHON_MODEL, ["ndcg@10", "map(denominator=relevant)@10"], options={"run_cols": ["model"]})
    expected = _expected(spec).rename(columns={output_name(m): m for m in spec.metrics})
    built = built.drop(columns=[c for c in DIAGNOSTICS if c in built.columns])
    assert_same_values(built.sort_values("model").reset_index(drop=True)[list(expected.columns)],
                       expected.sort_values("model").reset_index(drop=True), PYTHON_MODEL)


@pytest.mark.longest
def test_dbt_postgres(tmp_path):
    import psycopg
    with postgres_server() as params:
        project = _build_and_compare(tmp_path, {"type": "postgres", "host": params["host"], "port": params["port"],
                                                "user": params["user"], "password": params["password"],
                                                "dbname": params["dbname"], "schema": "recsql_it", "threads": 1})
        with psycopg.connect(**params) as con:
            def stored(name: str) -> pd.DataFrame:
                cursor = con.execute(f"SELECT * FROM recsql_it_dbt_test__audit.{name}")
                return pd.DataFrame(cursor.fetchall(), columns=[c.name for c in cursor.description])
            _same_failures(project, stored)


@pytest.mark.longest
def test_dbt_sqlite(tmp_path):
    _build_and_compare(tmp_path, {"type": "sqlite", "threads": 1, "database": "database", "schema": "main",
                                  "schemas_and_paths": {"main": str(tmp_path / "main.db")},
                                  "schema_directory": str(tmp_path)})


@pytest.mark.longest
def test_dbt_spark_session(tmp_path):
    """dbt-spark in session mode (pyspark in dbt's environment): a few models, as Spark seeds slowly.
    The seeds have no empty cells (dbt-spark would store one as the string 'None')."""
    _build_and_compare(tmp_path, {"type": "spark", "method": "session", "host": "NA", "schema": "recsql_it",
                                  "threads": 1},
                       ["summary_no_run_keys", "per_user_two_run_keys", "beyond_accuracy_per_user", "ties_average"])


# ---------------------------------------------------------------- dbt compile without a connection

OFFLINE_PROFILES = {
    "snowflake": {"type": "snowflake", "account": "offline", "user": "u", "password": "p", "database": "analytics",
                  "schema": "it", "warehouse": "w", "role": "r"},
    "databricks": {"type": "databricks", "host": "offline.invalid", "http_path": "/sql/1.0/warehouses/offline",
                   "token": "offline", "catalog": "analytics", "schema": "it"},
    "bigquery": {"type": "bigquery", "method": "oauth-secrets", "token": "offline", "project": "offline",
                 "dataset": "it"},
    "redshift": {"type": "redshift", "host": "offline.invalid", "user": "u", "password": "p", "port": 5439,
                 "dbname": "analytics", "schema": "it"},
    "trino": {"type": "trino", "method": "none", "user": "u", "host": "offline.invalid", "port": 8080,
              "database": "analytics", "schema": "it"},
    "sqlserver": {"type": "sqlserver", "driver": "ODBC Driver 18 for SQL Server", "server": "offline.invalid",
                  "port": 1433, "database": "analytics", "schema": "it", "user": "u", "password": "p"},
}


@pytest.mark.longest
def test_dbt_compile_offline(tmp_path):
    """`dbt compile` with no warehouse (no relation cache, no introspection; credentials that reach
    nothing) of every model, for each adapter CI does not run, from one project whose models hold every
    adapter's rendering (a dev and a prod target, as a user has them): each compiled model parses in
    the adapter's dialect and has no final ORDER BY, and each recsql.gate test parses in it too; and
    `dbt parse --warn-error` passes."""
    import sqlglot
    from recsql.dbt.adapters import adapter
    from recsql.dialects import dialect
    first, *others = sorted(OFFLINE_PROFILES)
    project = _project(tmp_path, {**OFFLINE_PROFILES[first], "threads": 1}, ["duckdb", *sorted(OFFLINE_PROFILES)])
    outputs = {name: {**profile, "threads": 1} for name, profile in OFFLINE_PROFILES.items()}
    (tmp_path / "profiles.yml").write_text(yaml.safe_dump(
        {"recsql_integration_tests": {"target": first, "outputs": outputs}}))
    models = [s.name for s in read_config(project).specs]
    _dbt_in_one(project, ["deps"], ["--warn-error", "parse", "--target", first],  # each parses the project afresh
                *[["compile", "--target", name, "--no-populate-cache", "--no-introspect", "--indirect-selection",
                   "empty", "--select", "path:models/recsql", "test_name:gate",
                   "--target-path", str(tmp_path / f"target-{name}")] for name in sorted(OFFLINE_PROFILES)])
    for name in sorted(OFFLINE_PROFILES):
        target = tmp_path / f"target-{name}"
        for model in models:
            (path,) = target.glob(f"compiled/*/models/recsql/{model}.sql")
            tree = sqlglot.parse_one(path.read_text(), read=dialect(adapter(name).dialect).sqlglot)
            assert tree.args.get("order") is None, (name, model)
        gates = sorted(target.glob("compiled/*/models/recsql/*.yml/recsql_gate_*.sql"))  # the recsql.gate tests
        assert len(gates) == len([s for s in read_config(project).specs if s.gates]), (name, gates)
        for path in gates:
            sqlglot.parse_one(path.read_text(), read=dialect(adapter(name).dialect).sqlglot)
