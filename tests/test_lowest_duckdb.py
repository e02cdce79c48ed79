"""The lowest DuckDB recsql declares (pyproject.toml) runs recsql's DuckDB statements with this environment's
pandas: text ids from pandas frames (pandas 3's ``str`` columns, which DuckDB before 1.4.4 cannot read), the
heaps of a rank column (LAMBDA syntax, DuckDB 1.3) and the greedy ideal list from per-user lists
(``LIST_REDUCE``, sql/_intent_ideal.duckdb.sql), with the numbers of the DuckDB installed here. A venv that
sees this environment's packages (recsql and pandas among them) gets that DuckDB version of its own; the
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

CASE = """
import json
import duckdb, pandas as pd, recsql
recs = pd.DataFrame({"user_id": ["u1"] * 4 + ["u2"] * 3, "item_id": ["i1", "i2", "i3", "i4", "i1", "i5", "i6"],
                     "score": [0.9, 0.8, 0.8, 0.6, 0.5, 0.4, 0.3], "rank": [1, 2, 3, 4, 1, 2, 3]})
truth = pd.DataFrame({"user_id": ["u1", "u1", "u2"], "item_id": ["i1", "i3", "i5"], "relevance": [2.0, 1.0, 1.0]})
intents = pd.DataFrame({"user_id": ["u1"] * 6 + ["u2"] * 2, "item_id": ["i1", "i1", "i2", "i2", "i3", "i3", "i5", "i6"],
                        "intent": list("abcdacab"), "relevance": [1.0] * 8})
asked = ["ndcg@3", "map@3", "alpha_ndcg@3", "nerr_ia@3", "nnrbp@3"]
scored = recsql.evaluate(recs, truth, asked, intents=intents).per_user
ranked = recsql.evaluate(recs, truth, asked, intents=intents, rank_col="rank", score_col=None).per_user
print(json.dumps({"duckdb": duckdb.__version__, "pandas": pd.__version__, "recsql": recsql.__file__,
                  "scored": scored.to_dict("list"), "ranked": ranked.to_dict("list")}))
"""


def _floor() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'"duckdb>=([0-9.]+)"', text)
    assert found, "pyproject.toml declares no lowest duckdb"
    return found.group(1)


def _run(python: Path | str, where: Path) -> dict:
    ran = subprocess.run([str(python), "-c", CASE], capture_output=True, text=True, timeout=600, cwd=where)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def test_the_lowest_declared_duckdb_gives_the_same_numbers(tmp_path):
    floor = _floor()
    venv.create(tmp_path / "venv", with_pip=True, system_site_packages=True)
    python = tmp_path / "venv" / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"duckdb=={floor}"],
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    there, here = _run(python, tmp_path), _run(sys.executable, tmp_path)
    assert there["duckdb"] == floor, (there["duckdb"], floor)  # here may be the floor too: then the same version twice
    assert there["recsql"] == here["recsql"] and there["pandas"] == here["pandas"], (there, here)
    # u1's list (i1 {a, b}, then i2 {c, d}, i3 {a, c}) beats ndeval's greedy ideal (i3 first of three equal gains)
    assert here["scored"]["user_id"] == ["u1", "u2"] and here["scored"]["alpha_ndcg@3"][0] > 1
    for form in ("scored", "ranked"):
        assert there[form].keys() == here[form].keys()
        for column, values in here[form].items():
            assert there[form][column] == pytest.approx(values, rel=1e-12, nan_ok=True), (form, column)
