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
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import numpy as np

from deniable.errors import Conflict, NotFound, StorageError
from deniable.survey import Survey
from deniable.wire import Report

from ..datadir import check_private_file, private_directory
from .base import (
    CLOSED,
    FOLD_CHUNK,
    OPEN,
    SURVEY_COLUMNS_UNCOUNTED,
    QuestionStatistics,
    Storage,
    StoredIds,
    StoredReport,
    SurveyRecord,
    definition_text,
    fold_into,
    initial_statistics,
    migrations,
    over_backlog,
    statistics_from_json,
    submission_owners,
    survey_columns,
)
from .sqlite_ids import FileLock, IdIndex, Staged, reports_by_seq
from .timestamps import iso, utc_now
from .tokens import (
    batch_digest,
    check_issuable,
    check_issue_count,
    hash_token,
    new_enrolment_token,
)

# Below this much free space on the database's file system, /health reports degraded.
MIN_FREE_BYTES = 8 << 20


def split_statements(script: str) -> list[str]:
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


def connect(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """A connection to the database file ``path`` (the aggregator's, or the relay's):
    private (in a 0700 directory, the file and its ``-wal``/``-shm`` 0600, as datadir.py
    requires), waiting up to ``busy_timeout_ms`` for a lock, fsync'ed commits, foreign keys.
    StorageError (UnsafeFiles) if it cannot be opened so."""
    # Why: raw reports are for the server's user only (datadir.py): a directory others
    # may write in, or a database others may read, is refused like a readable key.
    private_directory(path.parent)
    for side in (path, *(path.with_name(path.name + s) for s in SIDE_FILES)):
        check_private_file(side, "database file")
    try:
        if not path.exists():
            # Why: SQLite would create it 0644 under the usual umask; its -wal and -shm
            # files copy the database file's mode, so they are 0600 too.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        connection = sqlite3.connect(
            path,
            timeout=busy_timeout_ms / 1000,
            isolation_level=None,  # Why: we issue BEGIN/COMMIT ourselves.
            check_same_thread=False,
        )
        connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("PRAGMA foreign_keys = ON")
    except (OSError, sqlite3.Error) as error:
        raise StorageError(f"sqlite {path}: {error}") from None
    return connection


def thread_connection(
    local: threading.local, open_connection: Callable[[], sqlite3.Connection]
) -> sqlite3.Connection:
    """The calling thread's connection in ``local``, opened on first use in this process
    (a forked child opens its own: a connection must not cross a fork)."""
    if getattr(local, "pid", None) != os.getpid():
        local.connection = open_connection()
        local.pid = os.getpid()
    return local.connection


def drop_thread_connection(local: threading.local) -> None:
    """Close the calling thread's connection in ``local``; the next use opens a new one."""
    connection = getattr(local, "connection", None)
    local.pid = None
    if connection is not None:
        with contextlib.suppress(sqlite3.Error):
            connection.close()


# Unfolded reports: those of the survey after its watermark (migration 0008).
SURVEY_COLUMNS = survey_columns(
    "(SELECT COUNT(*) FROM reports WHERE survey_id = s.id AND seq > s.folded_through)"
)


SIDE_FILES = ("-wal", "-shm")  # SQLite's own files beside the database


class SqliteStorage(Storage):
    """Storage in one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        super().__init__()
        self.path = Path(path.removeprefix("sqlite:///").removeprefix("sqlite://"))
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._ids = IdIndex()
        self._ingest_lock = threading.Lock()
        self._bulk_turn = threading.Lock()
        self._write_turn = FileLock(self.path.with_name(self.path.name + ".write-lock"))
        self._fold_turn = FileLock(self.path.with_name(self.path.name + ".fold-lock"))

    # -- connections --------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        connection = connect(self.path, self.busy_timeout_ms)
        try:
            # Why: lookups of random report ids touch pages all over report_ids; a
            # 64 MiB page cache (default 2 MiB) keeps them, and checkpointing every
            # 10,000 WAL pages (default 1,000) writes a page touched by many commits once.
            connection.execute("PRAGMA cache_size = -65536")
            connection.execute("PRAGMA wal_autocheckpoint = 10000")
        except sqlite3.Error as error:
            connection.close()
            raise StorageError(f"sqlite {self.path}: {error}") from None
        return connection

    def _thread_connection(self) -> sqlite3.Connection:
        """This thread's connection in this process, opened on first use."""
        return thread_connection(self._local, self._connect)

    def _drop_thread_connection(self) -> None:
        drop_thread_connection(self._local)

    @contextlib.contextmanager
    def _transaction(
        self, mode: str = "IMMEDIATE", *, fresh: bool = False
    ) -> Iterator[sqlite3.Connection]:
        """One transaction: COMMIT on success, else ROLLBACK.

        ``fresh`` uses a connection of its own (closed afterwards), for a
        transaction that stays open while other work runs on this thread, such
        as a streamed export.
        """
        # Why the turn: writers queue on a file lock that hands over within 0.2 ms.
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

    def bulk_turn(self) -> contextlib.AbstractContextManager[object]:
        """One bulk request at a time in this process, from parsing to commit.

        Writers take turns on one database lock.  A writer holding it must not
        wait for the GIL while a sibling thread parses another body of 1,000
        reports: the other processes would wait for the lock meanwhile.  In
        alternating runs of benchmarks/ingest.py's bulk phase (1,000,000
        reports, 2 workers) this gave 56.7-61.0k reports/s against 50.0-53.2k.
        PostgreSQL has no such lock, and gains nothing from it.
        """
        return self._bulk_turn

    def close(self) -> None:
        self._drop_thread_connection()
        self._write_turn.close()
        self._fold_turn.close()

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
                for statement in split_statements(migration.sql):
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
                # The watermark starts at the newest seq: every report after it is new.
                connection.execute(
                    "INSERT INTO surveys (id, definition, results_public, status, created_at,"
                    " require_enrolment, folded_through) VALUES (?, ?, ?, ?, ?, ?,"
                    " (SELECT COALESCE(MAX(seq), 0) FROM reports))",
                    (
                        survey.id,
                        definition_text(survey),
                        int(results_public),
                        OPEN,
                        iso(utc_now()),
                        int(require_enrolment),
                    ),
                )
            except sqlite3.IntegrityError:
                raise Conflict(f"survey id {survey.id!r} is taken") from None
            connection.executemany(
                "INSERT INTO question_statistics (survey_id, question_id, position, statistics)"
                " VALUES (?, ?, ?, ?)",
                [
                    (survey.id, qid, pos, json.dumps(zeros))
                    for qid, pos, zeros in initial_statistics(survey)
                ],
            )
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

    # -- reports ---------------------------------------------------------------------------
    def add_reports(
        self,
        survey_id: str,
        reports: list[Report],
        *,
        enrolment_token: str | None = None,
        operator: bool = False,
        respondents: list[int | None] | None = None,
        received_at: datetime | None = None,
    ) -> StoredIds:
        arrival = iso(received_at or utc_now())
        owners = submission_owners(reports, respondents)
        incoming: dict[str, Report] = {}
        for report in reports:
            previous = incoming.setdefault(report.id, report)
            if previous is not report and previous != report:
                raise Conflict(f"report id {report.id} appears twice with different bodies")
        ids = list(incoming)
        # Why here: less work while holding the locks.
        batch = (incoming, ids, self._ids.id_keys.keys(survey_id, ids), owners)
        # The ingest lock: this process's id index changes only under it (sqlite_ids.py).
        with self._ingest_lock:
            with self._transaction() as connection:
                row = connection.execute(
                    "SELECT status, require_enrolment, folded_through FROM surveys WHERE id = ?",
                    (survey_id,),
                ).fetchone()
                if row is None:
                    raise NotFound(f"no survey {survey_id!r}")
                # Closed: only a batch stored whole already is acknowledged (nothing inserted).
                closed = None if row[0] == OPEN else f"survey {survey_id!r} is closed"
                staged = self._insert_reports(connection, survey_id, batch, arrival, closed)
                if row[1] and not operator:  # after the insert: a batch stored whole spends nothing
                    self._spend(
                        connection,
                        survey_id,
                        enrolment_token,
                        batch_digest(reports),
                        new=bool(staged.seqs.size),
                    )
                backlog = self._backlog(row[2], staged)
            self._ids.committed(staged)
        if backlog:
            # After the commit: the batch is acknowledged whatever happens to the fold.
            with contextlib.suppress(StorageError):
                self._fold_backlog(survey_id)
        return StoredIds([report.id for report in reports], new=staged.new)

    @staticmethod
    def _backlog(folded_through: int, staged: Staged) -> bool:
        """Whether the survey's unfolded reports may exceed FOLD_BACKLOG (:func:`over_backlog`)."""
        return over_backlog(staged.last_seq, folded_through + 1)

    def _insert_reports(
        self,
        connection: sqlite3.Connection,
        survey_id: str,
        batch: tuple[dict[str, Report], list[str], np.ndarray, dict[str, int | None]],
        received_at: str,
        closed: str | None = None,
    ) -> Staged:
        """Insert the new reports and queue them for folding; refuse a reused id.

        The caller holds the write lock (BEGIN IMMEDIATE) and this process's
        ingest lock, so nothing interleaves with these statements.  Ids already
        stored are found first (sqlite_ids.py): a retry (same question and
        payload) is acknowledged again and not stored twice; a reused id raises
        Conflict and the caller's transaction rolls back.  Returns what the id
        index learns once the caller has committed.
        """
        incoming, ids, id_keys, owners = batch
        index = self._ids
        index.sync(connection)
        stored = index.stored(connection, survey_id, ids, id_keys)
        for report_id, question_id, payload in reports_by_seq(
            connection, "report_id, question_id, payload", list(stored.values())
        ):
            report = incoming[report_id]
            if (report.question, report.payload) != (question_id, payload):
                raise Conflict(f"report id {report_id} was already used with another body")
        fresh = [report_id not in stored for report_id in ids]
        new = [report for report, is_new in zip(incoming.values(), fresh, strict=True) if is_new]
        if not new:
            return Staged()
        if closed is not None:  # ``closed``: the Conflict to raise rather than store anything
            raise Conflict(closed)
        before = index.last_seen
        # The batch takes seqs before + 1 onwards (IdIndex.stage): a submission's key is
        # the seq of its first new report.
        keys: dict[int, int] = {}
        submissions = [
            None if owners[r.id] is None else keys.setdefault(owners[r.id], before + 1 + i)
            for i, r in enumerate(new)
        ]
        connection.executemany(
            "INSERT INTO reports (survey_id, report_id, question_id, payload, received_at,"
            " submission) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (survey_id, r.id, r.question, r.payload, received_at, key)
                for r, key in zip(new, submissions, strict=True)
            ],
        )
        return index.stage(connection, before, [r.id for r in new], id_keys[np.array(fresh)])

    def export_reports(self, survey_id: str) -> Iterator[StoredReport]:
        self.get_survey(survey_id, count=False)  # Why: NotFound before the first byte is streamed.
        return self._export(survey_id)

    def _export(self, survey_id: str) -> Iterator[StoredReport]:
        # Why: one read transaction is one WAL snapshot for the whole export.
        with self._transaction("DEFERRED", fresh=True) as connection:
            cursor = connection.execute(
                "SELECT seq, report_id, question_id, payload, received_at, submission"
                " FROM reports WHERE survey_id = ? ORDER BY seq",
                (survey_id,),
            )
            while rows := cursor.fetchmany(1000):
                for seq, report_id, question_id, payload, received_at, submission in rows:
                    yield StoredReport(
                        seq=seq,
                        id=report_id,
                        question=question_id,
                        payload=payload,
                        received_at=iso(received_at),
                        submission=submission,
                    )

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

        The unfolded reports and statistics are read in one snapshot, folded with
        no lock held, and written back only if no other fold ran meanwhile (folds
        always take the oldest unfolded reports, so the watermark and every ``n``
        are unchanged exactly then); otherwise that fold did the work.  One
        backlog fold runs at a time across processes: the others skip it rather
        than count the same rows (results calls still fold whatever remains).
        """
        with self._fold_turn.held() as turn:
            if turn:
                self._fold_backlog_chunks(survey_id)

    def _fold_backlog_chunks(self, survey_id: str) -> None:
        while True:
            with self._transaction("DEFERRED") as connection:
                record, current, folded, rows = self._read_pending(
                    connection, survey_id, FOLD_CHUNK
                )
            if not rows:
                return
            updated = fold_into(record.survey, current, ((q, p) for _, q, p in rows))
            with self._transaction() as connection:
                mark = connection.execute(
                    "SELECT folded_through FROM surveys WHERE id = ?", (survey_id,)
                ).fetchone()
                counts = dict(
                    connection.execute(
                        "SELECT question_id, n FROM question_statistics WHERE survey_id = ?",
                        (survey_id,),
                    ).fetchall()
                )
                if mark != (folded,) or counts != {q: s.n for q, s in current.items()}:
                    return
                self._write_fold(connection, survey_id, current, updated, rows[-1][0])
            if len(rows) < FOLD_CHUNK:
                return

    def _read_pending(
        self, connection: sqlite3.Connection, survey_id: str, chunk: int
    ) -> tuple[SurveyRecord, dict[str, QuestionStatistics], int, list[tuple[int, str, str]]]:
        """The survey, its folded statistics, its watermark and its oldest ``chunk``
        unfolded reports (those after the watermark, in seq order)."""
        record = self._fetch(connection, survey_id, count=False)
        current = {
            qid: QuestionStatistics(question=qid, n=n, statistics=statistics_from_json(s))
            for qid, n, s in connection.execute(
                "SELECT question_id, n, statistics FROM question_statistics"
                " WHERE survey_id = ? ORDER BY position",
                (survey_id,),
            )
        }
        (folded,) = connection.execute(
            "SELECT folded_through FROM surveys WHERE id = ?", (survey_id,)
        ).fetchone()
        # The (survey_id) index holds (survey_id, seq): a range scan from the watermark.
        rows = connection.execute(
            "SELECT seq, question_id, payload FROM reports"
            " WHERE survey_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (survey_id, folded, chunk),
        ).fetchall()
        return record, current, folded, rows

    @staticmethod
    def _write_fold(
        connection: sqlite3.Connection,
        survey_id: str,
        current: dict[str, QuestionStatistics],
        updated: dict[str, QuestionStatistics],
        last: int,
    ) -> None:
        """Move the watermark to ``last`` and store the new statistics."""
        connection.execute("UPDATE surveys SET folded_through = ? WHERE id = ?", (last, survey_id))
        connection.executemany(
            "UPDATE question_statistics SET n = ?, statistics = ?"
            " WHERE survey_id = ? AND question_id = ?",
            [
                (s.n, json.dumps(s.statistics.tolist()), survey_id, qid)
                for qid, s in updated.items()
                if s is not current[qid]
            ],
        )

    def _fold_chunk(
        self, connection: sqlite3.Connection, survey_id: str, chunk: int
    ) -> tuple[dict[str, QuestionStatistics], int]:
        """Fold up to ``chunk`` unfolded reports (the caller holds the write lock)."""
        record, current, _, rows = self._read_pending(connection, survey_id, chunk)
        if not rows:
            return current, 0
        updated = fold_into(record.survey, current, ((q, p) for _, q, p in rows))
        self._write_fold(connection, survey_id, current, updated, rows[-1][0])
        return updated, len(rows)
