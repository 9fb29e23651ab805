"""PostgreSQL storage: psycopg 3 with a connection pool, READ COMMITTED transactions.

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
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from deniable.errors import (
    Conflict,
    DeniableError,
    InvalidParameter,
    NotFound,
    StorageError,
)
from deniable.survey import Survey
from deniable.wire import Report

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
    submission_owners,
    survey_columns,
)
from .timestamps import iso, utc_now
from .tokens import (
    batch_digest,
    check_issuable,
    check_issue_count,
    hash_token,
    new_enrolment_token,
)

# Deadlocks (two batches sharing ids) and serialization failures are retried whole.
RETRYABLE = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)
# A reused report id, on the one-statement ingest: the checked path takes the batch.
UNIQUE = pg_errors.UniqueViolation
ATTEMPTS = 5
# An arbitrary constant: the advisory lock that serializes concurrent migrations.
MIGRATION_LOCK = 0x6465_6E69
SURVEY_COLUMNS = survey_columns(
    "(SELECT COALESCE(SUM(cardinality(seqs)), 0) FROM pending_batches WHERE survey_id = s.id)"
)

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


class PostgresStorage(Storage):
    """Storage in a PostgreSQL database, shared by any number of aggregator processes."""

    backend = "postgresql"

    def __init__(self, dsn: str, *, pool_size: int = 10, pool_timeout: float = 10) -> None:
        super().__init__()
        self.dsn = dsn
        self.pool_size = pool_size
        self.pool_timeout = pool_timeout
        self._pool: ConnectionPool | None = None
        self._pool_lock = threading.Lock()

    # -- connections -------------------------------------------------------------------
    def _get_pool(self) -> ConnectionPool:
        # Why: opened lazily so that gunicorn workers forked after create_app own theirs.
        with self._pool_lock:
            if self._pool is None:
                self._pool = ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self.pool_size,
                    timeout=self.pool_timeout,
                    open=False,
                    name="deniable",
                    # Why autocommit: a lone statement is then its own transaction, one
                    # round trip instead of three (BEGIN, it, COMMIT); blocks of several
                    # statements still run in connection.transaction() (BEGIN ... COMMIT).
                    kwargs={"autocommit": True},
                )
                try:
                    self._pool.open(wait=True, timeout=self.pool_timeout)
                except PoolTimeout as error:
                    self._pool.close()
                    self._pool = None
                    raise StorageError(f"postgresql: cannot connect ({error})") from None
            return self._pool

    @contextlib.contextmanager
    def _transaction(
        self, *, passing: tuple[type[psycopg.Error], ...] = (), single: bool = False
    ) -> Iterator[psycopg.Connection]:
        """One committed-or-rolled-back transaction on a pooled connection.

        ``single``: the caller runs one statement, which is its own transaction
        (autocommit), so no BEGIN and COMMIT travel.  Database errors of the
        ``passing`` types (deadlocks and serialization failures, say) propagate
        as they are, for the caller to handle.
        """
        try:
            with self._get_pool().connection() as connection:
                if single:
                    yield connection
                else:
                    with connection.transaction():
                        yield connection
        except DeniableError:
            raise
        except PoolTimeout as error:
            raise StorageError(f"postgresql: no connection available ({error})") from None
        except psycopg.DataError as error:
            # Why: a value the database cannot hold (a NUL byte in text, say) came from the
            # request; it is the caller's mistake, not an outage to retry (issue 8.5).
            raise InvalidParameter(
                f"a value of this request cannot be stored ({error.sqlstate})"
            ) from None
        except psycopg.Error as error:
            if isinstance(error, passing):
                raise
            raise StorageError(f"postgresql: {type(error).__name__}: {error}") from None

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    # -- lifecycle -------------------------------------------------------------------------
    def migrate(self) -> int:
        with self._transaction() as connection:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            (current,) = connection.execute(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version"
            ).fetchone()
            for migration in migrations(self.backend):
                if migration.version <= current:
                    continue
                connection.execute(migration.sql.encode("utf-8"))
                connection.execute(
                    "INSERT INTO schema_version (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
                current = migration.version
        return current

    def schema_version(self) -> int:
        with self._transaction() as connection:
            (exists,) = connection.execute("SELECT to_regclass('schema_version')").fetchone()
            if exists is None:
                return 0
            row = connection.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            return row.fetchone()[0]

    def ping(self) -> None:
        with self._transaction() as connection:
            (read_only,) = connection.execute(
                "SELECT current_setting('transaction_read_only') = 'on' OR pg_is_in_recovery()"
            ).fetchone()
        if read_only:
            raise StorageError("postgresql: the database refuses writes (read-only)")

    # -- dialect hooks ------------------------------------------------------------------
    placeholder = "%s"

    def _read(self) -> contextlib.AbstractContextManager[psycopg.Connection]:
        return self._transaction()

    def _write(self) -> contextlib.AbstractContextManager[psycopg.Connection]:
        return self._transaction()

    def _timestamp(self) -> Any:
        return utc_now()

    # -- surveys ---------------------------------------------------------------------------
    def _fetch(
        self, connection: psycopg.Connection, survey_id: str, *, count: bool = True
    ) -> SurveyRecord:
        columns = SURVEY_COLUMNS if count else SURVEY_COLUMNS_UNCOUNTED
        row = connection.execute(
            f"SELECT {columns} FROM surveys s WHERE s.id = %s", (survey_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no survey {survey_id!r}")
        return self._record(row)

    def create_survey(
        self, survey: Survey, *, results_public: bool, require_enrolment: bool = False
    ) -> SurveyRecord:
        with self._transaction() as connection:
            inserted = connection.execute(
                "INSERT INTO surveys (id, definition, results_public, status, require_enrolment)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING id",
                (survey.id, definition_text(survey), results_public, OPEN, require_enrolment),
            ).fetchone()
            if inserted is None:
                raise Conflict(f"survey id {survey.id!r} is taken")
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO question_statistics (survey_id, question_id, position, statistics)"
                    " VALUES (%s, %s, %s, %s)",
                    [
                        (survey.id, qid, pos, zeros)
                        for qid, pos, zeros in initial_statistics(survey)
                    ],
                )
            # A new survey has no reports: nothing to count.
            return replace(self._fetch(connection, survey.id, count=False), n_reports=0)

    def get_survey(self, survey_id: str, *, count: bool = True) -> SurveyRecord:
        with self._transaction(single=True) as connection:
            return self._fetch(connection, survey_id, count=count)

    def list_surveys(self, *, offset: int = 0, limit: int | None = None) -> list[SurveyRecord]:
        with self._transaction() as connection:
            rows = connection.execute(
                f"SELECT {SURVEY_COLUMNS} FROM surveys s ORDER BY s.created_at, s.id"
                " LIMIT %s OFFSET %s",
                (None if limit is None else limit, offset),
            ).fetchall()
        return [self._record(row) for row in rows]

    def close_survey(self, survey_id: str) -> SurveyRecord:
        with self._transaction() as connection:
            connection.execute(
                "UPDATE surveys SET status = %s, closed_at = now() WHERE id = %s AND status = %s",
                (CLOSED, survey_id, OPEN),
            )
            return self._fetch(connection, survey_id)

    # -- enrolment tokens ---------------------------------------------------------------------
    def issue_enrolment_tokens(self, survey_id: str, count: int) -> list[str]:
        check_issue_count(count)
        tokens = [new_enrolment_token() for _ in range(count)]
        with self._transaction() as connection:
            # Why FOR SHARE: a concurrent close waits, so no token is issued for a closed survey.
            row = connection.execute(
                "SELECT id FROM surveys WHERE id = %s FOR SHARE", (survey_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no survey {survey_id!r}")
            check_issuable(self._fetch(connection, survey_id))
            connection.execute(
                "INSERT INTO enrolment_tokens (token_hash, survey_id)"
                " SELECT unnest(%s::text[]), %s",
                ([hash_token(token) for token in tokens], survey_id),
            )
        return tokens

    def enrolment_token_counts(self, survey_id: str) -> tuple[int, int]:
        with self._transaction() as connection:
            self._fetch(connection, survey_id)
            issued, spent = connection.execute(
                "SELECT COUNT(*), COUNT(spent_at) FROM enrolment_tokens WHERE survey_id = %s",
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
            with self._transaction(passing=(*RETRYABLE, UNIQUE), single=True) as connection:
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
        with self._transaction(passing=RETRYABLE) as connection:
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
                self._spend(
                    connection,
                    survey_id,
                    enrolment_token,
                    batch_digest(reports),
                    new=bool(inserted),
                )
        if not inserted:
            return False, new
        return over_backlog(max(seq for _, seq, _ in inserted), inserted[0][2]), new

    def export_reports(self, survey_id: str) -> Iterator[StoredReport]:
        self.get_survey(survey_id, count=False)  # Why: NotFound before the first byte is streamed.
        return self._export(survey_id)

    def _export(self, survey_id: str) -> Iterator[StoredReport]:
        with self._transaction() as connection:
            # Why: one snapshot for the whole export, read through a server-side cursor.
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            with connection.cursor(name="deniable_export") as cursor:
                cursor.itersize = 2000
                cursor.execute(
                    "SELECT seq, report_id::text, question_id, payload, received_at, submission"
                    " FROM reports WHERE survey_id = %s ORDER BY seq",
                    (survey_id,),
                )
                for seq, report_id, question_id, payload, received_at, submission in cursor:
                    yield StoredReport(
                        seq=seq,
                        id=report_id,
                        question=question_id,
                        payload=payload,
                        received_at=iso(received_at),
                        submission=submission,
                    )

    def count_reports(self, survey_id: str | None = None) -> int:
        with self._transaction() as connection:
            if survey_id is None:
                return connection.execute("SELECT COUNT(*) FROM reports").fetchone()[0]
            return connection.execute(
                "SELECT COUNT(*) FROM reports WHERE survey_id = %s", (survey_id,)
            ).fetchone()[0]

    _concatenate = "string_agg"

    def _crosstab_watermark(self, survey_id: str) -> int:
        # Why the row lock: ingest holds it FOR SHARE until commit (storage/submissions.py).
        with self._transaction() as connection:
            connection.execute(
                "SELECT 1 FROM surveys WHERE id = %s FOR NO KEY UPDATE", (survey_id,)
            ).fetchone()
            last = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM reports").fetchone()
            return int(last[0])

    # -- results ---------------------------------------------------------------------------
    def fold(self, survey_id: str, *, chunk: int = 10_000) -> dict[str, QuestionStatistics]:
        return self._fold(survey_id, chunk, wait=True)

    def _fold(self, survey_id: str, chunk: int, *, wait: bool) -> dict[str, QuestionStatistics]:
        """Fold every pending report; ``wait=False`` gives up (StorageError) on a held lock."""
        lock = "FOR UPDATE" if wait else "FOR UPDATE NOWAIT"
        while True:
            with self._transaction() as connection:
                record = self._fetch(connection, survey_id, count=False)
                # Why FOR UPDATE: one fold at a time per survey (results readers, and
                # an ingest that found a backlog); ingest itself never touches them.
                current = {
                    qid: QuestionStatistics(
                        question=qid, n=n, statistics=np.asarray(s, dtype=np.int64)
                    )
                    for qid, n, s in connection.execute(
                        "SELECT question_id, n, statistics FROM question_statistics"
                        f" WHERE survey_id = %s ORDER BY position {lock}",
                        (survey_id,),
                    ).fetchall()
                }
                # Pending batches hold seqs only: question and payload are read from reports.
                rows = connection.execute(TAKE_PENDING, (survey_id, chunk)).fetchall()
                if not rows:
                    return current
                updated = fold_into(record.survey, current, rows)
                with connection.cursor() as cursor:
                    cursor.executemany(
                        "UPDATE question_statistics SET n = %s, statistics = %s"
                        " WHERE survey_id = %s AND question_id = %s",
                        [
                            (s.n, s.statistics.tolist(), survey_id, qid)
                            for qid, s in updated.items()
                            if s is not current[qid]
                        ],
                    )
            if len(rows) < chunk:
                return updated
