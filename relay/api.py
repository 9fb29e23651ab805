"""The relay's HTTP API: sealed submissions in, health out.

``POST /api/v1/surveys/<survey_id>/sealed`` takes one respondent's sealed
submission (docs/protocol.md, "Relay flow")::

    {"format": "deniable.sealed/1", "key_id": "...",
     "units": [{"unit": "<question id, or '' for a whole submission>",
                "sealed": "<base64url of enc || ciphertext>"}, ...],
     "enrolment_token": "..."}            (only for surveys that require enrolment)

and answers ``202 Accepted`` once every unit is held durably.  Order of
refusals: rate limit by address (429), survey not relayed here (404), body
(400/413/415), closed (409), malformed submission (422), oversize unit (413),
enrolment token missing (401), unknown or spent (403), rate limit by token (429).

The request's address is used for the rate limit only, in memory or Redis
under the limiter's moving window, and is never stored or logged; nothing
else of the request (headers, time) reaches storage.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections import OrderedDict
from typing import Any

from flask import Blueprint, Flask, Response, current_app

from deniable import __version__
from deniable.aggregator.problems import EnrolmentRequired, read_json
from deniable.aggregator.ratelimit import check_submission_address, current_limits
from deniable.errors import Conflict, Forbidden, InvalidReport, NotFound, PayloadTooLarge
from deniable.survey import IDENTIFIER, Survey

from .storage import RelayedSurvey, current_storage

PREFIX = "/api/v1"
FORMAT = "deniable.sealed/1"
FIELDS = frozenset({"format", "key_id", "units", "enrolment_token"})
UNIT_FIELDS = frozenset({"unit", "sealed"})
# An X25519 encapsulated key (32 bytes) and an AES-GCM tag (16 bytes): the least a unit holds.
MIN_SEALED_BYTES = 48
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")

blueprint = Blueprint("relay", __name__)
_surveys: OrderedDict[tuple[str, str], Survey] = OrderedDict()
_surveys_lock = threading.Lock()


def definition(stored: RelayedSurvey) -> Survey:
    """The stored signed document's survey (parsed once per document)."""
    key = (stored.survey_id, stored.document)
    with _surveys_lock:
        if key in _surveys:
            return _surveys[key]
    survey = Survey.from_dict(json.loads(stored.document)["definition"], resolved=True)
    with _surveys_lock:
        _surveys[key] = survey
        while len(_surveys) > 256:
            _surveys.popitem(last=False)
    return survey


def _decode(text: object, where: str, limit: int) -> bytes:
    if not isinstance(text, str) or not text:
        raise InvalidReport(f"{where}: must be a non-empty base64url string")
    if len(text) > 2 * limit:  # checked before decoding: no work for an absurd string
        raise PayloadTooLarge(f"{where}: larger than {limit} bytes")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidReport(f"{where}: not base64url") from None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != text.rstrip("="):
        raise InvalidReport(f"{where}: not canonical base64url")
    if len(raw) > limit:
        raise PayloadTooLarge(f"{where}: {len(raw)} bytes, larger than {limit}")
    if len(raw) < MIN_SEALED_BYTES:
        raise InvalidReport(f"{where}: {len(raw)} bytes cannot be a sealed unit")
    return raw


def parse_sealed(
    body: Any, survey: Survey, shuffle_unit: str, limit: int
) -> list[tuple[str, bytes]]:
    """The submission's (unit, sealed bytes), checked against the survey's signed terms."""
    if not isinstance(body, dict):
        raise InvalidReport("body: must be an object")
    extra = set(body) - FIELDS
    if extra:
        raise InvalidReport(f"body: unknown field(s) {', '.join(sorted(map(str, extra)))}")
    if body.get("format") != FORMAT:
        raise InvalidReport(f"body: format must be {FORMAT!r}")
    key_id = body.get("key_id")
    if not isinstance(key_id, str) or not KEY_ID.fullmatch(key_id):
        raise InvalidReport("body: key_id must be the aggregator's encryption key id")
    units = body.get("units")
    if not isinstance(units, list) or not units:
        raise InvalidReport("body: units must be a non-empty list")
    if shuffle_unit == "submission":
        allowed, most = {""}, 1
    else:
        allowed, most = {q.id for q in survey.questions}, len(survey.questions)
    if len(units) > most:
        raise InvalidReport(f"body: one respondent sends at most {most} unit(s), got {len(units)}")
    seen: set[str] = set()
    result = []
    for index, item in enumerate(units):
        where = f"units[{index}]"
        if not isinstance(item, dict) or set(item) != UNIT_FIELDS:
            raise InvalidReport(f"{where}: must have exactly the fields sealed and unit")
        unit = item["unit"]
        if not isinstance(unit, str) or unit not in allowed:
            expected = "'' (this survey shuffles whole submissions)" if shuffle_unit == \
                "submission" else "a question id of the survey"  # fmt: skip
            raise InvalidReport(f"{where}: unit must be {expected}")
        if unit in seen:
            raise InvalidReport(f"{where}: unit {unit!r} appears twice; one respondent sends "
                                "one sealed unit per question")  # fmt: skip
        seen.add(unit)
        result.append((unit, _decode(item["sealed"], f"{where}.sealed", limit)))
    return result


@blueprint.post("/surveys/<survey_id>/sealed")
def submit(survey_id: str) -> Response:
    """Hold one respondent's sealed units; 202 once durable."""
    check_submission_address()
    storage = current_storage()
    stored = storage.get_survey(survey_id)
    body = read_json()
    if not stored.is_open:
        raise Conflict(f"survey {survey_id!r} is closed")
    survey = definition(stored)
    units = parse_sealed(body, survey, stored.shuffle_unit, current_app.config["MAX_SEALED_BYTES"])
    token = None
    if stored.require_enrolment:
        token = body.get("enrolment_token")
        if not isinstance(token, str) or not token.strip():
            raise EnrolmentRequired(f"survey {survey_id!r} requires an enrolment token "
                                    "(field enrolment_token)")  # fmt: skip
        if len(token) > 200:
            raise Forbidden(f"the enrolment token is not valid for survey {survey_id!r}")
        current_limits().check_token(token)
    storage.hold(survey_id, units, enrolment_token=token)
    return current_app.response_class(
        json.dumps({"survey": survey_id, "held": len(units)}), status=202,
        mimetype="application/json")  # fmt: skip


@blueprint.get("/health")
def health() -> Response:
    """Ok when the database answers (503 otherwise)."""
    storage = current_storage()
    storage.ping()
    return current_app.response_class(
        json.dumps({"status": "ok", "service": "relay", "storage": storage.backend,
                    "version": __version__}), mimetype="application/json")  # fmt: skip


def _check_survey_id(endpoint: str | None, values: dict[str, Any] | None) -> None:
    survey_id = (values or {}).get("survey_id")
    if survey_id is not None and not IDENTIFIER.fullmatch(survey_id):
        raise NotFound(f"no survey {survey_id[:80]!r}")


def init_app(app: Flask) -> None:
    app.register_blueprint(blueprint, url_prefix=PREFIX)
    app.url_value_preprocessor(_check_survey_id)
