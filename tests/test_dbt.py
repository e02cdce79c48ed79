"""recsql in dbt: the generated package is up to date, and `dbt build` of the integration project
(dbt/integration_tests) on real adapters gives recsql.evaluate's numbers, summary and per user, to
1e-9; a dirty input fails the build through the input-check tests.

dbt runs from its own virtual environment (``RECSQL_DBT_VENV``, default ``~/.cache/recsql-dbt``,
which ``.ci/engines.sh`` creates): dbt-core pins its own dependencies. A missing dbt fails the test.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

import recsql
from recsql.compose import DIAGNOSTICS
from frames import assert_same_values
from recsql.dbt.package import read_specs, stale
from recsql.dbt.model import ModelSpec, render_model
from recsql.dbt.names import output_name
from servers import postgres_server

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dbt"
PROJECT = PACKAGE / "integration_tests"
VENV = Path(os.environ.get("RECSQL_DBT_VENV", Path.home() / ".cache" / "recsql-dbt"))
DIRTY = "dirty_recs_fail_the_build"
PYTHON_MODEL = "evaluate_python_duckdb"  # a dbt-duckdb Python model calling recsql.evaluate(con=session)


def dbt_command() -> Path:
    path = VENV / "bin" / "dbt"
    if not path.is_file():
        raise RuntimeError(f"dbt is not installed at {path}: run `bash .ci/engines.sh` (or set RECSQL_DBT_VENV)")
    return path


@pytest.mark.longest
def test_committed_package_is_up_to_date():
    # one process beside the other pytest worker (the two cores are shared out already): with two,
    # their 7-10 GB of compositions and the other worker's engines left no memory on a 24 GB machine
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else None
    assert stale(PACKAGE, jobs=jobs) == [], "run `recsql dbt --regenerate` and commit the result"


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
    # dbt's environment imports this checkout's recsql in Python models (its dependencies are
    # installed there by .ci/engines.sh)
    env = {**os.environ, "DBT_PROFILES_DIR": str(project.parent), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "PYTHONPATH": str(ROOT)}
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


def _shown(project: Path, model: str, variables: dict | None = None) -> pd.DataFrame:
    done = _dbt(project, "show", "--select", model, "--output", "json", "--limit", "100000", "--log-format", "json",
                "--target-path", str(project.parent / "target"), *(["--vars", json.dumps(variables)] if variables else []))
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
    assert_same_values(actual, expected, model)


def _build_and_compare(tmp_path: Path, profile: dict, models: list[str] | None = None) -> Path:
    """``dbt build`` of the integration project (``models``: only these and their seeds), every model's
    numbers against recsql.evaluate, and the dirty input failing the build; the project."""
    project = _project(tmp_path, profile)
    target = ["--target-path", str(tmp_path / "target")]
    python = [] if profile["type"] == "duckdb" else [PYTHON_MODEL]
    if models is None:
        _dbt(project, "build", "--exclude", DIRTY, "recs_dirty", *python, *target)
    else:
        _dbt(project, "build", "--select", *[f"+{m}" for m in models], *target)
    specs = [s for s in read_specs(PACKAGE) if s.name != DIRTY and (models is None or s.name in models)]
    for spec in specs:
        _same(_shown(project, spec.name), _expected(spec), spec)
    failed = _dbt(project, "build", "--select", f"+{DIRTY}", *target, check=False)
    assert failed.returncode != 0
    assert "recs_duplicate_rows" in failed.stdout and "Failure in test" in failed.stdout, failed.stdout[-3000:]
    return project


def test_dbt_duckdb(tmp_path):
    project = _build_and_compare(tmp_path, {"type": "duckdb", "path": str(tmp_path / "it.duckdb"), "threads": 1})
    _evaluate_from_vars(project)
    import duckdb  # the Python model's table (built by `dbt build` above) equals recsql.evaluate
    with duckdb.connect(str(tmp_path / "it.duckdb"), read_only=True) as con:
        built = con.sql(f"SELECT * FROM main.{PYTHON_MODEL}").df()
    spec = ModelSpec(PYTHON_MODEL, ["ndcg@10", "map(denominator=relevant)@10"], options={"run_cols": ["model"]})
    _same(built, _expected(spec).rename(columns={output_name(m): m for m in spec.metrics}), spec)


def test_dbt_postgres(tmp_path):
    with postgres_server() as params:
        project = _build_and_compare(tmp_path, {"type": "postgres", "host": params["host"], "port": params["port"],
                                      "user": params["user"], "password": params["password"],
                                      "dbname": params["dbname"], "schema": "recsql_it", "threads": 1})
        _evaluate_from_vars(project, failures=False)


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
    project = _build_and_compare(tmp_path, {"type": "sqlite", "threads": 1, "database": "database", "schema": "main",
                                  "schemas_and_paths": {"main": str(tmp_path / "main.db")},
                                  "schema_directory": str(tmp_path)})
    _evaluate_from_vars(project, failures=False)


# ---------------------------------------------------------------- recsql.evaluate with metrics from var()

VAR_MODEL = "evaluate_from_var"


def _served_variants(with_k: int | None, exponent: bool = True, side: bool = False) -> list[str]:
    """Every metric variant recsql.evaluate computes (from the registry: every served metric and every
    choice of its options), each with every option written out; numbers inside their interval; those
    that read a side input (interactions) only with ``side``."""
    from recsql.dbt.evaluate import _cutoffs, _metric, _variants, raises_to_relevance, refused, served, variant_needs
    from recsql.metrics import registry
    out = []
    for name, spec in registry().items():
        for options in _variants(name):
            if served(name, options) or (variant_needs(name, options) and not side):
                continue
            for has_k in _cutoffs(name):
                if has_k != (with_k is not None) and not (with_k is None and has_k):
                    continue
                k = with_k if has_k else None
                if k is None and has_k:
                    k = 4
                if spec.full_list and with_k is not None:
                    continue
                numbers = {p: next(v for v in (0.7, 2.5, 1.5) if spec.params[p].allows(v)) for p, v in options.items() if v == "#"}
                if refused(_metric(name, k, options, 0.5)):
                    continue
                if not exponent and raises_to_relevance(str(_metric(name, k, options, 0.5))):
                    continue
                written = ",".join(f"{p}={numbers.get(p, v)}" for p, v in options.items())
                out.append(f"{name}{f'({written})' if written else ''}{'' if k is None else f'@{k}'}")
    return out


TEXT_METRICS = ["ndcg@3", "precision@2", "recall@4", "mrr", "hit_rate@1", "map@4"]


def _var_cases() -> list[dict]:
    """recsql.evaluate's switches each at every value: run keys 0 to 4, summary and per user, score and
    rank, the three populations, whole list or cut, with and without exponential gains, safe and
    as-asked column names, an empty population, duplicated keys kept once (best, max), no relevance
    column, ties='item_id_desc', text ids named or found from the relation's column types."""
    return [
        dict(recsql_metrics=_served_variants(None), recsql_run_cols=["model"]),
        dict(recsql_metrics=_served_variants(3), recsql_recs="recs_two_keys", recsql_run_cols=["model", "variant"],
             recsql_output="per_user", recsql_population="intersection", recsql_threshold=2,
             recsql_score_col=None, recsql_rank_col="score"),
        dict(recsql_metrics=_served_variants(10), recsql_recs="recs_single", recsql_run_cols=[],
             recsql_population="judged", recsql_column_names="as_asked"),
        dict(recsql_metrics=_served_variants(5, exponent=False), recsql_run_cols=["model"], recsql_threshold=99),
        dict(recsql_metrics=_served_variants(None), recsql_recs="recs_two_keys", recsql_run_cols=["model", "variant"],
             recsql_output="per_user", recsql_population="judged"),
        # duplicates= and relevance_col=none (factorised switches of recsql/dbt/evaluate.py)
        dict(recsql_metrics=_served_variants(None), recsql_recs="recs_duplicates", recsql_run_cols=["model"],
             recsql_duplicates="best"),
        dict(recsql_metrics=_served_variants(3), recsql_recs="recs_duplicates", recsql_run_cols=["model"],
             recsql_duplicates="max", recsql_relevance_col=None, recsql_output="per_user", recsql_rank_col="score",
             recsql_score_col=None),
        dict(recsql_metrics=_served_variants(None), recsql_run_cols=["model"], recsql_relevance_col=None,
             recsql_population="intersection"),
        # ties='item_id_desc' and four run keys
        dict(recsql_metrics=_served_variants(None), recsql_recs="recs_four_keys",
             recsql_run_cols=["model", "variant", "fold", "seed"], recsql_ties="item_id_desc"),
        dict(recsql_metrics=_served_variants(4), recsql_recs="recs_three_keys", recsql_run_cols=["model", "variant", "fold"],
             recsql_ties="item_id_desc", recsql_output="per_user", recsql_population="judged"),
        # text ids differing only in case (on PostgreSQL under a case-insensitive ICU collation): named,
        # and found by the macro from the relation's column types
        dict(recsql_metrics=TEXT_METRICS, recsql_recs="recs_text", recsql_truth="truth_text", recsql_run_cols=[],
             recsql_output="per_user", recsql_text_ids=["user_id", "item_id"]),
        dict(recsql_metrics=TEXT_METRICS, recsql_recs="recs_text", recsql_truth="truth_text", recsql_run_cols=[]),
        # conventions: tie rules (trec's tied integer ids compared as text), populations, negative judgments
        # unjudged, gains, option defaults, msr's ndcg over its own population; ir_measures without the
        # measures it ranks its own way
        dict(recsql_metrics=CONVENTION_METRICS, recsql_run_cols=["model"], recsql_convention="trec"),
        dict(recsql_metrics=CONVENTION_METRICS, recsql_recs="recs_two_keys", recsql_run_cols=["model", "variant"],
             recsql_convention="ranx", recsql_output="per_user", recsql_threshold=2),
        dict(recsql_metrics=[m for m in CONVENTION_METRICS if not m.startswith(("mrr@", "judged"))],
             recsql_run_cols=["model"], recsql_convention="ir_measures", recsql_output="per_user"),
        dict(recsql_metrics=CONVENTION_METRICS, recsql_run_cols=["model"], recsql_convention="replay"),
        dict(recsql_metrics=CONVENTION_METRICS, recsql_recs="recs_single", recsql_run_cols=[], recsql_convention="msr",
             recsql_output="per_user"),  # msr's ndcg over every truth user, the others over the intersection
        dict(recsql_metrics=CONVENTION_METRICS, recsql_run_cols=["model"], recsql_convention="msr"),  # n_users_ndcg
        # interactions=, items= and item_features= and the metrics that read them (the list-only ones over the
        # users with a list)
        # (serendipity's baseline: the popular items of interactions here, baseline= in the next case)
        dict(recsql_metrics=[m for m in _served_variants(3, side=True) if not m.startswith("unexpectedness")],
             recsql_recs="recs_two_keys", recsql_run_cols=["model", "variant"],
             recsql_output="per_user", recsql_interactions="interactions", recsql_items="items",
             recsql_item_features="item_features"),
        dict(recsql_metrics=_served_variants(None, side=True), recsql_run_cols=["model"], recsql_interactions="interactions",
             recsql_items="items", recsql_duplicates="best", recsql_catalog="catalog", recsql_baseline="baseline",
             recsql_item_features="item_features"),
        # ties='average': the expected value over tied positions, for the metrics that have one
        dict(recsql_metrics=AVERAGE_METRICS, recsql_run_cols=["model"], recsql_ties="average", recsql_output="per_user"),
        dict(recsql_metrics=AVERAGE_METRICS, recsql_recs="recs_two_keys", recsql_run_cols=["model", "variant"],
             recsql_ties="average", recsql_threshold=2),
    ]


AVERAGE_METRICS = ["precision@2", "recall@3", "hit_rate@1", "ndcg@3", "ndcg(gain=exponential)@4", "dcg@3", "cg@2",
                   "f1@3", "rbp(p=0.7)@5", "num_rel_ret@2", "ndcg(ideal=k_slots)@3", "ndcg", "rbp"]


# Metrics whose options the conventions set (map's denominator, rbp's p, ndcg's ideal, judged's denominator).
CONVENTION_METRICS = ["precision@1", "ndcg@3", "map@3", "mrr@5", "rbp@3", "bpref", "ndcg", "map", "judged@2", "err@3",
                      "recall@4", "hit_rate@2"]


def _expected_from_vars(case: dict) -> pd.DataFrame:
    options = dict(run_cols=case.get("recsql_run_cols", ["model"]), score_col=case.get("recsql_score_col", "score"),
                   rank_col=case.get("recsql_rank_col"), threshold=case.get("recsql_threshold"),
                   population=case.get("recsql_population"),
                   duplicates=case.get("recsql_duplicates", "error"),
                   ties=case.get("recsql_ties"), convention=case.get("recsql_convention", "recsql"),
                   relevance_col=case.get("recsql_relevance_col", "relevance"))
    for role in ("interactions", "items", "catalog", "baseline", "item_features"):
        if case.get(f"recsql_{role}"):
            options[role] = _seed(case[f"recsql_{role}"])
    result = recsql.evaluate(_seed(case.get("recsql_recs", "recs")), _seed(case.get("recsql_truth", "truth")),
                             case["recsql_metrics"], **options)
    frame = result.per_user if case.get("recsql_output") == "per_user" else result.summary
    if case.get("recsql_column_names") == "as_asked":
        return frame
    return frame.rename(columns={m.column: output_name(m.column) for m in result.metrics})


def _case_models(project: Path, count: int) -> list[str]:
    """Models ``evaluate_from_var_case_<i>``: the var model with its options read from entry i of
    var('recsql_cases') instead of from one var each. All the cases then go in one ``--vars``, which
    dbt parses once: each change of ``--vars`` parses the whole project again (the package's
    macros: about 12 s a call), an unchanged one reuses that parse."""
    model = project / "models" / "evaluate" / f"{VAR_MODEL}.sql"
    text = model.read_text()
    names = []
    for i in range(count):
        names.append(f"{VAR_MODEL}_case_{i}")
        case = f"{{% set cases = var('recsql_cases', []) %}}{{% set case = cases[{i}] if cases | length > {i} else {{}} %}}\n"
        body = text.replace("var('recsql_", "case.get('recsql_")
        assert "var('" not in body and 'var("' not in body, f"{model.name} reads a var its case copies would not take from the case"
        model.with_name(f"{names[-1]}.sql").write_text(case + body)
    return names


def _evaluate_from_vars(project: Path, cases: list[dict] | None = None, failures: bool = True) -> None:
    """Every case's numbers equal recsql.evaluate's: the first through the var model itself (each
    option its own var), every case through a model reading it from var('recsql_cases')
    (:func:`_case_models`). ``failures``: bad metric strings fail `dbt compile` clearly (the
    messages come from the package's adapter-independent parser: checked on one adapter)."""
    cases = _var_cases() if cases is None else cases
    models = [(VAR_MODEL, cases[0], cases[0])]
    models += [(name, case, {"recsql_cases": cases}) for name, case in zip(_case_models(project, len(cases)), cases)]
    for model, case, variables in models:
        spec = ModelSpec(VAR_MODEL, case["recsql_metrics"], output=case.get("recsql_output", "summary"),
                         options={"run_cols": case.get("recsql_run_cols", ["model"])})
        expected = _expected_from_vars(case)
        if case.get("recsql_column_names") == "as_asked":
            expected = expected.rename(columns=str.lower)
        _same(_shown(project, model, variables), expected, spec)
    if not failures:
        return
    for metrics, message in ((["ndgc@10"], "unknown metric 'ndgc'"),
                             (["ndcg(gain=cubic)@10"], "option gain=cubic is not valid; choose one of linear, exponential, binary"),
                             (["rbp(p=1.5)@10"], "option p=1.5 must lie in (0, 1)"),
                             (["precision"], "metric 'precision' needs a cutoff"),
                             (["diversity(by=features)@5"], "needs item feature vectors: pass item_features= with rows"),
                             (["novelty@5"], "metric 'novelty@5' needs training interactions: pass interactions=")):
        failed = _dbt(project, "compile", "--select", VAR_MODEL, "--vars", json.dumps({"recsql_metrics": metrics}),
                      "--target-path", str(project.parent / "target"), check=False)
        assert failed.returncode != 0 and message in failed.stdout, (metrics, failed.stdout[-2000:])


def test_dbt_spark_session(tmp_path):
    """dbt-spark in session mode (pyspark in dbt's environment): a small fixture, as Spark seeds slowly.
    The seeds have no empty cells (dbt-spark would store one as the string 'None'). The beyond-accuracy
    model seeds the side inputs, which a var() case then reads with every served metric that reads one
    (diversity by the items' categories and by feature vectors, the money metrics, novelty, unexpectedness,
    serendipity...)."""
    models = ["summary_no_run_keys", "summary_one_run_key", "beyond_accuracy_per_user"]
    project = _build_and_compare(tmp_path, {"type": "spark", "method": "session", "host": "NA", "schema": "recsql_it",
                                            "threads": 1}, models)
    cases = _var_cases()
    side = dict(recsql_metrics=_served_variants(3, side=True), recsql_run_cols=["model"], recsql_output="per_user",
                recsql_interactions="interactions", recsql_items="items", recsql_baseline="baseline",
                recsql_item_features="item_features")
    _evaluate_from_vars(project, [cases[0], cases[2], cases[3], side], failures=False)


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


@pytest.mark.parametrize("name", sorted(OFFLINE_PROFILES))
def test_dbt_compile_offline(tmp_path, name):
    """`dbt compile` with no warehouse (no relation cache, no introspection; credentials that reach
    nothing) of recsql.evaluate with every served metric from var() and of every generated model:
    the compiled SQL parses in the adapter's dialect and has no final ORDER BY."""
    import sqlglot
    from recsql.dbt.adapters import adapter
    from recsql.dialects import dialect
    project = _project(tmp_path, {**OFFLINE_PROFILES[name], "threads": 1})
    models = [VAR_MODEL, *[s.name for s in read_specs(PACKAGE)]]
    target = tmp_path / "target"
    _dbt(project, "compile", "--no-populate-cache", "--no-introspect", "--indirect-selection", "empty",
         "--select", *models, "--target-path", str(target),
         "--vars", json.dumps({"recsql_metrics": _served_variants(None, side=True), "recsql_run_cols": ["model", "variant"],
                               "recsql_interactions": "interactions", "recsql_items": "items", "recsql_catalog": "catalog", "recsql_baseline": "baseline",
                               "recsql_item_features": "item_features",
                               # named: found from the warehouse's column types otherwise (a connection)
                               "recsql_text_ids": ["model", "item_id"]}))
    for model in models:
        (path,) = target.glob(f"compiled/*/models/**/{model}.sql")
        tree = sqlglot.parse_one(path.read_text(), read=dialect(adapter(name).dialect).sqlglot)
        assert tree.args.get("order") is None, (name, model)
