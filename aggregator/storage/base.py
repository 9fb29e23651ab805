"""What every storage backend offers, and the logic they share.

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
* ``operator_tokens``: SHA-256 hashes of operator bearer tokens; since migration
  0004 each may be limited to a list of surveys (``surveys``, JSON; NULL: all).
* ``enrolment_tokens``: SHA-256 hashes of one-time enrolment tokens, per survey
  (migration 0002); an unspent one can be revoked (``revoked_at``, 0004).  A
  token is spent, with the digest of the batch it admitted, in the same
  transaction that stores that batch; ``surveys.require_enrolment``
  says whether a survey needs one per submission.
* ``schema_version``: applied migrations.
"""

from __future__ import annotations

import contextlib
import json
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from deniable.errors import StorageError
from deniable.survey import Survey
from deniable.wire import Report

from .submissions import SubmissionStore
from .timestamps import iso, utc_now
from .tokens import TokenStore

MIGRATIONS = Path(__file__).with_name("migrations")
# Ingest folds a survey's pending reports once there are more than this many, so a
# results call never has more than about this many (plus one batch) left to fold.
FOLD_BACKLOG = 5_000
FOLD_CHUNK = 10_000
OPEN, CLOSED = "open", "closed"
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


@dataclass(frozen=True, kw_only=True)
class Migration:
    """One versioned schema change: ``NNNN_name.sql``."""

    version: int
    name: str
    sql: str


def migrations(backend: str, root: Path = MIGRATIONS) -> list[Migration]:
    """The migrations of one backend, in version order (``root``: another service's folder)."""
    found = []
    for path in sorted((root / backend).glob("*.sql")):
        number, _, name = path.stem.partition("_")
        found.append(Migration(version=int(number), name=name, sql=path.read_text("utf-8")))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise StorageError(f"migrations for {backend} are not numbered 1..n: {versions}")
    return found


@dataclass(frozen=True, kw_only=True)
class SurveyRecord:
    """A stored survey: its validated definition and its state."""

    survey: Survey
    status: str
    results_public: bool
    created_at: str
    closed_at: str | None
    n_reports: int | None  # None when fetched with count=False (the hot paths)
    require_enrolment: bool = False

    @property
    def id(self) -> str:
        return self.survey.id

    @property
    def is_open(self) -> bool:
        return self.status == OPEN


@dataclass(frozen=True, kw_only=True)
class StoredReport:
    """One row of the append-only report log, as exported."""

    seq: int
    id: str
    question: str
    payload: str
    received_at: str
    submission: int | None = None  # shared by one submission's reports (migration 0009)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "id": self.id,
            "question": self.question,
            "payload": self.payload,
            "received_at": self.received_at,
            "submission": self.submission,
        }


class StoredIds(list[str]):
    """What :meth:`Storage.add_reports` returns: the ids of the reports given, in their
    order (equal to that plain list), and ``new``: the ids this call stored.  The others
    were stored before with the same body and were acknowledged again (a retry or a
    replay): they add nobody."""

    new: frozenset[str]

    def __init__(self, ids: Iterable[str], *, new: Iterable[str]) -> None:
        super().__init__(ids)
        self.new = frozenset(new)


@dataclass(frozen=True, kw_only=True)
class QuestionStatistics:
    """Folded sufficient statistics of one question."""

    question: str
    n: int
    statistics: np.ndarray


def submission_owners(
    reports: list[Report], respondents: list[int | None] | None
) -> dict[str, int | None]:
    """Report id -> its respondent's index in the batch (None: a loose, unjoinable report).

    ``respondents`` is None for one respondent's submission (every report joins).
    """
    if respondents is None:
        return {report.id: 0 for report in reports}
    if len(respondents) != len(reports):
        raise StorageError("one respondent index per report is needed")
    return {report.id: owner for report, owner in zip(reports, respondents, strict=True)}


def respondents(statistics: dict[str, QuestionStatistics]) -> int:
    """Respondents of a survey: the most reports any one question has.

    A public submission holds at most one report per question (one respondent),
    so summing over questions would count each respondent once per question.
    """
    return max((s.n for s in statistics.values()), default=0)


def fold_into(
    survey: Survey, current: dict[str, QuestionStatistics], rows: Iterable[tuple[str, str]]
) -> dict[str, QuestionStatistics]:
    """Statistics after adding pending ``(question_id, payload)`` rows to ``current``.

    Statistics are additive, so folding in chunks gives exactly the vector that
    ``Question.statistics`` computes over all payloads at once.
    """
    grouped: dict[str, list[str]] = {}
    for question_id, payload in rows:
        grouped.setdefault(question_id, []).append(payload)
    updated = dict(current)
    for question_id, payloads in grouped.items():
        if question_id not in current:
            raise StorageError(f"survey {survey.id!r}: stored report for unknown {question_id!r}")
        try:
            added = survey.question(question_id).statistics(payloads)
        except ValueError as error:
            raise StorageError(
                f"survey {survey.id!r}: unreadable stored report ({error})"
            ) from None
        before = current[question_id]
        updated[question_id] = QuestionStatistics(
            question=question_id,
            n=before.n + len(payloads),
            statistics=np.asarray(before.statistics, dtype=np.int64) + added,
        )
    return updated


def initial_statistics(survey: Survey) -> list[tuple[str, int, list[int]]]:
    """``(question_id, position, zero vector)`` for every question of a new survey."""
    return [
        (question.id, position, question.statistics([]).tolist())
        for position, question in enumerate(survey.questions)
    ]


def statistics_from_json(text: str) -> np.ndarray:
    return np.asarray(json.loads(text), dtype=np.int64)


def survey_columns(pending_count: str) -> str:
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


class Storage(TokenStore, SubmissionStore, ABC):
    """The storage protocol: every method is one or a few short transactions.

    An acknowledgement (a method returning normally after a write) means the
    write is committed.  Database failures raise :class:`StorageError`.
    """

    backend: str

    def __init__(self) -> None:
        self._surveys: OrderedDict[tuple[str, str], Survey] = OrderedDict()
        self._surveys_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------
    @abstractmethod
    def migrate(self) -> int:
        """Apply pending migrations; return the schema version."""

    @abstractmethod
    def schema_version(self) -> int:
        """The highest applied migration (0 for an empty database)."""

    @abstractmethod
    def ping(self) -> None:
        """Raise StorageError unless the database answers and would accept writes."""

    def close(self) -> None:  # noqa: B027 - optional hook: only pooled backends need it
        """Release connections (pools)."""

    def bulk_turn(self) -> contextlib.AbstractContextManager[object]:
        """Held by a bulk request while it parses and stores its reports (no wait here)."""
        return contextlib.nullcontext()

    # -- dialect hooks (each backend says how it runs one transaction) ----------------
    placeholder = "?"

    @abstractmethod
    def _read(self) -> contextlib.AbstractContextManager[Any]:
        """A read transaction; yields a connection with ``execute(sql, params)``."""

    @abstractmethod
    def _write(self) -> contextlib.AbstractContextManager[Any]:
        """A write transaction; yields a connection with ``execute(sql, params)``."""

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _timestamp(self) -> Any:
        """The current time as this backend stores it (ISO text, or a datetime)."""
        return iso(utc_now())

    # -- surveys ------------------------------------------------------------------
    @abstractmethod
    def create_survey(
        self, survey: Survey, *, results_public: bool, require_enrolment: bool = False
    ) -> SurveyRecord:
        """Store a new survey (Conflict if the id exists)."""

    @abstractmethod
    def get_survey(self, survey_id: str, *, count: bool = True) -> SurveyRecord:
        """The survey (NotFound if unknown); ``count=False`` skips counting its reports."""

    @abstractmethod
    def list_surveys(self, *, offset: int = 0, limit: int | None = None) -> list[SurveyRecord]:
        """Surveys oldest first: ``limit`` of them (None: all) after skipping ``offset``."""

    @abstractmethod
    def close_survey(self, survey_id: str) -> SurveyRecord:
        """Close a survey (idempotent); closed surveys reject reports."""

    # -- enrolment tokens -------------------------------------------------------------
    @abstractmethod
    def issue_enrolment_tokens(self, survey_id: str, count: int) -> list[str]:
        """Create ``count`` one-time tokens for a survey that requires enrolment.

        Returns the plaintexts, which are never stored (only their SHA-256).
        NotFound for an unknown survey; Conflict if it is closed or does not
        require enrolment.
        """

    @abstractmethod
    def enrolment_token_counts(self, survey_id: str) -> tuple[int, int]:
        """(issued, spent) enrolment tokens of a survey."""

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

    @abstractmethod
    def export_reports(self, survey_id: str) -> Iterator[StoredReport]:
        """Every stored report of a survey in append-only (seq) order, from one snapshot."""

    @abstractmethod
    def count_reports(self, survey_id: str | None = None) -> int:
        """Stored report rows (of one survey, or all)."""

    # -- results --------------------------------------------------------------------
    @abstractmethod
    def fold(self, survey_id: str, *, chunk: int = 10_000) -> dict[str, QuestionStatistics]:
        """Fold every pending report into the statistics; return them, by question id.

        Every report acknowledged before the call is counted in the result.
        """

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


def definition_text(survey: Survey) -> str:
    """The resolved definition as stored: canonical JSON text, in the current format.

    New surveys are always stored as ``deniable.survey/2``; rows stored as /1 are
    parsed as /1 and keep their canonical bytes (and so their signatures).
    """
    return survey.upgraded().canonical_bytes().decode("utf-8")
