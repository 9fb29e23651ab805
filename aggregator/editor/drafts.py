"""A draft as the pages show it: loaded, checked, each question with its problem and advice.

The draft's definition is checked as a whole by :meth:`deniable.survey.Survey.from_dict`
(with a stand-in id and title while those are blank, so a question's problem shows
before the survey has a name).  A refusal names one place: the questions before it are
valid (and get the planner's advice), the one it names shows it next to its field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import render_template

from deniable.errors import NotFound
from deniable.survey import Question, Relay, Survey

from .advice import as_view, question_advice
from .checks import Problem, question_problems, settings_problems
from .forms import CONDITION_WORDS, TYPE_WORDS, number_text, plain, validate
from .session import editor_store
from .store import Draft

__all__ = ["Checked", "check_draft", "load_draft", "missing", "stand_in", "wave_id"]

DRAFT_ID = re.compile(r"[0-9a-f]{16}")


def missing(
    what: str = "This draft does not exist (it may have been published or deleted).",
) -> Any:
    return render_template("editor/refused.html", message=what, heading="Not found"), 404


def load_draft(draft_id: str) -> Draft | None:
    if not DRAFT_ID.fullmatch(draft_id):
        return None
    try:
        return editor_store().get_draft(draft_id)
    except NotFound:
        return None


@dataclass(frozen=True, kw_only=True)
class Checked:
    """A draft's check: the survey if it is ready, else every problem (the first also as
    ``problem``, ``where`` and ``index``)."""

    survey: Survey | None
    problem: str | None = None  # in words
    where: str = ""  # the form field it names
    index: int | None = None  # the question it names (None: the survey's own fields)
    questions: list[Question | None] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def at(self, index: int | None) -> dict[str, str]:
        """The problems of one question (None: of the survey's own fields): field -> words."""
        return {p.field: p.words for p in self.problems if p.index == index}


def stand_in(definition: dict[str, Any]) -> dict[str, Any]:
    data = dict(definition)
    data["id"] = data.get("id") or "draft"
    data["title"] = data.get("title") or "Draft"
    return data


def check_draft(definition: dict[str, Any]) -> Checked:
    """The draft's check: every problem of every question and of the survey's fields."""
    raw = definition.get("questions") or []
    survey, error = validate(definition)
    if survey is not None:
        return Checked(survey=survey, questions=list(survey.questions))
    assert error is not None
    problems: list[Problem] = []
    # The questions alone first (stand-in id and title, no relay): most drafts have valid
    # questions, and then each need not be asked about on its own.
    alone = {k: v for k, v in stand_in(definition).items() if k != "relay"}
    named, _ = validate(alone) if raw else (None, None)
    valid: list[dict[str, Any]] = []
    if named is not None:
        valid = list(raw)
    else:
        seen: set[Any] = set()
        for index, question in enumerate(raw):
            found = question_problems(question, valid, index)
            named_id = question.get("id") if isinstance(question, dict) else None
            if named_id in seen and not any(p.field == "id" for p in found):
                words = "Question id: an earlier question has this id; each needs its own"
                found.append(Problem(words=words, field="id", index=index))
            seen.add(named_id)
            problems += found
            if not found:
                valid.append(question)
    if not raw:
        problems.append(Problem(words="Questions: add at least one question", field="questions"))
    problems += settings_problems(definition, valid)
    if not problems:  # the core refuses the whole (a total over every question): say so
        problems.append(Problem(words=plain(error), field=""))
    questions: list[Question | None] = [None] * len(raw)
    if valid:
        parsed, _ = validate({**alone, "questions": valid})
        if parsed is not None:
            by_id = {q.id: q for q in parsed.questions}
            for index, question in enumerate(raw):
                if isinstance(question, dict) and not any(p.index == index for p in problems):
                    questions[index] = by_id.get(question.get("id"))
    first = problems[0]
    return Checked(
        survey=None,
        problem=first.words,
        where=first.field,
        index=first.index,
        questions=questions,
        problems=problems,
    )


# Planned advice by what it depends on (the planner searches; a page lists many questions).
_ADVICE: dict[tuple[Any, ...], dict[str, Any] | None] = {}


def _advice(question: Question, relay: Relay | None) -> dict[str, Any] | None:
    key = (
        question.type,
        question.epsilon,
        question.mechanism,
        question.domain_size,
        len(question.options),
        relay.min_batch if relay else None,
        repr(relay.noise.to_dict()) if relay and relay.noise else None,
    )
    if key in _ADVICE:
        return _ADVICE[key]
    view = as_view(question_advice(question, relay))
    if view is not None and view["noised_state"] == "pending":
        return view  # the relay-noise figures are still being worked out: asked again next time
    if len(_ADVICE) > 512:
        _ADVICE.clear()
    _ADVICE[key] = view
    return view


def advice_for(question: Question | None, definition: dict[str, Any]) -> dict[str, Any] | None:
    if question is None:
        return None
    relay = None
    if isinstance(definition.get("relay"), dict):
        try:
            relay = Relay.from_dict(definition["relay"])
        except Exception:  # noqa: BLE001 - an invalid relay is shown at its fields
            relay = None
    return _advice(question, relay)


def condition_words(condition: Any, titles: dict[str, str]) -> str:
    """A show_if condition in words ("Shown when "Do you commute?" is Yes")."""
    if not isinstance(condition, dict):
        return ""
    for joiner in ("all", "any"):
        if isinstance(condition.get(joiner), list):
            glue = " and " if joiner == "all" else " or "
            return "(" + glue.join(condition_words(c, titles) for c in condition[joiner]) + ")"
    target = condition.get("question")
    for operator, words in CONDITION_WORDS.items():
        if operator in condition:
            value = condition[operator]
            shown = (
                ", ".join(map(_value_words, value))
                if isinstance(value, list)
                else _value_words(value)
            )
            return f"“{titles.get(target, target)}” {words} {shown}"
    return ""


def _value_words(value: Any) -> str:
    return "Yes" if value is True else "No" if value is False else str(value)


def question_rows(draft: Draft, checked: Checked) -> list[dict[str, Any]]:
    """What the draft page lists per question."""
    raw = draft.definition.get("questions") or []
    titles = {q.get("id"): q.get("text") or q.get("id") for q in raw if isinstance(q, dict)}
    rows = []
    for index, question in enumerate(raw):
        valid = checked.questions[index] if index < len(checked.questions) else None
        rows.append(
            {
                "index": index,
                "id": question.get("id", ""),
                "text": question.get("text") or "(no text yet)",
                "type": TYPE_WORDS.get(question.get("type"), question.get("type")),
                "epsilon": number_text(question.get("epsilon")),
                "optional": bool(question.get("optional")),
                "condition": condition_words(question.get("show_if"), titles),
                "problems": list(checked.at(index).values()),
                "advice": advice_for(valid, draft.definition),
            }
        )
    return rows


def wave_id(survey_id: str, taken: Callable[[str], bool]) -> str:
    """The next wave's id: ``staff-2`` after ``staff``, ``staff-3`` after ``staff-2``, the
    first that ``taken`` (a survey or a draft has it) says is free."""
    found = re.fullmatch(r"(.*?)-(\d+)", survey_id)
    stem, number = (found.group(1), int(found.group(2))) if found else (survey_id, 1)
    while True:
        number += 1
        suffix = f"-{number}"
        candidate = stem[: 64 - len(suffix)] + suffix
        if not taken(candidate):
            return candidate
