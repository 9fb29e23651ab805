"""Batches from the survey's relay: sealed reports, shuffled, many respondents at once.

``PUT /api/v1/surveys/<survey_id>/batches/<batch_id>`` (docs/protocol.md,
"Relay flow"), with the relay credential as ``Authorization: Bearer``::

    {"format": "deniable.batch/1", "unit": "<question id, or ''>", "sealed": ["<base64url>", ...]}

Order of refusals: credential missing (401) or not a relay credential (403),
survey (404), not relayed (409), credential of another relay than the one the
survey's signed definition names (403), body (400/413/415/422; every blob in its
one canonical spelling, :func:`deniable.sealing.decode_blob`), fewer blobs than
the signed ``min_batch`` (422), batch id stored with other content (409),
closed (409 ``survey-closed``).  A batch id stored before with the same blobs (in any order) is
acknowledged again with the first answer: a relay whose acknowledgement was
lost resends, and nothing is stored twice.  Replaying a batch therefore
stores nothing, and a batch is only taken from the configured relay's
credential.

Each blob is opened with the aggregator's encryption key
(:func:`deniable.sealing.open_sealed`, HPKE ``info`` bound to the survey and
unit) and must hold a valid report of that unit (a question unit: one report
of that question; a submission unit: one respondent's reports).  A blob that
does not open, or opens to an invalid report, is dropped and counted
(``dropped``; results and ``deniable-aggregator relay-batches`` show it),
never stored.  Reports are stored in the forwarded order, all with the
batch's arrival time: nothing per report tells when it was sent.

``stored`` counts the blobs that added someone: at least one of their reports
was stored new by this batch.  A blob whose reports were all stored before with
the same body (sealed twice in the batch, or a replay of a blob already stored,
under another batch id) is acknowledged and adds nobody: it counts in neither
``stored`` nor ``dropped``.  So ``received`` (the batch's blobs) = ``stored`` +
``dropped`` + the blobs that added nobody (+ the blobs not stored because the
survey closed meanwhile).  ``stored`` is the batch size the published central
epsilon of a relayed survey rests on (``smallest_batch``), so it never credits a
batch with respondents an earlier one added.

A large batch is opened and validated in chunks by decryption processes
(:mod:`.opening`) and stored chunk by chunk as the chunks are ready; the batch
is recorded (and acknowledged) only after its last chunk is stored.  A batch
cut short (a crash, a lost connection) is therefore not recorded: the relay
sends it again, and the reports stored the first time are acknowledged again
by their ids, not stored twice; they are in no batch's ``stored`` then (the
aggregator cannot tell them from a replay), which only understates that batch's
size, so its central epsilon errs on the safe side.  A survey closed while a
batch is stored refuses the rest of it: the batch is recorded with what was
stored before (``stored``), or refused whole (409) if nothing was.

A relay that adds dummy reports (the survey's signed ``relay.noise``) sends the batch's
real count, ``real_units``; it is stored with the batch record, with whether the batch's
dummies (``stored - real_units``) are plausible under the signed law
(:func:`deniable.dummies.plausible`, computed once here).  The results publish a batch
without ``real_units``, or with implausible dummies, with the shuffle bound alone.  A
batch with ``real_units`` for a survey whose relay adds no noise is refused (422): its
dummies could not be told from respondents.

``GET /api/v1/surveys/<survey_id>/enrolment-digests`` gives the configured
relay the SHA-256 digests of the survey's unspent enrolment tokens, so the
relay checks and spends tokens and the aggregator never sees one beside a report.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import time
from datetime import datetime
from typing import Any

from flask import Blueprint, Response, current_app, request

from deniable.errors import (
    AuthenticationError,
    Conflict,
    Forbidden,
    InvalidReport,
    SurveyClosed,
)
from deniable.service.problems import read_json
from deniable.service.storage import utc_now
from deniable.wire import Acknowledgement, RelayBatch, Report

from ..storage import SurveyRecord, current_storage
from ..storage import relay as relay_storage
from .common import bearer_token, json_response
from .opening import Opened, decryption_keys, opened_chunks
from .relayed import relay_terms

__all__ = ["blueprint"]

blueprint = Blueprint("batches", __name__)
logger = logging.getLogger(__name__)

BATCH_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
# The batch route as the server sees it before the app runs (any mount prefix).
BATCH_PATH = re.compile(r".*/api/v1/surveys/[^/]+/batches/[^/]+")
# How long the server trusts its list of relay credentials before reading it again.
CREDENTIALS_SECONDS = 1.0


class _CredentialGate:
    """The body limit of a request before its body is read (``deniable.service.serving``):
    ``MAX_RELAY_BATCH_BYTES`` for a PUT to the batch route whose bearer token is an
    unrevoked relay credential, the default for every other request.

    Why here and so: the server buffers a body whole before the app runs, so an anonymous
    request must not be allowed the batch route's size.  The check runs on the server's
    event loop, so it reads the credentials' digests at most once per
    :data:`CREDENTIALS_SECONDS` (one query, however many requests guess), and compares
    in memory.  The app still checks the credential and the survey's relay itself."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.digests: frozenset[str] = frozenset()
        self.read_at = -math.inf

    def __call__(self, method: str, path: str, headers: Any) -> int | None:
        if method != "PUT" or not BATCH_PATH.fullmatch(path):
            return None
        scheme, _, credential = headers.get("AUTHORIZATION", "").partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential.startswith(relay_storage.CREDENTIAL_PREFIX):
            return None
        now = time.monotonic()
        if now - self.read_at >= CREDENTIALS_SECONDS:
            from ..storage import EXTENSION

            self.read_at = now
            self.digests = frozenset(self.app.extensions[EXTENSION].relay.credential_digests())
        if relay_storage.credential_digest(credential) not in self.digests:
            return None
        return int(self.app.config["MAX_RELAY_BATCH_BYTES"])


@blueprint.record_once
def _large_bodies_for_relays(state: Any) -> None:
    from deniable.service.serving import set_body_limit

    set_body_limit(state.app, _CredentialGate(state.app))


def _authorized_relay(record: SurveyRecord) -> Any:
    """The survey's relay terms, once the request's credential is that relay's."""
    credential = bearer_token()
    if credential is None:
        raise AuthenticationError("a batch needs the relay credential (Authorization: Bearer)")
    url = current_storage().relay.credential_url(credential)
    if url is None:
        raise Forbidden("the bearer token is not a valid relay credential")
    relay = relay_terms(record)
    if relay is None:
        raise Conflict(f"survey {record.id!r} is not relayed; it takes no batches")
    if relay_storage.normalized_url(relay.url) != url:
        raise Forbidden(
            f"survey {record.id!r} is relayed by {relay.url}; this credential is another relay's"
        )
    return relay


def content_digest(blobs: list[bytes]) -> str:
    """SHA-256 over the blobs in sorted order: one batch, whatever order it is sent in."""
    digest = hashlib.sha256()
    for blob in sorted(blobs):
        digest.update(len(blob).to_bytes(4, "big"))
        digest.update(blob)
    return digest.hexdigest()


def _add(survey_id: str, groups: list[list[Report]], whole: bool, received_at: datetime) -> int:
    """Store the blobs' reports as the operator would; return how many blobs added someone.

    A whole-submission unit's reports share one submission key per blob (so crosstabs
    join one respondent's answers); per-question units stay loose (``None``): their
    answers cannot be joined, which is what shuffling them apart is for.  A blob adds
    someone if at least one of its reports is stored new; one whose reports were all
    stored before with the same body (a replay) is acknowledged and adds nobody.
    """
    owners = [index if whole else None for index, group in enumerate(groups) for _ in group]
    ids = current_storage().add_reports(
        survey_id,
        [r for group in groups for r in group],
        operator=True,
        respondents=owners,
        received_at=received_at,
    )
    return sum(any(report.id in ids.new for report in group) for group in groups)


def _store(
    survey_id: str, groups: list[list[Report]], whole: bool, received_at: datetime
) -> tuple[int, int]:
    """Store every blob's reports; return how many blobs added someone (``stored``) and how
    many were dropped because a report id was stored before with another body (the rest is
    stored, blob by blob).  Replayed blobs count in neither."""
    try:
        return _add(survey_id, groups, whole, received_at), 0
    except Conflict:
        if not current_storage().get_survey(survey_id, count=False).is_open:
            raise SurveyClosed(f"survey {survey_id!r} is closed") from None
        # else a report id stored before with another body: store the rest blob by blob
    stored = dropped = 0
    for group in groups:
        try:
            stored += _add(survey_id, [group], whole, received_at)
        except Conflict:
            dropped += 1
    return stored, dropped


def _new_groups(
    chunk: list[Opened],
    seen: dict[str, tuple[str, str, str]],
) -> tuple[list[list[Report]], int]:
    """The chunk's blobs that hold reports new to the batch, and how many blobs it drops."""
    groups: list[list[Report]] = []
    dropped = 0
    for opened in chunk:
        if opened is None:  # did not open, or held no valid report of the unit
            dropped += 1
            continue
        known = [report for report in opened if report[0] in seen]
        if known:
            # The same report sealed twice (a device's resend) adds nobody; one id with
            # two bodies is invalid.
            if any(seen[report[0]] != report for report in known):
                dropped += 1
            continue
        for report in opened:
            seen[report[0]] = report
        groups.append([Report(id=i, question=q, payload=p) for i, q, p in opened])
    return groups, dropped


@blueprint.put("/surveys/<survey_id>/batches/<batch_id>")
def put_batch(survey_id: str, batch_id: str) -> Response:
    """Store one relay batch, idempotently by batch id (see the module docstring)."""
    from deniable.sealing import unit_size

    storage = current_storage()
    record = storage.get_survey(survey_id, count=False)
    relay = _authorized_relay(record)
    if not BATCH_ID.fullmatch(batch_id):
        raise InvalidReport("batch id: 16-64 characters of A-Z a-z 0-9 _ -")
    # Why only now: an authenticated relay may send batches larger than a respondent's body.
    request.max_content_length = current_app.config["MAX_RELAY_BATCH_BYTES"]
    body = read_json()
    if relay.shuffle_unit == "submission":
        units: set[str] = {""}
    else:
        units = {q.id for q in record.survey.questions}
    batch = RelayBatch.parse(body, units, relay.min_batch)
    if batch.real_units is not None and relay.noise is None:
        raise InvalidReport(
            "real_units: this survey's relay adds no dummy reports (no signed relay.noise), "
            "so a batch may not say some of its units are dummies"
        )
    unit, blobs = batch.unit, list(batch.sealed)
    digest = content_digest(blobs)
    found = storage.relay.find_batch(survey_id, batch_id)
    if found is not None:
        if found.digest != digest or found.unit != unit or found.real_units != batch.real_units:
            raise Conflict(
                f"batch {batch_id} was stored with other content; a batch id is used once"
            )
        return json_response(_acknowledgement(found, survey_id).to_dict(), 200)
    if not record.is_open:
        raise SurveyClosed(f"survey {survey_id!r} is closed")
    size = unit_size(record.survey, unit)
    received_at = utc_now()  # the batch's: every report stored with it, none with its own
    seen: dict[str, tuple[str, str, str]] = {}
    accepted = dropped = 0  # blobs that added someone; blobs dropped
    closed = False
    # Chunk k is stored while the decryption processes open chunks k+1...: each chunk's
    # reports are stored before the batch is recorded, so a batch cut short (a crash) is
    # sent again, and its stored reports are acknowledged again by id, not stored twice.
    with opened_chunks(decryption_keys(), record.survey, unit, size, blobs) as chunks:
        for chunk in chunks:
            groups, rejected = _new_groups(chunk, seen)
            try:
                added, conflicting = (
                    _store(survey_id, groups, unit == "", received_at) if groups else (0, 0)
                )
            except Conflict:
                if not accepted:  # closed before anything was stored: refused whole
                    raise
                closed = True  # closed meanwhile: the batch stands as far as it was stored
                break
            # Report ids stored before with other bodies: dropped, not stored.  Blobs
            # whose reports were all stored before with the same body: in neither.
            dropped += rejected + conflicting
            accepted += added
    if dropped:
        logger.warning(
            "survey %s batch %s: %d of %d sealed blobs dropped (did not open, or invalid)",
            survey_id,
            batch_id,
            dropped,
            len(blobs),
        )
    if closed:
        logger.warning(
            "survey %s batch %s: the survey closed while the batch was stored; "
            "%d of %d sealed blobs stored",
            survey_id,
            batch_id,
            accepted,
            len(blobs),
        )
    standing = storage.relay.record_batch(
        survey_id,
        relay_storage.BatchRecord(
            batch_id=batch_id,
            unit=unit,
            digest=digest,
            size=len(blobs),
            stored=accepted,
            dropped=dropped,
            real_units=batch.real_units,
            plausible=plausible_dummies(record, unit, batch.real_units, accepted),
        ),
    )
    if standing.digest != digest:
        raise Conflict(f"batch {batch_id} was stored with other content; a batch id is used once")
    return json_response(_acknowledgement(standing, survey_id).to_dict(), 201)


def plausible_dummies(
    record: SurveyRecord, unit: str, real_units: int | None, stored: int
) -> bool | None:
    """Whether a batch's stored dummies, ``stored - real_units`` over the question's output
    reports, are plausible under the survey's signed law (None: the batch has none)."""
    from deniable.dummies import plausible

    relay = relay_terms(record)
    if real_units is None or relay.noise is None:
        return None
    if stored < real_units:  # fewer units stored than the relay says are real
        return False
    question = next(q for q in record.survey.questions if q.id == unit)
    values = len(question.oracle.output_reports() or ())
    if not values:
        return False
    return plausible(stored, real_units, values, relay.noise.law)


def _acknowledgement(record: relay_storage.BatchRecord, survey_id: str) -> Acknowledgement:
    """The answer to a batch stored now or before: the same for every resend."""
    return Acknowledgement(
        survey=survey_id,
        batch=record.batch_id,
        unit=record.unit,
        received=record.size,
        stored=record.stored,
        dropped=record.dropped,
    )


@blueprint.get("/surveys/<survey_id>/enrolment-digests")
def enrolment_digests(survey_id: str) -> Response:
    """The configured relay's view of the survey's unspent enrolment token digests."""
    storage = current_storage()
    record = storage.get_survey(survey_id, count=False)
    _authorized_relay(record)
    digests = storage.relay.unspent_enrolment_digests(survey_id)
    return json_response({"survey": survey_id, "digests": digests})
