"""deniable.sealing: RFC 9180 A.1 vectors, this protocol's vectors, sizes, tampering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deniable import sealing
from deniable.errors import SealingError
from deniable.survey import Survey
from deniable.wire import parse_report, parse_submission

VECTORS = json.loads(
    (Path(sealing.__file__).parent / "vectors" / "sealing-vectors.json").read_text("utf-8")
)
RFC = VECTORS["rfc9180"]
OWN = VECTORS["deniable"]
SURVEY = Survey.from_dict(OWN["survey"], resolved=True)
PRIVATE = bytes.fromhex(OWN["recipient_private_key"])
PUBLIC = bytes.fromhex(OWN["recipient_public_key"])


# -- RFC 9180 Appendix A.1.1 ---------------------------------------------------------------------


def test_rfc_suite_is_ours():
    assert (RFC["mode"], RFC["kem_id"], RFC["kdf_id"], RFC["aead_id"]) == (0, 32, 1, 1)
    assert (sealing.KEM_ID, sealing.KDF_ID, sealing.AEAD_ID) == (0x20, 1, 1)


def test_rfc_keys_derive():
    for secret, public in (("skRm", "pkRm"), ("skEm", "pkEm")):
        key = X25519PrivateKey.from_private_bytes(bytes.fromhex(RFC[secret]))
        assert sealing.public_bytes(key).hex() == RFC[public]
    assert RFC["enc"] == RFC["pkEm"]


def test_rfc_sequence_zero_opens_with_the_library():
    """The single-shot API is sequence 0: cryptography opens the RFC's first encryption.

    The RFC's encryptions carry aad "Count-0"; cryptography's public single-shot
    API has no aad, so its own (underscore) aad entry point is used here only.
    """
    from cryptography.hazmat.bindings._rust import openssl as rust_openssl

    decrypt = getattr(rust_openssl.hpke, "_decrypt_with_aad", None)
    if decrypt is None:  # pragma: no cover - a cryptography without the test hook
        pytest.skip("this cryptography has no aad entry point")
    first = RFC["encryptions"][0]
    assert first["sequence_number"] == 0 and first["nonce"] == RFC["base_nonce"]
    blob = bytes.fromhex(RFC["enc"] + first["ct"])
    key = X25519PrivateKey.from_private_bytes(bytes.fromhex(RFC["skRm"]))
    info, aad = bytes.fromhex(RFC["info"]), bytes.fromhex(first["aad"])
    assert decrypt(sealing._suite(), blob, key, info, aad).hex() == first["pt"]
    with pytest.raises(Exception):  # noqa: B017 - InvalidTag: another aad does not open
        decrypt(sealing._suite(), blob, key, info, b"Count-1")


# -- this protocol's vectors ---------------------------------------------------------------------


def test_info_and_padding_vectors():
    for vector in OWN["info"]:
        assert sealing.info(vector["survey_id"], vector["unit"]).hex() == vector["info"]
    for vector in OWN["padding"]:
        body = bytes.fromhex(vector["body"])
        assert sealing.pad(body, vector["size"]).hex() == vector["padded"]
        assert sealing.unpad(bytes.fromhex(vector["padded"])) == body


def test_unit_sizes_vectors():
    for unit, size in OWN["unit_sizes"].items():
        assert sealing.unit_size(SURVEY, unit) == size
    with pytest.raises(SealingError, match="no question"):
        sealing.unit_size(SURVEY, "nope")


@pytest.mark.parametrize("vector", OWN["sealed"], ids=lambda v: v["unit"] or "submission")
def test_sealed_vectors_open(vector):
    blob = bytes.fromhex(vector["sealed"])
    assert len(blob) == sealing.sealed_length(vector["size"])
    body = sealing.open_sealed(
        PRIVATE, survey_id=OWN["survey_id"], unit=vector["unit"], sealed=blob, size=vector["size"]
    )
    assert body.decode() == vector["body"]
    # The body is the wire form: the aggregator's strict decoder accepts it.
    document = json.loads(body)
    if vector["unit"]:
        assert parse_report(document, SURVEY).question == vector["unit"]
    else:
        assert parse_submission(document, SURVEY, max_batch=100, one_respondent=True)


@pytest.mark.parametrize("vector", OWN["other_orders"], ids=lambda v: v["unit"] + v["why"])
def test_a_body_in_another_order_opens_to_the_same_reports(vector):
    """docs/protocol.md §10.3: a sender writes the members in lexicographic order, and a
    recipient reads the body as JSON without checking the order."""
    blob = bytes.fromhex(vector["sealed"])
    body = sealing.open_sealed(
        PRIVATE, survey_id=OWN["survey_id"], unit=vector["unit"], sealed=blob, size=vector["size"]
    )
    assert body.decode() == vector["body"]
    assert body != sealing.unit_body(vector["reports"], vector["unit"])  # not what a sender writes
    document = json.loads(body)
    if vector["unit"]:
        reports = [parse_report(document, SURVEY)]
    else:
        reports = parse_submission(document, SURVEY, max_batch=100, one_respondent=True)
    assert [(r.id, r.question, r.payload) for r in reports] == [
        (r["id"], r["question"], r["payload"]) for r in vector["reports"]
    ]


@pytest.mark.parametrize("vector", OWN["invalid"], ids=lambda v: v["why"])
def test_invalid_vectors_refused(vector):
    with pytest.raises(SealingError):
        sealing.open_sealed(
            PRIVATE,
            survey_id=OWN["survey_id"],
            unit=vector["unit"],
            sealed=bytes.fromhex(vector["sealed"]),
        )


def test_vectors_file_is_current():
    from tests.shared import generate_sealing_vectors

    assert generate_sealing_vectors.main(["--check"]) == 0


# -- round trip, sizes, refusals -----------------------------------------------------------------


def test_round_trip_and_fresh_ephemeral_keys():
    key = sealing.generate_private_key()
    public = sealing.public_bytes(key)
    one = sealing.seal(public, survey_id="s", unit="q", plaintext=b"hello", size=16)
    two = sealing.seal(public, survey_id="s", unit="q", plaintext=b"hello", size=16)
    assert one != two and one[:32] != two[:32]
    assert len(one) == len(two) == 16 + sealing.OVERHEAD
    for blob in (one, two):
        assert sealing.open_sealed(key, survey_id="s", unit="q", sealed=blob) == b"hello"


@pytest.mark.parametrize("question", SURVEY.questions, ids=lambda q: q.id)
def test_sealed_size_never_depends_on_the_answer(question):
    """Every report of a question, whatever the answer and noise, seals to one length."""
    from tests.shared.generate_vectors import StreamSource, stream

    size = sealing.unit_size(SURVEY, question.id)
    lengths, bodies = set(), set()
    for number, answer in enumerate(_answers(question)):
        rng = StreamSource(stream(f"size/{question.id}/{number}", 1 << 16))
        for _ in range(8):
            report = {
                "id": "00000000-0000-4000-8000-000000000000",
                "question": question.id,
                "payload": question.randomize(answer, rng),
            }
            body = sealing.unit_body([report], question.id)
            bodies.add(len(body))
            lengths.add(
                len(
                    sealing.seal(PUBLIC, survey_id="s", unit=question.id, plaintext=body, size=size)
                )
            )
    assert bodies == {size}  # a question unit's body is exactly its size: no slack to leak
    assert lengths == {sealing.sealed_length(size)}


def test_submission_size_does_not_depend_on_how_many_answers():
    size = sealing.unit_size(SURVEY, "")
    bodies = [v["body"].encode() for v in OWN["sealed"] if not v["unit"]]
    assert len({len(body) for body in bodies}) == 2  # all questions answered, and only one
    lengths = {
        len(sealing.seal(PUBLIC, survey_id="s", unit="", plaintext=body, size=size))
        for body in bodies
    }
    assert lengths == {sealing.sealed_length(size)}


def _answers(question):
    if question.type == "yes_no":
        return [True, False]
    if question.type == "single_choice":
        return list(question.options)[:6]
    if question.type == "multiple_choice":
        return [[], list(question.options), [question.options[0]]]
    lo, hi = question.lo, question.hi
    return [lo, hi, (lo + hi) / 2]


def test_tampering_anywhere_is_refused():
    key = sealing.generate_private_key()
    blob = sealing.seal(sealing.public_bytes(key), survey_id="s", unit="q", plaintext=b"x", size=8)
    for index in range(len(blob)):
        altered = bytearray(blob)
        altered[index] ^= 0x01
        with pytest.raises(SealingError):
            sealing.open_sealed(key, survey_id="s", unit="q", sealed=bytes(altered))


@pytest.mark.parametrize(
    ("survey_id", "unit", "other"),
    [
        ("s", "q", sealing.generate_private_key()),
        ("t", "q", None),
        ("s", "r", None),
        ("s", "", None),
    ],
)
def test_wrong_key_survey_or_unit_is_refused(survey_id, unit, other):
    key = sealing.generate_private_key()
    blob = sealing.seal(sealing.public_bytes(key), survey_id="s", unit="q", plaintext=b"x", size=8)
    with pytest.raises(SealingError):
        sealing.open_sealed(other or key, survey_id=survey_id, unit=unit, sealed=blob)


def test_one_opener_opens_many_blobs_and_refuses_what_open_sealed_refuses():
    key = sealing.generate_private_key()
    bodies = [b"x", b"yy", b""]
    blobs = [
        sealing.seal(sealing.public_bytes(key), survey_id="s", unit="q", plaintext=body, size=8)
        for body in bodies
    ]
    open_one = sealing.opener(key, survey_id="s", unit="q", size=8)
    assert [open_one(blob) for blob in blobs] == bodies
    altered = blobs[0][:-1] + bytes([blobs[0][-1] ^ 1])
    other = sealing.seal(sealing.public_bytes(key), survey_id="s", unit="r", plaintext=b"x", size=8)
    for refused, match in (
        (altered, "does not open"),
        (other, "does not open"),
        (blobs[0] + b"\0", "this unit's are"),
        ("text", "must be bytes"),
    ):
        with pytest.raises(SealingError, match=match):
            open_one(refused)


def test_length_is_checked_when_the_size_is_given():
    key = sealing.generate_private_key()
    blob = sealing.seal(sealing.public_bytes(key), survey_id="s", unit="q", plaintext=b"x", size=8)
    with pytest.raises(SealingError, match="this unit's are"):
        sealing.open_sealed(key, survey_id="s", unit="q", sealed=blob, size=9)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"plaintext": b"toolong", "size": 3}, "does not fit"),
        ({"plaintext": "text", "size": 8}, "must be bytes"),
        ({"plaintext": b"x", "size": -1}, "size must be"),
        ({"plaintext": b"x", "size": True}, "size must be"),
    ],
)
def test_bad_seal_arguments(kwargs, match):
    with pytest.raises(SealingError, match=match):
        sealing.seal(PUBLIC, survey_id="s", unit="q", **kwargs)


def test_low_order_keys_are_refused():
    with pytest.raises(SealingError, match="low-order"):
        sealing.seal(bytes(32), survey_id="s", unit="q", plaintext=b"", size=0)
    blob = sealing.seal(PUBLIC, survey_id="s", unit="q", plaintext=b"", size=0)
    with pytest.raises(SealingError):
        sealing.open_sealed(PRIVATE, survey_id="s", unit="q", sealed=bytes(32) + blob[32:])


def test_bad_keys():
    with pytest.raises(SealingError, match="32 raw"):
        sealing.seal(b"short", survey_id="s", unit="q", plaintext=b"", size=0)
    with pytest.raises(SealingError, match="X25519"):
        sealing.open_sealed(b"short", survey_id="s", unit="q", sealed=bytes(60))


def test_unit_body_shapes():
    report = {"id": "00000000-0000-4000-8000-000000000000", "question": "yes", "payload": "01"}
    assert sealing.unit_body([report], "yes") == (
        b'{"id":"00000000-0000-4000-8000-000000000000","payload":"01","question":"yes"}'
    )
    assert sealing.unit_body([report], "").startswith(b'{"reports":[{"id":')
    with pytest.raises(SealingError):
        sealing.unit_body([report], "other")
    with pytest.raises(SealingError):
        sealing.unit_body([], "")


def test_what_the_browser_module_seals_python_opens():
    """sealing.js (under Node's WebCrypto) seals every vector body; deniable.sealing opens it."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    module = Path(__file__).resolve().parents[2] / "client" / "browser" / "sealing.js"
    script = (
        f"const s = await import({json.dumps(module.as_uri())});"
        "const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const key = Uint8Array.from(Buffer.from(v.key, 'hex'));"
        "const out = [];"
        "for (const x of v.sealed) out.push(Buffer.from(await s.seal(key, {"
        "surveyId: v.survey_id, unit: x.unit, plaintext: new TextEncoder().encode(x.body),"
        " size: x.size})).toString('hex'));"
        "console.log(JSON.stringify(out));"
    )
    data = json.dumps(
        {"key": OWN["recipient_public_key"], "survey_id": OWN["survey_id"], "sealed": OWN["sealed"]}
    )
    result = subprocess.run(
        [node, "--input-type=commonjs", "-e", f"(async () => {{{script}}})()"],
        input=data,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    blobs = json.loads(result.stdout)
    assert len(blobs) == len(OWN["sealed"])
    for vector, blob in zip(OWN["sealed"], blobs, strict=True):
        assert blob != vector["sealed"]  # a fresh ephemeral key
        body = sealing.open_sealed(
            PRIVATE,
            survey_id=OWN["survey_id"],
            unit=vector["unit"],
            sealed=bytes.fromhex(blob),
            size=vector["size"],
        )
        assert body.decode() == vector["body"]


# -- relay noise (docs/protocol.md §11.7) --------------------------------------------------------

NOISE = VECTORS["relay_noise"]


def test_relay_noise_vectors_survey_and_output_values():
    from deniable.errors import InvalidSurvey

    survey = Survey.from_dict(NOISE["survey"], resolved=True)
    assert survey.canonical_bytes().decode("utf-8") == NOISE["canonical"]
    assert survey.relay.noise is not None
    survey.relay.noise.verify()
    assert {q.id: list(q.oracle.output_reports()) for q in survey.questions} == NOISE[
        "output_reports"
    ]
    for vector in NOISE["refused"]:
        relay = {**NOISE["survey"]["relay"], "noise": vector["noise"]}
        with pytest.raises(InvalidSurvey):
            Survey.from_dict({**NOISE["survey"], "relay": relay}, resolved=True)
    for vector in NOISE["unverifiable"]:
        relay = {**NOISE["survey"]["relay"], "noise": vector["noise"]}
        parsed = Survey.from_dict({**NOISE["survey"], "relay": relay}, resolved=True)
        with pytest.raises(InvalidSurvey, match="more than the signed"):
            parsed.relay.noise.verify()


@pytest.mark.parametrize("vector", NOISE["dummies"], ids=lambda v: v["body"][-40:])
def test_relay_noise_dummy_vectors_open_to_a_report_of_an_output_value(vector):
    survey = Survey.from_dict(NOISE["survey"], resolved=True)
    blob = bytes.fromhex(vector["sealed"])
    assert vector["size"] == sealing.unit_size(survey, vector["unit"])
    assert len(blob) == sealing.sealed_length(vector["size"])
    body = sealing.open_sealed(
        PRIVATE, survey_id=survey.id, unit=vector["unit"], sealed=blob, size=vector["size"]
    )
    assert body.decode() == vector["body"]
    report = parse_report(json.loads(body), survey)
    assert report.payload in NOISE["output_reports"][vector["unit"]]
    assert sealing.unit_body([json.loads(body)], vector["unit"]) == body


def test_relay_noise_batch_vector():
    from deniable.wire import RelayBatch, strict_json

    batch = RelayBatch.parse(strict_json.loads(NOISE["batch"]["body"]), {"yes"}, 1)
    assert batch.real_units == NOISE["batch"]["real_units"] == 1
    assert batch.encode().decode("ascii") == NOISE["batch"]["body"]
    assert len({len(blob) for blob in batch.sealed}) == 1  # dummies and the real unit alike
