"""PostgreSQL ingest and folding: concurrent writers, one statement per batch, row locks.

Connections, transactions and migrations are the PostgreSQL dialect's
(:class:`~deniable.service.storage.PostgresDialect`: psycopg 3, a pool, READ
COMMITTED); every other query is :class:`~.base.Storage`'s.

Ingest only inserts (into ``reports``, and one ``pending_batches`` row per
batch) and takes a share lock on its survey row, so concurrent writers never
wait for each other; closing a survey (an UPDATE) waits for in-flight ingests,
so nothing is acknowledged for a closed survey.  An ingest that needs no
enrolment token is one statement (:data:`STORE_BATCH`); a batch holding an id
already stored, or one that spends a token, takes the checked path.  Folding
locks the survey's ``question_statistics`` rows (results readers, and an
ingest that found a backlog, after its commit and with NOWAIT) and moves
pending batches with ``DELETE ... RETURNING``: no seq watermark, because
identity values commit out of order.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

from psycopg import errors as pg_errors

from deniable.errors import Conflict, NotFound, StorageError
from deniable.service.storage import PostgresServiceStorage
from deniable.wire import Report

from .base import FOLD_CHUNK, Storage, over_backlog
from .records import (
    OPEN,
    QuestionStatistics,
    StoredIds,
    fold_into,
    submission_owners,
)
from .tokens import batch_digest

__all__ = ["PostgresStorage"]

# Deadlocks (two batches sharing ids) and serialization failures are retried whole.
RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
# A reused report id, on the one-statement ingest: the checked path takes the batch.
UNIQUE = pg_errors.UniqueViolation
ATTEMPTS = 5
# An arbitrary constant: the advisory lock that serializes concurrent migrations.
MIGRATION_LOCK = 0x6465_6E69

# The batch's columns as three arrays, unnested in the body's order.
_INCOMING = """incoming AS (
    SELECT r.*, k.submission FROM unnest(
        %(ids)s::text[]::uuid[], %(questions)s::text[], %(payloads)s::text[],
        %(respondents)s::bigint[]
    ) WITH ORDINALITY AS r (report_id, question_id, payload, respondent, position)
    LEFT JOIN keys k USING (respondent)
)"""
# One new submission key per respondent of the batch (migration 0009); -1: a loose report.
_KEYS = """keys AS MATERIALIZED (
    SELECT respondent, nextval('submission_keys') AS submission
    FROM (SELECT DISTINCT respondent FROM unnest(%(respondents)s::bigint[]) AS t (respondent)
          WHERE respondent >= 0) AS distinct_respondents
)"""
# The batch's seqs as one pending row, and the oldest pending batch's first seq
# (read before this statement's own rows): together they bound the backlog.
_QUEUE = """queued AS (
    INSERT INTO pending_batches (survey_id, first_seq, seqs)
    SELECT %(survey)s, MIN(seq), array_agg(seq) FROM inserted HAVING COUNT(*) > 0
), oldest AS (
    SELECT first_seq FROM pending_batches WHERE survey_id = %(survey)s ORDER BY id LIMIT 1
)"""
# An ingest that needs no enrolment token, in one round trip.  The survey row is
# locked FOR SHARE before any row is inserted (an InitPlan), and under READ
# COMMITTED the lock re-reads a row a concurrent close has just updated, so a
# closed survey stores nothing.  No ON CONFLICT: a reused id raises
# unique_violation, and the checked path (STORE_CHECKED) takes the batch again.
STORE_BATCH = f"""
WITH survey AS MATERIALIZED (
    SELECT status, require_enrolment FROM surveys WHERE id = %(survey)s FOR SHARE
), {_KEYS}, {_INCOMING}, inserted AS (
    INSERT INTO reports (survey_id, report_id, question_id, payload, submission, received_at)
    SELECT %(survey)s, report_id, question_id, payload, submission,
           COALESCE(%(received_at)s::timestamptz, now()) FROM incoming
    WHERE (SELECT status = '{OPEN}' AND (%(operator)s OR NOT require_enrolment) FROM survey)
    ORDER BY position
    RETURNING seq
), {_QUEUE}
SELECT (SELECT status FROM survey), (SELECT require_enrolment FROM survey),
       (SELECT MAX(seq) FROM inserted), (SELECT first_seq FROM oldest)
"""
# The checked path, after the survey row is locked (and a token spent): stores
# the reports whose ids are new and names them, so the rest can be compared.
STORE_CHECKED = f"""
WITH {_KEYS}, {_INCOMING}, inserted AS (
    INSERT INTO reports (survey_id, report_id, question_id, payload, submission, received_at)
    SELECT %(survey)s, report_id, question_id, payload, submission,
           COALESCE(%(received_at)s::timestamptz, now()) FROM incoming
    ORDER BY position
    ON CONFLICT (report_id, survey_id) DO NOTHING
    RETURNING seq, report_id
), {_QUEUE}
SELECT report_id::text, seq, (SELECT first_seq FROM oldest) FROM inserted
"""
# Pending batches, oldest first, until about ``chunk`` reports: each batch whole.
TAKE_PENDING = """
WITH taken AS (
    DELETE FROM pending_batches WHERE id IN (
        SELECT id FROM (
            SELECT id, SUM(cardinality(seqs)) OVER (ORDER BY id) - cardinality(seqs) AS before
            FROM pending_batches WHERE survey_id = %s
        ) ordered WHERE before < %s
    ) RETURNING seqs
)
SELECT r.question_id, r.payload
FROM taken CROSS JOIN LATERAL unnest(taken.seqs) AS t (seq) JOIN reports r ON r.seq = t.seq
"""


class PostgresStorage(PostgresServiceStorage, Storage):
    """Storage in a PostgreSQL database, shared by any number of aggregator processes."""

    pool_name = "deniable"
    migration_lock = MIGRATION_LOCK
    # Unfolded reports: the seqs queued in the survey's pending batches (migration 0008).
    pending_count = (
        "(SELECT COALESCE(SUM(cardinality(seqs)), 0) FROM pending_batches WHERE survey_id = s.id)"
    )

    def _get_pool(self) -> Any:
        """This process's connection pool (tests hold a connection of it)."""
        return self.dialect.pool()

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
        owners = submission_owners(reports, respondents)
        # Why retry: two concurrent batches sharing ids in opposite orders can deadlock;
        # PostgreSQL aborts one, and its rerun then finds the other's rows committed.
        # (Sorting by id would avoid that but lose the body's order in the log.)
        parameters = {
            "survey": survey_id,
            "operator": operator,
            "ids": [r.id for r in reports],
            "questions": [r.question for r in reports],
            "payloads": [r.payload for r in reports],
            "respondents": [-1 if owners[r.id] is None else owners[r.id] for r in reports],
            "received_at": received_at,
        }
        checked = enrolment_token is not None and not operator
        for attempt in range(ATTEMPTS):
            try:
                if not checked:
                    backlog = self._store_batch(survey_id, parameters)
                    checked, new = backlog is None, parameters["ids"]  # all, or none stored
                if checked:
                    backlog, new = self._store_checked(
                        survey_id, reports, parameters, enrolment_token
                    )
                break
            except RETRYABLE as error:
                if attempt == ATTEMPTS - 1:
                    raise StorageError(f"postgresql: {type(error).__name__}") from None
        if backlog:
            # After the commit (the batch is acknowledged whatever happens here), and
            # only if no other fold holds the statistics rows: ingest never waits.
            with contextlib.suppress(StorageError):
                self._fold(survey_id, FOLD_CHUNK, wait=False)
        return StoredIds(parameters["ids"], new=new)

    def _store_batch(self, survey_id: str, parameters: dict[str, Any]) -> bool | None:
        """The one-statement ingest: whether to fold, or None for the checked path.

        None when the survey needs an enrolment token here, is closed, or when an
        id of the batch is already stored (a retry, or reuse): the transaction
        rolls back.
        """
        try:
            with self.dialect.transaction(passing=(*RETRYABLE, UNIQUE), single=True) as connection:
                status, require_enrolment, last_seq, first_pending = connection.execute(
                    STORE_BATCH, parameters
                ).fetchone()
                if status is None:
                    raise NotFound(f"no survey {survey_id!r}")
                if last_seq is None:  # closed, or a token is needed: nothing was stored
                    return None
                return over_backlog(last_seq, first_pending)
        except UNIQUE:
            return None

    def _store_checked(
        self,
        survey_id: str,
        reports: list[Report],
        parameters: dict[str, Any],
        enrolment_token: str | None,
    ) -> tuple[bool, set[str]]:
        """Store the batch, retried ids compared, then spend a token if needed; whether to
        fold, and the ids stored new.

        A closed survey stores nothing: a batch stored whole already is acknowledged
        again, anything else is a Conflict.  The token is spent after the insert, in
        the same transaction: a batch stored whole spends nothing, and a refused
        token rolls the insert back.
        """
        with self.dialect.transaction(passing=RETRYABLE) as connection:
            row = connection.execute(
                "SELECT status, require_enrolment FROM surveys WHERE id = %s FOR SHARE",
                (survey_id,),
            ).fetchone()
            if row is None:
                raise NotFound(f"no survey {survey_id!r}")
            is_open = row[0] == OPEN
            inserted = connection.execute(STORE_CHECKED, parameters).fetchall() if is_open else []
            new = {report_id for report_id, _, _ in inserted}
            if len(new) < len(reports):
                retried = [r for r in reports if r.id not in new]
                stored = {
                    report_id: (question_id, payload)
                    for report_id, question_id, payload in connection.execute(
                        "SELECT report_id::text, question_id, payload FROM reports"
                        " WHERE survey_id = %s AND report_id = ANY(%s::uuid[])",
                        (survey_id, [r.id for r in retried]),
                    )
                }
                for report in retried:
                    body = stored.get(report.id)
                    if body is None:  # only when closed: an open survey stored it above
                        raise Conflict(f"survey {survey_id!r} is closed")
                    if body != (report.question, report.payload):
                        raise Conflict(f"report id {report.id} was already used with another body")
            if row[1] and not parameters["operator"]:
                self.tokens.spend(
                    connection,
                    survey_id,
                    enrolment_token,
                    batch_digest(reports),
                    new=bool(inserted),
                )
        if not inserted:
            return False, new
        return over_backlog(max(seq for _, seq, _ in inserted), inserted[0][2]), new

    # -- results ---------------------------------------------------------------------------
    def fold(self, survey_id: str, *, chunk: int = 10_000) -> dict[str, QuestionStatistics]:
        return self._fold(survey_id, chunk, wait=True)

    def _fold(self, survey_id: str, chunk: int, *, wait: bool) -> dict[str, QuestionStatistics]:
        """Fold every pending report; ``wait=False`` gives up (StorageError) on a held lock."""
        lock = "FOR UPDATE" if wait else "FOR UPDATE NOWAIT"
        while True:
            with self.dialect.write() as connection:
                record = self._fetch(connection, survey_id, count=False)
                # Why FOR UPDATE: one fold at a time per survey (results readers, and
                # an ingest that found a backlog); ingest itself never touches them.
                current = self._statistics(connection, survey_id, f" {lock}")
                # Pending batches hold seqs only: question and payload are read from reports.
                rows = connection.execute(TAKE_PENDING, (survey_id, chunk)).fetchall()
                if not rows:
                    return current
                updated = fold_into(record.survey, current, rows)
                self._write_statistics(connection, survey_id, current, updated)
            if len(rows) < chunk:
                return updated
