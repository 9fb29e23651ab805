"""What the survey page says about one question: pure functions of the published results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from deniable.mechanisms import SET_VALUED, display_name

from . import svg

__all__ = [
    "COVERS",
    "confidence_text",
    "explanation",
    "likelihood_sentence",
    "precision_sentence",
    "question_view",
]

COVERS = (
    "The intervals are about the people who answered (their own true answers); a wider "
    "population they were drawn from at random would need wider intervals."
)


def confidence_text(beta: float) -> str:
    """``0.05`` -> ``"95%"``."""
    return f"{100.0 * (1.0 - float(beta)):.6g}%"


def _family(result: Mapping[str, Any], key: str = "tightest") -> str:
    return svg.FAMILY_NAMES.get(str(result.get(key, "chebyshev")), "Chebyshev")


def explanation(beta: float) -> str:
    """How to read every chart of a page, said once above them: what a whisker guarantees,
    which interval it is, and whom it covers."""
    return (
        f"How to read the charts. With probability at least {confidence_text(beta)} the true "
        "share lies inside each bar's whisker, and the true mean of all respondents' answers "
        "inside the whisker of a mean, whatever the true answers are; this holds for any "
        "number of respondents. Each chart names its interval, the tightest of those published "
        f"for its question (all are in the JSON and the CSV). {COVERS}"
    )


def precision_sentence(result: Mapping[str, Any]) -> str:
    """Words for small samples: '' when the intervals are narrower than ±10 points."""
    precision = result.get("precision", "ok")
    needed = result.get("respondents_for_ten_points")
    ten = "±10% of the answer range" if "mean" in result else "±10 points"
    closed = result.get("respondents_for_ten_points_families") == "closed_form"
    by = " by the closed-form bounds (the exact bound may need fewer)" if closed else ""
    need = f" About {needed:,} respondents are needed for {ten}{by}." if needed else ""
    if precision == "uninformative":
        return (
            "Too few respondents to say anything useful here: the interval covers half of the "
            f"possible range or more, so read these numbers as noise.{need}"
        )
    if precision == "imprecise":
        return f"Few respondents: the intervals are wider than {ten}.{need}"
    return ""


def simultaneous_sentence(result: Mapping[str, Any]) -> str:
    """For several bars: how wide the whiskers must be to cover all of them at once."""
    categories = result.get("categories") or []
    # Why: yes and no are one estimate (no = 1 - yes): a second whisker adds no uncertainty.
    if (
        result.get("type") == "yes_no"
        or len(categories) < 2
        or "simultaneous_half_width" not in result
    ):
        return ""
    family = str(result.get("simultaneous_tightest", "chebyshev"))
    described = {i["family"]: i for i in result.get("intervals", [])}
    half = result["half_width"]
    both = result["simultaneous_half_width"]
    if family in described:
        half = described[str(result.get("tightest", family))]["nominal_half_width"]
        both = described[family]["simultaneous_nominal_half_width"]
    return (
        f"Each whisker is at most ±{svg.format_share(half)} wide for its own bar; to be "
        f"{confidence_text(result['beta'])} sure about all {len(categories)} bars at once, read "
        f"them as at most ±{svg.format_share(both)} "
        f"(simultaneous {_family(result, 'simultaneous_tightest')} interval, clipped to 0–100%)."
    )


def likelihood_sentence(result: Mapping[str, Any], limit: int = 8) -> str:
    """The maximum-likelihood shares (``ibu``) in words, where they are published ('' if not)."""
    categories = result.get("categories") or []
    if result.get("type") == "yes_no" or not categories or "ibu" not in categories[0]:
        return ""
    ranked = sorted(categories, key=lambda c: -float(c["ibu"]))[:limit]
    shares = ", ".join(f"{c['label']} {svg.format_share(float(c['ibu']))}" for c in ranked)
    more = " (largest shown)" if len(categories) > limit else ""
    return (
        f"Most likely shares given the reports{more}: {shares}. These maximum-likelihood "
        "figures are never below 0% and add up to 100%; the bars show the unbiased estimates "
        "(cut at 0% and 100%), and the whiskers are built around those."
    )


def question_view(question: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows for one question (chart markup is pre-escaped)."""
    result = svg.charted(result)
    view: dict[str, Any] = {
        "id": question["id"],
        "type": question["type"],
        "text": question["text"],
        "options": len(question.get("options", ())),
        "result": result,
        "mechanism_name": display_name(result["mechanism"]),
        # Multiple choice: one option sampled per report at the full ε, or every option at ε/m.
        "one_option_per_report": result["mechanism"] in SET_VALUED,
        "chart": Markup(svg.chart_for(result, question)),  # noqa: S704 - escaped by svg
        "confidence": confidence_text(result["beta"]),
        "simultaneous": "",
        "precision": "",
        "likelihood": "",
    }
    if not view["chart"]:
        return view
    view["simultaneous"] = simultaneous_sentence(result)
    view["precision"] = precision_sentence(result)
    view["likelihood"] = likelihood_sentence(result)
    if "mean" in result:
        lower, upper, _ = svg.shown_interval(result, result)
        lo, hi = question.get("lo", lower), question.get("hi", upper)
        shown = min(max(float(result["mean"]), float(lo)), float(hi))
        view["data"] = {
            "mean": svg.number(result["mean"]),
            "shown": svg.number(shown),
            "lower": svg.number(lower),
            "upper": svg.number(upper),
        }
        view["mean_text"] = svg.format_number(shown)
        view["raw_text"] = "" if shown == result["mean"] else svg.format_number(result["mean"])
        view["lower_text"] = svg.format_number(lower)
        view["upper_text"] = svg.format_number(upper)
    return view
