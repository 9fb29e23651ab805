"""Server-rendered inline SVG charts of published results: pure functions, no I/O.

Every function takes a results dict exactly as ``deniable.results.question_results``
returns it (and ``GET /api/v1/surveys/{id}/results`` serves it) and returns an SVG
string.  All text that reaches the markup (labels, titles) goes through
:func:`html.escape`, and every number the chart shows is also written, at full
precision, into ``data-*`` attributes so tests and scrapers can check it:

* frequency questions: one ``<g class="bar" data-label data-estimate data-shown
  data-lower data-upper data-interval>`` per category; the whisker is the
  tightest published per-category interval (``result["tightest"]``, named in the
  chart and in ``data-interval``; already clipped to [0, 1]).
* numeric questions: one ``<g class="mean" data-mean data-shown data-lower
  data-upper data-interval>`` on the question's ``[lo, hi]`` scale.

Raw unbiased estimates may fall below 0 or above 1 (or outside [lo, hi]).  The
bar (the dot) then shows the post-processed value, the raw one clipped to the
range (``data-shown``), with the raw value written beside it and a marker, so
nothing is drawn outside its axis and nothing is hidden.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

# One column that fits a phone drawn 1:1 (the page draws it at 100% of its card, at most
# MAX_DRAWN px): each category is its label, then its value, then its bar, so nothing
# shrinks on a narrow screen and the smallest text (11 units) is drawn at 12 px or more
# wherever the card is at least WIDTH * 12 / 11 px wide (a 390 px phone's is 344 px).
WIDTH = 300
MAX_DRAWN = 400
LEFT = 12
RIGHT = 16
ROW_HEIGHT = 58
MEAN_ROW_HEIGHT = 44
BAR_HEIGHT = 14
LEGEND_LINE = 14
BOTTOM = 26
MAX_LABEL_CHARS = 40

BAR_FILL = "#4c78a8"
NEGATIVE_FILL = "#b279a2"
WHISKER = "#1b1b1b"
GRID = "#d9d9d9"
TEXT = "#222222"

FAMILY_NAMES = {
    "chebyshev": "Chebyshev",
    "chebyshev_exact": "exact-variance Chebyshev",
    "bernstein": "Bernstein",
    "exact_tail": "exact-tail",
    "ratio": "ratio (union bound)",
}
# Rows of an optional, conditional or scale question that are points, not shares.
POINT_ROWS = ("mean", "nps")


def shown_interval(result: Mapping[str, Any], item: Mapping[str, Any]) -> tuple[float, float, str]:
    """(lower, upper, family) of the tightest published interval of one category or mean."""
    family = str(result.get("tightest", "chebyshev"))
    if family == "ratio":  # deniable.nonresponse: lower/upper are the ratio's interval
        return float(item["lower"]), float(item["upper"]), family
    if family != "chebyshev" and f"{family}_lower" in item:
        return float(item[f"{family}_lower"]), float(item[f"{family}_upper"]), family
    return float(item["lower"]), float(item["upper"]), "chebyshev"


__all__ = [
    "FAMILY_NAMES",
    "POINT_ROWS",
    "bar_chart",
    "charted",
    "chart_for",
    "format_number",
    "format_share",
    "mean_chart",
    "number",
    "shown_interval",
]


def number(value: float) -> str:
    """A float at full precision for a ``data-*`` attribute (Python's shortest repr)."""
    return repr(float(value))


def format_share(value: float) -> str:
    """A share as a percentage with one decimal, for people."""
    return f"{100.0 * value:.1f}%"


def format_number(value: float) -> str:
    """A number with four significant digits, for people."""
    if value == 0 or 1e-3 <= abs(value) < 1e6:
        text = f"{value:.4g}"
    else:
        text = f"{value:.3e}"
    return text


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _shorten(label: str, limit: int = MAX_LABEL_CHARS) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _nice_step(span: float) -> float:
    """A 1-2-5 tick step giving about five ticks over ``span``."""
    raw = span / 5.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10.0 * magnitude  # pragma: no cover - the loop always returns


def _ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """Axis bounds widened to whole steps, and the tick positions."""
    if not hi > lo:
        hi = lo + 1.0
    step = _nice_step(hi - lo)
    start = math.floor(lo / step + 1e-9) * step
    stop = math.ceil(hi / step - 1e-9) * step
    count = round((stop - start) / step)
    return start, stop, [start + i * step for i in range(count + 1)]


def _svg_open(height: int, title: str, description: str, kind: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {kind}" role="img" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="13">'
        f"<title>{escape(title)}</title><desc>{escape(description)}</desc>"
    )


def _legend(lines: Sequence[str]) -> str:
    """The legend: one ``<text>`` (its first line the text's own), one line per entry."""
    first, *rest = lines
    return (
        f'<text x="0" y="{LEGEND_LINE - 2}" fill="{TEXT}" font-size="11">{escape(first)}'
        + "".join(f'<tspan x="0" dy="{LEGEND_LINE}">{escape(line)}</tspan>' for line in rest)
        + "</text>"
    )


def _top(lines: Sequence[str]) -> int:
    return LEGEND_LINE * len(lines) + 8


def _axis(
    scale, ticks: Sequence[float], top: int, bottom: int, formatter, zero: float | None
) -> list[str]:
    parts = []
    for tick in ticks:
        x = scale(tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{GRID}" '
            f'stroke-width="1"/>'
            f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="{TEXT}" '
            f'font-size="11">{escape(formatter(tick))}</text>'
        )
    if zero is not None:
        x = scale(zero)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#888" '
            f'stroke-width="1.2"/>'
        )
    return parts


def _whisker(x1: float, x2: float, y: float, cap: float = 5.0) -> str:
    return (
        f'<g class="whisker" stroke="{WHISKER}" stroke-width="1.6">'
        f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}"/>'
        f'<line x1="{x1:.1f}" y1="{y - cap:.1f}" x2="{x1:.1f}" y2="{y + cap:.1f}"/>'
        f'<line x1="{x2:.1f}" y1="{y - cap:.1f}" x2="{x2:.1f}" y2="{y + cap:.1f}"/>'
        "</g>"
    )


def bar_chart(result: Mapping[str, Any], title: str = "") -> str:
    """Horizontal bars of estimated shares with per-category Chebyshev whiskers.

    ``result`` is a frequency result (yes/no, single or multiple choice) with at
    least one report; the bar length is the raw estimate, the whisker
    ``[lower, upper]``.
    """
    categories = list(result["categories"])
    if not categories:
        raise ValueError("a bar chart needs at least one category")
    estimates = [float(c["estimate"]) for c in categories]
    intervals = [shown_interval(result, c) for c in categories]
    lowers = [i[0] for i in intervals]
    uppers = [i[1] for i in intervals]
    family = intervals[0][2]
    shown = [min(max(e, 0.0), 1.0) for e in estimates]
    lo, hi, ticks = _ticks(0.0, max(*shown, *uppers, 0.1))
    plot_left, plot_right = LEFT, WIDTH - RIGHT
    span = hi - lo

    def scale(value: float) -> float:
        return plot_left + (value - lo) / span * (plot_right - plot_left)

    confidence = 1.0 - float(result.get("beta", 0.05))
    legend = [
        f"Estimated share (bar) with its {format_share(confidence).replace('.0%', '%')}",
        f"{FAMILY_NAMES[family]} interval (whisker)",
    ]
    top = _top(legend)
    chart_bottom = top + ROW_HEIGHT * len(categories)
    height = chart_bottom + BOTTOM
    description = "; ".join(
        f"{c['label']}: {format_share(e)} (interval {format_share(lw)} to {format_share(up)})"
        for c, e, lw, up in zip(categories, estimates, lowers, uppers, strict=True)
    )
    parts = [_svg_open(height, title or "Estimated shares", description, "bars"), _legend(legend)]
    parts.extend(_axis(scale, ticks, top, chart_bottom, format_share_tick, 0.0))
    zero_x = scale(0.0)
    for row, (category, estimate, lower, upper) in enumerate(
        zip(categories, estimates, lowers, uppers, strict=True)
    ):
        label = str(category["label"])
        y = top + row * ROW_HEIGHT
        mid = y + ROW_HEIGHT - 4 - BAR_HEIGHT / 2
        value = min(max(estimate, 0.0), 1.0)
        outside = value != estimate
        x_est = scale(value)
        left, width = min(zero_x, x_est), abs(x_est - zero_x)
        fill = NEGATIVE_FILL if outside else BAR_FILL
        raw = f" (raw {format_share(estimate)})" if outside else ""
        parts.append(
            f'<g class="bar" data-label="{_attr(label)}" data-estimate="{number(estimate)}" '
            f'data-shown="{number(value)}" data-lower="{number(lower)}" '
            f'data-upper="{number(upper)}" data-interval="{family}">'
            f"<title>{escape(label)}: {format_share(value)}{raw}, interval "
            f"{format_share(lower)} to {format_share(upper)}</title>"
            f'<text x="0" y="{y + 15:.1f}" fill="{TEXT}">{escape(_shorten(label))}</text>'
            f'<rect x="{left:.1f}" y="{mid - BAR_HEIGHT / 2:.1f}" width="{max(width, 0.5):.1f}" '
            f'height="{BAR_HEIGHT}" fill="{fill}" rx="2"/>'
            + _whisker(scale(lower), scale(upper), mid)
            + f'<text x="0" y="{y + 31:.1f}" fill="{TEXT}" font-size="12">'
            f'<tspan font-weight="600">{format_share(value)}</tspan>'
            + (f'<tspan class="raw" fill="{NEGATIVE_FILL}">{escape(raw)}</tspan>' if raw else "")
            + f'<tspan fill="#555"> [{format_share(lower)}, {format_share(upper)}]</tspan>'
            "</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def format_share_tick(value: float) -> str:
    text = f"{100.0 * value:.1f}".rstrip("0").rstrip(".")
    return f"{'0' if text in ('-0', '') else text}%"


def mean_chart(result: Mapping[str, Any], lo: float, hi: float, title: str = "") -> str:
    """The estimated mean as a point on the ``[lo, hi]`` scale with its tightest whisker.

    A raw mean outside [lo, hi] is drawn clipped to the edge with a marker, and
    the raw value is written in the text.
    """
    mean = float(result["mean"])
    lower, upper, family = shown_interval(result, result)
    lo, hi = float(lo), float(hi)
    value = min(max(mean, lo), hi)
    outside = value != mean
    raw = f" (raw {format_number(mean)})" if outside else ""
    axis_lo, axis_hi, ticks = _ticks(lo, hi)
    plot_left, plot_right = LEFT, WIDTH - RIGHT
    span = axis_hi - axis_lo

    def scale(value: float) -> float:
        return plot_left + (value - axis_lo) / span * (plot_right - plot_left)

    confidence = 1.0 - float(result.get("beta", 0.05))
    legend = [
        "Estimated mean (dot) on the answer range",
        f"[{format_number(lo)}, {format_number(hi)}] with its "
        f"{format_share(confidence).replace('.0%', '%')}",
        f"{FAMILY_NAMES[family]} interval (whisker)",
    ]
    top = _top(legend)
    height = top + MEAN_ROW_HEIGHT + BOTTOM
    mid = top + MEAN_ROW_HEIGHT - 12
    description = (
        f"mean {format_number(value)}{raw}, interval {format_number(lower)} to "
        f"{format_number(upper)}"
    )
    x_mean = scale(value)
    marker = ""
    if outside:
        tip = 1 if mean > hi else -1  # an arrowhead at the edge, pointing off the axis
        marker = (
            f'<path class="clipped-marker" fill="{NEGATIVE_FILL}" d="M{x_mean + 14 * tip:.1f} '
            f"{mid:.1f} L{x_mean + 7 * tip:.1f} {mid - 6:.1f} L{x_mean + 7 * tip:.1f} "
            f'{mid + 6:.1f} Z"/>'
        )
    parts = [
        _svg_open(height, title or "Estimated mean", description, "mean-chart"),
        _legend(legend),
        *_axis(scale, ticks, top, top + MEAN_ROW_HEIGHT, format_number, None),
        f'<rect x="{scale(lo):.1f}" y="{mid - 3:.1f}" width="{scale(hi) - scale(lo):.1f}" '
        f'height="6" fill="#e8eef5"/>',
        f'<g class="mean" data-mean="{number(mean)}" data-shown="{number(value)}" '
        f'data-lower="{number(lower)}" data-upper="{number(upper)}" data-interval="{family}">'
        f"<title>mean {format_number(value)}{escape(raw)}, interval {format_number(lower)} to "
        f"{format_number(upper)}</title>"
        + _whisker(scale(lower), scale(upper), mid)
        + f'<circle cx="{x_mean:.1f}" cy="{mid:.1f}" r="6" '
        f'fill="{NEGATIVE_FILL if outside else BAR_FILL}"/>'
        + marker
        + f'<text x="0" y="{top + 15}" fill="{TEXT}">mean '
        f'<tspan font-weight="600">{format_number(value)}</tspan>'
        + (f'<tspan class="raw" fill="{NEGATIVE_FILL}">{escape(raw)}</tspan>' if raw else "")
        + f'<tspan fill="#555" font-size="12"> [{format_number(lower)}, '
        f"{format_number(upper)}]</tspan>"
        "</text></g>",
        "</svg>",
    ]
    return "".join(parts)


def charted(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the charts draw of a result: for an optional, conditional or scale question
    (rows with ``share_of``, deniable.nonresponse) the share rows as bars, or a number's mean
    row as its mean; the scale's mean and NPS rows are not charted yet.  Other results as they
    are."""
    rows = result.get("categories") or []
    if not rows or "share_of" not in rows[0]:
        return result
    if result.get("type") == "numeric":
        mean = next(row for row in rows if row["label"] == "mean")
        if mean["estimate"] is None:
            return {**result, "estimate": None}
        flat = {key: value for key, value in result.items() if key != "categories"}
        return {**flat, "mean": mean["estimate"], "lower": mean["lower"], "upper": mean["upper"]}
    shares = [row for row in rows if row["label"] not in POINT_ROWS and row["estimate"] is not None]
    return {**result, "categories": shares}


def chart_for(result: Mapping[str, Any], question: Mapping[str, Any] | None = None) -> str:
    """The chart for one question's result; ``""`` when there is nothing to draw yet.

    ``question`` is the question's definition (for the title and, for numeric
    questions, the ``lo``/``hi`` range).
    """
    question = question or {}
    result = charted(result)
    title = str(question.get("text", result.get("question", "")))
    if result.get("estimate", 0) is None or not result.get("n"):
        return ""
    if result.get("type") == "numeric" or "mean" in result:
        return mean_chart(
            result, question.get("lo", result["lower"]), question.get("hi", result["upper"]), title
        )
    return bar_chart(result, title)
