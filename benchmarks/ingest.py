"""Ingest and results benchmark: the real aggregator against a bare Flask app.

For each backend (SQLite, PostgreSQL) this starts, on 127.0.0.1 only:

* the real aggregator: ``deniable-aggregator serve`` (gunicorn, 2 workers running
  waitress, service/serving.py) on a fresh database (a new SQLite file; a new
  PostgreSQL schema, dropped at the end);
* a bare Flask app defined below (gunicorn, 2 workers, same database, tables
  ``bare_reports``/``bare_pending`` shaped like the real ``reports``/``pending``)
  that inserts the same rows with no validation, no idempotency check and no folding,

and measures both the same way, with one survey holding a single_choice question
of domain size 1,024 (ε = 1; its default mechanism):

1. the public path: single-report POSTs (one respondent of the one-question survey per
   request, as devices send) from 16 concurrent clients (4 processes x 4 threads) for
   ``--duration`` seconds: reports/s, p50, p99;
2. the bulk route (``.../reports/bulk``, operator token; the bare app does the same
   inserts): batches of 1,000 reports from 4 concurrent clients until ``--reports``
   (1,000,000) are stored: reports/s;
3. ``GET /results`` with all of them stored: the first call (which folds every pending
   report), then the steady state (no new reports: p50/p99), then "live" calls each
   preceded by one new batch of 1,000 (fold + recompute: p50/p99).  The bare app's
   results endpoint is a ``GROUP BY payload`` scan, the obvious design without folding.

4. slow clients: 100 connections held open against the real server (half stalled inside
   their headers, half trickling a body a byte every 5 s), then ``/health`` p50/p99 and the
   single-report load of 1. again, printed against the same load measured just before
   the connections open (same database state), and against 1.;
5. the token-required path, last (so the figures above are undisturbed): a second survey
   created with ``require_enrolment``, N one-time enrolment tokens issued up front, and the
   single-report load of 1. again, every request with a fresh token (header
   ``X-Deniable-Enrolment``), printed next to the open path (a token admits one
   respondent, so there is no token batch row).  It runs on a database already holding
   the reports above, which if anything favours the open path.

6. adversarial ids (``--adversarial``, SQLite; benchmarks/adversarial_ids.py): honest
   single-report p50/p99 with and without two clients sending 20-report submissions of ids
   that share their first 64 bits, at the default public limit, after 50,000 such ids are
   stored.  Target: honest p99 with them under twice its unloaded value.

7. the rate limiter (``--rate-limits``): single-report POSTs to the real aggregator on a
   fresh SQLite database with the per-address limit off, counted in memory, and counted
   in Redis (``RATE_LIMIT_STORAGE``, ``--redis-url``), in rounds that alternate the three
   servers so drift hits them alike; loopback is not exempt there and the limit is far
   above the load, so every request is counted and none refused.  Target: the Redis
   limiter keeps >= 85% of the in-memory limiter's single-report throughput.

``--storage-rows`` prints instead the storage and memory rows of one worker's
storage without HTTP (benchmarks/storage_rows.py): bulk ingest next to a bare
insert, the first results call after 1,000,000 reports, results p50, the RSS
after the ingest, and the results document of the largest allowed survey.

Targets: single-report ingest >= 70% of bare; bulk batches >= 50,000 reports/s and >= 0.7
of bare; results p50 < 50 ms at 1M reports; with 100 slow connections /health p99 < 1 s and
single-report ingest >= half its unloaded rate.  ``--profile`` adds an in-process cProfile
of the real app's request path (single reports and batches) to show where the time goes.

Usage::

    python benchmarks/ingest.py [--postgres-dsn postgresql://postgres@127.0.0.1:5432/test]
        [--backends sqlite,postgresql] [--reports 1000000] [--duration 8] [--profile]
        [--rate-limits auto|only|off] [--redis-url redis://127.0.0.1:6379/0]
        [--adversarial on|only|off] [--adversarial-stored 50000]

The DSN defaults to ``$DENIABLE_BENCH_POSTGRES_DSN``, then
``$DENIABLE_TEST_POSTGRES_DSN``, then postgresql://postgres@127.0.0.1:5432/test.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

import adversarial_ids  # sibling modules of this script
import numpy as np
import rate_limit_phase
from bare_app import setup_bare_tables
from ingest_report import report
from load import (
    BATCH,
    HOST,
    QUESTION_ID,
    SINGLE_CLIENTS,
    SLOW_CONNECTIONS,
    SURVEY_ID,
    batch_body,
    measure_batches,
    measure_results,
    measure_single,
    measure_slow_clients,
)
from servers import free_port, stop, wait_healthy

GATED_ID = "bench-gated"
DOMAIN = 1024
EPSILON = 1.0
# OLH: the mechanism these targets were set on (5-byte reports).  At d = 1,024 and
# ε = 1 the planner's default is now subset selection, whose reports are 550 bytes
# (110x the bytes to move and store); --mechanism subset measures that instead.
MECHANISM = "olh"
PAYLOAD_POOL = 20_000
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
BULK_BODY_BYTES = 4 << 20


def definition(survey_id: str = SURVEY_ID, mechanism: str = MECHANISM) -> dict[str, Any]:
    return {
        "format": "deniable.survey/1",
        "id": survey_id,
        "title": "Ingest benchmark",
        "questions": [
            {
                "id": QUESTION_ID,
                "type": "single_choice",
                "text": "Which item?",
                "epsilon": EPSILON,
                "mechanism": mechanism,
                "options": [f"item {i}" for i in range(DOMAIN)],
            },
        ],
    }


def payload_pool(size: int = PAYLOAD_POOL, seed: int = 1, mechanism: str = MECHANISM) -> list[str]:
    """Valid, honestly randomized payloads (Zipf-ish true values), reused with fresh ids."""
    from deniable.survey import Survey

    question = Survey.from_dict(definition(mechanism=mechanism)).question(QUESTION_ID)
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, DOMAIN + 1)
    values = rng.choice(DOMAIN, size=size, p=weights / weights.sum())
    return question.oracle.encode_many(question.oracle.randomize_many(values, rng))


# -- servers ----------------------------------------------------------------------------


def start_real(
    database: str, key: Path, logdir: Path, environment: dict[str, str] | None = None
) -> tuple[subprocess.Popen, int]:
    port = free_port()
    log = logdir / f"real-{port}.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "--database",
            database,
            "--signing-key",
            str(key),
            "serve",
            "--bind",
            f"{HOST}:{port}",
            "--workers",
            "2",
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        # Why: a batch of 1,000 reports of the d = 1,024 question is ~1.2 MB, over the
        # default 1 MiB body limit; the bare app has no limit at all.
        env={**os.environ, "DENIABLE_MAX_BODY_BYTES": str(BULK_BODY_BYTES), **(environment or {})},
    )
    wait_healthy(port, process, log)
    return process, port


def start_bare(database: str, logdir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    log = logdir / f"bare-{port}.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--workers",
            "2",
            "--bind",
            f"{HOST}:{port}",
            "--chdir",
            str(Path(__file__).resolve().parent),
            "bare_app:bare_app()",
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "BARE_DATABASE": database},
    )
    wait_healthy(port, process, log)
    return process, port


# -- one backend ---------------------------------------------------------------------------


def prepare_database(backend: str, workdir: Path, dsn: str) -> tuple[str, Any]:
    """(DATABASE setting, cleanup) for a fresh database of ``backend``."""
    if backend == "sqlite":
        return str(workdir / "bench.sqlite3"), lambda: None
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')

    def cleanup() -> None:
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')

    separator = "&" if "?" in dsn else "?"
    return f"{dsn}{separator}options={quote(f'-c search_path={schema}')}", cleanup


def create_survey(database: str, key: Path, mechanism: str = MECHANISM) -> tuple[str, str]:
    """(the benchmark question's mechanism, an operator token for the bulk route)."""
    from deniable.aggregator import cli
    from deniable.aggregator.storage import open_storage
    from deniable.survey import Survey

    with contextlib.redirect_stdout(sys.stderr):
        assert cli.main(["--database", database, "--signing-key", str(key), "init"]) == 0
    storage = open_storage({"DATABASE": database})
    try:
        record = storage.create_survey(
            Survey.from_dict(definition(mechanism=mechanism)), results_public=True
        )
        token = storage.create_operator_token("benchmark")
    finally:
        storage.close()
    return record.survey.question(QUESTION_ID).mechanism, token


def create_gated_survey(database: str, mechanism: str = MECHANISM) -> None:
    """The benchmark survey again, as ``GATED_ID``, requiring an enrolment token per submission."""
    from deniable.aggregator.storage import open_storage
    from deniable.survey import Survey

    storage = open_storage({"DATABASE": database})
    try:
        storage.create_survey(
            Survey.from_dict(definition(GATED_ID, mechanism)),
            results_public=True,
            require_enrolment=True,
        )
    finally:
        storage.close()


def issue_tokens(database: str, count: int) -> tuple[list[str], float]:
    """(``count`` fresh enrolment tokens of the gated survey, seconds it took to issue them)."""
    from deniable.aggregator.storage import open_storage

    storage = open_storage({"DATABASE": database})
    try:
        started = time.perf_counter()
        tokens = storage.issue_enrolment_tokens(GATED_ID, count)
        return tokens, time.perf_counter() - started
    finally:
        storage.close()


def run_backend(backend: str, args: argparse.Namespace, payloads: list[str]) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix=f"deniable-bench-{backend}-", dir=args.dir))
    database, cleanup = prepare_database(backend, workdir, args.postgres_dsn)
    servers = []
    try:
        mechanism, operator = create_survey(database, workdir / "key.pem", args.mechanism)
        setup_bare_tables(database)
        real, real_port = start_real(database, workdir / "key.pem", workdir)
        servers.append(real)
        bare, bare_port = start_bare(database, workdir)
        servers.append(bare)
        print(
            f"[{backend}] single-report POSTs, {SINGLE_CLIENTS} clients, {args.duration:g} s",
            file=sys.stderr,
        )
        single_real = measure_single(real_port, payloads, args.duration)
        single_bare = measure_single(bare_port, payloads, args.duration)
        print(f"[{backend}] batches of {BATCH:,} up to {args.reports:,} reports", file=sys.stderr)
        batch_real = measure_batches(real_port, payloads, args.reports, "real", operator)
        batch_bare = measure_batches(bare_port, payloads, args.reports, "bare")
        print(f"[{backend}] results", file=sys.stderr)
        results_real = measure_results(
            real_port, payloads, args.results_calls, args.live_calls, operator
        )
        print(
            f"[{backend}] {SLOW_CONNECTIONS} slow connections: /health and single POSTs",
            file=sys.stderr,
        )
        slow = measure_slow_clients(real_port, payloads, args.duration)
        results_bare = measure_results(bare_port, payloads, max(3, args.results_calls // 10), 0)
        # The token path last, so the open-path figures above are measured as before.
        create_gated_survey(database, args.mechanism)
        # Enough for the open path's single-report rate with room to spare.
        needed = int(single_real["rate"] * args.duration * 2) + 10_000
        single_tokens, issue_seconds = issue_tokens(database, needed)
        print(
            f"[{backend}] token path: {needed:,} enrolment tokens issued in "
            f"{issue_seconds:.1f} s; single-report POSTs, one fresh token each",
            file=sys.stderr,
        )
        single_token = measure_single(real_port, payloads, args.duration, GATED_ID, single_tokens)
        return {
            "backend": backend,
            "mechanism": mechanism,
            "slow": slow,
            "single": {"real": single_real, "bare": single_bare, "token": single_token},
            "batch": {"real": batch_real, "bare": batch_bare},
            "results": {"real": results_real, "bare": results_bare},
            "tokens": {"issued": needed, "issue_seconds": issue_seconds},
        }
    finally:
        for server in servers:
            stop(server)
        cleanup()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


# -- profiling --------------------------------------------------------------------------------


def profile_real(
    payloads: list[str], backend: str, dsn: str, mechanism: str = MECHANISM, top: int = 18
) -> str:
    """cProfile of the real app's request path, in process (Flask test client)."""
    from deniable.aggregator import create_app

    workdir = Path(tempfile.mkdtemp(prefix="deniable-profile-"))
    database, cleanup = prepare_database(backend, workdir, dsn)
    out = io.StringIO()
    try:
        _, operator = create_survey(database, workdir / "key.pem", mechanism)
        app = create_app({"DATABASE": database, "SIGNING_KEY_PATH": str(workdir / "key.pem")})
        client = app.test_client()
        path = f"/api/v1/surveys/{SURVEY_ID}/reports"
        cases = {
            "2,000 single-report POSTs": lambda: [
                client.post(
                    path,
                    data=json.dumps(
                        {"id": str(uuid.uuid4()), "question": QUESTION_ID, "payload": payloads[i]}
                    ),
                    content_type="application/json",
                )
                for i in range(2000)
            ],
            "20 batches of 1,000 (bulk route)": lambda: [
                client.post(
                    path + "/bulk",
                    data=batch_body(payloads, i * BATCH),
                    headers={"Authorization": f"Bearer {operator}"},
                    content_type="application/json",
                )
                for i in range(20)
            ],
        }
        for label, case in cases.items():
            profiler = cProfile.Profile()
            started = time.perf_counter()
            profiler.enable()
            responses = case()
            profiler.disable()
            elapsed = time.perf_counter() - started
            assert all(r.status_code == 201 for r in responses)
            out.write(
                f"\n--- profile ({backend}, in-process, no HTTP server): {label}: {elapsed:.2f} s\n"
            )
            stats = pstats.Stats(profiler, stream=out)
            stats.sort_stats("cumulative").print_stats(top)
            stats.sort_stats("tottime").print_stats(top)
        app.extensions["deniable.storage"].close()
    finally:
        cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--postgres-dsn",
        default=os.environ.get(
            "DENIABLE_BENCH_POSTGRES_DSN", os.environ.get("DENIABLE_TEST_POSTGRES_DSN", DEFAULT_DSN)
        ),
    )
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds per single test")
    parser.add_argument("--results-calls", type=int, default=50)
    parser.add_argument("--live-calls", type=int, default=20)
    parser.add_argument("--dir", default=None, help="where the SQLite files go (default: TMPDIR)")
    parser.add_argument("--keep", action="store_true", help="keep databases and server logs")
    parser.add_argument("--profile", action="store_true", help="also profile the request path")
    parser.add_argument(
        "--rate-limits",
        choices=("auto", "only", "off"),
        default="auto",
        help="the limiter phase: auto (when Redis answers), only, off",
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("DENIABLE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument(
        "--adversarial",
        choices=("on", "only", "off"),
        default="on",
        help="the adversarial-ids phase (SQLite): on, only, off",
    )
    parser.add_argument(
        "--adversarial-stored",
        type=int,
        default=50_000,
        help="colliding ids stored before that phase (default 50,000)",
    )
    parser.add_argument(
        "--mechanism",
        default=MECHANISM,
        help=f"the benchmark question's mechanism (default {MECHANISM})",
    )
    parser.add_argument(
        "--storage-rows",
        action="store_true",
        help="only the storage and memory rows (benchmarks/storage_rows.py)",
    )
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"sqlite", "postgresql"}
    if unknown or args.reports < BATCH:
        parser.error(f"bad --backends {sorted(unknown)} or --reports < {BATCH}")

    if args.storage_rows:
        from storage_rows import storage_rows  # the sibling module of this script

        storage_rows(backends, args.postgres_dsn, args.reports, args.results_calls, args.mechanism)
        return 0
    started = time.monotonic()
    payloads = payload_pool(mechanism=args.mechanism)
    print(
        f"deniable ingest benchmark: {os.cpu_count()} CPUs, Python "
        f"{sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}, loopback {HOST}",
        flush=True,
    )
    only = "only" in (args.rate_limits, args.adversarial)
    for backend in backends if not only else ():
        result = run_backend(backend, args, payloads)
        print(report(result, domain=DOMAIN, epsilon=EPSILON), flush=True)
        if args.profile:
            print(profile_real(payloads, backend, args.postgres_dsn, args.mechanism), flush=True)
    if args.adversarial != "off" and "sqlite" in backends:
        adversarial = adversarial_ids.run_adversarial(
            args,
            payloads,
            host=HOST,
            survey=SURVEY_ID,
            question=QUESTION_ID,
            create_survey=create_survey,
            start_real=start_real,
            stop=stop,
        )
        print(adversarial_ids.report(adversarial), flush=True)
    if args.rate_limits != "off" and args.adversarial != "only":
        missing = rate_limit_phase.redis_reachable(args.redis_url)
        if missing is None:
            limits = rate_limit_phase.run_rate_limits(
                args,
                payloads,
                create_survey=create_survey,
                start_real=start_real,
                stop=stop,
                measure_single=measure_single,
            )
            print(rate_limit_phase.report(limits, SINGLE_CLIENTS), flush=True)
        else:
            print(f"rate limiter phase skipped: {missing}", flush=True)
    print(f"total run time {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
