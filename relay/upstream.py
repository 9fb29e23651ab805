"""The relay's side of talking to an aggregator: verify its surveys, hand it batches.

The relay trusts an aggregator's Ed25519 signing key pinned when the survey was
added (given by the operator, or the one served then), and follows the key's
signed rotation chain (:func:`deniable.keychain.follow_chain`) as devices do.
A survey is relayed here only if its *signed* definition names this relay's
``PUBLIC_URL``: an aggregator cannot have a relay forward a survey it did not
publish as relayed, and the relay learns ``min_batch`` and the shuffle unit
from the signed bytes, never from an unsigned field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deniable.errors import DeniableError, InvalidSurvey, SignatureError, TransportError
from deniable.keychain import (
    Pin,
    decode_public_key,
    decode_signature,
    encode,
    key_id,
    signature_valid,
)
from deniable.origins import same_url
from deniable.survey import IDENTIFIER, Survey
from deniable.wire import (
    Acknowledgement,
    KeyDocument,
    ProblemType,
    RelayBatch,
    SurveyEnvelope,
    strict_json,
)

from . import noise

__all__ = [
    "Outcome",
    "USER_AGENT",
    "batch_body",
    "encryption_key",
    "encryption_key_id",
    "fetch_enrolment_digests",
    "fetch_key",
    "pin_from",
    "pin_text",
    "put_batch",
    "verify_survey",
]

USER_AGENT = "deniable-relay"


@dataclass(frozen=True, kw_only=True)
class Verified:
    """A survey document whose signature checked out under the (followed) pinned key."""

    survey: Survey
    status: str
    require_enrolment: bool
    document: dict[str, Any]
    pin: Pin

    @property
    def relay(self) -> Any:
        return self.survey.relay


def _session() -> Any:
    import requests

    session = requests.Session()
    session.headers["User-Agent"] = USER_AGENT
    session.trust_env = False  # Why: the relay talks to the URL it was given, no proxy variables
    return session


def _get_json(url: str, *, timeout: float, headers: dict[str, str] | None = None) -> Any:
    import requests

    try:
        response = _session().get(
            url, timeout=timeout, headers=headers or {}, allow_redirects=False
        )
    except requests.RequestException as error:
        raise TransportError(f"GET {url}: {type(error).__name__}: {error}") from None
    if response.status_code != 200:
        raise TransportError(f"GET {url}: HTTP {response.status_code} {response.text[:200]}")
    return _strict_json(response.content, f"GET {url}")


def _strict_json(content: bytes, where: str) -> Any:
    """An answer parsed as strictly as a request body (the one strict reader: UTF-8, no NaN,
    no duplicate member, bounded depth); TransportError otherwise.

    Why: the aggregator (or whatever answers in its name) is not trusted by the relay; a
    RecursionError from a deeply nested answer once escaped as a 500 to a device whose
    unit named a new key, and stopped a refresh pass for every other survey."""
    try:
        return strict_json.loads(content, "answer")
    except DeniableError as error:
        raise TransportError(f"{where}: the answer is not strict JSON ({error})") from None


def fetch_key(aggregator_url: str, *, timeout: float = 10.0) -> Pin:
    """The aggregator's current signing key, unverified (for a first pin the operator checks)."""
    document = KeyDocument.parse(_get_json(f"{aggregator_url}/api/v1/key", timeout=timeout))
    return Pin(public_key=document.public_key, sequence=document.sequence)


def verify_survey(
    aggregator_url: str, survey_id: str, pin: Pin, *, public_url: str, timeout: float = 10.0
) -> Verified:
    """Fetch and verify a survey; SignatureError/TransportError/DeniableError otherwise."""
    if not IDENTIFIER.fullmatch(survey_id):
        raise TransportError(f"survey id must match {IDENTIFIER.pattern}, got {survey_id!r}")
    document = _get_json(f"{aggregator_url}/api/v1/surveys/{survey_id}", timeout=timeout)
    if not isinstance(document, dict):
        raise SignatureError(f"survey {survey_id!r}: the survey document is not an object")
    if document.get("key_id") not in (None, pin.key_id):
        # Signed by another key: follow the aggregator's signed rotation chain, or refuse.
        key_document = _get_json(f"{aggregator_url}/api/v1/key", timeout=timeout)
        pin = KeyDocument.parse(key_document).follow(pin)
    signature = decode_signature(document.get("signature"), f"survey {survey_id!r}")
    try:
        survey = Survey.from_dict(document.get("definition"), resolved=True)
    except DeniableError as error:
        raise SignatureError(
            f"survey {survey_id!r}: definition does not validate ({error})"
        ) from None
    if not signature_valid(pin.public_key, signature, survey.canonical_bytes()):
        raise SignatureError(
            f"survey {survey_id!r}: signature does not match under the pinned "
            f"key {pin.key_id}; refusing"
        )
    if survey.id != survey_id:
        raise SignatureError(f"asked for survey {survey_id!r}, got {survey.id!r}")
    relay = getattr(survey, "relay", None)
    if relay is None:
        raise SignatureError(
            f"survey {survey_id!r} is not a relayed survey (its signed definition names no relay)"
        )
    if not same_url(relay.url, public_url):
        raise SignatureError(
            f"survey {survey_id!r} names the relay {relay.url}, not this one "
            f"({public_url}, setting PUBLIC_URL)"
        )
    try:
        noise.check_terms(survey)
    except InvalidSurvey as error:
        raise SignatureError(
            f"survey {survey_id!r}: this relay cannot add the noise its signed definition "
            f"asks for: {error}"
        ) from None
    envelope = SurveyEnvelope.parse(document, survey_id)  # the unsigned state
    return Verified(
        survey=survey,
        status=envelope.status,
        document=document,
        pin=pin,
        require_enrolment=envelope.require_enrolment,
    )


def encryption_key(aggregator_url: str, pin: Pin, *, timeout: float = 10.0) -> tuple[str, bytes]:
    """(id, 32 raw bytes) of the aggregator's current encryption key, verified as devices
    verify it: the key document's signing key followed from ``pin`` along its signed
    chain, and the encryption key signed by that key
    (:func:`deniable.keychain.verify_encryption_key`)."""
    document = KeyDocument.parse(_get_json(f"{aggregator_url}/api/v1/key", timeout=timeout))
    public = document.encryption_public(document.follow(pin).public_key)
    return key_id(public), public


def encryption_key_id(aggregator_url: str, pin: Pin, *, timeout: float = 10.0) -> str:
    """The id of the aggregator's current encryption key, verified (:func:`encryption_key`)."""
    return encryption_key(aggregator_url, pin, timeout=timeout)[0]


def pin_text(pin: Pin) -> str:
    return encode(pin.public_key)


def pin_from(text: str, sequence: int | None) -> Pin:
    return Pin(public_key=decode_public_key(text, "pinned key"), sequence=sequence)


def fetch_enrolment_digests(
    aggregator_url: str, survey_id: str, credential: str, *, timeout: float = 10.0
) -> list[str]:
    """The aggregator's unspent enrolment token digests for the survey (relay credential)."""
    document = _get_json(
        f"{aggregator_url}/api/v1/surveys/{survey_id}/enrolment-digests",
        timeout=timeout,
        headers={"Authorization": f"Bearer {credential}"},
    )
    digests = document.get("digests") if isinstance(document, dict) else None
    if not isinstance(digests, list) or not all(
        isinstance(d, str) and len(d) == 64 for d in digests
    ):
        raise TransportError("enrolment digests: not a list of SHA-256 hex digests")
    return digests


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What the aggregator said to one batch: acknowledged, refused for good, or retry.

    ``problem`` is the kind of a refusal's problem document (None if it had none, or one
    this version does not know): the caller acts on it, never on ``detail``."""

    acknowledged: bool
    final: bool  # refused for good (a closed survey): drop the batch
    detail: str
    problem: ProblemType | None = None


def batch_body(unit: str, sealed: list[bytes], real_units: int | None = None) -> bytes:
    """The body of a batch's PUT (docs/protocol.md §11.3), blobs in the order given;
    ``real_units`` when the relay added dummies (how many blobs are real, never which)."""
    return RelayBatch(unit=unit, sealed=tuple(sealed), real_units=real_units).encode()


def put_batch(
    aggregator_url: str,
    survey_id: str,
    batch_id: str,
    unit: str,
    sealed: list[bytes],
    credential: str,
    *,
    timeout: float,
    real_units: int | None = None,
) -> Outcome:
    """One authenticated PUT of a whole batch, in the order given (``real_units``:
    :func:`batch_body`)."""
    import requests

    url = f"{aggregator_url}/api/v1/surveys/{survey_id}/batches/{batch_id}"
    try:
        response = _session().put(
            url,
            data=batch_body(unit, sealed, real_units),
            timeout=timeout,
            allow_redirects=False,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {credential}"},
        )
    except requests.RequestException as error:
        return Outcome(acknowledged=False, final=False, detail=f"{type(error).__name__}: {error}")
    detail = f"HTTP {response.status_code} {response.text[:300]}"
    try:
        answer = _strict_json(response.content, f"PUT {url}")
    except TransportError:
        answer = None
    if response.status_code in (200, 201):
        try:
            acknowledged = Acknowledgement.parse(answer).acknowledges(
                survey_id, batch_id, unit, len(sealed)
            )
        except DeniableError:
            acknowledged = False
        if acknowledged:
            return Outcome(acknowledged=True, final=False, detail="acknowledged")
        # Why: a proxy's error page or a stranger's answer is no acknowledgement; the batch
        # is deleted only when the aggregator says it stored this very batch.
        return Outcome(
            acknowledged=False,
            final=False,
            detail=f"{detail} (not the aggregator's acknowledgement of this batch)",
        )
    # Final only for a closed survey, told by the problem type (any other 409, e.g. a batch
    # id stored with other content, is an error for the operator to look at, not a drop).
    problem = ProblemType.of(answer) if response.status_code >= 400 else None
    final = response.status_code == 409 and problem is ProblemType.SURVEY_CLOSED
    return Outcome(acknowledged=False, final=final, detail=detail, problem=problem)


def key_id_of(pin: Pin) -> str:
    return key_id(pin.public_key)
