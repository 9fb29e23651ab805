"""Crosstab benchmark: two 16-option questions over 1,000,000 respondents on SQLite.

Stores ``--respondents`` respondents (one submission each, through the storage's
own ``add_reports`` with respondent indices, as the bulk route does) answering
two single-choice questions of 16 options (GRR and OUE at ε = 1), then prints:

* the baseline in the same run: a bare ``SELECT`` of the same two questions'
  rows (the floor any on-demand crosstab pays to read them), and ``GET
  /results`` served (the per-question figures, folded);
* the on-demand crosstab: the first ``GET /crosstab`` of the pair (reads, joins
  by submission key, decodes, folds the co-support matrix, caches it,
  estimates): target < 2 s;
* the folded crosstab served: later ``GET /crosstab`` calls of the pair with
  nothing new to fold (p50, p99): target < 50 ms; then "live" calls each
  preceded by one new batch of 1,000 respondents (fold forward + estimate).

Requests go through the real app (Flask test client: routing, checks,
storage, JSON), in one process.

    python benchmarks/crosstab.py [--respondents 1000000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from deniable.aggregator import create_app
from deniable.aggregator.storage import EXTENSION
from deniable.survey import Survey
from deniable.wire import Report

OPTIONS = [f"option {i}" for i in range(16)]
DEFINITION = {
    "format": "deniable.survey/1",
    "id": "bench",
    "title": "Crosstab benchmark",
    "description": "Two 16-option questions.",
    "questions": [
        {
            "id": "first",
            "type": "single_choice",
            "text": "First?",
            "epsilon": 1.0,
            "options": OPTIONS,
            "mechanism": "grr",
        },
        {
            "id": "second",
            "type": "single_choice",
            "text": "Second?",
            "epsilon": 1.0,
            "options": OPTIONS,
            "mechanism": "oue",
        },
    ],
}
BATCH = 5_000  # respondents per add_reports call


def ids(count: int) -> list[str]:
    """``count`` random UUID 4 strings (os.urandom; the format only matters here)."""
    raw = np.frombuffer(os.urandom(16 * count), dtype=np.uint8).reshape(count, 16).copy()
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    text = raw.tobytes().hex()
    out = []
    for i in range(count):
        h = text[32 * i : 32 * i + 32]
        out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


def store(storage, survey: Survey, respondents: int, rng: np.random.Generator) -> float:
    """Store ``respondents`` correlated respondents; returns seconds."""
    first, second = survey.question("first"), survey.question("second")
    started = time.perf_counter()
    for start in range(0, respondents, BATCH):
        count = min(BATCH, respondents - start)
        a = rng.integers(0, 16, count)
        b = np.where(rng.random(count) < 0.5, a, rng.integers(0, 16, count))
        payload_a = first.oracle.encode_many(first.oracle.randomize_many(a, rng))
        payload_b = second.oracle.encode_many(second.oracle.randomize_many(b, rng))
        report_ids = ids(2 * count)
        reports = [
            Report(id=report_ids[2 * i], question="first", payload=payload_a[i])
            for i in range(count)
        ] + [
            Report(id=report_ids[2 * i + 1], question="second", payload=payload_b[i])
            for i in range(count)
        ]
        owners = list(range(count)) * 2
        storage.add_reports("bench", reports, operator=True, respondents=owners)
    return time.perf_counter() - started


CPU: list[float] = []  # process CPU seconds (all threads) of each timed call, in order


def timed(call, repeat: int) -> list[float]:
    """Wall seconds of each call; its CPU seconds go to CPU (a loaded machine inflates
    wall time, not CPU time)."""
    times = []
    for _ in range(repeat):
        cpu, started = time.process_time(), time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
        CPU.append(time.process_time() - cpu)
    return times


def ms(seconds: float) -> str:
    return f"{1000 * seconds:8.1f} ms"


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--respondents", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(
            {
                "DATABASE": str(Path(folder) / "bench.sqlite3"),
                "SIGNING_KEY_PATH": str(Path(folder) / "key.pem"),
            }
        )
        storage = app.extensions[EXTENSION]
        survey = Survey.from_dict(DEFINITION)
        storage.create_survey(survey.upgraded(), results_public=True)
        seconds = store(storage, survey, args.respondents, rng)
        print(
            f"stored {args.respondents:,} respondents x 2 questions in {seconds:.1f} s "
            f"(SQLite, {2 * args.respondents / seconds:,.0f} reports/s)"
        )
        client = app.test_client()
        url = "/api/v1/surveys/bench/crosstab?rows=first&columns=second"

        def crosstab() -> None:
            response = client.get(url)
            assert response.status_code == 200, response.data[:300]

        def results() -> None:
            assert client.get("/api/v1/surveys/bench/results").status_code == 200

        def bare_read() -> None:
            with storage._read() as connection:  # the floor: read the rows, nothing else
                rows = connection.execute(
                    "SELECT submission, question_id, payload FROM reports"
                    " WHERE survey_id = ? AND question_id IN (?, ?)",
                    ("bench", "first", "second"),
                ).fetchall()
            assert len(rows) == 2 * args.respondents

        results()  # fold the per-question statistics first: not part of any figure
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print("\nbaseline (same run)")
        floor = timed(bare_read, 3)
        floor_cpu = min(CPU[-3:])
        print(
            f"  bare SELECT of the pair's {2 * args.respondents:,} rows  min {ms(min(floor))}"
            f"  (CPU {ms(floor_cpu).strip()})"
        )
        served = timed(results, args.repeat)
        print(
            f"  GET /results served (folded)               p50 {ms(percentile(served, 50))}"
            f"  p99 {ms(percentile(served, 99))}"
        )

        print("\ncrosstab of two 16-option questions (GRR x OUE)")
        first = timed(crosstab, 1)[0]
        first_cpu = CPU[-1]
        verdict = "ok" if first < 2.0 else "MISSED"
        print(
            f"  on demand (first call: read, join, fold, cache) {ms(first)}"
            f"   target < 2 s: {verdict} ({first / min(floor):.1f}x the bare SELECT)"
        )
        print(
            f"    CPU {ms(first_cpu).strip()} over its threads"
            f" ({first_cpu / floor_cpu:.2f}x the bare SELECT's CPU)"
        )
        steady = timed(crosstab, args.repeat)
        verdict = "ok" if percentile(steady, 50) < 0.05 else "MISSED"
        print(
            f"  folded, served                   p50 {ms(percentile(steady, 50))}"
            f"  p99 {ms(percentile(steady, 99))}   target p50 < 50 ms: {verdict}"
        )
        live = []
        for _ in range(min(args.repeat, 10)):
            store(storage, survey, 1_000, rng)
            live.extend(timed(crosstab, 1))
        print(
            f"  live (1,000 new respondents each) p50 {ms(percentile(live, 50))}"
            f"  p99 {ms(percentile(live, 99))}"
        )
        document = client.get(url).get_json()
        print(
            f"\n  n = {document['n']:,}; simultaneous half-width "
            f"{document['simultaneous_half_width']:.4f} (Chebyshev), tightest "
            f"{document['simultaneous_tightest']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
