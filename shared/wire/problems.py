"""Problem types: what an error answer (RFC 9457 ``application/problem+json``) says happened.

Every error answer of both services is ``{"type": "urn:deniable:problem:<kind>", "title",
"status", "detail"}`` (docs/api.md, "Errors").  ``detail`` is for people and may change
with any release; a program acts on ``type`` alone, so each condition a client must act
on has a kind of its own: ``survey-closed`` (drop what is held for the survey),
``unknown-key`` (seal the same reports to the aggregator's current encryption key and
send once more), ``already-delivered`` (count the submission as delivered).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..errors import InvalidJson

__all__ = ["TYPE_PREFIX", "Problem", "ProblemType"]

TYPE_PREFIX = "urn:deniable:problem:"


class ProblemType(StrEnum):
    """Every problem kind either service answers with; the value is the URN's last part."""

    INVALID_JSON = "invalid-json"
    INVALID_PARAMETER = "invalid-parameter"
    BAD_REQUEST = "bad-request"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not-found"
    METHOD_NOT_ALLOWED = "method-not-allowed"
    NOT_ACCEPTABLE = "not-acceptable"
    CONFLICT = "conflict"
    SURVEY_CLOSED = "survey-closed"
    UNKNOWN_KEY = "unknown-key"
    ALREADY_DELIVERED = "already-delivered"
    PAYLOAD_TOO_LARGE = "payload-too-large"
    URI_TOO_LONG = "uri-too-long"
    UNSUPPORTED_MEDIA_TYPE = "unsupported-media-type"
    INVALID_REPORT = "invalid-report"
    INVALID_SURVEY = "invalid-survey"
    INVALID_VALUE = "invalid-value"
    INVALID_SEALED = "invalid-sealed"
    RATE_LIMITED = "rate-limited"
    HEADERS_TOO_LARGE = "headers-too-large"
    INTERNAL = "internal"
    STORAGE_UNAVAILABLE = "storage-unavailable"

    @property
    def uri(self) -> str:
        """``urn:deniable:problem:<kind>``, the problem document's ``type``."""
        return TYPE_PREFIX + self.value

    @classmethod
    def of(cls, document: object) -> ProblemType | None:
        """The kind of a parsed problem document, or None (not a problem of ours, or a
        kind this version does not know: a client treats it by its status alone)."""
        kind = document.get("type") if isinstance(document, Mapping) else None
        if not isinstance(kind, str) or not kind.startswith(TYPE_PREFIX):
            return None
        try:
            return cls(kind[len(TYPE_PREFIX) :])
        except ValueError:
            return None


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One problem document (RFC 9457).  ``kind`` is None for a type this version does
    not know (kept as ``type``), which a reader treats by ``status`` alone."""

    type: str
    title: str
    status: int
    detail: str

    @property
    def kind(self) -> ProblemType | None:
        return ProblemType.of({"type": self.type})

    @classmethod
    def of(cls, kind: ProblemType, *, title: str, status: int, detail: str) -> Problem:
        return cls(type=kind.uri, title=title, status=status, detail=detail)

    @classmethod
    def parse(cls, document: object) -> Problem:
        """A parsed problem document: an object with the four members (others ignored,
        as RFC 9457 §3.2 allows extensions); InvalidJson otherwise."""
        if not isinstance(document, Mapping):
            raise InvalidJson("problem: must be an object", reason="not-problem")
        members = {"type": str, "title": str, "status": int, "detail": str}
        for name, kind in members.items():
            value = document.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise InvalidJson(
                    f"problem: {name} must be a {kind.__name__}", reason="not-problem"
                )
        return cls(
            type=document["type"],
            title=document["title"],
            status=document["status"],
            detail=document["detail"],
        )

    def encode(self) -> bytes:
        """The body both services send (``json.dumps`` defaults: ASCII, ``", "``)."""
        body: dict[str, Any] = {
            "type": self.type,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        return json.dumps(body).encode("ascii")
