"""Optional and conditional questions, help text and scales (deniable.questionnaire, §5.5-5.6).

Exact privacy: for every mechanism a question with non-response values may use, the worst
log-ratio of the report's law over every pair of true answers, "declined" and "not
applicable" included, EQUALS the declared ε (enumerated from the exact laws).  Then the
definition's rules and refusals, and the answers along a path.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from fractions import Fraction

import pytest

from deniable.errors import InvalidSurvey, InvalidValue
from deniable.mechanisms import CATEGORICAL, QUESTION_MECHANISMS
from deniable.mechanisms.duchi_status import DuchiStatus, part_epsilon
from deniable.questionnaire import DECLINED, NOT_APPLICABLE
from deniable.survey import FORMAT, FORMAT_V1, Question, Survey

from .conftest import distribution_seeds
from .generate_vectors import PATH as VECTOR_PATH
from .generate_vectors import StreamSource
from .questionnaire_vectors import QUESTIONNAIRE_SURVEY
from .test_mechanisms import worst_log_ratio

EPSILONS = [0.5, 1.0, 3.0]
EXTRAS = {"declined": {"optional": True}, "both": {"optional": True}, "not_applicable": {}}
NON_BINARY = sorted(name for name, cls in CATEGORICAL.items() if not cls.binary)
MULTIPLE = sorted(QUESTION_MECHANISMS["multiple_choice"])


def survey_with(question: dict, extras: str) -> Survey:
    """A two-question survey: ``first`` then ``question`` with the named extras."""
    target = {**question, **EXTRAS[extras]}
    if extras != "declined":
        target["show_if"] = {"question": "first", "equals": True}
    first = {"id": "first", "type": "yes_no", "text": "First?", "epsilon": 1.0}
    return Survey.from_dict(
        {"format": FORMAT, "id": "s", "title": "S", "questions": [first, target]}
    )


def non_responses(question: Question) -> list:
    return [{"declined": DECLINED, "not_applicable": NOT_APPLICABLE}[x] for x in question.extras]


# -- exact privacy, non-response included ------------------------------------------------------


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("extras", sorted(EXTRAS))
@pytest.mark.parametrize("kind", ["yes_no", "single_choice", "scale"])
@pytest.mark.parametrize("name", NON_BINARY)
def test_categorical_privacy_with_non_response_is_exactly_epsilon(name, kind, extras, epsilon):
    definition = {"id": "q", "type": kind, "text": "Q?", "epsilon": epsilon, "mechanism": name}
    if kind == "single_choice":
        definition["options"] = ["a", "b", "c"]
    if kind == "scale":
        definition["points"] = 5
    question = survey_with(definition, extras).question("q")
    oracle = question.oracle
    values = [question.check_answer(v) for v in non_responses(question)]
    values += list(range(question.base_size))
    assert oracle.domain_size == question.base_size + len(question.extras) == len(set(values))
    worst = 0.0
    for keywords in distribution_seeds(oracle):
        laws = [oracle.report_distribution(v, **keywords) for v in values]
        worst = max(worst, worst_log_ratio(laws))
    assert worst == pytest.approx(epsilon, abs=1e-9)
    assert worst == pytest.approx(oracle.epsilon_implemented, abs=1e-12)


def optionwise_law(question: Question, bits: tuple[int, ...]) -> dict[str, float]:
    """The exact law of one binary RR per bit (the product of the bits' laws)."""
    per_bit = question.oracle.option_oracle
    law: dict[str, float] = {}
    for report in itertools.product((0, 1), repeat=len(bits)):
        p = math.prod(
            per_bit.report_distribution(b)[f"{r:02x}"] for b, r in zip(bits, report, strict=True)
        )
        law[bytes(report).hex()] = p
    return law


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("extras", sorted(EXTRAS))
@pytest.mark.parametrize("name", MULTIPLE)
def test_multiple_choice_privacy_with_non_response_is_exactly_epsilon(name, extras, epsilon):
    definition = {
        "id": "q",
        "type": "multiple_choice",
        "text": "Q?",
        "epsilon": epsilon,
        "mechanism": name,
        "options": ["a", "b", "c"],
    }
    question = survey_with(definition, extras).question("q")
    answers = [list(c) for r in range(4) for c in itertools.combinations(question.options, r)]
    values = [question.check_answer(a) for a in answers + non_responses(question)]
    if name == "option_sampling":
        laws = [question.oracle.report_distribution(v) for v in values]
    else:
        laws = [optionwise_law(question, v) for v in values]
    for law in laws:
        assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    worst = worst_log_ratio(laws)
    assert worst == pytest.approx(epsilon, abs=1e-9)
    assert worst == pytest.approx(question.oracle.epsilon_implemented, abs=1e-12)


def exact_worst(laws: list[dict[str, Fraction]]) -> float:
    worst = Fraction(1)
    for y in set().union(*laws):
        column = [law[y] for law in laws]
        worst = max(worst, max(column) / min(column))
    return math.log(worst)


@pytest.mark.parametrize("epsilon", [0.01, *EPSILONS, 10.0])
@pytest.mark.parametrize("extras", sorted(EXTRAS))
def test_numeric_privacy_with_non_response_is_exactly_epsilon(extras, epsilon):
    definition = {"id": "q", "type": "numeric", "text": "Q?", "epsilon": epsilon, "lo": -2, "hi": 6}
    question = survey_with(definition, extras).question("q")
    oracle = question.oracle
    assert isinstance(oracle, DuchiStatus)
    numbers = [-2, 6, 2, -1.5, 0.123, 5.999]
    values = [question.check_answer(v) for v in numbers + non_responses(question)]
    laws = [oracle.exact_distribution(v) for v in values]
    for law in laws:
        assert sum(law.values()) == 1
        assert all(len(y) == oracle.report_length for y in law)
    worst = exact_worst(laws)
    assert worst == pytest.approx(epsilon, abs=1e-9)
    assert worst == pytest.approx(oracle.epsilon_implemented, abs=1e-12)
    # The float laws agree with the exact ones, and the part ε solves e^a (e^a + 1)/2 = e^ε.
    float_laws = [oracle.report_distribution(v) for v in values]
    assert worst_log_ratio(float_laws) == pytest.approx(epsilon, abs=1e-9)
    a = part_epsilon(epsilon)
    assert a + math.log((math.exp(a) + 1) / 2) == pytest.approx(epsilon, rel=1e-12)
    assert epsilon / 2 < a < epsilon


def test_the_even_split_would_waste_budget() -> None:
    """ε/2 + ε/2 is private but its worst case is below ε: the part ε is what makes it tight."""
    for epsilon in EPSILONS:
        half = epsilon / 2
        assert half + math.log((math.exp(half) + 1) / 2) < epsilon - 0.05 * epsilon


# -- the definition ----------------------------------------------------------------------------

BASE = {
    "format": FORMAT,
    "id": "q",
    "title": "T",
    "questions": [
        {"id": "smoke", "type": "yes_no", "text": "Smoke?", "epsilon": 1, "optional": True},
        {
            "id": "much",
            "type": "numeric",
            "text": "How many?",
            "epsilon": 1,
            "lo": 0,
            "hi": 40,
            "optional": True,
            "help": "Per day.\nRoughly.",
            "show_if": {"question": "smoke", "equals": True},
        },
        {
            "id": "nps",
            "type": "scale",
            "points": 11,
            "text": "Recommend?",
            "epsilon": 2,
            "anchors": {"low": "Never", "high": "Surely"},
        },
        {
            "id": "why",
            "type": "multiple_choice",
            "options": ["a", "b", "c"],
            "text": "Why?",
            "epsilon": 1,
            "show_if": {"question": "nps", "between": [0, 6]},
        },
        {
            "id": "fav",
            "type": "single_choice",
            "options": ["x", "y", "z"],
            "text": "Favourite?",
            "epsilon": 1,
            "show_if": {
                "any": [
                    {"question": "nps", "in": [9, 10]},
                    {
                        "all": [
                            {"question": "why", "includes": "a"},
                            {"question": "smoke", "equals": False},
                        ]
                    },
                ]
            },
        },
    ],
}


def test_a_questionnaire_round_trips_through_its_signed_bytes() -> None:
    survey = Survey.from_dict(BASE)
    again = Survey.from_dict(survey.to_dict(), resolved=True)
    assert again.canonical_bytes() == survey.canonical_bytes()
    smoke, much, nps, why, fav = survey.questions
    assert smoke.mechanism == "grr" and smoke.labels == ["no", "yes", "declined"]
    assert much.labels == ["mean", "declined", "not_applicable"] and much.help.startswith("Per")
    assert nps.labels == [str(p) for p in range(11)] and nps.anchors == ("Never", "Surely")
    assert why.oracle.categories == 4 and fav.oracle.domain_size == 4
    # The ledger charges every question's ε whatever the path.
    assert survey.total_epsilon == 6


def test_format_1_keeps_working_and_refuses_the_new_members() -> None:
    plain = {
        **BASE,
        "format": FORMAT_V1,
        "questions": [{"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1}],
    }
    assert Survey.from_dict(plain).questions[0].mechanism == "binary_rr"
    for member in ({"optional": True}, {"help": "Help."}):
        broken = copy.deepcopy(plain)
        broken["questions"][0].update(member)
        with pytest.raises(InvalidSurvey, match="needs format deniable.survey/2") as caught:
            Survey.from_dict(broken)
        assert caught.value.reason == "format"
    scale = copy.deepcopy(plain)
    scale["questions"][0].update(type="scale", points=5)
    with pytest.raises(InvalidSurvey) as caught:
        Survey.from_dict(scale)
    assert caught.value.reason == "format"


REFUSALS = [
    (1, {"show_if": {"question": "much", "equals": 1}}, "condition"),  # itself
    (1, {"show_if": {"question": "nps", "between": [0, 1]}}, "condition"),  # forward
    (1, {"show_if": {"question": "nope", "equals": True}}, "condition"),  # unknown
    (1, {"show_if": {"question": "smoke", "equals": "yes"}}, "condition"),  # not a value
    (1, {"show_if": {"question": "smoke", "equals": True, "in": [True]}}, "condition"),
    (1, {"show_if": {"question": "smoke", "includes": "a"}}, "condition"),
    (3, {"show_if": {"question": "nps", "between": [6, 2]}}, "condition"),
    (3, {"show_if": {"question": "nps", "between": [0, 11]}}, "condition"),
    (3, {"show_if": {"question": "nps", "in": [1, 1]}}, "condition"),
    (3, {"show_if": {"question": "nps", "in": []}}, "condition"),
    (3, {"show_if": {"question": "nps", "equals": 10.5}}, "condition"),
    (4, {"show_if": {"question": "why", "includes": "d"}}, "condition"),
    (4, {"show_if": {"all": [{"question": "nps", "equals": 1}]}}, "condition"),
    (
        4,
        {
            "show_if": {
                "any": [
                    {"all": [{"any": [{"all": [{"question": "nps", "equals": 1}] * 2}] * 2}] * 2}
                ]
                * 2
            }
        },
        "condition",
    ),
    (0, {"mechanism": "binary_rr"}, "mechanism"),
    (1, {"mechanism": "discrete_laplace"}, "mechanism"),
    (2, {"points": 10}, "points"),
    (2, {"anchors": {"low": "x"}}, "missing-member"),
    (0, {"points": 5}, "unknown-member"),
    (0, {"optional": "yes"}, "wrong-type"),
    (0, {"help": " "}, "text-blank"),
    (0, {"help": "x" * 2001}, "text-length"),
]


@pytest.mark.parametrize(("index", "change", "reason"), REFUSALS)
def test_bad_questionnaire_members_are_refused_with_their_reason(index, change, reason) -> None:
    broken = copy.deepcopy(BASE)
    broken["questions"][index].update(change)
    with pytest.raises(InvalidSurvey) as caught:
        Survey.from_dict(broken)
    assert caught.value.reason == reason


def test_longitudinal_questions_cannot_be_optional() -> None:
    broken = copy.deepcopy(BASE)
    broken["questions"][0].update(
        mechanism="grr", longitudinal={"key": "k", "instantaneous_epsilon": 2}
    )
    with pytest.raises(InvalidSurvey, match="longitudinal") as caught:
        Survey.from_dict(broken)
    assert caught.value.reason == "mechanism"


# -- answers along a path ----------------------------------------------------------------------


def test_every_question_gets_a_value_on_every_path() -> None:
    survey = Survey.from_dict(BASE)
    # Declined the first question: the number is not asked (a condition on a declined answer
    # is false); a promoter sees the favourite, not the reasons.
    path = survey.path_answers({"smoke": None, "nps": 10, "fav": "y"})
    assert path == {"smoke": 2, "much": (2, None), "nps": 10, "why": (0, 0, 0, 1), "fav": 1}
    path = survey.path_answers({"smoke": False, "nps": 3, "why": ["a"], "fav": "z"})
    assert path["much"] == (2, None) and path["why"] == (1, 0, 0, 0) and path["fav"] == 2
    path = survey.path_answers({"smoke": True, "nps": 3, "why": ["b"]})
    assert path["much"] == (1, None) and path["fav"] == 3  # declined; not applicable
    path = survey.path_answers({"smoke": True, "much": 12, "nps": 7})
    assert path["much"] == (0, 12.0) and path["why"] == (0, 0, 0, 1)


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"smoke": False, "much": 3, "nps": 1, "why": []}, "'much' is not shown"),
        ({"smoke": True, "nps": 1}, "'why'"),
        ({"smoke": True, "nps": 11}, "integer point"),
        ({"smoke": True, "nps": True}, "integer point"),
        ({"nps": 9, "fav": "x", "other": 1}, "unknown"),
    ],
)
def test_answers_off_the_path_are_refused(answers, message) -> None:
    with pytest.raises(InvalidValue, match=message):
        Survey.from_dict(BASE).path_answers(answers)


# -- the cross-language vectors (shared/vectors; the browser client reads the same) -----------

VECTORS = json.loads(VECTOR_PATH.read_text("utf-8"))["questionnaire"]
NONRESPONSE = Survey.from_dict(VECTORS["nonresponse"]["survey"], resolved=True)


@pytest.mark.parametrize("vector", VECTORS["surveys"], ids=lambda v: v["name"])
def test_the_questionnaire_survey_is_signed_over_its_canonical_bytes(vector) -> None:
    survey = Survey.from_dict(vector["definition"], resolved=True)
    assert survey.canonical_bytes() == vector["canonical"].encode("utf-8")
    again = Survey.from_dict(json.loads(vector["canonical"]), resolved=True)
    assert again == survey


@pytest.mark.parametrize("vector", VECTORS["invalid_surveys"], ids=lambda v: v["reason"])
def test_questionnaire_definitions_a_client_must_refuse(vector) -> None:
    with pytest.raises(InvalidSurvey) as refused:
        Survey.from_dict(vector["definition"], resolved=True)
    assert refused.value.reason == vector["code"], str(refused.value)


@pytest.mark.parametrize(
    "vector",
    VECTORS["nonresponse"]["reports"],
    ids=lambda v: f"{v['question']}-{v['status']}-{json.dumps(v['answer'])}",
)
def test_non_response_reports_from_a_fixed_byte_stream(vector) -> None:
    question = NONRESPONSE.question(vector["question"])
    answer = {"declined": DECLINED, "not_applicable": NOT_APPLICABLE}.get(
        vector["status"], vector["answer"]
    )
    source = StreamSource(bytes.fromhex(vector["stream"]))
    assert question.randomize(answer, rng=source) == vector["report"]
    assert source.position == len(source.data), "every byte of the stream is used"
    assert len(vector["report"]) == question.oracle.report_length


def test_every_mechanism_with_extras_has_non_response_vectors() -> None:
    covered = {(q.type, q.mechanism) for q in NONRESPONSE.questions if q.extras}
    for kind in ("yes_no", "single_choice", "multiple_choice", "numeric"):
        for name in QUESTION_MECHANISMS[kind]:
            if kind in ("yes_no", "single_choice"):
                refused = CATEGORICAL[name].binary
                assert refused or {(k, name) for k in ("yes_no", "single_choice")} & covered
            elif name == "discrete_laplace":
                continue  # refused with extras
            else:
                assert (kind, name) in covered, (kind, name)
    statuses = {(v["question"], v["status"]) for v in VECTORS["nonresponse"]["reports"]}
    for question in NONRESPONSE.questions[1:]:
        assert {(question.id, s) for s in ("answered", "declined", "not_applicable")} <= statuses


@pytest.mark.parametrize("vector", VECTORS["paths"], ids=lambda v: json.dumps(v["answers"])[:60])
def test_path_vectors(vector) -> None:
    survey = Survey.from_dict(QUESTIONNAIRE_SURVEY)
    if vector["values"] is None:
        with pytest.raises(InvalidValue):
            survey.path_answers(vector["answers"])
        return
    values = survey.path_answers(vector["answers"])
    for qid, expected in vector["values"].items():
        value = values[qid]
        assert (list(value) if isinstance(value, tuple) else value) == expected["value"], qid


def test_a_condition_reads_a_number_by_its_value() -> None:
    """7.0 and 7 are one JSON number (docs/protocol.md §2.2): a JavaScript client cannot tell
    them apart, so a condition on a scale point accepts both, and they are one value in `in`."""
    spelled = copy.deepcopy(BASE)
    spelled["questions"][3]["show_if"] = {"question": "nps", "in": [0.0, 6]}
    survey = Survey.from_dict(spelled)
    assert survey.path_answers({"smoke": False, "nps": 0, "why": []})["why"] == (0, 0, 0, 0)
    spelled["questions"][3]["show_if"] = {"question": "nps", "in": [6.0, 6]}
    with pytest.raises(InvalidSurvey) as caught:
        Survey.from_dict(spelled)
    assert caught.value.reason == "condition"


def test_crosstabs_take_non_response_as_categories_and_an_optional_number_by_status() -> None:
    from deniable.crosstab import StatusAxis, axis

    survey = Survey.from_dict(BASE)
    assert axis(survey.question("smoke").oracle).size == 3  # no, yes, declined
    number = axis(survey.question("much").oracle)  # its sign, then answered and the extras
    assert isinstance(number, StatusAxis) and number.size == 1 + 1 + len(
        survey.question("much").extras
    )
