"""Every error response, in one place: RFC 9457 ``application/problem+json``.

:data:`PROBLEMS` maps each :class:`~deniable.errors.DeniableError` class to one
status and problem type (docs/api.md); HTTP errors raised by Flask/werkzeug
(unknown route, wrong method, body too large, ...) get the same shape, and a
catch-all turns any other exception into a 500 ``internal`` problem that is
logged on the server but never shows a traceback to the caller.

:func:`read_json` is the one strict JSON reader of request bodies: it rejects
bodies that are not ``application/json``, not UTF-8, not JSON, or that use
NaN/Infinity, duplicate keys, absurd nesting or numbers too large to represent.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from deniable.errors import (
    AlreadyDelivered,
    AuthenticationError,
    Conflict,
    DeniableError,
    Forbidden,
    InvalidParameter,
    InvalidReport,
    InvalidSurvey,
    InvalidValue,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    SealingError,
    StorageError,
)

from .settings import SettingsError

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:deniable:problem:"

logger = logging.getLogger(__name__)


class InvalidJson(DeniableError, ValueError):
    """A request body is not strict JSON (HTTP 400 ``invalid-json``)."""


class UnsupportedMediaType(DeniableError):
    """A request body is not ``application/json`` (HTTP 415)."""


class EnrolmentRequired(AuthenticationError):
    """A survey that requires enrolment got no token (HTTP 401, challenge ``Enrolment``)."""


# Most specific first: Forbidden before its parent AuthenticationError.
PROBLEMS: tuple[tuple[type[BaseException], int, str, str], ...] = (
    (InvalidJson, 400, "invalid-json", "Invalid JSON"),
    (InvalidParameter, 400, "invalid-parameter", "Invalid parameter"),
    (Forbidden, 403, "forbidden", "Forbidden"),
    (AuthenticationError, 401, "unauthorized", "Unauthorized"),
    (NotFound, 404, "not-found", "Not found"),
    (AlreadyDelivered, 409, "already-delivered", "Already delivered"),
    (Conflict, 409, "conflict", "Conflict"),
    (PayloadTooLarge, 413, "payload-too-large", "Payload too large"),
    (UnsupportedMediaType, 415, "unsupported-media-type", "Unsupported media type"),
    (InvalidReport, 422, "invalid-report", "Invalid report"),
    (InvalidSurvey, 422, "invalid-survey", "Invalid survey"),
    (InvalidValue, 422, "invalid-value", "Invalid value"),
    (SealingError, 422, "invalid-sealed", "Sealed report does not open"),
    (RateLimited, 429, "rate-limited", "Too many requests"),
    (StorageError, 503, "storage-unavailable", "Storage unavailable"),
    (SettingsError, 500, "internal", "Internal error"),
)

# Problem types for statuses werkzeug raises on its own.
HTTP_TYPES: dict[int, tuple[str, str]] = {
    400: ("invalid-json", "Bad request"),
    401: ("unauthorized", "Unauthorized"),
    403: ("forbidden", "Forbidden"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    406: ("not-acceptable", "Not acceptable"),
    409: ("conflict", "Conflict"),
    413: ("payload-too-large", "Payload too large"),
    414: ("uri-too-long", "URI too long"),
    415: ("unsupported-media-type", "Unsupported media type"),
    429: ("rate-limited", "Too many requests"),
    431: ("headers-too-large", "Request headers too large"),
    503: ("storage-unavailable", "Service unavailable"),
}

# Deeper than this, a survey or report body is an attack, not data.
MAX_JSON_DEPTH = 64
# C0 and C1 control characters and DEL: never echoed raw into a problem body or a log line.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character as a visible escape (``\\x0a``).

    Why: a ``%0A`` in a path once forged a log line; a terminal that prints a
    problem's detail must not receive escape sequences either.
    """
    return CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def problem(
    status: int, kind: str, title: str, detail: str, headers: dict[str, str] | None = None
) -> Response:
    """One problem+json response."""
    body = {
        "type": TYPE_PREFIX + kind,
        "title": title,
        "status": status,
        "detail": printable(detail),
    }
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_MEDIA_TYPE)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def classify(error: BaseException) -> tuple[int, str, str]:
    """(status, type suffix, title) of a Deniable error."""
    for cls, status, kind, title in PROBLEMS:
        if isinstance(error, cls):
            return status, kind, title
    return 500, "internal", "Internal error"


def _deniable_error(error: DeniableError) -> Response:
    status, kind, title = classify(error)
    headers = {}
    if isinstance(error, RateLimited):
        headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    if isinstance(error, EnrolmentRequired):
        headers["WWW-Authenticate"] = 'Enrolment realm="deniable"'
    elif isinstance(error, AuthenticationError) and not isinstance(error, Forbidden):
        headers["WWW-Authenticate"] = 'Bearer realm="deniable"'
    if isinstance(error, StorageError):
        # Why: the real database message may name hosts or schemas; log it, say less.
        logger.error(
            "storage error on %s %s: %s",
            request.method,
            printable(request.path),
            printable(str(error)),
        )
        headers["Retry-After"] = "1"
        return problem(status, kind, title, "the database is unavailable; retry later", headers)
    if status == 500:
        logger.error("misconfiguration: %s", printable(str(error)))
        return problem(500, kind, title, "internal server error")
    return problem(status, kind, title, str(error), headers)


def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    kind, title = HTTP_TYPES.get(status, ("internal" if status >= 500 else "bad-request", ""))
    title = title or error.name
    headers = {}
    if status == 405 and error.valid_methods:  # type: ignore[attr-defined]
        headers["Allow"] = ", ".join(sorted(error.valid_methods))  # type: ignore[attr-defined]
    detail = error.description or title
    if status == 404:
        detail = f"no such resource: {request.path}"
    elif status == 413:
        detail = "request body is larger than the configured limit"
    return problem(status, kind, title, detail, headers)


def _unexpected(error: Exception) -> Response:
    if isinstance(error, HTTPException):
        return _http_error(error)
    if isinstance(error, DeniableError):
        return _deniable_error(error)
    logger.exception("unhandled error on %s %s", request.method, printable(request.path))
    return problem(500, "internal", "Internal error", "internal server error")


def init_app(app: Flask) -> None:
    """Register the handlers; after this every error response is problem+json."""
    app.register_error_handler(DeniableError, _deniable_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)


# -- strict request bodies ------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise InvalidJson(f"body: {name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidJson(f"body: number {text[:40]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)  # Why: built in C; a duplicate shows as a shorter dict
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidJson(f"body: duplicate key {key[:80]!r}")
            seen.add(key)
    return result


_CONTAINERS = (dict, list)
_CONTAINER_TYPES = frozenset(_CONTAINERS)


def _too_deep(document: Any, limit: int) -> bool:
    """True if containers nest deeper than ``limit`` (level by level, no recursion).

    The walk visits containers only, so a batch of flat reports costs one step
    per report; json.loads itself already refuses nesting beyond Python's
    recursion limit (RecursionError), which bounds this walk too.
    """
    level = [document] if type(document) in _CONTAINERS else []
    for _ in range(limit):
        if not level:
            return False
        deeper = []
        for value in level:
            # json.loads makes exactly dict and list.
            children = value.values() if type(value) is dict else value
            # Why isdisjoint first: a flat object (a report) is ruled out in C.
            if not _CONTAINER_TYPES.isdisjoint(map(type, children)):
                deeper += [c for c in children if type(c) in _CONTAINERS]
        level = deeper
    return bool(level)


def parse_json(data: bytes) -> Any:
    """Strictly parse a JSON document from bytes; InvalidJson on anything doubtful."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidJson(f"body: not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        document = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            object_pairs_hook=_unique_keys,
        )
    except InvalidJson:
        raise
    except (ValueError, RecursionError) as error:
        # ValueError covers JSONDecodeError and integers past the digit limit.
        raise InvalidJson(f"body: not valid JSON ({str(error)[:200]})") from None
    if _too_deep(document, MAX_JSON_DEPTH):
        raise InvalidJson(f"body: nested deeper than {MAX_JSON_DEPTH} levels")
    if "\\u" in text:
        _check_unicode(document)
    return document


def _check_unicode(value: Any) -> None:
    """Reject lone surrogates (``"\\ud800"``): legal JSON escapes, but not text (RFC 7493)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidJson("body: string with a lone surrogate escape") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key)
            _check_unicode(item)
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item)


def read_json() -> Any:
    """The current request's body as strict JSON (415 unless ``application/json``)."""
    if request.mimetype != "application/json":
        shown = request.mimetype or "none"
        raise UnsupportedMediaType(f"body must be application/json, got {shown}")
    data = request.get_data(cache=True)  # 413 past MAX_CONTENT_LENGTH with a Content-Length
    limit = request.max_content_length
    if request.content_length is None and limit is not None and len(data) >= limit:
        # Why: werkzeug stops a chunked body at the limit without an error, which
        # would hand us a silently truncated document.
        raise PayloadTooLarge(f"body: larger than the {limit}-byte limit")
    return parse_json(data)


__all__ = [
    "MAX_JSON_DEPTH",
    "PROBLEMS",
    "PROBLEM_MEDIA_TYPE",
    "TYPE_PREFIX",
    "EnrolmentRequired",
    "InvalidJson",
    "UnsupportedMediaType",
    "classify",
    "init_app",
    "parse_json",
    "printable",
    "problem",
    "read_json",
]
