"""The relay's HTTP API: sealed submissions in, health out.

``POST /api/v1/surveys/<survey_id>/flush`` (the aggregator's signed request before it
closes a survey, :mod:`deniable.relay_flush`) forms and forwards at once every batch of
at least ``min_batch`` units, and answers with the counts and what is left waiting; at
most ``FLUSH_LIMIT`` times per survey (409 after that).
``POST /api/v1/surveys/<survey_id>/held`` (the aggregator's signed request, as a flush's)
answers with the respondents whose answers wait for a batch, as of the survey's last
snapshot (:mod:`.held_count`, :class:`deniable.relay_held.HeldCount`).

``POST /api/v1/surveys/<survey_id>/sealed`` takes one respondent's sealed
submission (docs/protocol.md, "Relay flow")::

    {"format": "deniable.sealed/1", "key_id": "...",
     "units": [{"unit": "<question id, or '' for a whole submission>",
                "sealed": "<base64url of enc || ciphertext>"}, ...],
     "enrolment_token": "..."}            (only for surveys that require enrolment)

and answers ``202 Accepted`` once every unit is held durably.  Order of
refusals: rate limit by address (429), survey not relayed here (404), body
(400/413/415), closed (409 ``survey-closed``), malformed submission (422; units not exactly
one per question in the survey's order among them), a unit longer than
its fixed sealed length (413) or of another length (422), sealed to an
encryption key the relay has not verified as the aggregator's current one or
one it retired since (409 ``unknown-key``), enrolment token missing (401), unknown or spent by
another submission still held (403), rate limit by token (429), spent by a
submission forwarded since (409 ``already-delivered``: clients count it delivered).

An ``enrolment_token`` on a survey that does not require enrolment is ignored: neither
checked, spent, counted nor kept.  The request's address and enrolment token are used
for the rate limits only,
counted under an HMAC pseudonym (:func:`pseudonym`) in memory or Redis for the
limiter's moving window, and are never stored or logged in the clear; nothing
else of the request (headers, time) reaches storage.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import threading
import time
from collections import OrderedDict
from typing import Any

from flask import Blueprint, Flask, Response, current_app, request

from deniable import __version__
from deniable.errors import (
    AlreadyDelivered,
    Conflict,
    DeniableError,
    Forbidden,
    InvalidReport,
    NotFound,
    SurveyClosed,
    UnknownKey,
)
from deniable.service.limits import current_limits
from deniable.service.problems import EnrolmentRequired, read_json
from deniable.survey import IDENTIFIER, Survey
from deniable.wire import SealedSubmission

from .storage import RelayedSurvey, RelayStorage, current_storage

__all__ = ["blueprint", "init_app"]

PREFIX = "/api/v1"
PSEUDONYM_KEY = "deniable.relay.pseudonym_key"
# Why: a device may have fetched a key the aggregator rotated in since the relay's last
# refresh; an unknown key id makes the relay ask the aggregator again, at most this often
# per survey and process (so a flood of made-up ids costs the aggregator nothing much).
KEY_RECHECK_SECONDS = 5.0
KEY_RECHECK_TIMEOUT = 5.0

logger = logging.getLogger("deniable.relay.api")

blueprint = Blueprint("relay", __name__)
_surveys: OrderedDict[tuple[str, str], tuple[Survey, dict[str, int]]] = OrderedDict()
_surveys_lock = threading.Lock()
_key_checks: dict[str, float] = {}
_key_checks_lock = threading.Lock()


def definition(stored: RelayedSurvey) -> tuple[Survey, dict[str, int]]:
    """The stored signed document's survey and the exact sealed length of each unit
    (:func:`deniable.sealing.sealed_length`), computed once per document."""
    from deniable.sealing import sealed_length, unit_size

    key = (stored.survey_id, stored.document)
    with _surveys_lock:
        if key in _surveys:
            return _surveys[key]
    survey = Survey.from_dict(json.loads(stored.document)["definition"], resolved=True)
    units = [""] if stored.shuffle_unit == "submission" else [q.id for q in survey.questions]
    lengths = {unit: sealed_length(unit_size(survey, unit)) for unit in units}
    with _surveys_lock:
        _surveys[key] = (survey, lengths)
        while len(_surveys) > 256:
            _surveys.popitem(last=False)
    return survey, lengths


def check_key(storage: RelayStorage, stored: RelayedSurvey, key_id: str) -> None:
    """Conflict unless ``key_id`` is an encryption key of the aggregator that the relay
    verified in its signed key document: the current one, or one retired since (the
    aggregator still opens those, :data:`deniable.keychain.RETIRED_ENCRYPTION_KEYS`).
    A unit sealed to any other key could never be opened: refused here, not dropped there."""
    if key_id in stored.encryption_keys:
        return
    now = time.monotonic()
    with _key_checks_lock:
        due = now - _key_checks.get(stored.survey_id, -math.inf) >= KEY_RECHECK_SECONDS
        if due:
            _key_checks[stored.survey_id] = now
    if due:
        from .forwarder import refresh

        config = {
            **current_app.config,
            "FORWARD_TIMEOUT": min(current_app.config["FORWARD_TIMEOUT"], KEY_RECHECK_TIMEOUT),
        }
        try:
            refresh(storage, config, stored.survey_id)
        except DeniableError as error:
            logger.warning(
                "survey %s: checking the aggregator's encryption key failed: %s",
                stored.survey_id,
                error,
            )
        else:
            if key_id in storage.get_survey(stored.survey_id).encryption_keys:
                return
    raise UnknownKey(
        f"the units are sealed to encryption key {key_id!r}, which is not the "
        f"aggregator's current encryption key (nor one it retired recently); fetch "
        f"{stored.aggregator_url}/api/v1/key again and seal to its encryption_key"
    )


def check_address() -> None:
    """429 if this client address used up its submissions; it is counted under a pseudonym.

    Why: the limiter's counts live in memory or in a shared Redis for a moving window;
    keyed by HMAC-SHA256 of the address under a secret of this relay's database, they
    never hold an address (the exempt networks are judged on the address itself).
    """
    limits = current_limits()
    if limits.per_address is None:
        return
    forwarded = request.headers.get("X-Forwarded-For") if limits.trust_proxy else None
    address = limits.client_address(request.remote_addr, forwarded)
    if limits.is_exempt(address):
        return
    counted = limits.limit_key(address)  # an IPv6 address counts as its /64, as at the aggregator
    limits.check_address(pseudonym(counted))


def pseudonym(text: str) -> str:
    """HMAC-SHA256 of ``text`` under this relay's secret: what the rate limiter counts.

    Why for tokens too: the limiter's own key for a token is SHA-256 of it, which is
    the digest the aggregator stores for every token it issued (and knows whom it gave
    it to); with the moving window's hit times, a shared Redis would hold when each
    enrolled person submitted, readable by the aggregator."""
    key = current_app.extensions[PSEUDONYM_KEY]
    return hmac.new(key, text.encode("utf-8", "replace"), hashlib.sha256).hexdigest()


@blueprint.post("/surveys/<survey_id>/sealed")
def submit(survey_id: str) -> Response:
    """Hold one respondent's sealed units; 202 once durable."""
    check_address()
    storage = current_storage()
    stored = storage.get_survey(survey_id)
    body = read_json()
    if not stored.is_open:
        raise SurveyClosed(f"survey {survey_id!r} is closed")
    _, lengths = definition(stored)
    submission = SealedSubmission.parse(body, lengths)  # the signed terms: units, lengths
    if [unit.unit for unit in submission.units] != list(lengths):
        # Why: a submission missing a unit would stand out in its batches by what it lacks,
        # and one spelling per submission keeps every client's requests alike (§10.5).
        raise InvalidReport(
            "body: units must be one per question, in the survey's question order: "
            + ", ".join(map(repr, lengths))
        )
    check_key(storage, stored, submission.key_id)
    token = None
    if stored.require_enrolment:
        token = submission.enrolment_token
        if token is None or not token.strip():
            raise EnrolmentRequired(
                f"survey {survey_id!r} requires an enrolment token (field enrolment_token)"
            )
        if len(token) > 200:
            raise Forbidden(f"the enrolment token is not valid for survey {survey_id!r}")
        current_limits().check_token(pseudonym(token))
    units = [(unit.unit, unit.sealed) for unit in submission.units]
    try:
        storage.hold(survey_id, units, enrolment_token=token, key_id=submission.key_id)
    except AlreadyDelivered:
        raise
    except Conflict:
        # Why: the hold's transaction refuses a survey closed since the check above with a
        # plain Conflict; the device must learn it by the problem type, not the words.
        if not storage.get_survey(survey_id).is_open:
            raise SurveyClosed(f"survey {survey_id!r} is closed") from None
        raise
    return current_app.response_class(
        json.dumps({"survey": survey_id, "held": len(units)}),
        status=202,
        mimetype="application/json",
    )


@blueprint.post("/surveys/<survey_id>/flush")
def flush(survey_id: str) -> Response:
    """Form and forward every batch ``min_batch`` allows now (the aggregator's signed request,
    :mod:`deniable.relay_flush`); the counts, and the units left waiting per unit."""
    from .flushing import flush as flush_survey

    check_address()
    storage = current_storage()
    storage.get_survey(survey_id)  # 404 first: a survey not relayed here
    counts = flush_survey(storage, current_app.config, survey_id, read_json())
    return current_app.response_class(json.dumps(counts), mimetype="application/json")


@blueprint.post("/surveys/<survey_id>/held")
def held(survey_id: str) -> Response:
    """The respondents whose answers wait for a batch, as of the last snapshot (the
    aggregator's signed request, :mod:`deniable.relay_flush`)."""
    from .held_count import held_count

    check_address()
    storage = current_storage()
    storage.get_survey(survey_id)  # 404 first: a survey not relayed here
    count = held_count(storage, current_app.config, survey_id, read_json())
    return current_app.response_class(json.dumps(count.to_dict()), mimetype="application/json")


@blueprint.get("/health")
def health() -> Response:
    """Ok when the database answers (503 otherwise)."""
    storage = current_storage()
    storage.ping()
    return current_app.response_class(
        json.dumps(
            {"status": "ok", "service": "relay", "storage": storage.backend, "version": __version__}
        ),
        mimetype="application/json",
    )


def _check_survey_id(endpoint: str | None, values: dict[str, Any] | None) -> None:
    survey_id = (values or {}).get("survey_id")
    if survey_id is not None and not IDENTIFIER.fullmatch(survey_id):
        raise NotFound(f"no survey {survey_id[:80]!r}")


def init_app(app: Flask) -> None:
    from .storage import EXTENSION

    app.extensions[PSEUDONYM_KEY] = app.extensions[EXTENSION].secret("rate-limit-pseudonyms")
    app.register_blueprint(blueprint, url_prefix=PREFIX)
    app.url_value_preprocessor(_check_survey_id)
