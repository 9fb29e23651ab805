"""What the planner advises for each question of a survey about to be created.

Per question: the mechanism it uses and the respondents needed for intervals of ±5 and
±10 points (β = 0.05, the tightest interval family the planner knows for that
mechanism; :func:`deniable.planner.plan`).  A share's points are percentage points; a
number's are percent of its range (±5 points of a 0-120 question is ±6).
"""

from __future__ import annotations

from typing import Any

from deniable.errors import InvalidParameter
from deniable.planner import best_respondents, plan
from deniable.survey import Question, Survey

__all__ = ["HALF_WIDTHS", "question_advice", "survey_advice"]

HALF_WIDTHS = (0.05, 0.10)
BETA = 0.05


def _planned(question: Question, half_width: float) -> Any:
    if question.type == "numeric":
        assert question.lo is not None and question.hi is not None
        width = half_width * (question.hi - question.lo)
        return plan(
            "numeric",
            epsilon=question.epsilon,
            lo=question.lo,
            hi=question.hi,
            half_width=width,
            beta=BETA,
        )
    size = question.domain_size
    if question.type == "multiple_choice":
        return plan(
            "multiple_choice",
            epsilon=question.epsilon,
            options=size,
            half_width=half_width,
            beta=BETA,
        )
    if question.type == "yes_no" and size == 2:
        return plan("yes_no", epsilon=question.epsilon, half_width=half_width, beta=BETA)
    # single choice, scale, and a yes/no with non-response values: categorical over its domain
    return plan(
        "single_choice", epsilon=question.epsilon, options=size, half_width=half_width, beta=BETA
    )


def question_advice(question: Question) -> dict[str, Any]:
    """``{"question", "type", "epsilon", "mechanism", "respondents": {"5": n, "10": n}}``
    (a count is None where the planner has no figure for the mechanism)."""
    needed: dict[str, int | None] = {}
    for half_width in HALF_WIDTHS:
        key = f"{round(100 * half_width)}"
        try:
            result = _planned(question, half_width)
        except InvalidParameter:
            needed[key] = None
            continue
        names = {row.mechanism for row in result.rows}
        mechanism = question.mechanism if question.mechanism in names else None
        needed[key] = best_respondents(result, mechanism)
    return {
        "question": question.id,
        "type": question.type,
        "epsilon": question.epsilon,
        "mechanism": question.mechanism,
        "respondents": needed,
    }


def survey_advice(survey: Survey) -> list[dict[str, Any]]:
    """:func:`question_advice` for every question, in order."""
    return [question_advice(question) for question in survey.questions]
