"""close-survey --flush-relay against a real relay and aggregator (processes, SQLite).

The relay's window is an hour here, so nothing is forwarded unless the aggregator's signed
flush request asks for it: groups of at least min_batch are then forwarded and the survey
closed; groups below it stay held, and closing asks first.  A flush request not signed by
the aggregator's key, or signed for another survey or relay, is refused.
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
    assert "counted from the batches the relay forwarded. The relay may hold" in page
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
