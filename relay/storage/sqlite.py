"""The relay's storage in one SQLite file (WAL, ``synchronous=FULL``), with group commit.

A raw copy of the files (the database, its ``-wal`` and ``-shm``) must not say which
enrolment token admitted which forwarded unit (docs/threat-model.md §5).  SQLite keeps
deleted content in two places unless told otherwise: the free space of the database's
pages, and the old frames of the write-ahead log, which still hold every page as it
was when the link was written.  So the relay's connections run with ``secure_delete``
(deleted cells and freed pages are overwritten with zeros), and once units are
forwarded and their links deleted (:meth:`SqliteRelayStorage.acknowledged`,
``discard``, ``discard_closed``) a ``wal_checkpoint(TRUNCATE)`` copies the zeroed pages
into the database and empties the log.
"""

from __future__ import annotations

import os
import sqlite3
import threading

from deniable.errors import DeniableError, StorageError
from deniable.service.storage import SqliteServiceStorage

from .base import RelayStorage
from .records import Batch

__all__ = ["SqliteRelayStorage"]

# Most submissions one group commit takes (the rest wait for the next).
GROUP_MOST = 256
# Longest a checkpoint after a forward waits for readers (and holds writers back), in ms.
CHECKPOINT_WAIT_MS = 1000


class _Pending:
    """One submission waiting for a group commit, and its outcome."""

    __slots__ = ("added", "done", "enrolment_token", "error", "key_id", "survey_id", "units")

    def __init__(
        self,
        survey_id: str,
        units: list[tuple[str, bytes]],
        enrolment_token: str | None,
        key_id: str,
    ) -> None:
        self.survey_id, self.units, self.enrolment_token = survey_id, units, enrolment_token
        self.key_id = key_id
        self.added = 0
        self.error: BaseException | None = None
        self.done = threading.Event()


class SqliteRelayStorage(SqliteServiceStorage, RelayStorage):
    """The relay's storage in one SQLite file (WAL, ``synchronous=FULL``).

    The forwarder and each worker's group commit write in turn, on the kit's write turn
    (:class:`~deniable.service.storage.SqliteServiceStorage`): the intake's p99 fell
    when they stopped waiting on SQLite's busy handler."""

    # Why secure_delete: see the module docstring (a copy of the file holds no link).
    pragmas = ("secure_delete = ON",)

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        super().__init__(path, busy_timeout_ms=busy_timeout_ms)
        self._group_lock = threading.Lock()
        self._group_wake = threading.Condition(self._group_lock)
        self._group_pid: int | None = None
        self._queue: list[_Pending] = []
        self._forget_pending = False  # a checkpoint after a delete has yet to finish

    def hold(
        self,
        survey_id: str,
        units: list[tuple[str, bytes]],
        *,
        enrolment_token: str | None,
        key_id: str,
    ) -> int:
        """:meth:`RelayStorage.hold`, committed together with concurrent submissions.

        Group commit: one thread of this process takes every submission waiting and
        holds each in its own savepoint of one transaction, so one fsync'ed COMMIT
        acknowledges them all; a submission refused (closed, token spent) rolls back
        to its savepoint alone.  Each caller returns only after that COMMIT.
        """
        item = _Pending(survey_id, units, enrolment_token, key_id)
        with self._group_lock:
            if self._group_pid != os.getpid():  # first use in this process (or after a fork)
                self._group_pid = os.getpid()
                self._queue = []
                threading.Thread(
                    target=self._commit_groups, name="deniable-relay-commit", daemon=True
                ).start()
            self._queue.append(item)
            self._group_wake.notify()
        item.done.wait()
        if item.error is not None:
            raise item.error
        return item.added

    def lease_batches(self, *, lease: float, limit: int = 16) -> list[Batch]:
        # Why here: the forwarder leases on every pass, so a checkpoint a reader held off
        # is tried again within a pass, not only at the next forward.
        if self._forget_pending:
            self.forget_deleted()
        return super().lease_batches(lease=lease, limit=limit)

    def acknowledged(self, batch: Batch) -> None:
        super().acknowledged(batch)
        self.forget_deleted()

    def discard(self, batch: Batch) -> None:
        super().discard(batch)
        self.forget_deleted()

    def discard_closed(self, survey_id: str) -> int:
        count = super().discard_closed(survey_id)
        if count:
            self.forget_deleted()
        return count

    def forget_deleted(self) -> bool:
        """Empty the write-ahead log, so its old frames (pages as they were before a delete)
        leave the files; True if it was emptied.

        Why a TRUNCATE checkpoint rather than the automatic one: the automatic checkpoint
        copies frames into the database but leaves the log file as it was, and its old
        frames, still on disk, hold the token-to-unit links and the sealed units deleted
        since.  TRUNCATE waits for readers of older snapshots and holds new writers back
        while it waits and copies, so it waits at most :data:`CHECKPOINT_WAIT_MS` (not the
        30 s busy timeout: submissions must not queue behind it); the copy itself takes
        milliseconds, once per forwarded batch.  If a reader keeps it from finishing, it is
        tried again on the forwarder's next pass (:meth:`lease_batches`).
        """
        connection = self.dialect.thread_connection()
        # Why the write turn: the checkpoint holds writers back as a write transaction does,
        # so it queues among them rather than on SQLite's busy handler.
        with self.dialect.write_turn.held(wait=CHECKPOINT_WAIT_MS / 1000) as ours:
            if not ours:
                self._forget_pending = True
                return False
            try:
                connection.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
                try:
                    busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                finally:
                    connection.execute(f"PRAGMA busy_timeout = {int(self.dialect.busy_timeout_ms)}")
            except sqlite3.Error as error:
                self._forget_pending = True
                raise StorageError(f"sqlite {self.dialect.path}: {error}") from None
        self._forget_pending = bool(busy)
        return not busy

    def _commit_groups(self) -> None:
        while True:
            with self._group_lock:
                while not self._queue:
                    self._group_wake.wait()
                group, self._queue = self._queue[:GROUP_MOST], self._queue[GROUP_MOST:]
            try:
                with self.dialect.write() as connection:
                    for item in group:
                        # Why no savepoint without a token: such a hold refuses (survey
                        # unknown or closed) before it writes anything, so there is
                        # nothing to roll back; a savepoint would cost two statements.
                        savepoint = item.enrolment_token is not None
                        if savepoint:
                            connection.execute("SAVEPOINT submission")
                        try:
                            item.added = self.held.hold_in(
                                connection,
                                item.survey_id,
                                item.units,
                                item.enrolment_token,
                                item.key_id,
                            )
                        except DeniableError as error:
                            if savepoint:
                                connection.execute("ROLLBACK TO submission")
                            item.error = error
                        if savepoint:
                            connection.execute("RELEASE submission")
            except BaseException as error:  # noqa: BLE001 - every waiting caller hears of it
                failure = (
                    error
                    if isinstance(error, DeniableError)
                    else StorageError(f"sqlite {self.dialect.path}: {error}")
                )
                for item in group:
                    item.error = failure
            for item in group:
                item.done.set()
