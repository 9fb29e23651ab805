"""The aggregator's signed requests to a relay: flush, held count (docs/protocol.md §11.8-9).

Before closing a relayed survey, its operator may ask the relay to form a batch of every
group of held units that has at least ``min_batch`` of them, without waiting for the
window, and forward it: ``POST {relay.url}/api/v1/surveys/{id}/flush`` with the body
:func:`flush_request` builds.  The aggregator's dashboard may ask how many respondents'
answers the relay holds (a snapshot refreshed at most every few minutes, §11.9):
``POST {relay.url}/api/v1/surveys/{id}/held`` with the body :func:`held_request` builds.

The aggregator signs :func:`flush_message` (or :func:`held_message`) with its Ed25519
signing key, the key the relay already pins for the survey, so only the aggregator that
published the survey can ask, and nothing new is shared between them.  Each kind of
request signs its own first line, so a signature for one is never valid for the other.
``issued_at`` (whole seconds since the epoch) bounds a replay to :data:`FLUSH_MAX_AGE`
seconds; a replayed flush could only forward again what ``min_batch`` allows to be
forwarded anyway (and counts against the survey's flush limit), a replayed held request
reads the same snapshot again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidReport

__all__ = [
    "FLUSH_FORMAT",
    "FLUSH_MAX_AGE",
    "HELD_REQUEST_FORMAT",
    "flush_message",
    "flush_request",
    "held_message",
    "held_request",
    "parse_flush",
    "parse_held_request",
    "signed_message",
]

FLUSH_FORMAT = "deniable.relay-flush/1"
HELD_REQUEST_FORMAT = "deniable.relay-held-request/1"
FLUSH_MAX_AGE = 300
# The first line each request format signs.
_CONTEXTS = {FLUSH_FORMAT: "deniable relay flush v1", HELD_REQUEST_FORMAT: "deniable relay held v1"}
_MEMBERS = frozenset({"format", "survey", "relay", "issued_at", "key_id", "signature"})


def signed_message(kind: str, survey_id: str, relay_url: str, issued_at: int) -> bytes:
    """The exact bytes the aggregator signs for a request of format ``kind`` (ASCII,
    4 lines, like a key rotation's)."""
    lines = (_CONTEXTS[kind], f"survey:{survey_id}", f"relay:{relay_url}", f"issued_at:{issued_at}")
    return "".join(f"{line}\n" for line in lines).encode()


def flush_message(survey_id: str, relay_url: str, issued_at: int) -> bytes:
    """The bytes a flush request signs."""
    return signed_message(FLUSH_FORMAT, survey_id, relay_url, issued_at)


def held_message(survey_id: str, relay_url: str, issued_at: int) -> bytes:
    """The bytes a held-count request signs."""
    return signed_message(HELD_REQUEST_FORMAT, survey_id, relay_url, issued_at)


def _request(
    kind: str, survey_id: str, relay_url: str, issued_at: int, key_id: str, signature: str
) -> dict[str, Any]:
    return {
        "format": kind,
        "survey": survey_id,
        "relay": relay_url,
        "issued_at": issued_at,
        "key_id": key_id,
        "signature": signature,
    }


def flush_request(
    survey_id: str, relay_url: str, issued_at: int, key_id: str, signature: str
) -> dict[str, Any]:
    """The flush request body: the signed fields, the signing key's id and the signature."""
    return _request(FLUSH_FORMAT, survey_id, relay_url, issued_at, key_id, signature)


def held_request(
    survey_id: str, relay_url: str, issued_at: int, key_id: str, signature: str
) -> dict[str, Any]:
    """The held-count request body, as :func:`flush_request`'s."""
    return _request(HELD_REQUEST_FORMAT, survey_id, relay_url, issued_at, key_id, signature)


def _parse(body: object, kind: str) -> dict[str, Any]:
    if not isinstance(body, Mapping) or set(body) != _MEMBERS:
        raise InvalidReport(
            f"body: a signed relay request has exactly the members {sorted(_MEMBERS)}"
        )
    if body["format"] != kind:
        raise InvalidReport(f"body.format: must be {kind!r}")
    issued = body["issued_at"]
    if isinstance(issued, bool) or not isinstance(issued, int) or issued < 0:
        raise InvalidReport("body.issued_at: must be whole seconds since the epoch")
    for name in ("survey", "relay", "key_id", "signature"):
        if not isinstance(body[name], str) or not 0 < len(body[name]) <= 400:
            raise InvalidReport(f"body.{name}: must be a string")
    return dict(body)


def parse_flush(body: object) -> dict[str, Any]:
    """A flush body's members, checked for shape (InvalidReport otherwise); not its signature."""
    return _parse(body, FLUSH_FORMAT)


def parse_held_request(body: object) -> dict[str, Any]:
    """A held-count request's members, checked for shape; not its signature."""
    return _parse(body, HELD_REQUEST_FORMAT)
