"""Survey definitions: validation, defaults, canonical bytes, round trips."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.errors import InvalidSurvey, InvalidValue
from deniable.mechanisms import recommend
from deniable.randomness import GeneratorSource
from deniable.results import question_results
from deniable.survey import FORMAT, Survey
from deniable.survey_checks import BLANK

DEFINITION = {
    "format": FORMAT,
    "id": "health-2026",
    "title": "Health habits",
    "description": "A demo.",
    "questions": [
        {"id": "smoker", "type": "yes_no", "text": "Do you smoke?", "epsilon": 1},
        {
            "id": "party",
            "type": "single_choice",
            "text": "Which party?",
            "options": ["red", "green", "blue", "other"],
            "epsilon": 2.0,
        },
        {
            "id": "symptoms",
            "type": "multiple_choice",
            "text": "Which symptoms?",
            "options": ["cough", "fever", "fatigue"],
            "epsilon": 1.5,
        },
        {"id": "age", "type": "numeric", "text": "Age?", "lo": 0, "hi": 120, "epsilon": 0.5},
        {
            "id": "habit",
            "type": "yes_no",
            "text": "Did you exercise today?",
            "epsilon": 2.0,
            "longitudinal": {"key": "exercise-daily", "instantaneous_epsilon": 1.0},
        },
    ],
}


def test_defaults_are_resolved_and_total_epsilon_is_the_sum() -> None:
    survey = Survey.from_dict(DEFINITION)
    mechanisms = {q.id: q.mechanism for q in survey.questions}
    assert mechanisms["smoker"] == "binary_rr"
    assert mechanisms["party"] == recommend(domain_size=4, epsilon=2.0).mechanism
    assert mechanisms["symptoms"] == "option_sampling"
    assert mechanisms["symptoms"] == recommend(3, 1.5, multiple=True).mechanism
    assert mechanisms["age"] == "duchi"
    assert survey.total_epsilon == pytest.approx(1 + 2 + 1.5 + 0.5 + 2)


def _with_mechanism(question_id: str, mechanism: str) -> dict:
    definition = json.loads(json.dumps(DEFINITION))
    for question in definition["questions"]:
        if question["id"] == question_id:
            question["mechanism"] = mechanism
    return definition


def test_multiple_choice_splits_epsilon_over_options() -> None:
    question = Survey.from_dict(_with_mechanism("symptoms", "binary_rr")).question("symptoms")
    assert question.oracle.option_oracle.epsilon == pytest.approx(1.5 / 3)
    assert question.oracle.epsilon_implemented == pytest.approx(1.5, abs=1e-9)


def test_canonical_bytes_ignore_key_order_whitespace_and_int_floats() -> None:
    shuffled = json.loads(json.dumps(DEFINITION, sort_keys=True))
    shuffled["questions"][0]["epsilon"] = 1.0
    text = json.dumps(shuffled, indent=4)
    assert (
        Survey.from_json(text).canonical_bytes() == Survey.from_dict(DEFINITION).canonical_bytes()
    )


def test_resolved_definition_round_trips() -> None:
    survey = Survey.from_dict(DEFINITION)
    again = Survey.from_dict(json.loads(survey.canonical_bytes()))
    assert again == survey
    assert again.canonical_bytes() == survey.canonical_bytes()


def _mutate(path: list, value) -> dict:
    data = copy.deepcopy(DEFINITION)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


MALFORMED = [
    (["format"], "deniable.survey/3"),
    (["format"], KeyError),
    (["id"], "Has Spaces"),
    (["id"], ""),
    (["id"], 7),
    (["title"], ""),
    (["title"], None),
    (["questions"], []),
    (["questions"], {}),
    (["extra"], 1),
    (["questions", 0, "epsilon"], 0),
    (["questions", 0, "epsilon"], float("nan")),
    (["questions", 0, "epsilon"], 37),
    (["questions", 0, "epsilon"], "1"),
    (["questions", 0, "epsilon"], True),
    (["questions", 0, "type"], "essay"),
    (["questions", 0, "text"], ""),
    (["questions", 0, "options"], ["a", "b"]),
    (["questions", 0, "mechanism"], "laplace"),
    (["questions", 0, "surprise"], 1),
    (["questions", 1, "options"], ["solo"]),
    (["questions", 1, "options"], ["a", "a"]),
    (["questions", 1, "options"], "red,green"),
    (["questions", 1, "mechanism"], "duchi"),
    (["questions", 1, "mechanism"], "binary_rr"),
    (["questions", 2, "mechanism"], "grr"),
    (["questions", 3, "lo"], 200),
    (["questions", 3, "hi"], float("inf")),
    (["questions", 3, "lo"], KeyError),
    (["questions", 3, "mechanism"], "grr"),
    (["questions", 3, "parameters"], {"grid_size": 0}),
    (["questions", 4, "longitudinal"], {"key": "x"}),
    (["questions", 4, "longitudinal"], {"key": "x", "instantaneous_epsilon": -1}),
    (["questions", 4, "longitudinal", "key"], "Bad Key"),
    (["questions", 3, "longitudinal"], {"key": "x", "instantaneous_epsilon": 1}),
]


@pytest.mark.parametrize(("path", "value"), MALFORMED)
def test_malformed_definitions_raise_invalid_survey(path, value) -> None:
    with pytest.raises(InvalidSurvey):
        Survey.from_dict(_mutate(path, value))


def test_duplicate_question_ids_are_rejected() -> None:
    data = copy.deepcopy(DEFINITION)
    data["questions"][1]["id"] = "smoker"
    with pytest.raises(InvalidSurvey, match="distinct"):
        Survey.from_dict(data)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    )
)
@settings(max_examples=300, deadline=None)
def test_arbitrary_json_is_accepted_or_raises_invalid_survey(data) -> None:
    try:
        Survey.from_dict(data)
    except InvalidSurvey:
        pass


identifiers = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True)
# Survey text refuses control characters (Cc: C0, DEL, C1) and blank text (only White_Space
# and Default_Ignorable code points, docs/protocol.md); anything else printable goes.
labels = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=12).filter(
    lambda s: not BLANK.fullmatch(s)
)


@st.composite
def surveys(draw) -> dict:
    count = draw(st.integers(1, 4))
    ids = draw(st.lists(identifiers, min_size=count, max_size=count, unique=True))
    questions = []
    for qid in ids:
        kind = draw(st.sampled_from(["yes_no", "single_choice", "multiple_choice", "numeric"]))
        question = {
            "id": qid,
            "type": kind,
            "text": draw(labels),
            "epsilon": draw(st.floats(0.01, 10)),
        }
        if kind in ("single_choice", "multiple_choice"):
            question["options"] = draw(st.lists(labels, min_size=2, max_size=6, unique=True))
        if kind == "numeric":
            lo = draw(st.floats(-1e6, 1e6))
            question["lo"], question["hi"] = lo, lo + draw(st.floats(0.5, 1e6))
        questions.append(question)
    return {
        "format": FORMAT,
        "id": draw(identifiers),
        "title": draw(labels),
        "questions": questions,
    }


@given(surveys())
@settings(max_examples=150, deadline=None)
def test_generated_surveys_round_trip_through_canonical_bytes(data) -> None:
    survey = Survey.from_dict(data)
    again = Survey.from_json(survey.canonical_bytes())
    assert again.canonical_bytes() == survey.canonical_bytes()
    assert survey.total_epsilon == pytest.approx(sum(q["epsilon"] for q in data["questions"]))


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("smoker", "yes"),
        ("smoker", 1),
        ("party", "purple"),
        ("party", 0),
        ("symptoms", "cough"),
        ("symptoms", ["cough", "sneeze"]),
        ("age", 121),
        ("age", float("nan")),
        ("age", "30"),
        ("habit", None),
    ],
)
def test_bad_true_answers_raise_invalid_value(question, answer) -> None:
    with pytest.raises(InvalidValue, match=question):
        Survey.from_dict(DEFINITION).question(question).randomize(answer)


def test_every_answer_gives_a_report_of_the_same_length() -> None:
    survey = Survey.from_dict(DEFINITION)
    answers = {
        "smoker": [True, False],
        "party": ["red", "green", "blue", "other"],
        "symptoms": [[], ["cough"], ["cough", "fever", "fatigue"]],
        "age": [0, 33.3, 120],
        "habit": [True, False],
    }
    for question in survey.questions:
        lengths = {len(question.randomize(a)) for a in answers[question.id] for _ in range(20)}
        assert lengths == {question.oracle.report_length}


def test_statistics_and_results_for_every_question_type() -> None:
    survey = Survey.from_dict(DEFINITION)
    rng = np.random.default_rng(1)
    question = survey.question("symptoms")
    payloads = [question.randomize(["cough"], rng) for _ in range(4000)]
    result = question_results(question, question.statistics(payloads), len(payloads))
    by_label = {c["label"]: c for c in result["categories"]}
    assert by_label["cough"]["lower"] <= 1.0 <= by_label["cough"]["upper"]
    assert by_label["fever"]["lower"] <= 0.0 <= by_label["fever"]["upper"]
    assert question_results(question, question.statistics([]), 0)["estimate"] is None


def test_multiple_choice_option_sampling_round_trip() -> None:
    question = Survey.from_dict(DEFINITION).question("symptoms")
    assert question.oracle.name == "option_sampling"
    assert question.oracle.epsilon_implemented == pytest.approx(1.5, abs=1e-9)
    assert question.statistics_size == 6
    rng = np.random.default_rng(1)
    payloads = [question.randomize(["cough", "fatigue"], GeneratorSource(rng)) for _ in range(50)]
    assert {len(p) for p in payloads} == {4}
    statistics = question.statistics(payloads)
    assert statistics.sum() == 50 and statistics.shape == (6,)
    result = question_results(question, statistics, 50)
    assert [c["label"] for c in result["categories"]] == ["cough", "fever", "fatigue"]
    assert "bernstein_lower" in result["categories"][0]
