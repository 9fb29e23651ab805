"""deniable.wire: the relay's documents, sealed submissions (§10.5), relay batches (§11.3) and
acknowledgements (§11.4): ``parse(encode(x)) == x``, strict refusals, byte-exact encodings
pinned as docs/protocol.md spells them and against the sealing vectors, and a blob's one
spelling.  The report envelope and the other documents: tests/shared/test_wire.py.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable import sealing
from deniable.errors import InvalidJson, InvalidReport, PayloadTooLarge, SealingError
from deniable.wire import (
    Acknowledgement,
    RelayBatch,
    SealedSubmission,
    SealedUnit,
    strict_json,
)
from tests.shared.spellings import noncanonical_spellings

SEALING = json.loads(
    resources.files("deniable").joinpath("vectors/sealing-vectors.json").read_text("utf-8")
)["deniable"]
RAW = b"\xfb\xff\xff" + bytes(range(124))


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
