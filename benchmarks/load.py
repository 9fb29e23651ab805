"""Load generators of the ingest benchmark (benchmarks/ingest.py): single-report POSTs,
bulk batches, results calls, and slow connections, all against 127.0.0.1."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

HOST = "127.0.0.1"
SURVEY_ID = "bench"
QUESTION_ID = "item"
ENROLMENT_HEADER = "X-Deniable-Enrolment"
BATCH = 1000
SINGLE_CLIENTS = 16
SINGLE_PROCESSES = 4
BATCH_CLIENTS = 4
SLOW_CONNECTIONS = 100
TRICKLE_SECONDS = 5.0


def _post(
    connection: http.client.HTTPConnection,
    path: str,
    body: bytes,
    token: str | None = None,
    operator: str | None = None,
) -> int:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers[ENROLMENT_HEADER] = token
    if operator is not None:
        headers["Authorization"] = f"Bearer {operator}"
    connection.request("POST", path, body, headers)
    response = connection.getresponse()
    response.read()
    if response.status != 201:
        raise RuntimeError(f"POST {path}: HTTP {response.status}")
    return response.status


def _single_thread(
    port: int,
    payloads: list[str],
    stop_at: float,
    offset: int,
    survey_id: str = SURVEY_ID,
    tokens: list[str] | None = None,
) -> list[float]:
    """Single-report POSTs until ``stop_at``; with ``tokens``, a fresh one per request."""
    connection = http.client.HTTPConnection(HOST, port, timeout=60)
    path = f"/api/v1/surveys/{survey_id}/reports"
    latencies = []
    index = offset
    fresh = iter(tokens) if tokens is not None else None
    while time.monotonic() < stop_at:
        token = None
        if fresh is not None:
            token = next(fresh, None)
            if token is None:
                raise RuntimeError("ran out of enrolment tokens; issue more")
        report = {
            "id": str(uuid.uuid4()),
            "question": QUESTION_ID,
            "payload": payloads[index % len(payloads)],
        }
        index += 1
        body = json.dumps(report).encode()
        started = time.perf_counter()
        _post(connection, path, body, token)
        latencies.append(time.perf_counter() - started)
    connection.close()
    return latencies


def _single_process(
    port: int,
    payloads: list[str],
    start_at: float,
    duration: float,
    threads: int,
    seed: int,
    survey_id: str = SURVEY_ID,
    tokens: list[str] | None = None,
) -> list[float]:
    while time.time() < start_at:
        time.sleep(0.005)
    stop_at = time.monotonic() + duration
    with ThreadPoolExecutor(threads) as pool:
        futures = [
            pool.submit(
                _single_thread,
                port,
                payloads,
                stop_at,
                seed * 1000 + i * 97,
                survey_id,
                None if tokens is None else tokens[i::threads],
            )
            for i in range(threads)
        ]
        return [latency for future in futures for latency in future.result()]


def measure_single(
    port: int,
    payloads: list[str],
    duration: float,
    survey_id: str = SURVEY_ID,
    tokens: list[str] | None = None,
    keep_latencies: bool = False,
) -> dict[str, Any]:
    """16 concurrent clients posting one report per request for ``duration`` seconds.

    With ``tokens`` (for a survey that requires enrolment) each request spends a fresh one.
    """
    threads = SINGLE_CLIENTS // SINGLE_PROCESSES
    start_at = time.time() + 1.0
    with ProcessPoolExecutor(SINGLE_PROCESSES) as pool:
        futures = [
            pool.submit(
                _single_process,
                port,
                payloads,
                start_at,
                duration,
                threads,
                p,
                survey_id,
                None if tokens is None else tokens[p::SINGLE_PROCESSES],
            )
            for p in range(SINGLE_PROCESSES)
        ]
        latencies = [latency for future in futures for latency in future.result()]
    latencies.sort()
    return {
        "reports": len(latencies),
        "rate": len(latencies) / duration,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        **({"latencies": latencies} if keep_latencies else {}),
    }


def fresh_ids(count: int) -> list[str]:
    """``count`` random version-4 UUIDs, formatted from one urandom call (uuid4() per id
    cost the load generator more CPU than a report costs the server)."""
    h = os.urandom(16 * count).hex()
    return [
        f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-a{h[i + 17 : i + 20]}-"
        f"{h[i + 20 : i + 32]}"
        for i in range(0, 32 * count, 32)
    ]


def batch_body(payloads: list[str], start: int) -> bytes:
    reports = ",".join(
        f'{{"id":"{report_id}","question":"{QUESTION_ID}","payload":"'
        f'{payloads[(start + i) % len(payloads)]}"}}'
        for i, report_id in enumerate(fresh_ids(BATCH))
    )
    return f'{{"reports":[{reports}]}}'.encode()


def measure_batches(
    port: int, payloads: list[str], total: int, label: str, operator: str | None = None
) -> dict[str, float]:
    """Batches of 1,000 to the bulk route from 4 concurrent clients until ``total`` are stored."""
    batches = total // BATCH
    counter = iter(range(batches))
    lock = threading.Lock()
    done = [0]
    path = f"/api/v1/surveys/{SURVEY_ID}/reports/bulk"

    def client() -> None:
        while True:
            with lock:
                number = next(counter, None)
            if number is None:
                break
            # Why a connection per batch: a kept-alive connection stays with the worker
            # that accepted it, so 4 of them could pin the whole load to one process.
            connection = http.client.HTTPConnection(HOST, port, timeout=300)
            _post(connection, path, batch_body(payloads, number * BATCH), operator=operator)
            connection.close()
            with lock:
                done[0] += 1
                if done[0] % max(1, batches // 10) == 0:
                    print(f"    {label}: {done[0] * BATCH:,} reports", file=sys.stderr)

    started = time.perf_counter()
    with ThreadPoolExecutor(BATCH_CLIENTS) as pool:
        for future in [pool.submit(client) for _ in range(BATCH_CLIENTS)]:
            future.result()
    elapsed = time.perf_counter() - started
    return {"reports": batches * BATCH, "seconds": elapsed, "rate": batches * BATCH / elapsed}


def _get(port: int, path: str) -> tuple[float, bytes]:
    connection = http.client.HTTPConnection(HOST, port, timeout=600)
    started = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    if response.status != 200:
        raise RuntimeError(f"GET {path}: HTTP {response.status} {body[:300]!r}")
    return elapsed, body


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "count": len(ordered),
    }


def measure_results(
    port: int, payloads: list[str], steady: int, live: int, operator: str | None = None
) -> dict[str, Any]:
    path = f"/api/v1/surveys/{SURVEY_ID}/results"
    first, body = _get(port, path)
    document = json.loads(body)
    samples = [_get(port, path)[0] for _ in range(steady)]
    live_samples = []
    connection = http.client.HTTPConnection(HOST, port, timeout=300)
    for i in range(live):
        _post(
            connection,
            f"/api/v1/surveys/{SURVEY_ID}/reports/bulk",
            batch_body(payloads, 7919 * (i + 1)),
            operator=operator,
        )
        live_samples.append(_get(port, path)[0])
    connection.close()
    return {
        "first_ms": 1000 * first,
        "n_reports": document.get("n_reports", document.get("n")),
        "steady": percentiles(samples),
        "live": percentiles(live_samples) if live_samples else None,
    }


def measure_slow_clients(port: int, payloads: list[str], duration: float) -> dict[str, Any]:
    """/health latencies and the single-report load while 100 slow connections are open,
    and the same load just before opening them (the database as it is at this point:
    after a million reports, PostgreSQL's autovacuum may be busy, which is no slow
    client's doing)."""
    unloaded = measure_single(port, payloads, duration)
    path = f"/api/v1/surveys/{SURVEY_ID}/reports"
    held = []
    for index in range(SLOW_CONNECTIONS):
        connection = socket.create_connection((HOST, port), timeout=10)
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\n"
        if index % 2 == 0:
            head += "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
        connection.sendall(head.encode())
        held.append(connection)
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(TRICKLE_SECONDS):
            for index, connection in enumerate(held):
                with contextlib.suppress(OSError):
                    connection.sendall(b" " if index % 2 == 0 else b"X")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        time.sleep(1.0)
        health = []
        for _ in range(200):
            health.append(_get(port, "/api/v1/health")[0])
            time.sleep(0.01)
        single = measure_single(port, payloads, duration)
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
    return {"health": percentiles(health), "single": single, "unloaded": unloaded}
