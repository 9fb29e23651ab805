"""SQLite ingest and folding: one writer at a time, an id index in memory, a watermark.

Connections, transactions and migrations are the SQLite dialect's
(:class:`~deniable.service.storage.SqliteDialect`); every other query is
:class:`~.base.Storage`'s.  What is SQLite's own here: writers queue on a file lock
(:class:`~.sqlite_ids.FileLock`) before ``BEGIN IMMEDIATE``, report ids are checked
against this process's id index (:mod:`.sqlite_ids`) rather than a unique index,
and unfolded reports are those after each survey's watermark (``folded_through``).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from datetime import datetime

import numpy as np

from deniable.errors import Conflict, NotFound, StorageError
from deniable.service.storage import SqliteServiceStorage, beside, iso, utc_now
from deniable.service.storage.file_lock import FileLock
from deniable.wire import Report

from .base import FOLD_CHUNK, Storage, over_backlog
from .records import (
    OPEN,
    QuestionStatistics,
    StoredIds,
    SurveyRecord,
    fold_into,
    submission_owners,
)
from .sqlite_ids import IdIndex, Staged, release_memory, reports_by_seq
from .tokens import batch_digest

__all__ = ["SqliteStorage"]

# Why: lookups of random report ids touch pages all over report_ids; a 64 MiB page
# cache (default 2 MiB) keeps them, and checkpointing every 10,000 WAL pages (default
# 1,000) writes a page touched by many commits once.
PRAGMAS = ("cache_size = -65536", "wal_autocheckpoint = 10000")


class SqliteStorage(SqliteServiceStorage, Storage):
    """Storage in one SQLite file."""

    pragmas = PRAGMAS

    # Unfolded reports: those of the survey after its watermark (migration 0008).
    pending_count = (
        "(SELECT COUNT(*) FROM reports WHERE survey_id = s.id AND seq > s.folded_through)"
    )
    # The watermark starts at the newest seq: every report after it is new.
    new_survey_columns = (("folded_through", "(SELECT COALESCE(MAX(seq), 0) FROM reports)"),)

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        super().__init__(path, busy_timeout_ms=busy_timeout_ms)
        self._ids = IdIndex()
        self._ingest_lock = threading.Lock()
        self._bulk_turn = threading.Lock()
        self._fold_turn = FileLock(beside(self.path, ".fold-lock"))

    @property
    def busy_timeout_ms(self) -> int:
        """How long a writer waits for the database lock (the dialect's)."""
        return self.dialect.busy_timeout_ms

    @busy_timeout_ms.setter
    def busy_timeout_ms(self, milliseconds: int) -> None:
        self.dialect.busy_timeout_ms = milliseconds

    def _thread_connection(self) -> sqlite3.Connection:
        """This thread's connection in this process, opened on first use."""
        return self.dialect.thread_connection()

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
        super().close()
        self._fold_turn.close()

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
            with self.dialect.write() as connection:
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
                    self.tokens.spend(
                        connection,
                        survey_id,
                        enrolment_token,
                        batch_digest(reports),
                        new=bool(staged.seqs.size),
                    )
                backlog = self._backlog(row[2], staged)
            self._ids.committed(staged)
            if self._ids.heavy:  # a merge or a first load: give its memory back now
                self._ids.heavy = False
                release_memory(connection)
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

    # -- results ---------------------------------------------------------------------------
    def fold(self, survey_id: str, *, chunk: int = 10_000) -> dict[str, QuestionStatistics]:
        while True:
            with self.dialect.write() as connection:
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
            with self.dialect.read() as connection:
                record, current, folded, rows = self._read_pending(
                    connection, survey_id, FOLD_CHUNK
                )
            if not rows:
                return
            updated = fold_into(record.survey, current, ((q, p) for _, q, p in rows))
            with self.dialect.write() as connection:
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
        current = self._statistics(connection, survey_id)
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

    def _write_fold(
        self,
        connection: sqlite3.Connection,
        survey_id: str,
        current: dict[str, QuestionStatistics],
        updated: dict[str, QuestionStatistics],
        last: int,
    ) -> None:
        """Move the watermark to ``last`` and store the new statistics."""
        connection.execute("UPDATE surveys SET folded_through = ? WHERE id = ?", (last, survey_id))
        self._write_statistics(connection, survey_id, current, updated)

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
