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

The *encryption key* (X25519, for sealed reports: :mod:`deniable.sealing`) lives
beside the signing key in ``<key stem>.encryption.pem`` (mode 0600, created with
it), and is published in the key document as ``encryption_key``, signed by the
signing key.  ``key rotate`` replaces it too; the keys it replaces are kept, newest
first, in ``<key stem>.encryption.retired.pem`` (mode 0600, at most
:data:`~deniable.keychain.RETIRED_ENCRYPTION_KEYS`), so batches sealed before a rotation
and still held by a relay still open (:meth:`EncryptionKeys.open_sealed`).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from deniable import keychain, sealing
from deniable.errors import SealingError
from deniable.keychain import RETIRED_ENCRYPTION_KEYS
from deniable.service.datadir import private_directory
from deniable.service.settings import SettingsError
from deniable.wire import KeyDocument

__all__ = [
    "EncryptionKeys",
    "chain_path",
    "create_key",
    "current_key",
    "encryption_key_path",
    "init_app",
    "load_key",
    "open_sealed",
    "retired_encryption_path",
    "rotate_key",
]

ALGORITHM = "Ed25519"
EXTENSION = "deniable.signing"


def _raw_public(key: X25519PrivateKey) -> bytes:
    return sealing.public_bytes(key)


@dataclass(frozen=True, kw_only=True)
class EncryptionKeys:
    """The aggregator's X25519 key for sealed reports, and the recently retired ones."""

    current: X25519PrivateKey
    retired: tuple[X25519PrivateKey, ...] = ()

    @property
    def public_bytes(self) -> bytes:
        return _raw_public(self.current)

    @property
    def key_id(self) -> str:
        return keychain.key_id(self.public_bytes)

    def open_sealed(
        self, *, survey_id: str, unit: str, sealed: bytes, size: int | None = None
    ) -> bytes:
        """The body of a sealed blob, opened with the current key or a retired one.

        Raises :class:`~deniable.errors.SealingError` if no key opens it (altered,
        sealed for another survey or unit, or to a key older than those kept).
        """
        return self.opener(survey_id=survey_id, unit=unit, size=size)(sealed)

    def opener(
        self, *, survey_id: str, unit: str, size: int | None = None
    ) -> Callable[[bytes], bytes]:
        """:meth:`open_sealed` for many blobs of one survey, unit and size
        (:func:`deniable.sealing.opener` of each key, resolved once)."""
        openers = [
            sealing.opener(key, survey_id=survey_id, unit=unit, size=size)
            for key in (self.current, *self.retired)
        ]
        length = None if size is None else sealing.sealed_length(size)

        def open_one(sealed: bytes) -> bytes:
            error: SealingError | None = None
            for open_with in openers:
                try:
                    return open_with(sealed)
                except SealingError as failure:
                    error = failure
                    if length is not None and len(sealed) != length:
                        break  # the length is wrong for every key
            assert error is not None
            raise error

        return open_one


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
    encryption: EncryptionKeys | None = field(default=None, repr=False)

    @cached_property
    def encryption_document(self) -> dict[str, Any] | None:
        """The ``encryption_key`` member: the X25519 key, signed by this signing key."""
        if self.encryption is None:
            return None
        public = self.encryption.public_bytes
        message = keychain.encryption_key_message(self.public_bytes, public)
        return keychain.encryption_key_document(
            self.public_bytes, public, self.private_key.sign(message)
        )

    def public_document(self) -> dict[str, Any]:
        """``GET /api/v1/key``: the key, its sequence, the chain up to it, the encryption key."""
        return KeyDocument(
            public_key=self.public_bytes,
            sequence=len(self.chain),
            chain=tuple(self.chain),
            encryption_key=self.encryption_document,
        ).to_dict()


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


def encryption_key_path(key_path: str | os.PathLike[str]) -> Path:
    """The encryption key beside a signing key file: ``signing_key.pem`` → ``.encryption.pem``."""
    target = Path(key_path)
    return target.with_name(f"{target.stem}.encryption.pem")


def retired_encryption_path(key_path: str | os.PathLike[str]) -> Path:
    """Where rotated-away encryption keys are kept: ``<stem>.encryption.retired.pem``."""
    target = Path(key_path)
    return target.with_name(f"{target.stem}.encryption.retired.pem")


def _pem(key: Ed25519PrivateKey | X25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def create_key(path: str | os.PathLike[str]) -> bool:
    """Create a new private key file at ``path`` unless one exists; True if created.

    The encryption key beside it is created too when missing (so a deployment from
    before sealing gains one at its next start).  Each file is written to a
    temporary name opened with mode 0600 (so it is never readable by others,
    whatever the umask) and then hard-linked into place, which fails if another
    process won the race: both then load the same key.
    """
    target = Path(path)
    private_directory(target.parent)  # 0700, and refused if others may write in it
    created = _create_exclusive(target, lambda: _pem(Ed25519PrivateKey.generate()))
    _create_exclusive(encryption_key_path(target), lambda: _pem(sealing.generate_private_key()))
    return created


def _create_exclusive(target: Path, make_pem: Any) -> bool:
    if target.exists():
        return False
    pem = make_pem()
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


def _read_private(target: Path, what: str) -> bytes:
    try:
        info = target.stat()
        mode, owner = info.st_mode, info.st_uid
        data = target.read_bytes()
    except OSError as error:
        raise SettingsError(f"{what} {target}: cannot read ({error.strerror})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(
            f"{what} {target}: mode {stat.S_IMODE(mode):04o} lets others read the "
            "private key; run chmod 600 on it"
        )
    if owner != os.geteuid():
        # Why: its owner could replace the key this server signs with.
        raise SettingsError(
            f"{what} {target}: owned by another user (uid {owner}); the key must "
            f"belong to the user the server runs as (uid {os.geteuid()}): chown it, or make a "
            "new one"
        )
    return data


def _load_pem(data: bytes, target: Path, what: str, kind: type, name: str) -> Any:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise SettingsError(f"{what} {target}: not a PEM private key ({error})") from None
    if not isinstance(key, kind):
        raise SettingsError(f"{what} {target}: not an {name} key")
    return key


_PEM_END = b"-----END PRIVATE KEY-----"


def load_encryption_keys(path: str | os.PathLike[str]) -> EncryptionKeys | None:
    """The encryption key beside the signing key at ``path``, and the retired ones kept.

    None if there is no encryption key file (a deployment from before sealing that
    was not started since: ``init`` or ``serve`` creates it).
    """
    current_path = encryption_key_path(path)
    if not current_path.exists():
        return None
    what = "encryption key"
    current = _load_pem(
        _read_private(current_path, what), current_path, what, X25519PrivateKey, "X25519"
    )
    retired_path = retired_encryption_path(path)
    retired: list[X25519PrivateKey] = []
    if retired_path.exists():
        data = _read_private(retired_path, "retired encryption keys")
        for block in data.split(_PEM_END):
            if block.strip():
                retired.append(
                    _load_pem(
                        block + _PEM_END + b"\n",
                        retired_path,
                        "retired encryption keys",
                        X25519PrivateKey,
                        "X25519",
                    )
                )
    return EncryptionKeys(current=current, retired=tuple(retired))


def load_key(path: str | os.PathLike[str]) -> SigningKey:
    """Load a private key file (and its encryption keys), refusing one that others can read."""
    target = Path(path)
    data = _read_private(target, "SIGNING_KEY_PATH")
    key = _load_pem(data, target, "SIGNING_KEY_PATH", Ed25519PrivateKey, "Ed25519")
    public = key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    chain = keychain.chain_ending_at(load_chain(target), public)
    check_no_loop(chain, target)
    return SigningKey(
        private_key=key, path=target, chain=tuple(chain), encryption=load_encryption_keys(target)
    )


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
    _rotate_encryption_key(Path(path), old.encryption)
    chain = list(old.chain)
    new_private = Ed25519PrivateKey.generate()
    new = SigningKey(private_key=new_private, path=old.path)
    sequence = len(chain) + 1
    message = keychain.rotation_message(sequence, old.public_bytes, new.public_bytes)
    chain.append(
        keychain.link_document(
            sequence,
            old.public_bytes,
            new.public_bytes,
            old.private_key.sign(message),
            new_private.sign(message),
        )
    )
    document = {"format": "deniable.key-chain/1", "chain": chain}
    _write_atomically(chain_path(path), (json.dumps(document, indent=2) + "\n").encode(), 0o644)
    pem = new_private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write_atomically(Path(path), pem, 0o600)
    return old, load_key(path)


def _rotate_encryption_key(path: Path, old: EncryptionKeys | None) -> None:
    """A new encryption key; the one it replaces joins the retired keys (newest first).

    The retired file is written first, so a crash between the two writes keeps the
    old key either as current or as retired: nothing sealed to it is lost.
    """
    if old is not None:
        kept = (old.current, *old.retired)[:RETIRED_ENCRYPTION_KEYS]
        _write_atomically(retired_encryption_path(path), b"".join(map(_pem, kept)), 0o600)
    _write_atomically(encryption_key_path(path), _pem(sealing.generate_private_key()), 0o600)


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


def open_sealed(*, survey_id: str, unit: str, sealed: bytes, size: int | None = None) -> bytes:
    """The body of a sealed blob, opened with the app's current or a retired encryption key.

    Raises :class:`~deniable.errors.SealingError` if it does not open, or if this
    aggregator has no encryption key.
    """
    keys = current_key().encryption
    if keys is None:
        raise SealingError("this aggregator has no encryption key (run init or serve once)")
    return keys.open_sealed(survey_id=survey_id, unit=unit, sealed=sealed, size=size)
