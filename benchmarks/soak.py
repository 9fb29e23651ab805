"""Soak: aggregator and relay under a steady load for ``--minutes``, memory per interval.

Starts, on 127.0.0.1 only, a real aggregator and a real relay (``serve``: gunicorn +
waitress, 2 workers each) on fresh databases (``--backend sqlite``: new files;
``postgresql``: new schemas of ``--postgres-dsn``, dropped at the end), and keeps up:

* bulk ingest: batches of 1,000 one-question reports (the ingest benchmark's survey,
  d = 1,024) to the operator's bulk route, paced at ``--bulk-rate`` reports/s;
* sealed intake: submissions of 10 sealed units (the relay benchmark's survey, sealed
  as devices do, while the load runs) to the relay, paced at ``--sealed-rate``
  submissions/s; the relay forwards a batch per unit every ``--window`` seconds;
* results: one ``GET /results`` of the bulk survey per second.

Every ``--interval`` seconds it prints one row: the resident memory (VmRSS summed over
the process tree: master, workers, decryption processes) of each service, the
aggregator's less its id index ("aggr-idx": SQLite only, 8 bytes per stored report in
each of the 2 workers; docs/scaling.md), the bulk and sealed throughput with their
p50/p99, the units the relay holds (waiting and in unacknowledged batches), the
results latency (p50/p99), the reports stored and the size of the aggregator's
database ("db MiB": the SQLite file and its WAL; on PostgreSQL its schema's tables
with their indexes).  On PostgreSQL the database server's own memory is in neither
tree; "pg MiB" is the private memory (RssAnon) of the server processes that serve
the two services' connections (found by ``application_name``), and the shared buffers
(one fixed size for the whole server) come on top.

Memory should be flat once the id index is accounted for: "aggr-idx" flat on SQLite,
"aggr MiB" and "pg MiB" flat on PostgreSQL.

Usage::

    python benchmarks/soak.py --backend sqlite|postgresql [--minutes 30] [--interval 30]
        [--postgres-dsn postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ingest import (  # sibling modules of this script
    DEFAULT_DSN,
    SURVEY_ID,
    payload_pool,
    prepare_database,
)
from ingest import definition as bulk_definition
from load import BATCH, _get, _post, batch_body, percentiles
from servers import (
    HOST,
    cli,
    free_port,
    key_document,
    process_tree,
    relay_surveys,
    serve_program,
    stop,
)

from relay import QUESTIONS, create_surveys, environments, relay_credential, sealed_bodies
from relay import definition as relayed_definition

SEALED_ID = "sealed"


WORKERS = 2
INDEX_BYTES = 8  # per stored report in each SQLite worker (docs/scaling.md)


def resident(pids, field: str = "VmRSS") -> int:
    """Bytes of ``field`` (a /proc/<pid>/status line, in kB) summed over ``pids``."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    total += int(line.split()[1]) * 1024
        except OSError:  # gone meanwhile, or not readable
            continue
    return total


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process under it (VmRSS, summed)."""
    return resident(process_tree(root))


def sqlite_bytes(path: Path) -> int:
    """Bytes of a SQLite database file and its write-ahead log."""
    return sum(
        candidate.stat().st_size
        for candidate in (path, path.with_name(path.name + "-wal"))
        if candidate.exists()
    )


def postgres_figures(database: str, application: str) -> tuple[int, int]:
    """(private memory of the server processes serving connections named ``application``
    followed by anything, bytes of the tables and indexes of ``database``'s schema)."""
    import psycopg

    with psycopg.connect(database, autocommit=True) as connection:
        pids = [
            pid
            for (pid,) in connection.execute(
                "SELECT pid FROM pg_stat_activity"
                " WHERE application_name LIKE %s AND pid <> pg_backend_pid()",
                (application + "%",),
            )
        ]
        (size,) = connection.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        ).fetchone()
    return resident(pids, "RssAnon"), int(size)


class Recorder:
    """Latencies and counts of one kind of request, taken and reset per interval."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latencies: list[float] = []
        self._items = 0
        self.errors = 0

    def add(self, latency: float, items: int) -> None:
        with self._lock:
            self._latencies.append(latency)
            self._items += items

    def take(self) -> tuple[list[float], int]:
        with self._lock:
            taken = self._latencies, self._items
            self._latencies, self._items = [], 0
        return taken


def paced(rate: float, stop_at: float, step) -> None:
    """Call ``step()`` ``rate`` times a second until ``stop_at`` (behind: no catching up)."""
    period, due = 1.0 / rate, time.monotonic()
    while time.monotonic() < stop_at:
        step()
        due = max(due + period, time.monotonic() - period)
        time.sleep(max(0.0, due - time.monotonic()))


def bulk_load(port: int, operator: str, rate: float, stop_at: float, record: Recorder) -> None:
    payloads = payload_pool(2000)
    path = f"/api/v1/surveys/{SURVEY_ID}/reports/bulk"
    counter = iter(range(1 << 40))

    def step() -> None:
        body = batch_body(payloads, next(counter) * BATCH)
        connection = http.client.HTTPConnection(HOST, port, timeout=120)
        started = time.perf_counter()
        try:
            _post(connection, path, body, operator=operator)
            record.add(time.perf_counter() - started, BATCH)
        except (OSError, RuntimeError):
            record.errors += 1
        finally:
            connection.close()

    paced(rate / BATCH, stop_at, step)


def sealed_load(
    port: int, sealing: tuple[str, bytes, str], rate: float, stop_at: float, record: Recorder
) -> None:
    path = f"/api/v1/surveys/{SEALED_ID}/sealed"
    connection = http.client.HTTPConnection(HOST, port, timeout=60)

    def step() -> None:
        nonlocal connection
        (body,) = sealed_bodies(*sealing, 1)
        started = time.perf_counter()
        try:
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            if response.status != 202:
                raise RuntimeError(f"HTTP {response.status}")
            record.add(time.perf_counter() - started, QUESTIONS)
        except (OSError, RuntimeError, http.client.HTTPException):
            record.errors += 1
            connection.close()
            connection = http.client.HTTPConnection(HOST, port, timeout=60)

    paced(rate, stop_at, step)
    connection.close()


def results_load(port: int, stop_at: float, record: Recorder, stored: list[int]) -> None:
    path = f"/api/v1/surveys/{SURVEY_ID}/results"

    def step() -> None:
        try:
            elapsed, body = _get(port, path)
        except (OSError, RuntimeError):
            record.errors += 1
            return
        record.add(elapsed, 1)
        stored[0] = json.loads(body).get("n_reports", stored[0])

    paced(1.0, stop_at, step)


def held_units(relay_env: dict[str, str]) -> int:
    """Units the relay holds: waiting for a batch, or in a batch not yet acknowledged."""
    rows = json.loads(cli("relay", ["status", "--json"], relay_env))
    return sum(sum(row["waiting"].values()) + row["in_batches"] for row in rows)


def row(cells: list[Any], widths: list[int]) -> str:
    return "  ".join(f"{cell:>{width}}" for cell, width in zip(cells, widths, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (30)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--postgres-dsn", default=DEFAULT_DSN)
    parser.add_argument("--interval", type=float, default=30.0, help="seconds per row (30)")
    parser.add_argument("--bulk-rate", type=float, default=10_000, help="reports/s (10,000)")
    parser.add_argument("--sealed-rate", type=float, default=100, help="submissions/s (100)")
    parser.add_argument("--window", type=float, default=5.0, help="relay window, s (5)")
    args = parser.parse_args(argv)
    from deniable.keychain import decode_public_key

    work = Path(tempfile.mkdtemp(prefix=f"deniable-soak-{args.backend}-"))
    aggregator_port, relay_port = free_port(), free_port()
    relay_url = f"http://{HOST}:{relay_port}"
    cleanups = []
    aggregator_env, relay_env = environments(work, relay_url)
    relay_env["DENIABLE_RELAY_WINDOW_SECONDS"] = str(args.window)
    relay_env["DENIABLE_RELAY_FORWARD_INTERVAL"] = "0.5"
    application = f"deniable-soak-{uuid.uuid4().hex[:8]}-"
    if args.backend == "postgresql":
        for environment, name in ((aggregator_env, "DENIABLE"), (relay_env, "DENIABLE_RELAY")):
            database, cleanup = prepare_database("postgresql", work, args.postgres_dsn)
            service = "aggregator" if name == "DENIABLE" else "relay"
            environment[f"{name}_DATABASE"] = f"{database}&application_name={application}{service}"
            cleanups.append(cleanup)
    cli("aggregator", ["init"], aggregator_env)
    create_surveys(
        work,
        {SURVEY_ID: bulk_definition(), SEALED_ID: relayed_definition(SEALED_ID, relay_url, 100)},
        aggregator_env,
    )
    relay_credential(work, relay_url, aggregator_env)
    operator = cli("aggregator", ["token", "create"], aggregator_env).strip()
    processes = []
    try:
        aggregator = serve_program(
            "aggregator", aggregator_port, aggregator_env, work / "aggregator.log", workers=WORKERS
        )
        processes.append(aggregator)
        key = key_document(aggregator_port)
        encryption = key["encryption_key"]
        cli("relay", ["init"], relay_env)
        relay_surveys(aggregator_port, (SEALED_ID,), work / "credential", key, relay_env)
        relay = serve_program("relay", relay_port, relay_env, work / "relay.log", workers=WORKERS)
        processes.append(relay)
        sealing = (
            json.dumps(relayed_definition(SEALED_ID, relay_url, 100)),
            decode_public_key(encryption["public_key"], "key"),
            encryption["key_id"],
        )
        print(
            f"soak: {args.backend}, {args.minutes:g} min, bulk {args.bulk_rate:,.0f} reports/s, "
            f"sealed {args.sealed_rate:,.0f} submissions/s ({QUESTIONS} units), "
            f"window {args.window:g} s; memory: VmRSS of each process tree\n",
            flush=True,
        )
        started = time.monotonic()
        stop_at = started + 60 * args.minutes
        bulk, sealed, results, stored = Recorder(), Recorder(), Recorder(), [0]
        threads = [
            threading.Thread(
                target=bulk_load, args=(aggregator_port, operator, args.bulk_rate, stop_at, bulk)
            ),
            threading.Thread(
                target=sealed_load, args=(relay_port, sealing, args.sealed_rate, stop_at, sealed)
            ),
            threading.Thread(target=results_load, args=(aggregator_port, stop_at, results, stored)),
        ]
        for thread in threads:
            thread.start()
        headers = [
            "min", "aggr MiB", "aggr-idx", "relay MiB", "pg MiB", "bulk/s", "p50 ms", "p99 ms",
            "units/s", "p50 ms", "p99 ms", "held", "results p50", "p99", "stored", "db MiB",
        ]  # fmt: skip
        widths = [5, 8, 8, 9, 6, 8, 6, 7, 7, 6, 7, 7, 11, 7, 10, 7]
        print(row(headers, widths), flush=True)
        last = started
        while any(thread.is_alive() for thread in threads):
            time.sleep(max(0.0, min(stop_at, last + args.interval) - time.monotonic()))
            now = time.monotonic()
            span, last = now - last, now
            cells = [f"{(now - started) / 60:.1f}"]
            if args.backend == "postgresql":
                server, database_bytes = postgres_figures(
                    aggregator_env["DENIABLE_DATABASE"], application
                )
                index = 0
            else:
                server, database_bytes = -1, sqlite_bytes(work / "aggregator" / "deniable.sqlite3")
                index = WORKERS * INDEX_BYTES * stored[0]
            aggregator_bytes = tree_rss(aggregator.pid)
            cells += [
                f"{aggregator_bytes / 2**20:.0f}",
                f"{(aggregator_bytes - index) / 2**20:.0f}",
                f"{tree_rss(relay.pid) / 2**20:.0f}",
                f"{server / 2**20:.0f}" if server >= 0 else "-",
            ]
            for recorder in (bulk, sealed, results):
                latencies, items = recorder.take()
                figures = percentiles(latencies) if latencies else {"p50_ms": 0.0, "p99_ms": 0.0}
                if recorder is not results:
                    cells.append(f"{items / span:,.0f}")
                if recorder is sealed:
                    cells += [f"{figures['p50_ms']:.1f}", f"{figures['p99_ms']:.1f}"]
                    cells.append(f"{held_units(relay_env):,}")
                else:
                    cells += [f"{figures['p50_ms']:.1f}", f"{figures['p99_ms']:.1f}"]
            cells += [f"{stored[0]:,}", f"{database_bytes / 2**20:,.0f}"]
            print(row(cells, widths), flush=True)
            if now >= stop_at:
                break
        for thread in threads:
            thread.join()
        errors = bulk.errors + sealed.errors + results.errors
        print(f"\nerrors: bulk {bulk.errors}, sealed {sealed.errors}, results {results.errors}")
        return 1 if errors else 0
    finally:
        for process in reversed(processes):
            stop(process)
        for cleanup in cleanups:
            cleanup()
        shutil.rmtree(work, ignore_errors=True)  # a SQLite run leaves gigabytes


if __name__ == "__main__":
    sys.exit(main())
