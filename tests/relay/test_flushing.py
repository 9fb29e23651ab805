"""close-survey --flush-relay against a real relay and aggregator (processes, SQLite).

The relay's window is an hour here, so nothing is forwarded unless the aggregator's signed
flush request asks for it: groups of at least min_batch are then forwarded and the survey
closed; groups below it stay held, and closing asks first.  A flush request not signed by
the aggregator's key, or signed for another survey or relay, is refused, and so is a
survey's flush past the relay's FLUSH_LIMIT.  The held count the aggregator's survey page
shows is a snapshot the relay renews at most every HELD_COUNT_SECONDS, of real
respondents only.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from deniable.aggregator.demo import free_port
from deniable.keychain import decode_public_key
from deniable.relay_flush import flush_message, flush_request
from deniable.survey import Survey

from .conftest import HOST, Process, run, sealed_submission, survey_definition
from .test_noise import MIN_BATCH as NOISED_MIN_BATCH
from .test_noise import SIGNED_NOISE, noised_definition

pytestmark = pytest.mark.slow
MIN_BATCH = 3
FLUSH_LIMIT = 2
HELD_COUNT_SECONDS = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[dict[str, Any]]:
    directory = tmp_path_factory.mktemp("flush")
    aggregator_port, relay_port = free_port(), free_port()
    relay_url = f"http://{HOST}:{relay_port}"
    aggregator_env = {
        "DENIABLE_HOME": str(directory / "aggregator"),
        "DENIABLE_DATABASE": str(directory / "aggregator.sqlite3"),
    }
    relay_env = {
        "DENIABLE_RELAY_HOME": str(directory / "relay"),
        "DENIABLE_RELAY_DATABASE": str(directory / "relay.sqlite3"),
        "DENIABLE_RELAY_PUBLIC_URL": relay_url,
        "DENIABLE_RELAY_WINDOW_SECONDS": "3600",  # only a flush forwards
        "DENIABLE_RELAY_FORWARD_INTERVAL": "0.1",
        "DENIABLE_RELAY_REFRESH_SECONDS": "0.5",
        "DENIABLE_RELAY_FORWARD_TIMEOUT": "5",
        "DENIABLE_RELAY_FLUSH_LIMIT": str(FLUSH_LIMIT),
        "DENIABLE_RELAY_HELD_COUNT_SECONDS": str(HELD_COUNT_SECONDS),
    }
    serve = ["serve", "--workers", "1", "--bind"]
    aggregator = Process(
        [sys.executable, "-m", "deniable.aggregator.cli", *serve, f"{HOST}:{aggregator_port}"],
        aggregator_env,
        aggregator_port,
        "/api/v1/health",
    )
    relay = Process(
        [sys.executable, "-m", "deniable.relay.cli", *serve, f"{HOST}:{relay_port}"],
        relay_env,
        relay_port,
        "/api/v1/health",
    )
    try:
        run(["-m", "deniable.aggregator.cli", "init"], aggregator_env)
        definitions = {
            "full": survey_definition("full", relay_url, MIN_BATCH),
            "short": survey_definition("short", relay_url, MIN_BATCH),
            "noised": noised_definition("noised", relay_url, SIGNED_NOISE),
            "counted": noised_definition("counted", relay_url, SIGNED_NOISE),
        }
        for survey_id, definition in definitions.items():
            path = directory / f"{survey_id}.json"
            path.write_text(json.dumps(definition))
            run(["-m", "deniable.aggregator.cli", "create-survey", str(path)], aggregator_env)
        credential = run(
            ["-m", "deniable.aggregator.cli", "relay", "credential", "--relay-url", relay_url],
            aggregator_env,
        ).stdout.strip()
        aggregator.start()
        key = requests.get(f"{aggregator.url}/api/v1/key", timeout=10).json()
        run(["-m", "deniable.relay.cli", "init"], relay_env)
        (directory / "credential").write_text(credential)
        surveys = {}
        for survey_id in definitions:
            run(
                ["-m", "deniable.relay.cli", "add-survey", aggregator.url, survey_id,
                 "--credential-file", str(directory / "credential"),
                 "--aggregator-key", key["public_key"]],
                relay_env,
            )  # fmt: skip
            document = requests.get(f"{aggregator.url}/api/v1/surveys/{survey_id}", timeout=10)
            surveys[survey_id] = Survey.from_dict(document.json()["definition"], resolved=True)
        relay.start()
        yield {
            "aggregator": aggregator,
            "relay": relay,
            "aggregator_env": aggregator_env,
            "relay_env": relay_env,
            "surveys": surveys,
            "encryption": decode_public_key(key["encryption_key"]["public_key"], "key"),
            "key_id": key["encryption_key"]["key_id"],
            "relay_url": relay_url,
        }
    finally:
        relay.kill()
        aggregator.kill()


def _submit(stack: dict[str, Any], survey_id: str, count: int) -> None:
    survey = stack["surveys"][survey_id]
    for index in range(count):
        body, _ = sealed_submission(
            survey,
            {"smoker": index % 2 == 0, "team": "red"},
            stack["encryption"],
            stack["key_id"],
        )
        sent = requests.post(
            f"{stack['relay'].url}/api/v1/surveys/{survey_id}/sealed", json=body, timeout=10
        )
        assert sent.status_code == 202, sent.text


def _waiting(stack: dict[str, Any], survey_id: str) -> dict[str, int]:
    rows = json.loads(
        run(["-m", "deniable.relay.cli", "status", "--json"], stack["relay_env"]).stdout
    )
    return next(row for row in rows if row["survey"] == survey_id)["waiting"]


def _survey(stack: dict[str, Any], survey_id: str) -> dict[str, Any]:
    url = f"{stack['aggregator'].url}/api/v1/surveys/{survey_id}/results"
    return requests.get(url, timeout=10).json()


def test_flush_forwards_every_full_group_then_closes(stack) -> None:
    _submit(stack, "full", 4)
    time.sleep(1.0)  # several forwarder passes: the hour-long window holds everything
    assert _waiting(stack, "full") == {"smoker": 4, "team": 4}
    assert _survey(stack, "full")["n_reports"] == 0
    done = run(
        ["-m", "deniable.aggregator.cli", "close-survey", "full", "--flush-relay"],
        stack["aggregator_env"],
    )
    assert done.stdout.splitlines() == [
        "the relay forwarded 8 reports in 2 batches; 0 units wait, in groups below min_batch 3",
        "survey 'full' is closed (8 reports)",
    ]
    assert done.stderr == ""  # nothing left to lose: no warning, no question
    assert _waiting(stack, "full") == {}
    results = _survey(stack, "full")
    assert results["n_reports"] == 8
    assert "survey full: flush asked by the aggregator: 2 batches formed" in stack["relay"].log()


def test_a_group_below_min_batch_stays_and_closing_asks_first(stack) -> None:
    _submit(stack, "short", 2)
    # The survey page says what the aggregator knows, and that the relay may hold more.
    page = requests.get(f"{stack['aggregator'].url}/surveys/short", timeout=10).text
    assert 'id="response-count" data-respondents="0"' in page
    assert "counted from the batches the relay forwarded." in page
    # Without --flush-relay, close-survey says how many answers the relay holds, then asks.
    plain = ["-m", "deniable.aggregator.cli", "close-survey", "short"]
    asked = run(plain, stack["aggregator_env"], check=False)
    assert asked.returncode == 4 and "survey 'short' is still open" in asked.stderr
    assert asked.stderr.startswith("The relay holds 2 answers waiting for a full batch (as of ")
    assert "discards every answer it still holds" in asked.stderr
    argv = ["-m", "deniable.aggregator.cli", "close-survey", "short", "--flush-relay"]
    refused = run(argv, stack["aggregator_env"], check=False)
    assert refused.returncode == 4  # stdin is no terminal: nobody said yes
    assert "the relay forwarded 0 reports in 0 batches; 4 units wait" in refused.stdout
    assert "closing discards the 4 units the relay still holds" in refused.stderr
    assert "survey 'short' is still open" in refused.stderr
    assert _waiting(stack, "short") == {"smoker": 2, "team": 2}
    closed = run([*argv, "--yes"], stack["aggregator_env"])
    assert "survey 'short' is closed (0 reports)" in closed.stdout


def test_a_flushed_batch_of_a_noised_survey_carries_the_relays_dummies(stack) -> None:
    """The flush forms batches as the forwarder does: with the dummies the survey signs."""
    _submit(stack, "noised", NOISED_MIN_BATCH)
    done = run(
        ["-m", "deniable.aggregator.cli", "close-survey", "noised", "--flush-relay"],
        stack["aggregator_env"],
    )
    real = 2 * NOISED_MIN_BATCH
    assert done.stdout.splitlines()[0].startswith(f"the relay forwarded {real} reports in 2 ")
    summary = json.loads(
        run(
            ["-m", "deniable.aggregator.cli", "relay", "batches", "noised", "--json"],
            stack["aggregator_env"],
        ).stdout
    )
    stored = [unit["stored"] for unit in summary["units"].values()]
    assert len(stored) == 2 and all(count >= NOISED_MIN_BATCH for count in stored)
    assert sum(stored) > real  # dummies: none at all has probability below 1e-9 (test_noise)


def test_a_flush_not_signed_by_the_aggregator_is_refused(stack) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from deniable.keychain import encode, key_id

    stranger = Ed25519PrivateKey.generate()
    public = stranger.public_key().public_bytes_raw()
    issued = int(time.time())
    url = f"{stack['relay'].url}/api/v1/surveys/full/flush"
    signature = encode(stranger.sign(flush_message("full", stack["relay_url"], issued)))
    forged = flush_request("full", stack["relay_url"], issued, key_id(public), signature)
    answer = requests.post(url, json=forged, timeout=30)
    assert answer.status_code == 401, answer.text
    assert "not signed by the aggregator's signing key" in answer.json()["detail"]
    answer = requests.post(url, json={**forged, "survey": "short"}, timeout=30)
    assert answer.status_code == 401 and "another survey" in answer.json()["detail"]
    answer = requests.post(url, json={**forged, "relay": "http://127.0.0.1:1"}, timeout=30)
    assert answer.status_code == 401 and "another relay" in answer.json()["detail"]
    answer = requests.post(url, json={"format": "x"}, timeout=30)
    assert answer.status_code == 422
    missing = requests.post(f"{stack['relay'].url}/api/v1/surveys/nope/flush", json=forged)
    assert missing.status_code == 404


def test_closing_says_so_when_the_relay_cannot_say_how_many_it_holds(stack, tmp_path) -> None:
    """A relay that does not answer: one sentence saying the count is not known, then the
    question as before (nobody at a terminal: still open)."""
    dead = f"http://{HOST}:{free_port()}"
    path = tmp_path / "unreachable.json"
    path.write_text(json.dumps(survey_definition("unreachable", dead, MIN_BATCH)))
    run(["-m", "deniable.aggregator.cli", "create-survey", str(path)], stack["aggregator_env"])
    argv = ["-m", "deniable.aggregator.cli", "close-survey", "unreachable", "--timeout", "5"]
    asked = run(argv, stack["aggregator_env"], check=False)
    assert asked.returncode == 4 and "survey 'unreachable' is still open" in asked.stderr
    assert f"The relay at {dead} did not answer, so how many answers it holds" in asked.stderr


def _signed(stack: dict[str, Any], kind: str, survey_id: str) -> dict[str, Any]:
    """A request of ``kind`` (a relay_flush format) signed with the aggregator's key."""
    from deniable.aggregator import signing
    from deniable.relay_flush import signed_message

    key = signing.load_key(f"{stack['aggregator_env']['DENIABLE_HOME']}/signing_key.pem")
    issued = int(time.time())
    message = signed_message(kind, survey_id, stack["relay_url"], issued)
    return {"format": kind, "survey": survey_id, "relay": stack["relay_url"],
            "issued_at": issued, "key_id": key.key_id, "signature": key.sign(message)}  # fmt: skip


def _held(stack: dict[str, Any], survey_id: str, body: dict[str, Any] | None = None):
    from deniable.relay_flush import HELD_REQUEST_FORMAT

    body = body or _signed(stack, HELD_REQUEST_FORMAT, survey_id)
    url = f"{stack['relay'].url}/api/v1/surveys/{survey_id}/held"
    return requests.post(url, json=body, timeout=30)


def _page_held(stack: dict[str, Any], survey_id: str, waiting: int) -> str:
    """The survey page once it shows the relay's held count ``waiting`` (it asks the relay
    on a worker thread and may say "not known yet" first)."""
    deadline = time.monotonic() + 20
    while True:
        page = requests.get(f"{stack['aggregator'].url}/surveys/{survey_id}", timeout=10).text
        if f'data-known="yes" data-waiting="{waiting}"' in page or time.monotonic() > deadline:
            return page
        time.sleep(0.3)


def test_the_held_count_is_a_signed_snapshot_of_real_respondents_shown_on_the_page(stack) -> None:
    from deniable.relay_flush import FLUSH_FORMAT
    from deniable.relay_held import HeldCount

    _submit(stack, "counted", NOISED_MIN_BATCH)
    first = _held(stack, "counted")
    assert first.status_code == 200, first.text
    count = HeldCount.from_dict(first.json())
    assert (count.waiting, count.min_batch) == (NOISED_MIN_BATCH, NOISED_MIN_BATCH)
    assert count.refresh_seconds == HELD_COUNT_SECONDS
    # One more arrives: the snapshot does not move until HELD_COUNT_SECONDS passed.
    _submit(stack, "counted", 1)
    again = HeldCount.from_dict(_held(stack, "counted").json())
    assert (again.waiting, again.as_of) == (NOISED_MIN_BATCH, count.as_of)
    # The page says it in words, server-side, with the time it was counted.
    page = _page_held(stack, "counted", NOISED_MIN_BATCH)
    assert f"The relay holds <strong>{NOISED_MIN_BATCH}</strong>\n  answers waiting" in page
    assert f'<time datetime="{count.as_of}">' in page
    # A flush forwards everyone in a noised batch (with the relay's dummies); of a respondent
    # who comes later the count says one, and never counts a dummy.
    flushed = requests.post(
        f"{stack['relay'].url}/api/v1/surveys/counted/flush",
        json=_signed(stack, FLUSH_FORMAT, "counted"),
        timeout=60,
    )
    assert flushed.status_code == 200, flushed.text
    assert flushed.json()["flushes_left"] == FLUSH_LIMIT - 1
    assert flushed.json()["forwarded_reports"] == 2 * (NOISED_MIN_BATCH + 1)
    _submit(stack, "counted", 1)
    time.sleep(HELD_COUNT_SECONDS + 0.2)
    later = HeldCount.from_dict(_held(stack, "counted").json())
    assert later.waiting == 1 and later.as_of > count.as_of
    summary = json.loads(
        run(
            ["-m", "deniable.aggregator.cli", "relay", "batches", "counted", "--json"],
            stack["aggregator_env"],
        ).stdout
    )
    assert sum(unit["stored"] for unit in summary["units"].values()) > 2 * (NOISED_MIN_BATCH + 1)
    # Only the aggregator's key, and only a held request's signature, reads it.
    flush_signed = _signed(stack, FLUSH_FORMAT, "counted")
    refused = _held(stack, "counted", {**flush_signed, "format": "deniable.relay-held-request/1"})
    assert refused.status_code == 401
    assert "not signed by the aggregator's signing key" in refused.json()["detail"]
    assert _held(stack, "counted", flush_signed).status_code == 422
    assert _held(stack, "nope").status_code == 404


def test_a_flush_past_the_relays_limit_is_refused_in_one_line(stack) -> None:
    """After the test above's flush, FLUSH_LIMIT - 1 more; then the relay refuses (409) and
    close-survey says why in one line, exits 4 and leaves the survey open."""
    argv = ["-m", "deniable.aggregator.cli", "close-survey", "counted", "--flush-relay"]
    for _ in range(FLUSH_LIMIT - 1):
        asked = run(argv, stack["aggregator_env"], check=False)
        assert asked.returncode == 4 and "closing discards the 2 units" in asked.stderr
    refused = run(argv, stack["aggregator_env"], check=False)
    assert refused.returncode == 4
    assert refused.stdout == ""
    assert refused.stderr.splitlines() == [
        "deniable-aggregator: error: the relay refused to forward (HTTP 409: survey 'counted' "
        f"was flushed {FLUSH_LIMIT} times already, the most this relay allows (its setting "
        f"DENIABLE_RELAY_FLUSH_LIMIT is {FLUSH_LIMIT}); its forwarder still sends each batch "
        "of at least min_batch once its window passes); the survey is still open"
    ]
    from deniable.relay_flush import FLUSH_FORMAT

    direct = requests.post(
        f"{stack['relay'].url}/api/v1/surveys/counted/flush",
        json=_signed(stack, FLUSH_FORMAT, "counted"),
        timeout=30,
    )
    assert direct.status_code == 409
    assert direct.headers["Content-Type"].startswith("application/problem+json")
    assert "DENIABLE_RELAY_FLUSH_LIMIT" in direct.json()["detail"]
    rows = json.loads(
        run(["-m", "deniable.relay.cli", "status", "--json"], stack["relay_env"]).stdout
    )
    counted = next(row for row in rows if row["survey"] == "counted")
    assert (counted["flushes"], counted["status"]) == (FLUSH_LIMIT, "open")
    assert counted["waiting"] == {"smoker": 1, "team": 1}  # a refused flush formed nothing
