"""What the aggregator's storage holds, as Python values, and the pure logic over them.

A survey record, a stored report, the folded statistics of a question, and the
arithmetic of folding reports into them (no SQL here: :mod:`.base` runs it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from deniable.errors import StorageError
from deniable.survey import Survey
from deniable.wire import Report

__all__ = [
    "CLOSED",
    "OPEN",
    "QuestionStatistics",
    "StoredIds",
    "StoredReport",
    "SurveyRecord",
    "definition_text",
    "fold_into",
    "initial_statistics",
    "respondents",
    "submission_owners",
]

OPEN, CLOSED = "open", "closed"


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


def definition_text(survey: Survey) -> str:
    """The resolved definition as stored: canonical JSON text, in the current format.

    New surveys are always stored as ``deniable.survey/2``; rows stored as /1 are
    parsed as /1 and keep their canonical bytes (and so their signatures).
    """
    return survey.upgraded().canonical_bytes().decode("utf-8")
