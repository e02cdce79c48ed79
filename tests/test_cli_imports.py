"""What a fresh ``recsql`` process imports: ``recsql --version`` and ``recsql metrics`` start without
the dataframe, the engines, the SQL renderer or the dbt code (their cold start is what a user waits
for on every call), and the commands that compare runs do not import scipy's statistics or optimizer
modules before a number needs them (scipy.stats alone is half a second of a cold start). Checked by
the modules present in ``sys.modules`` after the console command's own entry point ran, in a new
interpreter: no timing. The times themselves are measured by benchmarks/cold_start.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Each of these takes tens to hundreds of milliseconds to import cold, and none is needed to print
# the version or the metrics' definitions.
HEAVY = ("pandas", "numpy", "pyarrow", "duckdb", "sqlglot", "scipy", "matplotlib", "yaml", "jinja2", "mlflow",
         "recsql.dbt", "recsql.api", "recsql.compose", "recsql.engines", "recsql.report")


def probed(code: str) -> object:
    """What ``code``, run in a fresh interpreter from the repository's root, prints as JSON on the last line of
    stderr (the commands it runs print on stdout)."""
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stderr.strip().splitlines()[-1])


def loaded_after(argv: list[str], modules: tuple[str, ...]) -> list[str]:
    """The ``modules`` in ``sys.modules`` after ``recsql argv`` ran through the console command's entry
    point (recsql.entry:main, as pyproject.toml's [project.scripts] names it), in a fresh interpreter."""
    return probed(("import json, sys\nfrom recsql.entry import main\nsys.argv = ['recsql', *%r]\ntry:\n    main()\n"
                   "except SystemExit:\n    pass\nsys.stdout.flush()\n"
                   "print(json.dumps(sorted(m for m in %r if m in sys.modules)), file=sys.stderr)") % (argv, modules))


def test_the_console_command_is_the_entry_point_probed():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'recsql = "recsql.entry:main"' in pyproject


@pytest.mark.parametrize("argv", [["--version"], ["metrics"], ["metrics", "ndcg"], ["--help"]])
def test_version_and_metrics_import_nothing_heavy(argv):
    assert loaded_after(argv, HEAVY) == []


@pytest.mark.parametrize("command", ["compare", "report"])
def test_the_comparing_commands_import_no_scipy_statistics_before_a_number_needs_them(command):
    """``recsql compare --help`` and ``recsql report --help`` import the command's code (the parser
    is built by it) and stop: scipy.stats and scipy.optimize are imported only where a number is
    computed (recsql.power_simulation, recsql.decisions), so every evaluation and comparison starts
    without them."""
    loaded = loaded_after([command, "--help"], ("recsql.comparison", "scipy.stats", "scipy.optimize",
                                                "scipy.integrate"))
    assert loaded == ["recsql.comparison"]  # the command's code was imported, and nothing of scipy's above


def test_an_evaluation_imports_no_scipy():
    """``recsql evaluate`` computes no test or power: scipy is not imported at all (the results'
    classes that compare runs import it where a number needs it)."""
    argv = ["evaluate", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet", "-m", "ndcg@10", "--run-col",
            "model", "--format", "json"]
    assert loaded_after(argv, ("recsql.api", "scipy", "matplotlib")) == ["recsql.api"]


def test_printing_the_sql_imports_no_dataframe_and_no_engine():
    """``recsql sql`` composes and renders, and runs nothing: it starts without pandas, numpy, pyarrow
    and DuckDB (more than half of what evaluate imports), so printing a query takes about half the
    time an evaluation's imports do."""
    argv = ["sql", "-m", "ndcg@10", "-m", "coverage@10", "--run-col", "model", "--dialect", "postgres"]
    loaded = loaded_after(argv, ("recsql.sql_text", "recsql.api", "pandas", "numpy", "pyarrow", "duckdb", "scipy"))
    assert loaded == ["recsql.sql_text"]  # the command's code ran, and nothing heavy


def test_composing_a_comparison_and_generating_dbt_models_import_no_dataframe(tmp_path):
    """``to_sql(compare=...)`` (the statistics statement) and ``recsql dbt generate`` compose and render
    only: neither imports pandas, pyarrow or DuckDB (nor numpy, for a model with no gate and no custom
    discount)."""
    heavy = ("pandas", "numpy", "pyarrow", "duckdb", "scipy", "recsql.api")
    probe = ("import json, sys, recsql\n"
             "sql = recsql.to_sql('recs', 'truth', ['ndcg@10', 'coverage@10'], run_cols=['model'], "
             "compare={'baseline': 'popular'})\n"
             "assert 'cmp_' in sql\n"
             "print(json.dumps(sorted(m for m in %r if m in sys.modules)), file=sys.stderr)") % (heavy,)
    assert probed(probe) == []
    project = tmp_path / "project"
    project.mkdir()
    (project / "dbt_project.yml").write_text("name: p\nversion: '1'\nconfig-version: 2\nprofile: p\n")
    (project / "recsql.yml").write_text("adapters: [duckdb, postgres]\nevaluations:\n"
                                        "  - {name: quality, recs: recs, truth: truth, metrics: [ndcg@10, recall@20]}\n")
    assert loaded_after(["dbt", "generate", "--project", str(project)], heavy) == []
    assert (project / "models" / "recsql" / "quality.sql").is_file()


def test_an_evaluation_printed_as_a_table_imports_no_pandas():
    """``recsql evaluate`` with its default table finishes its rows and prints them from Arrow tables: pandas
    (a third of a second cold) is not imported; asked for csv or json, which pandas writes, it is. The table
    printed is pandas' text either way (tests/test_table_text.py)."""
    argv = ["evaluate", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet", "-m", "ndcg@10", "-m", "map@10",
            "--run-col", "model"]
    assert loaded_after(argv, ("recsql.api", "pandas")) == ["recsql.api"]
    assert loaded_after([*argv, "--format", "csv"], ("recsql.api", "pandas")) == ["pandas", "recsql.api"]


def test_a_comparison_printed_as_a_table_imports_no_pandas():
    """``recsql compare`` prints its runs and tests from the statistics' rows: pandas is imported only for what
    pandas writes (csv, json, --wide) or computes (a decision table, a gate)."""
    argv = ["compare", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet", "-m", "ndcg@10", "-m",
            "recall@20", "--run-col", "model", "--baseline", "popular"]
    assert loaded_after(argv, ("recsql.comparison", "pandas")) == ["recsql.comparison"]
    assert loaded_after([*argv, "--wide"], ("recsql.comparison", "pandas")) == ["pandas", "recsql.comparison"]


def test_a_report_imports_no_scipy_solver_or_integrator(tmp_path):
    """``recsql report`` shows each pair's detectable difference, a root of the t-test's power found by bisection
    (recsql.decisions): it imports neither scipy.optimize nor scipy.integrate (about 0.5 s between them, cold)
    nor scipy.stats, only scipy's special functions."""
    argv = ["report", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet", "-m", "ndcg@10", "-m", "recall@20",
            "--run-col", "model", "--baseline", "popular", "--out", str(tmp_path / "report.html")]
    loaded = loaded_after(argv, ("scipy.special", "scipy.optimize", "scipy.integrate", "scipy.stats"))
    assert loaded == ["scipy.special"]
    assert "What these users could detect (paired t-test" in (tmp_path / "report.html").read_text(encoding="utf-8")
