"""Plotting in SVG text, for the report's figures: panels with linear axes, ticks, grid, titles,
labels and legends, and the marks the figures draw (lines, markers, steps, bars, text).

Written directly, without a plotting library: a figure of the report is a few hundred elements,
which a browser lays out itself. Coordinates are points (1/72 inch), as the figure's size is given
in inches. Text is text (the page's sans-serif font): its width, needed only to leave room for the
tick labels, is estimated from the number of characters. Every text is escaped for XML; names are
isolated by the caller (:func:`recsql.safe_text.isolated`). The same calls give the same bytes.

>>> ticks(0.0, 1.0, 6)
[0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
>>> [tick_label(t, 0.2) for t in (-0.4, 0.0, 0.6000000000000001)]
['−0.4', '0.0', '0.6']
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

FONT = 9.0  # points: tick labels and axis labels
TITLE = 10.0
SMALL = 8.0  # legends and values written on bars
CHAR = 0.6  # a character's width in a sans-serif font, as a share of its size (wide enough for digits)
GRID, AXIS, TEXT = "#e5e5e5", "#000000", "#000000"
STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # tick steps tried at each power of ten


def text_width(text: str, size: float = FONT) -> float:
    """An estimate of ``text``'s width in points (the isolates FSI/PDI take no room)."""
    return sum(1 for ch in text if ch not in "\u2068\u2069") * CHAR * size


def ticks(low: float, high: float, most: int, integer: bool = False) -> list[float]:
    """At most ``most`` + 1 round values (a step of 1, 2, 2.5 or 5 times a power of ten; whole
    numbers when ``integer``) from ``low`` to ``high``, both included when round."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    most = max(1, most)
    raw = (high - low) / most
    power = 10.0 ** math.floor(math.log10(raw))
    step = next((s * power for s in STEPS if s * power >= raw * (1 - 1e-9) and (not integer or s * power >= 1 and
                                                                               (s * power) % 1 == 0)),
                10 * power)
    if integer:
        step = max(1.0, math.ceil(step))
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    return [i * step for i in range(first, last + 1)]


def tick_label(value: float, step: float) -> str:
    """A tick's text: as many decimals as the step needs, the minus sign U+2212."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    if step > 0 and round(step * 10 ** decimals, 6) % 1:
        decimals += 1  # 2.5, 0.25
    text = f"{value:.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", "\u2212")


def esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate in the SVG: two decimals, no trailing zeros."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def text(x: float, y: float, value: str, size: float = FONT, anchor: str = "middle", baseline: str = "central",
         color: str = TEXT, weight: str | None = None, rotate: bool = False) -> str:
    """A text element at (x, y); ``baseline`` central/hanging/auto as SVG's ``dominant-baseline``."""
    attrs = f'x="{num(x)}" y="{num(y)}" font-size="{num(size)}" text-anchor="{anchor}" dominant-baseline="{baseline}"'
    if color != TEXT:
        attrs += f' fill="{color}"'
    if weight:
        attrs += f' font-weight="{weight}"'
    if rotate:
        attrs += f' transform="rotate(-90 {num(x)} {num(y)})"'
    return f"<text {attrs}>{esc(value)}</text>"


def line(points: Iterable[tuple[float, float]], color: str, width: float = 1.0, dash: str | None = None) -> str:
    path = " ".join(f"{num(x)},{num(y)}" for x, y in points)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="{num(width)}" '
            f'stroke-linejoin="round" stroke-linecap="butt"{extra}/>')


def circle(x: float, y: float, radius: float, color: str, fill: str | None = None, width: float = 1.0) -> str:
    return (f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(radius)}" fill="{fill or color}" stroke="{color}" '
            f'stroke-width="{num(width)}"/>')


def rect(x: float, y: float, w: float, h: float, color: str) -> str:
    return f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(w, 0))}" height="{num(max(h, 0))}" fill="{color}"/>'


@dataclass
class Axis:
    """A linear axis: its limits and its ticks."""

    low: float
    high: float
    ticks: list[float] = field(default_factory=list)
    step: float = 1.0

    @classmethod
    def fit(cls, values: Sequence[float], length: float, spacing: float, margin: float = 0.05,
            tight: bool = False, integer: bool = False, floor: float | None = None) -> "Axis":
        """An axis over ``values`` (their range plus ``margin`` of it on each side, none when
        ``tight``; ``floor``: a limit the axis starts at, as a histogram's zero), with about one tick
        per ``spacing`` points of its ``length``."""
        finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
        if high <= low:
            low, high = (low - 0.05 * abs(low), high + 0.05 * abs(high)) if low else (-0.055, 0.055)
        pad = 0.0 if tight else margin * (high - low)
        low, high = (low if floor is not None and low == floor else low - pad), high + pad
        marks = ticks(low, high, min(9, max(1, int(length // spacing))), integer)
        step = marks[1] - marks[0] if len(marks) > 1 else max(abs(low), abs(high), 1.0)
        return cls(low, high, marks, step)

    def at(self, value: float, start: float, length: float) -> float:
        """Where ``value`` falls on an axis drawn from ``start`` over ``length`` points."""
        return start + (value - self.low) / (self.high - self.low) * length

    def labels(self) -> list[str]:
        return [tick_label(t, self.step) for t in self.ticks]


@dataclass
class Panel:
    """One plot area: ``left``/``top`` its corner and ``width``/``height`` its size, in points; ``x``
    and ``y`` its axes (``y`` None: the rows ``categories``, top to bottom, one per unit)."""

    left: float
    top: float
    width: float
    height: float
    x: Axis
    y: Axis | None = None
    categories: list[str] = field(default_factory=list)
    axes: list[str] = field(default_factory=list)  # grid, spines, ticks, labels: under the marks
    marks: list[str] = field(default_factory=list)

    def px(self, value: float) -> float:
        return self.x.at(value, self.left, self.width)

    def py(self, value: float) -> float:
        """A value of the y axis, or a row's number (0 the top row) when the rows are categories."""
        if self.y is None:
            return self.top + (value + 0.5) / max(len(self.categories), 1) * self.height
        return self.top + self.height - self.y.at(value, 0.0, self.height)

    def frame(self, title: str = "", xlabel: str = "", ylabel: str = "", grid: bool = True) -> None:
        """Grid, left and bottom spines, ticks and their labels, the title and the axis labels."""
        bottom, right = self.top + self.height, self.left + self.width
        back: list[str] = []
        for tick, label in zip(self.x.ticks, self.x.labels()):
            x = self.px(tick)
            if grid:
                back.append(line([(x, self.top), (x, bottom)], GRID, 0.8))
            back.append(line([(x, bottom), (x, bottom + 3.5)], AXIS, 0.8))
            back.append(text(x, bottom + 5.5, label, baseline="hanging"))
        if self.y is not None:
            for tick, label in zip(self.y.ticks, self.y.labels()):
                y = self.py(tick)
                if grid:
                    back.append(line([(self.left, y), (right, y)], GRID, 0.8))
                back.append(line([(self.left - 3.5, y), (self.left, y)], AXIS, 0.8))
                back.append(text(self.left - 5.5, y, label, anchor="end"))
        else:
            for row, label in enumerate(self.categories):
                y = self.py(row)
                back.append(line([(self.left - 3.5, y), (self.left, y)], AXIS, 0.8))
                back.append(text(self.left - 5.5, y, label, anchor="end"))
        back.append(line([(self.left, self.top), (self.left, bottom), (right, bottom)], AXIS, 0.8))
        if title:
            back.append(text(self.left + self.width / 2, self.top - 6, title, size=TITLE, baseline="auto"))
        if xlabel:
            back.append(text(self.left + self.width / 2, bottom + 8 + FONT + 4, xlabel, baseline="hanging"))
        if ylabel:
            room = max((text_width(label) for label in self.y.labels()), default=0.0) if self.y else 0.0
            back.append(text(self.left - room - 14, self.top + self.height / 2, ylabel, rotate=True))
        self.axes = back


def legend(x: float, y: float, entries: Sequence[tuple[str, str]], size: float = SMALL, columns: int = 1,
           swatch: str = "line", anchor: str = "start", backed: bool = False) -> str:
    """Entries (label, color) from (x, y) down (``columns`` > 1: side by side); ``anchor`` end:
    ending at x. ``swatch``: a short line or a square; ``backed``: on a translucent white box (a
    legend inside a panel stays readable over the lines)."""
    widths = [18 + text_width(label, size) + 10 for label, _ in entries]
    across = sum(widths[:columns]) if columns > 1 else max(widths, default=0.0)
    left = x - across if anchor == "end" else x
    parts, cursor = [], left
    if backed:
        rows = math.ceil(len(entries) / columns)
        parts.append(f'<rect x="{num(left - 3)}" y="{num(y - 2)}" width="{num(across)}" '
                     f'height="{num(rows * (size + 5) + 4)}" fill="#ffffff" fill-opacity="0.8"/>')
    for i, (label, color) in enumerate(entries):
        row = i // columns if columns > 1 else i
        col_x = cursor if columns > 1 else left
        yy = y + row * (size + 5) + size / 2
        if swatch == "line":
            parts.append(line([(col_x, yy), (col_x + 14, yy)], color, 1.6))
        else:
            parts.append(rect(col_x + 2, yy - size / 2 + 1, 10, size - 2, color))
        parts.append(text(col_x + 18, yy, label, size=size, anchor="start"))
        if columns > 1:
            cursor = left if (i + 1) % columns == 0 else cursor + widths[i]
    return "".join(parts)


def figure(width: float, height: float, name: str, panels: Sequence[Panel], extra: Sequence[str] = ()) -> str:
    """The ``<svg>`` element of a figure: its panels (the axes under the marks; the axes' limits
    hold every mark, so nothing is clipped) and ``extra`` elements, labelled ``name``
    (``data-figure``)."""
    body = []
    for panel in panels:
        body.extend(panel.axes)
        body.extend(panel.marks)
    return (f'<svg role="img" aria-label="{esc(name)}" data-figure="{esc(name)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{num(width)}pt" height="{num(height)}pt" viewBox="0 0 {num(width)} {num(height)}" '
            f'font-family="DejaVu Sans, Bitstream Vera Sans, Arial, Helvetica, sans-serif">\n'
            f'<rect width="100%" height="100%" fill="#ffffff"/>\n'
            + "\n".join(body) + "\n" + "".join(extra) + "\n</svg>")
