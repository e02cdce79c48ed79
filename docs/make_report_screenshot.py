"""Regenerate docs/report.html and docs/report.png: a real report of the fixture data, and a
screenshot of its top taken by headless Chromium.

    python docs/make_report_screenshot.py

runs, from the repository's root, the equivalent of

    recsql report fixtures/data/recs.parquet fixtures/data/truth.parquet -m ndcg@10 -m recall@20 \\
        -m hit_rate@5 -m coverage@10 --run-col model --baseline popular \\
        --segments docs/users.parquet --segment-col cohort \\
        --title "recsql report: fixtures/data, popular vs personal" --out docs/report.html --quiet
    chromium --headless=new --disable-gpu --no-sandbox --hide-scrollbars --window-size=1280,1900 \\
        --screenshot=docs/report.png file://$PWD/docs/report.html

where docs/users.parquet gives every user of recs and truth a ``cohort`` (users with ≤ 3, 4–6, ≥ 7
relevant items: light, medium, heavy); it is written for the run and removed afterwards.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def write_page(root: Path) -> int:
    """Write ``root``/docs/report.html, run from ``root`` (which holds ``fixtures/data``), as the command above; the
    CLI's exit status. tests/test_docs.py writes it into a temporary root and compares it with docs/report.html."""
    from recsql.cli import main as recsql

    data = root / "fixtures" / "data"
    truth = pd.read_parquet(data / "truth.parquet")
    users = sorted(set(truth["user_id"]) | set(pd.read_parquet(data / "recs.parquet")["user_id"]))
    relevant = truth.assign(hit=truth["relevance"] >= 1).groupby("user_id")["hit"].sum().reindex(users, fill_value=0)
    cohort = pd.DataFrame({"user_id": relevant.index,
                           "cohort": np.where(relevant <= 3, "light", np.where(relevant <= 6, "medium", "heavy"))})
    segments = root / "docs" / "users.parquet"  # relative paths on the page: run from the root
    cohort.to_parquet(segments, index=False)
    before = Path.cwd()
    os.chdir(root)
    try:
        return recsql(["report", "fixtures/data/recs.parquet", "fixtures/data/truth.parquet",
                       "-m", "ndcg@10", "-m", "recall@20", "-m", "hit_rate@5", "-m", "coverage@10",
                       "--run-col", "model", "--baseline", "popular", "--segments", "docs/users.parquet",
                       "--segment-col", "cohort", "--title", "recsql report: fixtures/data, popular vs personal",
                       "--out", "docs/report.html", "--quiet"])
    finally:
        os.chdir(before)
        segments.unlink()


def main() -> int:
    sys.path.insert(0, str(REPO))
    status = write_page(REPO)
    if status:
        return status
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        print("docs/make_report_screenshot.py: install chromium to take the screenshot", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless=new", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                        f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
                        "--window-size=1280,1900", f"--screenshot={DOCS / 'report.png'}",
                        (DOCS / "report.html").as_uri()], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=120)
    print(f"wrote {DOCS / 'report.html'} and {DOCS / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
