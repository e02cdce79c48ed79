"""The report's figures, drawn from the frames of :mod:`recsql.report.data` as inline SVG
(:mod:`recsql.report.svg`: written directly, no plotting library).

The SVG is deterministic (no id, date or random part: the same frames give the same bytes) and
its text stays text. Text is drawn as it is written: a run named ``$5 vs $6`` is that text (there
is no mathtext or LaTeX to read it), every text is escaped for the page, and every name (run,
metric, segment) outside ASCII is isolated (:func:`recsql.safe_text.isolated`), so a right-to-left
override in one label cannot reorder the rest of it.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..safe_text import isolated
from .svg import FONT, SMALL, TITLE, Axis, Panel, circle, figure, legend, line, rect, text, text_width

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DIRECTION_COLORS = {1: "#1a7f37", -1: "#cf222e", 0: "#6e7781"}  # higher, lower, not significant
WIDTH = 756.0  # points: 10.5 inches, the page's width for figures
TOP = TITLE + 12  # room for a panel's title
BOTTOM = 5.5 + FONT + 4 + FONT + 6  # the x tick labels and the x axis label
RIGHT = 14.0
GAP = 6.0  # between a panel's cell and its tick labels


def colors(runs: Sequence[str]) -> dict[str, str]:
    """One color per run, the same in every figure."""
    return {run: PALETTE[i % len(PALETTE)] for i, run in enumerate(runs)}


def _cells(panels: int, columns: int, row_height: float, left: float) -> tuple[list[tuple[float, float, float, float]],
                                                                              float]:
    """The plot area (left, top, width, height) of each of ``panels`` in rows of ``columns``, each
    cell ``row_height`` points high with ``left`` points for its y labels; and the figure's height."""
    cols = max(1, min(columns, panels))
    rows = math.ceil(panels / cols)
    cell = WIDTH / cols
    areas = [((i % cols) * cell + left, (i // cols) * row_height + TOP, cell - left - RIGHT,
              row_height - TOP - BOTTOM) for i in range(panels)]
    return areas, rows * row_height


def _y_room(axes: Sequence[Axis], ylabel: bool = False) -> float:
    """The points left of a plot area for its y tick labels (and a y axis label)."""
    widest = max((text_width(label) for axis in axes for label in axis.labels()), default=0.0)
    return GAP + widest + 8 + (FONT + 8 if ylabel else 0)


def _finite(value: Any) -> bool:
    return value is not None and not pd.isna(value) and math.isfinite(float(value))


def _corner(panel: Panel, points: list[tuple[float, float]], width: float, height: float) -> tuple[float, float]:
    """The corner of ``panel`` (upper left, upper right, lower left, lower right) where a legend box
    of ``width`` x ``height`` points covers the fewest ``points``, as matplotlib's "best" does."""
    right, bottom = panel.left + panel.width, panel.top + panel.height
    corners = [(panel.left + 6, panel.top + 4), (right - 6 - width, panel.top + 4),
               (panel.left + 6, bottom - 4 - height), (right - 6 - width, bottom - 4 - height)]
    covered = [sum(x0 <= x <= x0 + width and y0 <= y <= y0 + height for x, y in points) for x0, y0 in corners]
    return corners[covered.index(min(covered))]


def _legend_in(panel: Panel, runs: Sequence[str], palette: dict[str, str],
               lines: list[list[tuple[float, float]]]) -> str:
    """The runs' legend inside ``panel``, in the corner its ``lines`` (each a list of vertices)
    cross least."""
    along = [(x0 + (x1 - x0) * t / 8, y0 + (y1 - y0) * t / 8) for points in lines
             for (x0, y0), (x1, y1) in zip(points, points[1:]) for t in range(8)] + [p for ps in lines for p in ps[-1:]]
    entries = [(isolated(run), palette[run]) for run in runs]
    width = max(18 + text_width(label, SMALL) + 10 for label, _ in entries)
    x, y = _corner(panel, along, width, len(entries) * (SMALL + 5))
    return legend(x, y, entries, backed=True)


def curves(frame: pd.DataFrame, runs: Sequence[str]) -> str:
    """metric@k for k = 1..K: one panel per metric, one line per run."""
    families = list(dict.fromkeys(frame["family"]))
    if frame.empty or frame.groupby("family")["k"].nunique().max() < 2:
        return ""
    palette = colors(runs)
    height = 2.8 * 72
    inner = height - TOP - BOTTOM
    ys = {f: Axis.fit(frame.loc[frame["family"] == f, "value"].tolist(), inner, 2 * FONT) for f in families}
    areas, total = _cells(len(families), 3, height, _y_room(list(ys.values())))
    panels, points = [], []
    for (left, top, width, high), family in zip(areas, families):
        part = frame[frame["family"] == family]
        panel = Panel(left, top, width, high, Axis.fit(part["k"].tolist(), width, 3 * FONT, integer=True), ys[family])
        panel.frame(title=f"{isolated(family)}@k", xlabel="k")
        for run in runs:
            drawn = part[part["run"] == run].sort_values("k")
            xy = [(panel.px(k), panel.py(float(v)) if _finite(v) else None) for k, v in zip(drawn["k"], drawn["value"])]
            for segment in _runs_of(xy):  # a missing value breaks the line
                panel.marks.append(line(segment, palette[run], 1.6))
            if len(drawn) <= 20:
                panel.marks.extend(circle(x, y, 1.4, palette[run], width=0.6) for x, y in xy if y is not None)
            if not panels:
                points += _runs_of(xy)
        panels.append(panel)
    return figure(WIDTH, total, "curves", panels, [_legend_in(panels[0], runs, palette, points)])


def _runs_of(xy: list[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """The stretches of ``xy`` without a missing y."""
    out: list[list[tuple[float, float]]] = [[]]
    for x, y in xy:
        if y is None:
            out.append([])
        else:
            out[-1].append((x, y))
    return [s for s in out if s]


def distributions(items: list[dict[str, Any]], runs: Sequence[str]) -> str:
    """Per-user values: one panel per metric, one step histogram per run (share of the run's users
    with a value) and its mean as a dashed line."""
    metrics = list(dict.fromkeys(d["metric"] for d in items))
    if not metrics:
        return ""
    palette = colors(runs)
    height = 2.6 * 72
    inner = height - TOP - BOTTOM
    shares = {id(d): [c / d["n"] if d["n"] else 0.0 for c in d["counts"]] for d in items}
    ys = {m: Axis.fit([0.0, *(s for d in items if d["metric"] == m for s in shares[id(d)])], inner, 2 * FONT,
                      floor=0.0) for m in metrics}
    areas, total = _cells(len(metrics), 3, height, _y_room(list(ys.values()), ylabel=True))
    panels, points = [], []
    for (left, top, width, high), metric in zip(areas, metrics):
        mine = [d for d in items if d["metric"] == metric]
        edges = mine[0]["edges"]
        panel = Panel(left, top, width, high, Axis.fit([edges[0], edges[-1]], width, 3 * FONT, tight=True), ys[metric])
        panel.frame(title=isolated(metric), ylabel="share of users")
        for d in mine:
            share, xs = shares[id(d)], d["edges"]
            steps = [(xs[0], 0.0)] + [p for i, s in enumerate(share) for p in ((xs[i], s), (xs[i + 1], s))] + \
                [(xs[-1], 0.0)]
            xy = [(panel.px(x), panel.py(y)) for x, y in steps]
            panel.marks.append(line(xy, palette[d["run"]], 1.4))
            if d["mean"] is not None:
                x = panel.px(d["mean"])
                panel.marks.append(line([(x, top), (x, top + high)], palette[d["run"]], 1.0, dash="3.7,1.6"))
            if not panels:
                points.append(xy)
        panels.append(panel)
    return figure(WIDTH, total, "distributions", panels, [_legend_in(panels[0], runs, palette, points)])


def _pair(row: pd.Series, one_baseline: bool) -> str:
    return isolated(row["run"]) if one_baseline else f"{isolated(row['run'])} − {isolated(row['baseline'])}"


def wins(tests: pd.DataFrame) -> str:
    """Win / tie / loss of each run against its baseline, per metric, as shares of the paired users."""
    if tests is None:
        return ""
    tests = tests[tests[["wins", "ties", "losses"]].notna().all(axis=1)]  # global metrics have no per-user pairs
    if tests.empty:
        return ""
    one = tests["baseline"].nunique() == 1
    labels = [f"{_pair(r, one)} · {isolated(r['metric'])}" for _, r in tests.iterrows()]
    height = (0.9 + 0.32 * len(tests)) * 72
    left = GAP + max(text_width(label) for label in labels) + 8
    top = SMALL + 14  # the legend, above the bars
    panel = Panel(left, top, WIDTH - left - RIGHT, height - top - BOTTOM, Axis(0.0, 1.0), categories=labels)
    panel.x = Axis.fit([0.0, 1.0], panel.width, 3 * FONT, tight=True)
    panel.frame(xlabel="share of paired users (run better / equal / worse than baseline)")
    counts = tests[["wins", "ties", "losses"]].astype(float).to_numpy()
    total = counts.sum(axis=1).clip(min=1)
    start = np.zeros(len(tests))
    bar = 0.6 * panel.height / len(tests)
    parts = (("wins", DIRECTION_COLORS[1]), ("ties", "#d0d7de"), ("losses", DIRECTION_COLORS[-1]))
    for i, (column, color) in enumerate(parts):
        share = counts[:, i] / total
        for row, (x0, w, count) in enumerate(zip(start, share, tests[column])):
            y = panel.py(row)
            panel.marks.append(rect(panel.px(x0), y - bar / 2, panel.px(x0 + w) - panel.px(x0), bar, color))
            if w >= 0.06:
                panel.marks.append(text(panel.px(x0 + w / 2), y, f"{int(count)}", size=7.0,
                                        color="#ffffff" if column != "ties" else "#000000"))
        start = start + share
    key = legend(left + panel.width, 4, [(c, color) for c, color in parts], columns=3, swatch="box", anchor="end")
    return figure(WIDTH, height, "wins", [panel], [key])


def forest(tests: pd.DataFrame, name: str = "forest", by: str = "metric", panels_per_row: int = 3) -> str:
    """Differences with their intervals, one panel per ``by`` value (metric, or segment), one row per
    compared pair: filled and colored when significant, grey when not; a line at zero."""
    if tests is None or tests.empty:
        return ""
    groups = list(dict.fromkeys(tests[by]))
    one = tests["baseline"].nunique() == 1
    rows = max(len(tests[tests[by] == g]) for g in groups)
    label = lambda r: _pair(r, one) if by == "metric" else f"{_pair(r, one)} · {isolated(r['metric'])}"  # noqa: E731
    labels = {g: [label(r) for _, r in tests[tests[by] == g].iterrows()] for g in groups}
    longest = max(len(x) for ls in labels.values() for x in ls)
    columns = panels_per_row if longest <= 28 else 1  # long labels (several run columns, every pair): one per row
    left = GAP + max(text_width(x) for ls in labels.values() for x in ls) + 8
    areas, total = _cells(len(groups), columns, (0.9 + 0.3 * rows) * 72, left)
    spans = lambda part: [0.0, *part["ci_low"], *part["ci_high"], *part["mean_diff"]]  # noqa: E731
    shared = by != "metric"  # segments: one x axis for every panel
    panels = []
    for (x0, top, width, high), group in zip(areas, groups):
        part = tests[tests[by] == group].reset_index(drop=True)
        axis = Axis.fit(spans(tests) if shared else spans(part), width, 3 * FONT)
        panel = Panel(x0, top, width, high, axis, categories=labels[group])
        panel.frame(title=isolated(group), xlabel="difference (run − baseline)")
        panel.axes += [line([(x0, panel.py(y)), (x0 + width, panel.py(y))], "#e5e5e5", 0.8) for y in range(len(part))]
        zero = panel.px(0.0)
        panel.marks.append(line([(zero, top), (zero, top + high)], "#000000", 0.8))
        for y, row in part.iterrows():
            color = DIRECTION_COLORS[int(row["direction"])]
            yy = panel.py(y)
            if _finite(row["ci_low"]) and _finite(row["ci_high"]):
                panel.marks.append(line([(panel.px(row["ci_low"]), yy), (panel.px(row["ci_high"]), yy)], color, 2.0))
            if _finite(row["mean_diff"]):
                panel.marks.append(circle(panel.px(row["mean_diff"]), yy, 2.5, color,
                                          fill=color if row["significant"] else "#ffffff"))
        panels.append(panel)
    return figure(WIDTH, total, name, panels)
