"""The relay's side of talking to an aggregator that answers badly (relay/upstream.py).

The aggregator is the party local DP guards against, and a proxy in front of it
may answer for it: whatever comes back, the relay must neither fail a device's
submission with a 500, nor stop refreshing its other surveys, nor take a
stranger's 200 for the acknowledgement that lets it delete a batch.  The
aggregator here is a real HTTP server on a loopback port that answers what
each test tells it to.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from deniable.errors import TransportError
from deniable.keychain import Pin
from deniable.relay import create_app, forwarder, upstream
from deniable.relay.storage import SqliteRelayStorage
from tests.relay.test_relay_app import _body, stored_survey

BATCH_ID = "b" * 32
NESTED = b"[" * 100_000 + b"]" * 100_000


class Aggregator:
    """A loopback HTTP server answering every GET and PUT with ``status`` and ``body``."""

    def __init__(self) -> None:
        self.status, self.body = 200, b"{}"
        self.requests: list[tuple[dict[str, str], bytes]] = []  # headers and body received
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((dict(self.headers), body))
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            do_GET = do_PUT = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, body: bytes | dict, status: int = 200) -> None:
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()


@pytest.fixture(scope="module")
def aggregator() -> Iterator[Aggregator]:
    served = Aggregator()
    yield served
    served.server.shutdown()
    served.server.server_close()


def _put(aggregator: Aggregator, sealed: list[bytes]) -> upstream.Outcome:
    return upstream.put_batch(aggregator.url, "s", BATCH_ID, "a", sealed, "dnr_x", timeout=5)


@pytest.mark.parametrize(
    "answer",
    [
        b"OK",
        b"",
        b"<html>maintenance</html>",
        NESTED,
        b"\xff\xfe",
        b"[]",
        {"survey": "s", "batch": "c" * 32, "unit": "a", "received": 3, "stored": 3, "dropped": 0},
        {"survey": "t", "batch": BATCH_ID, "unit": "a", "received": 3, "stored": 3, "dropped": 0},
        {"survey": "s", "batch": BATCH_ID, "unit": "a", "received": 2, "stored": 2, "dropped": 0},
        {"survey": "s", "batch": BATCH_ID, "unit": "b", "received": 3, "stored": 3, "dropped": 0},
    ],
    ids=[
        "text",
        "empty",
        "html",
        "nested",
        "not-utf8",
        "list",
        "other-batch",
        "other-survey",
        "fewer-received",
        "other-unit",
    ],
)
@pytest.mark.parametrize("status", [200, 201])
def test_only_the_aggregators_answer_for_this_batch_acknowledges_it(aggregator, answer, status):
    """A 200 from a proxy's error page, or an answer about another batch, deletes nothing."""
    aggregator.answer(answer, status)
    outcome = _put(aggregator, [b"x", b"y", b"z"])
    assert not outcome.acknowledged and not outcome.final, outcome


@pytest.mark.parametrize("status", [200, 201])
def test_the_aggregators_own_answer_acknowledges(aggregator, status):
    aggregator.answer(
        {"survey": "s", "batch": BATCH_ID, "unit": "a", "received": 3, "stored": 2, "dropped": 1},
        status,
    )
    assert _put(aggregator, [b"x", b"y", b"z"]).acknowledged


def test_a_refusal_that_is_not_json_is_retried_not_raised(aggregator):
    for body in (NESTED, b"\xff", b'{"detail": NaN}'):
        aggregator.answer(body, 409)
        outcome = _put(aggregator, [b"x"])
        assert not outcome.acknowledged and not outcome.final


@pytest.mark.parametrize(
    "body",
    [NESTED, b"\xff\xfe{}", b'{"a": 1, "a": 2}', b'{"a": NaN}', b'"\\ud800"'],
    ids=["nested", "not-utf8", "duplicate", "nan", "surrogate"],
)
def test_an_answer_that_is_not_strict_json_is_a_transport_error(aggregator, body):
    aggregator.answer(body)
    pin = Pin(public_key=os.urandom(32), sequence=None)
    with pytest.raises(TransportError, match="not strict JSON"):
        upstream.verify_survey(aggregator.url, "s", pin, public_url="http://127.0.0.1:9")
    with pytest.raises(TransportError):
        upstream.encryption_key_id(aggregator.url, pin)
    with pytest.raises(TransportError):
        upstream.fetch_enrolment_digests(aggregator.url, "s", "dnr_x")


def test_a_broken_aggregator_costs_a_device_no_500_and_other_surveys_their_refresh(
    aggregator, tmp_path
):
    """A unit sealed to an unknown key makes the relay ask the aggregator: its nonsense
    answer is a 409 for the device, and a refresh pass goes on to the next survey."""
    aggregator.answer(NESTED)
    store = SqliteRelayStorage(str(tmp_path / "relay.sqlite3"))
    store.migrate()
    signing_key = base64.b64encode(os.urandom(32)).decode()
    store.add_survey(
        replace(stored_survey(), aggregator_url=aggregator.url, signing_key=signing_key), ["a", "b"]
    )
    store.add_survey(
        replace(
            stored_survey(), survey_id="t", aggregator_url=aggregator.url, signing_key=signing_key
        ),
        ["a", "b"],
    )
    app = create_app(
        {
            "DATABASE": str(tmp_path / "relay.sqlite3"),
            "TESTING": True,
            "RATE_LIMIT_PER_ADDRESS": "0",
            "PUBLIC_URL": "http://127.0.0.1:9",
        }
    )
    refused = app.test_client().post(
        "/api/v1/surveys/s/sealed", json=dict(_body(), key_id="0123456789abcdef")
    )
    assert refused.status_code == 409, refused.get_data(as_text=True)
    assert refused.headers["Content-Type"] == "application/problem+json"
    assert forwarder.refresh_all(store, app.config) == 0  # both tried, neither raised
    store.close()


def test_a_forwarded_batch_carries_the_blobs_and_the_credential_and_nothing_else(aggregator):
    """No client address (X-Forwarded-For, Forwarded, Via), no time, no per-report field:
    the headers are the HTTP client's fixed ones, the body format, unit and blobs."""
    aggregator.answer(
        {"survey": "s", "batch": BATCH_ID, "unit": "a", "received": 2, "stored": 2, "dropped": 0}
    )
    aggregator.requests.clear()
    assert _put(aggregator, [b"x" * 40, b"y" * 40]).acknowledged
    ((headers, body),) = aggregator.requests
    assert {name.lower() for name in headers} == {
        "host",
        "user-agent",
        "accept-encoding",
        "accept",
        "connection",
        "content-type",
        "authorization",
        "content-length",
    }
    assert headers["User-Agent"] == upstream.USER_AGENT
    assert headers["Authorization"] == "Bearer dnr_x"
    document = json.loads(body)
    assert set(document) == {"format", "unit", "sealed"} and len(document["sealed"]) == 2


def _problem(kind: str, detail: str) -> dict:
    return {"type": f"urn:deniable:problem:{kind}", "title": "T", "status": 409, "detail": detail}


def test_a_closed_survey_is_told_by_the_problem_type_never_by_the_words(aggregator):
    """survey-closed is final whatever its detail says; a conflict that only says "closed"
    in its detail is retried (a reused batch id is for the operator to look at)."""
    aggregator.answer(_problem("survey-closed", "anything at all"), 409)
    outcome = _put(aggregator, [b"x"])
    assert outcome.final and not outcome.acknowledged
    aggregator.answer(_problem("conflict", "survey 's' is closed"), 409)
    outcome = _put(aggregator, [b"x"])
    assert not outcome.final and outcome.problem == "conflict"


@pytest.mark.parametrize(("status", "final"), [("closed", True), ("open", False)])
def test_an_older_aggregators_conflict_drops_a_batch_once_the_signed_status_says_closed(
    aggregator, tmp_path, status, final
):
    aggregator.answer(_problem("conflict", "whatever an older aggregator wrote"), 409)
    store = SqliteRelayStorage(str(tmp_path / "relay.sqlite3"))
    store.migrate()
    store.add_survey(replace(stored_survey(), aggregator_url=aggregator.url), ["a", "b"])
    for seed in range(3):
        store.hold("s", [("a", bytes([seed]) * 80)], enrolment_token=None, key_id="abc")
    assert store.form_batches("s", window=0)
    store.update_survey(
        "s", document=stored_survey().document, status=status, signing_key="", key_sequence=None
    )
    (batch,) = store.lease_batches(lease=60)
    config = {"FORWARD_TIMEOUT": 5, "FORWARD_INTERVAL": 1, "RETRY_MAX_SECONDS": 60}
    assert forwarder.send(store, config, batch) is False
    assert (store.pending_batches("s") == []) is final
    store.close()
