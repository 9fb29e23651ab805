"""Key rotation, end to end: a live gunicorn aggregator, the real CLI, the real SurveyClient.

The operator rotates with ``deniable-aggregator key rotate`` (a subprocess) while the
server runs; the pinned device fetches the next survey, follows the signed chain and
answers.  Then the served chain is tampered with on disk (forged signature, a link
dropped, links swapped) and the key is rolled back to an older one: every time the
device refuses, keeps its pin and sends nothing.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable.client import StateStore, SurveyClient
from deniable.errors import AlreadyAnswered, SignatureError

from .conftest import ANSWERS, GENEROUS, STATE_KEY, definition

pytestmark = pytest.mark.slow


def aggregator_cli(server: Any, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "--database",
            server.config["DATABASE"],
            "--signing-key",
            server.config["SIGNING_KEY_PATH"],
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def served_key(server: Any) -> dict[str, Any]:
    return requests.get(f"{server.url}/api/v1/key", timeout=10).json()


def wait_for_key(server: Any, key_id: str) -> dict[str, Any]:
    """The key document once the running server serves ``key_id`` (it checks each second)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        document = served_key(server)
        if document["key_id"] == key_id:
            return document
        time.sleep(0.2)
    raise AssertionError(f"the server never switched to key {key_id}")


def rotate(server: Any) -> str:
    result = aggregator_cli(server, "key", "rotate", "--json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    new_id = json.loads(result.stdout)["key_id"]
    wait_for_key(server, new_id)
    return new_id


def reload_files(
    server: Any, chain: dict[str, Any] | None = None, key_bytes: bytes | None = None
) -> None:
    """Rewrite the chain (and key) files; return once the server serves what they say."""
    key_path = Path(server.config["SIGNING_KEY_PATH"])
    chain_path = key_path.with_name(f"{key_path.stem}.chain.json")
    if chain is not None:
        chain_path.write_text(json.dumps(chain))
    if key_bytes is not None:
        key_path.write_bytes(key_bytes)
    stamp = time.time() + 5  # a new mtime, so the server's once-a-second check sees a change
    os.utime(key_path, (stamp, stamp))
    if chain is None:
        return
    deadline = time.monotonic() + 20
    while served_key(server)["chain"] != chain["chain"]:
        assert time.monotonic() < deadline, "the server never served the rewritten chain"
        time.sleep(0.2)


@pytest.fixture
def device(tmp_path: Path):
    def build() -> SurveyClient:
        return SurveyClient(
            live.url,
            state=StateStore(tmp_path / "device.bin", key=STATE_KEY),
            policy=GENEROUS,
            retries=0,
        )

    live = None

    def bind(server: Any):
        nonlocal live
        live = server
        return build

    return bind


def test_a_pinned_device_follows_rotations_and_refuses_forgery_truncation_and_rollback(
    live_server, device, tmp_path
):
    server = live_server
    new_client = device(server)
    server.operator("POST", "/api/v1/surveys", {"definition": definition("before")})
    with new_client() as client:
        first = client.fetch("before")  # trust on first use: pins key 0
        assert client.answer(first, ANSWERS).delivered
        key0 = client.pinned_key_id()
    shown = aggregator_cli(server, "key", "show", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["key_id"] == key0

    key_path = Path(server.config["SIGNING_KEY_PATH"])
    chain_path = key_path.with_name(f"{key_path.stem}.chain.json")
    key1 = rotate(server)
    backup_key1 = (key_path.read_bytes(), chain_path.read_text())
    server.operator("POST", "/api/v1/surveys", {"definition": definition("after")})
    document = requests.get(f"{server.url}/api/v1/surveys/after", timeout=10).json()
    assert document["key_id"] == key1  # surveys are signed with the new key

    with new_client() as client:
        survey = client.fetch("after")  # signed by key 1: follows link 1 from key 0
        assert survey.key_id == key1 and client.pinned_key_id() == key1
        assert client.answer(survey, ANSWERS).delivered
    pin = StateStore(tmp_path / "device.bin", key=STATE_KEY).load().keys[server.url]
    assert pin["sequence"] == 1 and pin["retired"] == [key0]
    with new_client() as client:  # the same aggregator: a survey answered before stays answered
        with pytest.raises(AlreadyAnswered):
            client.fetch("before")

    key2 = rotate(server)  # a second rotation: the device follows link 2
    server.operator("POST", "/api/v1/surveys", {"definition": definition("later")})
    good_chain = json.loads(chain_path.read_text())
    assert [link["sequence"] for link in good_chain["chain"]] == [1, 2]

    def refuses(survey_id: str, expected: str) -> None:
        with new_client() as client:
            with pytest.raises(SignatureError, match=expected):
                client.fetch(survey_id)
            assert client.pinned_key_id() == key1  # the pin is unchanged
            assert client.pending() == 0  # and nothing was queued or sent

    # Forged: link 2's signature altered (still valid base64).
    forged = json.loads(json.dumps(good_chain))
    signature = bytearray(base64.b64decode(forged["chain"][1]["signature"]))
    signature[0] ^= 1
    forged["chain"][1]["signature"] = base64.b64encode(bytes(signature)).decode()
    reload_files(server, forged)
    refuses("later", "not signed by the previous key")

    # Truncated: the chain file lost its links (the server serves key 2 with no chain).
    reload_files(server, {**good_chain, "chain": []})
    refuses("later", "does not start from the pinned key")
    # Truncated and renumbered: only link 2, now claiming to be the first rotation.
    reload_files(server, {**good_chain, "chain": [{**good_chain["chain"][1], "sequence": 1}]})
    refuses("later", "truncated or renumbered")

    # Out of order: link 2 before link 1 (then link 2 again, so the chain still ends at key 2).
    # That chain loops back to a retired key, so the server refuses to publish it and keeps
    # what it served; devices' own refusal of it is in tests/shared/test_keychain.py.
    link1, link2 = good_chain["chain"]
    served_before = served_key(server)["chain"]
    reload_files(server, None)  # no wait: it is never served
    Path(server.config["SIGNING_KEY_PATH"]).with_name(
        f"{Path(server.config['SIGNING_KEY_PATH']).stem}.chain.json"
    ).write_text(json.dumps({**good_chain, "chain": [link2, link1, link2]}))
    stamp = time.time() + 10
    os.utime(server.config["SIGNING_KEY_PATH"], (stamp, stamp))
    time.sleep(2.5)  # past the server's once-a-second check
    assert served_key(server)["chain"] == served_before
    refuses("later", "truncated or renumbered")

    # The genuine chain: the device follows to key 2.
    reload_files(server, good_chain)
    with new_client() as client:
        assert client.fetch("later").key_id == key2
        assert client.pinned_key_id() == key2

    # Rollback: the server goes back to key 1 (its old files restored).
    reload_files(server, json.loads(backup_key1[1]), backup_key1[0])
    server.operator("POST", "/api/v1/surveys", {"definition": definition("rolled-back")})
    with new_client() as client:
        with pytest.raises(SignatureError, match="rollback"):
            client.fetch("rolled-back")
        assert client.pinned_key_id() == key2


def test_key_commands_create_nothing_and_say_what_is_missing(tmp_path):
    home = tmp_path / "home"
    for args in (["key", "show"], ["key", "rotate"]):
        result = subprocess.run(
            [sys.executable, "-m", "deniable.aggregator.cli", "--data-dir", str(home), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 3, result.stderr
        assert result.stderr.count("\n") == 1 and "no signing key" in result.stderr
        assert not home.exists()


def test_rotation_keeps_the_private_key_private_and_the_chain_public(tmp_path):
    home = tmp_path / "home"
    command = [sys.executable, "-m", "deniable.aggregator.cli", "--data-dir", str(home)]
    assert subprocess.run([*command, "init"], capture_output=True, timeout=60).returncode == 0
    before = (home / "signing_key.pem").read_bytes()
    result = subprocess.run([*command, "key", "rotate"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert (home / "signing_key.pem").read_bytes() != before
    assert (home / "signing_key.pem").stat().st_mode & 0o077 == 0
    chain = json.loads((home / "signing_key.chain.json").read_text())
    assert b"PRIVATE" not in json.dumps(chain).encode()
    assert [entry.name for entry in home.iterdir() if entry.name.startswith(".")] == []
    shutil.rmtree(home)
