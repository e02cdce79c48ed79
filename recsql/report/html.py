"""The report page: one HTML file with its CSS inline, figures as inline SVG, no script and no
network request, and the plotted frames as a JSON block (``<script type="application/json"
id="recsql-data">``, which browsers do not run) so a reader or a test can check every number."""
from __future__ import annotations

import html
import math
from typing import Any, Callable

import pandas as pd

from ..safe_text import html_code, html_text, isolated, script_json
from . import figures, tables
from .data import ReportData, family_label, primary_test, segment_columns, segment_label

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;margin:0;background:#f6f8fa}
main{max-width:1240px;margin:0 auto;padding:24px 28px 48px;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.meta{color:#59636e;font-size:13px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top}
thead th{background:#f6f8fa;text-align:left}td{text-align:right;font-variant-numeric:tabular-nums}
table.summary td{min-width:150px}table.summary .v{font-size:15px;font-weight:600}
.ci{color:#59636e;font-size:12px;white-space:nowrap}.d{font-size:12px}.d.up{color:#1a7f37}.d.down{color:#cf222e}.d.ns{color:#59636e}
.letter{display:inline-block;min-width:1.2em;color:#59636e}.badge{background:#ddf4ff;color:#0969da;border-radius:8px;padding:0 6px;font-size:11px}
.legend,.note{color:#59636e;font-size:12.5px;max-width:1000px}svg{max-width:100%;height:auto}
table.plain td:first-child,table.defs td{text-align:left}table.defs td{font-variant-numeric:normal}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:10px;overflow:auto;font-size:12px;max-height:600px}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}code{font-size:12.5px}
.scroll{overflow-x:auto}table.settings td:first-child{color:#59636e}
"""


def page(data: ReportData) -> str:
    """The whole page."""
    sections = [_summary(data), _differences(data), _curves(data), _distributions(data), _segments(data),
                _diagnostics(data), _definitions(data), _settings(data), _sql(data), _provenance(data)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(isolated(data.title))}</title><style>{CSS}</style></head><body><main>\n"
            f"<h1>{html_text(data.title)}</h1>\n{_header(data)}\n" + "\n".join(s for s in sections if s) +
            f"\n<script type=\"application/json\" id=\"recsql-data\">{_json(data)}</script>\n</main></body></html>\n")


def _header(data: ReportData) -> str:
    metrics = ", ".join(m.column for m in data.asked)
    users = f", {data.rows_in:,} recommendation rows read" if data.rows_in else ""
    notes = "".join(f'<p class="note">{html_text(n)}</p>' for n in data.notes)
    runs = ", ".join(html_text(r) for r in data.runs_order)
    return (f'<p class="meta">{len(data.runs_order)} run(s): {runs}; metrics: '
            f'{html_text(metrics)}{users}; engine {html_text(data.engine)}; input fingerprint '
            f'<code>{data.fingerprint}</code></p>\n<p class="meta">{_generated(data)} by recsql '
            f'{html_text(data.versions.get("recsql", ""))}</p>{notes}')


def _generated(data: ReportData) -> str:
    """"Generated" and the date asked for (none by default: the page is then a function of the results)."""
    return f"Generated {html_text(data.date)}" if data.date else "Generated"


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{html_text(title)}</h2>\n{body}\n</section>' if body else ""


def _summary(data: ReportData) -> str:
    return _section("summary", "Summary", f'<div class="scroll">{tables.summary_html(data)}</div>')


def _differences(data: ReportData) -> str:
    if data.tests is None or data.tests.empty:
        return ""
    _, _, described = primary_test(data.comparison)
    shown = data.tests.drop(columns=["p", "direction"])
    return _section("differences", "Differences between runs", (
        f'<p class="note">Each row: the mean over paired users of run − baseline with its {data.comparison.settings.ci:.0%} '
        f"bootstrap interval; filled and colored when the {html.escape(described)} gives p < "
        f"{1 - data.comparison.settings.ci:g}.</p>" + _detectable(data.comparison) + figures.forest(data.tests) +
        "<h3>Win / tie / loss</h3>" + figures.wins(data.tests) +
        f'<details><summary>Every test ({len(shown)} rows)</summary><div class="scroll">'
        f"{tables.frame_html(shown)}</div></details>"))


def _detectable(comparison: Any, power: float = 0.8) -> str:
    """A note per pair: the smallest difference its paired t-test detects with ``power`` among its users
    (``Comparison.power`` at alpha = 1 − ci, per pair under a correction); "" without per-user metrics."""
    table = comparison.power(power, alpha=round(1 - comparison.settings.ci, 12))
    table = table[table["detectable"].notna()]
    if table.empty:
        return ""
    segments = segment_columns(comparison)
    pairs = []
    for keys, rows in table.groupby([*segments, "run", "baseline"], sort=False):
        where = " · ".join(str(k) for k in keys[:len(segments)])
        named = f"{rows['run'].iloc[0]} vs {rows['baseline'].iloc[0]}" + (f" ({where})" if where else "")
        sizes = ", ".join(f"{m} {d:.3g}" for m, d in zip(rows["metric"], rows["detectable"]))
        pairs.append(f"{named}, {int(rows['n'].iloc[0])} users: {sizes}")
    level = table["alpha_per_test"].iloc[0]
    return (f'<p class="note">What these users could detect (paired t-test, power {power:g}, alpha {level:.3g} per '
            f"pair): a true difference smaller than these is missed more than one time in {round(1 / (1 - power))}. "
            + html_text("; ".join(pairs)) + ".</p>")


def _curves(data: ReportData) -> str:
    if data.curves is None or data.curves.empty:
        return ""
    drawn = figures.curves(data.curves, data.runs_order)
    if not drawn:
        return _section("curves", "metric@k", '<p class="note">One cutoff per metric: no curve to draw '
                        "(the report command evaluates every cutoff 1..K in the same query).</p>")
    top = int(data.curves["k"].max())
    return _section("curves", "metric@k", f'<p class="note">Every cutoff k = 1..{top} of each metric, all computed '
                    "in the same single query as the summary.</p>" + drawn)


def _distributions(data: ReportData) -> str:
    if not data.distributions:
        return ""
    missing = [f"{d['run']} · {d['metric']}: {d['missing']}" for d in data.distributions if d["missing"]]
    note = f'<p class="note">Users without a value (outside the metric\'s population): {"; ".join(html_text(m) for m in missing)}.</p>' \
        if missing else ""
    return _section("distributions", "Per-user distributions", '<p class="note">Share of each run\'s users per bin '
                    "(bins shared by the runs); dashed: the mean.</p>" + note +
                    figures.distributions(data.distributions, data.runs_order))


def _segments(data: ReportData) -> str:
    if data.segmented is None:
        return ""
    columns = segment_columns(data.segmented)
    tests = data.segment_tests.copy()
    tests.insert(0, "segment", segment_label(tests, columns))
    runs = data.segmented.runs
    return _section("segments", f"Segments ({', '.join(columns)})", (
        '<p class="note">The runs compared within each segment: one panel per segment, the same axis in every '
        "panel.</p>" + figures.forest(tests, name="segments", by="segment", panels_per_row=3) +
        f'<details><summary>Means per segment ({len(runs)} rows)</summary><div class="scroll">'
        f"{tables.frame_html(runs)}</div></details>"
        f'<details><summary>Tests per segment ({len(tests)} rows)</summary><div class="scroll">'
        f"{tables.frame_html(tests.drop(columns=['segment', 'direction']))}</div></details>"))


def _diagnostics(data: ReportData) -> str:
    if data.summary is None:
        return ""
    columns = ["run", *(c for c in data.summary.columns if c.startswith("n_users") or c in
                        ("users_without_recs", "recs_users_without_truth"))]
    rows = f"<p class=\"note\">Recommendation rows read: {data.rows_in:,}.</p>" if data.rows_in else ""
    return _section("diagnostics", "Population and diagnostics", (
        '<p class="note"><code>n_users</code>: the users the truth metrics average over (a relevant user without '
        "recommendations scores 0); <code>users_without_recs</code>: those of them without recommendations; "
        "<code>recs_users_without_truth</code>: users with recommendations but no relevant truth, left out; "
        "<code>n_users_with_recs</code>: the users of the list-only metrics; <code>n_users_intents</code>: those of "
        "the intent-aware metrics (the population read on intents; a user of intents without recommendations "
        "scores 0).</p>" + rows +
        tables.frame_html(data.summary[columns])))


def _definitions(data: ReportData) -> str:
    convention = data.options.get("convention") or "recsql"
    rows = []
    for m in data.asked:
        spec = m.spec
        try:
            from ..conventions import resolve_metric
            effective = str(resolve_metric(m, convention))
        except Exception:  # noqa: BLE001 - a convention recsql does not know: the metric as given
            effective = str(m)
        options = ", ".join(f"{k}={v}" for k, v in m.all_options().items()) or "—"
        rows.append("<tr>" + "".join(f"<td>{html_text(v)}</td>" for v in (
            m.column, effective, spec.formula, options, spec.population, spec.value_range(m.all_options()),
            spec.cite)) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("column", f"definition ({html_text(convention)})", "formula",
                                             "options as asked (defaults filled)", "population", "range", "citation"))
    return _section("definitions", "Definitions", (
        '<p class="note">From each metric\'s SQL header (<code>recsql metrics</code> prints the same).</p>'
        f'<div class="scroll"><table class="defs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
        "</tbody></table></div>"))


DEFAULTED = ("threshold", "population", "ties")  # None: the convention's


def _settings(data: ReportData) -> str:
    rows = [(k, "the convention's" if v is None else v) for k, v in data.options.items()
            if v not in (None, (), []) or k in DEFAULTED]
    if data.comparison is not None or data.segmented is not None:
        settings = (data.comparison or data.segmented).settings
        _, column, described = primary_test(data.comparison or data.segmented)
        rows += [("tests", ", ".join(settings.tests)), ("ci", settings.ci), ("resamples", settings.resamples),
                 ("seed", settings.seed), ("correction", settings.correction or "none"),
                 ("baseline", "every pair" if settings.baseline is None else settings.baseline),
                 ("markers", f"{described}: {column} < {1 - settings.ci:g}")]
    if not rows:
        return ""
    body = "".join(f"<tr><td>{html_text(k)}</td><td>{html_text(_shown(v))}</td></tr>" for k, v in rows)
    return _section("settings", "Convention and options", (
        '<p class="note">As given (options left at nothing are not listed).</p>'
        f'<table class="defs settings"><tbody>{body}</tbody></table>'))


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _sql(data: ReportData) -> str:
    parts = [f"<details><summary>{html_text(what)} ({len(sql.splitlines())} lines)</summary>"
             f"<pre><code>{html_code(sql)}</code></pre></details>" for what, sql in data.sql.items() if sql]
    return _section("sql", "The SQL that ran", "".join(parts))


def _provenance(data: ReportData) -> str:
    versions = "".join(f"<tr><td>{html_text(k)}</td><td>{html_text(v)}</td></tr>" for k, v in data.versions.items())
    inputs = "".join(f"<tr><td>{html_text(d['role'])}</td><td>{html_text(d['what'])}</td>"
                     f"<td><code>{d['digest']}</code></td></tr>" for d in data.inputs)
    return _section("provenance", "Versions, date and inputs", (
        f'<p class="meta">{_generated(data)}. Input fingerprint <code>{data.fingerprint}</code>: the first 16 hex '
        "digits of SHA-256 over the inputs' digests below (a file: its bytes; a frame: its columns, types and "
        "pandas' row hashes; a table in a database: its name).</p>"
        f'<table class="defs"><tbody>{versions}</tbody></table>'
        f'<table class="defs"><thead><tr><th>input</th><th>what was hashed</th><th>SHA-256</th></tr></thead>'
        f"<tbody>{inputs}</tbody></table>"))


def plotted(data: ReportData) -> dict[str, Any]:
    """The frames the figures and tables draw, as JSON-ready records (NaN as null)."""
    records: Callable[[pd.DataFrame | None], list]
    records = lambda f: [] if f is None else [{k: _plain(v) for k, v in r.items()} for r in f.to_dict("records")]  # noqa: E731
    out = {"runs_order": data.runs_order, "metrics": [m.column for m in data.asked],
           "families": {m.column: family_label(m) for m in data.asked},
           "summary": records(data.summary.drop(columns=[c for c in data.summary.columns if c not in
                                                          ("run", *[m.column for m in data.asked])])
                              if data.summary is not None else None),
           "curves": records(data.curves), "distributions": data.distributions,
           "runs": records(data.comparison.runs if data.comparison is not None else None),
           "tests": records(data.tests),
           "segment_runs": records(data.segmented.runs if data.segmented is not None else None),
           "segment_tests": records(data.segment_tests), "fingerprint": data.fingerprint}
    return out


def _plain(value: Any) -> Any:
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is pd.NA or value is None:
        return None
    return value


def _json(data: ReportData) -> str:
    return script_json(plotted(data), ensure_ascii=False, allow_nan=False)
