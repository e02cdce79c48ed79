"""The lowest versions recsql declares (pyproject.toml) of DuckDB, sqlglot, pandas, pyarrow, NumPy and SciPy run
recsql together and give the numbers of the versions installed here. DuckDB: text ids from pandas frames
(pandas 3's ``str`` columns, which DuckDB before 1.4.4 cannot read), the heaps of a rank column (LAMBDA
syntax, DuckDB 1.3) and the greedy ideal list from per-user lists (``LIST_REDUCE``,
sql/_intent_ideal.duckdb.sql). sqlglot: every statement is composed as its trees (a statement's CTEs are its
``with_`` argument, sqlglot 28 on), a long one split into steps (the greedy ideal list at @40 on SQLite) and
SQL rendered for another engine, here SQLite's, run by sqlite3 itself (sqlglot 29 wrote map@3's
``LEAST(3, MAX(n_rel))`` there as ``3``). pandas 2.0 with NumPy 1 and pyarrow 14: the frames recsql reads and
returns. SciPy 1.10: compare's paired tests. A venv that sees this environment's packages (recsql among them) gets those versions of its own; the
same case runs here and there."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.longest
PACKAGES = ("duckdb", "sqlglot", "pandas", "pyarrow", "numpy", "scipy")

CASE = """
import json, sqlite3
import duckdb, numpy, pandas as pd, pyarrow, recsql, scipy, sqlglot
recs = pd.DataFrame({"user_id": ["u1"] * 4 + ["u2"] * 3, "item_id": ["i1", "i2", "i3", "i4", "i1", "i5", "i6"],
                     "score": [0.9, 0.8, 0.8, 0.6, 0.5, 0.4, 0.3], "rank": [1, 2, 3, 4, 1, 2, 3]})
truth = pd.DataFrame({"user_id": ["u1", "u1", "u2"], "item_id": ["i1", "i3", "i5"], "relevance": [2.0, 1.0, 1.0]})
intents = pd.DataFrame({"user_id": ["u1"] * 6 + ["u2"] * 2, "item_id": ["i1", "i1", "i2", "i2", "i3", "i3", "i5", "i6"],
                        "intent": list("abcdacab"), "relevance": [1.0] * 8})
items = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "i5", "i6"], "category": list("aabbca")})
asked = ["ndcg@3", "map@3", "alpha_ndcg@3", "nerr_ia@3", "nnrbp@3", "diversity@3", "kendall@3"]
scored = recsql.evaluate(recs, truth, asked, intents=intents, items=items).per_user
ranked = recsql.evaluate(recs, truth, asked, intents=intents, items=items, rank_col="rank", score_col=None).per_user
con = sqlite3.connect(":memory:")
for name, frame in (("recs", recs.drop(columns="rank")), ("truth", truth), ("intents", intents), ("items", items)):
    frame.to_sql(name, con, index=False)
stepped = recsql.evaluate("recs", "truth", ["alpha_ndcg@40", "nnrbp@40"], intents="intents", con=con).per_user
sql = recsql.to_sql("recs", "truth", ["ndcg@3", "map@3", "diversity@3"], dialect="sqlite", output="per_user",
                    items="items")
rendered = pd.read_sql(sql, con).sort_values("user_id")
runs = pd.concat([recs.drop(columns="rank").assign(model="a"), recs.drop(columns="rank").assign(model="b", score=-recs["score"])])
tests = recsql.compare(runs, truth, ["ndcg@3", "map@3"], run_cols="model", resamples=50, seed=3).tests
tests = tests.select_dtypes("number")
print(json.dumps({"duckdb": duckdb.__version__, "sqlglot": sqlglot.__version__, "pandas": pd.__version__,
                  "pyarrow": pyarrow.__version__, "numpy": numpy.__version__, "scipy": scipy.__version__,
                  "recsql": recsql.__file__, "scored": scored.to_dict("list"), "ranked": ranked.to_dict("list"),
                  "stepped": stepped.to_dict("list"), "rendered": rendered.to_dict("list"),
                  "compared": tests.to_dict("list")}))
"""


def _floors() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    floors = {}
    for package in PACKAGES:
        found = re.search(rf'"{package}>=([0-9.]+)"', text)
        assert found, f"pyproject.toml declares no lowest {package}"
        floors[package] = found.group(1)
    return floors


def _run(python: Path | str, where: Path) -> dict:
    ran = subprocess.run([str(python), "-c", CASE], capture_output=True, text=True, timeout=600, cwd=where)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def _same(version: str, floor: str) -> bool:
    """Whether installed ``version`` is the declared ``floor`` (``28`` stands for 28.0.0)."""
    parts = [int(p) for p in re.findall(r"\d+", version)[:3]]
    wanted = [int(p) for p in floor.split(".")]
    return parts[:len(wanted)] == wanted and all(p == 0 for p in parts[len(wanted):])


def test_the_lowest_declared_versions_give_the_same_numbers(tmp_path):
    floors = _floors()
    venv.create(tmp_path / "venv", with_pip=True, system_site_packages=True)
    python = tmp_path / "venv" / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                                *(f"{package}=={floor}" for package, floor in floors.items())],
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    there, here = _run(python, tmp_path), _run(sys.executable, tmp_path)
    for package, floor in floors.items():  # here may hold the floor too: then the same version twice
        assert _same(there[package], floor), (package, there[package], floor)
    assert there["recsql"] == here["recsql"], (there["recsql"], here["recsql"])
    # u1's list (i1 {a, b}, then i2 {c, d}, i3 {a, c}) beats ndeval's greedy ideal (i3 first of three equal gains)
    assert here["scored"]["user_id"] == ["u1", "u2"] and here["scored"]["alpha_ndcg@3"][0] > 1
    assert here["stepped"]["user_id"] == ["u1", "u2"] and here["rendered"]["user_id"] == ["u1", "u2"]
    assert here["rendered"]["diversity@3"] == pytest.approx([2 / 3, 2 / 3], rel=1e-12)  # a, a, b and c, a, -
    assert len(here["compared"]["p_t"]) == 2, here["compared"]  # b against a, on ndcg@3 and map@3
    for form in ("scored", "ranked", "stepped", "rendered", "compared"):
        assert there[form].keys() == here[form].keys()
        for column, values in here[form].items():
            assert there[form][column] == pytest.approx(values, rel=1e-12, nan_ok=True), (form, column)
