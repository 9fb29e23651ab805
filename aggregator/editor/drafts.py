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
from .forms import CONDITION_WORDS, TYPE_WORDS, field_of, number_text, plain, validate
from .session import editor_store
from .store import Draft

__all__ = ["Checked", "check_draft", "load_draft", "missing", "stand_in", "wave_id"]

DRAFT_ID = re.compile(r"[0-9a-f]{16}")
_INDEX = re.compile(r"survey\.questions\[(\d+)\]")
_NAMED = re.compile(r"question '([^']*)'")


def _index_of(message: str, raw: list[Any]) -> int | None:
    """The position of the question a refusal names (by position, or else by id)."""
    if found := _INDEX.search(message):
        return int(found.group(1))
    if found := _NAMED.search(message):
        ids = [q.get("id") if isinstance(q, dict) else None for q in raw]
        if found.group(1) in ids:
            return ids.index(found.group(1))
    return None


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
    """A draft's check: the survey if it is ready, else the refusal and where it is."""

    survey: Survey | None
    problem: str | None = None  # in words
    where: str = ""  # the form field it names
    index: int | None = None  # the question it names (None: the survey's own fields)
    questions: list[Question | None] = field(default_factory=list)


def stand_in(definition: dict[str, Any]) -> dict[str, Any]:
    data = dict(definition)
    data["id"] = data.get("id") or "draft"
    data["title"] = data.get("title") or "Draft"
    return data


def check_draft(definition: dict[str, Any]) -> Checked:
    """The draft's check (see the module docstring)."""
    raw = definition.get("questions") or []
    survey, error = validate(definition)
    if survey is not None:
        return Checked(survey=survey, questions=list(survey.questions))
    assert error is not None
    # The questions alone (a stand-in id and title), to tell which of them are fine.
    named, inner = validate(stand_in(definition)) if raw else (None, None)
    if named is not None:
        questions: list[Question | None] = list(named.questions)
    else:
        message = inner or error
        index = _index_of(message, raw)
        questions = [None] * len(raw)
        if index is not None and index > 0:
            prefix, _ = validate({**stand_in(definition), "questions": raw[:index]})
            if prefix is not None:
                questions[:index] = list(prefix.questions)
        if raw and inner is not None:
            error = inner
    index = _index_of(error, raw)
    if not raw:
        error = "survey.questions: add at least one question"
    where = field_of(error) if index is not None else _survey_field(error)
    return Checked(
        survey=None,
        problem=plain(error, where),
        where=where,
        index=index,
        questions=questions,
    )


def _survey_field(message: str) -> str:
    """The survey's own field a refusal names ("" for none)."""
    head = message.split(": ", 1)[0]
    if head == "survey.id":
        return "survey_id"
    for name in ("language", "translations"):  # before "title": a translation has one too
        if head.startswith(f"survey.{name}"):
            return name
    for name in ("title", "description", "relay", "questions"):
        if name in head:
            return name
    return ""


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
                "problem": checked.problem if checked.index == index else None,
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
