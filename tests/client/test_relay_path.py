"""The Python client on a relayed survey: sealed units to the relay, and nowhere else.

The aggregator is the real app (in process, as in the other client tests); the relay is
a minimal real HTTP server on a free loopback port that records what arrives and answers
as told (the relay service itself is tested in tests/relay/).
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from deniable import sealing
from deniable.aggregator import signing
from deniable.client import SurveyClient
from deniable.errors import SignatureError, TransportError
from deniable.survey import Survey
from deniable.wire import parse_report, parse_submission

from .conftest import ANSWERS, definition


class Receiver(ThreadingHTTPServer):
    """Records every request; answers ``statuses`` in turn, then 202 (with ``payloads`` in
    turn as bodies, then ``{"held": 1}``)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.payloads: list[bytes] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server: Receiver = self.server  # type: ignore[assignment]
        server.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
        status = server.statuses.pop(0) if server.statuses else 202
        payload = server.payloads.pop(0) if server.payloads else b'{"held": 1}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def relay():
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def relayed(relay: Receiver, survey_id: str = "r1", unit: str = "question", **extra: Any) -> dict:
    return definition(
        survey_id,
        format="deniable.survey/2",
        relay={"url": relay.url, "min_batch": 10, "shuffle_unit": unit},
        **extra,
    )


def _open_all(aggregator, survey: Survey, body: bytes) -> list[bytes]:
    keys = signing.load_key(aggregator.app.config["SIGNING_KEY_PATH"]).encryption
    document = json.loads(body)
    assert set(document) == {"format", "key_id", "units"}
    assert document["format"] == "deniable.sealed/1" and document["key_id"] == keys.key_id
    opened = []
    for item in document["units"]:
        raw = base64.urlsafe_b64decode(item["sealed"] + "=" * (-len(item["sealed"]) % 4))
        opened.append(
            keys.open_sealed(
                survey_id=survey.id,
                unit=item["unit"],
                sealed=raw,
                size=sealing.unit_size(survey, item["unit"]),
            )
        )
    return opened


def test_reports_are_sealed_per_question_and_go_only_to_the_relay(
    aggregator, adapter, client, relay
):
    aggregator.create(relayed(relay))
    verified = client.fetch("r1")
    assert verified.survey.relay.url == relay.url and verified.encryption is not None
    receipt = client.answer(verified, ANSWERS)
    assert receipt.delivered and client.pending() == 0
    # The aggregator heard GETs only (survey, key document): no report, no token.
    assert {s.method for s in adapter.seen} == {"GET"}
    (post,) = relay.seen
    assert post["path"] == "/api/v1/surveys/r1/sealed"
    assert "X-Deniable-Enrolment" not in post["headers"]
    survey = verified.survey
    bodies = _open_all(aggregator, survey, post["body"])
    assert len(bodies) == len(survey.questions)
    reports = [parse_report(json.loads(b), survey) for b in bodies]
    assert [r.question for r in reports] == survey.question_ids
    assert sorted(r.id for r in reports) == sorted(receipt.report_ids)


def test_submission_unit_seals_the_whole_batch_once(aggregator, client, relay):
    aggregator.create(relayed(relay, "r2", "submission"))
    verified = client.fetch("r2")
    client.answer(verified, ANSWERS)
    (post,) = relay.seen
    (body,) = _open_all(aggregator, verified.survey, post["body"])
    reports = parse_submission(json.loads(body), verified.survey, max_batch=10, one_respondent=True)
    assert len(reports) == len(verified.survey.questions)


def test_the_body_is_the_same_size_whatever_the_answers(aggregator, make_client, relay, tmp_path):
    from deniable.client import StateStore

    aggregator.create(relayed(relay, "r3"))
    answers = [
        ANSWERS,
        {"smoker": False, "commute": "car", "tools": [], "hours": 0},
        {"smoker": True, "commute": "home", "tools": ["email", "chat", "meetings"], "hours": 20},
    ]
    for index, answer in enumerate(answers):
        store = StateStore(tmp_path / f"device{index}" / "state.bin", key=bytes(32))
        client = make_client(state=store)
        client.answer(client.fetch("r3"), answer)
    assert len(relay.seen) == 3
    assert len({len(s["body"]) for s in relay.seen}) == 1
    assert len({s["path"] for s in relay.seen}) == 1
    assert (
        len(
            {
                tuple(sorted(k for k in s["headers"] if k.lower() != "content-length"))
                for s in relay.seen
            }
        )
        == 1
    )


def test_an_unavailable_relay_keeps_the_batch_and_the_retry_is_identical(aggregator, client, relay):
    aggregator.create(relayed(relay, "r4"))
    relay.statuses = [503] * 10
    receipt = client.answer(client.fetch("r4"), ANSWERS)
    assert not receipt.delivered and client.pending() == 1
    relay.statuses = []
    assert client.flush().delivered == 1 and client.pending() == 0
    bodies = {s["body"] for s in relay.seen}
    assert len(bodies) == 1  # every attempt sent the same sealed bytes


def test_the_enrolment_token_goes_to_the_relay_only(aggregator, adapter, client, relay):
    aggregator.create(relayed(relay, "r5"))
    verified = client.fetch("r5")
    relay.statuses = [401]
    with pytest.raises(TransportError, match=f"relay at {relay.url} answered 401"):
        client.answer(verified, ANSWERS)
    assert client.pending() == 1
    client.flush(enrolment_token="tok-123", survey_id="r5")
    first, second = (json.loads(s["body"]) for s in relay.seen)
    assert "enrolment_token" not in first and second["enrolment_token"] == "tok-123"
    assert first["units"] == second["units"]  # the same sealed reports, never re-randomized
    assert all(b"tok-123" not in s.body and "tok-123" not in str(s.headers) for s in adapter.seen)


def test_a_substituted_encryption_key_is_refused_before_anything_is_sent(
    aggregator, adapter, client, relay, tmp_path
):
    aggregator.create(relayed(relay, "r6"))
    signing.create_key(tmp_path / "mallory.pem")
    forged = signing.load_key(tmp_path / "mallory.pem").public_document()["encryption_key"]
    adapter.rewrite = lambda path, body: (
        {**body, "encryption_key": forged} if path == "/api/v1/key" else body
    )
    with pytest.raises(SignatureError, match="not signed"):
        client.fetch("r6")
    assert relay.seen == [] and client.pending() == 0


def test_unrelayed_surveys_still_post_to_the_aggregator(aggregator, adapter, client, relay):
    aggregator.create(definition("plain"))
    assert client.answer(client.fetch("plain"), ANSWERS).delivered
    assert relay.seen == [] and len(adapter.report_posts()) == 1


def test_relay_url_is_signed(aggregator, adapter, client, relay):
    """A mirror that points devices at another relay breaks the survey's signature."""
    aggregator.create(relayed(relay, "r7"))

    def swap(path: str, body: Any) -> Any:
        if path == "/api/v1/surveys/r7":
            body["definition"]["relay"]["url"] = "https://evil.example"
        return body

    adapter.rewrite = swap
    with pytest.raises(SignatureError):
        client.fetch("r7")
    assert isinstance(client, SurveyClient)


def test_after_a_key_rotation_the_device_follows_and_seals_to_the_new_key(
    aggregator, client, relay
):
    import time

    aggregator.create(relayed(relay, "r8"))
    aggregator.create(definition("before"))
    client.answer(client.fetch("before"), ANSWERS)  # pins the first key
    path = aggregator.app.config["SIGNING_KEY_PATH"]
    old, new = signing.rotate_key(path)
    time.sleep(1.1)  # running servers notice a new key file within a second
    verified = client.fetch("r8")
    assert verified.key_id == new.key_id != old.key_id
    assert verified.encryption["key_id"] == new.encryption.key_id != old.encryption.key_id
    client.answer(verified, ANSWERS)
    (post,) = relay.seen
    assert json.loads(post["body"])["key_id"] == new.encryption.key_id
    assert len(_open_all(aggregator, verified.survey, post["body"])) == 4


def test_a_stale_key_refusal_reseals_the_same_reports_once(aggregator, client, relay):
    """409 (the relay no longer takes the body's encryption key): the device fetches and
    verifies the key document, seals the SAME randomized reports again and retries once."""
    aggregator.create(relayed(relay, "r9"))
    verified = client.fetch("r9")
    relay.statuses = [409]
    receipt = client.answer(verified, ANSWERS)
    assert receipt.delivered and client.pending() == 0
    first, second = relay.seen
    assert first["path"] == second["path"] and len(first["body"]) == len(second["body"])
    assert first["body"] != second["body"]  # sealed afresh ...
    opened = [_open_all(aggregator, verified.survey, s["body"]) for s in (first, second)]
    assert opened[0] == opened[1]  # ... around the same reports, never re-randomized
    assert client.budget()["spent_total"] == pytest.approx(verified.total_epsilon)


def test_refused_again_after_resealing_the_batch_is_dropped_as_before(aggregator, client, relay):
    aggregator.create(relayed(relay, "r10"))
    relay.statuses = [409, 409, 409]
    with pytest.raises(TransportError, match="409"):
        client.answer(client.fetch("r10"), ANSWERS)
    assert len(relay.seen) == 2 and client.pending() == 0  # one retry only
    assert len({len(s["body"]) for s in relay.seen}) == 1


def test_a_closed_survey_at_the_relay_is_final_without_a_reseal(aggregator, client, relay):
    """survey-closed (told by the problem type): refused for good, the key is not fetched
    and nothing is sealed again."""
    aggregator.create(relayed(relay, "r13"))
    verified = client.fetch("r13")
    relay.statuses = [409]
    relay.payloads = [
        b'{"type": "urn:deniable:problem:survey-closed", "title": "Survey closed", '
        b'"status": 409, "detail": "survey \'r13\' is closed"}'
    ]
    with pytest.raises(TransportError, match="409"):
        client.answer(verified, ANSWERS)
    assert len(relay.seen) == 1 and client.pending() == 0


def test_a_stale_key_refusal_while_the_key_cannot_be_fetched_keeps_the_batch(
    aggregator, adapter, client, relay
):
    import requests

    aggregator.create(relayed(relay, "r11"))
    verified = client.fetch("r11")
    down = {"key": True}

    def unreachable(path: str, body: Any) -> Any:
        if path == "/api/v1/key" and down["key"]:
            raise requests.ConnectionError("the aggregator is unreachable")
        return body

    adapter.rewrite = unreachable
    relay.statuses = [409]
    assert not client.answer(verified, ANSWERS).delivered and client.pending() == 1
    down["key"] = False
    relay.statuses = [409]
    assert client.flush().delivered == 1 and client.pending() == 0
    first, second, third = (s["body"] for s in relay.seen)
    assert first == second != third  # kept as it was, then resealed once the key was verified
