"""The Python implementation against the cross-language vectors (shared/vectors/).

The JavaScript client checks the same file (client/browser/test/vectors.test.js, run
by tests/client/test_browser_node.py); together they show that both produce the same
bytes from the same byte stream, the same canonical bytes and signatures, and refuse
the same payloads and definitions.
"""

from __future__ import annotations

import base64
import json
from importlib import resources

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from deniable import keychain
from deniable.canonical import loads
from deniable.errors import InvalidReport, InvalidSurvey, InvalidValue, SignatureError
from deniable.mechanisms.local_hashing import bucket
from deniable.survey import FORMAT, Question, Survey
from deniable.wire import parse_submission

from . import generate_vectors
from .generate_vectors import StreamSource

VECTORS = json.loads(
    resources.files("deniable").joinpath("vectors/protocol-vectors.json").read_text("utf-8")
)
QUESTIONS = {
    qid: Question.from_dict(d, "question", FORMAT) for qid, d in VECTORS["questions"].items()
}


def test_the_vector_file_is_what_the_committed_script_writes() -> None:
    assert generate_vectors.render() == generate_vectors.PATH.read_text("utf-8")


@pytest.mark.parametrize("vector", VECTORS["surveys"], ids=lambda v: v["name"])
def test_canonical_bytes_and_signatures(vector) -> None:
    survey = Survey.from_dict(vector["definition"], resolved=True)
    canonical = vector["canonical"].encode("utf-8")
    assert survey.canonical_bytes() == canonical
    assert rfc8785.dumps(vector["definition"]) == canonical
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(VECTORS["public_key"]))
    key.verify(base64.b64decode(vector["signature"]), canonical)  # raises if wrong
    # Parsed back from its own canonical text (as a client gets it): the same bytes, even
    # where JCS wrote a double as an integer literal beyond 2**53 (1e16).
    again = Survey.from_dict(json.loads(canonical), resolved=True)
    assert again.canonical_bytes() == canonical


@pytest.mark.parametrize("vector", VECTORS["invalid_surveys"], ids=lambda v: v["reason"])
def test_definitions_a_client_must_refuse(vector) -> None:
    with pytest.raises(InvalidSurvey) as refused:
        Survey.from_dict(vector["definition"], resolved=True)
    assert refused.value.reason == vector["code"], str(refused.value)  # refused for its reason


@pytest.mark.parametrize(
    "vector", VECTORS["invalid_answers"], ids=lambda v: f"{v['question']}={v['answer']!r}"
)
def test_answers_a_client_must_refuse(vector) -> None:
    with pytest.raises(InvalidValue):
        QUESTIONS[vector["question"]].check_answer(vector["answer"])


def test_draws_from_a_byte_stream() -> None:
    draws = VECTORS["draws"]
    source = StreamSource(bytes.fromhex(draws["stream"]))
    assert [source.uniform53() for _ in draws["uniform53"]] == draws["uniform53"]
    assert [source.randbelow(d["upper"]) for d in draws["randbelow"]] == [
        d["value"] for d in draws["randbelow"]
    ]
    assert source.position == len(source.data)


def test_olh_hash() -> None:
    for v in VECTORS["olh_hash"]:
        assert bucket(v["seed"], v["value"], v["hash_range"]) == v["bucket"], v


@pytest.mark.parametrize(
    "vector", VECTORS["reports"], ids=lambda v: f"{v['question']}-{json.dumps(v['answer'])}"
)
def test_reports_from_a_fixed_byte_stream(vector) -> None:
    question = QUESTIONS[vector["question"]]
    source = StreamSource(bytes.fromhex(vector["stream"]))
    assert question.randomize(vector["answer"], rng=source) == vector["report"]
    assert source.position == len(source.data), "every byte of the stream is used"


@pytest.mark.parametrize(
    "vector", VECTORS["decode"], ids=lambda v: f"{v['question']}-{v['payload'][:16]}"
)
def test_decode(vector) -> None:
    oracle = QUESTIONS[vector["question"]].oracle
    if vector["valid"]:
        assert oracle.encode(oracle.decode(vector["payload"])) == vector["payload"]
    else:
        with pytest.raises(InvalidReport):
            oracle.decode(vector["payload"])


def test_the_aggregator_accepts_every_vector_report() -> None:
    survey = Survey.from_dict(
        {
            "format": FORMAT,
            "id": "vectors",
            "title": "Vectors",
            "questions": list(VECTORS["questions"].values()),
        },
        resolved=True,
    )
    reports = [
        {
            "id": f"00000000-0000-4000-8000-{i:012x}",
            "question": v["question"],
            "payload": v["report"],
        }
        for i, v in enumerate(VECTORS["reports"])
    ]
    parsed = parse_submission({"reports": reports}, survey, max_batch=1000)
    assert [r.payload for r in parsed] == [v["report"] for v in VECTORS["reports"]]


@pytest.mark.parametrize("vector", VECTORS["documents"], ids=lambda v: v["name"])
def test_survey_documents(vector) -> None:
    """The envelope (§2, §7): parsed strictly, then verified under the pinned key."""
    key = base64.b64decode(VECTORS["public_key"])

    def open_document() -> Survey:
        return keychain.verify_document(loads(vector["text"]), vector["survey_id"], key)

    if vector["code"] is None:
        assert open_document().id == vector["survey_id"]
    else:
        with pytest.raises((SignatureError, InvalidSurvey)) as refused:
            open_document()
        assert refused.value.reason == vector["code"], str(refused.value)


@pytest.mark.parametrize("vector", VECTORS["key_rotation"]["cases"], ids=lambda v: v["name"])
def test_key_rotation(vector) -> None:
    given = vector["pin"]
    pin = keychain.Pin(
        public_key=base64.b64decode(given["public_key"]),
        sequence=given["sequence"],
        retired=tuple(given["retired"]),
    )
    if vector["expect"] is None:
        with pytest.raises(SignatureError):
            keychain.follow_chain(pin, vector["document"])
        return
    followed = keychain.follow_chain(pin, vector["document"])
    assert {
        "public_key": keychain.encode(followed.public_key),
        "sequence": followed.sequence,
        "retired": list(followed.retired),
    } == vector["expect"]


def test_blank_code_points() -> None:
    """§2.2's fixed lists, at and next to every range end: the same in both clients."""
    from deniable.survey import BLANK

    wrong = [
        v["code_point"] for v in VECTORS["blank"] if bool(BLANK.fullmatch(v["text"])) != v["blank"]
    ]
    assert wrong == []
