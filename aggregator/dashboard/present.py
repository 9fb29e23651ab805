"""What the survey page says about one question: pure functions of the published results."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from . import svg

MECHANISM_NAMES = {
    "binary_rr": "binary randomized response",
    "grr": "generalized randomized response",
    "duchi": "Duchi et al. one-bit mechanism",
    "discrete_laplace": "discrete Laplace noise",
    "sue": "symmetric unary encoding",
    "oue": "optimized unary encoding",
    "olh": "optimized local hashing",
    "hrr": "Hadamard randomized response",
    "subset": "subset selection",
}


def confidence_text(beta: float) -> str:
    """``0.05`` -> ``"95%"``."""
    return f"{100.0 * (1.0 - float(beta)):.6g}%"


def interval_sentence(result: Mapping[str, Any]) -> str:
    """One plain-language sentence on what the whisker means."""
    level = confidence_text(result["beta"])
    if "mean" in result:
        return (
            f"With probability at least {level} the true mean of all respondents' answers lies "
            "inside the whisker, whatever the true answers are; this holds for any number of "
            "respondents (Chebyshev bound)."
        )
    return (
        f"With probability at least {level} the true share lies inside each bar's whisker, "
        "whatever the true answers are; this holds for any number of respondents "
        "(Chebyshev bound)."
    )


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
    return (
        f"Each whisker is ±{svg.format_share(result['half_width'])} wide for its own bar; to be "
        f"{confidence_text(result['beta'])} sure about all {len(categories)} bars at once, read "
        f"them as ±{svg.format_share(result['simultaneous_half_width'])} "
        "(simultaneous interval, clipped to 0–100%)."
    )


def question_view(question: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows for one question (chart markup is pre-escaped)."""
    view: dict[str, Any] = {
        "id": question["id"],
        "type": question["type"],
        "text": question["text"],
        "options": len(question.get("options", ())),
        "result": result,
        "mechanism_name": MECHANISM_NAMES.get(result["mechanism"], result["mechanism"]),
        "chart": Markup(svg.chart_for(result, question)),  # noqa: S704 - escaped by svg
        "confidence": confidence_text(result["beta"]),
        "sentence": "",
        "simultaneous": "",
    }
    if not view["chart"]:
        return view
    view["sentence"] = interval_sentence(result)
    view["simultaneous"] = simultaneous_sentence(result)
    if "mean" in result:
        view["data"] = {key: svg.number(result[key]) for key in ("mean", "lower", "upper")}
        view["mean_text"] = svg.format_number(result["mean"])
        view["lower_text"] = svg.format_number(result["lower"])
        view["upper_text"] = svg.format_number(result["upper"])
    return view
