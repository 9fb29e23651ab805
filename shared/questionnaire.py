"""Optional and conditional questions: non-response values and ``show_if`` conditions.

Non-response is a value of a question's domain, randomized by the question's own
mechanism at its own ε (docs/protocol.md §5.5), so a report never says whether the
respondent answered, declined or was not asked beyond what the mechanism allows: the
mechanism does not care which of its values is the true one.  (Randomized response,
Warner 1965, and its forced-response design, Boruch 1971; John, Loewenstein, Acquisti,
Vosgerau 2018 found respondents avoid answers that look self-incriminating, so a
non-answer sent as a visible skip would itself be telling.)

The *extras* of a question, in this order and only when they can occur: ``declined``
(``optional``), then ``not_applicable`` (``show_if``).  :data:`DECLINED` and
:data:`NOT_APPLICABLE` stand for them as true answers on the device.

A ``show_if`` condition is parsed once (:func:`parse_condition`) against the questions
before it, so self, forward and unknown references are refused and no cycle can exist;
:func:`shown` evaluates it on the TRUE earlier answers, on the device only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidValue
from .survey_checks import MAX_LABEL, check_text, fail, require_keys

__all__ = [
    "DECLINED",
    "EXTRA_LABELS",
    "MAX_CONDITION_DEPTH",
    "MAX_CONDITION_ITEMS",
    "MAX_CONDITION_VALUES",
    "NOT_APPLICABLE",
    "SCALE_POINTS",
    "Condition",
    "NonResponse",
    "base_answer",
    "extension_members",
    "extras_of",
    "mechanism_refusal",
    "mechanism_value",
    "parse_condition",
    "parse_extensions",
    "path_answers",
    "shown",
]

MAX_CONDITION_DEPTH = 4
MAX_CONDITION_ITEMS = 16
MAX_CONDITION_VALUES = 64
EXTRA_LABELS = ("declined", "not_applicable")


@dataclass(frozen=True)
class NonResponse:
    """A true non-answer: ``declined`` or ``not_applicable`` (docs/protocol.md §5.5)."""

    label: str

    def __repr__(self) -> str:
        return self.label.upper()


DECLINED = NonResponse("declined")
NOT_APPLICABLE = NonResponse("not_applicable")


def extras_of(optional: bool, conditional: bool) -> tuple[str, ...]:
    """The extra values' labels, in domain order: declined first, then not_applicable."""
    return (("declined",) if optional else ()) + (("not_applicable",) if conditional else ())


@dataclass(frozen=True, kw_only=True)
class Condition:
    """A parsed ``show_if``: a leaf (question, operator, values) or ``all``/``any`` of items.

    ``document`` is the JSON as written (the signed bytes keep it as is).
    """

    operator: str  # "equals", "in", "includes", "between", "all", "any"
    question: str = ""
    values: tuple[Any, ...] = ()
    items: tuple[Condition, ...] = ()
    document: Any = None

    def holds(self, answers: Mapping[str, Any]) -> bool:
        """Whether the condition holds on ``answers`` (question id -> checked true answer,
        a :class:`NonResponse` for a question declined or not shown: then a leaf is false)."""
        if self.operator == "all":
            return all(item.holds(answers) for item in self.items)
        if self.operator == "any":
            return any(item.holds(answers) for item in self.items)
        answer = answers.get(self.question)
        if answer is None or isinstance(answer, NonResponse):
            return False
        if self.operator == "includes":
            return bool(answer[self.values[0]])
        if self.operator == "between":
            return self.values[0] <= answer <= self.values[1]
        return answer in self.values


def _value_index(where: str, question: Any, value: object) -> Any:
    """A condition's value as the checked true answer it compares with (refused if none)."""
    kind = question.type
    if kind == "yes_no" and (value is True or value is False):
        return int(value)
    if kind == "single_choice" and isinstance(value, str) and value in question.options:
        return question.options.index(value)
    if kind == "scale" and type(value) is float and value.is_integer():
        value = int(value)  # a JSON number is its value: 7.0 is the point 7 (§2.2)
    if kind == "scale" and type(value) is int and value in SCALE_POINTS[question.points]:
        return SCALE_POINTS[question.points].index(value)
    raise fail(where, f"{value!r} is not a value of question {question.id!r}", "condition")


def parse_condition(
    where: str, data: object, earlier: Mapping[str, Any], depth: int = 1
) -> Condition:
    """A validated ``show_if`` over the ``earlier`` questions (id -> Question), or InvalidSurvey
    (reason ``condition``)."""
    if depth > MAX_CONDITION_DEPTH:
        # Why checked before anything else: refused at the first level too deep, a condition
        # nested thousands deep (a hostile import) never reaches Python's recursion limit.
        raise fail(
            where,
            f"condition nested too deeply: at most {MAX_CONDITION_DEPTH} levels of all/any",
            "condition",
        )
    if not isinstance(data, Mapping):
        raise fail(where, "a condition must be an object", "condition")
    keys = set(data)
    if keys in ({"all"}, {"any"}):
        (operator,) = keys
        items = data[operator]
        if not isinstance(items, list) or not 2 <= len(items) <= MAX_CONDITION_ITEMS:
            raise fail(
                where,
                f"{operator} takes a list of 2 to {MAX_CONDITION_ITEMS} conditions",
                "condition",
            )
        parsed = tuple(
            parse_condition(f"{where}.{operator}[{i}]", item, earlier, depth + 1)
            for i, item in enumerate(items)
        )
        return Condition(operator=operator, items=parsed, document=data)
    operators = keys - {"question"}
    if "question" not in keys or len(operators) != 1:
        raise fail(
            where,
            "a condition is {question, equals|in|includes|between} or {all|any: [...]}",
            "condition",
        )
    (operator,) = operators
    if operator not in ("equals", "in", "includes", "between"):
        raise fail(where, f"unknown condition operator {operator!r}", "condition")
    qid = data["question"]
    question = earlier.get(qid) if isinstance(qid, str) else None
    if question is None:
        raise fail(
            where,
            f"{qid!r} is not an earlier question (a condition refers only to questions before it)",
            "condition",
        )
    value = data[operator]
    kind = question.type
    if operator == "includes":
        if kind != "multiple_choice" or not isinstance(value, str) or value not in question.options:
            raise fail(
                where, f"includes needs an option label of multiple-choice {qid!r}", "condition"
            )
        values: tuple[Any, ...] = (question.options.index(value),)
    elif operator == "between":
        if kind not in ("numeric", "scale"):
            raise fail(where, f"between needs a numeric or scale question, not {kind}", "condition")
        low, high = _between(where, question, value)
        values = (low, high)
    elif kind not in ("yes_no", "single_choice", "scale"):
        raise fail(
            where, f"{operator} needs a yes/no, single-choice or scale question", "condition"
        )
    elif operator == "equals":
        values = (_value_index(where, question, value),)
    else:
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_CONDITION_VALUES:
            raise fail(where, f"in takes a list of 1 to {MAX_CONDITION_VALUES} values", "condition")
        values = tuple(_value_index(where, question, v) for v in value)
        if len(set(values)) != len(values):
            raise fail(where, "the values of in must be distinct", "condition")
    return Condition(operator=operator, question=qid, values=values, document=data)


def _between(where: str, question: Any, value: object) -> tuple[float, float]:
    """[lo, hi] of a ``between``: numbers within the question's range, lo <= hi.

    On a scale the bounds are points and compared with the point's index, so they are
    mapped to indexes here (the checked answer of a scale is its index)."""
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(type(v) in (int, float) for v in value)
        or not value[0] <= value[1]
    ):
        raise fail(where, "between takes [lo, hi], two numbers with lo <= hi", "condition")
    low, high = value
    if question.type == "scale":
        first, last = SCALE_POINTS[question.points][0], SCALE_POINTS[question.points][-1]
        if not first <= low <= high <= last:
            raise fail(where, f"between must lie within the scale [{first}, {last}]", "condition")
        return low - first, high - first
    if not question.lo <= low <= high <= question.hi:
        raise fail(where, f"between must lie within [{question.lo}, {question.hi}]", "condition")
    return float(low), float(high)


def shown(condition: Condition | None, answers: Mapping[str, Any]) -> bool:
    """Whether a question with this ``show_if`` is shown, given the earlier checked answers."""
    return condition is None or condition.holds(answers)


# -- a question's questionnaire members (format /2) -----------------------------------------

SCALE_POINTS = {5: tuple(range(1, 6)), 7: tuple(range(1, 8)), 11: tuple(range(0, 11))}
EXTENSION_FIELDS = frozenset({"optional", "help", "show_if", "points", "anchors"})


def parse_extensions(
    where: str, data: Mapping[str, Any], kind: str, format: str, earlier: Mapping[str, Any]
) -> dict[str, Any]:
    """The questionnaire members of a question definition, checked (docs/protocol.md §5.5-5.6):
    keyword arguments for :class:`deniable.survey.Question`."""
    from .survey import FORMAT

    present = EXTENSION_FIELDS & data.keys()
    if (present or kind == "scale") and format != FORMAT:
        named = ", ".join(sorted(present)) or "type scale"
        raise fail(where, f"{named} needs format {FORMAT}", "format")
    result: dict[str, Any] = {}
    if "optional" in data:
        if not isinstance(data["optional"], bool):
            raise fail(f"{where}.optional", "must be true or false", "wrong-type")
        result["optional"] = data["optional"]
    if "help" in data:
        result["help"] = check_text(f"{where}.help", data["help"], newlines=True)
    if kind == "scale":
        points = data.get("points")
        if type(points) is float and points.is_integer():
            points = int(points)
        if type(points) is not int or points not in SCALE_POINTS:
            raise fail(f"{where}.points", "a scale has 5, 7 or 11 points", "points")
        result["points"] = points
        if "anchors" in data:
            anchors = data["anchors"]
            require_keys(f"{where}.anchors", anchors, {"low", "high"}, {"low", "high"})
            result["anchors"] = (
                check_text(f"{where}.anchors.low", anchors["low"], MAX_LABEL),
                check_text(f"{where}.anchors.high", anchors["high"], MAX_LABEL),
            )
    elif "points" in data or "anchors" in data:
        raise fail(where, f"a {kind} question has no points or anchors", "unknown-member")
    if "show_if" in data:
        result["show_if"] = parse_condition(f"{where}.show_if", data["show_if"], earlier)
    return result


def extension_members(question: Any) -> dict[str, Any]:
    """The questionnaire members of ``question`` as its definition writes them."""
    data: dict[str, Any] = {}
    if question.points is not None:
        data["points"] = question.points
    if question.anchors is not None:
        data["anchors"] = {"low": question.anchors[0], "high": question.anchors[1]}
    if question.optional:
        data["optional"] = True
    if question.help:
        data["help"] = question.help
    if question.show_if is not None:
        data["show_if"] = question.show_if.document
    return data


def mechanism_refusal(kind: str, mechanism_cls: Any, extras: tuple[str, ...], longitudinal: bool):
    """Why a question with ``extras`` cannot use this mechanism, or None (docs/protocol.md §5.5)."""
    if not extras:
        return None
    if longitudinal:
        return "a longitudinal question cannot be optional or conditional"
    if getattr(mechanism_cls, "binary", False):
        return (
            f"{mechanism_cls.name} has exactly two values; an optional or conditional "
            "question needs room for its non-response values (use grr)"
        )
    from .mechanisms import NUMERIC_WITH_EXTRAS

    if kind == "numeric" and mechanism_cls.name not in NUMERIC_WITH_EXTRAS:
        return "an optional or conditional numeric question needs duchi"
    return None


def base_answer(question: Any, answer: object) -> Any:
    """A scale's true answer (an integer point) as its value index, or InvalidValue."""
    points = SCALE_POINTS[question.points]
    if type(answer) is not int or answer not in points:
        raise InvalidValue(
            f"question {question.id!r}: answer must be an integer point "
            f"from {points[0]} to {points[-1]}"
        )
    return points.index(answer)


def mechanism_value(question: Any, base: Any) -> Any:
    """A checked true answer (base terms) or a :class:`NonResponse` in the mechanism's terms."""
    extras = question.extras
    if isinstance(base, NonResponse):
        if base.label not in extras:
            raise InvalidValue(f"question {question.id!r} cannot be {base.label}")
        position = extras.index(base.label)
        if question.type == "numeric":
            return (1 + position, None)
        if question.type == "multiple_choice":
            return (0,) * len(question.options) + tuple(
                int(i == position) for i in range(len(extras))
            )
        return question.base_size + position
    if not extras:
        return base
    if question.type == "numeric":
        return (0, base)
    if question.type == "multiple_choice":
        return tuple(base) + (0,) * len(extras)
    return base


def path_answers(survey: Any, answers: object) -> dict[str, Any]:
    """Every question's true answer in mechanism terms along the respondent's path.

    ``answers`` maps question id -> true answer; ``None`` or an absent id means declined
    (only for an optional question that is shown).  A question not shown gets
    ``not_applicable``; an answer given for it is refused (InvalidValue naming it).  Every
    question gets a value, so every path sends one report per question (§5.5).
    """
    if not isinstance(answers, Mapping):
        raise InvalidValue("answers must be a mapping {question_id: true answer}")
    ids = set(survey.question_ids)
    unknown = [k for k in answers if k not in ids]
    if unknown:
        raise InvalidValue(f"answers for unknown question(s): {unknown!r}")
    seen: dict[str, Any] = {}
    checked: dict[str, Any] = {}
    for question in survey.questions:
        given = answers.get(question.id)
        if not shown(question.show_if, seen):
            if given is not None:
                raise InvalidValue(
                    f"question {question.id!r} is not shown on this path; it takes no answer"
                )
            base: Any = NOT_APPLICABLE
        elif given is None:
            if not question.optional:
                raise InvalidValue(
                    f"every question shown must be answered; missing {question.id!r} "
                    "(it is not optional)"
                )
            base = DECLINED
        else:
            base = question.check_base(given)
        seen[question.id] = base
        checked[question.id] = mechanism_value(question, base)
    return checked
