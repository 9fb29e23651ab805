"""The adversarial-ids phase of benchmarks/ingest.py.

Report ids are any lowercase UUID text, so a client chooses all 128 bits.  An id
index keyed on the ids' first 64 bits made every id sharing them confirm every
earlier one in the database under the write lock: two clients sending such ids
at the default public rate pushed an honest one-report submission from 2-5 ms to
over a second.  This phase measures exactly that, on the real aggregator
(gunicorn, 2 workers) over a fresh SQLite file:

1. an "attack" survey of 20 yes/no questions already holds ``--adversarial-stored``
   ids beginning ``deadbeef-dead-beef-`` (stored up front through the bulk route;
   at the default public limit it takes an outsider about 4 minutes per 50,000);
2. honest clients (``HONEST_CLIENTS`` threads, each posting one report of the
   benchmark survey per request, back to back) for ``--duration`` seconds: p50, p99;
3. the same while two attackers each post 20-report submissions (one report per
   question, as the public route allows) with fresh colliding ids, paced at the
   default public limit (600 per minute each), then once more without them.

Target: the honest p99 with the attackers under twice the unloaded p99 (the
unloaded figure is the better of the runs before and after).
"""

from __future__ import annotations

import http.client
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ATTACK_SURVEY = "attack"
ATTACK_QUESTIONS = 20
ATTACKERS = 2
ATTACK_RATE = 10.0  # submissions per second per attacker: the default 600/minute
HONEST_CLIENTS = 2
COLLIDING = "deadbeef-dead-beef-"
TARGET_P99_RATIO = 2.0


def colliding_ids(start: int, count: int) -> list[str]:
    """Valid lowercase UUID text, all beginning ``deadbeef-dead-beef-``."""
    return [
        f"{COLLIDING}{(n >> 48) & 0xFFFF:04x}-{n & (2**48 - 1):012x}"
        for n in range(start, start + count)
    ]


def attack_definition() -> dict[str, Any]:
    return {
        "format": "deniable.survey/1",
        "id": ATTACK_SURVEY,
        "title": "Attack",
        "questions": [
            {"id": f"q{i}", "type": "yes_no", "text": f"Question {i}?", "epsilon": 1.0}
            for i in range(ATTACK_QUESTIONS)
        ],
    }


def _payload() -> str:
    import numpy as np

    from deniable.survey import Survey

    question = Survey.from_dict(attack_definition()).questions[0]
    return question.randomize(True, np.random.default_rng(0))


def _request(
    connection: http.client.HTTPConnection,
    path: str,
    body: bytes,
    headers: dict[str, str] | None = None,
) -> int:
    connection.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    response.read()
    if response.status != 201:
        raise RuntimeError(f"POST {path}: HTTP {response.status}")
    return response.status


def _attack_body(ids: list[str], payload: str) -> bytes:
    reports = [
        {"id": i, "question": f"q{n % ATTACK_QUESTIONS}", "payload": payload}
        for n, i in enumerate(ids)
    ]
    return json.dumps({"reports": reports}).encode()


def _store_colliding(port: int, host: str, operator: str, count: int, payload: str) -> None:
    path = f"/api/v1/surveys/{ATTACK_SURVEY}/reports/bulk"
    for start in range(0, count, 1000):
        connection = http.client.HTTPConnection(host, port, timeout=300)
        ids = colliding_ids(1 + start, min(1000, count - start))
        _request(
            connection, path, _attack_body(ids, payload), {"Authorization": f"Bearer {operator}"}
        )
        connection.close()


def _honest(
    port: int,
    host: str,
    survey: str,
    question: str,
    payloads: list[str],
    stop_at: float,
    offset: int,
) -> list[float]:
    connection = http.client.HTTPConnection(host, port, timeout=120)
    path = f"/api/v1/surveys/{survey}/reports"
    latencies, index = [], offset
    while time.monotonic() < stop_at:
        body = json.dumps(
            {
                "id": str(uuid.uuid4()),
                "question": question,
                "payload": payloads[index % len(payloads)],
            }
        ).encode()
        index += 1
        started = time.perf_counter()
        _request(connection, path, body)
        latencies.append(time.perf_counter() - started)
    connection.close()
    return latencies


def _attacker(
    port: int, host: str, payload: str, stop_at: float, first: int, sent: list[int]
) -> None:
    connection = http.client.HTTPConnection(host, port, timeout=120)
    path = f"/api/v1/surveys/{ATTACK_SURVEY}/reports"
    next_at, number = time.monotonic(), first
    while time.monotonic() < stop_at:
        _request(connection, path, _attack_body(colliding_ids(number, ATTACK_QUESTIONS), payload))
        number += ATTACK_QUESTIONS
        sent.append(ATTACK_QUESTIONS)
        next_at += 1 / ATTACK_RATE
        time.sleep(max(0.0, next_at - time.monotonic()))
    connection.close()


def _percentiles(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "count": len(ordered),
    }


def measure(
    port: int,
    host: str,
    survey: str,
    question: str,
    payloads: list[str],
    duration: float,
    attackers: int,
    first_id: int,
) -> dict[str, Any]:
    """Honest latencies for ``duration`` s, with ``attackers`` colliding-id clients alongside."""
    stop_at = time.monotonic() + duration
    payload = _payload()
    sent: list[int] = []
    with ThreadPoolExecutor(HONEST_CLIENTS + attackers) as pool:
        attacks = [
            pool.submit(_attacker, port, host, payload, stop_at, first_id + a * 10_000_000, sent)
            for a in range(attackers)
        ]
        honest = [
            pool.submit(_honest, port, host, survey, question, payloads, stop_at, c * 997)
            for c in range(HONEST_CLIENTS)
        ]
        latencies = [x for future in honest for x in future.result()]
        for future in attacks:
            future.result()
    return {**_percentiles(latencies), "colliding_sent": sum(sent)}


def run_adversarial(
    args: Any,
    payloads: list[str],
    *,
    host: str,
    survey: str,
    question: str,
    create_survey: Callable[..., tuple[str, str]],
    start_real: Callable[..., tuple[Any, int]],
    stop: Callable[[Any], None],
) -> dict[str, Any]:
    from deniable.aggregator.storage import open_storage
    from deniable.survey import Survey

    workdir = Path(tempfile.mkdtemp(prefix="deniable-bench-adversarial-", dir=args.dir))
    database = str(workdir / "adversarial.sqlite3")
    server = None
    try:
        _, operator = create_survey(database, workdir / "key.pem", args.mechanism)
        storage = open_storage({"DATABASE": database})
        try:
            storage.create_survey(Survey.from_dict(attack_definition()), results_public=True)
        finally:
            storage.close()
        server, port = start_real(database, workdir / "key.pem", workdir)
        print(
            f"[adversarial] storing {args.adversarial_stored:,} ids beginning {COLLIDING}",
            file=sys.stderr,
        )
        _store_colliding(port, host, operator, args.adversarial_stored, _payload())
        duration = args.duration
        runs = {}
        first = 100_000_000
        for label, attackers in (("before", 0), ("attacked", ATTACKERS), ("after", 0)):
            print(
                f"[adversarial] honest clients, {attackers} attackers, {duration:g} s",
                file=sys.stderr,
            )
            runs[label] = measure(
                port, host, survey, question, payloads, duration, attackers, first
            )
            first += 100_000_000
        return {"stored": args.adversarial_stored, **runs}
    finally:
        if server is not None:
            stop(server)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def report(result: dict[str, Any]) -> str:
    before, attacked, after = result["before"], result["attacked"], result["after"]
    unloaded = min(before["p99_ms"], after["p99_ms"])
    ratio = attacked["p99_ms"] / unloaded
    verdict = "meets target" if ratio < TARGET_P99_RATIO else "MISSES target"
    lines = [
        f"adversarial ids (sqlite; {result['stored']:,} stored ids beginning {COLLIDING}; "
        f"{HONEST_CLIENTS} honest clients posting one report per request):"
    ]
    rows = (
        ("without attackers (before)", before),
        (f"with {ATTACKERS} colliding-id clients", attacked),
        ("without attackers (after)", after),
    )
    for label, figures in rows:
        extra = (
            f"   ({figures['colliding_sent']:,} colliding ids sent)"
            if figures["colliding_sent"]
            else ""
        )
        lines.append(
            f"  {label:30} honest p50 {figures['p50_ms']:7.2f} ms   p99 "
            f"{figures['p99_ms']:7.2f} ms   ({figures['count']:,} requests){extra}"
        )
    lines.append(
        f"  honest p99 attacked / unloaded = {ratio:.2f} (target < {TARGET_P99_RATIO:g}: {verdict})"
    )
    return "\n".join(lines)


__all__ = ["report", "run_adversarial"]
