"""The HTML report (`recsql report`, Evaluation.report, Comparison.report) and its tables.

The page is opened in a real headless Chromium (tests/support/browser.py; a missing Chromium fails, never
skips) with every host name unresolvable: it must make no request but itself, raise no script error
and draw a non-blank page. Every plotted number is read back from the page's JSON block and compared
with independent calls of recsql.evaluate and recsql.compare; the Markdown and LaTeX markers with
the significance the test derives itself from compare's p-values.
"""
from __future__ import annotations

import hashlib
import html
import io
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support import browser
import recsql
from recsql.cli import main
from recsql.families import FAMILIES
from recsql.metrics import registry
from recsql.report import build_report

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "fixtures" / "data"
RECS, TRUTH = str(DATA / "recs.parquet"), str(DATA / "truth.parquet")
METRICS = ["ndcg@10", "recall@20", "hit_rate@5", "coverage@10"]
RESAMPLES = 200


def cohorts() -> pd.DataFrame:
    """Each user's cohort by its number of relevant items (light ≤ 3, medium 4–6, heavy ≥ 7), for
    every user of truth or recs (a global metric's population is every user with recommendations)."""
    truth = pd.read_parquet(TRUTH)
    users = sorted(set(truth["user_id"]) | set(pd.read_parquet(RECS)["user_id"]))
    counts = truth.assign(hit=truth["relevance"] >= 1).groupby("user_id")["hit"].sum().reindex(users, fill_value=0)
    cohort = np.where(counts <= 3, "light", np.where(counts <= 6, "medium", "heavy"))
    return pd.DataFrame({"user_id": counts.index, "cohort": cohort})


def plotted(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="recsql-data">(.*?)</script>', page, re.S)
    assert found, "the page carries no data block"
    return json.loads(found.group(1).replace("<\\/", "</"))


def non_blank(png: bytes) -> tuple[float, float]:
    """(standard deviation of the grey levels, share of pixels not of the most common colour)."""
    from PIL import Image
    grey = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=float)
    values, counts = np.unique(grey, return_counts=True)
    return float(grey.std()), 1 - counts.max() / grey.size


@pytest.fixture(scope="module")
def segments_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("segments") / "users.parquet"
    cohorts().to_parquet(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def report(tmp_path_factory, segments_file):
    """A report of the fixture data through the Python API: baseline popular, segments by cohort."""
    built = build_report(RECS, TRUTH, METRICS, run_cols="model", baseline="popular", segments=segments_file,
                         resamples=RESAMPLES, title="fixtures: popular vs personal")
    path = tmp_path_factory.mktemp("report") / "report.html"
    built.write(str(path))
    return built, path


def test_the_page_loads_in_a_real_browser_without_network_or_errors(report):
    _, path = report
    page = browser.load(path.as_uri())
    assert page.requests == [path.as_uri()], page.requests  # the page itself and nothing else
    assert page.failed == [] and page.exceptions == [] and page.errors == []
    spread, drawn = non_blank(page.png)
    assert page.height > 2000 and spread > 20 and drawn > 0.05, (page.height, spread, drawn)


def test_the_browser_check_sees_network_requests_and_script_errors(tmp_path):
    """The detector itself: a page that loads an image from the network and throws is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><p>x</p><img src="http://example.com/a.png">'
                   '<script>console.error("boom"); throw new Error("bad")</script></body></html>')
    page = browser.load(bad.as_uri())
    assert "http://example.com/a.png" in page.requests
    assert any("ERR_NAME_NOT_RESOLVED" in f for f in page.failed)
    assert any("Error: bad" in e for e in page.exceptions)
    assert any("boom" in e for e in page.errors)


def test_every_plotted_number_is_evaluates_and_compares(report, segments_file):
    built, path = report
    data = plotted(path.read_text(encoding="utf-8"))
    # the summary and the curves: every cutoff of each family, from one independent evaluate call
    cutoffs = [f"ndcg@{k}" for k in range(1, 11)] + [f"recall@{k}" for k in range(1, 21)] + \
              [f"hit_rate@{k}" for k in range(1, 6)] + [f"coverage@{k}" for k in range(1, 11)]
    evaluation = recsql.evaluate(RECS, TRUTH, cutoffs, run_cols="model")
    expected = evaluation.summary.set_index("model")
    for row in data["summary"]:
        for metric in METRICS:
            assert row[metric] == pytest.approx(expected.loc[row["run"], metric], abs=1e-12)
    assert {(r["family"], r["k"]) for r in data["curves"]} == {(c.split("@")[0], int(c.split("@")[1])) for c in cutoffs}
    assert len(data["curves"]) == 2 * len(cutoffs)
    for row in data["curves"]:
        assert row["value"] == pytest.approx(expected.loc[row["run"], f"{row['family']}@{row['k']}"], abs=1e-12)
    # per-user distributions: the histogram of evaluate's per-user values on the page's bin edges
    per_user = evaluation.per_user
    drawn = {(d["metric"], d["run"]) for d in data["distributions"]}
    assert drawn == {(m, r) for m in ("ndcg@10", "recall@20", "hit_rate@5") for r in ("personal", "popular")}
    for d in data["distributions"]:
        values = per_user.loc[per_user["model"] == d["run"], d["metric"]].dropna().to_numpy(dtype=float)
        assert d["edges"][0] == 0 and d["edges"][-1] == 1  # the metric's declared range
        assert d["counts"] == np.histogram(values, bins=np.asarray(d["edges"]))[0].tolist()
        assert d["n"] == len(values) and d["mean"] == pytest.approx(expected.loc[d["run"], d["metric"]], abs=1e-12)
    # intervals and tests (forest plot, win/tie/loss, markers): an independent compare
    compared = [r["metric"] for r in data["runs"]]
    assert {"ndcg@10", "recall@20", "hit_rate@5"} <= set(compared)
    comparison = recsql.compare(RECS, TRUTH, list(dict.fromkeys(compared)), run_cols="model", baseline="popular",
                                resamples=RESAMPLES)
    _same_rows(data["runs"], comparison.runs, ["run", "metric"], ["mean", "ci_low", "ci_high", "n_users"])
    _same_rows(data["tests"], comparison.tests, ["run", "baseline", "metric"],
               ["n", "mean_diff", "ci_low", "ci_high", "p_t_adj", "wins", "ties", "losses"])
    for row in data["tests"]:
        p = row["p_t_adj"] if row["p_t_adj"] is not None else row["p_randomization_adj"]
        assert row["significant"] == (p < 0.05)
    # within segments
    segmented = recsql.compare(RECS, TRUTH, list(dict.fromkeys(r["metric"] for r in data["segment_runs"])),
                               run_cols="model", baseline="popular", resamples=RESAMPLES, segments=segments_file)
    _same_rows(data["segment_runs"], segmented.runs, ["cohort", "run", "metric"], ["mean", "ci_low", "ci_high"])
    _same_rows(data["segment_tests"], segmented.tests, ["cohort", "run", "metric"], ["mean_diff", "ci_low", "ci_high"])
    page = path.read_text(encoding="utf-8")
    for figure in ("forest", "wins", "curves", "distributions", "segments"):
        assert f'data-figure="{figure}"' in page


def _same_rows(records: list[dict], frame: pd.DataFrame, keys: list[str], values: list[str]) -> None:
    assert len(records) == len(frame)
    expected = {tuple(str(r[k]) for k in keys): r for r in frame.to_dict("records")}
    for row in records:
        want = expected[tuple(str(row[k]) for k in keys)]
        for column in values:
            if pd.isna(want[column]):
                assert row[column] is None, column
            else:
                assert row[column] == pytest.approx(float(want[column]), abs=1e-12), column


def test_the_page_is_self_contained_and_says_what_produced_it(report):
    built, path = report
    page = path.read_text(encoding="utf-8")
    # nothing to fetch: no network source, stylesheet link, import or url()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert "<link" not in page and "@import" not in page and not re.search(r"url\((?!#)", page)  # url(#id): in the page
    assert "<script" not in page.replace('<script type="application/json" id="recsql-data">', "")
    # every metric's definition and citation from its SQL header
    for metric in ("ndcg", "recall", "hit_rate", "coverage"):
        assert html.escape(registry()[metric].cite) in page and html.escape(registry()[metric].formula) in page
    # the exact SQL that ran (collapsible), versions, date, and each input file's SHA-256
    cutoffs = [f"{m.split('@')[0]}@{k}" for m in METRICS for k in range(1, int(m.split("@")[1]) + 1)]
    ran = recsql.evaluate(RECS, TRUTH, METRICS + cutoffs, run_cols="model").sql  # every cutoff in one query
    # each code block's text: the <bdi> that isolates characters outside ASCII adds none
    shown = [html.unescape(re.sub(r"</?bdi>", "", block)) for block in re.findall(r"<pre><code>(.*?)</code></pre>", page, re.S)]
    assert ran in shown
    for sql in built.data.sql.values():  # and the comparisons'
        assert sql in shown
    import duckdb
    assert f"<td>duckdb</td><td>{duckdb.__version__}</td>" in page and f"<td>recsql</td><td>{recsql.__version__}</td>" in page
    assert "Generated by recsql" in page and not re.search(r"\d\d:\d\d:\d\d", page)  # no date unless asked
    for path_ in (RECS, TRUTH):
        assert hashlib.sha256(Path(path_).read_bytes()).hexdigest() in page
    assert "holm" in page and "p &lt; 0.05 = 1 − ci" in page


def test_the_same_inputs_give_the_same_page_but_the_date():
    """The page is a function of the frames: drawn twice, byte for byte the same. Built twice from the
    inputs, only the data block may differ, by at most the last bit of a parallel sum."""
    built = [build_report(RECS, TRUTH, ["ndcg@5", "mrr@5"], run_cols="model", baseline="popular", resamples=50)
             for _ in range(2)]
    assert built[0].html == built[0].html
    pages = [b.html.splitlines() for b in built]
    assert len(pages[0]) == len(pages[1])
    different = [(a, b) for a, b in zip(*pages) if a != b]
    assert all("recsql-data" in a for a, b in different), different[:1]
    data = [plotted(b.html) for b in built]
    for one, two in zip(data[0]["summary"] + data[0]["runs"], data[1]["summary"] + data[1]["runs"]):
        assert one.keys() == two.keys()
        for key in one:
            assert one[key] == (pytest.approx(two[key], abs=1e-12) if isinstance(one[key], float) else two[key])


def test_global_metrics_compare_recomputes_get_its_intervals():
    """exposure_gini is resampled by compare over weighted lists: the page's interval is compare's own."""
    built = build_report(RECS, TRUTH, ["ndcg@5", "gini@5", "exposure_gini@5"], run_cols="model", resamples=50,
                         items=str(DATA / "items.parquet"))
    rows = {(row["run"], row["metric"]): row for row in plotted(built.html)["runs"]}
    compared = recsql.compare(RECS, TRUTH, ["exposure_gini@5"], run_cols="model", resamples=50,
                              items=str(DATA / "items.parquet")).runs
    assert len(compared) == 2
    for _, row in compared.iterrows():
        shown = rows[(row["run"], "exposure_gini@5")]
        assert (shown["mean"], shown["ci_low"], shown["ci_high"]) == pytest.approx(
            (row["mean"], row["ci_low"], row["ci_high"]), abs=1e-12)
        assert shown["ci_low"] < shown["ci_high"]
    assert {"ndcg@5", "gini@5"} <= {metric for _, metric in rows}
    assert "shown without intervals" not in built.html


def test_a_global_metric_compare_refuses_is_shown_without_intervals_with_the_reason_and_the_others_compared():
    """From logs, with truth per run: the estimator, which compare does not resample with truth per run, keeps its
    value in the summary and the reason compare gives; the metric of truth beside it gets its bootstrap interval."""
    seeds = REPO / "dbt" / "integration_tests" / "seeds"
    recs = pd.read_csv(seeds / "recs.csv")
    truth = pd.concat([pd.read_csv(seeds / "truth.csv").assign(model=m) for m in sorted(recs["model"].unique())])
    built = build_report(recs, truth, ["ndcg@5", "ips"], run_cols="model", resamples=50, logs=str(seeds / "logs.csv"))
    data = plotted(built.html)
    assert ("The global metric ips is shown without intervals or tests: compare: metric 'ips' is global (one number "
            "per run) and compare recomputes it over resampled logs, which it does not do yet with truth per run"
            ) in html.unescape(built.html)
    compared = {row["metric"] for row in data["runs"] if row.get("ci_low") is not None}
    assert compared == {"ndcg@5"}
    evaluated = recsql.evaluate(recs, truth, ["ips"], run_cols="model", logs=str(seeds / "logs.csv")).summary
    assert {row["run"]: row["ips"] for row in data["summary"]} == pytest.approx(
        dict(zip(evaluated["model"], evaluated["ips"])), abs=1e-12)


def test_the_slate_estimators_get_their_intervals():
    """From logged slates: the slate estimators, pbm_ips and the bandit estimators beside them get compare's bootstrap
    intervals (each copy of a resampled context a slate of its own: tests/test_compare_logged.py)."""
    seeds = REPO / "dbt" / "integration_tests" / "seeds"
    asked = ["ips", "snips", "slate_ips", "slate_iips", "pbm_ips"]
    built = build_report(str(seeds / "recs.csv"), None, asked, run_cols="model", resamples=50,
                         logs=str(seeds / "logs.csv"), slate_propensity_col="slate_propensity")
    data = plotted(built.html)
    compared = {row["metric"] for row in data["runs"] if row.get("ci_low") is not None}
    assert compared == set(asked) and "shown without intervals" not in built.html
    assert ("Off-policy estimators (ips, pbm_ips, slate_iips, slate_ips, snips): the estimate over the logged impressions "
            "(slates, for a slate estimator)") in html.unescape(built.html)


def test_logs_as_frames_are_fingerprinted_and_a_low_effective_sample_size_is_on_the_page():
    """Logs given as a DataFrame: hashed into the fingerprint like every input (another reward, another
    fingerprint), never listed as a setting; evaluate's warning of a run resting on one impression is
    raised and written on the page."""
    recs = pd.DataFrame({"model": ["a"] * 20 + ["b"] * 20, "user_id": list(range(20)) * 2,
                         "item_id": [1] * 20 + [2] * 20, "score": [1.0] * 40})
    logs = pd.DataFrame({"user_id": range(20), "item_id": [1] + [2] * 19, "propensity": [0.001] + [0.5] * 19,
                         "reward": [1.0] * 20})
    with pytest.warns(recsql.RecsqlWarning, match="run 'a': the effective sample size"):
        built = build_report(recs, None, ["ips"], run_cols="model", logs=logs, resamples=20)
    page = html.unescape(built.html)
    assert "evaluate warned: run 'a': the effective sample size of the importance weights (target=list) is 1" in page
    roles = {d["role"]: d for d in built.data.inputs}
    assert set(roles) == {"recs", "logs"} and roles["logs"]["what"] == "a frame of 20 rows (its columns and rows)"
    with pytest.warns(recsql.RecsqlWarning):
        other = build_report(recs, None, ["ips"], run_cols="model", logs=logs.assign(reward=0.5), resamples=20)
    assert {d["role"]: d["digest"] for d in other.data.inputs}["logs"] != roles["logs"]["digest"]
    assert {d["role"]: d["digest"] for d in other.data.inputs}["recs"] == roles["recs"]["digest"]


def test_markdown_and_latex_tables_mark_significance_as_ranx_does():
    comparison = recsql.compare(RECS, TRUTH, ["ndcg@10", "hit_rate@5"], run_cols="model", resamples=RESAMPLES)
    tests = comparison.tests  # every pair: popular − personal
    assert list(tests["run"]) == ["popular", "popular"] and list(tests["baseline"]) == ["personal", "personal"]
    better = {row["metric"] for _, row in tests.iterrows() if row["p_t_adj"] < 0.05 and row["mean_diff"] > 0}
    assert better == {"ndcg@10", "hit_rate@5"}  # the fixtures' popular run is far better
    runs = comparison.runs.set_index(["run", "metric"])
    markdown = comparison.to_markdown().splitlines()
    assert markdown[0] == "| run | ndcg@10 | hit_rate@5 |" and markdown[1] == "|:---|---:|---:|"
    personal, popular = markdown[2], markdown[3]
    assert personal.startswith("| a personal |") and "<sup>" not in personal
    for metric in ("ndcg@10", "hit_rate@5"):
        mean, low, high = (runs.loc[("popular", metric), c] for c in ("mean", "ci_low", "ci_high"))
        assert f"{mean:.4f}<sup>a</sup> [{low:.4f}, {high:.4f}]" in popular
    assert "paired t-test, holm-corrected" in markdown[-1] and "0.05" in markdown[-1]
    latex = comparison.to_latex(intervals=False)
    assert r"\begin{tabular}{lrr}" in latex and r"\toprule" in latex and r"\bottomrule" in latex
    assert r"run & ndcg@10 & hit\_rate@5 \\" in latex
    assert f"b popular & \\textbf{{{runs.loc[('popular', 'ndcg@10'), 'mean']:.4f}}}$^{{a}}$ & " in latex  # the best
    assert "a personal & " in latex and "$^{" not in latex.split("a personal")[1].split(r"\\")[0]


def test_repr_html_shows_tables_in_jupyter():
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@10"], run_cols="model")
    shown = evaluation._repr_html_()
    assert shown.startswith("<table") and "<td>popular</td>" in shown
    assert f"<td>{evaluation.summary['ndcg@10'].iloc[1]:.4f}</td>" in shown
    comparison = evaluation.compare("personal", resamples=50)
    shown = comparison._repr_html_()
    assert shown.count("<table") == 2 and "▲" in shown and "<sup>a</sup>" in shown


def test_evaluation_and_comparison_write_reports(tmp_path):
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@5", "ndcg@10", "recall@10"], run_cols="model")
    out = evaluation.report(str(tmp_path / "evaluation.html"), baseline="popular", resamples=50)
    data = plotted(Path(out).read_text(encoding="utf-8"))
    assert {(r["family"], r["k"]) for r in data["curves"]} == {("ndcg", 5), ("ndcg", 10), ("recall", 10)}
    assert {(r["run"], r["baseline"]) for r in data["tests"]} == {("personal", "popular")}
    comparison = evaluation.compare("popular", resamples=50)
    out = comparison.report(str(tmp_path / "comparison.html"), evaluation=evaluation)
    again = plotted(Path(out).read_text(encoding="utf-8"))["tests"]
    # the same tests; floating sums may differ in the last bit between two runs (docs/index.md)
    assert [{k: pytest.approx(v, rel=1e-12, abs=1e-15) if isinstance(v, float) else v for k, v in row.items()}
            for row in data["tests"]] == again
    one = pd.read_parquet(RECS).query("model == 'popular'").drop(columns="model")
    single = recsql.evaluate(one, TRUTH, ["ndcg@10"])
    page = Path(single.report(str(tmp_path / "one.html"))).read_text(encoding="utf-8")
    assert plotted(page)["summary"] == [{"run": "all", "ndcg@10": pytest.approx(single.summary["ndcg@10"].iloc[0])}]
    assert "One run" in page and plotted(page)["tests"] == []


def test_cli_report_with_segment_columns_of_truth(tmp_path, capsys):
    truth = pd.read_parquet(TRUTH).merge(cohorts(), on="user_id")
    truth_path, out = tmp_path / "truth.parquet", tmp_path / "report.html"
    truth.to_parquet(truth_path, index=False)
    assert main(["report", RECS, str(truth_path), "-m", "ndcg@10", "-m", "recall@20", "--run-col", "model",
                 "--baseline", "popular", "--segment-col", "cohort", "--resamples", "50", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"recsql: report {out}" in err and "\r" not in err  # no progress bar: stderr is not a terminal
    data = plotted(out.read_text(encoding="utf-8"))
    segmented = recsql.compare(RECS, TRUTH, ["ndcg@10", "recall@20"], run_cols="model", baseline="popular",
                               resamples=50, segments=cohorts())
    _same_rows(data["segment_tests"], segmented.tests, ["cohort", "run", "metric"], ["mean_diff", "ci_low", "ci_high"])
    assert sorted({r["cohort"] for r in data["segment_runs"]}) == ["heavy", "light", "medium"]
    assert max(r["k"] for r in data["curves"]) == 20


def test_cli_report_refuses_mistakes_with_one_line(tmp_path, capsys):
    recs = tmp_path / "recs.html"  # an input the report would overwrite
    shutil.copy(RECS, recs)
    before = recs.read_bytes()
    assert main(["report", str(recs), TRUTH, "-m", "ndcg@10", "--run-col", "model", "--out", str(recs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("recsql: error: --out") and "never overwrites" in err[0]
    assert recs.read_bytes() == before
    assert main(["report", RECS, TRUTH, "-m", "ndcg@10", "--out", str(tmp_path / "report.txt")]) == 2
    assert "an .html file" in capsys.readouterr().err
    assert main(["report", RECS, TRUTH, "-m", "ndcg@10", "--run-col", "model", "--max-k", "0", "--out",
                 str(tmp_path / "r.html")]) == 2
    assert "max_k" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


def test_the_committed_screenshot_is_a_real_report():
    """docs/report.png is made by docs/make_report_screenshot.py from the fixture data."""
    png = (REPO / "docs" / "report.png").read_bytes()
    from PIL import Image
    image = Image.open(io.BytesIO(png))
    spread, drawn = non_blank(png)
    assert image.size[0] == 1280 and image.size[1] >= 1000 and spread > 20 and drawn > 0.05


def test_cli_progress_bar_on_a_terminal_only(tmp_path):
    """stderr a real terminal (a pty): the bar runs to the last step; --quiet: none."""
    import os
    import pty
    import subprocess
    import sys

    def stderr_of(*extra: str) -> str:
        main_fd, child_fd = pty.openpty()
        command = [sys.executable, "-m", "recsql", "report", RECS, TRUTH, "-m", "ndcg@5", "--run-col", "model",
                   "--resamples", "20", "--out", str(tmp_path / "r.html"), *extra]
        done = subprocess.run(command, cwd=REPO, stderr=child_fd, stdout=subprocess.DEVNULL, timeout=300)
        os.close(child_fd)
        out = b""
        while True:
            try:
                chunk = os.read(main_fd, 1 << 16)
            except OSError:  # the terminal's other side is closed: all read
                break
            if not chunk:
                break
            out += chunk
        os.close(main_fd)
        assert done.returncode == 0, out
        return out.decode()

    shown = stderr_of()
    assert "\rrecsql report [#####---------------] 1/4 evaluating" in shown
    assert "[####################] 4/4 written" in shown and "recsql: report" in shown
    assert "recsql report [" not in stderr_of("--quiet")


def test_drawn_twice_from_the_same_results_the_page_is_the_same_byte_for_byte(tmp_path, monkeypatch):
    """No clock on the page unless asked: two reports of one evaluation, a day apart, are the same
    bytes; date=True (recsql report --date) puts the current UTC time on it, a text that text."""
    import datetime as dt

    from recsql.report import data as report_data
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@5"], run_cols="model")

    class Clock(dt.datetime):
        now_is = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)

        @classmethod
        def now(cls, tz=None):
            return cls.now_is

    monkeypatch.setattr(report_data.datetime, "datetime", Clock)
    first = Path(evaluation.report(str(tmp_path / "a.html"), resamples=20)).read_bytes()
    Clock.now_is = dt.datetime(2030, 1, 3, 3, 4, 6, tzinfo=dt.timezone.utc)
    second = Path(evaluation.report(str(tmp_path / "b.html"), resamples=20)).read_bytes()
    assert first == second and b"2030" not in first
    dated = Path(evaluation.report(str(tmp_path / "c.html"), resamples=20, date=True)).read_text(encoding="utf-8")
    assert "Generated 2030-01-03 03:04:06 UTC by recsql" in dated
    named = Path(evaluation.report(str(tmp_path / "d.html"), resamples=20, date="week 12")).read_text(encoding="utf-8")
    assert "Generated week 12 by recsql" in named
    with pytest.raises(recsql.RecsqlError, match="date=3"):
        evaluation.report(str(tmp_path / "e.html"), date=3)


# Run names, a title and a segment value that each break one context when written unescaped: the
# JSON block in <script> (a comment and script opening, its end tag, line separators), HTML, a plotting
# library's mathtext ($...$, a traceback for $\frac$), and the text direction (a right-to-left override).
HOSTILE_RUNS = {"popular": "<!--<script>$\\frac$</script>", "personal": "$5 vs $6 \u202eevil\u2028&amp;"}
HOSTILE_TITLE = "</title><script>alert(1)</script> \u202e$x$"


def _outside_isolation(page: str, char: str = "\u202e") -> list[int]:
    """Each position of ``char`` in the page outside its data block that no <bdi> nor FSI ... PDI isolates."""
    body = page.split('<script type="application/json" id="recsql-data">')[0]
    loose = []
    for at, found in enumerate(body):
        if found != char:
            continue
        before = body[:at]
        in_bdi = before.rfind("<bdi>") > before.rfind("</bdi>")
        in_isolate = before.rfind("\u2068") > before.rfind("\u2069")
        in_title = before.rfind("<title>") > before.rfind("</title>") and in_isolate
        if not (in_bdi or in_isolate or in_title):
            loose.append(at)
    return loose


def test_hostile_names_are_escaped_for_every_context_of_the_page(tmp_path):
    recs = pd.read_parquet(RECS).replace({"model": HOSTILE_RUNS})
    segments = cohorts().replace({"cohort": {"light": "l\u202eight $\\frac$ <b>"}})
    built = build_report(recs, TRUTH, ["ndcg@5", "recall@5"], run_cols="model", baseline=HOSTILE_RUNS["popular"],
                         segments=segments, resamples=20, title=HOSTILE_TITLE)
    path = tmp_path / "hostile.html"
    built.write(str(path))
    page = path.read_text(encoding="utf-8")
    block = page.split('<script type="application/json" id="recsql-data">')[1].split("</script>")[0]
    assert not set(block) & {"<", ">", "&", "\u2028", "\u2029"}  # nothing in it can end or change the block
    data = json.loads(block)
    assert data["runs_order"] == list(built.data.runs_order) and set(data["runs_order"]) == set(HOSTILE_RUNS.values())
    assert page.count("<script") == 1 and page.count("</script>") == 1  # the names' tags are text, not elements
    assert "<title>\u2068" + html.escape("</title>") in page and "<h1>" in page and "alert(1)</script> " not in page
    # the figures write the names as written: no mathtext (which would split "$5 vs $6" into glyphs)
    for drawn in ("$5 vs $6", "$\\frac$", html.escape("<!--<script>")):
        assert drawn in "".join(re.findall(r"<svg.*?</svg>", page, re.S)), drawn
    assert not _outside_isolation(page) and not _outside_isolation(page, "\u2028")
    # a real browser parses the block back to the same names, and the page draws without errors
    loaded = browser.load(path.as_uri(), expression="JSON.parse(document.getElementById('recsql-data').textContent)"
                                                    ".runs_order.concat([document.title, document.querySelectorAll("
                                                    "'section').length])")
    assert loaded.value[:2] == data["runs_order"] and loaded.value[2] == "\u2068" + HOSTILE_TITLE + "\u2069"
    assert loaded.value[3] == page.count("<section") and not loaded.exceptions and not loaded.errors
    # the Markdown and LaTeX tables escape them too
    markdown, latex = built.to_markdown(), built.to_latex()
    assert "<!--" not in markdown and "&lt;!--&lt;script&gt;" in markdown
    assert "\\$5 vs \\$6" in latex and "<!--" in latex  # LaTeX: $ escaped (< is text there)


def test_two_runs_whose_values_hold_the_separators_are_two_runs_on_the_page(tmp_path):
    """('A/day=1', '2') and ('A', '1/day=2') keep their own labels and numbers in the report."""
    truth = pd.DataFrame({"user_id": [1, 2], "item_id": [1, 2], "relevance": [1, 1]})
    recs = pd.DataFrame({"model": ["A/day=1"] * 2 + ["A"] * 2, "day": ["2", "2", "1/day=2", "1/day=2"],
                         "user_id": [1, 2, 1, 2], "item_id": [1, 2, 1, 3], "score": [1.0] * 4})
    evaluation = recsql.evaluate(recs, truth, ["hr@1"], run_cols=["model", "day"])
    page = Path(evaluation.report(str(tmp_path / "r.html"), resamples=20)).read_text(encoding="utf-8")
    assert {row["run"]: row["hr@1"] for row in plotted(page)["summary"]} == {
        "model=A\\/day\\=1/day=2": 1.0, "model=A/day=1\\/day\\=2": 0.5}


def test_frames_drawn_twice_give_the_same_page_but_the_data_block():
    """DataFrame inputs are registered under a name unique to each run; the SQL the page shows
    drops that part, so frames (segments included) give the same page too."""
    recs, truth = pd.read_parquet(RECS), pd.read_parquet(TRUTH)
    segments = pd.DataFrame({"user_id": sorted(set(recs["user_id"]) | set(truth["user_id"]))})
    segments["half"] = segments["user_id"].rank().gt(len(segments) / 2).map({True: "b", False: "a"})
    built = [build_report(recs, truth, ["ndcg@5"], run_cols="model", baseline="popular", resamples=20,
                          segments=segments) for _ in range(2)]
    assert "__recsql_" in built[0].html
    different = [a for a, b in zip(built[0].html.splitlines(), built[1].html.splitlines()) if a != b]
    assert all("recsql-data" in a for a in different), different[:1]


def test_recsql_report_is_the_one_function_behind_the_cli_and_the_methods(tmp_path, capsys):
    """recsql.report(...) evaluates, compares and writes the page that `recsql report` writes (the same
    page); Evaluation.report draws it from the evaluation, which keeps the options it was computed with
    (its convention, tie rule and population are on the page without being passed again)."""
    args = dict(run_cols="model", baseline="popular", resamples=20, curves=False)
    made = recsql.report(RECS, TRUTH, ["ndcg@5"], out=str(tmp_path / "api.html"), **args)
    assert isinstance(made, recsql.report.Report) and made.data.tests is not None
    assert main(["report", RECS, TRUTH, "-m", "ndcg@5", "--run-col", "model", "--baseline", "popular",
                 "--resamples", "20", "--no-curves", "--quiet", "--out", str(tmp_path / "cli.html")]) == 0
    capsys.readouterr()
    # the same page: its sections, and the runs compared (numbers may differ in the last digit between runs)
    sections = [re.findall(r'<section id="([^"]+)"', (tmp_path / name).read_text(encoding="utf-8"))
                for name in ("api.html", "cli.html")]
    assert sections[0] == sections[1] and "settings" in sections[0]
    assert list(made.data.tests["baseline"].unique()) == ["popular"]
    evaluation = recsql.evaluate(RECS, TRUTH, ["ndcg@5"], run_cols="model", convention="trec")
    assert evaluation.options == {"run_cols": "model", "convention": "trec", "ties": "item_id_desc",
                                  "population": "judged"}
    assert evaluation.report(str(tmp_path / "e.html"), baseline="popular", resamples=20) == str(tmp_path / "e.html")
    page = (tmp_path / "e.html").read_text(encoding="utf-8")
    assert "item_id_desc" in page and "judged" in page
    with pytest.raises(recsql.RecsqlError, match="not both"):
        recsql.report(RECS, TRUTH, ["ndcg@5"], evaluation=evaluation)


def test_the_page_says_what_the_users_could_detect(report):
    """Under the differences, the smallest difference each pair's paired t-test detects with power 0.8
    at the report's alpha (per pair under the correction): Comparison.power's numbers, to 3 digits;
    a global metric (no per-user differences) is not named."""
    built, path = report
    page = path.read_text(encoding="utf-8")
    comparison = recsql.compare(RECS, TRUTH, METRICS, run_cols="model", baseline="popular", resamples=RESAMPLES)
    power = comparison.power(0.8, alpha=0.05)
    found = re.search(r"What these users could detect \(paired t-test, power 0.8, alpha ([0-9.]+) per pair\): "
                      r"a true difference smaller than these is missed more than one time in 5\. (.*?)\.</p>", page)
    assert found, "no note of the detectable differences"
    assert found.group(1) == f"{power['alpha_per_test'].iloc[0]:.3g}"
    rows = power[power["detectable"].notna()]
    n = int(rows["n"].iloc[0])
    expected = f"personal vs popular, {n} users: " + ", ".join(f"{m} {d:.3g}" for m, d in zip(rows["metric"], rows["detectable"]))
    assert found.group(2) == expected and "coverage@10" not in found.group(2)
    assert float(rows["alpha_per_test"].iloc[0]) == pytest.approx(0.05 / 3)  # three per-user metrics, holm


def test_the_page_names_each_global_interval_that_excludes_its_value(report):
    """The legend names every (global metric, run) whose interval excludes its value, as read from the
    comparison's rows (the command line's note names the same: comparison_settings.excludes)."""
    built, path = report
    page = path.read_text(encoding="utf-8")
    runs = recsql.compare(RECS, TRUTH, METRICS, run_cols="model", baseline="popular", resamples=RESAMPLES).runs
    glob = runs[runs["metric"] == "coverage@10"]
    outside = [f"coverage@10 of {r.run}" for r in glob.itertuples() if not r.ci_low <= r.mean <= r.ci_high]
    found = re.search(r"Here the interval excludes the value for (.*?)\.", page)
    assert outside and found and found.group(1).split(", ") == outside  # the fixture's coverage: both runs


def _summary_groups(page: str) -> list[tuple[str | None, list[str], dict[str, list[str]]]]:
    """The Summary section's tables: (the <h3> above it or None, its column headings, per run the
    texts of its value and interval divs)."""
    section = page.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    found = []
    for part in re.split(r"(?=<h3>)", section):
        title = re.match(r"<h3>(.*?)</h3>", part)
        for table in re.findall(r'<table class="summary">(.*?)</table>', part, re.S):
            head = [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<th>(.*?)</th>", table)]
            rows = {re.sub(r"<[^>]+>", "", run).split(" ", 1)[1].strip(): re.findall(r'<div class="(?:v|ci)">(.*?)</div>', row)
                    for run, row in re.findall(r'<tr><th scope="row">(.*?)</th>(.*?)</tr>', table)}
            found.append((html.unescape(title.group(1)) if title else None, head, rows))
    return found


def test_the_summary_has_a_section_per_family_with_evaluates_numbers():
    """Metrics of two families: one table per family, in the families' order (not the order asked),
    each holding its family's columns only, its means evaluate's summary and an interval per cell."""
    evaluation = recsql.evaluate(RECS, TRUTH, ["err@10", "ndcg@10", "recall@5"], run_cols="model")
    page = recsql.report(evaluation=evaluation, resamples=50).html
    groups = _summary_groups(page)
    assert [g[0] for g in groups] == [FAMILIES["accuracy"].title, FAMILIES["user_models"].title]
    assert [g[1] for g in groups] == [["run", "ndcg@10", "recall@5"], ["run", "err@10"]]
    assert html.escape(FAMILIES["user_models"].description, quote=True) in page
    summary = evaluation.summary.set_index("model")
    for _, head, rows in groups:
        assert set(rows) == {"personal", "popular"}
        for run, texts in rows.items():
            assert len(texts) == 2 * (len(head) - 1)  # a mean and an interval per metric
            means = [re.sub(r"<sup>.*?</sup>", "", t) for t in texts[::2]]
            assert means == [f"{summary.loc[run, column]:.4f}" for column in head[1:]]
            assert all(re.fullmatch(r"\[\d\.\d{4}, \d\.\d{4}\]", t) for t in texts[1::2]), texts


def test_metrics_of_one_family_give_one_summary_table_without_family_headings():
    evaluation = recsql.evaluate(RECS, TRUTH, ["recall@5", "ndcg@10"], run_cols="model")
    built = recsql.report(evaluation=evaluation, compared=False)
    groups = _summary_groups(built.html)
    assert [(title, head) for title, head, _ in groups] == [(None, ["run", "recall@5", "ndcg@10"])]
    summary = evaluation.summary.set_index("model")
    assert groups[0][2]["popular"] == [f"{summary.loc['popular', c]:.4f}" for c in ("recall@5", "ndcg@10")]
    assert "###" not in built.to_markdown() and r"\multicolumn" not in built.to_latex()


def test_markdown_and_latex_group_the_summary_by_family():
    evaluation = recsql.evaluate(RECS, TRUTH, ["coverage@10", "ndcg@10", "recall@5"], run_cols="model")
    built = recsql.report(evaluation=evaluation, compared=False)
    markdown = built.to_markdown().splitlines()
    headings = [line for line in markdown if line.startswith("### ")]
    assert headings == [f"### {FAMILIES['accuracy'].title}", f"### {FAMILIES['coverage'].title}"]
    assert [line for line in markdown if line.startswith("| run")] == ["| run | ndcg@10 | recall@5 |", "| run | coverage@10 |"]
    summary = evaluation.summary.set_index("model")
    assert f"| b popular | {summary.loc['popular', 'coverage@10']:.4f} |" in markdown
    latex = built.to_latex()
    assert (rf" & \multicolumn{{2}}{{c}}{{{FAMILIES['accuracy'].title}}} & "
            rf"\multicolumn{{1}}{{c}}{{{FAMILIES['coverage'].title}}} \\") in latex
    assert r"\cmidrule(lr){2-3}\cmidrule(lr){4-4}" in latex and r"run & ndcg@10 & recall@5 & coverage@10 \\" in latex


def test_the_two_comparisons_side_by_side_give_what_they_give_in_turn(tmp_path):
    """Without a connection, the overall comparison and the one within segments run side by side
    (recsql.report.build.side_by_side); on the user's DuckDB connection, in turn. The same page but the
    data block's last bits (a parallel sum), and the same notes: the global metric refused within
    segments for the users of recs that have no segment (here those without a relevant item, who are
    in coverage's population only), then the comparison made again without it, in both."""
    import duckdb
    truth = pd.read_parquet(TRUTH)
    relevant = set(truth.loc[truth["relevance"] >= 1, "user_id"])
    segments = cohorts()[lambda f: f["user_id"].isin(relevant)]
    assert len(segments) < len(cohorts())
    segments.to_parquet(tmp_path / "users.parquet", index=False)
    kwargs = dict(run_cols="model", baseline="popular", segments=str(tmp_path / "users.parquet"),
                  segment_cols=["cohort"], resamples=50)
    side = build_report(RECS, TRUTH, METRICS, **kwargs)
    with duckdb.connect() as con:
        turn = build_report(RECS, TRUTH, METRICS, con=con, **kwargs)
    pages = [b.html.splitlines() for b in (side, turn)]
    assert len(pages[0]) == len(pages[1])
    assert all("recsql-data" in a for a, b in zip(*pages) if a != b)
    data = [plotted(b.html) for b in (side, turn)]
    for key in ("runs", "tests", "segment_runs", "segment_tests"):
        assert len(data[0][key]) == len(data[1][key]) > 0, key
        for one, two in zip(data[0][key], data[1][key]):
            assert one.keys() == two.keys()
            for k in one:
                assert one[k] == (pytest.approx(two[k], abs=1e-12) if isinstance(one[k], float) else two[k])
    assert side.data.notes == turn.data.notes
    assert any("Within segments" in note and "coverage@10" in note for note in side.data.notes)


def test_side_by_side_returns_and_raises_as_in_turn():
    from recsql.report.build import side_by_side

    def fails(text):
        def call():
            raise ValueError(text)
        return call
    for concurrent in (True, False):
        assert side_by_side(lambda: 1, lambda: 2, concurrent) == (1, 2)
        assert side_by_side(lambda: 1, None, concurrent) == (1, (None, []))
        with pytest.raises(ValueError, match="first"):
            side_by_side(fails("first"), fails("second"), concurrent)
        with pytest.raises(ValueError, match="second"):
            side_by_side(lambda: 1, fails("second"), concurrent)
