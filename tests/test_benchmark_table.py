"""The performance tables of the documentation (docs/performance.md: the ranking benchmark's and the off-policy
one's) are generated from the committed benchmark results (``benchmarks/readme_table.py``), never copied by hand:
a new results file without ``python benchmarks/readme_table.py --write`` fails here."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import readme_table  # noqa: E402


def test_the_performance_page_holds_the_table_generated_from_the_results():
    assert readme_table.PAGE == ROOT / "docs" / "performance.md"
    page = readme_table.PAGE.read_text(encoding="utf-8")
    assert page.count(readme_table.BEGIN) == 1 and page.count(readme_table.END) == 1
    assert page.count(readme_table.LOGS_BEGIN) == 1 and page.count(readme_table.LOGS_END) == 1
    assert readme_table.replace_in(page) == page, "run: python benchmarks/readme_table.py --write"


def test_a_cell_says_how_a_tool_failed_and_which_tool_did_not_run():
    assert readme_table._cell("floor", None) == "—"
    assert readme_table._cell("recsql", {"status": "error: exit 1: DuckDB ran out of memory (…)"}) == "out of memory"
    assert readme_table._cell("ranx", {"status": "killed: over the memory limit"}) == "killed"
    assert readme_table._cell("recsql", {"status": "ok", "wall_s": 0.18052, "peak_rss_mb": 232.6}) == "**0.181 s, 233 MB**"
    assert readme_table._cell("ranx", {"status": "ok", "wall_s": 1.9, "peak_rss_mb": 859.0}) == "1.90 s, 859 MB"
