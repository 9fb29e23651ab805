"""Joined reports for crosstabs, and the crosstab cache, over a dialect.

Since migration 0009 every report carries the server-assigned key of its
submission (one respondent's answers).  A crosstab of questions A and B
counts the submissions holding a report of both.  Folded crosstab statistics
are kept per ordered pair with ``through_seq``: every submission whose reports
have seqs up to it is counted, and none after it.

Why a seq watermark is safe: a submission's reports are inserted in one
transaction, so a watermark W never splits one, provided every report with
seq <= W is committed when W is read.  SQLite has one writer, whose seqs are
all above every committed one.  PostgreSQL's identity values commit out of
order, but every ingest holds its survey's row FOR SHARE until it commits, so
W is read (:meth:`SubmissionStore.watermark`) while holding that row FOR NO KEY
UPDATE: no ingest of the survey is in flight, and later ones take larger seqs.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from deniable.service.storage import Dialect

__all__ = ["SubmissionStore"]

_READERS: list[ThreadPoolExecutor] = []
_READERS_LOCK = threading.Lock()


def _readers() -> ThreadPoolExecutor:
    """Two threads that read the two questions of a crosstab at once (one per process)."""
    with _READERS_LOCK:
        if not _READERS:
            _READERS.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="crosstab"))
        return _READERS[0]


class SubmissionStore:
    """Queries on submission keys (``reports.submission``) and the crosstab cache."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def unjoinable_reports(self, survey_id: str) -> int:
        """Reports of the survey without a submission key (stored before 0009, or loose)."""
        with self.dialect.read() as connection:
            return int(
                connection.execute(
                    self.dialect.sql(
                        "SELECT COUNT(*) FROM reports WHERE survey_id = ? AND submission IS NULL"
                    ),
                    (survey_id,),
                ).fetchone()[0]
            )

    def watermark(self, survey_id: str) -> int:
        """A seq W such that every report of the survey with seq <= W is committed."""
        dialect = self.dialect
        # Why the row lock (PostgreSQL): ingest holds it FOR SHARE until it commits.
        with dialect.read() as connection:
            dialect.run(
                connection,
                "SELECT 1 FROM surveys WHERE id = ?" + dialect.for_no_key_update,
                (survey_id,),
            ).fetchone()
            last = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM reports").fetchone()
            return int(last[0])

    def joined_reports(
        self, survey_id: str, questions: tuple[str, str], after: int
    ) -> tuple[int, dict[str, tuple[str, str]]]:
        """(W, per question: its reports' submission keys and payloads with after < seq <= W).

        Per question, the keys joined by commas and the payloads concatenated
        (each is a fixed-width hex text), in one and the same row order: two
        aggregates over one scan, so no per-row work in Python.
        """
        through = self.watermark(survey_id)
        found: dict[str, tuple[str, str]] = {}
        if through <= after:
            return after, {question: ("", "") for question in questions}
        sql = self.dialect.sql(
            f"SELECT {self.dialect.concatenate}(CAST(submission AS TEXT), ','),"
            f" {self.dialect.concatenate}(payload, '') FROM reports"
            " WHERE survey_id = ? AND question_id = ? AND seq > ? AND seq <= ?"
            " AND submission IS NOT NULL"
        )

        def read(question: str) -> tuple[str, str]:
            # Every row up to the watermark is committed, so two connections (two
            # snapshots) read the same rows.
            with self.dialect.read() as connection:
                keys, payloads = connection.execute(
                    sql, (survey_id, question, after, through)
                ).fetchone()
            return keys or "", payloads or ""

        # Why two threads: each scan runs in the database with the GIL released.  The
        # pool lives as long as the process, so its threads keep their connections.
        for question, texts in zip(questions, _readers().map(read, questions), strict=True):
            found[question] = texts
        return through, found

    def cached_crosstab(
        self, survey_id: str, questions: tuple[str, str]
    ) -> tuple[int, dict[str, Any]] | None:
        """(through_seq, statistics as stored) of a folded pair, or None."""
        with self.dialect.read() as connection:
            row = connection.execute(
                self.dialect.sql(
                    "SELECT through_seq, statistics FROM crosstab_statistics"
                    " WHERE survey_id = ? AND rows_question = ? AND columns_question = ?"
                ),
                (survey_id, *questions),
            ).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def store_crosstab(
        self, survey_id: str, questions: tuple[str, str], through: int, statistics: dict[str, Any]
    ) -> None:
        """Keep folded statistics unless a fold through a later seq is stored already.

        Each stored row is whole (statistics and watermark together), so racing
        folds leave one consistent row, the furthest.
        """
        with self.dialect.write() as connection:
            connection.execute(
                self.dialect.sql(
                    "INSERT INTO crosstab_statistics (survey_id, rows_question,"
                    " columns_question, through_seq, statistics) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT (survey_id, rows_question, columns_question) DO UPDATE"
                    " SET through_seq = excluded.through_seq,"
                    " statistics = excluded.statistics"
                    " WHERE crosstab_statistics.through_seq < excluded.through_seq"
                ),
                (survey_id, *questions, through, json.dumps(statistics)),
            )

    def later_public_surveys(self, survey_id: str, limit: int) -> list[str]:
        """Ids of public surveys created at or after this one (later waves), oldest first."""
        with self.dialect.read() as connection:
            rows = connection.execute(
                self.dialect.sql(
                    "SELECT id FROM surveys WHERE results_public AND id <> ? AND"
                    " created_at >= (SELECT created_at FROM surveys WHERE id = ?)"
                    " ORDER BY created_at, id LIMIT ?"
                ),
                (survey_id, survey_id, limit),
            ).fetchall()
        return [row[0] for row in rows]
