"""SurveyClient against the real in-process aggregator (Flask test client via FlaskAdapter)."""

from __future__ import annotations

import base64
import copy
import itertools
import json
from typing import Any

import pytest

from deniable.client import (
    AlreadyAnswered,
    BudgetExceeded,
    InvalidParameter,
    InvalidValue,
    Policy,
    PolicyViolation,
    SignatureError,
    StateStore,
    SurveyClient,
    SurveyClosed,
    TransportError,
)
from deniable.mechanisms import MECHANISMS

from .conftest import (
    ANSWERS,
    BASE,
    CANARY_DEFINITION,
    GENEROUS,
    STATE_KEY,
    Aggregator,
    definition,
    make_app,
)


def test_answer_delivers_one_batch_stored_once(aggregator, client, adapter) -> None:
    aggregator.create(definition())
    survey = client.fetch("s1")
    receipt = client.answer(survey, ANSWERS)
    assert receipt.delivered and len(receipt.report_ids) == 4
    assert receipt.epsilon_charged == pytest.approx(4.0)
    posts = adapter.report_posts()
    assert len(posts) == 1
    body = json.loads(posts[0].body)
    assert list(body) == ["reports"]
    assert [r["question"] for r in body["reports"]] == ["smoker", "commute", "tools", "hours"]
    assert [list(r) for r in body["reports"]] == [["id", "question", "payload"]] * 4
    stored = aggregator.export("s1")
    assert sorted(r["id"] for r in stored) == sorted(receipt.report_ids)
    assert client.pending() == 0


def test_report_ids_are_fresh_uuid4(aggregator, client) -> None:
    aggregator.create(definition())
    ids = client.answer(client.fetch("s1"), ANSWERS).report_ids
    assert len(set(ids)) == 4
    assert all(len(i) == 36 and i[14] == "4" for i in ids)


# -- refusals: typed error, zero bytes to the report endpoint ---------------------------------
def _resign_free(path: str, document: Any, change) -> Any:
    if path.startswith("/api/v1/surveys/") and "definition" in document:
        document = copy.deepcopy(document)
        change(document)
    return document


def tamper_definition(doc: dict) -> None:
    doc["definition"]["questions"][0]["epsilon"] = 0.5  # looks *more* private: still refused


def tamper_text(doc: dict) -> None:
    doc["definition"]["questions"][1]["options"][0] = "Car (we will tell your boss)"


def tamper_signature(doc: dict) -> None:
    raw = bytearray(base64.b64decode(doc["signature"]))
    raw[0] ^= 1
    doc["signature"] = base64.b64encode(bytes(raw)).decode()


def noncanonical_signature(doc: dict) -> None:
    """The same 64 bytes with a padding bit set: base64 decoders that do not check still verify."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    text = doc["signature"]
    assert text.endswith("==") and alphabet.index(text[-3]) % 16 == 0
    doc["signature"] = text[:-3] + alphabet[alphabet.index(text[-3]) + 1] + "=="
    assert base64.b64decode(doc["signature"]) == base64.b64decode(text)


def drop_signature(doc: dict) -> None:
    del doc["signature"]


def invalid_definition(doc: dict) -> None:
    doc["definition"]["questions"][0]["epsilon"] = -1


def other_survey(doc: dict) -> None:
    doc["id"] = "other"


@pytest.mark.parametrize(
    "change",
    [
        tamper_definition,
        tamper_text,
        tamper_signature,
        noncanonical_signature,
        drop_signature,
        invalid_definition,
    ],
)
def test_tampered_survey_is_refused_before_any_report(aggregator, adapter, client, change) -> None:
    aggregator.create(definition())
    adapter.rewrite = lambda path, doc: _resign_free(path, doc, change)
    with pytest.raises(SignatureError):
        client.fetch("s1")
    with pytest.raises(SignatureError):
        client.answer("s1", ANSWERS)
    assert adapter.report_posts() == []


def test_substituted_survey_is_refused(aggregator, adapter, client) -> None:
    aggregator.create(definition("s1"))
    aggregator.create(definition("s2"))
    # The aggregator serves s2's genuine signed document when asked for s1.
    genuine = client.fetch("s2")
    assert genuine.id == "s2"

    def swap(path: str, doc: Any) -> Any:
        if path == "/api/v1/surveys/s1":
            with aggregator.app.test_client() as c:
                return c.get("/api/v1/surveys/s2").get_json()
        return doc

    adapter.rewrite = swap
    with pytest.raises(SignatureError, match="asked for survey 's1'"):
        client.fetch("s1")
    assert adapter.report_posts() == []


def test_changed_aggregator_key_is_refused(tmp_path, aggregator, adapter, client) -> None:
    aggregator.create(definition())
    client.fetch("s1")  # pins the key (trust on first use)
    impostor = make_app(tmp_path, "impostor")  # same API, another signing key
    impostor_aggregator = Aggregator(app=impostor, token="")
    from .conftest import operator_token

    impostor_aggregator.token = operator_token(impostor)
    impostor_aggregator.create(definition())
    adapter.app = impostor
    with pytest.raises(SignatureError, match="key changed"):
        client.fetch("s1")
    with pytest.raises(SignatureError):
        client.answer("s1", ANSWERS)
    # A survey without key_id in the document is still checked against the pinned key.
    adapter.rewrite = lambda path, doc: {k: v for k, v in doc.items() if k != "key_id"}
    with pytest.raises(SignatureError, match="signature does not match"):
        client.fetch("s1")
    assert adapter.report_posts() == []


def test_trusted_key_is_used_instead_of_tofu(aggregator, adapter, make_client) -> None:
    aggregator.create(definition())
    good = make_client(trusted_key=aggregator.public_key())
    assert good.fetch("s1").id == "s1"
    assert all(s.path != "/api/v1/key" for s in adapter.seen)
    wrong = make_client(trusted_key=base64.b64encode(bytes(32)).decode())
    with pytest.raises(SignatureError):
        wrong.answer("s1", ANSWERS)
    assert adapter.report_posts() == []


def test_survey_altered_after_fetch_is_refused(aggregator, adapter, client) -> None:
    aggregator.create(definition())
    verified = client.fetch("s1")
    import dataclasses

    from deniable.survey import Survey

    data = verified.survey.to_dict()
    data["questions"][0]["epsilon"] = 9.0
    data["questions"][0].pop("parameters")  # re-derived for the new ε, as a forger would
    forged = dataclasses.replace(verified, survey=Survey.from_dict(data))
    with pytest.raises(SignatureError, match="altered"):
        client.answer(forged, ANSWERS)
    assert adapter.report_posts() == []


def test_epsilon_over_question_cap_is_refused(aggregator, adapter, make_client) -> None:
    spec = definition()
    spec["questions"][0]["epsilon"] = 5.0
    aggregator.create(spec)
    client = make_client(policy=Policy(max_question_epsilon=4.0))
    with pytest.raises(PolicyViolation, match="per question"):
        client.fetch("s1")
    with pytest.raises(PolicyViolation):
        client.answer("s1", ANSWERS)
    assert adapter.report_posts() == []


def test_epsilon_over_survey_cap_is_refused(aggregator, adapter, make_client) -> None:
    aggregator.create(definition())  # 4 questions at ε = 1
    client = make_client(policy=Policy(max_survey_epsilon=3.5))
    with pytest.raises(PolicyViolation, match="in total"):
        client.answer("s1", ANSWERS)
    assert adapter.report_posts() == []


def test_mechanism_off_the_allowlist_is_refused(aggregator, adapter, make_client) -> None:
    spec = definition()
    spec["questions"][1]["mechanism"] = "olh"
    aggregator.create(spec)
    allowed = frozenset(MECHANISMS) - {"olh"}
    client = make_client(policy=Policy(allowed_mechanisms=allowed))
    with pytest.raises(PolicyViolation, match="'olh' is not on the allowlist"):
        client.answer("s1", ANSWERS)
    assert adapter.report_posts() == []


def test_closed_survey_is_refused(aggregator, adapter, client) -> None:
    aggregator.create(definition())
    aggregator.close("s1")
    with pytest.raises(SurveyClosed):
        client.answer("s1", ANSWERS)
    assert adapter.report_posts() == []


def test_survey_closed_between_fetch_and_answer(aggregator, adapter, client) -> None:
    aggregator.create(definition())
    verified = client.fetch("s1")
    aggregator.close("s1")
    with pytest.raises(TransportError) as error:
        client.answer(verified, ANSWERS)
    assert error.value.status == 409
    assert client.pending() == 0  # refused for good: not retried forever
    assert aggregator.export("s1") == []


def test_already_answered_is_refused(aggregator, adapter, client, make_client) -> None:
    aggregator.create(definition())
    verified = client.fetch("s1")
    client.answer(verified, ANSWERS)
    before = adapter.report_bytes()
    with pytest.raises(AlreadyAnswered):
        client.answer(verified, ANSWERS)
    with pytest.raises(AlreadyAnswered):
        client.fetch("s1")
    # Another client object on the same device state also knows.
    with pytest.raises(AlreadyAnswered):
        make_client().answer("s1", ANSWERS)
    assert adapter.report_bytes() == before
    assert len(aggregator.export("s1")) == 4


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({**ANSWERS, "smoker": "yes"}, "True or False"),
        ({**ANSWERS, "smoker": 1}, "True or False"),
        ({**ANSWERS, "commute": "plane"}, "one of"),
        ({**ANSWERS, "tools": "chat"}, "list of option labels"),
        ({**ANSWERS, "tools": ["fax"]}, "not one of"),
        ({**ANSWERS, "hours": 21}, r"\[0.0, 20.0\]"),
        ({**ANSWERS, "hours": float("nan")}, "hours"),
        ({**ANSWERS, "hours": "7"}, "number"),
        ({k: v for k, v in ANSWERS.items() if k != "hours"}, "missing"),
        ({**ANSWERS, "extra": 1}, "no question"),
        (["smoker"], "mapping"),
    ],
)
def test_bad_true_answers_send_nothing_and_charge_nothing(
    aggregator, adapter, client, answers, message
) -> None:
    aggregator.create(definition())
    verified = client.fetch("s1")
    with pytest.raises(InvalidValue, match=message):
        client.answer(verified, answers)
    assert adapter.report_posts() == []
    assert client.budget()["spent_total"] == 0
    assert client.answer(verified, ANSWERS).delivered  # not marked answered by the failure


@pytest.mark.parametrize(
    "options",
    [
        {"timeout": 0},
        {"timeout": -1},
        {"timeout": float("nan")},
        {"retries": -1},
        {"retries": True},
        {"backoff": -0.1},
        {"trusted_key": "not base64!"},
        {"trusted_key": base64.b64encode(b"short").decode()},
        {"policy": {"max_survey_epsilon": 1}},
        {"state": 42},
    ],
)
def test_bad_parameters_are_typed_errors(make_client, adapter, options) -> None:
    with pytest.raises(InvalidParameter):
        make_client(**options)
    assert adapter.seen == []


@pytest.mark.parametrize("url", ["ftp://x", "aggregator.test", "", "http://h/?q=1"])
def test_bad_base_url(url, store) -> None:
    with pytest.raises(InvalidParameter):
        SurveyClient(url, state=store)


@pytest.mark.parametrize("survey_id", ["", "UPPER", "../key", "a" * 65, 3])
def test_bad_survey_id_sends_nothing(client, adapter, survey_id) -> None:
    with pytest.raises(InvalidParameter):
        client.fetch(survey_id)
    assert adapter.seen == []


@pytest.mark.parametrize(
    "policy",
    [
        {"max_question_epsilon": 0},
        {"lifetime_epsilon": -1},
        {"period_days": float("inf")},
        {"allowed_mechanisms": "grr"},
    ],
)
def test_bad_policy(policy) -> None:
    with pytest.raises(InvalidParameter):
        Policy(**policy)


def test_unknown_survey_is_a_transport_error(client, adapter) -> None:
    with pytest.raises(TransportError) as error:
        client.fetch("nope")
    assert error.value.status == 404
    assert adapter.report_posts() == []


# -- the ledger through the client ----------------------------------------------------------
def test_lifetime_cap_refuses_before_sending(aggregator, adapter, make_client) -> None:
    for name in ("s1", "s2"):
        aggregator.create(definition(name))
    client = make_client(policy=Policy(lifetime_epsilon=6.0))
    client.answer("s1", ANSWERS)
    sent = adapter.report_bytes()
    with pytest.raises(BudgetExceeded, match="lifetime"):
        client.answer("s2", ANSWERS)
    assert adapter.report_bytes() == sent
    assert client.budget()["spent_total"] == pytest.approx(4.0)


def test_rolling_period_cap(aggregator, adapter, make_client) -> None:
    for name in ("s1", "s2", "s3"):
        aggregator.create(definition(name))
    now = [1_000_000.0]
    client = make_client(policy=Policy(period_epsilon=5.0, period_days=30), clock=lambda: now[0])
    client.answer("s1", ANSWERS)
    now[0] += 10 * 86_400
    with pytest.raises(BudgetExceeded, match="last 30 days"):
        client.answer("s2", ANSWERS)
    now[0] += 21 * 86_400  # s1's charge has left the 30-day window
    assert client.answer("s2", ANSWERS).delivered
    with pytest.raises(BudgetExceeded):
        client.answer("s3", ANSWERS)
    assert len(adapter.report_posts()) == 2


# -- retries and the outbox -----------------------------------------------------------------
def test_dropped_response_is_retried_without_double_counting(aggregator, adapter, client) -> None:
    aggregator.create(definition())
    adapter.drop_responses = 1  # stored by the server, but the client never hears back
    receipt = client.answer("s1", ANSWERS)
    assert receipt.delivered
    posts = adapter.report_posts()
    assert len(posts) == 2 and posts[0].body == posts[1].body
    stored = aggregator.export("s1")
    assert len(stored) == 4
    assert aggregator.results("s1")["n_reports"] == 4


def test_dropped_response_then_offline_then_flush(aggregator, adapter, make_client) -> None:
    aggregator.create(definition())
    client = make_client(retries=0)
    adapter.drop_responses = 1
    receipt = client.answer("s1", ANSWERS)
    assert not receipt.delivered and client.pending() == 1
    assert len(aggregator.export("s1")) == 4  # the server did store it
    result = client.flush()
    assert (result.delivered, result.pending) == (1, 0)
    assert len(aggregator.export("s1")) == 4  # ... and not twice
    assert client.flush().delivered == 0  # exactly once: nothing left to send


def test_503_and_retry_after_are_honoured(aggregator, adapter, make_client) -> None:
    aggregator.create(definition())
    slept: list[float] = []
    client = make_client(sleep=slept.append, backoff=0.01, max_backoff=30)
    verified = client.fetch("s1")
    adapter.unavailable, adapter.retry_after = 2, "7"
    assert client.answer(verified, ANSWERS).delivered
    assert len(slept) == 2 and all(s >= 7 for s in slept)
    assert len(adapter.report_posts()) == 3
    assert len(aggregator.export("s1")) == 4


def test_retry_after_beyond_patience_keeps_batch_queued(aggregator, adapter, make_client) -> None:
    aggregator.create(definition())
    slept: list[float] = []
    client = make_client(sleep=slept.append, max_backoff=30)
    verified = client.fetch("s1")
    adapter.unavailable, adapter.retry_after = 1, "3600"
    receipt = client.answer(verified, ANSWERS)
    assert not receipt.delivered and slept == [] and client.pending() == 1
    assert client.flush().delivered == 1
    assert len(aggregator.export("s1")) == 4


def test_backoff_is_exponential_with_jitter(make_client) -> None:
    client = make_client(backoff=1.0, max_backoff=100)
    for attempt in range(5):
        delays = {client._delay(attempt) for _ in range(20)}
        assert all(2**attempt / 2 <= d <= 2**attempt for d in delays)
        assert len(delays) > 1


def test_offline_answer_is_delivered_exactly_once_later(aggregator, adapter, make_client) -> None:
    for name in ("s1", "s2"):
        aggregator.create(definition(name))
    client = make_client(policy=GENEROUS)
    first, second = client.fetch("s1"), client.fetch("s2")
    adapter.offline = True
    receipt = client.answer(first, ANSWERS)
    assert not receipt.delivered and client.pending() == 1
    assert client.budget()["spent_total"] == pytest.approx(4.0)  # charged before sending
    assert client.flush().pending == 1
    adapter.offline = False
    # The next answer delivers the queued batch first, then its own.
    assert client.answer(second, ANSWERS).delivered
    assert client.pending() == 0
    for name, ids in (("s1", receipt.report_ids),):
        assert sorted(r["id"] for r in aggregator.export(name)) == sorted(ids)
    assert len(aggregator.export("s2")) == 4
    assert client.flush().delivered == 0


def test_outbox_survives_a_new_process(aggregator, adapter, http, tmp_path) -> None:
    aggregator.create(definition())
    path = tmp_path / "device" / "state.bin"
    first = SurveyClient(
        BASE, state=StateStore(path, key=STATE_KEY), session=http, sleep=lambda s: None
    )
    adapter.offline = True
    with pytest.raises(TransportError):
        first.fetch("s1")  # never fetched: nothing charged
    adapter.offline = False
    verified = first.fetch("s1")
    adapter.offline = True
    first.answer(verified, ANSWERS)
    adapter.offline = False
    again = SurveyClient(BASE, state=StateStore(path, key=STATE_KEY), session=http)
    assert again.pending() == 1
    assert again.flush().delivered == 1
    assert len(aggregator.export("s1")) == 4


# -- no side channels ------------------------------------------------------------------------
CANARY = CANARY_DEFINITION
BASELINE = {"yn": True, "one": "a", "olh": "a", "many": [], "num": 0, "lap": 0, "memo": "p"}
ALTERNATIVES: dict[str, list[Any]] = {
    "yn": [True, False],
    "one": ["a", "b", "c", "d", "e"],
    "olh": ["a", "b", "c"],
    "many": [list(c) for r in range(4) for c in itertools.combinations("xyz", r)],
    "num": [-5, -4.99, 0, 123.456789, 1e-9, 300],
    "lap": [0, 3.3, 10],
    "memo": ["p", "q", "r"],
}


def test_requests_do_not_depend_on_the_true_answer(aggregator, adapter, http, tmp_path) -> None:
    aggregator.create(CANARY)
    captured = []
    device = 0
    for question_id, values in ALTERNATIVES.items():
        for value in values:
            device += 1
            store = StateStore(tmp_path / f"dev{device}" / "state.bin", key=STATE_KEY)
            start = len(adapter.seen)
            client = SurveyClient(BASE, state=store, session=http, policy=GENEROUS)
            client.answer("canary", {**BASELINE, question_id: value})
            captured.append(adapter.seen[start:])
    shapes = {
        tuple((s.method, s.path, tuple(sorted(s.headers.items())), len(s.body)) for s in seen)
        for seen in captured
    }
    assert len(shapes) == 1, shapes
    (shape,) = shapes
    assert [m for m, *_ in shape].count("POST") == 1
    assert len(aggregator.export("canary")) == device * len(CANARY["questions"])


def test_a_survey_still_naming_another_key_after_the_rotation_check_is_refused(
    aggregator, adapter, client
) -> None:
    """docs/protocol.md §6.2: key_id is a hint; the key document is fetched, the pin is kept,
    and a survey still naming another key is refused (key-id), even one signed by the pin."""
    aggregator.create(definition())
    client.fetch("s1")  # pins the key
    adapter.rewrite = lambda path, doc: (
        {**doc, "key_id": "0" * 16} if path == "/api/v1/surveys/s1" else doc
    )
    before = sum(s.path == "/api/v1/key" for s in adapter.seen)
    with pytest.raises(SignatureError) as refused:
        client.fetch("s1")
    assert refused.value.reason == "key-id"
    assert sum(s.path == "/api/v1/key" for s in adapter.seen) == before + 1  # the check ran
    assert adapter.report_posts() == []
