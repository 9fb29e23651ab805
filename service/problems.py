"""Every error response, in one place: RFC 9457 ``application/problem+json``.

:data:`PROBLEMS` maps each :class:`~deniable.errors.DeniableError` class to one
status and problem type (docs/api.md); HTTP errors raised by Flask/werkzeug
(unknown route, wrong method, body too large, ...) get the same shape, and a
catch-all turns any other exception into a 500 ``internal`` problem that is
logged on the server but never shows a traceback to the caller.

:func:`read_json` reads request bodies: it rejects bodies that are not
``application/json``, then parses them with the one strict JSON reader
(:func:`deniable.wire.strict_json.loads`: not UTF-8, not JSON, NaN/Infinity, duplicate
keys, absurd nesting, numbers too large to represent, lone surrogates).
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from deniable.errors import (
    AlreadyDelivered,
    AuthenticationError,
    Conflict,
    DeniableError,
    Forbidden,
    InvalidJson,
    InvalidParameter,
    InvalidReport,
    InvalidSurvey,
    InvalidValue,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    SealingError,
    StorageError,
    SurveyClosed,
    UnknownKey,
)
from deniable.survey_checks import CONTROL
from deniable.wire import ProblemType
from deniable.wire.strict_json import loads as parse_json

from .settings import SettingsError

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:deniable:problem:"

logger = logging.getLogger(__name__)


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
    (SurveyClosed, 409, ProblemType.SURVEY_CLOSED, "Survey closed"),
    (UnknownKey, 409, ProblemType.UNKNOWN_KEY, "Unknown encryption key"),
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


def printable(text: str) -> str:
    """``text`` with every C0 and C1 control character and DEL (the core's ``CONTROL``) as a
    visible escape (``\\x0a``): never echoed raw into a problem body or a log line.

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
