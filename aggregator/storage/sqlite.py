"""SQLite storage: WAL, ``synchronous=FULL``, one long-lived connection per thread.

Writers take the database lock up front (``BEGIN IMMEDIATE``) and wait up to
``BUSY_TIMEOUT_MS`` for it; a write returns only after its COMMIT, which with
``synchronous=FULL`` is on disk, so an acknowledgement is never lost.

Connections are kept per thread (and per process: a forked worker opens its
own) because closing the last connection to a WAL database checkpoints and
syncs it, which cost more than the write itself.  A connection that saw an
error is closed and replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from deniable.errors import AuthenticationError, Conflict, NotFound, StorageError
from deniable.survey import Survey
from deniable.wire import Report

from .base import (
    CLOSED,
    FOLD_BACKLOG,
    FOLD_CHUNK,
    OPEN,
    SURVEY_COLUMNS,
    SURVEY_COLUMNS_UNCOUNTED,
    QuestionStatistics,
    Storage,
    StoredReport,
    SurveyRecord,
    batch_digest,
    check_issuable,
    check_issue_count,
    check_spent,
    definition_text,
    fold_into,
    hash_token,
    initial_statistics,
    iso,
    migrations,
    new_enrolment_token,
    statistics_from_json,
    utc_now,
)

# Below this much free space on the database's file system, /health reports degraded.
MIN_FREE_BYTES = 8 << 20
# Ids stored after the last merge before a batch merges them into report_ids
# (migration 0007): each process holds them in memory (a few MiB), and a merge,
# which rewrites report_ids' pages about once, in order, stays rare.
RECENT_IDS_LIMIT = 50_000
_ID_LOOKUP = 500  # ids per lookup statement (SQLite caps bound parameters)


def _split_statements(script: str) -> list[str]:
    """A script as single statements (sqlite3 can only run a script by committing first)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip() and not current.strip().startswith("--"):
        statements.append(current.strip())
    return [s for s in statements if s]


class FileLock:
    """An exclusive ``flock`` on a file beside the database: one holder among every
    thread and process, and a waiter wakes the moment it is released.

    SQLite's own busy handler polls with sleeps of up to 100 ms, so two workers
    writing in turn left the write lock idle for most of each wait; this one
    polls every 2 ms at most.  Each thread opens its own descriptor: a lock
    belongs to an open file description, so a shared one would let the threads
    of one process in together.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    @contextlib.contextmanager
    def held(self, *, wait: float = 0.0) -> Iterator[bool]:
        """Yield True while holding the lock; False if it is still taken after ``wait`` s."""
        local = self._local
        if getattr(local, "depth", 0):  # already held by this thread: nested, not re-taken
            local.depth += 1
            try:
                yield True
            finally:
                local.depth -= 1
            return
        if getattr(local, "pid", None) != os.getpid():
            try:
                local.descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError as error:
                raise StorageError(f"sqlite lock file {self.path}: {error}") from None
            local.pid = os.getpid()
        deadline, pause = time.monotonic() + wait, 0.0002
        while True:
            try:
                fcntl.flock(local.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(pause)
                pause = min(2 * pause, 0.002)
        local.depth = 1
        try:
            yield True
        finally:
            local.depth = 0
            fcntl.flock(local.descriptor, fcntl.LOCK_UN)


class RecentIds:
    """This process's copy of the ids stored after the last merge into report_ids.

    Source of truth is the database: ``reports`` rows with seq above
    ``report_id_merge.merged_through`` (migration 0007).  It is read and changed
    only under the write lock and the storage's ingest lock, and dropped when an
    ingest fails, so it never holds an id that was not committed.
    """

    def __init__(self) -> None:
        self.invalidate()

    def invalidate(self) -> None:
        self.merged_through: int | None = None
        self.last_seen = 0
        self.ids: dict[tuple[str, str], int] = {}

    def sync(self, connection: sqlite3.Connection) -> None:
        """Catch up with the reports stored since (by any process)."""
        (merged,) = connection.execute("SELECT merged_through FROM report_id_merge").fetchone()
        if merged != self.merged_through:  # another process merged (or first use)
            self.merged_through, self.last_seen, self.ids = merged, merged, {}
        for seq, survey_id, report_id in connection.execute(
            "SELECT seq, survey_id, report_id FROM reports WHERE seq > ? ORDER BY seq",
            (self.last_seen,),
        ):
            self.ids[(survey_id, report_id)] = seq
            self.last_seen = seq

    def merge(self, connection: sqlite3.Connection) -> None:
        """Move these ids into report_ids, sorted, so each of its pages is written about once."""
        connection.execute(
            "INSERT INTO report_ids (survey_id, report_id, seq)"
            " SELECT survey_id, report_id, seq FROM reports WHERE seq > ? AND seq <= ?"
            " ORDER BY survey_id, report_id",
            (self.merged_through, self.last_seen),
        )
        connection.execute("UPDATE report_id_merge SET merged_through = ?", (self.last_seen,))
        self.merged_through, self.ids = self.last_seen, {}


class SqliteStorage(Storage):
    """Storage in one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        super().__init__()
        self.path = Path(path.removeprefix("sqlite:///").removeprefix("sqlite://"))
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._recent = RecentIds()
        self._ingest_lock = threading.Lock()
        self._write_turn = FileLock(self.path.with_name(self.path.name + ".write-lock"))
        self._fold_turn = FileLock(self.path.with_name(self.path.name + ".fold-lock"))

    # -- connections --------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self.path.exists():
                # Why: SQLite would create it 0644 under the usual umask; its -wal and -shm
                # files copy the database file's mode, so they are 0600 too.
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            connection = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_ms / 1000,
                isolation_level=None,  # Why: we issue BEGIN/COMMIT ourselves.
                check_same_thread=False,
            )
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
            # Why: lookups of random report ids touch pages all over report_ids; a
            # 64 MiB page cache (default 2 MiB) keeps them, and checkpointing every
            # 10,000 WAL pages (default 1,000) writes a page touched by many commits once.
            connection.execute("PRAGMA cache_size = -65536")
            connection.execute("PRAGMA wal_autocheckpoint = 10000")
        except (OSError, sqlite3.Error) as error:
            raise StorageError(f"sqlite {self.path}: {error}") from None
        return connection

    def _thread_connection(self) -> sqlite3.Connection:
        """This thread's connection in this process, opened on first use."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            local.connection = self._connect()
            local.pid = os.getpid()
        return local.connection

    def _drop_thread_connection(self) -> None:
        connection = getattr(self._local, "connection", None)
        self._local.pid = None
        if connection is not None:
            with contextlib.suppress(sqlite3.Error):
                connection.close()

    @contextlib.contextmanager
    def _transaction(
        self, mode: str = "IMMEDIATE", *, fresh: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """One transaction: COMMIT on success, else ROLLBACK.

        ``fresh`` uses a connection of its own (closed afterwards), for a
        transaction that stays open while other work runs on this thread, such
        as a streamed export.
        """
        # Why the turn: writers queue on a file lock that hands over within 2 ms.
        turn = (
            self._write_turn.held(wait=self.busy_timeout_ms / 1000)
            if mode == "IMMEDIATE"
            else contextlib.nullcontext(True)
        )
        with turn as ours:
            if not ours:
                raise StorageError(f"sqlite {self.path}: database is locked (write turn)")
            connection = self._connect() if fresh else self._thread_connection()
            healthy = False
            try:
                connection.execute(f"BEGIN {mode}")
                try:
                    yield connection
                except BaseException:
                    connection.execute("ROLLBACK")
                    healthy = True
                    raise
                connection.execute("COMMIT")
                healthy = True
            except sqlite3.Error as error:
                raise StorageError(f"sqlite {self.path}: {error}") from None
            finally:
                if fresh:
                    connection.close()
                elif not healthy:
                    self._drop_thread_connection()

    def close(self) -> None:
        self._drop_thread_connection()

    # -- lifecycle ----------------------------------------------------------------
    def migrate(self) -> int:
        connection = self._connect()
        try:
            # Why: WAL is a property of the file; set once, outside any transaction.
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
        except sqlite3.Error as error:
            raise StorageError(f"sqlite {self.path}: {error}") from None
        finally:
            connection.close()
        with self._transaction() as connection:
            current = connection.execute(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version"
            ).fetchone()[0]
            for migration in migrations(self.backend):
                if migration.version <= current:
                    continue
                for statement in _split_statements(migration.sql):
                    connection.execute(statement)
                connection.execute(
                    "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, iso(utc_now())),
                )
                current = migration.version
        return current

    def schema_version(self) -> int:
        with self._transaction("DEFERRED") as connection:
            exists = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
            if not exists:
                return 0
            row = connection.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            return row.fetchone()[0]

    def ping(self) -> None:
        with self._transaction("DEFERRED") as connection:
            connection.execute("SELECT 1").fetchone()
        # Why: a read answers on a full disk or a read-only file too; writes would not.
        folder = self.path.parent
        if not os.access(self.path, os.W_OK) or not os.access(folder, os.W_OK):
            raise StorageError(f"sqlite {self.path}: the database file is not writable")
        if shutil.disk_usage(folder).free < MIN_FREE_BYTES:
            raise StorageError(f"sqlite {self.path}: the disk is full")

    # -- dialect hooks ------------------------------------------------------------------
    def _read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction("DEFERRED")

    def _write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._transaction()

    # -- surveys ------------------------------------------------------------------------
    def _fetch(
        self, connection: sqlite3.Connection, survey_id: str, *, count: bool = True
    ) -> SurveyRecord:
        columns = SURVEY_COLUMNS if count else SURVEY_COLUMNS_UNCOUNTED
        row = connection.execute(
            f"SELECT {columns} FROM surveys s WHERE s.id = ?", (survey_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no survey {survey_id!r}")
        return self._record(row)

    def create_survey(
        self, survey: Survey, *, results_public: bool, require_enrolment: bool = False
    ) -> SurveyRecord:
        with self._transaction() as connection:
            try:
                connection.execute(
                    "INSERT INTO surveys (id, definition, results_public, status, created_at,"
                    " require_enrolment) VALUES (?, ?, ?, ?, ?, ?)",
                    (survey.id, definition_text(survey), int(results_public), OPEN,
                     iso(utc_now()), int(require_enrolment)),
                )  # fmt: skip
            except sqlite3.IntegrityError:
                raise Conflict(f"survey id {survey.id!r} is taken") from None
            connection.executemany(
                "INSERT INTO question_statistics (survey_id, question_id, position, statistics)"
                " VALUES (?, ?, ?, ?)",
                [(survey.id, qid, pos, json.dumps(zeros))
                 for qid, pos, zeros in initial_statistics(survey)],
            )  # fmt: skip
            return self._fetch(connection, survey.id)

    def get_survey(self, survey_id: str, *, count: bool = True) -> SurveyRecord:
        with self._transaction("DEFERRED") as connection:
            return self._fetch(connection, survey_id, count=count)

    def list_surveys(self, *, offset: int = 0, limit: int | None = None) -> list[SurveyRecord]:
        with self._transaction("DEFERRED") as connection:
            rows = connection.execute(
                f"SELECT {SURVEY_COLUMNS} FROM surveys s ORDER BY s.created_at, s.id"
                " LIMIT ? OFFSET ?",
                (-1 if limit is None else limit, offset),
            ).fetchall()
        return [self._record(row) for row in rows]

    def close_survey(self, survey_id: str) -> SurveyRecord:
        with self._transaction() as connection:
            connection.execute(
                "UPDATE surveys SET status = ?, closed_at = ? WHERE id = ? AND status = ?",
                (CLOSED, iso(utc_now()), survey_id, OPEN),
            )
            return self._fetch(connection, survey_id)

    # -- enrolment tokens ---------------------------------------------------------------------
    def issue_enrolment_tokens(self, survey_id: str, count: int) -> list[str]:
        check_issue_count(count)
        tokens = [new_enrolment_token() for _ in range(count)]
        created_at = iso(utc_now())
        with self._transaction() as connection:
            record = self._fetch(connection, survey_id)
            check_issuable(record)
            connection.executemany(
                "INSERT INTO enrolment_tokens (token_hash, survey_id, created_at) VALUES (?, ?, ?)",
                [(hash_token(token), survey_id, created_at) for token in tokens],
            )
        return tokens

    def enrolment_token_counts(self, survey_id: str) -> tuple[int, int]:
        with self._transaction("DEFERRED") as connection:
            self._fetch(connection, survey_id)
            issued, spent = connection.execute(
                "SELECT COUNT(*), COUNT(spent_at) FROM enrolment_tokens WHERE survey_id = ?",
                (survey_id,),
            ).fetchone()
        return int(issued), int(spent)

    @staticmethod
    def _spend(
        connection: sqlite3.Connection, survey_id: str, token: str | None, digest: str
    ) -> None:
        """Spend ``token`` on the batch ``digest`` in the caller's transaction (or refuse)."""
        if token is None:
            raise AuthenticationError(f"survey {survey_id!r} requires an enrolment token")
        token_hash = hash_token(token)
        spent = connection.execute(
            "UPDATE enrolment_tokens SET spent_at = ?, batch_digest = ?"
            " WHERE token_hash = ? AND survey_id = ? AND spent_at IS NULL AND revoked_at IS NULL",
            (iso(utc_now()), digest, token_hash, survey_id),
        ).rowcount
        if spent == 1:
            return
        row = connection.execute(
            "SELECT batch_digest, revoked_at FROM enrolment_tokens"
            " WHERE token_hash = ? AND survey_id = ?",
            (token_hash, survey_id),
        ).fetchone()
        check_spent(survey_id, row, digest)

    # -- reports ---------------------------------------------------------------------------
    def add_reports(
        self,
        survey_id: str,
        reports: list[Report],
        *,
        enrolment_token: str | None = None,
        operator: bool = False,
    ) -> list[str]:
        received_at = iso(utc_now())
        settled = self._settled_ids(survey_id, reports)
        with (
            self._ingest_lock,
            self._recent_dropped_on_failure(),
            self._transaction() as connection,
        ):
            row = connection.execute(
                "SELECT status, require_enrolment FROM surveys WHERE id = ?", (survey_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no survey {survey_id!r}")
            if row[0] != OPEN:
                raise Conflict(f"survey {survey_id!r} is closed")
            if row[1] and not operator:
                self._spend(connection, survey_id, enrolment_token, batch_digest(reports))
            self._insert_reports(connection, survey_id, reports, received_at, settled)
            backlog = self._backlog(connection, survey_id)
        if backlog:
            # After the commit: the batch is acknowledged whatever happens to the fold.
            with contextlib.suppress(StorageError):
                self._fold_backlog(survey_id)
        return [report.id for report in reports]

    @contextlib.contextmanager
    def _recent_dropped_on_failure(self) -> Iterator[None]:
        """Forget the recent ids if the ingest fails: they may name uncommitted reports."""
        try:
            yield
        except BaseException:
            self._recent.invalidate()
            raise

    @staticmethod
    def _backlog(connection: sqlite3.Connection, survey_id: str) -> bool:
        """More than FOLD_BACKLOG pending reports (walks at most that many index entries)."""
        return connection.execute(
            "SELECT 1 FROM pending WHERE survey_id = ? ORDER BY seq LIMIT 1 OFFSET ?",
            (survey_id, FOLD_BACKLOG),
        ).fetchone() is not None

    def _settled_ids(self, survey_id: str, reports: list[Report]) -> tuple[int, dict[str, int]]:
        """(merged_through, {id: seq} of these ids in report_ids), read before the write lock.

        report_ids only grows, and only a merge (which raises merged_through)
        changes it, so the answer still holds under the write lock while
        merged_through is unchanged (see _insert_reports).
        """
        with self._transaction("DEFERRED") as connection:
            (merged,) = connection.execute(
                "SELECT merged_through FROM report_id_merge"
            ).fetchone()
            return merged, self._lookup_settled(connection, survey_id, [r.id for r in reports])

    @staticmethod
    def _lookup_settled(
        connection: sqlite3.Connection, survey_id: str, ids: list[str]
    ) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(ids), _ID_LOOKUP):  # Why: SQLite caps bound parameters.
            part = ids[start : start + _ID_LOOKUP]
            found.update(
                connection.execute(
                    "SELECT report_id, seq FROM report_ids"
                    f" WHERE survey_id = ? AND report_id IN ({','.join('?' * len(part))})",
                    (survey_id, *part),
                ).fetchall()
            )
        return found

    def _insert_reports(
        self, connection: sqlite3.Connection, survey_id: str, reports: list[Report],
        received_at: str, settled: tuple[int, dict[str, int]],
    ) -> None:  # fmt: skip
        """Insert the new reports and queue them for folding; refuse a reused id.

        The caller holds the write lock (BEGIN IMMEDIATE) and this process's
        ingest lock, so nothing interleaves with these statements.  Ids already
        stored (in report_ids or, after its last merge, in ``self._recent``) are
        looked up first: a retry (same question and payload) is acknowledged
        again and not stored twice; a reused id raises Conflict and the caller's
        transaction rolls back.
        """
        incoming: dict[str, Report] = {}
        for report in reports:
            previous = incoming.setdefault(report.id, report)
            if previous is not report and previous != report:
                raise Conflict(f"report id {report.id} appears twice with different bodies")
        recent = self._recent
        recent.sync(connection)
        merged_then, stored = settled
        if recent.merged_through != merged_then:  # a merge ran since the lookup: redo it
            stored = self._lookup_settled(connection, survey_id, list(incoming))
        stored = {i: seq for i, seq in stored.items() if i in incoming}
        for i in incoming:
            if (seq := recent.ids.get((survey_id, i))) is not None:
                stored[i] = seq
        seqs = list(stored.values())
        for start in range(0, len(seqs), _ID_LOOKUP):
            part = seqs[start : start + _ID_LOOKUP]
            for report_id, question_id, payload in connection.execute(
                "SELECT report_id, question_id, payload FROM reports"
                f" WHERE seq IN ({','.join('?' * len(part))})",
                part,
            ):
                report = incoming[report_id]
                if (report.question, report.payload) != (question_id, payload):
                    raise Conflict(f"report id {report_id} was already used with another body")
        new = [report for report in incoming.values() if report.id not in stored]
        if not new:
            return
        before = recent.last_seen
        connection.executemany(
            "INSERT INTO reports (survey_id, report_id, question_id, payload, received_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [(survey_id, r.id, r.question, r.payload, received_at) for r in new],
        )
        connection.execute(
            "INSERT INTO pending (seq, survey_id) SELECT seq, survey_id FROM reports WHERE seq > ?",
            (before,),
        )
        recent.sync(connection)
        if len(recent.ids) > RECENT_IDS_LIMIT:
            recent.merge(connection)

    def export_reports(self, survey_id: str) -> Iterator[StoredReport]:
        self.get_survey(survey_id, count=False)  # Why: NotFound before the first byte is streamed.
        return self._export(survey_id)

    def _export(self, survey_id: str) -> Iterator[StoredReport]:
        # Why: one read transaction is one WAL snapshot for the whole export.
        with self._transaction("DEFERRED", fresh=True) as connection:
            cursor = connection.execute(
                "SELECT seq, report_id, question_id, payload, received_at FROM reports"
                " WHERE survey_id = ? ORDER BY seq",
                (survey_id,),
            )
            while rows := cursor.fetchmany(1000):
                for seq, report_id, question_id, payload, received_at in rows:
                    yield StoredReport(seq=seq, id=report_id, question=question_id,
                                       payload=payload, received_at=iso(received_at))  # fmt: skip

    def count_reports(self, survey_id: str | None = None) -> int:
        with self._transaction("DEFERRED") as connection:
            if survey_id is None:
                return connection.execute("SELECT COUNT(*) FROM reports").fetchone()[0]
            return connection.execute(
                "SELECT COUNT(*) FROM reports WHERE survey_id = ?", (survey_id,)
            ).fetchone()[0]

    # -- results ---------------------------------------------------------------------------
    def fold(self, survey_id: str, *, chunk: int = 10_000) -> dict[str, QuestionStatistics]:
        while True:
            with self._transaction() as connection:
                statistics, folded = self._fold_chunk(connection, survey_id, chunk)
            if folded < chunk:
                return statistics

    def _fold_backlog(self, survey_id: str) -> None:
        """Fold a backlog with the counting done outside the write lock (after an ingest).

        The pending rows and statistics are read in one snapshot, folded with no
        lock held, and written back only if no other fold ran meanwhile (folds
        always take the oldest pending rows, so the first pending seq and every
        ``n`` are unchanged exactly then); otherwise that fold did the work.  One
        backlog fold runs at a time across processes: the others skip it rather
        than count the same rows (results calls still fold whatever remains).
        """
        with self._fold_turn.held() as turn:
            if turn:
                self._fold_backlog_chunks(survey_id)

    def _fold_backlog_chunks(self, survey_id: str) -> None:
        while True:
            with self._transaction("DEFERRED") as connection:
                record, current, rows = self._read_pending(connection, survey_id, FOLD_CHUNK)
            if not rows:
                return
            updated = fold_into(record.survey, current, ((q, p) for _, q, p in rows))
            with self._transaction() as connection:
                first = connection.execute(
                    "SELECT seq FROM pending WHERE survey_id = ? ORDER BY seq LIMIT 1", (survey_id,)
                ).fetchone()
                counts = dict(connection.execute(
                    "SELECT question_id, n FROM question_statistics WHERE survey_id = ?",
                    (survey_id,),
                ).fetchall())  # fmt: skip
                if first != (rows[0][0],) or counts != {q: s.n for q, s in current.items()}:
                    return
                self._write_fold(connection, survey_id, current, updated, rows[-1][0])
            if len(rows) < FOLD_CHUNK:
                return

    def _read_pending(
        self, connection: sqlite3.Connection, survey_id: str, chunk: int
    ) -> tuple[SurveyRecord, dict[str, QuestionStatistics], list[tuple[int, str, str]]]:
        """The survey, its folded statistics and its oldest ``chunk`` pending reports."""
        record = self._fetch(connection, survey_id, count=False)
        current = {
            qid: QuestionStatistics(question=qid, n=n, statistics=statistics_from_json(s))
            for qid, n, s in connection.execute(
                "SELECT question_id, n, statistics FROM question_statistics"
                " WHERE survey_id = ? ORDER BY position",
                (survey_id,),
            )
        }
        # Why the join: pending holds seqs only; question and payload live in reports.
        rows = connection.execute(
            "SELECT p.seq, r.question_id, r.payload FROM pending p JOIN reports r ON r.seq = p.seq"
            " WHERE p.survey_id = ? ORDER BY p.seq LIMIT ?",
            (survey_id, chunk),
        ).fetchall()
        return record, current, rows

    @staticmethod
    def _write_fold(
        connection: sqlite3.Connection,
        survey_id: str,
        current: dict[str, QuestionStatistics],
        updated: dict[str, QuestionStatistics],
        last: int,
    ) -> None:
        """Drop the folded pending rows (seq <= ``last``) and store the new statistics."""
        connection.execute(
            "DELETE FROM pending WHERE survey_id = ? AND seq <= ?", (survey_id, last)
        )
        connection.executemany(
            "UPDATE question_statistics SET n = ?, statistics = ?"
            " WHERE survey_id = ? AND question_id = ?",
            [(s.n, json.dumps(s.statistics.tolist()), survey_id, qid)
             for qid, s in updated.items() if s is not current[qid]],
        )  # fmt: skip

    def _fold_chunk(
        self, connection: sqlite3.Connection, survey_id: str, chunk: int
    ) -> tuple[dict[str, QuestionStatistics], int]:
        """Fold up to ``chunk`` pending reports (the caller holds the write lock)."""
        record, current, rows = self._read_pending(connection, survey_id, chunk)
        if not rows:
            return current, 0
        updated = fold_into(record.survey, current, ((q, p) for _, q, p in rows))
        self._write_fold(connection, survey_id, current, updated, rows[-1][0])
        return updated, len(rows)
