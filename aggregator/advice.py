"""What the planner advises for each question of a survey about to be created.

Per question: the mechanism it uses and the respondents needed for intervals of ±5 and
±10 points (β = 0.05), with the tightest interval family the planner knows for that
mechanism, as ``deniable-aggregator plan`` finds it (:func:`deniable.planner.respondents_for`;
the best candidate mechanism if the planner has no model of the question's own).  A
share's points are percentage points; a number's are percent of its range (±5 points of a
0-120 question is ±6).

:func:`respondents_needed` is the one computation behind ``create-survey --dry-run``
(:func:`question_advice`) and the survey editor's advice beside ε
(:mod:`.editor.advice`).  The editor cannot wait for option sampling's exact-tail search
(seconds per question past a few thousand respondents): with ``search_max_n`` it leaves
the search out past that many and gives the closed-form families' n as an upper bound.
"""

from __future__ import annotations

from typing import Any

from deniable.errors import InvalidParameter
from deniable.estimation import EXACT_TAIL, FAMILIES, available_families, score_model
from deniable.planner import respondents_for, targets
from deniable.survey import Question, Survey

__all__ = [
    "BETA",
    "HALF_WIDTHS",
    "planner_question",
    "question_advice",
    "respondents_needed",
    "survey_advice",
]

HALF_WIDTHS = (0.05, 0.10)
BETA = 0.05


def planner_question(question: Question) -> tuple[str, int | None]:
    """The planner's question type and number of categories for ``question``."""
    if question.type == "numeric":
        return "numeric", None
    if question.type == "multiple_choice":
        return "multiple_choice", len(question.options)
    if question.type == "yes_no" and question.domain_size == 2:
        return "yes_no", None
    # A scale, or a question with non-response values: a single choice over its whole
    # domain (what its mechanism randomizes over).
    return "single_choice", question.domain_size


def _needed(
    target: Any, half_width: float, search_max_n: int | None
) -> tuple[int | None, bool, str | None]:
    """(n, whether it is an upper bound only, the interval family it assumes) for one target
    and half-width."""
    model = score_model(target.oracle)
    closed = [
        (n, False, family)
        for family in FAMILIES
        if family in available_families(model)
        if (n := respondents_for(target, family, half_width, BETA)) is not None
    ]
    best = min(closed) if closed else (None, False, None)
    if model.tail is None:
        return best
    sampled = model.tail[0] != "pure"  # option sampling: its exact tail is searched
    if search_max_n is not None and sampled and (best[0] is None or best[0] > search_max_n):
        return (best[0], True, best[2]) if best[0] is not None else best
    exact = respondents_for(target, EXACT_TAIL, half_width, BETA)
    if exact is None or (best[0] is not None and best[0] <= exact):
        return best
    return exact, False, EXACT_TAIL


def respondents_needed(
    question: Question, half_width: float, *, search_max_n: int | None = None
) -> tuple[int | None, bool, str | None]:
    """(respondents needed for ±``half_width`` at 95% confidence, whether that is an upper
    bound only, the interval family the figure assumes): the question's mechanism (the best
    candidate if the planner has no model of it) with its tightest interval family; None
    beyond the planner's reach.

    Why the family is returned: two figures of one question may come from different
    families (the exact tail where it was searched, a closed form where it was not), and
    their ratio then is not the ratio of their widths squared; whoever shows them says so.

    ``search_max_n``: leave option sampling's exact-tail search out where the closed-form
    families need more than this many (the figure is then an upper bound)."""
    kind, options = planner_question(question)
    candidates = targets(kind, epsilon=question.epsilon, options=options, lo=0.0, hi=1.0)
    mine = [t for t in candidates if t.mechanism == question.mechanism] or candidates
    found = [_needed(target, half_width, search_max_n) for target in mine]
    found = [f for f in found if f[0] is not None]
    return min(found, key=lambda f: f[0]) if found else (None, False, None)


def question_advice(question: Question) -> dict[str, Any]:
    """``{"question", "type", "epsilon", "mechanism", "respondents": {"5": n, "10": n}}``
    (a count is None where the planner has no figure for the mechanism)."""
    needed: dict[str, int | None] = {}
    for half_width in HALF_WIDTHS:
        key = f"{round(100 * half_width)}"
        try:
            needed[key], _, _ = respondents_needed(question, half_width)
        except (InvalidParameter, ValueError, ArithmeticError):
            needed[key] = None
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
