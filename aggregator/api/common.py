"""Helpers every blueprint shares: operator authentication and survey documents."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from flask import Response, current_app, request

from deniable import __version__
from deniable.errors import AuthenticationError, Forbidden, InvalidParameter, NotFound
from deniable.survey import IDENTIFIER

from ..signing import current_key
from ..storage import SurveyRecord, current_storage

__all__ = [
    "MAX_SURVEYS_PER_PAGE",
    "SURVEYS_PER_PAGE",
    "VERSION",
    "bearer_token",
    "check_survey_id",
    "choice_parameter",
    "is_operator",
    "json_response",
    "json_text",
    "page_parameters",
    "require_operator",
    "require_unscoped_operator",
    "survey_document",
    "published_reports",
    "survey_summary",
]

VERSION = __version__


def check_survey_id(endpoint: str | None, values: dict[str, Any] | None) -> None:
    """404 for a ``survey_id`` in the URL that no survey can have, before any storage call.

    Why: such ids (a NUL byte, say) can only be refused; some drivers refuse them
    with a data error that looked like an outage (503).
    """
    if endpoint is not None and endpoint.startswith("dashboard."):
        return  # the dashboard answers with its own HTML page
    survey_id = (values or {}).get("survey_id")
    if survey_id is not None and not IDENTIFIER.fullmatch(survey_id):
        raise NotFound(f"no survey {survey_id[:80]!r}")


def bearer_token() -> str | None:
    """The bearer token of the request, or None if there is none."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_operator() -> bool:
    """True if the request carries an operator token valid here (Forbidden if a wrong one).

    A token limited to some surveys is valid only on routes of one of them (the
    ``survey_id`` in the URL); on a route that concerns no one survey (creating
    surveys, metrics) only an unlimited token is.
    """
    token = bearer_token()
    if token is None:
        return False
    found = current_storage().find_operator_token(token)
    if found is None:
        raise Forbidden("the bearer token is not a valid operator token")
    survey_id = (request.view_args or {}).get("survey_id")
    if not found.may_act_on(survey_id):
        where = f"survey {survey_id!r}" if survey_id else "this request"
        raise Forbidden(
            f"this operator token is limited to surveys "
            f"{', '.join(found.surveys or ())}; it cannot act on {where}"
        )
    return True


def require_operator() -> None:
    """401 without a bearer token, 403 with a wrong one or one limited to other surveys."""
    if not is_operator():
        raise AuthenticationError("this request needs an operator token (Authorization: Bearer)")


def require_unscoped_operator() -> None:
    """As :func:`require_operator`, for routes that concern no one survey."""
    require_operator()


def _plain(value: Any) -> Any:
    # Why: numpy scalars are not JSON, and NaN/Infinity would make the body invalid JSON.
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def json_text(document: Any) -> str:
    """JSON text of plain data (numpy values converted, non-finite → null)."""
    try:
        # Most documents are plain already; converting 1,000 acknowledged ids is wasted work.
        return json.dumps(document, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return json.dumps(_plain(document), ensure_ascii=False, allow_nan=False)


def json_response(document: Any, status: int = 200) -> Response:
    """A JSON response from plain data (numpy values converted, non-finite → null)."""
    return current_app.response_class(
        json_text(document), status=status, mimetype="application/json"
    )


def survey_summary(record: SurveyRecord, *, operator: bool = False) -> dict[str, Any]:
    """One entry of ``GET /surveys``.

    The report count of a survey with private results is shown to operators
    only (null otherwise): polling it would time each submission.
    """
    shown = record.results_public or operator
    return {
        "id": record.id,
        "title": record.survey.title,
        "status": record.status,
        "results_public": record.results_public,
        "require_enrolment": record.require_enrolment,
        "total_epsilon": record.survey.total_epsilon,
        "n_reports": published_reports(record) if shown else None,
        "created_at": record.created_at,
        "closed_at": record.closed_at,
    }


def published_reports(record: SurveyRecord) -> int | None:
    """The survey's reports as its results publish them: a noised survey's real reports,
    the dummies its relay added taken out (one number everywhere); None when not counted."""
    from ..relay_noise import real_reports

    relay = getattr(record.survey, "relay", None)
    if relay is None or relay.noise is None or record.n_reports is None:
        return record.n_reports
    return real_reports(record, current_storage().relay.batch_summary(record.id))


def survey_document(record: SurveyRecord) -> dict[str, Any]:
    """The signed survey document of ``GET /surveys/{id}`` (a :class:`SurveyEnvelope`)."""
    from deniable.wire import SurveyEnvelope

    key = current_key()
    return SurveyEnvelope(
        id=record.id,
        status=record.status,
        results_public=record.results_public,
        require_enrolment=record.require_enrolment,
        created_at=record.created_at,
        closed_at=record.closed_at,
        definition=record.survey.to_dict(),
        signature=key.sign(record.survey.canonical_bytes()),
        key_id=key.key_id,
    ).to_dict()


SURVEYS_PER_PAGE = 50
MAX_SURVEYS_PER_PAGE = 200


def page_parameters() -> tuple[int, int]:
    """``(page, limit)`` from ``?page=`` (1-based) and ``?limit=`` (400 if malformed)."""
    values = []
    for name, default, most in (
        ("page", 1, 1_000_000),
        ("limit", SURVEYS_PER_PAGE, MAX_SURVEYS_PER_PAGE),
    ):
        text = request.args.get(name, str(default))
        if not (text.isascii() and text.isdigit() and 1 <= int(text) <= most):
            raise InvalidParameter(f"{name} must be an integer in [1, {most}], got {text[:40]!r}")
        values.append(int(text))
    return values[0], values[1]


def choice_parameter(name: str, allowed: tuple[str, ...], default: str) -> str:
    """A query parameter restricted to ``allowed`` (400 invalid-parameter otherwise)."""
    value = request.args.get(name, default)
    if value not in allowed:
        raise InvalidParameter(f"{name} must be one of {', '.join(allowed)}, got {value[:40]!r}")
    return value
