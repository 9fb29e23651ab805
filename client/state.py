"""The device's one local state file: encrypted, written atomically, locked.

Everything the client remembers lives in one file:

* ``device_secret``: 32 random bytes that key the memoized (permanent)
  randomized responses of longitudinal questions (see ``deniable.client.memo``);
* ``keys``: the aggregator signing key pinned per origin (trust on first use);
* ``ledger``: every ε charge, with its time (see ``deniable.client.ledger``);
* ``memo``: which (longitudinal key, value) pairs have already been charged,
  stored as HMAC tags under the device secret, never the values themselves;
* ``answered``: the surveys this device has answered;
* ``outbox``: report batches charged but not yet acknowledged by the aggregator.

File format::

    b"DNBLST01" | 12-byte nonce | AES-256-GCM(JSON, associated data = b"DNBLST01")

The key is 32 bytes, given explicitly, or base64 in the environment variable
``DENIABLE_STATE_KEY``, or read from a key file (created with mode 0600 the
first time, when neither the state file nor the key file exists).

Writes go to a temporary file in the same directory, are fsynced, renamed over
the state file with :func:`os.replace` and the directory is fsynced, so after a
crash at any instant the file holds either the old or the new state.  A file
that is truncated, tampered with, or cannot be decrypted raises
:class:`~deniable.errors.StateError`; it is never silently replaced by a fresh
state, because that would reset the privacy ledger.  Neither is a missing
state file whose key file exists (the key file is written just before the first
state file): that raises StateError too.

What cannot be detected without OS key storage (a keystore or TPM counter the
device cannot roll back): restoring an *older copy of both files* (an earlier
state decrypts and verifies fine, with a smaller ledger and fewer "already
answered" marks), deleting both files (a fresh device), or a key given by
``DENIABLE_STATE_KEY`` with the state file deleted.  The state protects the
respondent against accidents and other programs, not against their own
deliberate rollback: a respondent who does that only weakens their own privacy,
and the aggregator's enrolment tokens still bound what they can submit.

Every read-modify-write runs inside :meth:`StateStore.transaction`, which holds
an exclusive ``fcntl`` lock on ``<state>.lock``, so two processes on one device
never clobber each other's changes.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deniable.errors import InvalidParameter, StateError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"DNBLST01"
NONCE_BYTES = 12
TAG_BYTES = 16
SECRET_BYTES = 32
KEY_BYTES = 32
STATE_VERSION = 1
ENV_KEY = "DENIABLE_STATE_KEY"
ENV_STATE = "DENIABLE_STATE"

__all__ = ["DeviceState", "StateStore", "default_state_path", "load_key"]


def default_state_path() -> Path:
    """``$DENIABLE_STATE``, else ``$XDG_DATA_HOME/deniable/state.bin`` (~/.local/share)."""
    explicit = os.environ.get(ENV_STATE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "deniable" / "state.bin"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object, what: str, size: int | None = None) -> bytes:
    if not isinstance(text, str):
        raise StateError(f"state file: {what} must be base64 text")
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise StateError(f"state file: {what} is not valid base64") from None
    if size is not None and len(data) != size:
        raise StateError(f"state file: {what} must be {size} bytes, got {len(data)}")
    return data


def decode_key(text: str, source: str) -> bytes:
    """A base64 AES-256 key, or InvalidParameter naming where it came from."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidParameter(f"{source}: state key must be base64") from None
    if len(key) != KEY_BYTES:
        raise InvalidParameter(f"{source}: state key must be {KEY_BYTES} bytes, got {len(key)}")
    return key


def load_key(key_file: Path, *, create: bool) -> bytes:
    """The state key from ``key_file`` (base64), creating it (0600) when allowed."""
    try:
        return decode_key(key_file.read_text("ascii"), str(key_file))
    except FileNotFoundError:
        if not create:
            raise StateError(
                f"state key file {key_file} is missing and the state file exists: "
                f"set {ENV_KEY} or restore the key file (the state is not reset)"
            ) from None
    except (UnicodeDecodeError, InvalidParameter) as error:
        raise StateError(f"state key file {key_file} is unreadable: {error}") from None
    key = os.urandom(KEY_BYTES)
    key_file.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(_b64(key) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    _fsync_directory(key_file.parent)
    return key


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@dataclass
class DeviceState:
    """The decrypted contents of the state file (plain data, JSON-serialisable)."""

    device_secret: bytes
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    ledger: list[dict[str, Any]] = field(default_factory=list)
    memo: dict[str, dict[str, Any]] = field(default_factory=dict)
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    outbox: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def fresh(cls) -> DeviceState:
        return cls(device_secret=os.urandom(SECRET_BYTES))

    def to_json(self) -> bytes:
        data = {
            "version": STATE_VERSION,
            "device_secret": _b64(self.device_secret),
            "keys": self.keys,
            "ledger": self.ledger,
            "memo": self.memo,
            "answered": self.answered,
            "outbox": self.outbox,
        }
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_json(cls, raw: bytes) -> DeviceState:
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise StateError("state file: decrypted contents are not valid JSON") from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise StateError(f"state file: unsupported version (expected {STATE_VERSION})")
        expected = {
            "keys": dict,
            "ledger": list,
            "memo": dict,
            "answered": dict,
            "outbox": list,
        }
        for name, kind in expected.items():
            if not isinstance(data.get(name), kind):
                raise StateError(f"state file: field {name!r} missing or not a {kind.__name__}")
        return cls(
            device_secret=_unb64(data.get("device_secret"), "device_secret", SECRET_BYTES),
            keys=data["keys"],
            ledger=data["ledger"],
            memo=data["memo"],
            answered=data["answered"],
            outbox=data["outbox"],
        )


class StateStore:
    """The encrypted state file at ``path``; use :meth:`transaction` to change it.

    ``key``: 32 raw bytes; else ``$DENIABLE_STATE_KEY`` (base64); else ``key_file``
    (default ``<path>.key``), created on first use.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        key: bytes | None = None,
        key_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_state_path()
        self.key_file = Path(key_file) if key_file is not None else Path(f"{self.path}.key")
        self.lock_path = Path(f"{self.path}.lock")
        if key is not None:
            if not isinstance(key, bytes) or len(key) != KEY_BYTES:
                raise InvalidParameter(f"state key must be {KEY_BYTES} raw bytes")
        elif os.environ.get(ENV_KEY):
            key = decode_key(os.environ[ENV_KEY], ENV_KEY)
        self._key = key
        self._local = threading.local()
        self._thread_lock = threading.RLock()

    def __repr__(self) -> str:
        return f"StateStore({str(self.path)!r})"

    # -- key ------------------------------------------------------------------
    def _cipher(self, *, creating: bool) -> AESGCM:
        # cryptography is imported by the first read or write, not by ``import deniable.client``.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if self._key is None:
            self._key = load_key(self.key_file, create=creating)
        return AESGCM(self._key)

    # -- reading and writing -----------------------------------------------------
    def _read(self) -> DeviceState | None:
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            if self.key_file.exists():
                # Why: the key file is written just before the first state file, so a key
                # file without its state means the state was deleted or moved: starting
                # afresh would forget the privacy ledger and every "already answered".
                raise StateError(
                    f"state file {self.path} is missing but its key file {self.key_file} "
                    "exists: restore the state file (the ledger is not reset); if this device "
                    "never answered a survey, delete the key file too"
                ) from None
            return None
        except OSError as error:
            raise StateError(f"state file {self.path} cannot be read: {error}") from None
        header = len(MAGIC) + NONCE_BYTES
        if len(blob) < header + TAG_BYTES:
            raise StateError(
                f"state file {self.path} is truncated ({len(blob)} bytes); "
                "refusing to continue (the privacy ledger would be lost)"
            )
        if not blob.startswith(MAGIC):
            raise StateError(f"state file {self.path} is not a Deniable state file (bad header)")
        cipher = self._cipher(creating=False)
        from cryptography.exceptions import InvalidTag

        try:
            plain = cipher.decrypt(blob[len(MAGIC) : header], blob[header:], MAGIC)
        except InvalidTag:
            raise StateError(
                f"state file {self.path} cannot be decrypted: wrong key, or the file was "
                "corrupted or tampered with; it is left untouched"
            ) from None
        return DeviceState.from_json(plain)

    def _write(self, state: DeviceState) -> None:
        cipher = self._cipher(creating=True)
        nonce = os.urandom(NONCE_BYTES)
        blob = MAGIC + nonce + cipher.encrypt(nonce, state.to_json(), MAGIC)
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{self.path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(blob)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _fsync_directory(directory)

    def _remove_stale_temporaries(self) -> None:
        # Left behind by a process killed mid-write; only ever called under the lock.
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()

    # -- public -----------------------------------------------------------------
    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> DeviceState:
        """A snapshot of the state (a fresh, unsaved one if there is no file yet)."""
        with self.transaction(write=False) as state:
            return state

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[DeviceState]:
        """Lock, load, yield the state, and save it atomically if the block succeeds.

        Re-entrant within one thread: a nested transaction shares the outer one's
        state and the outer one saves.
        """
        with self._thread_lock:
            current = getattr(self._local, "state", None)
            if current is not None:
                yield current
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                state = self._read()
                created = state is None
                if state is None:
                    state = DeviceState.fresh()
                self._local.state = state
                try:
                    yield state
                finally:
                    self._local.state = None
                if write or created:
                    self._remove_stale_temporaries()
                    self._write(state)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
                os.close(lock)

    def save_now(self) -> None:
        """Inside a transaction: persist the current state immediately (e.g. before I/O)."""
        state = getattr(self._local, "state", None)
        if state is None:
            raise StateError("save_now() outside a transaction")
        self._write(state)
