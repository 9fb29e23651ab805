"""The aggregator's X25519 encryption key: created with the signing key, published signed,
rotated with it, and able to open what was sealed to a recently retired key."""

from __future__ import annotations

import json
import os
import stat

import pytest

from deniable import keychain, sealing
from deniable.aggregator import signing
from deniable.aggregator.settings import SettingsError
from deniable.errors import SealingError, SignatureError


@pytest.fixture
def key_path(tmp_path):
    path = tmp_path / "signing_key.pem"
    signing.create_key(path)
    return path


def _seal(document, unit="q", body=b"report"):
    public = keychain.verify_encryption_key(
        document, keychain.decode_public_key(document["public_key"], "key")
    )
    return sealing.seal(public, survey_id="s", unit=unit, plaintext=body, size=16)


def test_created_beside_the_signing_key_private_and_published_signed(key_path):
    path = signing.encryption_key_path(key_path)
    assert path.name == "signing_key.encryption.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = signing.load_key(key_path)
    document = key.public_document()
    member = document["encryption_key"]
    assert member["algorithm"] == "X25519" and member["suite"] == sealing.SUITE_NAME
    assert member["key_id"] == key.encryption.key_id
    raw = keychain.verify_encryption_key(document, key.public_bytes)
    assert raw == key.encryption.public_bytes
    blob = _seal(document)
    assert key.encryption.open_sealed(survey_id="s", unit="q", sealed=blob, size=16) == b"report"


def test_a_deployment_from_before_sealing_gains_the_key_at_its_next_start(key_path):
    signing.encryption_key_path(key_path).unlink()
    assert "encryption_key" not in signing.load_key(key_path).public_document()
    assert not signing.create_key(key_path)  # the signing key is kept...
    assert signing.load_key(key_path).encryption is not None  # ...and the encryption key made


def test_a_substituted_key_is_refused(key_path, tmp_path):
    """A relay (or anyone) that swaps in its own key cannot sign it with the aggregator's."""
    document = signing.load_key(key_path).public_document()
    other = tmp_path / "other.pem"
    signing.create_key(other)
    forged = signing.load_key(other).public_document()["encryption_key"]
    with pytest.raises(SignatureError, match="not signed"):
        keychain.verify_encryption_key(
            {**document, "encryption_key": forged},
            keychain.decode_public_key(document["public_key"], "k"),
        )
    swapped = {
        **document["encryption_key"],
        "public_key": forged["public_key"],
        "key_id": forged["key_id"],
    }
    with pytest.raises(SignatureError, match="not signed"):
        keychain.verify_encryption_key(
            {**document, "encryption_key": swapped},
            keychain.decode_public_key(document["public_key"], "k"),
        )
    for broken in (
        {},
        {"encryption_key": None},
        {"encryption_key": {**swapped, "extra": 1}},
        {"encryption_key": {**swapped, "key_id": "0" * 16}},
        {"encryption_key": {**swapped, "suite": "other"}},
    ):
        with pytest.raises(SignatureError):
            keychain.verify_encryption_key(broken, b"\0" * 32)


def test_rotation_replaces_it_and_keeps_recent_keys_to_open_held_batches(key_path):
    before = signing.load_key(key_path).public_document()
    held = _seal(before)
    opened = []
    for _ in range(signing.RETIRED_ENCRYPTION_KEYS + 1):
        old, new = signing.rotate_key(key_path)
        document = new.public_document()
        assert (
            document["encryption_key"]["key_id"]
            != old.public_document()["encryption_key"]["key_id"]
        )
        # signed by the new signing key, which the device reaches along the chain
        pin = keychain.follow_chain(keychain.Pin(public_key=old.public_bytes), document)
        keychain.verify_encryption_key(document, pin.public_key)
        try:
            opened.append(new.encryption.open_sealed(survey_id="s", unit="q", sealed=held))
        except SealingError:
            opened.append(None)
    retired = signing.retired_encryption_path(key_path)
    assert stat.S_IMODE(retired.stat().st_mode) == 0o600
    # Opens while the key is among the kept retired ones, then no longer.
    assert opened == [b"report"] * signing.RETIRED_ENCRYPTION_KEYS + [None]


def test_open_refuses_altered_and_foreign_blobs(key_path):
    key = signing.load_key(key_path)
    blob = bytearray(_seal(key.public_document()))
    blob[-1] ^= 1
    with pytest.raises(SealingError):
        key.encryption.open_sealed(survey_id="s", unit="q", sealed=bytes(blob))
    with pytest.raises(SealingError, match="this unit's"):
        key.encryption.open_sealed(survey_id="s", unit="q", sealed=bytes(blob), size=3)


def test_readable_encryption_key_is_refused(key_path):
    signing.encryption_key_path(key_path).chmod(0o644)
    with pytest.raises(SettingsError, match="chmod 600"):
        signing.load_key(key_path)


def test_served_key_document_carries_it(client, app):
    document = client.get("/api/v1/key").get_json()
    raw = keychain.verify_encryption_key(
        document, keychain.decode_public_key(document["public_key"], "key")
    )
    with app.app_context():
        blob = sealing.seal(raw, survey_id="s", unit="", plaintext=b"x", size=4)
        assert signing.open_sealed(survey_id="s", unit="", sealed=blob, size=4) == b"x"
    assert json.dumps(document)  # plain JSON
    assert os.path.exists(signing.encryption_key_path(app.config["SIGNING_KEY_PATH"]))


def test_one_opener_opens_a_batch_sealed_to_the_current_and_a_retired_key(key_path):
    """What a relay batch held across a rotation: each blob opens with whichever key sealed it."""
    held = _seal(signing.load_key(key_path).public_document(), body=b"before")
    _, new = signing.rotate_key(key_path)
    fresh = _seal(new.public_document(), body=b"after")
    open_one = new.encryption.opener(survey_id="s", unit="q", size=16)
    assert [open_one(held), open_one(fresh)] == [b"before", b"after"]
    with pytest.raises(SealingError):  # another unit's blob opens with no key
        open_one(_seal(new.public_document(), unit="r"))
    with pytest.raises(SealingError, match="this unit's"):
        open_one(fresh[:-1])
