"""A new user's first minutes: the wheel installed without any extra into a fresh virtual
environment (no system packages), then the README's Quickstart command, whose table must be the
README's; `recsql --version` and `recsql metrics`; compare; the README's report (its figures need no
extra); and the one-line error of the subcommand whose dependency is an extra (dbt: PyYAML), and of
MLflow logging without the mlflow extra."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.longest


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """The bin/ folder of a fresh venv holding the wheel built from this checkout, without extras."""
    where = tmp_path_factory.mktemp("fresh")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation",
                            "-w", str(where)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(where.glob("recsql_eval-*.whl"))
    venv.create(where / "venv", with_pip=True, system_site_packages=False)
    bin_ = where / "venv" / "bin"
    installed = subprocess.run([str(bin_ / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                               capture_output=True, text=True, timeout=1200)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return bin_


def run(bin_: Path, *args: str) -> subprocess.CompletedProcess:
    """``recsql ARGS`` of the fresh venv, from the checkout (the README's paths are relative to it),
    with nothing of this interpreter's environment that could reach other packages."""
    env = {"PATH": f"{bin_}{os.pathsep}/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    return subprocess.run([str(bin_ / "recsql"), *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=600)


def quickstart() -> tuple[list[str], list[str]]:
    """The README Quickstart's `recsql evaluate` command (its arguments) and its printed table's lines."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Quickstart"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    command = next(line for line in section.splitlines() if "recsql evaluate" in line)
    args = shlex.split(command[command.index("recsql evaluate"):])[1:]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block, "the Quickstart shows no ```text block"
    table = [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("recsql:")]
    return args, table


def test_the_wheel_installs_without_extras_and_has_none_of_them(fresh):
    probe = ("import importlib.util as u; print(sorted(m for m in ('matplotlib', 'yaml', 'polars', 'mlflow') "
             "if u.find_spec(m)))")
    ran = subprocess.run([str(fresh / "python"), "-c", probe], capture_output=True, text=True, timeout=60, cwd=fresh)
    assert ran.stdout.strip() == "[]", ran.stderr  # the install under test is the one without extras


def test_version_and_metrics(fresh):
    version = run(fresh, "--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"recsql \d+\.\d+\.\d+\S*", version.stdout.strip())
    listed = run(fresh, "metrics")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"(?m)^ndcg\[@k\]", listed.stdout) and "trec_eval" in listed.stdout
    one = run(fresh, "metrics", "ndcg")
    assert one.returncode == 0 and one.stdout.startswith("ndcg") and "recall" not in one.stdout


def test_readme_quickstart_prints_the_readme_table(fresh):
    args, table = quickstart()
    ran = run(fresh, *args)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == table
    assert re.match(r"recsql: \d+ metric\(s\), ", ran.stderr)


def test_compare_runs_without_extras(fresh):
    ran = run(fresh, "compare", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet", "--run-col", "model",
              "-m", "ndcg@10", "-m", "recall@20", "--baseline", "popular", "--resamples", "200")
    assert ran.returncode == 0, ran.stderr
    rows = [line for line in ran.stdout.splitlines() if line.lstrip().startswith("personal  popular")]
    assert len(rows) == 2 and all(row.split()[-1] == "lower" for row in rows), ran.stdout


def test_report_runs_without_extras(fresh, tmp_path):
    out = tmp_path / "report.html"
    ran = run(fresh, "report", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet", "--run-col", "model",
              "-m", "ndcg@10", "-m", "coverage@10", "--baseline", "popular", "--resamples", "200", "--quiet",
              "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    page = out.read_text(encoding="utf-8")
    assert all(f'data-figure="{figure}"' in page for figure in ("forest", "wins", "curves", "distributions"))


def test_a_subcommand_needing_an_extra_says_which_in_one_line(fresh):
    ran = run(fresh, "dbt", "generate", "--project", "dbt/integration_tests")
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        "recsql: error: recsql dbt needs PyYAML, which the dbt extra installs: pip install 'recsql-eval[dbt]'"]
    assert not (ROOT / "dbt" / "integration_tests" / "models" / "recsql").exists()


def test_mlflow_logging_without_the_extra_names_it(fresh):
    probe = ("import pandas as pd, recsql\n"
             "e = recsql.evaluate(pd.DataFrame({'user_id': [1], 'item_id': [1], 'score': [1.0]}), "
             "pd.DataFrame({'user_id': [1], 'item_id': [1]}), ['ndcg@10'])\n"
             "try:\n    recsql.log_evaluation(e)\nexcept ModuleNotFoundError as err:\n    print(err)")
    ran = subprocess.run([str(fresh / "python"), "-c", probe], capture_output=True, text=True, timeout=120, cwd=fresh)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == ("log_evaluation needs mlflow-skinny, which the mlflow extra installs: "
                                  "pip install 'recsql-eval[mlflow]'")
