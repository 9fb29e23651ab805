"""What the survey page says about one question: pure functions of the published results.

An optional or conditional question's result (``deniable.nonresponse``) is shown in three
parts: the chart of the shares among those who answered; the declined share (among those
asked) and the share the question applied to, each in a line of words with its interval; and,
for a scale, its mean point on the scale's own axis and (0 to 10) its net promoter score.
Every row of the published result is on the page once, with the JSON's number and interval,
in ``data-row``/``data-estimate``/``data-lower``/``data-upper`` (or a chart's ``data-*``).

Yes/no answers, "Prefer not to say", "Not asked" and a scale's ends are worded as the
respond page words them (one catalogue, client/browser/messages.js); the results keep
their wire labels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from markupsafe import Markup

from deniable.mechanisms import SET_VALUED, display_name

from ..respond.words import answer_words
from . import svg

__all__ = [
    "COVERS",
    "TOP_CATEGORIES",
    "confidence_text",
    "explanation",
    "likelihood_sentence",
    "precision_sentence",
    "question_view",
    "top_categories",
]

COVERS = (
    "The intervals are about the people who answered (their own true answers); a wider "
    "population they were drawn from at random would need wider intervals."
)
# A question with more categories shows this many bars (the largest estimates).
TOP_CATEGORIES = 12
AMONG = "among those who answered"
# The dashboard's language: the respond page's catalogue, in English.
LANGUAGE = "en"


def confidence_text(beta: float) -> str:
    """``0.05`` -> ``"95%"``."""
    return f"{100.0 * (1.0 - float(beta)):.6g}%"


def _family(result: Mapping[str, Any], key: str = "tightest") -> str:
    return svg.FAMILY_NAMES.get(str(result.get(key, "chebyshev")), "Chebyshev")


def _rows(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(result.get("categories") or [])


def _asked_some(result: Mapping[str, Any]) -> bool:
    """Whether the result counts some respondents out: an optional or conditional question."""
    return any(row.get("share_of") in ("applicable", "all") for row in _rows(result))


def explanation(beta: float, among: bool = False) -> str:
    """How to read every chart of a page, said once above them: what a whisker guarantees,
    which interval it is, and whom it covers (``among``: the page has an optional or
    conditional question, whose shares count those who answered it)."""
    whom = (
        "Shares and means are of all respondents, except where a chart says “among those "
        "who answered”: an optional or conditional question's, which some respondents "
        "preferred not to answer or were not asked (how many is said under its chart). "
        if among
        else ""
    )
    return (
        f"How to read the charts. With probability at least {confidence_text(beta)} the true "
        "share lies inside each bar's or column's whisker, and the true mean (or score) inside "
        "its whisker, whatever the true answers are; this holds for any number of respondents. "
        f"{whom}Each chart names its interval, the tightest of those published "
        f"for its question (all are in the JSON and the CSV). {COVERS}"
    )


def precision_sentence(result: Mapping[str, Any], asked_some: bool | None = None) -> str:
    """Words for small samples: '' when the intervals are narrower than ±10 points.

    ``asked_some``: the question is optional or conditional (by default, read from its rows).
    """
    precision = result.get("precision", "ok")
    needed = result.get("respondents_for_ten_points")
    ten = "±10% of the answer range" if "mean" in result else "±10 points"
    closed = result.get("respondents_for_ten_points_families") == "closed_form"
    by = " by the closed-form bounds (the exact bound may need fewer)" if closed else ""
    need = f" About {needed:,} respondents are needed for {ten}{by}." if needed else ""
    if asked_some is None:
        asked_some = _asked_some(result)
    if needed and asked_some:  # the count is for shares of all respondents
        among = f"the mean {AMONG} needs" if "mean" in result else f"shares {AMONG} need"
        need = (
            f" About {needed:,} respondents are needed for {ten} over all respondents{by}; "
            f"{among} more."
        )
    if precision == "uninformative":
        return (
            "Too few respondents to say anything useful here: the interval covers half of the "
            f"possible range or more, so read these numbers as noise.{need}"
        )
    if precision == "imprecise":
        return f"Few respondents: the intervals are wider than {ten}.{need}"
    return ""


def _points(value: float) -> str:
    return f"{100.0 * value:.1f}"


def simultaneous_sentence(result: Mapping[str, Any], among: str | None = None) -> str:
    """For several bars: how wide the whiskers must be to cover all of them at once
    (``among``: whom the shares count, when not all respondents)."""
    categories = result.get("categories") or []
    # Why: yes and no are one estimate (no = 1 - yes): a second whisker adds no uncertainty.
    if result.get("type") == "yes_no" or len(categories) < 2:
        return ""
    noun = "columns" if result.get("type") == "scale" else "bars"
    level = confidence_text(result["beta"])
    if result.get("tightest") == "ratio":  # shares among those who answered: their own rows
        own = max(float(c["upper"]) - float(c["lower"]) for c in categories)
        both = max(
            float(c["simultaneous_upper"]) - float(c["simultaneous_lower"]) for c in categories
        )
        whom = f"These are shares {among}. " if among else ""
        return (
            f"{whom}Each whisker is at most {_points(own)} points wide "
            f"for its own {noun[:-1]}; to be {level} sure about all {len(categories)} {noun} "
            "at once, read each with its simultaneous interval (in the CSV and the JSON), at "
            f"most {_points(both)} points wide here."
        )
    if "simultaneous_half_width" not in result:
        return ""
    family = str(result.get("simultaneous_tightest", "chebyshev"))
    described = {i["family"]: i for i in result.get("intervals", [])}
    half = result["half_width"]
    both = result["simultaneous_half_width"]
    if family in described:
        half = described[str(result.get("tightest", family))]["nominal_half_width"]
        both = described[family]["simultaneous_nominal_half_width"]
    return (
        f"Each whisker is at most ±{svg.format_share(half)} wide for its own {noun[:-1]}; to be "
        f"{level} sure about all {len(categories)} {noun} at once, read "
        f"them as at most ±{svg.format_share(both)} "
        f"(simultaneous {_family(result, 'simultaneous_tightest')} interval, clipped to 0–100%)."
    )


def likelihood_sentence(
    result: Mapping[str, Any], limit: int = 8, words: Mapping[str, str] | None = None
) -> str:
    """The maximum-likelihood shares (``ibu``) in words, where they are published ('' if not)."""
    categories = result.get("categories") or []
    if result.get("type") == "yes_no" or not categories or "ibu" not in categories[0]:
        return ""
    if "raw" in categories[0]:  # a scale's shares: already a distribution inside the whiskers
        return ""
    words = words or {}
    ranked = sorted(categories, key=lambda c: -float(c["ibu"]))[:limit]
    shares = ", ".join(
        f"{words.get(c['label'], c['label'])} {svg.format_share(float(c['ibu']))}" for c in ranked
    )
    more = " (largest shown)" if len(categories) > limit else ""
    return (
        f"Most likely shares given the reports{more}: {shares}. These maximum-likelihood "
        "figures are never below 0% and add up to 100%; the bars show the unbiased estimates "
        "(cut at 0% and 100%), and the whiskers are built around those."
    )


def top_categories(result: Mapping[str, Any]) -> tuple[Mapping[str, Any], int]:
    """(result with its :data:`TOP_CATEGORIES` largest estimates, how many were left out).

    Why: a page drawing every bar of 100 questions x 1,024 options was 79 MB; the
    rest of the categories are one click away in the CSV and JSON results.
    """
    categories = result.get("categories") or []
    if len(categories) <= TOP_CATEGORIES or result.get("type") == "scale":  # a scale keeps order
        return result, 0
    ranked = sorted(
        categories, key=lambda c: -math.inf if c.get("estimate") is None else -float(c["estimate"])
    )[:TOP_CATEGORIES]
    return {**result, "categories": ranked}, len(categories) - TOP_CATEGORIES


def _data(row: Mapping[str, Any], family: str = "ratio") -> dict[str, str]:
    """A row's numbers as the page's ``data-*`` attributes, at full precision."""
    estimate = row["estimate"]
    return {
        "row": str(row["label"]),
        "estimate": "" if estimate is None else svg.number(estimate),
        "lower": svg.number(row["lower"]),
        "upper": svg.number(row["upper"]),
        "share_of": str(row.get("share_of", "")),
        "interval": family,
    }


def _bracket(lower: float, upper: float, said: Callable[[float], str]) -> str:
    return f"[{said(lower)}, {said(upper)}]"


def nonresponse_lines(result: Mapping[str, Any], words: Mapping[str, str]) -> list[dict[str, Any]]:
    """The share the question applied to and the declined share among those asked, each a
    line of words with its interval (its row's own numbers, and for the applied share their
    complement)."""
    rows = {row["label"]: row for row in _rows(result)}
    share = svg.format_share
    lines = []
    if "not_applicable" in rows:
        row = rows["not_applicable"]
        estimate, low, high = row["estimate"], row["lower"], row["upper"]
        text = (
            f"Asked of {share(1 - estimate)} of respondents {_bracket(1 - high, 1 - low, share)}; "
            f"the other {share(estimate)} {_bracket(low, high, share)} were not asked (it did not "
            "apply to them)."
        )
        lines.append({"data": _data(row, result.get("tightest", "ratio")), "text": text})
    if "declined" in rows:
        row = rows["declined"]
        whom = "those asked" if "not_applicable" in rows else "respondents"
        chose = f"chose “{words['declined']}”"
        if row["estimate"] is None:
            text = (
                f"The share of {whom} who {chose}: no estimate yet (too few are estimated to "
                "have been asked)."
            )
        else:
            text = (
                f"{share(row['estimate'])} of {whom} {chose} "
                f"{_bracket(row['lower'], row['upper'], share)}."
            )
        lines.append({"data": _data(row, result.get("tightest", "ratio")), "text": text})
    return lines


def scale_points(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A scale's points in order, each with its share and interval in words (the columns are
    too narrow to carry them; the chart names the ends)."""
    points = []
    for row in svg.charted(result)["categories"]:
        lower, upper, family = svg.shown_interval(result, row)
        points.append(
            {
                "data": _data(row, family),
                "name": str(row["label"]),
                "share": svg.format_share(min(max(float(row["estimate"]), 0.0), 1.0)),
                "interval": _bracket(lower, upper, svg.format_share),
            }
        )
    return points


def scale_scores(
    question: Mapping[str, Any], result: Mapping[str, Any], points: Sequence[str], among: str
) -> list[dict[str, Any]]:
    """A scale's mean point (on its own axis) and, for 0 to 10, its net promoter score, each
    with its interval in words and its chart."""
    rows = {row["label"]: row for row in _rows(result)}
    level = confidence_text(result["beta"])
    title = str(question.get("text", ""))
    # The mean's and NPS's interval has its own construction, named on its row (a scale
    # everyone answers names a direct family for its shares on the question).
    result = {**result, "tightest": (rows.get("mean") or {}).get("tightest", "ratio")}

    def score(row: Mapping[str, Any], name: str, about: str, chart: str) -> dict[str, Any]:
        label = row["label"]
        return {
            "data": _data(row, result.get("tightest", "ratio")),
            "name": f"{name} {among}",
            "value": svg.format_score(label, row["estimate"]),
            "interval": (
                f"{level} interval {svg.format_score(label, row['lower'])} to "
                f"{svg.format_score(label, row['upper'])}"
            ),
            "about": about,
            "chart": Markup(chart),  # noqa: S704 - escaped by svg
        }

    scores = []
    mean = rows.get("mean")
    if mean is not None and mean["estimate"] is not None:
        flat = {"mean": mean["estimate"], "lower": mean["lower"], "upper": mean["upper"]}
        chart = svg.mean_chart(
            {**result, **flat}, float(points[0]), float(points[-1]), title, among, points
        )
        scores.append(score(mean, "Mean score", "", chart))
    nps = rows.get("nps")
    if nps is not None and nps["estimate"] is not None:
        about = (
            "The net promoter score is the share who answered 9 or 10 minus the share "
            f"who answered 0 to 6, {among}, in points from -100 to +100."
        )
        scores.append(
            score(nps, "Net promoter score", about, svg.nps_chart(result, nps, title, among))
        )
    return scores


def question_view(question: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows for one question (chart markup is pre-escaped)."""
    asked_some = _asked_some(result)
    among = AMONG if asked_some else None
    charted, hidden = top_categories(svg.charted(result))
    labels = [str(row["label"]) for row in charted.get("categories") or []]
    words = answer_words(question, labels, LANGUAGE)
    view: dict[str, Any] = {
        "id": question["id"],
        "type": question["type"],
        "text": question["text"],
        "options": len(question.get("options", ())),
        "result": charted,
        "hidden": hidden,
        "mechanism_name": display_name(result["mechanism"]),
        # Multiple choice: one option sampled per report at the full ε, or every option at ε/m.
        "one_option_per_report": result["mechanism"] in SET_VALUED,
        "chart": Markup(svg.chart_for(charted, question, words, among)),  # noqa: S704 - escaped
        "confidence": confidence_text(result["beta"]),
        "among": among or "",
        "simultaneous": "",
        "precision": "",
        "likelihood": "",
        "points": [],
        "scores": [],
        "nonresponse": [],
        "nonresponse_head": "",
        "unanswered": "",
    }
    if not result.get("n") or result.get("estimate", 0) is None:
        return view
    view["nonresponse"] = nonresponse_lines(result, words)
    said = {line["data"]["row"] for line in view["nonresponse"]}
    heads = [
        words
        for row, words in (
            ("not_applicable", "who was asked"),
            ("declined", "who chose not to answer"),
        )
        if row in said
    ]
    head = ", and ".join(heads)
    view["nonresponse_head"] = head[:1].upper() + head[1:]
    view["precision"] = precision_sentence(charted, asked_some)
    if not view["chart"]:  # reports, but nobody is estimated to have answered
        view["unanswered"] = (
            "No share among those who answered can be estimated yet: the reports estimate "
            "that nobody answered this question."
        )
        return view
    view["simultaneous"] = simultaneous_sentence(charted, among)
    view["likelihood"] = likelihood_sentence(charted, words=words)
    if question["type"] == "scale":
        view["points"] = scale_points(charted)
        view["scores"] = scale_scores(question, result, labels, among or "of all respondents")
    if "mean" in charted:
        lower, upper, _ = svg.shown_interval(charted, charted)
        lo, hi = question.get("lo", lower), question.get("hi", upper)
        shown = min(max(float(charted["mean"]), float(lo)), float(hi))
        view["data"] = {
            "mean": svg.number(charted["mean"]),
            "shown": svg.number(shown),
            "lower": svg.number(lower),
            "upper": svg.number(upper),
        }
        view["mean_text"] = svg.format_number(shown)
        view["raw_text"] = "" if shown == charted["mean"] else svg.format_number(charted["mean"])
        view["lower_text"] = svg.format_number(lower)
        view["upper_text"] = svg.format_number(upper)
    return view
