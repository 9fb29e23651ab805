"""Crash durability: SIGKILL a loaded gunicorn aggregator, restart it, lose nothing, count once.

On SQLite and PostgreSQL: a real server (``deniable-aggregator serve``, 2 gunicorn
workers, its own process group on a free loopback port) takes single reports and
small batches from 16 client threads, each with its own ``requests.Session`` and
its own report ids.  Mid-load the whole process group (master and workers) gets
SIGKILL.  Then, on the same database:

1. every report a 201 acknowledged is stored (an acknowledgement is a commit), and
   nothing is stored that no client sent;
2. the clients resend every body that was not acknowledged (lost in flight,
   refused by the dead server) and, as a retry after a lost 201 would, a quarter
   of the acknowledged ones: all are acknowledged, the acknowledgement of a
   resent body is identical to the first one, no id is stored twice, the stored
   count equals the number of distinct ids sent, and the results' n equals it.

This is a *process* crash: the kernel keeps what the processes wrote, so it tests
the commit-before-acknowledge order, not fsync on power loss.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests

from .conftest import demo_survey_dict, random_reports

pytestmark = pytest.mark.slow

CLIENTS = 16
BODIES_PER_CLIENT = 400  # far more than a client sends before the kill
KILL_AFTER_ACKNOWLEDGED = 600  # reports acknowledged before the SIGKILL ...
KILL_AFTER_SECONDS = 4.0  # ... or this long after the load started, whichever is first
AFTER_KILL_SECONDS = 0.5  # clients keep trying against the dead server for this long
TIMEOUT = (2.0, 15.0)  # (connect, read) seconds per request
SURVEY = "crash"


@dataclass
class Body:
    """One submission: a single report or a small batch, with its own ids."""

    document: dict[str, Any]
    ids: list[str]
    acknowledgement: dict[str, Any] | None = None  # the first 201 body


@dataclass
class Sender:
    """One client thread's plan and what happened to it."""

    bodies: list[Body]
    statuses: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    sent: int = 0  # bodies attempted in the load phase
    mismatches: list[dict[str, Any]] = field(default_factory=list)


def plan(definition: dict[str, Any], client: int) -> list[Body]:
    """Single reports, and every third body one respondent's batch of 2-4; ids unique per client."""
    reports = random_reports(definition, BODIES_PER_CLIENT * 3, seed=1000 + client)
    bodies, index = [], 0
    for number in range(BODIES_PER_CLIENT):
        size = 1 if number % 3 else 2 + number % 3  # at most one report per question
        chunk = reports[index : index + size]
        index += size
        document = chunk[0] if size == 1 else {"reports": chunk}
        bodies.append(Body(document=document, ids=[r["id"] for r in chunk]))
    return bodies


def post(session: requests.Session, url: str, body: Body) -> requests.Response:
    return session.post(url, json=body.document, timeout=TIMEOUT)


def load(url: str, sender: Sender, stop: threading.Event, acknowledged: list[int]) -> None:
    """Send the plan in order until ``stop``; record every 201 and every failure."""
    with requests.Session() as session:
        for body in sender.bodies:
            if stop.is_set():
                return
            sender.sent += 1
            try:
                response = post(session, url, body)
            except requests.RequestException as error:
                sender.errors[type(error).__name__] += 1
                time.sleep(0.02)
                continue
            sender.statuses[response.status_code] += 1
            if response.status_code == 201:
                body.acknowledgement = response.json()
                if body.acknowledgement.get("reports") != body.ids:
                    sender.mismatches.append(body.acknowledgement)
                acknowledged[0] += len(body.ids)


def test_sigkill_mid_load_loses_no_acknowledged_report_and_counts_retries_once(
    backend, database, make_server
):
    """``database`` (tests/aggregator/conftest.py) runs this on SQLite and on PostgreSQL."""
    definition = demo_survey_dict(SURVEY)
    server = make_server(database, [definition], workers=2)
    url = f"{server.url}/api/v1/surveys/{SURVEY}/reports"
    senders = [Sender(plan(definition, client)) for client in range(CLIENTS)]

    # -- load, then SIGKILL the process group mid-load ------------------------------------
    stop = threading.Event()
    acknowledged = [0]  # reports; += from threads is racy but only steers the kill time
    threads = [
        threading.Thread(target=load, args=(url, s, stop, acknowledged), daemon=True)
        for s in senders
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    while (
        acknowledged[0] < KILL_AFTER_ACKNOWLEDGED
        and time.monotonic() - started < KILL_AFTER_SECONDS
    ):
        time.sleep(0.005)
    old_workers = server.worker_pids()
    server.kill()
    killed_at = time.monotonic() - started
    time.sleep(AFTER_KILL_SECONDS)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)

    bodies = [body for s in senders for body in s.bodies[: s.sent]]
    acked = [body for body in bodies if body.acknowledgement is not None]
    unacked = [body for body in bodies if body.acknowledgement is None]
    acked_ids = {i for body in acked for i in body.ids}
    sent_ids = {i for body in bodies for i in body.ids}
    statuses = sum((s.statuses for s in senders), Counter())
    errors = sum((s.errors for s in senders), Counter())
    # Before the kill the server answered every body 201 (no 5xx, no 4xx) ...
    assert set(statuses) == {201}, statuses
    assert not any(s.mismatches for s in senders), "a 201 named other ids than were sent"
    # ... the kill came mid-load: reports were acknowledged, and clients then failed.
    assert len(acked_ids) >= 100, len(acked_ids)
    assert sum(errors.values()) >= CLIENTS, errors

    if backend == "sqlite":  # the file survived the kill intact (WAL replayed on open)
        with contextlib.closing(sqlite3.connect(database)) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]

    # -- restart on the same database: every acknowledged report is there -----------------
    server.start()
    assert not set(server.worker_pids()) & set(old_workers)
    stored = server.export(SURVEY)
    stored_ids = [row["id"] for row in stored]
    assert len(stored_ids) == len(set(stored_ids)), "a report id is stored twice"
    missing = acked_ids - set(stored_ids)
    assert not missing, f"{len(missing)} acknowledged reports were lost, e.g. {sorted(missing)[:3]}"
    assert set(stored_ids) <= sent_ids, "a stored report that no client sent"
    in_flight_stored = len(set(stored_ids) - acked_ids)

    # -- retry: every unacknowledged body, and a quarter of the acknowledged ones ------------
    resend = unacked + acked[::4]
    failures: list[str] = []

    def retry(part: list[Body]) -> None:
        with requests.Session() as session:
            for body in part:
                response = post(session, url, body)
                if response.status_code != 201:
                    failures.append(f"{response.status_code} {response.text[:200]}")
                    continue
                document = response.json()
                if body.acknowledgement is not None and document != body.acknowledgement:
                    failures.append(f"retry acknowledged differently: {document}")
                body.acknowledgement = body.acknowledgement or document

    retry_threads = [
        threading.Thread(target=retry, args=(resend[k::CLIENTS],), daemon=True)
        for k in range(CLIENTS)
    ]
    for thread in retry_threads:
        thread.start()
    for thread in retry_threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in retry_threads)
    assert not failures, failures[:5]

    final = server.export(SURVEY)
    final_ids = [row["id"] for row in final]
    assert len(final_ids) == len(set(final_ids)), "a report id is stored twice after retries"
    assert set(final_ids) == sent_ids
    assert len(final_ids) == len(sent_ids)
    results = server.results(SURVEY)
    assert results["n_reports"] == len(final_ids)
    assert sum(q["n"] for q in results["questions"]) == len(final_ids)

    print(
        f"\n[crash/{backend}] SIGKILL at {killed_at:.2f} s: {len(bodies)} bodies "
        f"({len(sent_ids)} report ids) sent, {len(acked)} bodies / {len(acked_ids)} reports "
        f"acknowledged, {len(unacked)} bodies unacknowledged (client errors {dict(errors)}); "
        f"after restart {len(stored_ids)} stored = {len(acked_ids)} acknowledged + "
        f"{in_flight_stored} committed in flight; resent {len(resend)} bodies "
        f"({len(resend) - len(unacked)} already acknowledged); final {len(final_ids)} stored = "
        f"{len(sent_ids)} distinct ids, results n {results['n_reports']}"
    )
