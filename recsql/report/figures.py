"""The report's figures, drawn with matplotlib from the frames of :mod:`recsql.report.data` and
written as inline SVG.

No pyplot and no backend switch: each figure is a ``matplotlib.figure.Figure`` saved as SVG, so a
report drawn in Jupyter leaves the user's plotting state alone. The SVG is deterministic: its ids
are salted with the figure's name (unique on the page), it carries no date, and text stays text
(``svg.fonttype = none``), so the same frames give the same bytes. Text is drawn as it is written:
never as mathtext (``$...$``) or LaTeX, whatever the user's rcParams say, and every name (run,
metric, segment) outside ASCII is isolated (:func:`recsql.safe_text.isolated`), so a right-to-left
override in one label cannot reorder the rest of it.
"""
from __future__ import annotations

import io
import math
import re
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from ..safe_text import isolated

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DIRECTION_COLORS = {1: "#1a7f37", -1: "#cf222e", 0: "#6e7781"}  # higher, lower, not significant
STYLE = {"svg.fonttype": "none", "font.family": "sans-serif", "font.size": 9, "axes.titlesize": 10,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.color": "#e5e5e5",
         "legend.frameon": False,
         "text.parse_math": False, "text.usetex": False}  # a run named "$5 vs $6" or "$\\frac$" is that text


def colors(runs: Sequence[str]) -> dict[str, str]:
    """One color per run, the same in every figure."""
    return {run: PALETTE[i % len(PALETTE)] for i, run in enumerate(runs)}


@contextmanager
def _style(name: str) -> Iterator[None]:
    import matplotlib
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"recsql-{name}"}):
        yield


def _grid(panels: int, columns: int, width: float, height: float, sharex: bool = False) -> tuple[Any, list[Any]]:
    """A figure with ``panels`` axes in rows of ``columns`` (unused cells hidden; ``sharex``: one x axis)."""
    from matplotlib.figure import Figure
    cols = max(1, min(columns, panels))
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(width, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex="all" if sharex else "none").ravel().tolist()
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes[:panels]


def svg(fig: Any, name: str) -> str:
    """The figure as an ``<svg>`` element for inline HTML (no XML prolog, DOCTYPE or metadata).

    Printed by the SVG canvas itself in one draw, which lays the figure out first (constrained
    layout, text measured by the SVG renderer) and then draws it: the bytes ``savefig`` writes, for
    which it draws the figure twice (a dry run to lay it out, then the real one)."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    buffer = io.StringIO()
    with _style(name):
        FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    return text.replace("<svg ", f'<svg role="img" aria-label="{name}" data-figure="{name}" ', 1)


def curves(frame: pd.DataFrame, runs: Sequence[str]) -> str:
    """metric@k for k = 1..K: one panel per metric, one line per run."""
    families = list(dict.fromkeys(frame["family"]))
    if frame.empty or frame.groupby("family")["k"].nunique().max() < 2:
        return ""
    palette = colors(runs)
    with _style("curves"):
        fig, axes = _grid(len(families), 3, 10.5, 2.8)
        for ax, family in zip(axes, families):
            part = frame[frame["family"] == family]
            for run in runs:
                line = part[part["run"] == run].sort_values("k")
                ax.plot(line["k"], line["value"].astype(float), color=palette[run], label=isolated(run), linewidth=1.6,
                        marker="o" if len(line) <= 20 else None, markersize=2.5)
            ax.set_title(f"{isolated(family)}@k")
            ax.set_xlabel("k")
        axes[0].legend(fontsize=8)
        return svg(fig, "curves")


def distributions(items: list[dict[str, Any]], runs: Sequence[str]) -> str:
    """Per-user values: one panel per metric, one step histogram per run (share of the run's users
    with a value) and its mean as a dashed line."""
    metrics = list(dict.fromkeys(d["metric"] for d in items))
    if not metrics:
        return ""
    palette = colors(runs)
    with _style("distributions"):
        fig, axes = _grid(len(metrics), 3, 10.5, 2.6)
        for ax, metric in zip(axes, metrics):
            for d in (d for d in items if d["metric"] == metric):
                share = [c / d["n"] if d["n"] else 0.0 for c in d["counts"]]
                ax.stairs(share, d["edges"], color=palette[d["run"]], label=isolated(d["run"]), linewidth=1.4)
                if d["mean"] is not None:
                    ax.axvline(d["mean"], color=palette[d["run"]], linestyle="--", linewidth=1)
            ax.set_title(isolated(metric))
            ax.set_ylabel("share of users")
        axes[0].legend(fontsize=8)
        return svg(fig, "distributions")


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
    from matplotlib.figure import Figure
    with _style("wins"):
        fig = Figure(figsize=(10.5, 0.9 + 0.32 * len(tests)), layout="constrained")
        ax = fig.subplots()
        counts = tests[["wins", "ties", "losses"]].astype(float).to_numpy()
        total = counts.sum(axis=1).clip(min=1)
        left = np.zeros(len(tests))
        for i, (column, color) in enumerate((("wins", DIRECTION_COLORS[1]), ("ties", "#d0d7de"),
                                             ("losses", DIRECTION_COLORS[-1]))):
            share = counts[:, i] / total
            ax.barh(labels, share, left=left, color=color, label=column, height=0.6)
            for y, (x0, w, count) in enumerate(zip(left, share, tests[column])):
                if w >= 0.06:
                    ax.text(x0 + w / 2, y, f"{int(count)}", ha="center", va="center", fontsize=7,
                            color="white" if column != "ties" else "black")
            left = left + share
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of paired users (run better / equal / worse than baseline)")
        ax.legend(ncols=3, loc="lower right", bbox_to_anchor=(1, 1), fontsize=8)
        return svg(fig, "wins")


def forest(tests: pd.DataFrame, name: str = "forest", by: str = "metric", panels_per_row: int = 3) -> str:
    """Differences with their intervals, one panel per ``by`` value (metric, or segment), one row per
    compared pair: filled and colored when significant, grey when not; a line at zero."""
    if tests is None or tests.empty:
        return ""
    groups = list(dict.fromkeys(tests[by]))
    one = tests["baseline"].nunique() == 1
    rows = max(len(tests[tests[by] == g]) for g in groups)
    label = lambda r: _pair(r, one) if by == "metric" else f"{_pair(r, one)} · {isolated(r['metric'])}"  # noqa: E731
    longest = max(len(label(r)) for _, r in tests.iterrows())
    with _style(name):  # long labels (several run columns, every pair): one panel per row
        fig, axes = _grid(len(groups), panels_per_row if longest <= 28 else 1, 10.5, 0.9 + 0.3 * rows,
                          sharex=by != "metric")
        for ax, group in zip(axes, groups):
            part = tests[tests[by] == group].reset_index(drop=True)
            labels = [label(r) for _, r in part.iterrows()]
            for y, row in part.iterrows():
                color = DIRECTION_COLORS[int(row["direction"])]
                ax.plot([row["ci_low"], row["ci_high"]], [y, y], color=color, linewidth=2)
                ax.plot([row["mean_diff"]], [y], marker="o", markersize=5, color=color,
                        markerfacecolor=color if row["significant"] else "white")
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_yticks(range(len(part)), labels)
            ax.set_ylim(len(part) - 0.5, -0.5)
            ax.set_title(isolated(group))
            ax.set_xlabel("difference (run − baseline)")
            ax.xaxis.set_tick_params(labelbottom=True)
        return svg(fig, name)
