"""The aggregator's Ed25519 signing key: created once with mode 0600, never served.

Respondents' devices pin the public key (``GET /api/v1/key``) and verify the
signature over :meth:`deniable.survey.Survey.canonical_bytes` before answering,
so a survey served by any aggregator process verifies under the same key: every
process that serves one database must load the same key file (docs/scaling.md).
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from flask import Flask, current_app

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

    def public_document(self) -> dict[str, str]:
        return {"algorithm": ALGORITHM, "public_key": self.public_key, "key_id": self.key_id}


def create_key(path: str | os.PathLike[str]) -> bool:
    """Create a new private key file at ``path`` unless one exists; True if created.

    The file is written to a temporary name opened with mode 0600 (so it is never
    readable by others, whatever the umask) and then hard-linked into place, which
    fails if another process won the race: both then load the same key.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
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
        mode = target.stat().st_mode
        data = target.read_bytes()
    except OSError as error:
        raise SettingsError(f"SIGNING_KEY_PATH {target}: cannot read ({error.strerror})") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SettingsError(
            f"SIGNING_KEY_PATH {target}: mode {stat.S_IMODE(mode):04o} lets others read the "
            "private key; run chmod 600 on it"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise SettingsError(f"SIGNING_KEY_PATH {target}: not a PEM private key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SettingsError(f"SIGNING_KEY_PATH {target}: not an Ed25519 key")
    return SigningKey(private_key=key, path=target)


def init_app(app: Flask) -> None:
    """Create the key file if missing, load it, and attach it to the app."""
    path = app.config["SIGNING_KEY_PATH"]
    create_key(path)
    app.extensions[EXTENSION] = load_key(path)


def current_key() -> SigningKey:
    return current_app.extensions[EXTENSION]
