"""The relay's storage: held sealed units, formed batches, relayed surveys.

SQLite by default, PostgreSQL with a ``postgresql://`` DSN, with the
aggregator's conventions: numbered migrations per backend
(``migrations/<backend>/NNNN_name.sql``, applied by :meth:`RelayStorage.migrate`),
short transactions, an acknowledgement only after COMMIT (SQLite: WAL,
``synchronous=FULL``).  Tables (``migrations/*/0001_initial.sql``):

* ``relayed_surveys``: what the relay forwards for whom: the aggregator's URL,
  its relay credential, its pinned signing key, the signed survey document as
  last verified (state, ``min_batch``, shuffle unit) and counters.
* ``held``: sealed units waiting for a batch.  The key is SHA-256 of (survey,
  unit, sealed bytes), so the same bytes sent twice are held once and the rows
  carry no arrival order; no row holds an address, a header or a time.
* ``windows``: per (survey, unit), when the current batch window opened.
* ``batches``: batches formed and not yet acknowledged; their units stay in
  ``held`` (``batch_id`` set) until the aggregator acknowledges the batch.
* ``enrolment_digests``: SHA-256 digests of the aggregator's enrolment tokens;
  spending one records the digest of the submission it admitted.
* ``relay_secrets`` (0002): the key that turns a client address into the pseudonym
  the rate limiter counts (relay/api.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from deniable.aggregator.storage.base import migrations
from deniable.aggregator.storage.timestamps import iso, utc_now
from deniable.errors import Conflict, DeniableError, Forbidden, NotFound, StorageError

MIGRATIONS = Path(__file__).with_name("migrations")
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
EXTENSION = "deniable.relay.storage"

SURVEY_COLUMNS = """survey_id, aggregator_url, credential, signing_key, key_sequence, document,
    status, min_batch, shuffle_unit, require_enrolment, refreshed_at, forwarded_batches,
    forwarded_reports, smallest_batch, discarded_reports"""


@dataclass(frozen=True, kw_only=True)
class RelayedSurvey:
    """One survey this relay forwards, as stored."""

    survey_id: str
    aggregator_url: str
    credential: str
    signing_key: str
    key_sequence: int | None
    document: str
    status: str
    min_batch: int
    shuffle_unit: str
    require_enrolment: bool
    refreshed_at: str
    forwarded_batches: int = 0
    forwarded_reports: int = 0
    smallest_batch: int | None = None
    discarded_reports: int = 0

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    @classmethod
    def from_row(cls, row: tuple) -> RelayedSurvey:
        names = [n.strip() for n in SURVEY_COLUMNS.split(",")]
        values = dict(zip(names, row, strict=True))
        values["require_enrolment"] = bool(values["require_enrolment"])
        values["refreshed_at"] = iso(values["refreshed_at"])
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class Batch:
    """A formed batch: its id, survey, unit and sealed units (in storage order)."""

    batch_id: str
    survey_id: str
    unit: str
    sealed: list[bytes]


def held_id(survey_id: str, unit: str, sealed: bytes) -> bytes:
    """The held row's key: SHA-256 of survey, unit and bytes (no arrival order in it)."""
    digest = hashlib.sha256()
    for part in (survey_id.encode(), unit.encode(), sealed):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.digest()


def submission_digest(survey_id: str, units: list[tuple[str, bytes]]) -> str:
    """What an enrolment token admitted: the submission's held ids, order-free."""
    ids = sorted(held_id(survey_id, unit, sealed) for unit, sealed in units)
    return hashlib.sha256(b"".join(ids)).hexdigest()


def token_digest(token: str) -> str:
    """An enrolment token as the aggregator hands it over: SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class RelayStorage:
    """The relay's storage protocol; subclasses say how one transaction runs."""

    backend: str
    placeholder = "?"
    for_update = ""

    # -- dialect ---------------------------------------------------------------------------
    def _transaction(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self) -> contextlib.AbstractContextManager[Any]:
        """A transaction that only reads (SQLite: takes no write lock)."""
        return self._transaction()

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _run(self, connection: Any, sql: str, params: tuple = ()) -> Any:
        return connection.execute(self._sql(sql), params)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def migrate(self) -> int:
        raise NotImplementedError

    def ping(self) -> None:
        with self._transaction() as connection:
            self._run(connection, "SELECT 1").fetchone()

    # -- surveys ---------------------------------------------------------------------------
    def add_survey(self, survey: RelayedSurvey, units: list[str]) -> None:
        """Store a survey to relay and open a window for each of its units (Conflict if known)."""
        now = iso(utc_now())
        with self._transaction() as connection:
            found = self._run(connection, "SELECT 1 FROM relayed_surveys WHERE survey_id = ?",
                              (survey.survey_id,)).fetchone()  # fmt: skip
            if found:
                raise Conflict(f"survey {survey.survey_id!r} is relayed already")
            self._run(connection, f"INSERT INTO relayed_surveys ({SURVEY_COLUMNS}) VALUES "
                      f"({', '.join('?' * 15)})",
                      (survey.survey_id, survey.aggregator_url, survey.credential,
                       survey.signing_key, survey.key_sequence, survey.document, survey.status,
                       survey.min_batch, survey.shuffle_unit, survey.require_enrolment,
                       now, 0, 0, None, 0))  # fmt: skip
            for unit in units:
                self._run(connection, "INSERT INTO windows (survey_id, unit, opened_at) "
                          "VALUES (?, ?, ?)", (survey.survey_id, unit, now))  # fmt: skip

    def update_survey(
        self, survey_id: str, *, document: str, status: str, signing_key: str,
        key_sequence: int | None,
    ) -> None:  # fmt: skip
        """Record a fresh, verified survey document (state and pinned key)."""
        with self._transaction() as connection:
            self._run(connection, "UPDATE relayed_surveys SET document = ?, status = ?, "
                      "signing_key = ?, key_sequence = ?, refreshed_at = ? WHERE survey_id = ?",
                      (document, status, signing_key, key_sequence, iso(utc_now()),
                       survey_id))  # fmt: skip

    def get_survey(self, survey_id: str) -> RelayedSurvey:
        with self._read() as connection:
            row = self._run(connection, f"SELECT {SURVEY_COLUMNS} FROM relayed_surveys "
                            "WHERE survey_id = ?", (survey_id,)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        return RelayedSurvey.from_row(row)

    def list_surveys(self) -> list[RelayedSurvey]:
        with self._read() as connection:
            rows = self._run(connection, f"SELECT {SURVEY_COLUMNS} FROM relayed_surveys "
                             "ORDER BY survey_id").fetchall()  # fmt: skip
        return [RelayedSurvey.from_row(row) for row in rows]

    def remove_survey(self, survey_id: str) -> int:
        """Forget a survey and delete everything held for it; return the units deleted."""
        with self._transaction() as connection:
            count = self._run(connection, "SELECT COUNT(*) FROM held WHERE survey_id = ?",
                              (survey_id,)).fetchone()[0]  # fmt: skip
            for table in ("held", "batches", "windows", "enrolment_digests"):
                self._run(connection, f"DELETE FROM {table} WHERE survey_id = ?", (survey_id,))
            deleted = self._run(connection, "DELETE FROM relayed_surveys WHERE survey_id = ?",
                                (survey_id,)).rowcount  # fmt: skip
        if not deleted:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        return int(count)

    def secret(self, name: str) -> bytes:
        """A random 32-byte secret shared by every process on this database (made once)."""
        with self._transaction() as connection:
            self._run(connection, "INSERT INTO relay_secrets (name, value) VALUES (?, ?) "
                      "ON CONFLICT DO NOTHING", (name, secrets.token_bytes(32)))  # fmt: skip
            (value,) = self._run(connection, "SELECT value FROM relay_secrets WHERE name = ?",
                                 (name,)).fetchone()  # fmt: skip
        return bytes(value)

    # -- enrolment ---------------------------------------------------------------------------
    def add_enrolment_digests(self, survey_id: str, digests: list[str]) -> int:
        """Add digests not known yet; return how many were new."""
        added = 0
        with self._transaction() as connection:
            for digest in digests:
                added += self._run(connection, "INSERT INTO enrolment_digests (survey_id, digest)"
                                   " VALUES (?, ?) ON CONFLICT DO NOTHING",
                                   (survey_id, digest)).rowcount  # fmt: skip
        return added

    def sync_enrolment_digests(self, survey_id: str, digests: list[str]) -> tuple[int, int]:
        """Make the unspent digests the aggregator's: add new ones, forget unspent ones it no
        longer lists (revoked there); spent ones stay.  Returns (added, forgotten)."""
        listed = set(digests)
        with self._transaction() as connection:
            unspent = {d for (d,) in self._run(connection, "SELECT digest FROM enrolment_digests "
                                               "WHERE survey_id = ? AND spent_by IS NULL",
                                               (survey_id,)).fetchall()}  # fmt: skip
            for digest in unspent - listed:
                self._run(connection, "DELETE FROM enrolment_digests WHERE survey_id = ? AND "
                          "digest = ? AND spent_by IS NULL", (survey_id, digest))  # fmt: skip
        added = self.add_enrolment_digests(survey_id, sorted(listed - unspent))
        return added, len(unspent - listed)

    def enrolment_counts(self, survey_id: str) -> tuple[int, int]:
        """(known, spent) enrolment digests of a survey."""
        with self._read() as connection:
            known, spent = self._run(connection, "SELECT COUNT(*), COUNT(spent_by) FROM "
                                     "enrolment_digests WHERE survey_id = ?",
                                     (survey_id,)).fetchone()  # fmt: skip
        return int(known), int(spent)

    # -- intake --------------------------------------------------------------------------------
    def hold(
        self, survey_id: str, units: list[tuple[str, bytes]], *, enrolment_token: str | None
    ) -> int:
        """Hold one submission's sealed units durably, all or nothing; return how many are new.

        With ``enrolment_token`` (a survey that requires enrolment) its digest must be
        known and unspent, or spent by this very submission (a resend): Forbidden
        otherwise.  The token is spent in the same transaction.
        """
        with self._transaction() as connection:
            return self._hold_in(connection, survey_id, units, enrolment_token)

    def _hold_in(
        self, connection: Any, survey_id: str, units: list[tuple[str, bytes]],
        enrolment_token: str | None,
    ) -> int:  # fmt: skip
        """:meth:`hold` inside the caller's transaction."""
        row = self._run(connection, "SELECT status FROM relayed_surveys WHERE survey_id = ?"
                        + self.for_update.replace("UPDATE", "SHARE"),
                        (survey_id,)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        if enrolment_token is not None:
            submission = submission_digest(survey_id, units)
            digest = token_digest(enrolment_token)
            found = self._run(connection, "SELECT spent_by FROM enrolment_digests WHERE "
                              "survey_id = ? AND digest = ?" + self.for_update,
                              (survey_id, digest)).fetchone()  # fmt: skip
            if found is None or found[0] not in (None, submission):
                raise Forbidden(f"the enrolment token is not valid for survey {survey_id!r} "
                                "(unknown, or spent)")  # fmt: skip
            if found[0] == submission:
                return 0  # a resend of the admitted submission: held already (or forwarded)
        if row[0] != "open":
            raise Conflict(f"survey {survey_id!r} is closed")
        added = 0
        for unit, sealed in units:
            added += self._run(connection, "INSERT INTO held (id, survey_id, unit, sealed) "
                               "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                               (held_id(survey_id, unit, sealed), survey_id, unit,
                                sealed)).rowcount  # fmt: skip
        if enrolment_token is not None:
            self._run(connection, "UPDATE enrolment_digests SET spent_by = ? WHERE "
                      "survey_id = ? AND digest = ?",
                      (submission, survey_id, token_digest(enrolment_token)))  # fmt: skip
        return added

    def held_counts(self, survey_id: str) -> dict[str, tuple[int, int]]:
        """Per unit: (units waiting for a batch, units in batches not yet acknowledged)."""
        with self._read() as connection:
            rows = self._run(connection, "SELECT unit, COUNT(*) - COUNT(batch_id), "
                             "COUNT(batch_id) FROM held WHERE survey_id = ? GROUP BY unit",
                             (survey_id,)).fetchall()  # fmt: skip
        return {unit: (int(waiting), int(batched)) for unit, waiting, batched in rows}

    def held_rows(self, survey_id: str) -> list[tuple[str, bytes]]:
        """Every held (unit, sealed bytes) of a survey (for audits and tests)."""
        with self._read() as connection:
            rows = self._run(connection, "SELECT unit, sealed FROM held WHERE survey_id = ?",
                             (survey_id,)).fetchall()  # fmt: skip
        return [(unit, bytes(sealed)) for unit, sealed in rows]

    # -- batches -------------------------------------------------------------------------------
    def form_batches(self, survey_id: str, *, window: float) -> list[str]:
        """Form a batch of each unit that has ``min_batch`` units waiting and a window elapsed.

        A batch takes every waiting unit of its (survey, unit); its window reopens.
        Returns the ids of the batches formed.
        """
        now = utc_now()
        opened_before = iso(now - timedelta(seconds=window))
        formed = []
        with self._transaction() as connection:
            row = self._run(connection, "SELECT min_batch, status FROM relayed_surveys WHERE "
                            "survey_id = ?" + self.for_update, (survey_id,)).fetchone()  # fmt: skip
            if row is None or row[1] != "open":
                return []
            min_batch = int(row[0])
            ready = self._run(connection, "SELECT w.unit, (SELECT COUNT(*) FROM held h WHERE "
                              "h.survey_id = w.survey_id AND h.unit = w.unit AND h.batch_id IS "
                              "NULL) FROM windows w WHERE w.survey_id = ? AND w.opened_at <= ?",
                              (survey_id, opened_before)).fetchall()  # fmt: skip
            for unit, waiting in ready:
                if waiting < min_batch:
                    continue
                batch_id = secrets.token_hex(16)
                self._run(connection, "UPDATE held SET batch_id = ? WHERE survey_id = ? AND "
                          "unit = ? AND batch_id IS NULL", (batch_id, survey_id, unit))
                self._run(connection, "INSERT INTO batches (batch_id, survey_id, unit, size) "
                          "VALUES (?, ?, ?, ?)", (batch_id, survey_id, unit, int(waiting)))
                self._run(connection, "UPDATE windows SET opened_at = ? WHERE survey_id = ? AND "
                          "unit = ?", (iso(now), survey_id, unit))  # fmt: skip
                formed.append(batch_id)
        return formed

    def lease_batches(self, *, lease: float, limit: int = 16) -> list[Batch]:
        """Batches to forward now, each leased for ``lease`` seconds (one forwarder at a time)."""
        now = utc_now()
        batches = []
        with self._transaction() as connection:
            rows = self._run(connection, "SELECT batch_id, survey_id, unit FROM batches WHERE "
                             "leased_until IS NULL OR leased_until < ? ORDER BY batch_id LIMIT ?"
                             + self.for_update, (iso(now), limit)).fetchall()  # fmt: skip
            for batch_id, survey_id, unit in rows:
                self._run(connection, "UPDATE batches SET leased_until = ?, attempts = attempts "
                          "+ 1 WHERE batch_id = ?",
                          (iso(now + timedelta(seconds=lease)), batch_id))  # fmt: skip
                sealed = self._run(connection, "SELECT sealed FROM held WHERE batch_id = ?",
                                   (batch_id,)).fetchall()  # fmt: skip
                batches.append(Batch(batch_id=batch_id, survey_id=survey_id, unit=unit,
                                     sealed=[bytes(s) for (s,) in sealed]))  # fmt: skip
        return batches

    def release_leases(self) -> None:
        """Make every formed batch due now (a forwarder starting after a crash)."""
        with self._transaction() as connection:
            self._run(connection, "UPDATE batches SET leased_until = NULL")

    def acknowledged(self, batch: Batch) -> None:
        """The aggregator stored the batch: delete its units, count it."""
        with self._transaction() as connection:
            gone = self._run(connection, "DELETE FROM batches WHERE batch_id = ?",
                             (batch.batch_id,)).rowcount  # fmt: skip
            self._run(connection, "DELETE FROM held WHERE batch_id = ?", (batch.batch_id,))
            if gone:
                size = len(batch.sealed)
                self._run(connection, "UPDATE relayed_surveys SET forwarded_batches = "
                          "forwarded_batches + 1, forwarded_reports = forwarded_reports + ?, "
                          "smallest_batch = CASE WHEN smallest_batch IS NULL OR smallest_batch "
                          "> ? THEN ? ELSE smallest_batch END WHERE survey_id = ?",
                          (size, size, size, batch.survey_id))  # fmt: skip

    def discard(self, batch: Batch) -> None:
        """The aggregator refused the batch for good (its survey closed): delete, count it."""
        with self._transaction() as connection:
            gone = self._run(connection, "DELETE FROM batches WHERE batch_id = ?",
                             (batch.batch_id,)).rowcount  # fmt: skip
            self._run(connection, "DELETE FROM held WHERE batch_id = ?", (batch.batch_id,))
            if gone:
                self._run(connection, "UPDATE relayed_surveys SET discarded_reports = "
                          "discarded_reports + ? WHERE survey_id = ?",
                          (len(batch.sealed), batch.survey_id))  # fmt: skip

    def failed(self, batch: Batch, error: str, *, retry_in: float) -> None:
        """A forward failed: try again after ``retry_in`` seconds."""
        with self._transaction() as connection:
            self._run(connection, "UPDATE batches SET last_error = ?, leased_until = ? WHERE "
                      "batch_id = ?", (error[:500], iso(utc_now() + timedelta(seconds=retry_in)),
                                       batch.batch_id))  # fmt: skip

    def pending_batches(self, survey_id: str) -> list[tuple[str, str, int, int, str | None]]:
        """(batch id, unit, size, attempts, last error) of batches not yet acknowledged."""
        with self._read() as connection:
            rows = self._run(connection, "SELECT batch_id, unit, size, attempts, last_error FROM "
                             "batches WHERE survey_id = ? ORDER BY batch_id",
                             (survey_id,)).fetchall()  # fmt: skip
        return [tuple(row) for row in rows]

    def discard_closed(self, survey_id: str) -> int:
        """Delete units of a closed survey that wait for no batch (they can never form one)."""
        with self._transaction() as connection:
            count = self._run(connection, "DELETE FROM held WHERE survey_id = ? AND batch_id IS "
                              "NULL", (survey_id,)).rowcount  # fmt: skip
            if count:
                self._run(connection, "UPDATE relayed_surveys SET discarded_reports = "
                          "discarded_reports + ? WHERE survey_id = ?", (count, survey_id))
        return int(count)


# Most submissions one group commit takes (the rest wait for the next).
GROUP_MOST = 256


class _Pending:
    """One submission waiting for a group commit, and its outcome."""

    __slots__ = ("added", "done", "enrolment_token", "error", "survey_id", "units")

    def __init__(self, survey_id: str, units: list[tuple[str, bytes]],
                 enrolment_token: str | None) -> None:  # fmt: skip
        self.survey_id, self.units, self.enrolment_token = survey_id, units, enrolment_token
        self.added = 0
        self.error: BaseException | None = None
        self.done = threading.Event()


class SqliteRelayStorage(RelayStorage):
    """The relay's storage in one SQLite file (WAL, ``synchronous=FULL``)."""

    backend = "sqlite"

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._group_lock = threading.Lock()
        self._group_wake = threading.Condition(self._group_lock)
        self._group_pid: int | None = None
        self._queue: list[_Pending] = []

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout_ms / 1000,
                                         isolation_level=None, check_same_thread=False)  # fmt: skip
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
        except (OSError, sqlite3.Error) as error:
            raise StorageError(f"sqlite {self.path}: {error}") from None
        return connection

    def _connection(self) -> sqlite3.Connection:
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.connection = self._connect()
            local.pid = os.getpid()
        return local.connection

    @contextlib.contextmanager
    def _transaction(self, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Connection]:
        connection = self._connection()
        try:
            connection.execute(f"BEGIN {mode}")
        except sqlite3.Error as error:
            self._local.pid = None
            raise StorageError(f"sqlite {self.path}: {error}") from None
        try:
            yield connection
            connection.execute("COMMIT")
        except BaseException as error:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            if isinstance(error, sqlite3.Error):
                raise StorageError(f"sqlite {self.path}: {error}") from None
            raise

    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction("DEFERRED")

    def hold(
        self, survey_id: str, units: list[tuple[str, bytes]], *, enrolment_token: str | None
    ) -> int:
        """:meth:`RelayStorage.hold`, committed together with concurrent submissions.

        Group commit: one thread of this process takes every submission waiting and
        holds each in its own savepoint of one transaction, so one fsync'ed COMMIT
        acknowledges them all; a submission refused (closed, token spent) rolls back
        to its savepoint alone.  Each caller returns only after that COMMIT.
        """
        item = _Pending(survey_id, units, enrolment_token)
        with self._group_lock:
            if self._group_pid != os.getpid():  # first use in this process (or after a fork)
                self._group_pid = os.getpid()
                self._queue = []
                threading.Thread(target=self._commit_groups, name="deniable-relay-commit",
                                 daemon=True).start()  # fmt: skip
            self._queue.append(item)
            self._group_wake.notify()
        item.done.wait()
        if item.error is not None:
            raise item.error
        return item.added

    def _commit_groups(self) -> None:
        while True:
            with self._group_lock:
                while not self._queue:
                    self._group_wake.wait()
                group, self._queue = self._queue[:GROUP_MOST], self._queue[GROUP_MOST:]
            try:
                with self._transaction() as connection:
                    for item in group:
                        connection.execute("SAVEPOINT submission")
                        try:
                            item.added = self._hold_in(connection, item.survey_id, item.units,
                                                       item.enrolment_token)  # fmt: skip
                        except DeniableError as error:
                            connection.execute("ROLLBACK TO submission")
                            item.error = error
                        connection.execute("RELEASE submission")
            except BaseException as error:  # noqa: BLE001 - every waiting caller hears of it
                failure = error if isinstance(error, DeniableError) else StorageError(
                    f"sqlite {self.path}: {error}")  # fmt: skip
                for item in group:
                    item.error = failure
            for item in group:
                item.done.set()

    def migrate(self) -> int:
        connection = self._connect()
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("CREATE TABLE IF NOT EXISTS relay_schema_version ("
                               " version INTEGER PRIMARY KEY, name TEXT NOT NULL)")  # fmt: skip
        finally:
            connection.close()
        with self._transaction() as connection:
            current = connection.execute(
                "SELECT COALESCE(MAX(version), 0) FROM relay_schema_version").fetchone()[0]
            for migration in migrations(self.backend, MIGRATIONS):
                if migration.version <= current:
                    continue
                for statement in _statements(migration.sql):
                    connection.execute(statement)
                connection.execute("INSERT INTO relay_schema_version (version, name) "
                                   "VALUES (?, ?)", (migration.version, migration.name))
                current = migration.version
        return current

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.pid = None
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()


def _statements(script: str) -> list[str]:
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]


class PostgresRelayStorage(RelayStorage):
    """The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

    backend = "postgresql"
    placeholder = "%s"
    for_update = " FOR UPDATE"

    def __init__(self, dsn: str, *, pool_size: int = 10, pool_timeout: float = 10) -> None:
        self.dsn, self.pool_size, self.pool_timeout = dsn, pool_size, pool_timeout
        self._pool: Any = None
        self._pool_lock = threading.Lock()
        self._pid = os.getpid()

    def _get_pool(self) -> Any:
        from psycopg_pool import ConnectionPool, PoolTimeout

        with self._pool_lock:
            if self._pool is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._pool = ConnectionPool(self.dsn, min_size=1, max_size=self.pool_size,
                                            timeout=self.pool_timeout, open=False,
                                            name="deniable-relay",
                                            kwargs={"autocommit": True})  # fmt: skip
                try:
                    self._pool.open(wait=True, timeout=self.pool_timeout)
                except PoolTimeout as error:
                    self._pool = None
                    raise StorageError(f"postgresql: cannot connect ({error})") from None
            return self._pool

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self._get_pool().connection() as connection, connection.transaction():
                yield connection
        except PoolTimeout as error:
            raise StorageError(f"postgresql: no connection available ({error})") from None
        except psycopg.Error as error:
            raise StorageError(f"postgresql: {type(error).__name__}: {error}") from None

    def migrate(self) -> int:
        with self._transaction() as connection:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (0x72656C61,))
            connection.execute("CREATE TABLE IF NOT EXISTS relay_schema_version ("
                               " version integer PRIMARY KEY, name text NOT NULL)")  # fmt: skip
            (current,) = connection.execute(
                "SELECT COALESCE(MAX(version), 0) FROM relay_schema_version").fetchone()
            for migration in migrations(self.backend, MIGRATIONS):
                if migration.version <= current:
                    continue
                connection.execute(migration.sql.encode("utf-8"))
                connection.execute("INSERT INTO relay_schema_version (version, name) "
                                   "VALUES (%s, %s)", (migration.version, migration.name))
                current = migration.version
        return current

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
            self._pool = None


def open_storage(settings: Mapping[str, Any]) -> RelayStorage:
    """The backend for ``settings["DATABASE"]`` (not yet migrated)."""
    database = str(settings["DATABASE"])
    if database.startswith(POSTGRES_SCHEMES):
        return PostgresRelayStorage(database, pool_size=settings.get("POOL_SIZE", 10),
                                    pool_timeout=settings.get("POOL_TIMEOUT", 10))  # fmt: skip
    return SqliteRelayStorage(database, busy_timeout_ms=settings.get("BUSY_TIMEOUT_MS", 30_000))


def init_app(app: Any) -> None:
    storage = open_storage(app.config)
    if app.config.get("MIGRATE", True):
        storage.migrate()
        storage.close()
    app.extensions[EXTENSION] = storage


def current_storage() -> RelayStorage:
    from flask import current_app

    return current_app.extensions[EXTENSION]
