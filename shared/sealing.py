"""Sealing reports for the aggregator, so a relay carries them without reading them.

HPKE (RFC 9180) in base mode with the suite DHKEM(X25519, HKDF-SHA256),
HKDF-SHA256, AES-128-GCM (KEM 0x0020, KDF 0x0001, AEAD 0x0001), single-shot:
one fresh ephemeral key per sealed unit, sequence number 0, empty ``aad``.
The recipient is the aggregator's X25519 encryption key, which it publishes
signed by its survey-signing key (``encryption_key`` in ``GET /api/v1/key``,
docs/key-rotation.md), so a relay cannot put its own key in its place.

Normative text: docs/protocol.md, "Sealing".  In short::

    info   = "deniable.sealed/1" || I2OSP(len(survey_id), 2) || survey_id
                                 || I2OSP(len(unit), 2) || unit       (UTF-8)
    padded = I2OSP(len(body), 4) || body || 0x00 * (size - len(body))
    sealed = enc (32 bytes) || AES-128-GCM ciphertext of padded (4 + size + 16 bytes)

``unit`` is the question id when reports are shuffled per question, or ``""``
for a whole submission.  ``size`` is fixed per unit by the survey
(:func:`unit_size`), so every sealed blob of a unit has the same length,
whatever the answer.  ``body`` is the report in its wire form (docs/wire-format.md)
as canonical JSON: the report object for a question unit, ``{"reports": [...]}``
for a submission unit (:func:`unit_body`).

The primitives are ``cryptography``'s (``hazmat.primitives.hpke``, from 47.0);
nothing here is hand-rolled.  Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from .errors import SealingError

if TYPE_CHECKING:  # pragma: no cover
    from cryptography.hazmat.primitives.asymmetric.x25519 import (
        X25519PrivateKey,
        X25519PublicKey,
    )

    from .survey import Survey

FORMAT = "deniable.sealed/1"
SUITE_NAME = "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM"
KEM_ID, KDF_ID, AEAD_ID = 0x0020, 0x0001, 0x0001
ENC_LENGTH = 32  # Nenc of DHKEM(X25519, HKDF-SHA256)
TAG_LENGTH = 16  # Nt of AES-128-GCM
LENGTH_PREFIX = 4  # bytes of I2OSP(len(body), 4)
OVERHEAD = ENC_LENGTH + LENGTH_PREFIX + TAG_LENGTH
MAX_SIZE = 1 << 24  # a body bound far above any survey's (100 questions of 1024 options)
_MAX_FIELD = 0xFFFF

__all__ = [
    "FORMAT",
    "OVERHEAD",
    "SUITE_NAME",
    "decode_blob",
    "encode_blob",
    "generate_private_key",
    "info",
    "open_sealed",
    "opener",
    "pad",
    "public_bytes",
    "seal",
    "sealed_length",
    "unit_body",
    "unit_size",
    "unpad",
]


@cache
def _suite() -> Any:
    # Why lazily: a device imports cryptography at its first seal, not at start-up.
    from cryptography.hazmat.primitives.hpke import AEAD, KDF, KEM, Suite

    return Suite(KEM.X25519, KDF.HKDF_SHA256, AEAD.AES_128_GCM)


def _text(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise SealingError(f"{what} must be a string, got {type(value).__name__}")
    data = value.encode("utf-8")
    if len(data) > _MAX_FIELD:
        raise SealingError(f"{what} is longer than {_MAX_FIELD} bytes")
    return data


def info(survey_id: str, unit: str) -> bytes:
    """The HPKE ``info``: the format, the survey id and the unit, each length-prefixed."""
    survey = _text(survey_id, "survey_id")
    part = _text(unit, "unit")
    return (
        FORMAT.encode("ascii")
        + len(survey).to_bytes(2, "big")
        + survey
        + len(part).to_bytes(2, "big")
        + part
    )


def _check_size(size: object) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_SIZE:
        raise SealingError(f"size must be an integer in [0, {MAX_SIZE}], got {size!r}")
    return size


def sealed_length(size: int) -> int:
    """Bytes of every sealed blob of a unit whose bodies are padded to ``size``."""
    return _check_size(size) + OVERHEAD


def pad(body: bytes, size: int) -> bytes:
    """``I2OSP(len(body), 4) || body || zeros``: exactly ``4 + size`` bytes."""
    size = _check_size(size)
    if not isinstance(body, bytes | bytearray | memoryview):
        raise SealingError(f"plaintext must be bytes, got {type(body).__name__}")
    body = bytes(body)
    if len(body) > size:
        raise SealingError(f"plaintext of {len(body)} bytes does not fit the unit's {size}")
    return len(body).to_bytes(LENGTH_PREFIX, "big") + body + bytes(size - len(body))


def unpad(padded: bytes) -> bytes:
    """The body of a padded plaintext; SealingError unless the padding is exactly zeros."""
    if len(padded) < LENGTH_PREFIX:
        raise SealingError("sealed plaintext is shorter than its length prefix")
    length = int.from_bytes(padded[:LENGTH_PREFIX], "big")
    end = LENGTH_PREFIX + length
    if end > len(padded):
        raise SealingError("sealed plaintext's length prefix runs past its end")
    if padded[end:].count(0) != len(padded) - end:
        raise SealingError("sealed plaintext's padding is not all zeros")
    return padded[LENGTH_PREFIX:end]


def encode_blob(sealed: bytes) -> str:
    """A sealed blob as it travels in JSON (docs/protocol.md §10.4): base64url, no padding."""
    return base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")


def decode_blob(text: object) -> bytes:
    """The bytes of a blob as it travels, or SealingError unless ``text`` is their one
    canonical spelling: base64url (RFC 4648 §5) without padding, no whitespace, no ``+`` or
    ``/``, the spare bits of the last character zero, and not empty.

    Why only one spelling: a lenient decoder reads ``"AAAA AAAA"`` or a padded text as the
    same bytes as the canonical one, so two services (or two versions) could disagree on
    what a unit was, and a replay could pass as new text.  Checked by spelling the decoded
    bytes again: any other text than :func:`encode_blob` of them is refused.
    """
    if not isinstance(text, str) or not text:
        raise SealingError("a sealed blob must be a non-empty base64url string")
    try:
        sealed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        sealed = None
    if sealed is None or not sealed or encode_blob(sealed) != text:
        raise SealingError("not canonical base64url (RFC 4648 §5, unpadded, no whitespace)")
    return sealed


def _public_key(key: object) -> X25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    if isinstance(key, X25519PublicKey):
        return key
    if isinstance(key, bytes | bytearray) and len(key) == 32:
        return X25519PublicKey.from_public_bytes(bytes(key))
    raise SealingError("the recipient's public key must be 32 raw X25519 bytes")


def _private_key(key: object) -> X25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    if isinstance(key, X25519PrivateKey):
        return key
    if isinstance(key, bytes | bytearray) and len(key) == 32:
        return X25519PrivateKey.from_private_bytes(bytes(key))
    raise SealingError("the private key must be an X25519 key (or its 32 raw bytes)")


def generate_private_key() -> X25519PrivateKey:
    """A new X25519 recipient key (from the operating system's CSPRNG)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    return X25519PrivateKey.generate()


def public_bytes(key: X25519PrivateKey | X25519PublicKey) -> bytes:
    """The 32 raw bytes of an X25519 public key (of a private key's public half)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    public = key.public_key() if isinstance(key, X25519PrivateKey) else _public_key(key)
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def seal(
    public_key: bytes | X25519PublicKey, *, survey_id: str, unit: str, plaintext: bytes, size: int
) -> bytes:
    """``enc || ciphertext`` of ``plaintext`` padded to ``size``, for ``public_key``.

    Every call draws a fresh ephemeral key, so sealing one plaintext twice gives
    two different blobs of the same length, :func:`sealed_length` (``size``).
    """
    padded = pad(plaintext, size)
    recipient, context = _public_key(public_key), info(survey_id, unit)
    try:
        return _suite().encrypt(padded, recipient, context)
    except ValueError:  # an all-zero X25519 shared secret: a low-order point (RFC 9180 7.1.4)
        raise SealingError("X25519 refused the recipient's key (a low-order point)") from None


def open_sealed(
    private_key: bytes | X25519PrivateKey,
    *,
    survey_id: str,
    unit: str,
    sealed: bytes,
    size: int | None = None,
) -> bytes:
    """The body sealed in ``sealed`` for this survey and unit, or SealingError.

    Refused: a blob of the wrong length (``size`` given: exactly
    :func:`sealed_length`), one sealed to another key, survey or unit, any
    altered byte, and padding that is not exactly zeros.
    """
    return opener(private_key, survey_id=survey_id, unit=unit, size=size)(sealed)


def opener(
    private_key: bytes | X25519PrivateKey, *, survey_id: str, unit: str, size: int | None = None
) -> Callable[[bytes], bytes]:
    """:func:`open_sealed` of one key, survey, unit and size, for many blobs: the key, the
    ``info`` and the length are resolved once (a relay batch opens thousands of blobs)."""
    from cryptography.exceptions import InvalidTag

    length = None if size is None else sealed_length(size)
    key, context, decrypt = _private_key(private_key), info(survey_id, unit), _suite().decrypt

    def open_one(sealed: bytes) -> bytes:
        if not isinstance(sealed, bytes | bytearray | memoryview):
            raise SealingError(f"sealed must be bytes, got {type(sealed).__name__}")
        sealed = bytes(sealed)
        if length is not None and len(sealed) != length:
            raise SealingError(f"sealed blob of {len(sealed)} bytes; this unit's are {length}")
        if len(sealed) < OVERHEAD:
            raise SealingError(f"sealed blob of {len(sealed)} bytes is shorter than {OVERHEAD}")
        try:
            padded = decrypt(sealed, key, context)
        except (InvalidTag, ValueError):
            raise SealingError(
                "sealed blob does not open: altered, or sealed for another key, survey or unit"
            ) from None
        return unpad(padded)

    return open_one


# -- what a unit holds --------------------------------------------------------------------------

_REPORT_FRAME = len('{"id":"","payload":"","question":""}')
_UUID_LENGTH = 36


def _report_json(report: Mapping[str, str]) -> str:
    return json.dumps(
        {"id": report["id"], "payload": report["payload"], "question": report["question"]},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )


def unit_body(reports: Iterable[Mapping[str, str]], unit: str) -> bytes:
    """The plaintext body of a unit: canonical JSON of its report(s) in the wire form.

    A question unit (``unit`` = the question id) holds exactly one report and
    its body is that report object; a submission unit (``unit`` = ``""``) holds
    ``{"reports": [...]}`` in the order given.  Keys sorted, no spaces, ASCII.
    """
    items = list(reports)
    if unit:
        if len(items) != 1 or items[0].get("question") != unit:
            raise SealingError(f"a question unit holds exactly one report of question {unit!r}")
        return _report_json(items[0]).encode("ascii")
    if not items:
        raise SealingError("a submission unit holds at least one report")
    return ('{"reports":[' + ",".join(map(_report_json, items)) + "]}").encode("ascii")


def _report_size(question_id: str, report_bytes: int) -> int:
    return _REPORT_FRAME + _UUID_LENGTH + 2 * report_bytes + len(question_id)


def unit_size(survey: Survey, unit: str) -> int:
    """The fixed body size of a unit: its longest possible :func:`unit_body`.

    Reports have fixed-length payloads (``2 * report_bytes`` hex digits), so a
    question unit's body has exactly this size; a submission unit's is the size
    with every question answered (fewer answers are padded up to it).
    """
    if unit:
        if not survey.has_question(unit):
            raise SealingError(f"survey {survey.id!r} has no question {unit!r} to seal")
        question = survey.question(unit)
        return _report_size(question.id, question.oracle.report_bytes)
    reports = [_report_size(q.id, q.oracle.report_bytes) for q in survey.questions]
    return len('{"reports":[]}') + sum(reports) + max(0, len(reports) - 1)
