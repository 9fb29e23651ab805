"""Forward now what a closing survey's relay can: the aggregator's signed flush request.

:func:`flush` checks the request (:mod:`deniable.relay_flush`) against the signing key
the relay pins for the survey (:func:`authenticated`: refreshed once from the aggregator
if the key rotated since), counts it against the survey's flush limit (``FLUSH_LIMIT``
flushes over its life: each answer tells the aggregator how many units wait right then),
forms a batch of every group of units that has at least ``min_batch`` waiting,
without waiting for the window (with the dummies a noised survey signs, as the forwarder
draws them), and sends every formed batch at once.  Groups below
``min_batch`` stay held: forwarding them would break the survey's signed promise.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from deniable.errors import AuthenticationError, DeniableError, SignatureError, SurveyClosed
from deniable.keychain import decode_signature, key_id, signature_valid
from deniable.origins import same_url
from deniable.relay_flush import FLUSH_MAX_AGE, parse_flush, signed_message

from . import noise, upstream
from .forwarder import refresh, send, signed_survey
from .storage import RelayedSurvey, RelayStorage

__all__ = ["authenticated", "flush"]

logger = logging.getLogger("deniable.relay.flushing")
# Why: a request that fails verification makes the relay fetch the survey's key from the
# aggregator again (it may have rotated); at most this often per survey and process, so a
# flood of forged requests costs the aggregator nothing much.
REFRESH_SECONDS = 5.0
_refreshed: dict[str, float] = {}
_refreshed_lock = threading.Lock()


def _verified(stored: RelayedSurvey, request: Mapping[str, Any]) -> bool:
    pin = upstream.pin_from(stored.signing_key, stored.key_sequence)
    if key_id(pin.public_key) != request["key_id"]:
        return False
    try:
        signature = decode_signature(request["signature"], "body.signature")
    except SignatureError:
        return False
    message = signed_message(
        request["format"], stored.survey_id, request["relay"], request["issued_at"]
    )
    return signature_valid(pin.public_key, signature, message)


def authenticated(
    storage: RelayStorage, config: Mapping[str, Any], survey_id: str, request: Mapping[str, Any]
) -> RelayedSurvey:
    """The survey, once ``request`` (parsed, :mod:`deniable.relay_flush`) is signed by the
    aggregator's pinned key for this survey and this relay within ``FLUSH_MAX_AGE``
    (AuthenticationError otherwise)."""
    stored = storage.get_survey(survey_id)
    if request["survey"] != survey_id:
        raise AuthenticationError("the request is signed for another survey")
    public = config.get("PUBLIC_URL") or ""
    if public and not same_url(request["relay"], public):
        raise AuthenticationError("the request is signed for another relay")
    if abs(time.time() - request["issued_at"]) > FLUSH_MAX_AGE:
        raise AuthenticationError(
            f"the request was issued more than {FLUSH_MAX_AGE} s from the relay's clock"
        )
    if _verified(stored, request):
        return stored
    # Why once: the aggregator may have rotated its key since the relay's last refresh.
    now = time.monotonic()
    with _refreshed_lock:
        due = now - _refreshed.get(survey_id, -math.inf) >= REFRESH_SECONDS
        if due:
            _refreshed[survey_id] = now
    if due:
        try:
            refresh(storage, config, survey_id)
        except DeniableError:
            pass
        stored = storage.get_survey(survey_id)
        if _verified(stored, request):
            return stored
    raise AuthenticationError("the request is not signed by the aggregator's signing key")


def flush(
    storage: RelayStorage, config: Mapping[str, Any], survey_id: str, body: object
) -> dict[str, Any]:
    """Check the signed request, form and send every batch ``min_batch`` allows; the counts."""
    stored = authenticated(storage, config, survey_id, parse_flush(body))
    if not stored.is_open:
        raise SurveyClosed(f"survey {survey_id!r} is closed")
    # Why counted before anything is formed: a refused flush tells the aggregator nothing.
    try:
        flushes = storage.count_flush(survey_id, int(config.get("FLUSH_LIMIT", 3)))
    except DeniableError:
        logger.warning(
            "survey %s: flush asked by the aggregator refused: its limit is reached", survey_id
        )
        raise
    formed = storage.form_batches(
        survey_id,
        window=0.0,
        max_bytes=config["MAX_BATCH_BYTES"],
        # Why the same dummies as the forwarder's: a flushed batch keeps the signed noise.
        dummies=noise.dummies_of(signed_survey(stored)),
    )
    forwarded = failed = 0
    lease = config["FORWARD_TIMEOUT"] + 30
    # Why every due batch, not only this survey's: leasing takes any due batch, and one
    # leased here and left unsent would wait out its lease.
    for batch in storage.lease_batches(lease=lease, limit=1_000):
        sent = send(storage, config, batch)
        if batch.survey_id == survey_id:
            forwarded += batch.real_count if sent else 0
            failed += 0 if sent else 1
    # The forwarder's own pass may have leased some of them: wait for it, a little.
    deadline = time.monotonic() + min(30.0, float(config["FORWARD_TIMEOUT"]))
    held = storage.held_counts(survey_id)
    while not failed and any(c[1] for c in held.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        held = storage.held_counts(survey_id)
    waiting = {unit: counts[0] for unit, counts in sorted(held.items())}
    # Why logged: the relay's operator sees each flush the aggregator asks for (how often).
    logger.warning(
        "survey %s: flush asked by the aggregator: %d batches formed, %d reports forwarded, "
        "%d units wait (flush %d of at most %d)",
        survey_id,
        len(formed),
        forwarded,
        sum(waiting.values()),
        flushes,
        int(config.get("FLUSH_LIMIT", 3)),
    )
    return {
        "survey": survey_id,
        "batches_formed": len(formed),
        "forwarded_reports": forwarded,
        "failed_batches": failed,
        "min_batch": stored.min_batch,
        "waiting": waiting,
        "in_batches": sum(counts[1] for counts in held.values()),
        "flushes_left": max(0, int(config.get("FLUSH_LIMIT", 3)) - flushes),
    }
