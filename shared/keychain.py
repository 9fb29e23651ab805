"""Key rotation statements: how a device pinned to one aggregator key follows it to the next.

Normative text: docs/key-rotation.md.  In short, a rotation from key ``A`` to key
``B`` (Ed25519, 32 raw public-key bytes each) is one *link*::

    {"sequence": n, "previous_key_id": id(A), "previous_public_key": b64(A),
     "key_id": id(B), "public_key": b64(B),
     "signature": b64(Sign_A(m)), "endorsement": b64(Sign_B(m))}

over the ASCII message :func:`rotation_message` ``m`` = ``"deniable-key-rotation/1\\n"
"sequence:<n>\\n" "previous:<b64(A)>\\n" "next:<b64(B)>\\n"``.  The *chain* lists every
link since the aggregator's first key, with sequences 1, 2, 3, ... in order, and
``GET /api/v1/key`` serves it with the current key.  The old key's signature says
"my holder hands over to B"; the new key's endorsement proves B's holder took it.

A device that pinned key ``P`` accepts a served current key ``K != P`` only through
:func:`follow_chain`: the links from the one whose previous key is ``P`` to the end
must each be signed by the key before and endorsed by the key after, with
consecutive sequences, ending at ``K``, and with no key met twice or retired
before.  There is no trust on first use of ``K``: a forged, truncated or reordered
chain, or a served key older than the pin (a rollback), is refused with
:class:`~deniable.errors.SignatureError`.

The key document also carries the aggregator's X25519 *encryption key* for sealed
reports (:mod:`deniable.sealing`), signed by the current signing key over
:func:`encryption_key_message`, so a relay cannot put its own key in its place:
:func:`verify_encryption_key`.

Pure computation (Ed25519 from ``cryptography``), no I/O: the aggregator signs with
it and the device verifies with it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import SignatureError

ALGORITHM = "Ed25519"
CONTEXT = "deniable-key-rotation/1"
ENCRYPTION_CONTEXT = "deniable-encryption-key/1"
ENCRYPTION_ALGORITHM = "X25519"
ENCRYPTION_SUITE = "DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-128-GCM"
ENCRYPTION_FIELDS = frozenset({"algorithm", "suite", "public_key", "key_id", "signature"})
LINK_FIELDS = frozenset(
    {
        "sequence",
        "previous_key_id",
        "previous_public_key",
        "key_id",
        "public_key",
        "signature",
        "endorsement",
    }
)
MAX_CHAIN = 10_000
# How many encryption keys an aggregator keeps, newest first, after rotating them away;
# a relay pins as many of a survey's past keys.  Why a few: a relay may hold reports
# sealed to a retired key for one batch window; more retired keys only widen what a
# stolen file opens.
RETIRED_ENCRYPTION_KEYS = 4

__all__ = [
    "ALGORITHM",
    "RETIRED_ENCRYPTION_KEYS",
    "Pin",
    "decode_public_key",
    "decode_signature",
    "encode",
    "encryption_key_document",
    "encryption_key_message",
    "follow_chain",
    "key_id",
    "link_document",
    "rotation_message",
    "verify_document",
    "verify_encryption_key",
]


def encode(raw: bytes) -> str:
    """Standard base64 with padding (RFC 4648 section 4)."""
    return base64.b64encode(raw).decode("ascii")


def key_id(raw: bytes) -> str:
    """First 16 lowercase hex digits of SHA-256 over the 32 raw public-key bytes."""
    return hashlib.sha256(raw).hexdigest()[:16]


def decode_public_key(text: object, where: str) -> bytes:
    """32 raw Ed25519 public-key bytes from strict base64 (SignatureError otherwise)."""
    raw = _decode(text, where, "public key")
    if len(raw) != 32:
        raise SignatureError(f"{where}: an Ed25519 public key is 32 bytes, got {len(raw)}")
    return raw


def decode_signature(text: object, where: str) -> bytes:
    """64 raw Ed25519 signature bytes from strict base64 (SignatureError otherwise)."""
    raw = _decode(text, where, "signature")
    if len(raw) != 64:
        raise SignatureError(f"{where}: an Ed25519 signature is 64 bytes, got {len(raw)}")
    return raw


def _decode(text: object, where: str, what: str) -> bytes:
    if not isinstance(text, str):
        raise SignatureError(f"{where}: {what} must be base64 text")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureError(f"{where}: {what} is not valid base64") from None
    if encode(raw) != text:
        raise SignatureError(f"{where}: {what} is not canonical base64")
    return raw


def rotation_message(sequence: int, previous: bytes, following: bytes) -> bytes:
    """The exact bytes both keys sign for rotation number ``sequence`` (ASCII, 4 lines)."""
    if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 1:
        raise ValueError("sequence must be a positive integer")
    text = (
        f"{CONTEXT}\nsequence:{sequence}\nprevious:{encode(previous)}\nnext:{encode(following)}\n"
    )
    return text.encode("ascii")


def link_document(
    sequence: int, previous: bytes, following: bytes, signature: bytes, endorsement: bytes
) -> dict[str, Any]:
    """One link of the chain, as served (field order as in docs/key-rotation.md)."""
    return {
        "sequence": sequence,
        "previous_key_id": key_id(previous),
        "previous_public_key": encode(previous),
        "key_id": key_id(following),
        "public_key": encode(following),
        "signature": encode(signature),
        "endorsement": encode(endorsement),
    }


@dataclass(frozen=True, kw_only=True)
class Pin:
    """What a device trusts for one aggregator: a key, its sequence, the keys it left."""

    public_key: bytes
    sequence: int | None = None  # None: pinned from outside (trusted_key), position unknown
    retired: tuple[str, ...] = ()  # key ids this device followed away from

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)


def signature_valid(public: bytes, signature: bytes, message: bytes) -> bool:
    """Whether ``signature`` is the Ed25519 signature of ``message`` under ``public``."""
    # Why here: a device imports cryptography at its first signature check, not at start-up.
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


def _links(chain: object) -> list[Mapping[str, Any]]:
    """The chain's links after structural checks: objects, known fields, 1..n in order."""
    if not isinstance(chain, list):
        raise SignatureError("key document: chain must be a list")
    if len(chain) > MAX_CHAIN:
        raise SignatureError(f"key document: chain longer than {MAX_CHAIN} links")
    for position, link in enumerate(chain, 1):
        if not isinstance(link, dict) or set(link) != LINK_FIELDS:
            raise SignatureError(
                f"key chain link {position}: must have exactly the fields "
                f"{', '.join(sorted(LINK_FIELDS))}"
            )
        sequence = link["sequence"]
        if isinstance(sequence, bool) or sequence != position:
            raise SignatureError(
                f"key chain link {position}: sequence {sequence!r} out of order "
                f"(links must be numbered 1, 2, 3, ... from the first key)"
            )
    return chain


def follow_chain(pin: Pin, document: Mapping[str, Any]) -> Pin:
    """The pin after the served key document: the same pin, or one followed along the chain.

    ``document`` is ``GET /api/v1/key``: ``algorithm``, ``public_key``, ``key_id``,
    ``sequence`` and ``chain``.  Raises SignatureError unless every step from
    ``pin`` to the served key is signed by the key before and endorsed by the key
    after (see the module docstring and docs/key-rotation.md, "Verification").
    """
    if not isinstance(document, Mapping) or document.get("algorithm") != ALGORITHM:
        raise SignatureError("aggregator key document must announce algorithm Ed25519")
    current = decode_public_key(document.get("public_key"), "aggregator key")
    if document.get("key_id") != key_id(current):
        raise SignatureError("aggregator key document: key_id does not match the key")
    links = _links(document.get("chain", []))
    sequence = document.get("sequence", len(links))
    if isinstance(sequence, bool) or sequence != len(links):
        raise SignatureError("aggregator key document: sequence is not the chain's length")
    if links and decode_public_key(links[-1]["public_key"], "key chain") != current:
        raise SignatureError("aggregator key document: the chain does not end at the served key")
    if current == pin.public_key:
        if pin.sequence is not None and sequence != pin.sequence:
            raise SignatureError(
                f"aggregator key {key_id(current)} is served at sequence {sequence}, but this "
                f"device pinned it at sequence {pin.sequence}; refusing"
            )
        # Unchanged (step 2): an unknown sequence stays unknown.  Why: D.sequence is not signed
        # when no link is walked, and a forged one would make the next true rotation look
        # renumbered.  Trust on first use takes it explicitly (key-rotation.md, "When").
        return pin
    start = next(
        (
            index
            for index, link in enumerate(links)
            if link["previous_public_key"] == encode(pin.public_key)
        ),
        None,
    )
    if start is None:
        raise SignatureError(
            f"the aggregator key changed from the pinned {pin.key_id} to {key_id(current)}, and "
            "the served rotation chain does not start from the pinned key (truncated, or an "
            "older key: a rollback); refusing"
        )
    if pin.sequence is not None and links[start]["sequence"] != pin.sequence + 1:
        raise SignatureError(
            f"key chain: the rotation away from the pinned key {pin.key_id} is numbered "
            f"{links[start]['sequence']}, but this device pinned that key at sequence "
            f"{pin.sequence} (so expects {pin.sequence + 1}): a truncated or renumbered chain; "
            "refusing"
        )
    seen = {pin.key_id, *pin.retired}
    previous = pin.public_key
    followed: list[str] = []
    for link in links[start:]:
        where = f"key chain link {link['sequence']}"
        if decode_public_key(link["previous_public_key"], where) != previous:
            raise SignatureError(f"{where}: does not continue from the key before it")
        following = decode_public_key(link["public_key"], where)
        if link["previous_key_id"] != key_id(previous) or link["key_id"] != key_id(following):
            raise SignatureError(f"{where}: a key id does not match its key")
        if key_id(following) in seen:
            raise SignatureError(
                f"{where}: key {key_id(following)} was used before; refusing (a rollback or a loop)"
            )
        message = rotation_message(link["sequence"], previous, following)
        signature = _decode(link["signature"], where, "signature")
        endorsement = _decode(link["endorsement"], where, "endorsement")
        if not signature_valid(previous, signature, message):
            raise SignatureError(
                f"{where}: not signed by the previous key {key_id(previous)}; forged or altered"
            )
        if not signature_valid(following, endorsement, message):
            raise SignatureError(
                f"{where}: not endorsed by the new key {key_id(following)}; forged or altered"
            )
        followed.append(key_id(previous))
        seen.add(key_id(following))
        previous = following
    return Pin(public_key=current, sequence=sequence, retired=_unique([*pin.retired, *followed]))


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def chain_ending_at(chain: Sequence[Mapping[str, Any]], public_key: bytes) -> list[Any]:
    """The prefix of ``chain`` whose last link names ``public_key`` ([] if none does)."""
    target = encode(public_key)
    for index in range(len(chain) - 1, -1, -1):
        if chain[index]["public_key"] == target:
            return list(chain[: index + 1])
    return []


# -- the encryption key ----------------------------------------------------------------------


def encryption_key_message(signing_public: bytes, encryption_public: bytes) -> bytes:
    """The exact bytes the signing key signs to publish an encryption key (ASCII, 4 lines)."""
    return (
        f"{ENCRYPTION_CONTEXT}\nsigning_key:{encode(signing_public)}\n"
        f"suite:{ENCRYPTION_SUITE}\npublic_key:{encode(encryption_public)}\n"
    ).encode("ascii")


def encryption_key_document(
    signing_public: bytes, encryption_public: bytes, signature: bytes
) -> dict[str, Any]:
    """The key document's ``encryption_key`` member (docs/key-rotation.md)."""
    return {
        "algorithm": ENCRYPTION_ALGORITHM,
        "suite": ENCRYPTION_SUITE,
        "public_key": encode(encryption_public),
        "key_id": key_id(encryption_public),
        "signature": encode(signature),
    }


def verify_encryption_key(document: Mapping[str, Any], signing_public: bytes) -> bytes:
    """The 32 raw bytes of the key document's encryption key, verified under the signing key.

    ``document`` is the whole key document (``GET /api/v1/key``); ``signing_public``
    the key the device trusts now (its pin after :func:`follow_chain`).  Raises
    SignatureError unless ``encryption_key`` is present, well formed, and signed
    by exactly that key.
    """
    member = document.get("encryption_key") if isinstance(document, Mapping) else None
    if member is None:
        raise SignatureError(
            "the aggregator's key document has no encryption_key; it cannot receive sealed reports"
        )
    if not isinstance(member, Mapping) or set(member) != ENCRYPTION_FIELDS:
        raise SignatureError(
            f"encryption_key must have exactly the members {', '.join(sorted(ENCRYPTION_FIELDS))}"
        )
    if member["algorithm"] != ENCRYPTION_ALGORITHM or member["suite"] != ENCRYPTION_SUITE:
        raise SignatureError(
            f"encryption_key must be {ENCRYPTION_ALGORITHM} for the suite {ENCRYPTION_SUITE}"
        )
    raw = _decode(member["public_key"], "encryption_key", "public key")
    if len(raw) != 32:
        raise SignatureError(f"encryption_key: an X25519 public key is 32 bytes, got {len(raw)}")
    if member["key_id"] != key_id(raw):
        raise SignatureError("encryption_key: key_id does not match the key")
    signature = decode_signature(member["signature"], "encryption_key")
    if not signature_valid(signing_public, signature, encryption_key_message(signing_public, raw)):
        raise SignatureError(
            f"encryption_key {key_id(raw)} is not signed by the aggregator key "
            f"{key_id(signing_public)}; refusing to seal to it"
        )
    return raw


# -- survey documents ------------------------------------------------------------------------


def verify_document(document: object, survey_id: str, public_key: bytes) -> Any:
    """The validated :class:`deniable.survey.Survey` of a survey document, verified under a pin.

    docs/protocol.md §2 and §7, in this order: ``key_id``, when present, names the pinned key
    (the caller follows a rotation first: key-rotation.md); the signature is canonical base64 of
    64 bytes and verifies over the canonical bytes of the definition as received; the definition
    is valid /2 (or /1) in resolved form; its id, and the document's, are the one asked for.
    SignatureError (``reason`` ``key-id``, ``signature``, ``id-mismatch``) or InvalidSurvey.
    """
    from .canonical import jcs, legacy_bytes
    from .errors import InvalidSurvey
    from .survey import FORMAT_V1, Survey

    where = f"survey {survey_id!r}"
    if not isinstance(document, dict):
        raise SignatureError(f"{where}: the survey document is not an object", reason="signature")
    served = document.get("key_id")
    if "key_id" in document and served != key_id(public_key):
        raise SignatureError(
            f"{where} is signed by key {served!r} but this device pinned {key_id(public_key)!r}, "
            "and the aggregator's key chain does not lead there; refusing",
            reason="key-id",
        )
    try:
        signature = decode_signature(document.get("signature"), where)
    except SignatureError as error:
        raise SignatureError(str(error), reason="signature") from None
    definition = document.get("definition")
    legacy = isinstance(definition, dict) and definition.get("format") == FORMAT_V1
    try:
        signed = legacy_bytes(definition) if legacy else jcs(definition)
    except (InvalidSurvey, TypeError, ValueError):
        signed = b""  # cannot be the bytes of any signed definition
    if not signed or not signature_valid(public_key, signature, signed):
        raise SignatureError(
            f"{where}: signature does not match the definition under the pinned key "
            f"{key_id(public_key)}; the survey was altered or signed by someone else",
            reason="signature",
        )
    survey = Survey.from_dict(definition, resolved=True)
    if survey.id != survey_id or document.get("id", survey_id) != survey_id:
        raise SignatureError(
            f"asked for survey {survey_id!r}, got {survey.id!r}", reason="id-mismatch"
        )
    return survey
