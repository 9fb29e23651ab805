"""The editor's forms: a question (or the survey's settings) from posted fields and back.

Every field is read as text and turned into the definition's JSON as the operator meant
it; whether it is valid is for :meth:`deniable.survey.Survey.from_dict` to say
(:func:`validate`), whose refusals are shown next to the field they name
(:func:`field_of`), in the words it gives them.  The question members of the
questionnaire format (``optional``, ``help``, ``show_if``, the ``scale`` type) are offered
only when this version's core knows them (:data:`QUESTIONNAIRE`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from deniable.errors import DeniableError
from deniable.mechanisms import QUESTION_MECHANISMS, display_name
from deniable.questionnaire import MAX_CONDITION_DEPTH
from deniable.survey import FORMAT, QUESTION_TYPES, Question, Survey
from deniable.wire import strict_json

__all__ = [
    "CONDITION_WORDS",
    "INVALID_CONDITION",
    "LABELS",
    "QUESTIONNAIRE",
    "TYPE_WORDS",
    "condition_from_form",
    "field_of",
    "mechanism_choices",
    "noise_from_form",
    "number_text",
    "plain",
    "question_from_form",
    "question_view",
    "settings_from_form",
    "validate",
]

# The core knows the questionnaire members (optional, help, show_if; the scale type).
QUESTIONNAIRE = "show_if" in Question.FIELDS
TYPE_WORDS = {
    "yes_no": "Yes or no",
    "single_choice": "One choice",
    "multiple_choice": "Several choices",
    "numeric": "A number",
    "scale": "A scale (5, 7 or 11 points)",
}
CONDITION_WORDS = {
    "equals": "is",
    "in": "is one of",
    "includes": "includes",
    "between": "is between",
}
SCALE_POINTS = (5, 7, 11)
# Fields of a question that the form edits; every other member (longitudinal, a copied
# survey's parameters while its ε is unchanged) is kept as it was.
EDITED = ("id", "type", "text", "epsilon", "mechanism", "options", "lo", "hi")
QUESTIONNAIRE_EDITED = ("optional", "help", "show_if", "points", "anchors")
# A combined condition that is not JSON (or nests too deeply to read) is kept as typed, with
# what is wrong: {INVALID_CONDITION: words, "typed": the text, cut to MAX_TYPED characters}.
INVALID_CONDITION = "invalid"
MAX_TYPED = 4000


def question_types() -> tuple[str, ...]:
    return tuple(QUESTION_TYPES)


def mechanism_choices(kind: str) -> list[tuple[str, str]]:
    """(wire name, plain words) of the mechanisms that fit a question type."""
    fitting = QUESTION_MECHANISMS.get(kind) or QUESTION_MECHANISMS.get("single_choice", {})
    return [(name, display_name(name)) for name in fitting]


def _number(text: str) -> Any:
    """A number as typed (an int when whole), or the text itself for the check to refuse."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):  # "nan", "inf", "1e309": kept as typed, refused by the check
        return text
    return int(value) if value.is_integer() and "." not in text and "e" not in text else value


def number_text(value: Any) -> str:
    """A stored number as an operator writes it (1.0 as 1); anything else as it is."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:.15g}"
    return "" if value is None else str(value)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace("\r\n", "\n").split("\n") if line.strip()]


def condition_from_form(form: Mapping[str, str], earlier: list[dict[str, Any]]) -> Any:
    """The ``show_if`` the form gives: the advanced JSON if any, else the one-line builder."""
    advanced = form.get("show_if_json", "").strip()
    if advanced:
        try:
            return strict_json.loads(advanced, "condition")
        except DeniableError as error:  # refused by the check, next to the field, in words
            # Deeper than Python's own parser goes, json.loads says "recursion": too deep too.
            deep = getattr(error, "reason", "") == "too-deep" or "recursion" in str(error)
            words = (
                f"nested too deeply: at most {MAX_CONDITION_DEPTH} levels of all/any"
                if deep
                else "not valid JSON (check its brackets, quotes and commas)"
            )
            return {INVALID_CONDITION: words, "typed": advanced[:MAX_TYPED]}
    target = form.get("show_if_question", "")
    if not target:
        return None
    kinds = {q.get("id"): q.get("type") for q in earlier}
    kind = kinds.get(target)
    operator = form.get("show_if_operator", "equals")
    raw = form.get("show_if_value", "")

    def value(text: str) -> Any:
        text = text.strip()
        if kind == "yes_no":
            return {"yes": True, "no": False}.get(text.lower(), text)
        if kind in ("scale", "numeric"):
            return _number(text)
        return text

    if operator == "in":
        return {"question": target, "in": [value(v) for v in _lines(raw)]}
    if operator == "between":
        parts = [p for p in re.split(r"[,;]|\s+and\s+", raw) if p.strip()]
        return {"question": target, "between": [value(p) for p in parts]}
    if operator == "includes":
        return {"question": target, "includes": raw.strip()}
    return {"question": target, "equals": value(raw)}


def question_from_form(
    form: Mapping[str, str], before: Mapping[str, Any], earlier: list[dict[str, Any]]
) -> dict[str, Any]:
    """The question the form describes (``before``: the question as stored)."""
    kind = form.get("type", before.get("type", "yes_no"))
    question: dict[str, Any] = {
        k: v for k, v in before.items() if k not in EDITED and k not in QUESTIONNAIRE_EDITED
    }
    question.update(
        id=form.get("id", "").strip(),
        type=kind,
        text=form.get("text", "").strip(),
        epsilon=_number(form.get("epsilon", "")),
    )
    if question["epsilon"] is None:
        question["epsilon"] = ""
    mechanism = form.get("mechanism", "")
    if mechanism:
        question["mechanism"] = mechanism
    if kind in ("single_choice", "multiple_choice"):
        question["options"] = _lines(form.get("options", ""))
    if kind == "numeric":
        question["lo"], question["hi"] = _number(form.get("lo", "")), _number(form.get("hi", ""))
    if kind == "scale":
        question["points"] = _number(form.get("points", "5"))
        anchors = {k: form.get(f"anchor_{k}", "").strip() for k in ("low", "high")}
        if any(anchors.values()):
            question["anchors"] = anchors
    if QUESTIONNAIRE:
        if form.get("optional"):
            question["optional"] = True
        if form.get("help", "").strip():
            question["help"] = form["help"].strip()
        condition = condition_from_form(form, earlier)
        if condition is not None:
            question["show_if"] = condition
    # A copied question's resolved parameters follow its ε and mechanism: kept only while
    # those are unchanged, re-derived otherwise.
    if "parameters" in question and any(
        before.get(k) != question.get(k) for k in ("type", "epsilon", "mechanism", "options")
    ):
        del question["parameters"]
    return question


def question_view(question: Mapping[str, Any]) -> dict[str, Any]:
    """The form's fields for a stored question (text as typed)."""
    condition = question.get("show_if")
    builder = {"show_if_question": "", "show_if_operator": "equals", "show_if_value": ""}
    advanced = ""
    if isinstance(condition, Mapping) and "question" in condition and len(condition) == 2:
        operator = next(k for k in condition if k != "question")
        value = condition[operator]
        words = lambda v: "Yes" if v is True else "No" if v is False else str(v)  # noqa: E731
        builder = {
            "show_if_question": str(condition["question"]),
            "show_if_operator": operator,
            "show_if_value": (
                "\n".join(words(v) for v in value)
                if operator == "in" and isinstance(value, list)
                else ", ".join(words(v) for v in value)
                if operator == "between" and isinstance(value, list)
                else words(value)
            ),
        }
    elif isinstance(condition, Mapping) and INVALID_CONDITION in condition:
        advanced = str(condition.get("typed", ""))
    elif condition is not None:
        advanced = json.dumps(condition, ensure_ascii=False)
    anchors = question.get("anchors") or {}
    return {
        "id": question.get("id", ""),
        "type": question.get("type", "yes_no"),
        "text": question.get("text", ""),
        "epsilon": number_text(question.get("epsilon", "")),
        "mechanism": question.get("mechanism", ""),
        "options": "\n".join(str(o) for o in question.get("options", [])),
        "lo": number_text(question.get("lo")),
        "hi": number_text(question.get("hi")),
        "points": question.get("points", 5),
        "anchor_low": anchors.get("low", ""),
        "anchor_high": anchors.get("high", ""),
        "optional": bool(question.get("optional")),
        "help": question.get("help", ""),
        "show_if_json": advanced,
        **builder,
    }


def settings_from_form(form: Mapping[str, str], document: Mapping[str, Any]) -> dict[str, Any]:
    """The draft's document with the survey's own fields and settings from the form."""
    definition = dict(document["definition"])
    definition.update(
        format=FORMAT,
        id=form.get("survey_id", "").strip(),
        title=form.get("title", "").strip(),
    )
    description = form.get("description", "").replace("\r\n", "\n").strip()
    if description:
        definition["description"] = description
    else:
        definition.pop("description", None)
    # The survey's language (English, the default, is left out as the signed form leaves it out).
    language = form.get("language", "").strip().lower()
    if language and language != "en":
        definition["language"] = language
    else:
        definition.pop("language", None)
    if "translations" in definition and not form.get("keep_translations"):
        definition.pop("translations")  # imported ones stay unless the operator removes them
    definition.pop("relay", None)
    url = form.get("relay_url", "").strip()
    if url:
        relay: dict[str, Any] = {"url": url, "min_batch": _number(form.get("min_batch", ""))}
        if relay["min_batch"] is None:
            relay["min_batch"] = ""
        relay["shuffle_unit"] = form.get("shuffle_unit", "question")
        if form.get("noise"):
            relay["noise"] = noise_from_form(form)
        definition["relay"] = relay
    return {
        **document,
        "definition": definition,
        "results_public": form.get("results_public") == "public",
        "require_enrolment": bool(form.get("require_enrolment")),
    }


NOISE_FAMILIES = {
    "geometric": "geometric (fewest dummies)",
    "binomial": "binomial",
}
DEFAULT_NOISE_DELTA = 1e-6


def noise_from_form(form: Mapping[str, str]) -> dict[str, Any]:
    """``relay.noise``: the central (ε, δ) asked for, and the smallest law of the chosen
    family that gives it (:func:`deniable.dummies.calibrate`); the law is left out when
    none does, so the check says what is wrong."""
    from deniable.dummies import calibrate

    epsilon = _number(form.get("noise_epsilon", ""))
    delta = _number(form.get("noise_delta", "")) or DEFAULT_NOISE_DELTA
    family = form.get("noise_family", "geometric")
    noise: dict[str, Any] = {"epsilon": "" if epsilon is None else epsilon, "delta": delta}
    try:
        noise["law"] = calibrate(epsilon, delta, family).law.to_dict()  # type: ignore[arg-type]
    except (DeniableError, ValueError, TypeError, ArithmeticError):
        noise["law"] = {"distribution": family}
    return noise


def validate(definition: Mapping[str, Any]) -> tuple[Survey | None, str | None]:
    """(the survey, None) if ``definition`` validates, else (None, the refusal as raised:
    :func:`field_of` and :func:`plain` place it and word it)."""
    try:
        return Survey.from_dict(dict(definition)), None
    except DeniableError as error:
        return None, str(error)
    except (ValueError, TypeError, ArithmeticError) as error:
        return None, f"survey: {str(error)[:300]}"


_WHERE = re.compile(r"^(survey\.questions\[\d+\]\.?|survey\.|question '[^']*'\.?)+")
# Refusals whose words are the check's own notation, in plain words.
_PLAIN = (
    (
        re.compile(r"must match \[a-z0-9\].*"),
        "use lower-case letters, digits, - and _ only, starting with a letter or digit, "
        "at most 64 characters",
    ),
    (re.compile(r"missing field\(s\) (.*)"), r"\1 is missing"),
)
LABELS = {
    "survey_id": "Survey id",
    "id": "Question id",
    "title": "Title",
    "description": "Description",
    "language": "Language",
    "translations": "Translations",
    "relay": "Relay",
    "text": "Question",
    "help": "Help text",
    "options": "Options",
    "epsilon": "ε",
    "mechanism": "Mechanism",
    "lo": "Smallest answer",
    "hi": "Largest answer",
    "points": "Points",
    "anchors": "Labels of the ends",
    "show_if": "Condition",
    "type": "Type",
    "questions": "Questions",
    "relay_url": "Relay address",
    "min_batch": "Smallest batch",
    "noise_epsilon": "Central ε of each batch",
    "noise_delta": "δ",
    "shuffle_unit": "Mixed per",
}


def _translation_words(rest: str) -> str:
    """A translation's refusal with its path in words: "translations.de.questions.q1.options:
    ..." is "the translation into de, question q1, its options: ..."."""
    head, colon, why = rest.partition(": ")
    parts = head.split(".")
    if not colon or parts[0] != "translations" or len(parts) < 2:
        return rest
    words, parts = [f"the translation into {parts[1]}"], parts[2:]
    if parts[:1] == ["questions"] and len(parts) > 1:
        words.append(f"question {parts[1]}")
        parts = parts[2:]
    words += [f"its {part}" for part in parts if part != "questions"]
    for pattern, plainer in _PLAIN:
        why = pattern.sub(plainer, why)
    return f"{', '.join(words)}: {why}"


def plain(message: str, field: str = "") -> str:
    """A refusal in words: the path in front replaced by the field's label."""
    rest = _WHERE.sub("", message).strip()
    if field == "translations":
        return f"{LABELS[field]}: {_translation_words(rest)}"
    if field and rest.split(":", 1)[0].strip().split(".")[-1] in (field, "id", "text", "title"):
        rest = rest.split(":", 1)[1] if ":" in rest else rest
    rest = rest.lstrip(": ").strip()
    for pattern, words in _PLAIN:
        rest = pattern.sub(words, rest)
    label = LABELS.get(field, "")
    if label:
        return f"{label}: {rest}"
    return (rest[:1].upper() + rest[1:]) if rest else message


# Words in a refusal, and the field they name (first match wins).
_FIELDS = (
    ("show_if", "show_if"),
    ("anchors", "anchors"),
    ("points", "points"),
    ("help", "help"),
    ("options", "options"),
    ("instantaneous_epsilon", "epsilon"),
    ("epsilon", "epsilon"),
    ("mechanism", "mechanism"),
    ("lo", "lo"),
    ("hi", "hi"),
    (".text", "text"),
    (".id", "id"),
    ("ids must be distinct", "id"),
    ("type", "type"),
    ("optional", "optional"),
    ("relay", "relay"),
    ("title", "title"),
    ("description", "description"),
)


def field_of(message: str) -> str:
    """The form field a refusal names ("" for the top of the form)."""
    head = message.split(": ", 1)[0] if ": " in message else message
    for word, field in _FIELDS:
        if re.search(rf"(^|[.\s']){re.escape(word.lstrip('.'))}\b", head) or (
            word.startswith(".") and head.endswith(word)
        ):
            return field
    for word, field in _FIELDS:
        if re.search(rf"\b{re.escape(word.lstrip('.'))}\b", message):
            return field
    return ""
