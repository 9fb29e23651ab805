"""The aggregator's signed request that a relay forward now what it can (docs/protocol.md §11.8).

Before closing a relayed survey, its operator may ask the relay to form a batch of every
group of held units that has at least ``min_batch`` of them, without waiting for the
window, and forward it: ``POST {relay.url}/api/v1/surveys/{id}/flush`` with the body
:func:`flush_request` builds.  The aggregator signs :func:`flush_message` with its
Ed25519 signing key, the key the relay already pins for the survey, so only the
aggregator that published the survey can ask, and nothing new is shared between them.
``issued_at`` (whole seconds since the epoch) bounds a replay to
:data:`FLUSH_MAX_AGE` seconds; a replay could only forward again what ``min_batch``
allows to be forwarded anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import InvalidReport

__all__ = ["FLUSH_FORMAT", "FLUSH_MAX_AGE", "flush_message", "flush_request", "parse_flush"]

FLUSH_FORMAT = "deniable.relay-flush/1"
FLUSH_MAX_AGE = 300
_CONTEXT = "deniable relay flush v1"


def flush_message(survey_id: str, relay_url: str, issued_at: int) -> bytes:
    """The exact bytes the aggregator signs (ASCII, 4 lines, like a key rotation's)."""
    return f"{_CONTEXT}\nsurvey:{survey_id}\nrelay:{relay_url}\nissued_at:{issued_at}\n".encode()


def flush_request(
    survey_id: str, relay_url: str, issued_at: int, key_id: str, signature: str
) -> dict[str, Any]:
    """The request body: the signed fields, the signing key's id and the signature."""
    return {
        "format": FLUSH_FORMAT,
        "survey": survey_id,
        "relay": relay_url,
        "issued_at": issued_at,
        "key_id": key_id,
        "signature": signature,
    }


def parse_flush(body: object) -> dict[str, Any]:
    """A flush body's members, checked for shape (InvalidReport otherwise); not its signature."""
    members = {"format", "survey", "relay", "issued_at", "key_id", "signature"}
    if not isinstance(body, Mapping) or set(body) != members:
        raise InvalidReport(f"body: a flush request has exactly the members {sorted(members)}")
    if body["format"] != FLUSH_FORMAT:
        raise InvalidReport(f"body.format: must be {FLUSH_FORMAT!r}")
    issued = body["issued_at"]
    if isinstance(issued, bool) or not isinstance(issued, int) or issued < 0:
        raise InvalidReport("body.issued_at: must be whole seconds since the epoch")
    for name in ("survey", "relay", "key_id", "signature"):
        if not isinstance(body[name], str) or not 0 < len(body[name]) <= 400:
            raise InvalidReport(f"body.{name}: must be a string")
    return dict(body)
