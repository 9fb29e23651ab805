"""Batches from the survey's relay: sealed reports, shuffled, many respondents at once.

``PUT /api/v1/surveys/<survey_id>/batches/<batch_id>`` (docs/protocol.md,
"Relay flow"), with the relay credential as ``Authorization: Bearer``::

    {"format": "deniable.batch/1", "unit": "<question id, or ''>", "sealed": ["<base64url>", ...]}

Order of refusals: credential missing (401) or not a relay credential (403),
survey (404), not relayed (409), credential of another relay than the one the
survey's signed definition names (403), body (400/413/415/422), fewer blobs than
the signed ``min_batch`` (422), batch id stored with other content (409),
closed (409).  A batch id stored before with the same blobs (in any order) is
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

``GET /api/v1/surveys/<survey_id>/enrolment-digests`` gives the configured
relay the SHA-256 digests of the survey's unspent enrolment tokens, so the
relay checks and spends tokens and the aggregator never sees one beside a report.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import hashlib
import json
import logging
import os
import re
import threading
from typing import Any

from flask import Blueprint, Response, current_app, request

from deniable.errors import (
    AuthenticationError,
    Conflict,
    DeniableError,
    Forbidden,
    InvalidReport,
    PayloadTooLarge,
    StorageError,
)
from deniable.wire import Report, parse_report, parse_submission

from ..problems import read_json
from ..storage import SurveyRecord, current_storage
from ..storage import relay as relay_storage
from .common import bearer_token, json_response
from .relayed import relay_terms

blueprint = Blueprint("batches", __name__)
logger = logging.getLogger(__name__)

FORMAT = "deniable.batch/1"
FIELDS = frozenset({"format", "unit", "sealed"})
BATCH_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
MAX_BLOBS = 1_000_000
# Batches of at least this many blobs are opened by several processes.
PARALLEL_FROM = 2_000
DECRYPT_PROCESSES = min(8, os.cpu_count() or 1)
_pool: Any = None
_pool_lock = threading.Lock()


def _authorized_relay(record: SurveyRecord) -> Any:
    """The survey's relay terms, once the request's credential is that relay's."""
    credential = bearer_token()
    if credential is None:
        raise AuthenticationError("a batch needs the relay credential (Authorization: Bearer)")
    url = relay_storage.credential_url(current_storage(), credential)
    if url is None:
        raise Forbidden("the bearer token is not a valid relay credential")
    relay = relay_terms(record)
    if relay is None:
        raise Conflict(f"survey {record.id!r} is not relayed; it takes no batches")
    if relay_storage.normalized_url(relay.url) != url:
        raise Forbidden(f"survey {record.id!r} is relayed by {relay.url}; this credential is "
                        "another relay's")  # fmt: skip
    return relay


def _blob(text: object, index: int) -> bytes:
    if not isinstance(text, str):
        raise InvalidReport(f"sealed[{index}]: must be a base64url string")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise InvalidReport(f"sealed[{index}]: not base64url") from None


def content_digest(blobs: list[bytes]) -> str:
    """SHA-256 over the blobs in sorted order: one batch, whatever order it is sent in."""
    digest = hashlib.sha256()
    for blob in sorted(blobs):
        digest.update(len(blob).to_bytes(4, "big"))
        digest.update(blob)
    return digest.hexdigest()


def decryption_keys() -> Any:
    """The aggregator's encryption keys (the current X25519 key and those it retired)."""
    from ..signing import current_key

    keys = current_key().encryption
    if keys is None:
        raise StorageError("the aggregator has no encryption key; run 'deniable-aggregator init'")
    return keys


def _open_chunk(raw_keys: list[bytes], survey_id: str, unit: str, size: int,
                blobs: list[bytes]) -> list[bytes | None]:  # fmt: skip
    """Each blob's body, or None (in a decryption process: keys travel as raw bytes)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from ..signing import EncryptionKeys

    current, *retired = (X25519PrivateKey.from_private_bytes(raw) for raw in raw_keys)
    keys = EncryptionKeys(current=current, retired=tuple(retired))
    return _open_each(keys, survey_id, unit, size, blobs)


def _open_each(keys: Any, survey_id: str, unit: str, size: int,
               blobs: list[bytes]) -> list[bytes | None]:  # fmt: skip
    """Each blob's body, or None where it does not open (one process, one blob at a time)."""
    bodies: list[bytes | None] = []
    for blob in blobs:
        try:
            bodies.append(keys.open_sealed(survey_id=survey_id, unit=unit, sealed=blob,
                                           size=size))  # fmt: skip
        except DeniableError:
            bodies.append(None)
    return bodies


def _decryption_pool() -> Any:
    """This process's pool of decryption processes (spawned, so no thread crosses a fork)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            _pool = ProcessPoolExecutor(DECRYPT_PROCESSES,
                                        mp_context=multiprocessing.get_context("spawn"))
            atexit.register(_pool.shutdown)  # before the interpreter tears its modules down
        return _pool


def open_all(keys: Any, survey_id: str, unit: str, size: int,
             blobs: list[bytes]) -> list[bytes | None]:  # fmt: skip
    """Every blob's body (None where it does not open): HPKE opening dominates a batch's
    cost, so a large batch is opened by :data:`DECRYPT_PROCESSES` processes at once."""
    if len(blobs) < PARALLEL_FROM or DECRYPT_PROCESSES < 2:
        return _open_each(keys, survey_id, unit, size, blobs)
    raw = [key.private_bytes_raw() for key in (keys.current, *keys.retired)]
    step = -(-len(blobs) // (4 * DECRYPT_PROCESSES))
    chunks = [blobs[start:start + step] for start in range(0, len(blobs), step)]
    pool = _decryption_pool()
    parts = pool.map(_open_chunk, [raw] * len(chunks), [survey_id] * len(chunks),
                     [unit] * len(chunks), [size] * len(chunks), chunks)  # fmt: skip
    return [body for part in parts for body in part]


def fast_reports(survey: Any, unit: str, bodies: list[bytes | None]) -> list[Report] | None:
    """A question unit's reports validated as one submission, if every blob opened to a
    valid report of that unit (None otherwise: the per-blob path then says which not)."""
    if not unit or any(body is None for body in bodies):
        return None
    try:
        # One parse of all bodies: each is a JSON object (else parsing, or its check, fails).
        documents = json.loads(b"[" + b",".join(bodies) + b"]")  # type: ignore[arg-type]
        if len(documents) != len(bodies):
            return None
        reports = parse_submission({"reports": documents}, survey, max_batch=len(documents))
    except (DeniableError, ValueError, RecursionError):
        return None
    return reports if all(report.question == unit for report in reports) else None


def open_unit(survey: Any, unit: str, body: bytes | None,
              max_batch: int) -> list[Report] | None:  # fmt: skip
    """The reports an opened body holds, or None if it did not open or holds none valid."""
    if body is None:
        return None
    try:
        document = json.loads(body)
        if unit:
            report = parse_report(document, survey)
            return [report] if report.question == unit else None
        return parse_submission(document, survey, max_batch=max_batch, one_respondent=True)
    except (DeniableError, ValueError, RecursionError):
        return None


def _add(survey_id: str, reports: list[Report], owners: list[int | None]) -> None:
    """Store reports as the operator would, each with its respondent within the batch.

    A whole-submission unit's reports share one submission key per blob (so crosstabs
    join one respondent's answers); per-question units stay loose (``None``): their
    answers cannot be joined, which is what shuffling them apart is for.
    """
    current_storage().add_reports(survey_id, reports, operator=True, respondents=owners)


def _store(survey_id: str, groups: list[list[Report]], whole: bool) -> int:
    """Store every blob's reports; return how many blobs were dropped because a report id
    was stored before with another body (the rest is stored, blob by blob)."""
    def owners(chunk: list[list[Report]]) -> list[int | None]:
        return [index if whole else None for index, group in enumerate(chunk) for _ in group]

    try:
        _add(survey_id, [r for group in groups for r in group], owners(groups))
        return 0
    except Conflict:
        if not current_storage().get_survey(survey_id, count=False).is_open:
            # Closed meanwhile: the whole batch is refused, nothing is counted.
            raise Conflict(f"survey {survey_id!r} is closed") from None
        # else a report id stored before with another body: store the rest blob by blob
    dropped = 0
    for group in groups:
        try:
            _add(survey_id, group, owners([group]))
        except Conflict:
            dropped += 1
    return dropped


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
    if not isinstance(body, dict) or set(body) != FIELDS or body.get("format") != FORMAT:
        raise InvalidReport(f"body: must be {{format: {FORMAT!r}, unit, sealed}}")
    unit, texts = body["unit"], body["sealed"]
    if relay.shuffle_unit == "submission":
        if unit != "":
            raise InvalidReport("unit: this survey shuffles whole submissions; unit must be ''")
    elif not isinstance(unit, str) or unit not in {q.id for q in record.survey.questions}:
        raise InvalidReport("unit: must be a question id of the survey")
    if not isinstance(texts, list):
        raise InvalidReport("sealed: must be a list of base64url strings")
    if len(texts) > MAX_BLOBS:
        raise PayloadTooLarge(f"sealed: at most {MAX_BLOBS} blobs per batch")
    if len(texts) < relay.min_batch:
        raise InvalidReport(f"sealed: {len(texts)} blobs, fewer than the survey's min_batch "
                            f"{relay.min_batch}; a relay never forwards a smaller batch")
    blobs = [_blob(text, index) for index, text in enumerate(texts)]
    digest = content_digest(blobs)
    found = relay_storage.find_batch(storage, survey_id, batch_id)
    if found is not None:
        if found.digest != digest or found.unit != unit:
            raise Conflict(f"batch {batch_id} was stored with other content; a batch id is "
                           "used once")  # fmt: skip
        return json_response(found.to_dict(survey_id), 200)
    if not record.is_open:
        raise Conflict(f"survey {survey_id!r} is closed")
    keys = decryption_keys()
    size = unit_size(record.survey, unit)
    max_batch = len(record.survey.questions)
    groups: list[list[Report]] = []  # each accepted blob's reports
    seen: dict[str, Report] = {}
    dropped = 0
    bodies = open_all(keys, survey_id, unit, size, blobs)
    fast = fast_reports(record.survey, unit, bodies)
    if fast is not None:  # every blob a valid report of the unit (a duplicate counts once)
        groups, bodies = [[report] for report in fast], []
    for body in bodies:
        opened = open_unit(record.survey, unit, body, max_batch)
        if opened is None:
            dropped += 1
            continue
        if any(r.id in seen for r in opened):
            # The same report sealed twice (a device's resend) adds nobody; one id with
            # two bodies is invalid.
            if any(seen.get(r.id, r) != r for r in opened):
                dropped += 1
            continue
        seen.update((r.id, r) for r in opened)
        groups.append(opened)
    conflicting = _store(survey_id, groups, unit == "") if groups else 0
    dropped += conflicting  # report ids stored before with other bodies: dropped, not stored
    accepted = len(groups) - conflicting
    if dropped:
        logger.warning("survey %s batch %s: %d of %d sealed blobs dropped (did not open, or "
                       "invalid)", survey_id, batch_id, dropped, len(blobs))  # fmt: skip
    standing = relay_storage.record_batch(storage, survey_id, relay_storage.BatchRecord(
        batch_id=batch_id, unit=unit, digest=digest, size=len(blobs), stored=accepted,
        dropped=dropped))  # fmt: skip
    if standing.digest != digest:
        raise Conflict(f"batch {batch_id} was stored with other content; a batch id is used once")
    return json_response(standing.to_dict(survey_id), 201)


@blueprint.get("/surveys/<survey_id>/enrolment-digests")
def enrolment_digests(survey_id: str) -> Response:
    """The configured relay's view of the survey's unspent enrolment token digests."""
    storage = current_storage()
    record = storage.get_survey(survey_id, count=False)
    _authorized_relay(record)
    digests = relay_storage.unspent_enrolment_digests(storage, survey_id)
    return json_response({"survey": survey_id, "digests": digests})
