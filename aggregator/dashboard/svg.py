"""Server-rendered inline SVG charts of published results: pure functions, no I/O.

Every function takes a results dict exactly as ``deniable.results.question_results``
returns it (and ``GET /api/v1/surveys/{id}/results`` serves it) and returns an SVG
string.  All text that reaches the markup (labels, titles, words) goes through
:func:`html.escape`, and every number the chart shows is also written, at full
precision, into ``data-*`` attributes so tests and scrapers can check it:

* frequency questions: one ``<g class="bar" data-label data-estimate data-shown
  data-lower data-upper data-interval>`` per category; the whisker is the
  tightest published per-category interval (``result["tightest"]``, named in the
  chart and in ``data-interval``; already clipped to [0, 1]).  A share of an optional
  or conditional question's row also carries its ``data-share-of``.
* scales: the same groups, drawn as columns in the scale's order (:func:`scale_chart`).
* numeric questions: one ``<g class="mean" data-mean data-shown data-lower
  data-upper data-interval>`` on the question's ``[lo, hi]`` scale; a scale's mean point
  is drawn the same way on the scale's own axis (with ``data-label="mean"``), and its
  net promoter score as ``<g class="nps" data-label="nps" data-estimate ...>`` on
  -100..+100 (:func:`nps_chart`).

Raw unbiased estimates may fall below 0 or above 1 (or outside [lo, hi]).  The
bar (the dot) then shows the post-processed value, the raw one clipped to the
range (``data-shown``), with the raw value written beside it and a marker, so
nothing is drawn outside its axis and nothing is hidden.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
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
# Lines of 11-unit text wrap at about this many characters (~6 units each) to fit WIDTH.
LEGEND_CHARS = 46
# A scale's columns: share ticks left of the plot, the points under it, the anchors' words
# under the two ends (each in half the width, a few lines at most).
AXIS_LEFT = 34
COLUMNS_RIGHT = 8
PLOT_HEIGHT = 140
ANCHOR_CHARS = 22
ANCHOR_LINES = 3
# A scale's mean point is a row of its result, named as the row is.
LABELLED_MEAN = ' data-label="mean"'
# The net promoter score's axis, in points.
NPS_RANGE = (-100.0, 100.0)

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

__all__ = [
    "FAMILY_NAMES",
    "POINT_ROWS",
    "bar_chart",
    "charted",
    "chart_for",
    "format_number",
    "format_score",
    "format_share",
    "mean_chart",
    "nps_chart",
    "number",
    "scale_chart",
    "shown_interval",
]


def shown_interval(result: Mapping[str, Any], item: Mapping[str, Any]) -> tuple[float, float, str]:
    """(lower, upper, family) of the tightest published interval of one category or mean."""
    family = str(result.get("tightest", "chebyshev"))
    if family == "ratio":  # deniable.nonresponse: lower/upper are the ratio's interval
        return float(item["lower"]), float(item["upper"]), family
    if family != "chebyshev" and f"{family}_lower" in item:
        return float(item[f"{family}_lower"]), float(item[f"{family}_upper"]), family
    return float(item["lower"]), float(item["upper"]), "chebyshev"


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


def format_score(label: str, value: float) -> str:
    """A scale's ``mean`` point (three significant digits) or ``nps`` (whole points, signed),
    as the command line's results table writes them."""
    if label == "nps":
        text = f"{value:+.0f}"
        return "0" if text in ("+0", "-0") else text
    return f"{value:.3g}"


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _shorten(label: str, limit: int = MAX_LABEL_CHARS) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _wrap(text: str, width: int = LEGEND_CHARS, lines: int | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` characters (at most ``lines``, the last cut)."""
    wrapped = textwrap.wrap(text, width) or [""]
    if lines is not None and len(wrapped) > lines:
        wrapped = [*wrapped[: lines - 1], _shorten(" ".join(wrapped[lines - 1 :]), width)]
    return wrapped


def _level(result: Mapping[str, Any]) -> str:
    """The confidence level in words: ``95%``."""
    return format_share(1.0 - float(result.get("beta", 0.05))).replace(".0%", "%")


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


def _whisker(a1: float, a2: float, at: float, cap: float = 5.0, upright: bool = False) -> str:
    """A whisker from ``a1`` to ``a2`` at ``at`` across, capped at both ends (upright: a1 and a2
    are y's, ``at`` an x)."""
    lines = [(a1, at, a2, at), (a1, at - cap, a1, at + cap), (a2, at - cap, a2, at + cap)]
    if upright:
        lines = [(y1, x1, y2, x2) for x1, y1, x2, y2 in lines]
    return (
        f'<g class="whisker" stroke="{WHISKER}" stroke-width="1.6">'
        + "".join(
            f'<line x1="{a:.1f}" y1="{b:.1f}" x2="{c:.1f}" y2="{d:.1f}"/>' for a, b, c, d in lines
        )
        + "</g>"
    )


def _share_legend(result: Mapping[str, Any], family: str, mark: str, among: str | None) -> list:
    subject = "Estimated share" if among is None else f"Share {among}"
    return _wrap(
        f"{subject} ({mark}) with its {_level(result)} {FAMILY_NAMES[family]} interval (whisker)"
    )


def _row_data(category: Mapping[str, Any]) -> str:
    share_of = category.get("share_of")
    return f' data-share-of="{_attr(share_of)}"' if share_of else ""


def bar_chart(
    result: Mapping[str, Any],
    title: str = "",
    words: Mapping[str, str] | None = None,
    among: str | None = None,
) -> str:
    """Horizontal bars of estimated shares with per-category whiskers (the tightest family).

    ``result`` is a frequency result (yes/no, single or multiple choice) with at
    least one report; the bar length is the raw estimate, the whisker
    ``[lower, upper]``.  ``words``: what people read for a label (``data-label`` keeps the
    result's own); ``among``: whom the shares count, for the legend ("among those who
    answered").
    """
    categories = list(result["categories"])
    if not categories:
        raise ValueError("a bar chart needs at least one category")
    words = words or {}
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

    legend = _share_legend(result, family, "bar", among)
    top = _top(legend)
    chart_bottom = top + ROW_HEIGHT * len(categories)
    height = chart_bottom + BOTTOM
    description = "; ".join(
        f"{words.get(c['label'], c['label'])}: "
        f"{format_share(e)} (interval {format_share(lw)} to {format_share(up)})"
        for c, e, lw, up in zip(categories, estimates, lowers, uppers, strict=True)
    )
    parts = [_svg_open(height, title or "Estimated shares", description, "bars"), _legend(legend)]
    parts.extend(_axis(scale, ticks, top, chart_bottom, format_share_tick, 0.0))
    zero_x = scale(0.0)
    for row, (category, estimate, lower, upper) in enumerate(
        zip(categories, estimates, lowers, uppers, strict=True)
    ):
        label = str(category["label"])
        said = words.get(label, label)
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
            f'data-upper="{number(upper)}" data-interval="{family}"{_row_data(category)}>'
            f"<title>{escape(said)}: {format_share(value)}{raw}, interval "
            f"{format_share(lower)} to {format_share(upper)}</title>"
            f'<text x="0" y="{y + 15:.1f}" fill="{TEXT}">{escape(_shorten(said))}</text>'
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


def _scale_x(points: int) -> Callable[[int], float]:
    """The x of a scale's ``index``-th point (its column's middle); shared by the columns and
    the mean point, so the two charts line up when stacked."""
    slot = (WIDTH - COLUMNS_RIGHT - AXIS_LEFT) / points
    return lambda index: AXIS_LEFT + slot * (index + 0.5)


def scale_chart(
    result: Mapping[str, Any],
    title: str = "",
    ends: Sequence[str] = ("", ""),
    among: str | None = None,
) -> str:
    """A scale's shares as columns along its ordered points, left to right, each with its
    upright whisker, the points under them and the anchors' words (``ends``) at the two ends.

    ``result["categories"]`` are the points' share rows in the scale's order (``charted``);
    the numbers themselves are written beside the chart (the columns are too narrow for
    them), and in ``data-*`` and each column's ``<title>``.
    """
    rows = list(result["categories"])
    if not rows:
        raise ValueError("a scale chart needs at least one point")
    estimates = [float(r["estimate"]) for r in rows]
    intervals = [shown_interval(result, r) for r in rows]
    family = intervals[0][2]
    shown = [min(max(e, 0.0), 1.0) for e in estimates]
    lo, hi, ticks = _ticks(0.0, max(*shown, *(i[1] for i in intervals), 0.1))
    legend = _share_legend(result, family, "column", among)
    top = _top(legend) + 6  # the top tick's label sits on its line
    bottom = top + PLOT_HEIGHT
    x_of = _scale_x(len(rows))
    slot = x_of(1) - x_of(0) if len(rows) > 1 else WIDTH - AXIS_LEFT - COLUMNS_RIGHT
    column = min(slot * 0.6, 28.0)

    def y_of(value: float) -> float:
        return bottom - (value - lo) / (hi - lo) * PLOT_HEIGHT

    left_words = _wrap(ends[0], ANCHOR_CHARS, ANCHOR_LINES) if ends[0] else []
    right_words = _wrap(ends[1], ANCHOR_CHARS, ANCHOR_LINES) if ends[1] else []
    lines = max(len(left_words), len(right_words))
    height = bottom + 24 + LEGEND_LINE * lines + (6 if lines else 0)
    named = ", ".join(end for end in ends if end)
    description = (f"Scale ({named}). " if named else "") + "; ".join(
        f"{r['label']}: {format_share(e)} (interval {format_share(i[0])} to {format_share(i[1])})"
        for r, e, i in zip(rows, estimates, intervals, strict=True)
    )
    parts = [_svg_open(height, title or "Estimated shares", description, "columns")]
    parts.append(_legend(legend))
    for tick in ticks:
        y = y_of(tick)
        parts.append(
            f'<line x1="{AXIS_LEFT:.1f}" y1="{y:.1f}" x2="{WIDTH - COLUMNS_RIGHT:.1f}" '
            f'y2="{y:.1f}" stroke="{GRID if tick else "#888"}" stroke-width="1"/>'
            f'<text x="{AXIS_LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" fill="{TEXT}" '
            f'font-size="11">{escape(format_share_tick(tick))}</text>'
        )
    for index, (row, estimate, (lower, upper, _)) in enumerate(
        zip(rows, estimates, intervals, strict=True)
    ):
        label = str(row["label"])
        value = shown[index]
        x = x_of(index)
        y = y_of(value)
        outside = value != estimate
        raw = f" (raw {format_share(estimate)})" if outside else ""
        parts.append(
            f'<g class="bar" data-label="{_attr(label)}" data-estimate="{number(estimate)}" '
            f'data-shown="{number(value)}" data-lower="{number(lower)}" '
            f'data-upper="{number(upper)}" data-interval="{family}"{_row_data(row)}>'
            f"<title>{escape(label)}: {format_share(value)}{escape(raw)}, interval "
            f"{format_share(lower)} to {format_share(upper)}</title>"
            f'<rect x="{x - column / 2:.1f}" y="{min(y, bottom - 0.5):.1f}" '
            f'width="{column:.1f}" height="{max(bottom - y, 0.5):.1f}" '
            f'fill="{NEGATIVE_FILL if outside else BAR_FILL}" rx="2"/>'
            + _whisker(y_of(upper), y_of(lower), x, 4.0, upright=True)
            + f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="{TEXT}" '
            f'font-size="12">{escape(label)}</text></g>'
        )
    for words, x, anchor in ((left_words, 0, "start"), (right_words, WIDTH, "end")):
        if words:
            first, *rest = words
            parts.append(
                f'<text class="anchor" x="{x}" y="{bottom + 36}" text-anchor="{anchor}" '
                f'fill="{TEXT}" font-size="11">{escape(first)}'
                + "".join(
                    f'<tspan x="{x}" dy="{LEGEND_LINE}">{escape(line)}</tspan>' for line in rest
                )
                + "</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _point_chart(
    *,
    point: tuple[float, float, float],
    axis: tuple[float, float, Sequence[float]],
    span: tuple[float, float],
    legend: Sequence[str],
    text: Callable[[float], str],
    name: str,
    title: str,
    kind: str,
    group: str,
    zero: float | None = None,
) -> str:
    """One estimate as a dot with its whisker on an axis: ``point`` (value, lower, upper),
    ``axis`` its ends and ticks, ``span`` the x of its ends.  A value outside the axis is
    drawn at the edge with a marker, and written raw beside it.  ``group`` is the ``<g>``'s
    class and data."""
    value, lower, upper = point
    axis_lo, axis_hi, ticks = axis
    drawn = min(max(value, axis_lo), axis_hi)
    outside = drawn != value
    raw = f" (raw {text(value)})" if outside else ""

    def scale(point: float) -> float:
        return span[0] + (point - axis_lo) / (axis_hi - axis_lo) * (span[1] - span[0])

    top = _top(legend)
    height = top + MEAN_ROW_HEIGHT + BOTTOM
    mid = top + MEAN_ROW_HEIGHT - 12
    interval = f"interval {text(lower)} to {text(upper)}"
    description = f"{name} {text(drawn)}{raw}, {interval}"
    x_value = scale(drawn)
    marker = ""
    if outside:
        tip = 1 if value > axis_hi else -1  # an arrowhead at the edge, pointing off the axis
        marker = (
            f'<path class="clipped-marker" fill="{NEGATIVE_FILL}" d="M{x_value + 14 * tip:.1f} '
            f"{mid:.1f} L{x_value + 7 * tip:.1f} {mid - 6:.1f} L{x_value + 7 * tip:.1f} "
            f'{mid + 6:.1f} Z"/>'
        )
    parts = [
        _svg_open(height, title or f"Estimated {name}", description, kind),
        _legend(legend),
        *_axis(scale, ticks, top, top + MEAN_ROW_HEIGHT, text, zero),
        f'<rect x="{scale(axis_lo):.1f}" y="{mid - 3:.1f}" '
        f'width="{scale(axis_hi) - scale(axis_lo):.1f}" height="6" fill="#e8eef5"/>',
        f"<g {group}><title>{escape(description)}</title>"
        + _whisker(scale(lower), scale(upper), mid)
        + f'<circle cx="{x_value:.1f}" cy="{mid:.1f}" r="6" '
        f'fill="{NEGATIVE_FILL if outside else BAR_FILL}"/>'
        + marker
        + f'<text x="0" y="{top + 15}" fill="{TEXT}">{escape(name)} '
        f'<tspan font-weight="600">{escape(text(drawn))}</tspan>'
        + (f'<tspan class="raw" fill="{NEGATIVE_FILL}">{escape(raw)}</tspan>' if raw else "")
        + f'<tspan fill="#555" font-size="12"> [{escape(text(lower))}, '
        f"{escape(text(upper))}]</tspan></text></g>",
        "</svg>",
    ]
    return "".join(parts)


def mean_chart(
    result: Mapping[str, Any],
    lo: float,
    hi: float,
    title: str = "",
    among: str | None = None,
    points: Sequence[str] = (),
) -> str:
    """The estimated mean as a point on the ``[lo, hi]`` scale with its tightest whisker.

    A raw mean outside [lo, hi] is drawn clipped to the edge with a marker, and
    the raw value is written in the text.  ``among``: whom the mean counts ("among those who
    answered"); ``points``: a scale's points, its ticks (the mean is then drawn under the
    scale's columns, :func:`scale_chart`, at the same x).
    """
    mean = float(result["mean"])
    lower, upper, family = shown_interval(result, result)
    lo, hi = float(lo), float(hi)
    if points:
        x_of = _scale_x(len(points))
        axis = (lo, hi, [float(point) for point in points])
        span, where = (x_of(0), x_of(len(points) - 1)), "on the scale"
    else:  # the range unbroken (a no-break space): "[0, 20]"
        axis, span = _ticks(lo, hi), (LEFT, WIDTH - RIGHT)
        where = f"on the answer range [{format_number(lo)},\u00a0{format_number(hi)}]"
    subject = "Estimated mean" if among is None else f"Mean {among}"
    return _point_chart(
        point=(mean, lower, upper),
        axis=axis,
        span=span,
        legend=_wrap(
            f"{subject} (dot) {where} with its {_level(result)} {FAMILY_NAMES[family]} "
            "interval (whisker)"
        ),
        text=(lambda value: format_score("mean", value)) if points else format_number,
        name="mean",
        title=title,
        kind="mean-chart",
        group=(
            f'class="mean"{LABELLED_MEAN if points else ""} data-mean="{number(mean)}" '
            f'data-shown="{number(min(max(mean, lo), hi))}" data-lower="{number(lower)}" '
            f'data-upper="{number(upper)}" data-interval="{family}"'
        ),
    )


def nps_chart(
    result: Mapping[str, Any],
    row: Mapping[str, Any],
    title: str = "",
    among: str = "among those who answered",
) -> str:
    """A scale's net promoter score (the ``nps`` row) as a point on -100..+100 with its
    published whisker (deniable.nonresponse); ``among``: whom it counts, for the legend."""
    estimate = float(row["estimate"])
    lower, upper, family = shown_interval(result, row)
    low, high = NPS_RANGE
    shown = min(max(estimate, low), high)
    return _point_chart(
        point=(estimate, lower, upper),
        axis=(low, high, [low, low / 2, 0.0, high / 2, high]),
        span=(LEFT + 10, WIDTH - RIGHT - 10),  # room for "-100" and "+100" under the ends
        legend=_wrap(
            f"Net promoter score {among} (dot), from -100 to +100, with its "
            f"{_level(result)} {FAMILY_NAMES[family]} interval (whisker)"
        ),
        text=lambda value: format_score("nps", value),
        name="NPS",
        title=title or "Net promoter score",
        kind="nps-chart",
        group=(
            f'class="nps" data-label="nps" data-estimate="{number(estimate)}" '
            f'data-shown="{number(shown)}" data-lower="{number(lower)}" '
            f'data-upper="{number(upper)}" data-interval="{family}"'
        ),
        zero=0.0,
    )


def charted(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a question's main chart draws of its result: for an optional, conditional or scale
    question (rows with ``share_of``, deniable.nonresponse) the shares among those who answered
    (not the declined and not-applicable shares, nor a scale's mean and NPS points, which are
    said beside it), or a number's mean among those who answered as its mean.  Other results
    as they are."""
    rows = result.get("categories") or []
    if not rows or "share_of" not in rows[0]:
        return result
    if result.get("type") == "numeric":
        mean = next(row for row in rows if row["label"] == "mean")
        if mean["estimate"] is None:
            return {**result, "estimate": None}
        flat = {key: value for key, value in result.items() if key != "categories"}
        return {**flat, "mean": mean["estimate"], "lower": mean["lower"], "upper": mean["upper"]}
    shares = [
        row
        for row in rows
        if row["share_of"] == "answered"
        and row["label"] not in POINT_ROWS
        and row["estimate"] is not None
    ]
    return {**result, "categories": shares}


def chart_for(
    result: Mapping[str, Any],
    question: Mapping[str, Any] | None = None,
    words: Mapping[str, str] | None = None,
    among: str | None = None,
) -> str:
    """The main chart for one question's result; ``""`` when there is nothing to draw yet.

    ``question`` is the question's definition (for the title, a numeric question's
    ``lo``/``hi`` range, a scale's points); ``words`` and ``among`` as :func:`bar_chart`'s;
    a scale's ``words`` may name its two ends (``"low"``, ``"high"``).
    """
    question = question or {}
    words = words or {}
    result = charted(result)
    title = str(question.get("text", result.get("question", "")))
    if result.get("estimate", 0) is None or not result.get("n"):
        return ""
    if result.get("type") == "numeric" or "mean" in result:
        return mean_chart(
            result,
            question.get("lo", result["lower"]),
            question.get("hi", result["upper"]),
            title,
            among,
        )
    if not result.get("categories"):
        return ""  # no share among those who answered: none is estimated to have answered
    if result.get("type") == "scale":
        ends = (words.get("low", ""), words.get("high", ""))
        return scale_chart(result, title, ends, among)
    return bar_chart(result, title, words, among)
