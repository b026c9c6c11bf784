"""Charts drawn on the server as SVG (pure: numbers in, markup out): a bar chart, a line chart
and a heat map, each with its axes and labels, a ``<title>`` and a ``<desc>`` that say what it
shows (``role="img"``), and its numbers as a table beside it for whoever does not see it
(:attr:`Chart.columns`, :attr:`Chart.rows`).

The console's Content-Security-Policy allows no inline style, so a chart is drawn with SVG's
presentation attributes (``fill``, ``stroke``, ``font-size``) and the classes its stylesheet
knows; no script. Every text is escaped. Printed in black and white a chart still reads: series
differ in lightness, lines in their dash pattern and marker, and every mark has its value in its
own ``<title>``.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as html_escape
from typing import Literal

Kind = Literal["bar", "line", "heat"]

#: Okabe and Ito's palette, distinct for the colour-blind and of differing lightness in grey
#: (https://jfly.uni-koeln.de/color/).
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
#: A line's dash pattern per series, so that printed lines differ without colour.
DASHES = ("", "6 3", "2 2", "8 3 2 3", "1 3", "10 4")
#: The heat map's scale, light to dark (ColorBrewer's single-hue Blues, 5 classes).
HEAT = ("#eff3ff", "#bdd7e7", "#6baed6", "#3182bd", "#08519c")
#: A chart's id on the page (its HTML ids are made from it).
CHART_ID = re.compile(r"^[a-z][a-z0-9-]{0,63}$")

WIDTH, HEIGHT = 760, 340
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 34, 92
FONT = 13


#: What XML 1.0 does not allow in a document (control characters, lone surrogates, U+FFFE and
#: U+FFFF), which a name a table sent may hold: each becomes U+FFFD.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def escape(text: str) -> str:
    """``text`` for SVG: escaped, and only characters XML allows."""
    return html_escape(_NOT_XML.sub("\ufffd", text), quote=True)


@dataclass(frozen=True)
class Series:
    """One series of a chart: its name and a value per label (None: no value)."""

    name: str
    values: tuple[float | None, ...]


@dataclass(frozen=True)
class Chart:
    """A chart: its SVG, and its numbers as a table (the header, then a row per label)."""

    id: str
    kind: Kind
    title: str
    description: str
    svg: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def number(value: float | None) -> str:
    """A value as the charts and their tables write it: whole numbers with thousands separated,
    others to two decimals; nothing for no value."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def nice_ticks(top: float, count: int = 5, *, whole: bool = False) -> list[float]:
    """Ticks from 0 to at least ``top`` at a step of 1, 2 or 5 times a power of ten (``whole``:
    a whole number, for counts)."""
    raw = top / count
    # a step below the smallest normal float has no power of ten to stand on (10 ** -324 is 0):
    # a value that small is drawn on the scale of nothing at all
    if not math.isfinite(top) or raw < sys.float_info.min:
        return [0.0, 1.0]
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if whole:
        step = max(1, math.ceil(step))
    steps = math.ceil(top / step - 1e-9)
    return [i * step for i in range(steps + 1)]


def _svg_open(chart_id: str, kind: Kind, title: str, description: str, height: int) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-{kind}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" data-chart="{chart_id}">',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
        f'<desc id="{chart_id}-desc">{escape(description)}</desc>',
    ]


def _check(chart_id: str, labels: Sequence[str], series: Sequence[Series]) -> None:
    if not CHART_ID.match(chart_id):
        raise ValueError(f"{chart_id!r} is not a chart id (a-z, 0-9, '-')")
    for one in series:
        if len(one.values) != len(labels):
            raise ValueError(
                f"series {one.name!r} has {len(one.values)} values for {len(labels)} labels"
            )


def _axes(
    labels: Sequence[str], ticks: Sequence[float], unit: str, plot_w: float, plot_h: float
) -> list[str]:
    """The y axis with its ticks and grid lines, the x axis with (some of) its labels."""
    out = ['<g class="axes" font-size="12" fill="#111">']
    top = ticks[-1]
    for tick in ticks:
        y = TOP + plot_h - plot_h * tick / top
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{LEFT + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#ccc" stroke-width="1"/>'
        )
        out.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(number(tick))}</text>'
        )
    out.append(
        f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#111" '
        'stroke-width="1.5"/>'
    )
    out.append(
        f'<line x1="{LEFT}" x2="{LEFT + plot_w:.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h}" '
        'stroke="#111" stroke-width="1.5"/>'
    )
    if unit:
        out.append(
            f'<text class="unit" x="{LEFT - 6}" y="{TOP - 12}" text-anchor="end">'
            f"{escape(unit)}</text>"
        )
    slot = plot_w / max(1, len(labels))
    every = max(1, math.ceil(len(labels) / 16))  # at most 16 labels under the axis
    for i, label in enumerate(labels):
        if i % every:
            continue
        x = LEFT + slot * (i + 0.5)
        y = TOP + plot_h + 14
        shown = label if len(label) <= 18 else label[:17] + "…"
        out.append(
            f'<text class="label" x="{x:.1f}" y="{y:.1f}" text-anchor="end" '
            f'transform="rotate(-40 {x:.1f} {y:.1f})">{escape(shown)}</text>'
        )
    out.append("</g>")
    return out


def _legend(series: Sequence[Series], line: bool) -> list[str]:
    if len(series) < 2:
        return []
    out = ['<g class="legend" font-size="12" fill="#111">']
    x = LEFT
    for i, one in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        if line:
            dash = DASHES[i % len(DASHES)]
            dashed = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(
                f'<line x1="{x}" x2="{x + 22}" y1="10" y2="10" stroke="{colour}" '
                f'stroke-width="3"{dashed}/>'
            )
        else:
            out.append(f'<rect x="{x}" y="3" width="14" height="14" fill="{colour}"/>')
        name = one.name if len(one.name) <= 24 else one.name[:23] + "…"
        out.append(f'<text x="{x + 26}" y="15">{escape(name)}</text>')
        x += 40 + 7 * len(name)
    out.append("</g>")
    return out


def _table(
    labels: Sequence[str], series: Sequence[Series], first: str
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    columns = (first, *(s.name for s in series))
    rows = tuple((label, *(number(s.values[i]) for s in series)) for i, label in enumerate(labels))
    return columns, rows


def _ticks(series: Sequence[Series], reference: float | None = None) -> list[float]:
    """The y axis's ticks: up to the highest value (and the reference), whole for counts."""
    values = [v for s in series for v in s.values if v is not None and math.isfinite(v)]
    whole = all(float(v).is_integer() for v in values)
    if reference is not None:
        values.append(reference)
    return nice_ticks(max([0.0, *values]), whole=whole)


def _nothing(series: Sequence[Series], plot_w: float, plot_h: float) -> list[str]:
    """A chart with no value says so in its middle."""
    if any(v is not None for s in series for v in s.values):
        return []
    return [
        f'<text class="nothing" x="{LEFT + plot_w / 2:.1f}" y="{TOP + plot_h / 2:.1f}" '
        'text-anchor="middle" font-size="16" fill="#555">Nothing in this period</text>'
    ]


def bar_chart(
    chart_id: str,
    title: str,
    description: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str = "",
    label_name: str = "",
    reference: tuple[str, float] | None = None,
) -> Chart:
    """Bars per label (side by side for several series), from zero; ``reference``: a named
    value drawn across the chart (an average to compare with)."""
    _check(chart_id, labels, series)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    ticks = _ticks(series, reference[1] if reference else None)
    out = _svg_open(chart_id, "bar", title, description, HEIGHT)
    out += _legend(series, line=False)
    out += _axes(labels, ticks, unit, plot_w, plot_h)
    out += _nothing(series, plot_w, plot_h)
    slot = plot_w / max(1, len(labels))
    width = slot * 0.8 / max(1, len(series))
    out.append('<g class="bars">')
    for s_index, one in enumerate(series):
        colour = COLOURS[s_index % len(COLOURS)]
        for i, value in enumerate(one.values):
            if value is None or not math.isfinite(value):
                continue
            height = plot_h * max(0.0, value) / ticks[-1]
            x = LEFT + slot * i + slot * 0.1 + width * s_index
            y = TOP + plot_h - height
            tip = f"{labels[i]}, {one.name}: {number(value)}{' ' + unit if unit else ''}"
            out.append(
                f'<rect class="bar" x="{x:.2f}" y="{y:.2f}" width="{max(width, 0.5):.2f}" '
                f'height="{height:.2f}" fill="{colour}" stroke="#111" stroke-width="0.5" '
                f'data-series="{escape(one.name)}" data-label="{escape(labels[i])}" '
                f'data-value="{value:g}"><title>{escape(tip)}</title></rect>'
            )
    out.append("</g>")
    if reference is not None:
        name, value = reference
        y = TOP + plot_h - plot_h * value / ticks[-1]
        out.append(
            f'<g class="reference"><line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.2f}" '
            f'y2="{y:.2f}" stroke="#b00020" stroke-width="2" stroke-dasharray="8 4"/>'
            f'<text x="{LEFT + plot_w - 4}" y="{y - 5:.2f}" text-anchor="end" font-size="12" '
            f'fill="#b00020">{escape(name)}: {escape(number(value))}</text></g>'
        )
    out.append("</svg>")
    columns, rows = _table(labels, series, label_name)
    if reference is not None:
        rows = (*rows, (reference[0], *(number(reference[1]) for _ in series)))
    return Chart(chart_id, "bar", title, description, "\n".join(out), columns, rows)


def line_chart(
    chart_id: str,
    title: str,
    description: str,
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    unit: str = "",
    label_name: str = "",
) -> Chart:
    """A line per series through its values (a point per value; no value: a gap)."""
    _check(chart_id, labels, series)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    ticks = _ticks(series)
    out = _svg_open(chart_id, "line", title, description, HEIGHT)
    out += _legend(series, line=True)
    out += _axes(labels, ticks, unit, plot_w, plot_h)
    out += _nothing(series, plot_w, plot_h)
    slot = plot_w / max(1, len(labels))
    for s_index, one in enumerate(series):
        colour = COLOURS[s_index % len(COLOURS)]
        dash = DASHES[s_index % len(DASHES)]
        points: list[tuple[float, float, int]] = []
        for i, value in enumerate(one.values):
            if value is None or not math.isfinite(value):
                points.append((math.nan, math.nan, i))
                continue
            x = LEFT + slot * (i + 0.5)
            y = TOP + plot_h - plot_h * max(0.0, value) / ticks[-1]
            points.append((x, y, i))
        out.append(f'<g class="series" data-series="{escape(one.name)}">')
        for run in _runs(points):
            if len(run) > 1:
                path = " ".join(f"{x:.2f},{y:.2f}" for x, y, _ in run)
                dashed = f' stroke-dasharray="{dash}"' if dash else ""
                out.append(
                    f'<polyline class="line" points="{path}" fill="none" stroke="{colour}" '
                    f'stroke-width="2.5"{dashed}/>'
                )
        for x, y, i in points:
            if math.isnan(x):
                continue
            value = one.values[i]
            tip = f"{labels[i]}, {one.name}: {number(value)}{' ' + unit if unit else ''}"
            out.append(
                f'<circle class="point" cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{colour}" '
                f'stroke="#111" stroke-width="0.75" data-label="{escape(labels[i])}" '
                f'data-value="{value:g}"><title>{escape(tip)}</title></circle>'
            )
        out.append("</g>")
    out.append("</svg>")
    columns, rows = _table(labels, series, label_name)
    return Chart(chart_id, "line", title, description, "\n".join(out), columns, rows)


def _runs(points: Sequence[tuple[float, float, int]]) -> list[list[tuple[float, float, int]]]:
    """The stretches of points without a gap."""
    runs: list[list[tuple[float, float, int]]] = [[]]
    for point in points:
        if math.isnan(point[0]):
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(point)
    return [r for r in runs if r]


def heat_map(
    chart_id: str,
    title: str,
    description: str,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    unit: str = "",
    corner: str = "",
) -> Chart:
    """A cell per row and column, darker for a higher value (five classes from the lowest to
    the highest value shown; no value: white with a cross)."""
    if not CHART_ID.match(chart_id):
        raise ValueError(f"{chart_id!r} is not a chart id (a-z, 0-9, '-')")
    if len(values) != len(row_labels) or any(len(r) != len(column_labels) for r in values):
        raise ValueError(
            f"a heat map of {len(row_labels)} rows and {len(column_labels)} columns needs as "
            "many values"
        )
    left, top = 70, 60
    cell = max(6.0, min(40.0, (WIDTH - left - RIGHT) / max(1, len(column_labels))))
    height = int(top + cell * len(row_labels) + 50)
    seen = [v for r in values for v in r if v is not None and math.isfinite(v)]
    low, high = (min(seen), max(seen)) if seen else (0.0, 0.0)
    font = max(7, min(12, int(cell * 0.8)))
    out = _svg_open(chart_id, "heat", title, description, height)
    out.append(f'<g class="axes" font-size="{font}" fill="#111">')
    for j, label in enumerate(column_labels):
        x = left + cell * (j + 0.5)
        out.append(
            f'<text class="label" x="{x:.1f}" y="{top - 4}" text-anchor="start" '
            f'transform="rotate(-60 {x:.1f} {top - 4})">{escape(label)}</text>'
        )
    for i, label in enumerate(row_labels):
        y = top + cell * (i + 0.5) + font / 3
        out.append(
            f'<text class="label" x="{left - 4}" y="{y:.1f}" text-anchor="end">'
            f"{escape(label)}</text>"
        )
    out.append("</g>")
    out.append('<g class="cells">')
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            x, y = left + cell * j, top + cell * i
            tip = f"{row_labels[i]} × {column_labels[j]}: {number(value) or 'no value'}"
            if value is None or not math.isfinite(value):
                out.append(
                    f'<rect class="cell empty" x="{x:.2f}" y="{y:.2f}" width="{cell:.2f}" '
                    f'height="{cell:.2f}" fill="#fff" stroke="#999" stroke-width="0.3">'
                    f"<title>{escape(tip)}</title></rect>"
                )
                continue
            shade = HEAT[_class(value, low, high)]
            out.append(
                f'<rect class="cell" x="{x:.2f}" y="{y:.2f}" width="{cell:.2f}" '
                f'height="{cell:.2f}" fill="{shade}" stroke="#fff" stroke-width="0.3" '
                f'data-value="{value:g}"><title>{escape(tip)}</title></rect>'
            )
    out.append("</g>")
    legend_y = top + cell * len(row_labels) + 16
    out.append('<g class="legend" font-size="12" fill="#111">')
    out.append(f'<text x="{left}" y="{legend_y + 12}">{escape(number(low))}</text>')
    for k, shade in enumerate(HEAT):
        out.append(
            f'<rect x="{left + 60 + 24 * k}" y="{legend_y}" width="24" height="16" '
            f'fill="{shade}" stroke="#111" stroke-width="0.5"/>'
        )
    out.append(
        f'<text x="{left + 60 + 24 * len(HEAT) + 6}" y="{legend_y + 12}">'
        f"{escape(number(high))}{' ' + escape(unit) if unit else ''}</text>"
    )
    out.append("</g></svg>")
    columns = (corner, *column_labels)
    rows = tuple(
        (label, *(number(v) for v in row)) for label, row in zip(row_labels, values, strict=True)
    )
    return Chart(chart_id, "heat", title, description, "\n".join(out), columns, rows)


def _class(value: float, low: float, high: float) -> int:
    """Which of the five shades a value takes between the lowest and the highest."""
    if high <= low:
        return len(HEAT) // 2
    return min(len(HEAT) - 1, int((value - low) / (high - low) * len(HEAT)))
