"""The wheel ships every SQL template inside the package, and the installed package finds them."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_carries_and_loads_every_template(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next(tmp_path.glob("recsql_eval-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in (ROOT / "sql").glob("*.sql"):
        assert f"recsql/sql/{template.name}" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("import recsql, recsql.templates as t; "
             "assert str(t.sql_dir()).startswith(%r), t.sql_dir(); "
             "import pandas as pd; "
             "r = recsql.evaluate(pd.DataFrame({'user_id':[1],'item_id':[1],'score':[1.0]}), "
             "pd.DataFrame({'user_id':[1],'item_id':[1]}), sorted(n + ('' if s.k_rule == 'none' else '@3') "
             "for n, s in recsql.registry().items() if not s.needs)); print(len(r.summary.columns))") % str(site)
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert int(ran.stdout.strip()) == 3 + len([n for n, s in __import__("recsql").registry().items() if not s.needs])
