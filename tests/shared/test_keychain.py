"""deniable.keychain: the exact signed bytes, and following a chain only when every link holds."""

from __future__ import annotations

import base64
import copy

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deniable import keychain
from deniable.errors import SignatureError


def raw(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def make_chain(count: int) -> tuple[list[Ed25519PrivateKey], list[dict]]:
    """``count`` + 1 keys (fixed seeds) and the chain of rotations between them."""
    keys = [Ed25519PrivateKey.from_private_bytes(bytes([n + 1]) * 32) for n in range(count + 1)]
    chain = []
    for sequence in range(1, count + 1):
        old, new = keys[sequence - 1], keys[sequence]
        message = keychain.rotation_message(sequence, raw(old), raw(new))
        chain.append(
            keychain.link_document(
                sequence, raw(old), raw(new), old.sign(message), new.sign(message)
            )
        )
    return keys, chain


def document(key: Ed25519PrivateKey, chain: list[dict]) -> dict:
    return {
        "algorithm": "Ed25519",
        "public_key": keychain.encode(raw(key)),
        "key_id": keychain.key_id(raw(key)),
        "sequence": len(chain),
        "chain": chain,
    }


def test_the_signed_bytes_are_exactly_four_ascii_lines():
    previous, following = bytes(32), bytes([255]) * 32
    assert keychain.rotation_message(3, previous, following) == (
        b"deniable-key-rotation/1\nsequence:3\n"
        b"previous:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
        b"next://////////////////////////////////////////8=\n"
    )
    with pytest.raises(ValueError):
        keychain.rotation_message(0, previous, following)


def test_a_device_follows_every_link_from_its_pin():
    keys, chain = make_chain(3)
    pin = keychain.Pin(public_key=raw(keys[1]), sequence=1)
    followed = keychain.follow_chain(pin, document(keys[3], chain))
    assert followed.public_key == raw(keys[3]) and followed.sequence == 3
    assert followed.retired == (keychain.key_id(raw(keys[1])), keychain.key_id(raw(keys[2])))
    # Already at the served key: nothing changes.
    assert keychain.follow_chain(followed, document(keys[3], chain)) == followed
    # A pin given from outside (no sequence known) follows too.
    assert (
        keychain.follow_chain(
            keychain.Pin(public_key=raw(keys[0])), document(keys[3], chain)
        ).sequence
        == 3
    )


def forge_signature(chain: list[dict]) -> None:
    signature = bytearray(base64.b64decode(chain[1]["signature"]))
    signature[5] ^= 0x40
    chain[1]["signature"] = base64.b64encode(bytes(signature)).decode()


def forge_endorsement(chain: list[dict]) -> None:
    chain[1]["endorsement"] = chain[0]["endorsement"]


def substitute_key(chain: list[dict]) -> None:
    # An attacker's key at the end, "signed" with its own key: not the previous key's signature.
    attacker = Ed25519PrivateKey.from_private_bytes(bytes([99]) * 32)
    message = keychain.rotation_message(
        2, base64.b64decode(chain[1]["previous_public_key"]), raw(attacker)
    )
    chain[1].update(
        keychain.link_document(
            2,
            base64.b64decode(chain[1]["previous_public_key"]),
            raw(attacker),
            attacker.sign(message),
            attacker.sign(message),
        )
    )


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (forge_signature, "not signed by the previous key"),
        (forge_endorsement, "not endorsed by the new key"),
        (lambda c: c.reverse(), "out of order"),
        (lambda c: c.__setitem__(1, {**c[1], "sequence": 3}), "out of order"),
        (lambda c: c.__delitem__(0), "out of order"),
        (lambda c: c[1].update(key_id="0" * 16), "key id does not match"),
        (lambda c: c[1].update(extra=1), "exactly the fields"),
    ],
)
def test_a_forged_truncated_or_reordered_chain_is_refused(tamper, message):
    keys, chain = make_chain(2)
    tampered = copy.deepcopy(chain)
    tamper(tampered)
    pin = keychain.Pin(public_key=raw(keys[0]), sequence=0)
    served = document(keys[2], tampered)
    with pytest.raises(SignatureError, match=message):
        keychain.follow_chain(pin, served)


def test_an_attackers_key_at_the_end_is_refused():
    keys, chain = make_chain(2)
    substitute_key(chain)
    attacker = Ed25519PrivateKey.from_private_bytes(bytes([99]) * 32)
    with pytest.raises(SignatureError, match="not signed by the previous key"):
        keychain.follow_chain(
            keychain.Pin(public_key=raw(keys[0]), sequence=0), document(attacker, chain)
        )


def test_a_chain_missing_the_pinned_key_and_a_rollback_are_refused():
    keys, chain = make_chain(2)
    # Truncated: the device's key (0) is not the start of any served link.
    with pytest.raises(SignatureError, match="does not start from the pinned key"):
        keychain.follow_chain(
            keychain.Pin(public_key=raw(keys[0]), sequence=0),
            document(keys[2], chain[1:] and [{**chain[1], "sequence": 1}]),
        )
    # Rollback: pinned at key 2, the server offers key 1 (with the chain up to it).
    pinned = keychain.Pin(
        public_key=raw(keys[2]),
        sequence=2,
        retired=(keychain.key_id(raw(keys[0])), keychain.key_id(raw(keys[1]))),
    )
    with pytest.raises(SignatureError, match="rollback"):
        keychain.follow_chain(pinned, document(keys[1], chain[:1]))
    # A chain that does not end at the served key is inconsistent.
    with pytest.raises(SignatureError, match="does not end at the served key"):
        keychain.follow_chain(pinned, document(keys[1], chain))


def test_a_key_met_again_is_refused():
    keys, chain = make_chain(1)
    back = keys[0]
    message = keychain.rotation_message(2, raw(keys[1]), raw(back))
    chain.append(
        keychain.link_document(
            2, raw(keys[1]), raw(back), keys[1].sign(message), back.sign(message)
        )
    )
    pin = keychain.Pin(
        public_key=raw(keys[1]), sequence=1, retired=(keychain.key_id(raw(keys[0])),)
    )
    with pytest.raises(SignatureError, match="used before"):
        keychain.follow_chain(pin, document(back, chain))
