"""Issue 18: the relay forgets which sealed units an enrolment token admitted once they are
forwarded and acknowledged (real relay and aggregator processes, SQLite and PostgreSQL).

Before forward an identical resend is answered 202 again (idempotent); after it, the relay
database holds no row linking a token digest to a unit digest, a resend with the token gets
``409 already-delivered`` (problem+json), and the Python client records that as delivered.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from deniable.errors import TransportError
from deniable.relay.storage import held_id, submission_digest, token_digest

PROBLEM = "urn:deniable:problem:already-delivered"
ANSWERS = [{"smoker": True, "team": "red"}, {"smoker": False, "team": "blue"}]


def relay_rows(deployment) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the relay's database, as read back."""
    database = deployment.relay_env["DENIABLE_RELAY_DATABASE"]
    if deployment.backend == "sqlite":
        with sqlite3.connect(database) as connection:
            tables = [
                t
                for (t,) in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                )
            ]
            return {t: connection.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}
    import psycopg

    with psycopg.connect(database) as connection:
        tables = [
            t
            for (t,) in connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema()"
            )
        ]
        return {t: connection.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables}


def digests_of(survey_id: str, body: dict[str, Any]) -> set[str]:
    """Every digest of a submission's units the relay could keep: held ids, hex and raw."""
    units = [
        (u["unit"], base64.urlsafe_b64decode(u["sealed"] + "=" * (-len(u["sealed"]) % 4)))
        for u in body["units"]
    ]
    ids = [held_id(survey_id, unit, sealed) for unit, sealed in units]
    return {submission_digest(survey_id, units), *(i.hex() for i in ids)} | {bytes(i) for i in ids}


def holds_any(rows: dict[str, list[tuple[Any, ...]]], needles: set) -> list[str]:
    found = []
    for table, values in rows.items():
        for row in values:
            cells = {bytes(c) if isinstance(c, memoryview) else c for c in row}
            if cells & needles:
                found.append(f"{table}: {row}")
    return found


class LostAnswer:
    """The device's transport loses the relay's answer to its first POST (the relay did
    hold the units): the batch stays in its outbox, as after a dropped connection."""

    def __init__(self, client) -> None:
        self.client, self.lost, self.original = client, False, client._request
        client._request = self

    def __call__(self, method: str, path: str, *args: Any, **kwargs: Any):
        response = self.original(method, path, *args, **kwargs)
        if method == "POST" and not self.lost:
            self.lost = True
            raise TransportError("connection reset after the request was sent")
        return response


def idle(deployment) -> bool:
    status = deployment.relay_status()["e"]
    return (
        not any(status["waiting"].values())
        and not status["in_batches"]
        and not status["unacknowledged_batches"]
    )


def test_a_token_is_linked_to_its_units_only_until_they_are_forwarded(deployment):
    tokens = deployment.tokens
    assert idle(deployment)  # nothing waits: the next two submissions make each unit's batch
    before = deployment.results("e")["n_reports"]

    # Device A: the relay holds its units, the answer is lost; A's outbox keeps the batch.
    device = deployment.client("lost-answer")
    LostAnswer(device)
    receipt = device.answer("e", ANSWERS[0], enrolment_token=tokens[0])
    assert not receipt.delivered and device.pending() == 1
    (entry,) = device.store.load().outbox
    body = json.loads(entry["body"])
    needles = digests_of("e", body)
    token = token_digest(tokens[0])
    assert holds_any(relay_rows(deployment), needles), "held, and linked while held"

    # Before forward an identical resend is idempotent: 202, nothing held twice.
    assert deployment.submit("e", body).status_code == 202
    assert deployment.relay_status()["e"]["waiting"] == {"smoker": 1, "team": 1}
    other, _ = deployment.seal("e", ANSWERS[1])
    spent = deployment.submit("e", {**other, "enrolment_token": tokens[0]})
    assert spent.status_code == 403  # another submission with the token: refused

    # Device B makes each unit's batch (min_batch 2): forwarded, acknowledged.
    assert deployment.client("second").answer("e", ANSWERS[1], enrolment_token=tokens[1]).delivered
    deployment.wait_for(lambda: deployment.results("e")["n_reports"] == before + 4)
    deployment.wait_for(lambda: idle(deployment))

    rows = relay_rows(deployment)
    assert not holds_any(rows, needles), "a unit digest outlived the forward"
    assert rows["admitted"] == []
    spent_by = {row[1]: row[2] for row in rows["enrolment_digests"]}
    assert spent_by[token] == "delivered" and spent_by[token_digest(tokens[1])] == "delivered"

    # After forward: a resend gets the documented answer, which the client takes as delivered.
    late = deployment.submit("e", body)
    assert late.status_code == 409, late.text
    assert late.headers["Content-Type"].startswith("application/problem+json")
    assert late.json()["type"] == PROBLEM
    result = device.flush()
    assert (result.delivered, result.pending) == (1, 0)
    assert all("refused" not in mark for mark in device.store.load().answered.values())
    assert deployment.results("e")["n_reports"] == before + 4  # nothing taken twice


def test_a_raw_copy_of_the_relay_files_holds_no_link_after_the_forward(deployment):
    """What a copy of the relay's SQLite files says, byte for byte (the main file, its
    write-ahead log and its index): after enrolled submissions are forwarded and
    acknowledged, none of their units' digests, nor the units themselves, is left beside a
    token's digest, neither in a page the database no longer uses nor in an old frame of
    the log."""
    if deployment.backend != "sqlite":
        return  # PostgreSQL's files are the server's (its WAL and vacuum are its operator's)
    tokens = deployment.aggregator_cli("token", "issue", "e", "--count", "6").stdout.split()

    # the relay learns the new tokens' digests on its next refresh
    def learned() -> bool:
        counts = deployment.relay_status()["e"]["enrolment_tokens"]
        return counts["known"] - counts["spent"] >= len(tokens)

    deployment.wait_for(learned)
    before = deployment.results("e")["n_reports"]
    needles: set[bytes] = set()
    bodies = [deployment.seal("e", ANSWERS[index % 2])[0] for index in range(len(tokens))]
    # Why sealed first and sent at once: with min_batch 2, a window that closes between two
    # of these submissions (a slow machine) forms a batch of an odd number of them and leaves
    # one unit waiting for a partner that never comes.
    with ThreadPoolExecutor(max_workers=len(tokens)) as pool:
        answers = list(
            pool.map(
                lambda pair: deployment.submit("e", {**pair[0], "enrolment_token": pair[1]}),
                zip(bodies, tokens, strict=True),
            )
        )
    for body, answer in zip(bodies, answers, strict=True):
        assert answer.status_code == 202, answer.text
        for unit in body["units"]:
            sealed = base64.urlsafe_b64decode(unit["sealed"] + "=" * (-len(unit["sealed"]) % 4))
            needles.add(sealed[-64:])  # the tail of the sealed bytes (ciphertext and tag)
        needles |= {d if isinstance(d, bytes) else d.encode() for d in digests_of("e", body)}
    deployment.wait_for(
        lambda: deployment.results("e")["n_reports"] == before + 2 * len(tokens), seconds=60
    )
    deployment.wait_for(lambda: idle(deployment))
    deployment.wait_for(lambda: not relay_rows(deployment)["admitted"])
    database = Path(deployment.relay_env["DENIABLE_RELAY_DATABASE"])
    files = [database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))]

    def left() -> dict[str, list[str]]:
        return {
            path.name: [needle.hex()[:16] for needle in needles if needle in path.read_bytes()]
            for path in files
            if path.exists()
        }

    # The checkpoint runs after each forward, or on the forwarder's next pass if a reader
    # held it off: within a few passes at most.
    with contextlib.suppress(BaseException):
        deployment.wait_for(lambda: not any(left().values()), seconds=10)
    assert not any(left().values()), left()
