"""The report envelope: strict parsing, batches, idempotency digests."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.errors import InvalidReport, PayloadTooLarge
from deniable.survey import FORMAT, Survey
from deniable.wire import Report, parse_report, parse_submission

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
