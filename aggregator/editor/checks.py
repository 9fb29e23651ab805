"""Every problem of a draft at once, each in words beside the field it names.

The core (:meth:`deniable.survey.Survey.from_dict`) stops at the first refusal, in its
own notation.  An operator fixing a draft needs them all, in words: so the editor first
checks what an operator types (a number that is not one, a blank text, a relay address
that is not a web address) field by field, then asks the core about each question and
each part of the survey's settings separately, with the fields already refused replaced
by harmless stand-ins so that the core's refusal, if any, is about another field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from deniable.errors import DeniableError
from deniable.survey import FORMAT, Relay
from deniable.survey_relay import MAX_MIN_BATCH

from .forms import INVALID_CONDITION, LABELS, field_of, plain, validate

__all__ = ["Problem", "question_problems", "settings_problems"]


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One problem of a draft: its words, the form field beside which they are shown, and
    the question it belongs to (None: the survey's own fields)."""

    words: str
    field: str = ""
    index: int | None = None


def _positive(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


EPSILON_WORDS = "ε: must be a positive number, such as 1 or 0.5"


def _typed_question(question: Mapping[str, Any]) -> dict[str, str]:
    """What the operator typed wrong, field by field (the core is asked about the rest)."""
    found: dict[str, str] = {}
    if not str(question.get("text") or "").strip():
        found["text"] = "Question: must not be blank"
    if not _positive(question.get("epsilon")):
        found["epsilon"] = EPSILON_WORDS
    if question.get("type") == "numeric":
        lo, hi = question.get("lo"), question.get("hi")
        if not _finite(lo):
            found["lo"] = "Smallest answer: must be a number"
        if not _finite(hi):
            found["hi"] = "Largest answer: must be a number"
        if _finite(lo) and _finite(hi) and not lo < hi:
            found["hi"] = "Largest answer: must be more than the smallest answer"
    condition = question.get("show_if")
    if isinstance(condition, Mapping) and INVALID_CONDITION in condition:
        found["show_if"] = f"Condition: {condition[INVALID_CONDITION]}"
    return found


# Harmless values for fields already refused, so the core speaks about the others.
_STAND_INS = {"text": "x", "epsilon": 1, "lo": 0, "hi": 1}


def question_problems(question: Any, earlier: list[dict[str, Any]], index: int) -> list[Problem]:
    """Every problem of the question at ``index`` (``earlier``: the valid questions before it)."""
    if not isinstance(question, dict):
        return [Problem(words="This question is not readable: remove it", index=index)]
    found = _typed_question(question)
    probe = dict(question)
    for field in found:
        if field == "show_if":
            probe.pop("show_if", None)
        else:
            probe[field] = _STAND_INS[field]
    if "hi" in found or "lo" in found:
        probe["lo"], probe["hi"] = 0, 1
    definition = {"format": FORMAT, "id": "draft", "title": "Draft", "questions": []}
    # Only a condition looks at other questions (ids distinct: check_draft), so a question
    # without one is checked alone: a long draft's check stays linear.
    context = earlier if "show_if" in probe else []
    _, error = validate({**definition, "questions": [*context, probe]})
    if error is not None:
        field = field_of(error)
        if field not in found:
            found[field] = plain(error, field)
    return [Problem(words=words, field=field, index=index) for field, words in found.items()]


_RELAY_FIELDS = (
    ("shuffle_unit", "shuffle_unit"),
    ("noise", "noise_epsilon"),
    ("min_batch", "min_batch"),
    ("url", "relay_url"),
)


def _relay_field(message: str) -> str:
    for word, field in _RELAY_FIELDS:
        if word in message:
            return field
    return "relay_url"


def settings_problems(definition: Mapping[str, Any], valid: list[dict[str, Any]]) -> list[Problem]:
    """Every problem of the survey's own fields and settings (``valid``: its valid questions,
    or a stand-in question when none is)."""
    found: dict[str, str] = {}
    if not str(definition.get("title") or "").strip():
        found["title"] = "Title: must not be blank"
    if not str(definition.get("id") or "").strip():
        found["survey_id"] = "Survey id: must not be blank"
    relay = definition.get("relay")
    if isinstance(relay, Mapping):
        url = str(relay.get("url") or "")
        if not url.lower().startswith(("https://", "http://")):
            found["relay_url"] = (
                "Relay address: must be a web address starting with https:// "
                "(http:// only for a relay on this machine)"
            )
        batch = relay.get("min_batch")
        if not (type(batch) is int and 1 <= batch <= MAX_MIN_BATCH):
            found["min_batch"] = (
                f"Smallest batch: must be a whole number of reports from 1 to {MAX_MIN_BATCH:,}"
            )
        noise = relay.get("noise")
        if isinstance(noise, Mapping) and not _positive(noise.get("epsilon")):
            found["noise_epsilon"] = "Central ε of each batch: must be a positive number"
        if isinstance(noise, Mapping) and not _positive(noise.get("delta")):
            found["noise_delta"] = "δ: must be a positive number below 1, such as 0.000001"
        if not found.keys() & {"relay_url", "min_batch", "noise_epsilon", "noise_delta"}:
            try:
                Relay.from_dict(dict(relay))
            except DeniableError as error:
                field = _relay_field(str(error))
                found.setdefault(field, f"{LABELS[field]}: {str(error).split(': ', 1)[-1]}")
            except (ValueError, TypeError, ArithmeticError):
                found.setdefault("relay_url", "Relay: these settings cannot be used")
    questions = valid or [{"id": "q", "type": "yes_no", "text": "x", "epsilon": 1}]
    # Translations name every question: checked with the draft's own questions only.
    skipped = {"relay"} | (set() if valid == definition.get("questions") else {"translations"})
    probe = {
        **{k: v for k, v in definition.items() if k not in skipped},
        "id": definition.get("id") or "draft",
        "title": definition.get("title") or "Draft",
        "questions": questions,
    }
    _, error = validate(probe)
    if error is not None:
        field = _survey_field(error)
        if field not in found:
            found[field] = plain(error, field)
    return [Problem(words=words, field=field) for field, words in found.items()]


def _survey_field(message: str) -> str:
    """The survey's own field a refusal names ("" for none)."""
    head = message.split(": ", 1)[0]
    if head == "survey.id":
        return "survey_id"
    for name in ("language", "translations"):  # before "title": a translation has one too
        if head.startswith(f"survey.{name}"):
            return name
    for name in ("title", "description"):
        if name in head:
            return name
    return ""
