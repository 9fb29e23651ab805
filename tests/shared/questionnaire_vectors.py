"""Vectors for optional and conditional questions, help text and scales (docs/protocol.md §5.5-5.6).

Part of ``python -m tests.shared.generate_vectors``; kept apart so that file stays readable.

* ``QUESTIONNAIRE_SURVEY`` (in ``surveys[]`` as "questionnaire"): every new member and
  every condition operator;
* :func:`invalid_questionnaires` (appended to ``invalid_surveys[]``): each refusal, with
  its reason code;
* :func:`nonresponse_vectors` (``nonresponse.questions`` and ``nonresponse.reports``): for
  every mechanism a question with extras may use, a report of an answer, of ``declined``
  and of ``not_applicable`` from a fixed byte stream;
* :func:`path_vectors` (``paths[]``): answers to the questionnaire survey and, per
  question, the value each path gives it (``answered``/``declined``/``not_applicable``
  with the value index or bits), or the refusal.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from deniable.errors import InvalidSurvey, InvalidValue
from deniable.questionnaire import DECLINED, NOT_APPLICABLE
from deniable.survey import FORMAT, FORMAT_V1, Survey

__all__ = [
    "NONRESPONSE_SURVEY",
    "QUESTIONNAIRE_SURVEY",
    "invalid_questionnaires",
    "nonresponse_vectors",
    "path_vectors",
]


def _q(qid: str, kind: str, epsilon: float, **extra: Any) -> dict[str, Any]:
    return {"id": qid, "type": kind, "text": f"Question {qid}?", "epsilon": epsilon, **extra}


QUESTIONNAIRE_SURVEY: dict[str, Any] = {
    "format": FORMAT,
    "id": "questionnaire",
    "title": "Optional and conditional questions",
    "questions": [
        _q("smoke", "yes_no", 1.0, optional=True, help="Any tobacco.\nCigarettes count."),
        _q(
            "amount",
            "numeric",
            1.0,
            lo=0,
            hi=40,
            optional=True,
            show_if={"question": "smoke", "equals": True},
        ),
        _q("commute", "single_choice", 1.5, options=["Car", "Bus", "Foot"]),
        _q(
            "seven",
            "scale",
            2.0,
            points=7,
            anchors={"low": "Disagree", "high": "Agree"},
            show_if={"question": "commute", "in": ["Car", "Bus"]},
        ),
        _q("recommend", "scale", 2.0, points=11, optional=True),
        _q(
            "reasons",
            "multiple_choice",
            1.0,
            options=["Price", "Service", "Speed"],
            mechanism="binary_rr",
            optional=True,
            show_if={"question": "recommend", "between": [0, 6]},
        ),
        _q(
            "five",
            "scale",
            1.0,
            points=5,
            optional=True,
            show_if={
                "any": [
                    {"question": "reasons", "includes": "Price"},
                    {
                        "all": [
                            {"question": "amount", "between": [10, 40]},
                            {"question": "seven", "equals": 7},
                        ]
                    },
                ]
            },
        ),
    ],
}

GATE = {"question": "gate", "equals": True}
# Every mechanism a question with extras may use, each with both extras (declined, then
# not_applicable) and the answers to randomize.
NONRESPONSE_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    (_q("yes_no_grr", "yes_no", 1.0), [True]),
    *[
        (
            _q(
                f"choice_{name}",
                "single_choice",
                2.0,
                options=["a", "b", "c", "d", "e"],
                mechanism=name,
            ),
            ["c"],
        )
        for name in ("grr", "sue", "oue", "olh", "hrr", "subset")
    ],
    (_q("scale_five", "scale", 1.0, points=5), [4]),
    (_q("scale_eleven", "scale", 3.0, points=11, mechanism="oue"), [10]),
    (
        _q("multiple_rr", "multiple_choice", 2.0, options=["x", "y", "z"], mechanism="binary_rr"),
        [["x", "z"]],
    ),
    (
        _q(
            "multiple_sampled",
            "multiple_choice",
            2.0,
            options=["x", "y", "z"],
            mechanism="option_sampling",
        ),
        [["y"]],
    ),
    (_q("number", "numeric", 1.0, lo=-2, hi=6), [-2, 6, 1.25]),
]

NONRESPONSE_SURVEY: dict[str, Any] = {
    "format": FORMAT,
    "id": "nonresponse",
    "title": "Every mechanism with declined and not applicable",
    "questions": [
        _q("gate", "yes_no", 1.0),
        *[{**d, "optional": True, "show_if": GATE} for d, _ in NONRESPONSE_CASES],
    ],
}


def nonresponse_vectors(stream, source_class) -> dict[str, Any]:
    """``questions`` (the resolved survey) and ``reports``: for each question an answer, then
    ``declined``, then ``not_applicable``, randomized from a fixed byte stream (§5.5)."""
    survey = Survey.from_dict(NONRESPONSE_SURVEY)
    reports = []
    for definition, answers in NONRESPONSE_CASES:
        question = survey.question(definition["id"])
        values = [("answered", a) for a in answers]
        values += [("declined", DECLINED), ("not_applicable", NOT_APPLICABLE)]
        for index, (status, answer) in enumerate(values):
            data = stream(f"nonresponse/{question.id}/{index}")
            source = source_class(data)
            payload = question.randomize(answer, rng=source)
            reports.append(
                {
                    "question": question.id,
                    "status": status,
                    "answer": answer if status == "answered" else None,
                    "stream": data[: source.position].hex(),
                    "report": payload,
                }
            )
    return {"survey": survey.to_dict(), "reports": reports}


def _json_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


PATHS: list[dict[str, Any]] = [
    {
        "smoke": True,
        "amount": 12,
        "commute": "Car",
        "seven": 7,
        "recommend": 3,
        "reasons": ["Price"],
        "five": 2,
    },
    {"smoke": None, "commute": "Foot", "recommend": 9},
    {
        "smoke": True,
        "commute": "Bus",
        "seven": 7,
        "recommend": 2,
        "reasons": ["Speed"],
        "five": None,
    },
    {"smoke": False, "commute": "Foot", "recommend": None},
    {"smoke": True, "amount": 10, "commute": "Bus", "seven": 7, "recommend": 10, "five": 5},
    # Refused: an answer for a question not shown; a shown question left out; a bad point.
    {"smoke": False, "amount": 3, "commute": "Car", "seven": 1, "recommend": 1, "reasons": []},
    {"smoke": False, "commute": "Car", "recommend": 1, "reasons": []},
    {"smoke": False, "commute": "Bus", "seven": 0, "recommend": 1, "reasons": []},
    {"smoke": False, "commute": "Foot", "recommend": 11},
]


def path_vectors() -> list[dict[str, Any]]:
    """For each answers object, every question's status and mechanism value, or the refusal."""
    survey = Survey.from_dict(QUESTIONNAIRE_SURVEY)
    out = []
    for answers in PATHS:
        try:
            values = survey.path_answers(answers)
        except InvalidValue:
            out.append({"answers": answers, "values": None})
            continue
        described = {}
        for question in survey.questions:
            value = values[question.id]
            status = "answered"
            for position, extra in enumerate(question.extras):
                marker = (
                    (1 + position, None)
                    if question.type == "numeric"
                    else question.check_answer(DECLINED if extra == "declined" else NOT_APPLICABLE)
                )
                if value == marker:
                    status = extra
            described[question.id] = {"status": status, "value": _json_value(value)}
        out.append({"answers": answers, "values": described})
    return out


def invalid_questionnaires() -> list[dict[str, Any]]:
    """Definitions built on the questionnaire survey that a client must refuse, with codes."""

    def variant(reason: str, index: int, change: dict[str, Any], code: str, **top: Any):
        definition = copy.deepcopy(QUESTIONNAIRE_SURVEY)
        definition = Survey.from_dict(definition).to_dict()  # resolved, as signed
        question = definition["questions"][index]
        question.update({k: v for k, v in change.items() if k != "parameters"})
        if "parameters" in change:  # only these parameters change
            question["parameters"] = {**question.get("parameters", {}), **change["parameters"]}
        for key in [k for k, v in change.items() if v is None]:
            del definition["questions"][index][key]
        definition.update(top)
        try:
            Survey.from_dict(json.loads(json.dumps(definition)))
        except InvalidSurvey as error:
            assert error.reason == code, (reason, error.reason, error)
        else:  # pragma: no cover - a vector that does not refuse is a generator bug
            raise AssertionError(f"{reason}: accepted")
        return {"reason": reason, "code": code, "definition": definition}

    condition = "condition"
    return [
        variant(
            "show_if on the question itself",
            1,
            {"show_if": {"question": "amount", "between": [0, 1]}},
            condition,
        ),
        variant(
            "show_if on a later question",
            1,
            {"show_if": {"question": "commute", "equals": "Car"}},
            condition,
        ),
        variant(
            "show_if on an unknown question",
            1,
            {"show_if": {"question": "nope", "equals": True}},
            condition,
        ),
        variant(
            "equals with a value yes/no does not have",
            1,
            {"show_if": {"question": "smoke", "equals": "yes"}},
            condition,
        ),
        variant(
            "equals 1 for yes/no (not true)",
            1,
            {"show_if": {"question": "smoke", "equals": 1}},
            condition,
        ),
        variant(
            "two operators in one leaf",
            1,
            {"show_if": {"question": "smoke", "equals": True, "in": [True]}},
            condition,
        ),
        variant(
            "includes on a yes/no",
            1,
            {"show_if": {"question": "smoke", "includes": "yes"}},
            condition,
        ),
        variant(
            "in with a repeated value",
            3,
            {"show_if": {"question": "commute", "in": ["Car", "Car"]}},
            condition,
        ),
        variant("in with no value", 3, {"show_if": {"question": "commute", "in": []}}, condition),
        variant(
            "in with a label the question lacks",
            3,
            {"show_if": {"question": "commute", "in": ["Tram"]}},
            condition,
        ),
        variant(
            "between with lo > hi",
            5,
            {"show_if": {"question": "recommend", "between": [6, 0]}},
            condition,
        ),
        variant(
            "between outside the scale",
            5,
            {"show_if": {"question": "recommend", "between": [0, 11]}},
            condition,
        ),
        variant(
            "between outside [lo, hi]",
            3,
            {"show_if": {"question": "amount", "between": [-1, 3]}},
            condition,
        ),
        variant(
            "equals a point the scale lacks",
            5,
            {"show_if": {"question": "recommend", "equals": 11}},
            condition,
        ),
        variant(
            "equals on a numeric question",
            3,
            {"show_if": {"question": "amount", "equals": 3}},
            condition,
        ),
        variant(
            "includes an option the question lacks",
            6,
            {"show_if": {"question": "reasons", "includes": "Taste"}},
            condition,
        ),
        variant(
            "all with one item",
            6,
            {"show_if": {"all": [{"question": "smoke", "equals": True}]}},
            condition,
        ),
        variant(
            "any with 17 items",
            6,
            {"show_if": {"any": [{"question": "smoke", "equals": True}] * 17}},
            condition,
        ),
        variant(
            "conditions nested five deep",
            6,
            {
                "show_if": {
                    "any": [
                        {
                            "all": [
                                {"any": [{"all": [{"question": "smoke", "equals": True}] * 2}] * 2}
                            ]
                            * 2
                        }
                    ]
                    * 2
                }
            },
            condition,
        ),
        variant("a condition that is not an object", 6, {"show_if": [1]}, condition),
        variant("binary_rr on an optional yes/no", 0, {"mechanism": "binary_rr"}, "mechanism"),
        variant(
            "discrete_laplace on an optional number",
            1,
            {"mechanism": "discrete_laplace"},
            "mechanism",
        ),
        variant("a scale of 10 points", 4, {"points": 10}, "points"),
        variant("a scale without points", 4, {"points": None}, "points"),
        variant("anchors without high", 3, {"anchors": {"low": "x"}}, "missing-member"),
        variant("a blank anchor", 3, {"anchors": {"low": "x", "high": "\u200b"}}, "text-blank"),
        variant("points on a single choice", 2, {"points": 5}, "unknown-member"),
        variant("optional that is not a boolean", 0, {"optional": 1}, "wrong-type"),
        variant("blank help", 0, {"help": " \u00a0"}, "text-blank"),
        variant("help over 2000 characters", 0, {"help": "h" * 2001}, "text-length"),
        variant("help with a control character", 0, {"help": "a\rb"}, "text-control"),
        variant("optional in format /1", 0, {}, "format", format=FORMAT_V1),
        variant(
            "option_epsilon of epsilon/(m + e) rather than epsilon/(m + 1)",
            5,
            {"parameters": {"option_epsilon": 1.0 / 5}},
            "parameter",
        ),
        variant(
            "a number's status keep implying more than epsilon",
            1,
            {"parameters": {"keep": 9007199254740000}},
            "implied-epsilon",
        ),
    ]
