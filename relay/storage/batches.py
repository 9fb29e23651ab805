"""The relay's batches: formed from held units, leased to a sender, deleted once
acknowledged (or refused for good)."""

from __future__ import annotations

import logging
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from deniable.service.storage import Dialect, iso, utc_now
from deniable.survey_relay import MAX_BATCH_UNITS

from .held import HeldStore
from .records import DELIVERED, DISCARDED, Batch, held_id

if TYPE_CHECKING:
    from ..noise import Dummies

__all__ = ["BODY_OVERHEAD", "BatchStore"]

# A batch's body beside its blobs: format, unit (a question id) and JSON punctuation.
BODY_OVERHEAD = 200
# Most dummy rows one INSERT takes (4 parameters each, well under SQLite's 32,766).
_ROWS_PER_INSERT = 500

logger = logging.getLogger("deniable.relay.storage")


class BatchStore:
    """Batches, over a dialect; their units are the held store's (``held``)."""

    def __init__(self, dialect: Dialect, held: HeldStore) -> None:
        self.dialect = dialect
        self.held = held

    def form_batches(
        self,
        survey_id: str,
        *,
        window: float,
        max_bytes: int | None = None,
        dummies: Dummies | None = None,
    ) -> list[str]:
        """Form a batch of each unit that has ``min_batch`` units waiting and a window elapsed.

        A batch takes every waiting unit of its (survey, unit) sealed to one encryption
        key; units sealed to another key form their own batch, once they are
        ``min_batch`` too.  Why: the aggregator signs any encryption key it likes, so it
        could hand one device a key of its own; in a batch mixing keys that device's
        blob would be the one its key opens, and the batch would hide nobody.  A unit's
        window reopens when it forms a batch.

        ``max_bytes`` bounds the body a batch is sent in (:func:`~..upstream.put_batch`),
        as the aggregator bounds what it takes (MAX_RELAY_BATCH_BYTES, 413 above it, for
        ever): more waiting units go out as several batches of nearly equal size, none
        below ``min_batch`` (which comes first), drawn in the order of the held ids, a hash
        (so not in arrival order).  Returns the ids of the batches formed.

        ``dummies`` (a survey with relay noise, :mod:`..noise`): each batch gets its own
        draw of dummy units, sealed to the batch's key and stored with it in the same
        transaction, and records its real count (``real_units``); the bounds above then
        leave room for the most dummies a batch can carry.  The draws are sealed before the
        write transaction (sealing thousands of units would hold the write lock), one per
        batch the read found due; a draw the write does not use (another forwarder formed
        that batch first) is dropped unsent, which depends on no drawn count.  A batch whose
        key's public half this relay never recorded (units held before it kept public keys)
        is formed without dummies and without ``real_units``: the aggregator then counts
        every blob as real and publishes that batch with the shuffle bound alone.
        """
        now = utc_now()
        opened_before = iso(now - timedelta(seconds=window))
        # Why a read first: counting the waiting units reads every one of them, and the
        # forwarder asks every FORWARD_INTERVAL; inside the write transaction that count
        # held the database's one write lock (SQLite) against every submission's commit,
        # for longer the more units wait.  A read takes no lock, and usually finds
        # nothing due; only then is the count taken again, under the lock, to form.
        with self.dialect.read() as connection:
            ready = self._ready(connection, survey_id, opened_before, lock=False)
            if not ready:
                return []
            keys = self._public_keys(connection, survey_id) if dummies else {}
            planned = {
                (unit, key_id): len(
                    self._split(
                        connection,
                        (survey_id, unit, key_id),
                        waiting,
                        min_batch,
                        max_bytes,
                        dummies.most(unit),
                    )
                )
                for unit, key_id, waiting, min_batch in ready
                if dummies is not None and key_id in keys
            }
        drawn = {
            (unit, key_id): [dummies.draw(unit, keys[key_id]) for _ in range(count)]
            for (unit, key_id), count in planned.items()
            if dummies is not None
        }
        formed = []
        with self.dialect.write() as connection:
            reopened = set()
            for unit, key_id, waiting, min_batch in self._ready(
                connection, survey_id, opened_before, lock=True
            ):
                group = (survey_id, unit, key_id)
                noised = dummies is not None and key_id in keys
                if dummies is not None and not noised:
                    logger.warning(
                        "survey %s unit %r: no public key recorded for encryption key %s; "
                        "its batch is formed without dummies",
                        survey_id,
                        unit,
                        key_id,
                    )
                room = dummies.most(unit) if noised and dummies is not None else 0
                sizes = self._split(connection, group, int(waiting), min_batch, max_bytes, room)
                for index, size in enumerate(sizes):
                    batch_id = secrets.token_hex(16)
                    waiting_in = "survey_id = ? AND unit = ? AND key_id = ? AND batch_id IS NULL"
                    if index == len(sizes) - 1 and sum(sizes) == waiting:  # the rest too
                        self.dialect.run(
                            connection,
                            f"UPDATE held SET batch_id = ? WHERE {waiting_in}",
                            (batch_id, *group),
                        )
                    else:
                        self.dialect.run(
                            connection,
                            "UPDATE held SET batch_id = ? WHERE id IN (SELECT "
                            f"id FROM held WHERE {waiting_in} ORDER BY id LIMIT ?)",
                            (batch_id, *group, size),
                        )
                    real_units = None
                    if noised:
                        assert dummies is not None
                        spare = drawn.get((unit, key_id))
                        blobs = spare.pop() if spare else dummies.draw(unit, keys[key_id])
                        self._store_dummies(connection, survey_id, unit, batch_id, blobs)
                        real_units = size
                    self.dialect.run(
                        connection,
                        "INSERT INTO batches (batch_id, survey_id, unit, size, real_units) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (batch_id, survey_id, unit, size, real_units),
                    )
                    formed.append(batch_id)
                reopened.add(unit)
            for unit in sorted(reopened):
                self.dialect.run(
                    connection,
                    "UPDATE windows SET opened_at = ? WHERE survey_id = ? AND unit = ?",
                    (iso(now), survey_id, unit),
                )
        return formed

    def _public_keys(self, connection: Any, survey_id: str) -> dict[str, bytes]:
        """The encryption public keys this relay verified for ``survey_id``, by key id."""
        rows = self.dialect.run(
            connection,
            "SELECT key_id, public_key FROM encryption_public WHERE survey_id = ?",
            (survey_id,),
        ).fetchall()
        return {key_id: bytes(public) for key_id, public in rows}

    def _store_dummies(
        self, connection: Any, survey_id: str, unit: str, batch_id: str, blobs: list[bytes]
    ) -> None:
        """Store one batch's dummy units with it (deleted with the batch)."""
        for start in range(0, len(blobs), _ROWS_PER_INSERT):
            rows = blobs[start : start + _ROWS_PER_INSERT]
            self.dialect.run(
                connection,
                "INSERT INTO dummies (id, survey_id, batch_id, sealed) VALUES "
                + ", ".join(["(?, ?, ?, ?)"] * len(rows)),
                [
                    value
                    for sealed in rows
                    for value in (held_id(survey_id, unit, sealed), survey_id, batch_id, sealed)
                ],
            )

    def _ready(
        self, connection: Any, survey_id: str, opened_before: str, *, lock: bool
    ) -> list[tuple[str, str, int, int]]:
        """(unit, key id, units waiting, min_batch) of each group of an open survey that
        could form a batch now: its unit's window opened before ``opened_before`` and at
        least ``min_batch`` of its units wait.  ``lock``: the survey's row for update.

        Why the windows first: units are counted only for units whose window elapsed, so a
        pass inside a window reads a few rows, not every held unit."""
        row = self.dialect.run(
            connection,
            "SELECT min_batch, status FROM relayed_surveys WHERE survey_id = ?"
            + (self.dialect.for_update if lock else ""),
            (survey_id,),
        ).fetchone()
        if row is None or row[1] != "open":
            return []
        min_batch = int(row[0])
        due = [
            unit
            for (unit,) in self.dialect.run(
                connection,
                "SELECT unit FROM windows WHERE survey_id = ? AND opened_at <= ? ORDER BY unit",
                (survey_id, opened_before),
            ).fetchall()
        ]
        ready = []
        for unit in due:
            counts = self.dialect.run(
                connection,
                "SELECT key_id, COUNT(*) FROM held WHERE survey_id = ? AND unit = ? AND "
                "batch_id IS NULL GROUP BY key_id ORDER BY key_id",
                (survey_id, unit),
            ).fetchall()
            ready.extend(
                (unit, key_id, int(waiting), min_batch)
                for key_id, waiting in counts
                if int(waiting) >= min_batch
            )
        return ready

    def _split(
        self,
        connection: Any,
        group: tuple[str, str, str],
        waiting: int,
        min_batch: int,
        max_bytes: int | None,
        room: int = 0,
    ) -> list[int]:
        """Sizes of the batches ``waiting`` units of ``group`` go out in: as few as fit
        ``max_bytes`` and :data:`MAX_BATCH_UNITS` with ``room`` dummies beside them (a
        dummy is as long as a real unit), each at least ``min_batch``; where no split fits
        both, full batches, and the rest waits for the next window."""
        most = MAX_BATCH_UNITS  # the aggregator takes no more in one batch (protocol §11.3)
        if max_bytes is not None:
            (length,) = self.dialect.run(
                connection,
                "SELECT MAX(LENGTH(sealed)) FROM held WHERE "
                "survey_id = ? AND unit = ? AND key_id = ? AND batch_id IS NULL",
                group,
            ).fetchone()
            encoded = -(-4 * int(length) // 3) + 3  # unpadded base64url, quotes and a comma
            most = min(most, (max_bytes - BODY_OVERHEAD) // encoded)
        most = max(min_batch, most - room)
        count = -(-waiting // most)
        if waiting // count < min_batch:  # no split fits both bounds: full batches, the rest waits
            return [most] * (waiting // most)
        return [waiting // count + (index < waiting % count) for index in range(count)]

    def lease_batches(self, *, lease: float, limit: int = 16) -> list[Batch]:
        """Batches to forward now, each leased for ``lease`` seconds (one forwarder at a time)."""
        now = utc_now()
        due = "leased_until IS NULL OR leased_until < ?"
        # Why a read first: the forwarder asks every FORWARD_INTERVAL and there is
        # usually nothing due; a write transaction for that would queue for the write
        # lock among the submissions' commits (SQLite), and hold them up in turn.
        with self.dialect.read() as connection:
            if (
                self.dialect.run(
                    connection, f"SELECT 1 FROM batches WHERE {due} LIMIT 1", (iso(now),)
                ).fetchone()
                is None
            ):
                return []
        batches = []
        with self.dialect.write() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT batch_id, survey_id, unit, real_units FROM batches WHERE "
                "leased_until IS NULL OR leased_until < ? ORDER BY batch_id LIMIT ?"
                + self.dialect.for_update,
                (iso(now), limit),
            ).fetchall()
            for batch_id, survey_id, unit, real_units in rows:
                self.dialect.run(
                    connection,
                    "UPDATE batches SET leased_until = ?, attempts = attempts "
                    "+ 1 WHERE batch_id = ?",
                    (iso(now + timedelta(seconds=lease)), batch_id),
                )
                sealed = self.dialect.run(
                    connection,
                    "SELECT sealed FROM held WHERE batch_id = ? "
                    "UNION ALL SELECT sealed FROM dummies WHERE batch_id = ?",
                    (batch_id, batch_id),
                ).fetchall()
                batches.append(
                    Batch(
                        batch_id=batch_id,
                        survey_id=survey_id,
                        unit=unit,
                        sealed=[bytes(s) for (s,) in sealed],
                        real_units=None if real_units is None else int(real_units),
                    )
                )
        return batches

    def release_leases(self) -> None:
        """Make every formed batch due now (a forwarder starting after a crash)."""
        with self.dialect.write() as connection:
            self.dialect.run(connection, "UPDATE batches SET leased_until = NULL")

    def acknowledged(self, batch: Batch) -> None:
        """The aggregator stored the batch: delete its units (and dummies), count its real ones."""
        size = batch.real_count
        self._finish(
            batch,
            "forwarded_batches = forwarded_batches + 1, forwarded_reports = "
            "forwarded_reports + ?, smallest_batch = CASE WHEN smallest_batch IS NULL "
            "OR smallest_batch > ? THEN ? ELSE smallest_batch END",
            (size, size, size),
            DELIVERED,
        )

    def discard(self, batch: Batch) -> None:
        """The aggregator refused the batch for good (its survey closed): delete, count it."""
        self._finish(
            batch, "discarded_reports = discarded_reports + ?", (batch.real_count,), DISCARDED
        )

    def _finish(self, batch: Batch, counters: str, values: tuple, outcome: str) -> None:
        """Delete the batch and its units (and the links of the enrolment tokens that
        admitted them: ``outcome``, HeldStore.delete), and update the survey's
        ``counters`` once (a batch finished twice, by two senders, counts once)."""
        with self.dialect.write() as connection:
            gone = self.dialect.run(
                connection, "DELETE FROM batches WHERE batch_id = ?", (batch.batch_id,)
            ).rowcount
            self.dialect.run(
                connection, "DELETE FROM dummies WHERE batch_id = ?", (batch.batch_id,)
            )
            self.held.delete(
                connection, batch.survey_id, "batch_id = ?", (batch.batch_id,), outcome
            )
            if gone:
                self.dialect.run(
                    connection,
                    f"UPDATE relayed_surveys SET {counters} WHERE survey_id = ?",
                    (*values, batch.survey_id),
                )

    def failed(self, batch: Batch, error: str, *, retry_in: float) -> None:
        """A forward failed: try again after ``retry_in`` seconds."""
        with self.dialect.write() as connection:
            self.dialect.run(
                connection,
                "UPDATE batches SET last_error = ?, leased_until = ? WHERE batch_id = ?",
                (error[:500], iso(utc_now() + timedelta(seconds=retry_in)), batch.batch_id),
            )

    def pending_batches(self, survey_id: str) -> list[tuple[str, str, int, int, str | None]]:
        """(batch id, unit, size, attempts, last error) of batches not yet acknowledged."""
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT batch_id, unit, size, attempts, last_error FROM "
                "batches WHERE survey_id = ? ORDER BY batch_id",
                (survey_id,),
            ).fetchall()
        return [tuple(row) for row in rows]

    def discard_closed(self, survey_id: str) -> int:
        """Delete units of a closed survey that wait for no batch (they can never form one)."""
        with self.dialect.write() as connection:
            count = self.held.delete(connection, survey_id, "batch_id IS NULL", (), DISCARDED)
            if count:
                self.dialect.run(
                    connection,
                    "UPDATE relayed_surveys SET discarded_reports = "
                    "discarded_reports + ? WHERE survey_id = ?",
                    (count, survey_id),
                )
        return int(count)
