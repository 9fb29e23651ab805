"""Bad input at the client fails typed and silent: a DeniableError, and no request at all.

The device is the only place that ever sees a true answer, so every check on it
must happen before a byte leaves.  Requests are counted at the transport
(``FlaskAdapter.seen`` of tests/client/conftest.py, which sees every request
of the client's ``requests.Session``) around each bad call:

* bad true answers for every question type and mechanism of the canary survey
  (wrong types, NaN and infinities, out of range, unknown options, unknown,
  missing and extra questions, not a mapping): InvalidValue, zero requests, and
  the device state is untouched (no charge, no outbox, not marked answered), so
  the survey can still be answered correctly afterwards;
* bad parameters (client construction, survey ids, enrolment tokens, Policy
  caps and allowlists): InvalidParameter, zero requests;
* a valid policy whose caps the survey exceeds, or an exhausted budget: the
  survey is downloaded to be checked (GET only) but no report is ever POSTed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.client import (
    BudgetExceeded,
    DeniableError,
    InvalidParameter,
    InvalidValue,
    Policy,
    PolicyViolation,
    StateStore,
    SurveyClient,
)
from deniable.survey import Survey
from tests.client.conftest import CANARY_DEFINITION

from .conftest import BASE, GENEROUS

GOOD = {"yn": True, "one": "a", "olh": "b", "many": ["x"], "num": 12.5, "lap": 3, "memo": "q"}

BAD_VALUES: dict[str, list[Any]] = {
    # yes_no
    "yn": ["yes", 1, 0, None, [True], math.nan, "True", b"\x01"],
    # single_choice (GRR, 5 options), single_choice (OLH), longitudinal GRR
    "one": ["z", "A", 0, 1, None, ["a"], math.nan, True, "a ", ""],
    "olh": ["d", 2, None, math.inf, {"b": 1}],
    "memo": ["s", 0, None, ["p"], math.nan],
    # multiple_choice
    "many": ["x", ["w"], [1], [None], None, 1, ["x", 3], [["x"]], {"x": True}],
    # numeric (range [-5, 300]) and discrete Laplace (range [0, 10])
    "num": [
        math.nan,
        math.inf,
        -math.inf,
        300.0001,
        -5.5,
        1e309,
        "7",
        None,
        True,
        [1.0],
        np.float64("nan"),
        np.nan,
        complex(1, 1),
    ],
    "lap": [-0.001, 10.5, math.nan, "3", False, None, -math.inf],
}
BAD_CASES = [(question, value) for question, values in BAD_VALUES.items() for value in values]


def empty_state(store: StateStore) -> None:
    state = store.load()
    assert (state.ledger, state.outbox, state.answered, state.memo) == ([], [], {}, {})


@pytest.fixture
def canary(aggregator, adapter, make_client):
    """A fetched canary survey (every question type), and the request log cleared."""
    aggregator.create(CANARY_DEFINITION)
    client = make_client(policy=GENEROUS)
    verified = client.fetch("canary")
    adapter.seen.clear()
    return client, verified


@pytest.mark.parametrize(("question", "value"), BAD_CASES, ids=[f"{q}-{v!r}" for q, v in BAD_CASES])
def test_bad_true_answer_is_refused_before_any_request(canary, adapter, store, question, value):
    client, verified = canary
    with pytest.raises(InvalidValue) as raised:
        client.answer(verified, {**GOOD, question: value})
    assert question in str(raised.value)
    assert adapter.seen == []
    empty_state(store)


@pytest.mark.parametrize(
    "answers",
    [
        {k: v for k, v in GOOD.items() if k != "num"},  # a question missing
        {},  # all missing
        {**GOOD, "extra": 1},  # a question the survey does not have
        {**GOOD, "YN": True},  # case matters
        {**GOOD, 1: True},  # not even a string key
        None,
        [("yn", True)],
        "yn=true",
    ],
    ids=["missing", "empty", "extra", "wrong-case", "int-key", "none", "list", "string"],
)
def test_missing_unknown_or_malformed_answers_are_refused_before_any_request(
    canary, adapter, store, answers
):
    client, verified = canary
    with pytest.raises(InvalidValue):
        client.answer(verified, answers)
    assert adapter.seen == []
    empty_state(store)


def test_after_refusals_the_survey_is_answered_once_with_one_post(canary, adapter, aggregator):
    client, verified = canary
    for question, value in BAD_CASES[::3]:
        with pytest.raises(InvalidValue):
            client.answer(verified, {**GOOD, question: value})
    assert adapter.seen == []
    receipt = client.answer(verified, GOOD)
    assert receipt.delivered
    assert [s.method for s in adapter.seen] == ["POST"]
    assert len(aggregator.export("canary")) == len(CANARY_DEFINITION["questions"])


INVALID_ANSWER = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def test_any_value_the_survey_rejects_sends_nothing(canary, adapter, store):
    """Hypothesis: whatever ``Question.check_answer`` refuses, ``answer`` refuses silently."""
    client, verified = canary
    questions = {q.id: q for q in Survey.from_dict(CANARY_DEFINITION).questions}

    @given(question=st.sampled_from(sorted(questions)), value=INVALID_ANSWER)
    @settings(
        max_examples=300,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(question: str, value: Any) -> None:
        try:
            questions[question].check_answer(value)
        except InvalidValue:
            pass
        else:
            return  # a valid answer: not this test's business
        with pytest.raises(InvalidValue):
            client.answer(verified, {**GOOD, question: value})
        assert adapter.seen == []

    run()
    empty_state(store)


# -- bad parameters --------------------------------------------------------------------------

BAD_CLIENT_OPTIONS = [
    {"base_url": 42},
    {"base_url": "ftp://aggregator.test"},
    {"base_url": "aggregator.test"},
    {"base_url": "http://aggregator.test/?survey=1"},
    {"base_url": "http://aggregator.test:99999"},
    {"base_url": "http://[::1"},
    {"trusted_key": "not base64!"},
    {"trusted_key": "AAAA"},
    {"policy": "strict"},
    {"policy": {"max_survey_epsilon": 1}},
    {"state": 42},
    {"timeout": 0},
    {"timeout": -1},
    {"timeout": math.nan},
    {"timeout": math.inf},
    {"timeout": (1, 2, 3)},
    {"timeout": "10"},
    {"timeout": True},
    {"retries": -1},
    {"retries": 21},
    {"retries": 1.5},
    {"retries": True},
    {"backoff": -0.1},
    {"backoff": math.nan},
    {"max_backoff": math.inf},
    {"max_backoff": "1"},
]


@pytest.mark.parametrize("options", BAD_CLIENT_OPTIONS, ids=lambda o: f"{o}")
def test_bad_client_parameters_raise_before_any_request(http, adapter, store, options):
    options = {"base_url": BASE, "state": store, "session": http, **options}
    base_url = options.pop("base_url")
    with pytest.raises(InvalidParameter):
        SurveyClient(base_url, **options)
    assert adapter.seen == []


BAD_POLICIES = [
    {"max_question_epsilon": 0},
    {"max_question_epsilon": -1},
    {"max_question_epsilon": math.nan},
    {"max_question_epsilon": math.inf},
    {"max_survey_epsilon": "10"},
    {"max_survey_epsilon": True},
    {"max_survey_epsilon": None},
    {"lifetime_epsilon": -math.inf},
    {"lifetime_epsilon": 1e400},
    {"period_epsilon": 0.0},
    {"period_epsilon": [5]},
    {"period_days": 0},
    {"period_days": -30},
    {"period_days": math.nan},
    {"allowed_mechanisms": "grr"},
    {"allowed_mechanisms": [1, 2]},
    {"allowed_mechanisms": [None]},
]


@pytest.mark.parametrize("caps", BAD_POLICIES, ids=lambda c: f"{c}")
def test_bad_policy_caps_raise_before_any_request(adapter, caps):
    with pytest.raises(InvalidParameter):
        Policy(**caps)
    assert adapter.seen == []


@pytest.mark.parametrize(
    "survey_id", ["", "Bad Id", "../canary", "canary/close", "x" * 500, None, 7, "canary\n"]
)
def test_bad_survey_ids_raise_before_any_request(canary, adapter, survey_id):
    client, _ = canary
    with pytest.raises((InvalidParameter, InvalidValue)):
        client.fetch(survey_id)
    with pytest.raises((InvalidParameter, InvalidValue)):
        client.answer(survey_id, GOOD)
    assert adapter.seen == []


@pytest.mark.parametrize(
    "token", ["", "two words", "tab\there", "line\nbreak", "é", "x" * 300, 42, b"dne_x"]
)
def test_bad_enrolment_tokens_raise_before_any_request(canary, adapter, store, token):
    client, verified = canary
    with pytest.raises(InvalidParameter):
        client.answer(verified, GOOD, enrolment_token=token)
    assert adapter.seen == []
    empty_state(store)


def test_answer_needs_a_verified_survey(canary, adapter):
    client, verified = canary
    for fake in (object(), {"id": "canary"}, verified.survey):
        with pytest.raises(InvalidParameter):
            client.answer(fake, GOOD)
    assert adapter.seen == []


# -- valid policies the survey exceeds ----------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "error"),
    [
        (Policy(max_question_epsilon=0.5), PolicyViolation),
        (Policy(max_survey_epsilon=2.0), PolicyViolation),
        (Policy(max_survey_epsilon=50, allowed_mechanisms={"grr", "binary_rr"}), PolicyViolation),
        (Policy(max_survey_epsilon=50, allow_longitudinal=False), PolicyViolation),
        (Policy(max_survey_epsilon=50, lifetime_epsilon=3.0), BudgetExceeded),
        (Policy(max_survey_epsilon=50, period_epsilon=3.0), BudgetExceeded),
    ],
    ids=["question-cap", "survey-cap", "allowlist", "longitudinal", "lifetime", "period"],
)
def test_a_survey_over_the_policy_is_never_answered(
    aggregator, adapter, make_client, policy, error
):
    aggregator.create(CANARY_DEFINITION)
    client = make_client(policy=policy)
    for attempt in (lambda: client.fetch("canary"), lambda: client.answer("canary", GOOD)):
        with pytest.raises(error) as raised:
            attempt()
        assert isinstance(raised.value, DeniableError)
    assert {s.method for s in adapter.seen} == {"GET"}  # downloaded to be checked, never posted
    assert aggregator.export("canary") == []
