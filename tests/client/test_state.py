"""The device state file: encrypted, atomic, locked, and never silently reset."""

from __future__ import annotations

import base64
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from deniable.client import DeviceState, InvalidParameter, StateError, StateStore, SurveyClient
from deniable.client.state import MAGIC

from .conftest import ANSWERS, BASE, STATE_KEY, definition

ROOT = Path(__file__).resolve().parents[2]


def filled(path: Path, key: bytes = STATE_KEY) -> StateStore:
    store = StateStore(path, key=key)
    with store.transaction() as state:
        state.ledger.append(
            {"at": 1.0, "survey": "x", "question": "q", "kind": "report", "epsilon": 1.5}
        )
        state.keys["http://a"] = {"public_key": "k"}
    return store


def test_round_trip_and_secret_is_stable(tmp_path: Path) -> None:
    store = filled(tmp_path / "state.bin")
    first = store.load()
    again = StateStore(tmp_path / "state.bin", key=STATE_KEY).load()
    assert again == first
    assert len(first.device_secret) == 32
    assert first.ledger[0]["epsilon"] == 1.5
    raw = (tmp_path / "state.bin").read_bytes()
    assert raw.startswith(MAGIC) and b"ledger" not in raw and first.device_secret not in raw
    assert stat.S_IMODE(os.stat(tmp_path / "state.bin").st_mode) == 0o600


def test_fresh_devices_get_distinct_secrets(tmp_path: Path) -> None:
    secrets_seen = {
        StateStore(tmp_path / f"{i}.bin", key=STATE_KEY).load().device_secret for i in range(20)
    }
    assert len(secrets_seen) == 20


def test_key_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENIABLE_STATE_KEY", base64.b64encode(STATE_KEY).decode())
    StateStore(tmp_path / "state.bin").load()
    assert not (tmp_path / "state.bin.key").exists()
    assert StateStore(tmp_path / "state.bin", key=STATE_KEY).load()  # same key


def test_bad_key_parameters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidParameter):
        StateStore(tmp_path / "s", key=b"short")
    monkeypatch.setenv("DENIABLE_STATE_KEY", "not base64!")
    with pytest.raises(InvalidParameter, match="DENIABLE_STATE_KEY"):
        StateStore(tmp_path / "s")
    monkeypatch.setenv("DENIABLE_STATE_KEY", base64.b64encode(b"16 bytes only...").decode())
    with pytest.raises(InvalidParameter, match="32 bytes"):
        StateStore(tmp_path / "s")


def test_key_file_is_created_private_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DENIABLE_STATE_KEY", raising=False)
    state = StateStore(tmp_path / "state.bin").load()
    key_file = tmp_path / "state.bin.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert StateStore(tmp_path / "state.bin").load() == state
    key_file.unlink()
    with pytest.raises(StateError, match="key file .* is missing"):
        StateStore(tmp_path / "state.bin").load()


def _corruptions(blob: bytes) -> dict[str, bytes]:
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x01
    header = bytearray(blob)
    header[0] ^= 0x20
    nonce = bytearray(blob)
    nonce[len(MAGIC)] ^= 0x80
    return {
        "empty": b"",
        "header only": blob[: len(MAGIC) + 5],
        "truncated by one": blob[:-1],
        "truncated half": blob[: len(blob) // 2],
        "bit flip": bytes(flipped),
        "bad magic": bytes(header),
        "bad nonce": bytes(nonce),
        "appended": blob + b"\x00",
    }


@pytest.mark.parametrize("case", list(_corruptions(b"x" * 200)))
def test_tampered_or_truncated_file_raises_and_is_left_alone(tmp_path: Path, case: str) -> None:
    path = tmp_path / "state.bin"
    filled(path)
    bad = _corruptions(path.read_bytes())[case]
    path.write_bytes(bad)
    store = StateStore(path, key=STATE_KEY)
    with pytest.raises(StateError):
        store.load()
    with pytest.raises(StateError):
        with store.transaction() as state:
            state.ledger.clear()
    assert path.read_bytes() == bad  # never silently reset


def test_wrong_key_raises(tmp_path: Path) -> None:
    filled(tmp_path / "state.bin")
    with pytest.raises(StateError, match="cannot be decrypted"):
        StateStore(tmp_path / "state.bin", key=bytes(32)).load()


@pytest.mark.parametrize(
    "plain",
    [
        b"not json",
        b"[]",
        b'{"version": 2}',
        b'{"version": 1, "device_secret": "AA=="}',
        b'{"version":1,"device_secret":"'
        + base64.b64encode(bytes(32))
        + b'","keys":{},"ledger":{},"memo":{},"answered":{},"outbox":[]}',
    ],
)
def test_authentic_but_malformed_contents_raise(tmp_path: Path, plain: bytes) -> None:
    nonce = bytes(12)
    path = tmp_path / "state.bin"
    path.write_bytes(MAGIC + nonce + AESGCM(STATE_KEY).encrypt(nonce, plain, MAGIC))
    with pytest.raises(StateError):
        StateStore(path, key=STATE_KEY).load()


def test_failed_transaction_saves_nothing(tmp_path: Path) -> None:
    store = filled(tmp_path / "state.bin")
    before = (tmp_path / "state.bin").read_bytes()
    with pytest.raises(RuntimeError):
        with store.transaction() as state:
            state.ledger.clear()
            raise RuntimeError("boom")
    assert (tmp_path / "state.bin").read_bytes() == before
    assert len(store.load().ledger) == 1


def test_corrupt_state_stops_the_client_before_sending(
    tmp_path: Path, aggregator, adapter, http
) -> None:
    aggregator.create(definition())
    path = tmp_path / "device" / "state.bin"
    client = SurveyClient(BASE, state=StateStore(path, key=STATE_KEY), session=http)
    verified = client.fetch("s1")
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(StateError, match="cannot be decrypted|truncated"):
        client.answer(verified, ANSWERS)
    assert adapter.report_posts() == []


# -- processes ------------------------------------------------------------------------------
WORKER = textwrap.dedent(
    """
    import sys
    from deniable.client import StateStore
    store = StateStore(sys.argv[1], key=bytes(range(32)))
    name, rounds = sys.argv[2], int(sys.argv[3])
    for i in range(rounds):
        with store.transaction() as state:
            count = state.memo.get("counter", {"n": 0})["n"]
            state.memo["counter"] = {"n": count + 1}
            state.ledger.append({"at": i, "survey": name, "question": "q", "kind": "report",
                                 "epsilon": 0.001, "pad": "x" * (i % 97) * 50})
        if i == 0:
            print("writing", flush=True)
    """
)


def _spawn(path: Path, name: str, rounds: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), name, str(rounds)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_two_processes_do_not_lose_updates(tmp_path: Path) -> None:
    path = tmp_path / "state.bin"
    workers = [_spawn(path, name, 60) for name in ("a", "b")]
    for worker in workers:
        assert worker.wait(timeout=60) == 0
    state = StateStore(path, key=STATE_KEY).load()
    assert state.memo["counter"]["n"] == 120
    assert len(state.ledger) == 120


def test_sigkill_mid_write_leaves_old_or_new_state(tmp_path: Path) -> None:
    path = tmp_path / "state.bin"
    rng = np.random.default_rng(20240601)
    last = stale = 0
    for _ in range(25):
        worker = _spawn(path, "w", 100_000)
        assert worker.stdout.readline() == "writing\n"  # past start-up, in the write loop
        time.sleep(rng.uniform(0, 0.05))
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        worker.stdout.close()
        state = StateStore(path, key=STATE_KEY).load()  # never StateError
        count = state.memo.get("counter", {"n": 0})["n"]
        assert count == len(state.ledger) >= last  # each write whole, never lost
        last = count
        stale += len(list(tmp_path.glob(".state.bin.*.tmp")))
    assert last > 25  # the workers really were writing when killed
    print(f"{last} writes survived 25 SIGKILLs; {stale} half-written temporary files seen")
    # Temporary files of killed writers are cleaned up by the next write.
    with StateStore(path, key=STATE_KEY).transaction():
        pass
    assert not list(tmp_path.glob(".state.bin.*.tmp"))


def test_device_state_json_is_plain_data() -> None:
    state = DeviceState.fresh()
    assert DeviceState.from_json(state.to_json()) == state


def test_missing_state_beside_its_key_file_is_an_error(tmp_path: Path) -> None:
    """Hardening: a deleted state file must not silently reset the ledger."""
    path = tmp_path / "state.bin"
    store = StateStore(path)  # key file beside it, created on the first write
    with store.transaction() as state:
        state.answered["x"] = {"at": 1}
    assert store.key_file.exists()
    path.unlink()
    with pytest.raises(StateError, match="missing"):
        StateStore(path).load()
    store.key_file.unlink()  # both gone: a fresh device, as documented
    assert StateStore(path).load().answered == {}
