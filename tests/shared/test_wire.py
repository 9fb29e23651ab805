"""deniable.wire: the report envelope (strict parsing, batches, idempotency digests), and the wire
documents of reports, bulk bodies, problems, the survey envelope and the key document:
``parse(encode(x)) == x``, strict refusals with the error type the services map to their
status, and byte-exact encodings, pinned as docs/protocol.md spells them (§6.1) and against
the vectors.  The relay's documents (§10.5, §11.3, §11.4): tests/shared/test_wire_sealed.py.
"""

from __future__ import annotations

import json
import uuid
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.canonical import loads as canonical_loads
from deniable.errors import (
    InvalidJson,
    InvalidReport,
    InvalidSurvey,
    PayloadTooLarge,
)
from deniable.survey import FORMAT, Survey
from deniable.wire import (
    BulkBody,
    KeyDocument,
    Problem,
    ProblemType,
    Report,
    Submission,
    SurveyEnvelope,
    parse_report,
    parse_submission,
    strict_json,
)

SURVEY = Survey.from_dict(
    {
        "format": FORMAT,
        "id": "wire",
        "title": "Wire",
        "questions": [
            {"id": "yes", "type": "yes_no", "text": "Yes?", "epsilon": 1},
            {
                "id": "pick",
                "type": "single_choice",
                "text": "Pick",
                "epsilon": 1,
                "options": [str(i) for i in range(300)],
                "mechanism": "grr",
            },
        ],
    }
)


def report(**changes) -> dict:
    body = {"id": str(uuid.uuid4()), "question": "yes", "payload": "01"}
    body.update(changes)
    return body


def test_a_valid_report_parses() -> None:
    body = report()
    assert parse_report(body, SURVEY) == Report(**body)


@pytest.mark.parametrize(
    "body",
    [
        [],
        "report",
        None,
        {"id": str(uuid.uuid4()), "question": "yes"},
        report(extra=1),
        report(id="not-a-uuid"),
        report(id=str(uuid.uuid4()).upper()),
        report(id=7),
        report(question="nope"),
        report(question=["yes"]),
        report(payload="1"),
        report(payload="02"),
        report(payload="0A"),
        report(payload=1),
        report(payload=None),
        report(payload=float("nan")),
        report(question="pick", payload="012c"),  # 300 is outside [0, 300)
        report(question="pick", payload="01"),  # too short for 300 values
    ],
)
def test_malformed_reports_raise_invalid_report(body) -> None:
    with pytest.raises(InvalidReport):
        parse_report(body, SURVEY)


def test_batches_are_all_or_nothing_and_limited() -> None:
    good = [report() for _ in range(3)]
    assert len(parse_submission({"reports": good}, SURVEY, max_batch=3)) == 3
    with pytest.raises(InvalidReport, match=r"reports\[1\]"):
        parse_submission({"reports": [good[0], report(payload="zz"), good[2]]}, SURVEY, max_batch=3)
    with pytest.raises(PayloadTooLarge):
        parse_submission({"reports": good + [report()]}, SURVEY, max_batch=3)
    with pytest.raises(InvalidReport):
        parse_submission({"reports": []}, SURVEY, max_batch=3)
    with pytest.raises(InvalidReport):
        parse_submission({"reports": good, "token": "x"}, SURVEY, max_batch=3)


TWO_IDS = f"{uuid.uuid4()}\n{uuid.uuid4()}"


@pytest.mark.parametrize(
    "bad",
    [
        {"id": "not-a-uuid"},
        {"id": str(uuid.uuid4()).upper()},
        {"id": 7},
        {"id": None},
        {"id": TWO_IDS},  # two ids in one: the joined ids would still look well formed
        {"id": ""},
        {"question": "nope"},
        {"question": ["yes"]},
        {"question": 1},
        {"extra": 1},
    ],
)
@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_bad_envelope_anywhere_in_a_batch_is_named(bad, position) -> None:
    """The batch-at-a-time envelope check refuses what the per-report check refuses,
    and the error names the report."""
    items = [report() for _ in range(3)]
    items[position] = {**items[position], **bad}
    with pytest.raises(InvalidReport, match=rf"reports\[{position}\]"):
        parse_submission({"reports": items}, SURVEY, max_batch=3)


def test_an_id_split_across_reports_is_refused() -> None:
    """Ids "A\nB" and "" join like "A", "B" would; the lengths tell them apart."""
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    items = [report(id=f"{first}\n{second}"), report(id=""), report()]
    with pytest.raises(InvalidReport, match=r"reports\[0\]"):
        parse_submission({"reports": items}, SURVEY, max_batch=3)


def test_an_id_twice_in_one_batch_must_carry_one_body() -> None:
    first = report()
    assert len(parse_submission({"reports": [first, dict(first)]}, SURVEY, max_batch=5)) == 1
    with pytest.raises(InvalidReport, match="twice"):
        parse_submission({"reports": [first, {**first, "payload": "00"}]}, SURVEY, max_batch=5)


def test_digest_tells_a_retry_from_a_reused_id() -> None:
    body = report()
    assert Report(**body).digest == Report(**dict(body)).digest
    assert Report(**body).digest != Report(**{**body, "payload": "00"}).digest


@given(st.dictionaries(st.text(max_size=10), st.none() | st.text() | st.integers(), max_size=5))
@settings(max_examples=300, deadline=None)
def test_arbitrary_objects_parse_or_raise_invalid_report(body) -> None:
    try:
        parse_report(body, SURVEY)
    except InvalidReport:
        pass


@given(
    st.text(max_size=12),
    st.text(max_size=12),
    st.text(max_size=12),
)
@settings(max_examples=300, deadline=None)
def test_digest_is_sha256_of_the_sorted_compact_json(report_id, question, payload) -> None:
    import hashlib
    import json

    report = Report(id=report_id, question=question, payload=payload)
    body = json.dumps(report.to_dict(), sort_keys=True, separators=(",", ":"))
    assert report.digest == hashlib.sha256(body.encode()).hexdigest()


def test_digest_fast_path_matches_json_for_a_valid_report() -> None:
    import hashlib
    import json

    body = report()
    expected = json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert Report(**body).digest == hashlib.sha256(expected.encode()).hexdigest()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12), st.text(max_size=12), st.text(max_size=40))
def test_digest_is_the_sha256_of_the_canonical_json_body(report_id, question, payload):
    """The directly formatted body (fast path) is byte for byte what json.dumps gives."""
    import hashlib
    import json

    report = Report(id=report_id, question=question, payload=payload)
    body = json.dumps(report.to_dict(), sort_keys=True, separators=(",", ":"))
    assert report.digest == hashlib.sha256(body.encode()).hexdigest()


# -- every wire document ----------------------------------------------------------------------

TWO_QUESTIONS = Survey.from_dict(
    {
        "format": "deniable.survey/2",
        "id": "s",
        "title": "S",
        "questions": [
            {"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1.0},
            {"id": "b", "type": "yes_no", "text": "B?", "epsilon": 1.0},
        ],
    }
).upgraded()
ID_A = "8a798890-fe93-4171-83b1-0b5f7bd2ca4d"
ID_B = "0b5f7bd2-ca4d-4171-83b1-8a798890fe93"


def new_report(question: str = "a", payload: str = "01") -> Report:
    return Report(id=str(uuid.uuid4()), question=question, payload=payload)


# -- the strict reader --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xc3\x28", "not-utf8"),
        (b"[" * 65 + b"]" * 65, "too-deep"),
        (b"9" * 4301, "not-json"),
        (b"1e400", "not-json"),
        (b"NaN", "not-json"),
        (b'{"a": 1, "a": 2}', "duplicate-member"),
        (b'{"k": ["\\ud800"]}', "surrogate"),
        (b"", "not-json"),
    ],
)
def test_the_strict_reader_refuses_with_its_reason(data, reason):
    with pytest.raises(InvalidJson) as refused:
        strict_json.loads(data)
    assert refused.value.reason == reason
    assert isinstance(refused.value, ValueError)


def test_canonical_loads_is_the_strict_reader_with_the_survey_reason_for_duplicates():
    with pytest.raises(InvalidSurvey) as refused:
        canonical_loads(b'{"a": {"b": 1, "b": 1}}')
    assert refused.value.reason == "duplicate-member"
    assert "appears twice in one object" in str(refused.value)
    for text in (b'{"a": NaN}', b'"\\udc00"', b"[" * 65 + b"]" * 65):
        with pytest.raises(InvalidJson):
            canonical_loads(text)


# -- reports, submissions, bulk bodies ----------------------------------------------------------


def test_a_report_round_trips_and_keeps_its_bytes():
    one = Report(id=ID_A, question="a", payload="01")
    assert one.encode() == f'{{"id":"{ID_A}","question":"a","payload":"01"}}'.encode()
    assert Report.parse(json.loads(one.encode()), TWO_QUESTIONS) == one


def test_a_submission_is_the_compact_body_both_clients_write():
    submission = Submission(
        reports=(
            Report(id=ID_A, question="a", payload="01"),
            Report(id=ID_B, question="b", payload="00"),
        )
    )
    expected = (
        f'{{"reports":[{{"id":"{ID_A}","question":"a","payload":"01"}},'
        f'{{"id":"{ID_B}","question":"b","payload":"00"}}]}}'
    ).encode()
    assert submission.encode() == expected
    assert Submission.parse(strict_json.loads(expected), TWO_QUESTIONS, max_batch=10) == submission


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"reports": []},
        {"reports": [{"id": ID_A, "question": "a"}]},
        {"reports": [{"id": ID_A.upper(), "question": "a", "payload": "01"}]},
        {"reports": [{"id": ID_A, "question": "z", "payload": "01"}]},
        {"reports": [{"id": ID_A, "question": "a", "payload": "0g"}]},
        {"reports": [{"id": ID_A, "question": "a", "payload": "01"}] * 2, "x": 1},
    ],
)
def test_a_submission_refuses_what_is_not_one(document):
    with pytest.raises(InvalidReport):
        Submission.parse(document, TWO_QUESTIONS, max_batch=10)


def test_a_bulk_body_round_trips_in_both_forms():
    grouped = BulkBody(
        reports=(new_report("a"), new_report("b"), new_report("a")), respondents=(0, 0, 1)
    )
    assert BulkBody.parse(json.loads(grouped.encode()), TWO_QUESTIONS, max_batch=10) == grouped
    assert grouped.grouped and json.loads(grouped.encode())["respondents"][1]["reports"]
    loose = BulkBody(reports=(new_report("a"), new_report("a")), respondents=(None, None))
    assert not loose.grouped and set(json.loads(loose.encode())) == {"reports"}
    assert BulkBody.parse(json.loads(loose.encode()), TWO_QUESTIONS, max_batch=10) == loose


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ({"respondents": []}, InvalidReport),
        ({"respondents": [{"reports": []}]}, InvalidReport),
        ({"respondents": [{"reports": [1]}], "x": 1}, InvalidReport),
        (
            {"respondents": [{"reports": [{"id": ID_A, "question": "a", "payload": "01"}] * 3}]},
            PayloadTooLarge,
        ),
    ],
)
def test_a_bulk_body_refuses_what_is_not_one(document, error):
    with pytest.raises(error):
        BulkBody.parse(document, TWO_QUESTIONS, max_batch=2)


def test_a_bulk_respondent_answers_each_question_once():
    twice = BulkBody(reports=(new_report("a"), new_report("a")), respondents=(0, 0))
    with pytest.raises(InvalidReport, match="more than once"):
        BulkBody.parse(json.loads(twice.encode()), TWO_QUESTIONS, max_batch=10)


# -- problems -----------------------------------------------------------------------------------


def test_a_problem_round_trips_and_unknown_kinds_are_kept_not_guessed():
    problem = Problem.of(ProblemType.SURVEY_CLOSED, title="Survey closed", status=409, detail="d")
    assert problem.encode() == (
        b'{"type": "urn:deniable:problem:survey-closed", "title": "Survey closed", '
        b'"status": 409, "detail": "d"}'
    )
    assert Problem.parse(json.loads(problem.encode())) == problem
    assert problem.kind is ProblemType.SURVEY_CLOSED
    later = Problem.parse(
        {"type": "urn:deniable:problem:later", "title": "t", "status": 409, "detail": ""}
    )
    assert later.kind is None
    assert ProblemType.of({"type": "about:blank"}) is None and ProblemType.of([]) is None
    with pytest.raises(InvalidJson):
        Problem.parse({"type": "x", "title": "t", "status": "409", "detail": ""})


# -- the survey envelope and the key document ---------------------------------------------------

PROTOCOL = json.loads(
    resources.files("deniable").joinpath("vectors/protocol-vectors.json").read_text("utf-8")
)


@pytest.mark.parametrize("vector", PROTOCOL["documents"], ids=lambda v: v["name"])
def test_the_survey_envelope_verifies_the_vectors_documents_as_the_keychain_does(vector):
    import base64

    from deniable import keychain
    from deniable.errors import SignatureError, TransportError

    key = base64.b64decode(PROTOCOL["public_key"])
    try:
        document = canonical_loads(vector["text"])
    except InvalidSurvey as error:  # refused by the reader, before any envelope
        assert error.reason == vector["code"] == "duplicate-member"
        return
    try:
        expected = keychain.verify_document(document, vector["survey_id"], key)
    except (SignatureError, InvalidSurvey) as error:
        expected = type(error)
    try:
        envelope = SurveyEnvelope.parse(document, vector["survey_id"])
        got = envelope.verify(vector["survey_id"], key)
    except (SignatureError, InvalidSurvey, TransportError) as error:
        got = type(error)
    if isinstance(expected, type):
        assert got is expected or got is TransportError
    else:
        assert got.canonical_bytes() == expected.canonical_bytes()
        assert SurveyEnvelope.parse(json.loads(envelope.encode()), vector["survey_id"]) == envelope


@pytest.mark.parametrize(
    "change", [{"status": "paused"}, {"status": None}, {"require_enrolment": "yes"}]
)
def test_the_survey_envelope_refuses_unknown_state(change):
    from deniable.errors import TransportError

    document = json.loads(PROTOCOL["documents"][0]["text"])
    with pytest.raises(TransportError):
        SurveyEnvelope.parse({**document, **change}, "demo-workplace")


@pytest.mark.parametrize("case", PROTOCOL["key_rotation"]["cases"], ids=lambda c: c["name"])
def test_the_key_document_follows_the_vectors_chains_as_the_keychain_does(case):
    import base64

    from deniable import keychain
    from deniable.errors import SignatureError

    pin = keychain.Pin(
        public_key=base64.b64decode(case["pin"]["public_key"]),
        sequence=case["pin"]["sequence"],
        retired=tuple(case["pin"]["retired"]),
    )
    try:
        expected = keychain.follow_chain(pin, case["document"])
    except SignatureError:
        expected = None
    try:
        got = KeyDocument.parse(case["document"]).follow(pin)
    except SignatureError:
        got = None
    assert got == expected
    if expected is not None:
        document = KeyDocument.parse(case["document"])
        assert KeyDocument.parse(json.loads(document.encode())) == document
