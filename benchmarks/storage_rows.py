"""Storage and memory rows of the ingest benchmark: storage at the limit, in one process.

What one aggregator worker's storage does, without HTTP, for each backend:

1. bulk ingest: ``--reports`` (1,000,000) reports of the ingest benchmark's survey
   (single choice, d = 1,024, ε = 1), validated with ``parse_submission`` and
   stored with ``Storage.add_reports`` in batches of 1,000: reports/s, next to a
   bare ``executemany`` of the same rows into a table shaped like ``reports``
   (no pending queue, no idempotency check, no folding) in the same run;
2. the first results call after all of them (fold whatever is still pending,
   then the results document, serialized): seconds, and how many reports were
   still pending (ingest folds a survey's backlog, see storage/base.py);
3. results p50/p99 at that size (``--results-calls`` calls);
4. this process's RSS after the ingest (VmRSS, and the peak VmHWM);
5. the largest allowed survey (100 single-choice questions of 1,024 options):
   its results document's size in bytes and the RSS it took to build it.

Run on its own (``python benchmarks/storage_rows.py``) or as part of
``python benchmarks/ingest.py --storage-rows``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from ingest import (
    DEFAULT_DSN,
    MECHANISM,
    QUESTION_ID,
    definition,
    payload_pool,
    prepare_database,
)

from deniable.results import question_results

BATCH = 1000
TARGET_BATCH = 50_000
TARGET_FIRST_RESULTS_S = 1.0
TARGET_RESULTS_P50_MS = 50.0


def rss_kib() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in KiB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields.get("VmRSS", 0), fields.get("VmHWM", 0)


def results_document(storage: Any, survey_id: str) -> bytes:
    """What GET /results computes: fold, then every question's estimates, as JSON."""
    from deniable.estimation import DEFAULT_BETA

    record = storage.get_survey(survey_id, count=False)
    folded = storage.fold(survey_id)
    questions = [
        question_results(question, folded[question.id].statistics, folded[question.id].n)
        for question in record.survey.questions
    ]
    document = {
        "survey": survey_id,
        "beta": DEFAULT_BETA,
        "questions": questions,
        "n_reports": sum(s.n for s in folded.values()),
    }
    return json.dumps(document).encode()


def bare_rows_per_second(storage: Any, backend: str, rows: list[tuple]) -> float:
    """The same rows into a bare table (no pending, no checks, no fold): the floor."""
    mark = "?" if backend == "sqlite" else "%s"
    with storage._transaction() as connection:
        connection.execute(
            "CREATE TABLE bare_reports (seq INTEGER PRIMARY KEY, survey_id TEXT, report_id TEXT,"
            " question_id TEXT, payload TEXT, digest TEXT, received_at TEXT)"
            if backend == "sqlite"
            else "CREATE TABLE bare_reports (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " survey_id text, report_id text, question_id text, payload text, digest text,"
            " received_at text)"
        )
    sql = (
        f"INSERT INTO bare_reports (survey_id, report_id, question_id, payload, digest,"
        f" received_at) VALUES ({', '.join([mark] * 6)})"
    )
    start = time.perf_counter()
    for offset in range(0, len(rows), BATCH):
        with storage._transaction() as connection:
            if backend == "sqlite":
                connection.executemany(sql, rows[offset : offset + BATCH])
            else:
                with connection.cursor() as cursor:
                    cursor.executemany(sql, rows[offset : offset + BATCH])
    return len(rows) / (time.perf_counter() - start)


def run(backend: str, database: str, total: int, calls: int, mechanism: str) -> dict[str, Any]:
    from deniable.aggregator.storage import open_storage
    from deniable.survey import Survey
    from deniable.wire import parse_submission

    survey = Survey.from_dict(definition(mechanism=mechanism))
    storage = open_storage({"DATABASE": database})
    try:
        storage.migrate()
        storage.create_survey(survey, results_public=True)
        pool = payload_pool(mechanism=mechanism)
        rng = np.random.default_rng(3)
        ids = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(total)]
        start = time.perf_counter()
        for offset in range(0, total, BATCH):
            body = {
                "reports": [
                    {"id": ids[i], "question": QUESTION_ID, "payload": pool[i % len(pool)]}
                    for i in range(offset, min(total, offset + BATCH))
                ]
            }
            storage.add_reports(survey.id, parse_submission(body, survey, max_batch=BATCH))
        ingest = total / (time.perf_counter() - start)
        rss, peak = rss_kib()
        with storage._transaction() as connection:  # stored, less what was folded
            (folded,) = connection.execute(
                "SELECT COALESCE(SUM(n), 0) FROM question_statistics"
            ).fetchone()
        pending = storage.get_survey(survey.id).n_reports - folded
        start = time.perf_counter()
        document = results_document(storage, survey.id)
        first = time.perf_counter() - start
        assert json.loads(document)["n_reports"] == total
        samples = []
        for _ in range(calls):
            start = time.perf_counter()
            results_document(storage, survey.id)
            samples.append((time.perf_counter() - start) * 1000)
        samples.sort()
        bare_total = min(total, 200_000)
        rows = [
            (
                survey.id,
                str(uuid.uuid4()),
                QUESTION_ID,
                pool[i % len(pool)],
                "0" * 64,
                "2026-01-01T00:00:00Z",
            )
            for i in range(bare_total)
        ]
        bare = bare_rows_per_second(storage, backend, rows)
    finally:
        storage.close()
    return {
        "backend": backend,
        "total": total,
        "ingest": ingest,
        "bare": bare,
        "bare_total": bare_total,
        "pending": pending,
        "first": first,
        "p50": statistics.median(samples),
        "p99": samples[int(0.99 * (len(samples) - 1))],
        "rss": rss,
        "peak": peak,
    }


def largest_survey_document(database: str) -> dict[str, Any]:
    """Results of the largest allowed survey: 100 questions of 1,024 options."""
    from deniable.aggregator.storage import open_storage
    from deniable.survey import MAX_OPTIONS, MAX_QUESTIONS, Survey
    from deniable.wire import parse_submission

    data = {
        "format": "deniable.survey/1",
        "id": "largest",
        "title": "Largest allowed survey",
        "questions": [
            {
                "id": f"q{i}",
                "type": "single_choice",
                "text": "?",
                "epsilon": 1.0,
                "options": [f"option {j}" for j in range(MAX_OPTIONS)],
            }
            for i in range(MAX_QUESTIONS)
        ],
    }
    survey = Survey.from_dict(data)
    before, _ = rss_kib()
    storage = open_storage({"DATABASE": database})
    try:
        storage.migrate()
        storage.create_survey(survey, results_public=True)
        rng = np.random.default_rng(5)
        reports = []
        for question in survey.questions:
            for _ in range(10):
                answer = question.options[int(rng.integers(MAX_OPTIONS))]
                reports.append(
                    {
                        "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                        "question": question.id,
                        "payload": question.randomize(answer),
                    }
                )
        storage.add_reports(
            survey.id, parse_submission({"reports": reports}, survey, max_batch=len(reports))
        )
        start = time.perf_counter()
        document = results_document(storage, survey.id)
        seconds = time.perf_counter() - start
    finally:
        storage.close()
    after, peak = rss_kib()
    return {
        "bytes": len(document),
        "seconds": seconds,
        "rss_before": before,
        "rss_after": after,
        "peak": peak,
        "questions": MAX_QUESTIONS,
        "options": MAX_OPTIONS,
    }


def verdict(ok: bool) -> str:
    return "meets target" if ok else "BELOW TARGET"


def storage_rows(
    backends: list[str], dsn: str, total: int, calls: int, mechanism: str = MECHANISM
) -> None:
    print(
        f"\nstorage at the limit, in one process (what a worker's storage does; no HTTP), "
        f"{total:,} reports in batches of {BATCH:,}, d = 1,024, {mechanism}"
    )
    for backend in backends:
        workdir = Path(tempfile.mkdtemp(prefix=f"deniable-storage-{backend}-"))
        try:
            database, cleanup = prepare_database(backend, workdir, dsn)
        except Exception as error:  # noqa: BLE001 - an unreachable server is a line, not a crash
            print(f"  {backend}: skipped ({type(error).__name__}: {error})")
            continue
        try:
            r = run(backend, database, total, calls, mechanism)
        finally:
            cleanup()
        print(f"  {backend}:")
        print(
            f"    bulk ingest (validate + store): {r['ingest']:,.0f} reports/s; bare executemany "
            f"of the same rows ({r['bare_total']:,}): {r['bare']:,.0f} rows/s; ratio "
            f"{r['ingest'] / r['bare']:.2f}  [target >= {TARGET_BATCH:,}/s: "
            f"{verdict(r['ingest'] >= TARGET_BATCH)}]"
        )
        print(
            f"    first results call after {r['total']:,} reports: {r['first']:.3f} s "
            f"({r['pending']:,} still pending; ingest folded the rest)  [target < "
            f"{TARGET_FIRST_RESULTS_S:g} s: {verdict(r['first'] < TARGET_FIRST_RESULTS_S)}]"
        )
        print(
            f"    results p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms  [target p50 < "
            f"{TARGET_RESULTS_P50_MS:g} ms: {verdict(r['p50'] < TARGET_RESULTS_P50_MS)}]"
        )
        print(
            f"    RSS after ingesting {r['total']:,} reports: {r['rss'] / 1024:.0f} MiB "
            f"(peak {r['peak'] / 1024:.0f} MiB)"
        )
    with tempfile.TemporaryDirectory(prefix="deniable-largest-") as scratch:
        largest = largest_survey_document(str(Path(scratch) / "largest.sqlite3"))
    print(
        f"  largest allowed survey ({largest['questions']} questions x {largest['options']:,} "
        f"options): results document {largest['bytes'] / 1e6:.2f} MB in "
        f"{largest['seconds']:.3f} s; RSS {largest['rss_before'] / 1024:.0f} -> "
        f"{largest['rss_after'] / 1024:.0f} MiB (peak {largest['peak'] / 1024:.0f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument(
        "--postgres-dsn",
        default=os.environ.get(
            "DENIABLE_BENCH_POSTGRES_DSN", os.environ.get("DENIABLE_TEST_POSTGRES_DSN", DEFAULT_DSN)
        ),
    )
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--results-calls", type=int, default=50)
    parser.add_argument("--mechanism", default=MECHANISM)
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    storage_rows(backends, args.postgres_dsn, args.reports, args.results_calls, args.mechanism)


if __name__ == "__main__":
    main()
