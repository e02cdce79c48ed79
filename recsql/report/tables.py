"""The summary table of a report as HTML, Markdown and LaTeX, from one model of its cells.

When the asked metrics span more than one family (recsql/families.py), the table is split by family, in
the families' order: a heading, what the family measures and its own table in HTML and Markdown, a
header row naming each family over its columns in LaTeX.

Each run's cell holds the mean and its bootstrap interval; against a baseline, the difference, its
interval, the primary test's corrected p-value and a marker (▲ significantly higher, ▼ lower). As
ranx does, every run has a letter, and a value carries in superscript the letters of the runs it is
significantly better than (the primary test's corrected p-value below alpha = 1 − ci).
"""
from __future__ import annotations

import html
import math
import string
from dataclasses import dataclass, field
from typing import Any, Iterable

import pandas as pd

from ..comparison_settings import GLOBAL_INTERVAL_BIAS, excludes, resampled_globals
from ..families import Family, grouped
from ..run_labels import plain
from ..safe_text import html_text
from .data import ReportData, alpha, primary_test

UP, DOWN = "▲", "▼"


@dataclass
class Cell:
    """One run's value of one metric, with what the comparison says about it."""

    mean: float | None
    low: float | None = None
    high: float | None = None
    diff: float | None = None  # against the baseline (one baseline only)
    diff_low: float | None = None
    diff_high: float | None = None
    p: float | None = None
    direction: int = 0  # +1 significantly higher than the baseline, −1 lower, 0 neither
    beats: list[str] = field(default_factory=list)  # letters of the runs this one is significantly better than


def letters(runs: list[str]) -> dict[str, str]:
    """a, b, c, ... (then aa, ab, ...) for the runs in order."""
    abc = string.ascii_lowercase
    return {r: abc[i] if i < 26 else abc[i // 26 - 1] + abc[i % 26] for i, r in enumerate(runs)}


def baseline_of(data: ReportData) -> str | None:
    """The one run every test compares with, if there is one (None: every pair, or no tests)."""
    if data.tests is None or not len(data.tests):
        return None
    found = set(data.tests["baseline"])
    return found.pop() if len(found) == 1 and data.comparison.settings.baseline is not None else None


def cells(data: ReportData) -> dict[tuple[str, str], Cell]:
    """Each (run, metric column)'s cell: intervals from the comparison's runs where the metric was
    compared, else the evaluation's summary value alone (a global metric)."""
    columns = [m.column for m in data.asked]
    found: dict[tuple[str, str], Cell] = {}
    if data.summary is not None:
        for _, row in data.summary.iterrows():
            for c in columns:
                if c in data.summary.columns:
                    found[row["run"], c] = Cell(_number(row[c]))
    if data.comparison is not None:
        for _, row in data.comparison.runs.iterrows():
            if row["metric"] in columns:
                found[str(row["run"]), row["metric"]] = Cell(_number(row["mean"]), _number(row["ci_low"]),
                                                             _number(row["ci_high"]))
    tag = letters(data.runs_order)
    base = baseline_of(data)
    for _, row in (data.tests.iterrows() if data.tests is not None else iter(())):
        cell_run, cell_base = found.get((row["run"], row["metric"])), found.get((row["baseline"], row["metric"]))
        if row["significant"] and row["mean_diff"] > 0 and cell_run is not None:
            cell_run.beats.append(tag[row["baseline"]])
        if row["significant"] and row["mean_diff"] < 0 and cell_base is not None:
            cell_base.beats.append(tag[row["run"]])
        if base is not None and cell_run is not None:
            cell_run.diff, cell_run.diff_low, cell_run.diff_high = (_number(row[c]) for c in ("mean_diff", "ci_low", "ci_high"))
            cell_run.p, cell_run.direction = _number(row["p"]), int(row["direction"])
    for cell in found.values():
        cell.beats = sorted(set(cell.beats), key=lambda t: (len(t), t))
    return found


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def number(value: float | None, digits: int = 4) -> str:
    """A value for a table: fixed digits, thousands separated for large sums; an em dash for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.{digits}f}"


def p_value(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _same(text: str) -> str:
    return text


def legend(data: ReportData, text: Any = _same, name: Any = _same) -> str:
    """What the markers mean: the test, its correction and alpha; ``text`` writes recsql's own words
    and ``name`` a run's or metric's (for HTML: escaped, and names isolated)."""
    if data.comparison is None:
        return text("Means over users; no comparison (intervals and tests need two runs or more, compared).")
    _, _, test = primary_test(data.comparison)
    level = alpha(data.comparison)
    settings = data.comparison.settings
    base = baseline_of(data)
    against = (text("against the baseline ") + name(base) + text(f": Δ = run − baseline, {UP}/{DOWN} significantly "
                                                                 "higher/lower; ")) if base else ""
    fallback = "; where it gives no p-value, the next test asked" if len(settings.tests) > 1 else ""
    tested = (text("Tested pairs: each run against ") + name(base) + text(
        " only (no other pair was tested, so a missing letter says nothing about two other runs).") if base
        else text("Tested pairs: every pair of runs."))
    return (text(f"Mean over users [{settings.ci:.0%} percentile bootstrap interval, {settings.resamples} resamples, "
                 f"seed {settings.seed}]; ") + against + text(
        f"superscript letters: significantly better than the run with that letter ({test}{fallback}; p < {level:g} "
        "= 1 − ci). ") + tested + interval_note(data, text, name))


def interval_note(data: ReportData, text: Any = _same, name: Any = _same) -> str:
    """For global metrics (one number per run: coverage, gini, personalization), why their percentile
    interval may not contain the value: a bootstrap resample repeats some users and leaves others out,
    so it recommends fewer distinct items (coverage lower, gini higher) than the users themselves.
    Names every (run, metric) whose interval excludes its value. The off-policy estimators, resampled
    over the logged contexts, are named apart. Empty without a global metric compared."""
    compared = data.comparison.runs if data.comparison is not None else None
    if compared is None:
        return ""
    shown = set(compared["metric"])  # a global metric compare refused has no interval to explain
    glob = resampled_globals(data.asked) & shown
    estimators = sorted({m.column for m in data.asked if m.spec.family == "off_policy"} & shown)
    logged = (text(" Off-policy estimators (") + text(", ").join(name(e) for e in estimators) + text(
        "): the estimate over the logged impressions (slates, for a slate estimator), its interval a bootstrap over "
        "the logged contexts.")
        if estimators else "")
    if not glob:
        return logged
    rows = compared[compared["metric"].isin(glob)]
    outside = [name(r["metric"]) + text(" of ") + name(r["run"]) for _, r in rows.iterrows()
               if excludes(_number(r["mean"]), _number(r["ci_low"]), _number(r["ci_high"]))]
    excluded = (text(" Here the interval excludes the value for ") + text(", ").join(outside) + text(".")
                if outside else "")
    return (text(" Global metrics (") + text(", ").join(name(g) for g in sorted(glob)) + text(
        f"): {GLOBAL_INTERVAL_BIAS}.") + excluded + logged)


def by_family(data: ReportData) -> list[tuple[Family, list[str]]]:
    """The asked metrics' columns by family, in the families' order (each family's as asked)."""
    return [(family, [m.column for m in metrics]) for family, metrics in grouped(data.asked, lambda m: m.spec.family)]


def summary_html(data: ReportData) -> str:
    """The summary table as HTML (rows: runs; columns: metrics), one per family under its heading
    when the metrics span several, then the legend."""
    found = cells(data)
    families = by_family(data)
    headed = len(families) > 1
    tables = "".join((f'<h3>{html_text(family.title)}</h3><p class="note">{html_text(family.description)}</p>'
                      if headed else "") + _summary_table(data, columns, found) for family, columns in families)
    return f'{tables}<p class="legend">{legend(data, html.escape, html_text)}</p>'


def _summary_table(data: ReportData, columns: list[str], found: dict[tuple[str, str], Cell]) -> str:
    tag, base = letters(data.runs_order), baseline_of(data)
    head = "".join(f"<th>{html_text(c)}</th>" for c in columns)
    rows = []
    for run in data.runs_order:
        badge = ' <span class="badge">baseline</span>' if run == base else ""
        out = [f'<th scope="row"><span class="letter">{tag[run]}</span> {html_text(run)}{badge}</th>']
        for c in columns:
            cell = found.get((run, c))
            out.append(f"<td>{_cell_html(cell)}</td>" if cell else "<td>—</td>")
        rows.append(f"<tr>{''.join(out)}</tr>")
    return f'<table class="summary"><thead><tr><th>run</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _cell_html(cell: Cell) -> str:
    sup = f"<sup>{''.join(cell.beats)}</sup>" if cell.beats else ""
    parts = [f'<div class="v">{number(cell.mean)}{sup}</div>']
    if cell.low is not None or cell.high is not None:
        parts.append(f'<div class="ci">[{number(cell.low)}, {number(cell.high)}]</div>')
    if cell.diff is not None:
        mark = {1: UP, -1: DOWN}.get(cell.direction, "")
        kind = {1: "up", -1: "down"}.get(cell.direction, "ns")
        parts.append(f'<div class="d {kind}">Δ {_signed(cell.diff)} [{_signed(cell.diff_low)}, '
                     f'{_signed(cell.diff_high)}] p {p_value(cell.p)} {mark}</div>')
    return "".join(parts)


def _signed(value: float | None) -> str:
    return number(value) if value is None or value < 0 else f"+{number(value)}"


def _text_rows(data: ReportData, columns: list[str], sup: Any, escape: Any, intervals: bool,
               best: Any = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a plain-text table (Markdown, LaTeX) of these metric columns, with ``sup``
    writing superscripts and ``best`` (when given) writing the highest mean of each metric (every run
    that has it)."""
    found = cells(data)
    tag, base = letters(data.runs_order), baseline_of(data)
    highest = {c: max((cell.mean for (_, col), cell in found.items() if col == c and cell.mean is not None),
                      default=None) for c in columns}
    rows = []
    for run in data.runs_order:
        name = f"{tag[run]} {escape(run)}{' (baseline)' if run == base else ''}"
        row = [name]
        for c in columns:
            cell = found.get((run, c))
            if cell is None:
                row.append("—")
                continue
            shown = number(cell.mean)
            text = (best(shown) if best and cell.mean is not None and cell.mean == highest[c] else shown) \
                + (sup("".join(cell.beats)) if cell.beats else "")
            if intervals and cell.low is not None:
                text += f" [{number(cell.low)}, {number(cell.high)}]"
            row.append(text)
        rows.append(row)
    return ["run", *map(escape, columns)], rows


def to_markdown(data: ReportData, intervals: bool = True) -> str:
    """The summary table in Markdown (GitHub's), superscripts as ``<sup>``, with its legend; one table
    per family under a ``###`` heading when the metrics span several."""
    escape = lambda s: html.escape(str(s), quote=False).replace("|", "\\|")  # noqa: E731 - GitHub reads HTML in cells
    families = by_family(data)
    parts = []
    for family, columns in families:
        header, rows = _text_rows(data, columns, lambda s: f"<sup>{s}</sup>", escape, intervals)
        lines = [_md_row(header), "|" + "|".join([":---", *["---:"] * (len(header) - 1)]) + "|", *map(_md_row, rows)]
        heading = f"### {escape(family.title)}\n\n{escape(family.description)}\n\n" if len(families) > 1 else ""
        parts.append(heading + "\n".join(lines))
    return "\n\n".join(parts) + f"\n\n{legend(data, name=escape)}\n"


def _md_row(cells_: Iterable[str]) -> str:
    return "| " + " | ".join(cells_) + " |"


def latex_escape(text: Any) -> str:
    """Text safe inside a LaTeX table cell.

    >>> latex_escape("ndcg(gain=exponential)@10 & 50% of $_#")
    'ndcg(gain=exponential)@10 \\\\& 50\\\\% of \\\\$\\\\_\\\\#'
    """
    table = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
             "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "Δ": r"$\Delta$", "−": "$-$",
             UP: r"$\blacktriangle$", DOWN: r"$\blacktriangledown$"}
    return "".join(table.get(ch, ch) for ch in str(text))


# The packages the LaTeX table uses, said in its first line: booktabs (\toprule, \midrule, \bottomrule)
# and amssymb (the ▲ / ▼ of the legend, $\blacktriangle$).
LATEX_PACKAGES = ("booktabs", "amssymb")


def to_latex(data: ReportData, intervals: bool = True) -> str:
    r"""The summary table as a LaTeX ``table`` (booktabs rules), the highest mean of each metric in
    bold, superscripts as ``$^{a}$``, the legend as its caption; a header row names each family over its
    columns when the metrics span several. Its first line is a comment naming
    the packages it needs (:data:`LATEX_PACKAGES`: ``\usepackage{booktabs}``, ``\usepackage{amssymb}``)."""
    families = by_family(data)
    columns = [c for _, family_columns in families for c in family_columns]
    header, rows = _text_rows(data, columns, lambda s: f"$^{{{s}}}$", latex_escape, intervals,
                              lambda s: rf"\textbf{{{s}}}")
    body = [*(_latex_families(families) if len(families) > 1 else []), " & ".join(header) + r" \\", r"\midrule",
            *(" & ".join(r) + r" \\" for r in rows)]
    caption = latex_escape(legend(data)) + " Bold: the highest mean of each metric."
    needs = "".join(rf"\usepackage{{{name}}}" for name in LATEX_PACKAGES)
    return "\n".join([f"% recsql table: needs {needs} in the preamble", r"\begin{table}[t]", r"\centering", rf"\begin{{tabular}}{{l{'r' * (len(header) - 1)}}}",
                      r"\toprule", *body, r"\bottomrule", r"\end{tabular}", rf"\caption{{{caption}}}",
                      r"\end{table}"]) + "\n"


def _latex_families(families: list[tuple[Family, list[str]]]) -> list[str]:
    """The header row naming each family over its columns, and a rule under each name."""
    spans, rules, first = [], [], 2  # column 1 is the run's
    for family, columns in families:
        last = first + len(columns) - 1
        spans.append(rf"\multicolumn{{{len(columns)}}}{{c}}{{{latex_escape(family.title)}}}")
        rules.append(rf"\cmidrule(lr){{{first}-{last}}}")
        first = last + 1
    return [" & ".join(["", *spans]) + r" \\", "".join(rules)]


def frame_html(frame: pd.DataFrame, digits: int = 4, classes: str = "plain") -> str:
    """Any result frame as a plain HTML table: numbers with fixed digits (p-values with three
    significant ones), NaN and NULL as an em dash."""
    def show(column: str, value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
            return "—"
        if isinstance(value, bool):
            return "yes" if value else ""
        if isinstance(value, float):
            return p_value(value) if column.startswith("p_") or column == "p" else number(value, digits)
        return html_text(f"{value:,}" if isinstance(value, int) else str(value))

    head = "".join(f"<th>{html_text(c)}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{show(str(c), plain(v))}</td>" for c, v in row.items()) + "</tr>"
                   for _, row in frame.iterrows())
    return f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
