"""deniable.wire: the report envelope (strict parsing, batches, idempotency digests), and every
wire document: ``parse(encode(x)) == x``, strict refusals with the error type the services
map to their status, and byte-exact encodings, pinned as docs/protocol.md spells them (§6.1,
§10.5, §11.3, §11.4) and against the vectors.
"""

from __future__ import annotations

import json
import uuid
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable import sealing
from deniable.canonical import loads as canonical_loads
from deniable.errors import (
    InvalidJson,
    InvalidReport,
    InvalidSurvey,
    PayloadTooLarge,
    SealingError,
)
from deniable.survey import FORMAT, Survey
from deniable.wire import (
    Acknowledgement,
    BulkBody,
    KeyDocument,
    Problem,
    ProblemType,
    RelayBatch,
    Report,
    SealedSubmission,
    SealedUnit,
    Submission,
    SurveyEnvelope,
    parse_report,
    parse_submission,
    strict_json,
)
from tests.shared.spellings import noncanonical_spellings

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

SEALING = json.loads(
    resources.files("deniable").joinpath("vectors/sealing-vectors.json").read_text("utf-8")
)["deniable"]
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
RAW = b"\xfb\xff\xff" + bytes(range(124))


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


# -- sealed submissions -------------------------------------------------------------------------


def test_a_sealed_submission_keeps_the_bytes_of_protocol_10_5():
    submission = SealedSubmission(
        key_id="0123456789abcdef",
        units=(SealedUnit(unit="a", sealed=b"\xfb\xff"), SealedUnit(unit="b", sealed=b"\x00")),
        enrolment_token="dne_x",
    )
    assert submission.encode() == (
        b'{"format":"deniable.sealed/1","key_id":"0123456789abcdef",'
        b'"units":[{"unit":"a","sealed":"-_8"},{"unit":"b","sealed":"AA"}],'
        b'"enrolment_token":"dne_x"}'
    )
    assert SealedSubmission.parse(strict_json.loads(submission.encode())) == submission
    without = submission.with_token(None)
    assert b"enrolment_token" not in without.encode()
    assert SealedSubmission.parse(json.loads(without.encode())) == without


def test_a_sealed_submission_checks_the_surveys_units_and_lengths():
    text = sealing.encode_blob(RAW)
    body = {"format": "deniable.sealed/1", "key_id": "k", "units": [{"unit": "a", "sealed": text}]}
    assert SealedSubmission.parse(body, {"a": len(RAW), "b": len(RAW)}).units[0].sealed == RAW
    with pytest.raises(InvalidReport, match="bytes"):
        SealedSubmission.parse(body, {"a": len(RAW) + 1, "b": len(RAW)})
    with pytest.raises(PayloadTooLarge):
        SealedSubmission.parse(body, {"a": len(RAW) - 1})
    with pytest.raises(InvalidReport, match="whole submissions"):
        SealedSubmission.parse(body, {"": len(RAW)})
    twice = dict(body, units=[{"unit": "a", "sealed": text}] * 2)
    with pytest.raises(InvalidReport, match="appears twice"):
        SealedSubmission.parse(twice, {"a": len(RAW), "b": len(RAW)})


@pytest.mark.parametrize(
    "change",
    [
        {"format": "deniable.sealed/2"},
        {"key_id": "not a key id"},
        {"units": []},
        {"units": [{"unit": "a"}]},
        {"enrolment_token": 7},
        {"extra": 1},
    ],
)
def test_a_sealed_submission_refuses_a_malformed_body(change):
    body = {"format": "deniable.sealed/1", "key_id": "k", "units": [{"unit": "a", "sealed": "AA"}]}
    with pytest.raises(InvalidReport):
        SealedSubmission.parse({**body, **change})


@pytest.mark.parametrize("spelling", noncanonical_spellings(RAW))
def test_every_document_refuses_a_blob_not_in_its_one_spelling(spelling):
    text = noncanonical_spellings(RAW)[spelling]
    with pytest.raises(SealingError):
        sealing.decode_blob(text)
    sealed = {
        "format": "deniable.sealed/1",
        "key_id": "k",
        "units": [{"unit": "a", "sealed": text}],
    }
    with pytest.raises(InvalidReport):
        SealedSubmission.parse(sealed)
    with pytest.raises(InvalidReport):
        RelayBatch.parse({"format": "deniable.batch/1", "unit": "a", "sealed": [text]})


@pytest.mark.parametrize("vector", SEALING["sealed"], ids=lambda v: v["unit"] or "submission")
def test_the_vectors_blobs_travel_in_one_spelling(vector):
    blob = bytes.fromhex(vector["sealed"])
    assert sealing.decode_blob(sealing.encode_blob(blob)) == blob
    assert "=" not in sealing.encode_blob(blob)


# -- relay batches and acknowledgements ---------------------------------------------------------


def test_a_relay_batch_keeps_the_bytes_of_protocol_11_3():
    batch = RelayBatch(unit="a", sealed=(b"\xfb\xff", b"\x00"))
    assert batch.encode() == b'{"format":"deniable.batch/1","unit":"a","sealed":["-_8","AA"]}'
    assert RelayBatch.parse(strict_json.loads(batch.encode())) == batch


def test_a_relay_batch_checks_the_surveys_terms():
    body = {"format": "deniable.batch/1", "unit": "a", "sealed": ["AA", "AQ"]}
    assert RelayBatch.parse(body, {"a", "b"}, 2).sealed == (b"\x00", b"\x01")
    with pytest.raises(InvalidReport, match="min_batch"):
        RelayBatch.parse(body, {"a", "b"}, 3)
    with pytest.raises(InvalidReport, match="whole submissions"):
        RelayBatch.parse(body, {""})
    with pytest.raises(InvalidReport, match="question id"):
        RelayBatch.parse(body, {"b"})
    for wrong in ({**body, "format": "x"}, {**body, "extra": 1}, {**body, "sealed": "AA"}, []):
        with pytest.raises(InvalidReport):
            RelayBatch.parse(wrong)


def test_a_noised_relay_batch_names_its_real_units_never_which():
    """real_units (relay noise): after unit, before sealed; min_batch counts real units only."""
    batch = RelayBatch(unit="a", sealed=(b"\xfb\xff", b"\x00", b"\x01"), real_units=2)
    assert batch.encode() == (
        b'{"format":"deniable.batch/1","unit":"a","real_units":2,"sealed":["-_8","AA","AQ"]}'
    )
    assert RelayBatch.parse(strict_json.loads(batch.encode())) == batch
    assert batch.real_count == 2 and RelayBatch(unit="a", sealed=(b"\x00",)).real_count == 1
    body = {
        "format": "deniable.batch/1",
        "unit": "a",
        "real_units": 2,
        "sealed": ["AA", "AQ", "Ag"],
    }
    assert RelayBatch.parse(body, {"a"}, 2).real_units == 2
    with pytest.raises(InvalidReport, match="min_batch"):  # 3 blobs, but 2 respondents
        RelayBatch.parse(body, {"a"}, 3)
    with pytest.raises(InvalidReport, match="min_batch"):  # dummies alone never make a batch
        RelayBatch.parse({**body, "real_units": 0})
    for wrong in (-1, 4, True, 2.0, "2", None):
        with pytest.raises(InvalidReport, match="real_units"):
            RelayBatch.parse({**body, "real_units": wrong})
    with pytest.raises(InvalidReport, match="real_units"):
        RelayBatch(unit="a", sealed=(b"\x00",), real_units=2)


def test_an_acknowledgement_round_trips_and_names_its_batch():
    answer = Acknowledgement(survey="s", batch="b" * 32, unit="a", received=3, stored=2, dropped=1)
    assert answer.encode() == (
        b'{"survey": "s", "batch": "'
        + b"b" * 32
        + b'", "unit": "a", "received": 3, "stored": 2, "dropped": 1}'
    )
    assert Acknowledgement.parse(strict_json.loads(answer.encode())) == answer
    assert answer.acknowledges("s", "b" * 32, "a", 3)
    assert not answer.acknowledges("s", "b" * 32, "a", 2)
    assert not answer.acknowledges("t", "b" * 32, "a", 3)


@pytest.mark.parametrize(
    "document",
    [
        [],
        "OK",
        {"survey": "s"},
        {"survey": "s", "batch": "b", "unit": "a", "received": True, "stored": 0, "dropped": 0},
        {"survey": "s", "batch": "b", "unit": "a", "received": -1, "stored": 0, "dropped": 0},
    ],
)
def test_an_acknowledgement_refuses_what_is_not_one(document):
    with pytest.raises(InvalidJson):
        Acknowledgement.parse(document)


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


# -- properties ---------------------------------------------------------------------------------

BLOBS = st.lists(st.binary(min_size=1, max_size=80), min_size=1, max_size=5)
UNITS = st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(blob=st.binary(min_size=1, max_size=200), text=st.text(max_size=40))
def test_a_blob_has_exactly_one_accepted_spelling(blob, text):
    assert sealing.decode_blob(sealing.encode_blob(blob)) == blob
    try:
        decoded = sealing.decode_blob(text)
    except SealingError:
        return
    assert sealing.encode_blob(decoded) == text  # whatever is accepted is the canonical text


@settings(max_examples=200, deadline=None)
@given(unit=UNITS, blobs=BLOBS)
def test_a_relay_batch_parses_what_it_encodes(unit, blobs):
    batch = RelayBatch(unit=unit, sealed=tuple(blobs))
    assert RelayBatch.parse(strict_json.loads(batch.encode())) == batch


@settings(max_examples=200, deadline=None)
@given(
    key_id=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    blobs=BLOBS,
    token=st.none() | st.text(max_size=20),
)
def test_a_sealed_submission_parses_what_it_encodes(key_id, blobs, token):
    units = tuple(SealedUnit(unit=f"q{i}", sealed=blob) for i, blob in enumerate(blobs))
    submission = SealedSubmission(key_id=key_id, units=units, enrolment_token=token)
    assert SealedSubmission.parse(strict_json.loads(submission.encode())) == submission
