"""The forwarder: refresh surveys, form batches, send them, delete only what was acknowledged.

Refreshing (:func:`refresh_all`, every ``REFRESH_SECONDS`` on its own thread, so an
aggregator that does not answer holds up no batch): each relayed survey's signed
document is fetched and verified again (open or closed; a rotated key is followed
along its signed chain), the aggregator's current encryption key id is verified in
its signed key document and recorded (the relay accepts units sealed to it or to a
few keys it replaced) and, for surveys that require enrolment, the enrolment token
digests are synchronized.  Units of a closed survey that wait for no batch are
deleted: they can never make a batch of ``min_batch``.

One forwarding pass (:func:`forward_once`, every ``FORWARD_INTERVAL``):

1. per open survey and unit, a batch is formed when ``min_batch`` units wait
   and ``WINDOW_SECONDS`` passed since the unit's last batch
   (:meth:`RelayStorage.form_batches`, one transaction).  A survey whose signed
   definition asks for relay noise gets each batch's dummy units drawn, sealed and
   stored with the batch then (:mod:`.noise`), once: a resend carries the same ones.
2. each formed batch is leased, its real and dummy units put together in a
   uniformly random order drawn from the operating system's CSPRNG
   (``secrets.SystemRandom``: Fisher-Yates over ``os.urandom``), and sent in one
   authenticated PUT under its batch id.  Its units are deleted only after the
   aggregator acknowledges; a failure leaves them for the next attempt under the
   same id, which the aggregator answers idempotently, so a crash or a lost
   acknowledgement neither loses nor doubles a report.

Several processes may run it at once: batch formation is one transaction and
a batch is leased to one sender at a time (a second sender would be harmless:
the aggregator stores a batch id once).  Logs name surveys, units, batch ids
and counts, never a sender or a time per report.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import threading
from collections.abc import Mapping
from typing import Any

from deniable.errors import DeniableError
from deniable.survey import Survey
from deniable.wire import ProblemType

from . import noise, upstream
from .storage import Batch, RelayedSurvey, RelayStorage

__all__ = ["Forwarder", "forward_once", "permuted", "refresh", "refresh_all", "send"]

logger = logging.getLogger("deniable.relay.forwarder")

_random = secrets.SystemRandom()


def permuted(sealed: list[bytes]) -> list[bytes]:
    """A uniformly random permutation of ``sealed`` from the OS CSPRNG (Fisher-Yates)."""
    order = list(sealed)
    _random.shuffle(order)
    return order


def refresh(storage: RelayStorage, config: Mapping[str, Any], survey_id: str) -> None:
    """Verify the survey's signed document again; sync enrolment digests; drop what cannot batch."""
    stored = storage.get_survey(survey_id)
    pin = upstream.pin_from(stored.signing_key, stored.key_sequence)
    verified = upstream.verify_survey(
        stored.aggregator_url,
        survey_id,
        pin,
        public_url=config["PUBLIC_URL"] or "",
        timeout=config["FORWARD_TIMEOUT"],
    )
    relay = verified.relay
    if (
        relay.min_batch != stored.min_batch
        or relay.shuffle_unit != stored.shuffle_unit
        or relay.noise != _signed_relay(stored).noise
    ):
        # The signed definition cannot change under the same id; if it did, stop relaying.
        raise DeniableError(f"survey {survey_id!r}: its signed relay terms changed; refusing")
    storage.update_survey(
        survey_id,
        document=json.dumps(verified.document),
        status=verified.status,
        signing_key=upstream.pin_text(verified.pin),
        key_sequence=verified.pin.sequence,
    )
    storage.accept_encryption_key(
        survey_id,
        *upstream.encryption_key(
            stored.aggregator_url, verified.pin, timeout=config["FORWARD_TIMEOUT"]
        ),
    )
    if verified.status == "closed":
        dropped = storage.discard_closed(survey_id)
        if dropped:
            logger.warning(
                "survey %s closed: %d held units could not make a batch and were deleted",
                survey_id,
                dropped,
            )
    elif verified.require_enrolment:
        digests = upstream.fetch_enrolment_digests(
            stored.aggregator_url, survey_id, stored.credential, timeout=config["FORWARD_TIMEOUT"]
        )
        storage.sync_enrolment_digests(survey_id, digests)


def _signed_relay(stored: RelayedSurvey) -> Any:
    """The relay terms of the survey document the relay verified last (``survey.relay``)."""
    return signed_survey(stored).relay


def signed_survey(stored: RelayedSurvey) -> Survey:
    """The survey of the signed document the relay verified last (parsed once per document)."""
    return _parsed(stored.document)


@functools.lru_cache(maxsize=64)
def _parsed(document: str) -> Survey:
    return Survey.from_dict(json.loads(document)["definition"], resolved=True)


def send(storage: RelayStorage, config: Mapping[str, Any], batch: Batch) -> bool:
    """Send one leased batch; True if acknowledged."""
    stored = storage.get_survey(batch.survey_id)
    outcome = upstream.put_batch(
        stored.aggregator_url,
        batch.survey_id,
        batch.batch_id,
        batch.unit,
        permuted(batch.sealed),
        stored.credential,
        timeout=config["FORWARD_TIMEOUT"],
        real_units=batch.real_units,
    )
    if outcome.acknowledged:
        storage.acknowledged(batch)
        logger.info(
            "batch %s of survey %s unit %r: %d reports (%d real) acknowledged",
            batch.batch_id,
            batch.survey_id,
            batch.unit,
            len(batch.sealed),
            batch.real_count,
        )
        return True
    if outcome.final or (
        # An aggregator before the survey-closed type answered a closed survey with the
        # generic conflict: final once the relay's verified copy of the signed survey
        # document says closed (refreshed on schedule), never judged by the words.
        outcome.problem is ProblemType.CONFLICT and stored.status == "closed"
    ):
        storage.discard(batch)
        logger.warning(
            "batch %s of survey %s refused for good, deleted: %s",
            batch.batch_id,
            batch.survey_id,
            outcome.detail,
        )
        return False
    # FORWARD_INTERVAL x 2^attempts, at most RETRY_MAX_SECONDS.
    retry = min(
        config["RETRY_MAX_SECONDS"],
        config["FORWARD_INTERVAL"] * 2 ** min(20, _attempts(storage, batch)),
    )
    storage.failed(batch, outcome.detail, retry_in=retry)
    logger.warning(
        "batch %s of survey %s not acknowledged (%s); again in %.0f s",
        batch.batch_id,
        batch.survey_id,
        outcome.detail,
        retry,
    )
    return False


def _attempts(storage: RelayStorage, batch: Batch) -> int:
    for batch_id, _, _, attempts, _ in storage.pending_batches(batch.survey_id):
        if batch_id == batch.batch_id:
            return int(attempts)
    return 1


def forward_once(
    storage: RelayStorage, config: Mapping[str, Any], *, refresh_due: bool = True
) -> dict[str, int]:
    """One pass: refresh (if due), form batches, send every batch due; counts of each."""
    counts = {"refreshed": 0, "formed": 0, "acknowledged": 0, "failed": 0}
    surveys = storage.list_surveys()
    for stored in surveys:
        counts["formed"] += len(
            storage.form_batches(
                stored.survey_id,
                window=config["WINDOW_SECONDS"],
                max_bytes=config["MAX_BATCH_BYTES"],
                dummies=noise.dummies_of(signed_survey(stored)),
            )
        )
    lease = config["FORWARD_TIMEOUT"] + 30
    for batch in storage.lease_batches(lease=lease):
        if send(storage, config, batch):
            counts["acknowledged"] += 1
        else:
            counts["failed"] += 1
    if refresh_due:
        counts["refreshed"] = refresh_all(storage, config)
    return counts


def refresh_all(storage: RelayStorage, config: Mapping[str, Any]) -> int:
    """Refresh every relayed survey; return how many succeeded (failures are logged)."""
    refreshed = 0
    for stored in storage.list_surveys():
        try:
            refresh(storage, config, stored.survey_id)
            refreshed += 1
        except DeniableError as error:
            logger.warning("survey %s: refresh failed: %s", stored.survey_id, error)
    return refreshed


class Forwarder:
    """:func:`forward_once` every ``FORWARD_INTERVAL`` seconds on a daemon thread, and
    :func:`refresh_all` every ``REFRESH_SECONDS`` on another (an aggregator that does
    not answer a refresh must not hold up forming and sending batches)."""

    def __init__(self, storage: RelayStorage, config: Mapping[str, Any]) -> None:
        self.storage, self.config = storage, config
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="deniable-relay-forwarder", daemon=True
        )
        self._refresher = threading.Thread(
            target=self._refresh, daemon=True, name="deniable-relay-refresher"
        )

    def start(self) -> None:
        # Why: a lease held by a process that died (SIGKILL mid-forward) would delay its
        # batch by the whole lease; sending it twice is harmless (batch ids are idempotent).
        self.storage.release_leases()
        self._thread.start()
        self._refresher.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                forward_once(self.storage, self.config, refresh_due=False)
            except Exception:  # noqa: BLE001 - the loop must survive a database outage
                logger.exception("forwarder pass failed")
            self._stop.wait(self.config["FORWARD_INTERVAL"])

    def _refresh(self) -> None:
        while not self._stop.is_set():
            try:
                refresh_all(self.storage, self.config)
            except Exception:  # noqa: BLE001 - the loop must survive a database outage
                logger.exception("refresh failed")
            self._stop.wait(self.config["REFRESH_SECONDS"])
