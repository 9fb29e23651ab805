"""The aggregator's Ed25519 signing key: created once with mode 0600, never served.

Respondents' devices pin the public key (``GET /api/v1/key``) and verify the
signature over :meth:`deniable.survey.Survey.canonical_bytes` before answering,
so a survey served by any aggregator process verifies under the same key: every
process that serves one database must load the same key file (docs/scaling.md).

Rotation (``deniable-aggregator key rotate``, docs/key-rotation.md): a new key
replaces the file, and a link signed by the old key and endorsed by the new one
is appended to the *chain file* beside it (``<key stem>.chain.json``, public,
mode 0644), which ``GET /api/v1/key`` serves so pinned devices can follow.  The
chain is written before the key file is replaced, and both by atomic renames, so
a crash leaves either the old key or the new one, each with a chain that serves
it.  Running servers notice the new key file (checked at most once a second) and
sign every survey document with it from then on: surveys are signed per request,
never stored signed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deniable import keychain

from .datadir import private_directory
from .settings import SettingsError

ALGORITHM = "Ed25519"
EXTENSION = "deniable.signing"


@dataclass(frozen=True, kw_only=True)
class SigningKey:
    """A loaded private key and its public identity."""

    private_key: Ed25519PrivateKey
    path: Path

    @property
    def public_bytes(self) -> bytes:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    @property
    def public_key(self) -> str:
        """Base64 of the 32 raw public key bytes."""
        return base64.b64encode(self.public_bytes).decode("ascii")

    @property
    def key_id(self) -> str:
        """First 16 hex digits of SHA-256 of the raw public key."""
        return hashlib.sha256(self.public_bytes).hexdigest()[:16]

    def sign(self, message: bytes) -> str:
        """Base64 Ed25519 signature of ``message``."""
        return base64.b64encode(self.private_key.sign(message)).decode("ascii")

    chain: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    def public_document(self) -> dict[str, Any]:
        """``GET /api/v1/key``: the key, its sequence and the chain of rotations up to it."""
        return {
            "algorithm": ALGORITHM,
            "public_key": self.public_key,
            "key_id": self.key_id,
            "sequence": len(self.chain),
            "chain": list(self.chain),
        }


def chain_path(key_path: str | os.PathLike[str]) -> Path:
    """The public rotation chain kept beside a key file: ``signing_key.pem`` → ``.chain.json``."""
    target = Path(key_path)
    return target.with_name(f"{target.stem}.chain.json")


def load_chain(key_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every rotation link recorded beside the key file ([] if it was never rotated)."""
    path = chain_path(key_path)
    try:
        document = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as error:
        raise SettingsError(f"key chain {path}: unreadable ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("chain"), list):
        raise SettingsError(f"key chain {path}: not a key chain document")
    return document["chain"]


def create_key(path: str | os.PathLike[str]) -> bool:
    """Create a new private key file at ``path`` unless one exists; True if created.

    The file is written to a temporary name opened with mode 0600 (so it is never
    readable by others, whatever the umask) and then hard-linked into place, which
    fails if another process won the race: both then load the same key.
    """
    target = Path(path)
    private_directory(target.parent)  # 0700, and refused if others may write in it
    if target.exists():
        return False
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(pem)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, target)
        except FileExistsError:
            return False
        return True
    finally:
        temporary.unlink(missing_ok=True)


def load_key(path: str | os.PathLike[str]) -> SigningKey:
    """Load a private key file, refusing one that others can read."""
    target = Path(path)
    try:
        info = target.stat()
        mode, owner = info.st_mode, info.st_uid
        data = target.read_bytes()
    except OSError as error:
        raise SettingsError(f"SIGNING_KEY_PATH {target}: cannot read ({error.strerror})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(
            f"SIGNING_KEY_PATH {target}: mode {stat.S_IMODE(mode):04o} lets others read the "
            "private key; run chmod 600 on it"
        )
    if owner != os.geteuid():
        # Why: its owner could replace the key this server signs with.
        raise SettingsError(
            f"SIGNING_KEY_PATH {target}: owned by another user (uid {owner}); the key must "
            f"belong to the user the server runs as (uid {os.geteuid()}): chown it, or make a "
            "new one"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise SettingsError(f"SIGNING_KEY_PATH {target}: not a PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SettingsError(f"SIGNING_KEY_PATH {target}: not an Ed25519 key")
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    chain = keychain.chain_ending_at(load_chain(target), public)
    check_no_loop(chain, target)
    return SigningKey(private_key=key, path=target, chain=tuple(chain))


def check_no_loop(chain: list[dict[str, Any]], key_path: Path) -> None:
    """Refuse a chain that returns to a key it retired (A -> B -> A), or whose links do not join.

    Why: a device follows each link from the key it holds, so a loop would move
    devices that left a key back onto it (a retired key is one that may have leaked).
    """
    seen: list[str] = []
    for link in chain:
        previous, following = link.get("previous_public_key"), link.get("public_key")
        if seen and previous != seen[-1]:
            raise SettingsError(
                f"key chain {chain_path(key_path)}: link {link.get('sequence')} does not "
                "start from the key the previous link ended at"
            )
        if not seen:
            seen.append(previous)
        if following in seen:
            raise SettingsError(
                f"key chain {chain_path(key_path)}: link {link.get('sequence')} loops back to a "
                "retired key; refusing to publish it (restore the chain from a backup)"
            )
        seen.append(following)


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def rotate_key(path: str | os.PathLike[str]) -> tuple[SigningKey, SigningKey]:
    """Replace the key at ``path`` by a new one, recording the signed link; (old, new).

    The old private key is overwritten (keep a backup first if policy wants one; a
    retired key that leaks lets its holder forge a rotation for devices still pinned
    to it, see docs/key-rotation.md).
    """
    old = load_key(path)
    chain = list(old.chain)
    new_private = Ed25519PrivateKey.generate()
    new = SigningKey(private_key=new_private, path=old.path)
    sequence = len(chain) + 1
    message = keychain.rotation_message(sequence, old.public_bytes, new.public_bytes)
    chain.append(keychain.link_document(
        sequence, old.public_bytes, new.public_bytes,
        old.private_key.sign(message), new_private.sign(message),
    ))  # fmt: skip
    document = {"format": "deniable.key-chain/1", "chain": chain}
    _write_atomically(chain_path(path), (json.dumps(document, indent=2) + "\n").encode(), 0o644)
    pem = new_private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write_atomically(Path(path), pem, 0o600)
    return old, load_key(path)


class KeyRing:
    """The app's key: reloaded when the key file changes (checked at most once a second)."""

    def __init__(self, path: str | os.PathLike[str], *, interval: float = 1.0) -> None:
        self.path = Path(path)
        self.interval = interval
        self._key = load_key(self.path)
        self._stamp = self._file_stamp()
        self._checked = time.monotonic()
        self._lock = threading.Lock()

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return info.st_ino, info.st_mtime_ns

    def current(self) -> SigningKey:
        now = time.monotonic()
        if now - self._checked < self.interval:
            return self._key
        with self._lock:
            self._checked = now
            stamp = self._file_stamp()
            if stamp is not None and stamp != self._stamp:
                try:
                    self._key = load_key(self.path)
                    self._stamp = stamp
                except SettingsError:
                    pass  # half-written or unreadable: keep signing with the loaded key
            return self._key


def init_app(app: Any) -> None:
    """Create the key file if missing, load it, and attach it to the app."""
    path = app.config["SIGNING_KEY_PATH"]
    create_key(path)
    app.extensions[EXTENSION] = KeyRing(path)


def current_key() -> SigningKey:
    from flask import current_app

    return current_app.extensions[EXTENSION].current()
