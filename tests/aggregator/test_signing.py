"""The signing key: 0600 from birth, reused, refused when readable by others, never served."""

from __future__ import annotations

import base64
import hashlib
import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from deniable.aggregator import signing
from deniable.aggregator.settings import SettingsError
from deniable.aggregator.signing import create_key, load_key


def test_key_file_is_private_and_reused(tmp_path):
    path = tmp_path / "keys" / "signing.pem"
    old_umask = os.umask(0)  # Why: the mode must not depend on a permissive umask.
    try:
        assert create_key(path)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first = load_key(path)
    assert not create_key(path)
    assert load_key(path).public_key == first.public_key
    # No temporary left; the encryption key is created beside it, also 0600.
    names = sorted(p.name for p in path.parent.iterdir())
    assert names == ["signing.encryption.pem", "signing.pem"]
    assert stat.S_IMODE((path.parent / "signing.encryption.pem").stat().st_mode) == 0o600


def test_signatures_verify_with_the_public_key(tmp_path):
    create_key(tmp_path / "k.pem")
    key = load_key(tmp_path / "k.pem")
    raw = base64.b64decode(key.public_key)
    assert len(raw) == 32 and key.key_id == hashlib.sha256(raw).hexdigest()[:16]
    Ed25519PublicKey.from_public_bytes(raw).verify(base64.b64decode(key.sign(b"m")), b"m")


def test_readable_key_files_are_refused(tmp_path):
    path = tmp_path / "k.pem"
    create_key(path)
    path.chmod(0o644)
    with pytest.raises(SettingsError, match="chmod 600"):
        load_key(path)


def test_garbage_and_missing_key_files_are_refused(tmp_path):
    path = tmp_path / "k.pem"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(descriptor, b"not a key")
    os.close(descriptor)
    with pytest.raises(SettingsError, match="not a PEM"):
        load_key(path)
    with pytest.raises(SettingsError, match="cannot read"):
        load_key(tmp_path / "missing.pem")


def test_the_private_key_is_never_served(client, app, created_survey):
    pem = open(app.config["SIGNING_KEY_PATH"], "rb").read()
    secret_body = b"".join(pem.splitlines()[1:-1])
    encryption = signing.encryption_key_path(app.config["SIGNING_KEY_PATH"]).read_bytes()
    encryption_body = b"".join(encryption.splitlines()[1:-1])
    key = client.get("/api/v1/key").get_json()
    assert set(key) == {"algorithm", "public_key", "key_id", "sequence", "chain", "encryption_key"}
    assert key["algorithm"] == "Ed25519" and key["chain"] == [] and key["sequence"] == 0
    for url in ("/api/v1/key", "/api/v1/surveys/demo", "/api/v1/surveys", "/api/v1/openapi.json"):
        assert secret_body not in client.get(url).data
        assert encryption_body not in client.get(url).data


def test_a_chain_that_loops_back_to_a_retired_key_is_never_published(tmp_path):
    """A link back to a retired key is refused (hardening): A -> B -> A."""
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from deniable import keychain
    from deniable.aggregator import signing
    from deniable.aggregator.settings import SettingsError

    def raw(key: Ed25519PrivateKey) -> bytes:
        return key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    first, second = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    links = []
    for sequence, (old, new) in enumerate([(first, second), (second, first)], start=1):
        message = keychain.rotation_message(sequence, raw(old), raw(new))
        links.append(
            keychain.link_document(
                sequence, raw(old), raw(new), old.sign(message), new.sign(message)
            )
        )
    path = tmp_path / "signing_key.pem"
    pem = first.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    path.chmod(0o600)
    signing.chain_path(path).write_text(json.dumps({"chain": links}))
    with pytest.raises(SettingsError, match="loop"):
        signing.load_key(path)
    signing.chain_path(path).write_text(json.dumps({"chain": links[:1]}))
    path.write_bytes(
        second.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    assert signing.load_key(path).public_document()["sequence"] == 1  # no loop: served
