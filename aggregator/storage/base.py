"""The aggregator's storage: one :class:`Storage` over a dialect, its queries written once.

Tables (see ``migrations/<backend>/``):

* ``surveys``: one row per survey: resolved definition, status, visibility.
* ``reports``: every accepted report, append-only (``seq`` order); a report id
  is unique per survey, and its stored question and payload tell a retry from a
  reused id (migration 0006 dropped the per-report digest column).
* unfolded reports: those not yet folded into the statistics.  SQLite keeps
  a watermark per survey (``surveys.folded_through``, migration 0008): one
  writer appends in seq order, so they are exactly the survey's reports after
  it.  PostgreSQL, whose identity values commit out of order, queues each
  stored batch's seqs (``pending_batches``, migration 0008).  Either way ingest
  only inserts, so concurrent writers never wait on a shared row; only when a
  survey may have more than ``FOLD_BACKLOG`` unfolded reports
  (:func:`over_backlog`) does an ingest fold them too (SQLite: counting
  outside the write lock; PostgreSQL: right after its commit, and only if no
  other fold holds the statistics rows).  Results therefore fold at most a
  backlog's worth, however many reports arrived since the last read, and still
  count every acknowledged report.
* ``question_statistics``: per question, ``n`` and the additive int64
  statistics vector of every folded report (``Question.statistics``).  Only
  readers of results lock these rows: :meth:`Storage.fold` adds unfolded
  reports to them in a transaction, so results cost O(domain size + unfolded
  reports) and never rescan ``reports``.
* ``operator_tokens``, ``enrolment_tokens``: :mod:`.tokens`.
* ``crosstab_statistics`` and submission keys: :mod:`.submissions`.
* ``relay_credentials``, ``relay_batches``: :mod:`.relay`.
* ``schema_version``: applied migrations.

Everything but ingest and folding is the same SQL on both backends, here and in
the stores (:class:`.tokens.TokenStore`, :class:`.submissions.SubmissionStore`,
:class:`.relay.RelayStore`), each over the same :class:`~deniable.service.storage.Dialect`.
Ingest and folding are different algorithms on the two backends (an id index in
memory and one writer, against one statement and row locks): ``sqlite.py`` and
``postgres.py`` hold them, side by side, as :meth:`Storage.add_reports` and
:meth:`Storage.fold`.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from deniable.errors import Conflict, NotFound, StorageError
from deniable.service import storage as service_storage
from deniable.service.storage import Dialect, Migration, ServiceStorage, forwarded, iso
from deniable.survey import Survey
from deniable.wire import Report

from .records import (
    CLOSED,
    OPEN,
    QuestionStatistics,
    StoredIds,
    StoredReport,
    SurveyRecord,
    definition_text,
    initial_statistics,
)
from .relay import RelayStore
from .submissions import SubmissionStore
from .tokens import TokenStore, check_issuable, check_issue_count, hash_token, new_enrolment_token

__all__ = [
    "FOLD_BACKLOG",
    "FOLD_CHUNK",
    "MIGRATIONS",
    "SURVEY_COLUMNS_UNCOUNTED",
    "Storage",
    "migrations",
    "over_backlog",
]

MIGRATIONS = Path(__file__).with_name("migrations")
# Ingest folds a survey's pending reports once there are more than this many, so a
# results call never has more than about this many (plus one batch) left to fold.
FOLD_BACKLOG = 5_000
FOLD_CHUNK = 10_000
# Parsed definitions are immutable once stored, so each process keeps a few.
SURVEY_CACHE_SIZE = 256


def over_backlog(last_seq: int | None, first_pending: int | None) -> bool:
    """True if a survey's pending reports may exceed FOLD_BACKLOG.

    ``last_seq - first_pending + 1`` (the newest seq stored, the survey's oldest
    pending seq) bounds the pending count from above: other surveys' reports
    also take seqs, so a fold may come early when surveys interleave, never late.
    It costs one index probe, where counting walked up to FOLD_BACKLOG entries.
    """
    if last_seq is None or first_pending is None:
        return False
    return last_seq - first_pending + 1 > FOLD_BACKLOG


def migrations(backend: str, root: Path = MIGRATIONS) -> list[Migration]:
    """The aggregator's migrations of one backend, in version order."""
    return service_storage.migrations(backend, root)


def _surveys_columns(pending_count: str) -> str:
    """The survey columns, counting reports as folded ``n`` plus ``pending_count`` (SQL)."""
    return f"""
    s.id, s.definition, s.status, s.results_public, s.created_at, s.closed_at,
    (SELECT COALESCE(SUM(n), 0) FROM question_statistics WHERE survey_id = s.id)
      + {pending_count} AS n_reports,
    s.require_enrolment
"""


# Why: the hot paths (ingest, results) need the state, not a count of pending rows.
SURVEY_COLUMNS_UNCOUNTED = """
    s.id, s.definition, s.status, s.results_public, s.created_at, s.closed_at,
    NULL AS n_reports, s.require_enrolment
"""


class Storage(ServiceStorage, ABC):
    """The storage protocol: every method is one or a few short transactions.

    An acknowledgement (a method returning normally after a write) means the
    write is committed.  Database failures raise :class:`StorageError`.

    ``tokens``, ``submissions`` and ``relay`` are the stores of the other tables,
    over the same dialect; the token and submission methods are offered here too.
    Its lifecycle (migrate, ping, close) is the kit's
    :class:`~deniable.service.storage.ServiceStorage`.
    """

    migrations_folder = MIGRATIONS

    # SQL counting a survey's unfolded reports (``s``: its surveys row), per backend.
    pending_count: str
    # Columns a new survey row sets beyond the shared ones, and their SQL values.
    new_survey_columns: tuple[tuple[str, str], ...] = ()

    def __init__(self, dialect: Dialect) -> None:
        super().__init__(dialect)
        self.tokens = TokenStore(dialect)
        self.submissions = SubmissionStore(dialect)
        self.relay = RelayStore(dialect)
        self._surveys: OrderedDict[tuple[str, str], Survey] = OrderedDict()
        self._surveys_lock = threading.Lock()
        self._survey_columns = _surveys_columns(self.pending_count)

    # -- lifecycle (migrate, schema_version, ping, close: the kit's ServiceStorage) ----
    def bulk_turn(self) -> contextlib.AbstractContextManager[object]:
        """Held by a bulk request while it parses and stores its reports (no wait here)."""
        return contextlib.nullcontext()

    def _read(self) -> contextlib.AbstractContextManager[Any]:
        return self.dialect.read()

    # -- surveys ------------------------------------------------------------------
    def _fetch(self, connection: Any, survey_id: str, *, count: bool = True) -> SurveyRecord:
        columns = self._survey_columns if count else SURVEY_COLUMNS_UNCOUNTED
        row = self.dialect.run(
            connection, f"SELECT {columns} FROM surveys s WHERE s.id = ?", (survey_id,)
        ).fetchone()
        if row is None:
            raise NotFound(f"no survey {survey_id!r}")
        return self._record(row)

    def create_survey(
        self, survey: Survey, *, results_public: bool, require_enrolment: bool = False
    ) -> SurveyRecord:
        """Store a new survey (Conflict if the id exists)."""
        dialect = self.dialect
        names = ", ".join(name for name, _ in self.new_survey_columns)
        values = ", ".join(value for _, value in self.new_survey_columns)
        with dialect.write() as connection:
            inserted = dialect.run(
                connection,
                "INSERT INTO surveys (id, definition, results_public, status, created_at,"
                f" require_enrolment{', ' * bool(names)}{names})"
                f" VALUES (?, ?, ?, ?, ?, ?{', ' * bool(values)}{values})"
                " ON CONFLICT (id) DO NOTHING RETURNING id",
                (
                    survey.id,
                    definition_text(survey),
                    bool(results_public),
                    OPEN,
                    dialect.now(),
                    bool(require_enrolment),
                ),
            ).fetchall()
            if not inserted:
                raise Conflict(f"survey id {survey.id!r} is taken")
            dialect.insert_rows(
                connection,
                "question_statistics",
                ("survey_id", "question_id", "position", "statistics"),
                [
                    (survey.id, qid, pos, dialect.int_array(zeros))
                    for qid, pos, zeros in initial_statistics(survey)
                ],
            )
            # A new survey has no reports: nothing to count.
            return replace(self._fetch(connection, survey.id, count=False), n_reports=0)

    def get_survey(self, survey_id: str, *, count: bool = True) -> SurveyRecord:
        """The survey (NotFound if unknown); ``count=False`` skips counting its reports."""
        with self.dialect.lone_read() as connection:
            return self._fetch(connection, survey_id, count=count)

    def list_surveys(self, *, offset: int = 0, limit: int | None = None) -> list[SurveyRecord]:
        """Surveys oldest first: ``limit`` of them (None: all) after skipping ``offset``."""
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                f"SELECT {self._survey_columns} FROM surveys s ORDER BY s.created_at, s.id"
                " LIMIT ? OFFSET ?",
                (self.dialect.no_limit if limit is None else limit, offset),
            ).fetchall()
        return [self._record(row) for row in rows]

    def close_survey(self, survey_id: str) -> SurveyRecord:
        """Close a survey (idempotent); closed surveys reject reports.

        PostgreSQL: the UPDATE waits for in-flight ingests (each holds the survey row
        FOR SHARE), so nothing is acknowledged for a closed survey."""
        dialect = self.dialect
        with dialect.write() as connection:
            dialect.run(
                connection,
                "UPDATE surveys SET status = ?, closed_at = ? WHERE id = ? AND status = ?",
                (CLOSED, dialect.now(), survey_id, OPEN),
            )
            return self._fetch(connection, survey_id)

    # -- enrolment tokens -------------------------------------------------------------
    def issue_enrolment_tokens(self, survey_id: str, count: int) -> list[str]:
        """Create ``count`` one-time tokens for a survey that requires enrolment.

        Returns the plaintexts, which are never stored (only their SHA-256).
        NotFound for an unknown survey; Conflict if it is closed or does not
        require enrolment.
        """
        check_issue_count(count)
        tokens = [new_enrolment_token() for _ in range(count)]
        dialect = self.dialect
        created_at = dialect.now()
        with dialect.write() as connection:
            # Why the share lock: a concurrent close waits, so no token is issued for a
            # closed survey.
            dialect.run(
                connection, "SELECT 1 FROM surveys WHERE id = ?" + dialect.for_share, (survey_id,)
            ).fetchall()
            check_issuable(self._fetch(connection, survey_id))
            dialect.insert_rows(
                connection,
                "enrolment_tokens",
                ("token_hash", "survey_id", "created_at"),
                [(hash_token(token), survey_id, created_at) for token in tokens],
            )
        return tokens

    def enrolment_token_counts(self, survey_id: str) -> tuple[int, int]:
        """(issued, spent) enrolment tokens of a survey."""
        with self.dialect.read() as connection:
            self._fetch(connection, survey_id)
            issued, spent = self.dialect.run(
                connection,
                "SELECT COUNT(*), COUNT(spent_at) FROM enrolment_tokens WHERE survey_id = ?",
                (survey_id,),
            ).fetchone()
        return int(issued), int(spent)

    # -- reports ------------------------------------------------------------------
    @abstractmethod
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
        """Store validated reports all-or-nothing; return their ids (:class:`StoredIds`:
        ``new`` holds those this call stored, not those stored before).

        The reports of one respondent share a new submission key (migration
        0009): ``respondents`` gives each report's respondent index in the batch
        (None: a loose report, no key); by default the batch is one respondent.

        A report whose id is stored with the same question and payload is
        acknowledged again and not counted twice; with another body the whole
        batch fails with Conflict.  A closed survey raises Conflict, unless the
        batch is stored whole already (a retry whose acknowledgement was lost).

        A survey that requires enrolment needs ``enrolment_token`` (else
        AuthenticationError): an issued, unspent token of this survey is spent
        in the same transaction, recording :func:`batch_digest`, if the batch
        stores anything; a batch stored whole already spends nothing, and its
        token must be unspent or spent by this very batch (an idempotent
        retry); any other token raises Forbidden.  If anything fails, nothing is
        stored and the token stays unspent.  Surveys that do not require
        enrolment ignore it.
        ``operator``: the caller authenticated as the operator (the bulk route),
        which needs no enrolment token.  ``received_at``: the arrival time every
        report is stored with (default: now); a relay batch stored in several
        calls gives each the batch's.
        """

    def export_reports(self, survey_id: str) -> Iterator[StoredReport]:
        """Every stored report of a survey in append-only (seq) order, from one snapshot."""
        self.get_survey(survey_id, count=False)  # Why: NotFound before the first byte is streamed.
        return self._export(survey_id)

    def _export(self, survey_id: str) -> Iterator[StoredReport]:
        rows = self.dialect.stream(
            "SELECT seq, CAST(report_id AS TEXT), question_id, payload, received_at,"
            " submission FROM reports WHERE survey_id = ? ORDER BY seq",
            (survey_id,),
        )
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
        """Stored report rows (of one survey, or all)."""
        with self.dialect.read() as connection:
            if survey_id is None:
                return connection.execute("SELECT COUNT(*) FROM reports").fetchone()[0]
            return self.dialect.run(
                connection, "SELECT COUNT(*) FROM reports WHERE survey_id = ?", (survey_id,)
            ).fetchone()[0]

    # -- results --------------------------------------------------------------------
    @abstractmethod
    def fold(self, survey_id: str, *, chunk: int = 10_000) -> dict[str, QuestionStatistics]:
        """Fold every pending report into the statistics; return them, by question id.

        Every report acknowledged before the call is counted in the result.
        """

    def _statistics(
        self, connection: Any, survey_id: str, lock: str = ""
    ) -> dict[str, QuestionStatistics]:
        """The survey's folded statistics, by question id in survey order (``lock``: a row
        lock clause)."""
        return {
            qid: QuestionStatistics(
                question=qid,
                n=n,
                statistics=np.asarray(self.dialect.read_int_array(s), dtype=np.int64),
            )
            for qid, n, s in self.dialect.run(
                connection,
                "SELECT question_id, n, statistics FROM question_statistics"
                " WHERE survey_id = ? ORDER BY position" + lock,
                (survey_id,),
            ).fetchall()
        }

    def _write_statistics(
        self,
        connection: Any,
        survey_id: str,
        current: dict[str, QuestionStatistics],
        updated: dict[str, QuestionStatistics],
    ) -> None:
        """Store the statistics of ``updated`` that differ from ``current``."""
        self.dialect.execute_many(
            connection,
            "UPDATE question_statistics SET n = ?, statistics = ?"
            " WHERE survey_id = ? AND question_id = ?",
            [
                (s.n, self.dialect.int_array(s.statistics.tolist()), survey_id, qid)
                for qid, s in updated.items()
                if s is not current[qid]
            ],
        )

    # -- shared helpers ---------------------------------------------------------------
    def _record(self, row: tuple) -> SurveyRecord:
        """A row selected with the backend's survey columns (or the uncounted ones) as a record."""
        survey_id, definition, status, public, created, closed, n_reports, enrolment = row
        return SurveyRecord(
            survey=self._parse_definition(survey_id, definition),
            status=status,
            results_public=bool(public),
            created_at=iso(created),
            closed_at=iso(closed),
            n_reports=None if n_reports is None else int(n_reports),
            require_enrolment=bool(enrolment),
        )

    def _parse_definition(self, survey_id: str, definition: str) -> Survey:
        """The stored definition as a Survey, cached (definitions never change)."""
        key = (survey_id, definition)
        with self._surveys_lock:
            cached = self._surveys.get(key)
            if cached is not None:
                self._surveys.move_to_end(key)
                return cached
        try:
            survey = Survey.from_json(definition)
        except ValueError as error:
            raise StorageError(f"survey {survey_id!r}: unreadable stored definition") from error
        with self._surveys_lock:
            self._surveys[key] = survey
            while len(self._surveys) > SURVEY_CACHE_SIZE:
                self._surveys.popitem(last=False)
        return survey

    # -- the stores' methods, as callers have always called them ------------------------
    create_operator_token = forwarded("tokens", TokenStore.create_operator_token)
    find_operator_token = forwarded("tokens", TokenStore.find_operator_token)
    verify_operator_token = forwarded("tokens", TokenStore.verify_operator_token)
    list_operator_tokens = forwarded("tokens", TokenStore.list_operator_tokens)
    revoke_operator_token = forwarded("tokens", TokenStore.revoke_operator_token)
    list_enrolment_tokens = forwarded("tokens", TokenStore.list_enrolment_tokens)
    revoke_enrolment_tokens = forwarded("tokens", TokenStore.revoke_enrolment_tokens)
    unjoinable_reports = forwarded("submissions", SubmissionStore.unjoinable_reports)
    joined_reports = forwarded("submissions", SubmissionStore.joined_reports)
    cached_crosstab = forwarded("submissions", SubmissionStore.cached_crosstab)
    store_crosstab = forwarded("submissions", SubmissionStore.store_crosstab)
    later_public_surveys = forwarded("submissions", SubmissionStore.later_public_surveys)
