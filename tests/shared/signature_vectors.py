"""The vectors' signing key, signed survey documents and key rotation chains (docs/protocol.md
§7, docs/key-rotation.md "Verification").

Part of ``python -m tests.shared.generate_vectors`` (``public_key``, ``documents[]``,
``key_rotation``); kept apart so that file stays readable.  The keys come from fixed seeds.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deniable.survey import Survey

__all__ = ["document_vectors", "public_key_b64", "rotation_vectors", "signing_key"]

SIGNING_SEED = hashlib.sha256(b"deniable protocol vectors signing key").digest()


def signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(SIGNING_SEED)


def public_key_b64() -> str:
    raw = (
        signing_key()
        .public_key()
        .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )
    return base64.b64encode(raw).decode()


def document_vectors(demo: dict[str, Any]) -> list[dict[str, Any]]:
    """Survey documents as served (JSON text) and what a client pinned to ``public_key`` does.

    ``code`` is null for a document to accept, else the reason of the refusal (§7): a
    SignatureError's (``key-id``, ``signature``, ``id-mismatch``) or an InvalidSurvey's.
    """
    key = signing_key()
    canonical = Survey.from_dict(demo, resolved=True).canonical_bytes()
    signature = key.sign(canonical)
    other_key = hashlib.sha256(b"another key").hexdigest()[:16]
    envelope = {
        "id": demo["id"],
        "status": "open",
        "results_public": True,
        "require_enrolment": False,
        "created_at": "2026-01-01T00:00:00Z",
        "closed_at": None,
        "definition": demo,
        "signature": base64.b64encode(signature).decode(),
        "key_id": key_id_of_vectors(),
    }
    text = json.dumps(envelope, ensure_ascii=False)

    def edited(**changes: Any) -> str:
        return json.dumps({**envelope, **changes}, ensure_ascii=False)

    title = json.dumps(demo["title"], ensure_ascii=False)
    assert text.count(f'"title": {title}') == 1
    keep = demo["questions"][0]["parameters"]["keep"]
    retitled = dict(demo, title="Workplace survey (forged)")
    cases = [
        ("the demo document", demo["id"], text, None),
        (
            "unknown envelope members are ignored",
            demo["id"],
            edited(cache="hit", extra={"a": 1}),
            None,
        ),
        (
            "no key_id: verified under the pin",
            demo["id"],
            json.dumps({k: v for k, v in envelope.items() if k != "key_id"}),
            None,
        ),
        (
            "key_id names a key the pin's chain does not lead to",
            demo["id"],
            edited(key_id=other_key),
            "key-id",
        ),
        ("signature over another definition", demo["id"], edited(definition=retitled), "signature"),
        (
            "signature without its padding",
            demo["id"],
            edited(signature=envelope["signature"].rstrip("=")),
            "signature",
        ),
        (
            "signature of 63 bytes",
            demo["id"],
            edited(signature=base64.b64encode(signature[:63]).decode()),
            "signature",
        ),
        (
            "signature over the definition's bytes as sent, not JCS",
            demo["id"],
            edited(signature=base64.b64encode(key.sign(json.dumps(demo).encode())).decode()),
            "signature",
        ),
        ("another survey than the one asked for", "other-survey", text, "id-mismatch"),
        ("the envelope names another survey", demo["id"], edited(id="other-survey"), "id-mismatch"),
        # A parser that keeps the last of two members would verify the signed title and show
        # it, another would show the first: refused whatever the parser.
        (
            "a member twice in the definition (the signed one last)",
            demo["id"],
            text.replace(f'"title": {title}', f'"title": "Forged", "title": {title}'),
            "duplicate-member",
        ),
        (
            "a parameter twice with the same value",
            demo["id"],
            text.replace(f'"keep": {keep}', f'"keep": {keep}, "keep": {keep}', 1),
            "duplicate-member",
        ),
        (
            "a member twice in the envelope",
            demo["id"],
            text.replace('"status": "open"', '"status": "closed", "status": "open"'),
            "duplicate-member",
        ),
    ]
    return [{"name": n, "survey_id": sid, "text": t, "code": c} for n, sid, t, c in cases]


def key_id_of_vectors() -> str:
    return hashlib.sha256(base64.b64decode(public_key_b64())).hexdigest()[:16]


def rotation_keys() -> list[Ed25519PrivateKey]:
    return [
        Ed25519PrivateKey.from_private_bytes(
            hashlib.sha256(f"deniable rotation vectors key {i}".encode()).digest()
        )
        for i in range(4)
    ]


def raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def rotation_vectors() -> dict[str, Any]:
    """Key documents and pins (docs/key-rotation.md, "Verification") with the expected new pin.

    ``expect`` is the new pin ({public_key, sequence, retired}) or null for a refusal (the
    pin is kept).  Keys A, B, C rotate A -> B -> C; D is a stranger.
    """
    from deniable.keychain import encode, key_id, link_document, rotation_message

    keys = rotation_keys()
    a, b, c, d = (raw(k) for k in keys)

    def link(sequence: int, old: int, new: int, *, signer: int | None = None) -> dict[str, Any]:
        previous, following = raw(keys[old]), raw(keys[new])
        message = rotation_message(sequence, previous, following)
        return link_document(
            sequence,
            previous,
            following,
            keys[old if signer is None else signer].sign(message),
            keys[new].sign(message),
        )

    def document(current: bytes, chain: list[dict[str, Any]], **changes: Any) -> dict[str, Any]:
        return {
            "algorithm": "Ed25519",
            "public_key": encode(current),
            "key_id": key_id(current),
            "sequence": len(chain),
            "chain": chain,
            **changes,
        }

    def pin(key: bytes, sequence: int | None, *retired: bytes) -> dict[str, Any]:
        return {
            "public_key": encode(key),
            "sequence": sequence,
            "retired": [key_id(k) for k in retired],
        }

    chain = [link(1, 0, 1), link(2, 1, 2)]
    served = document(c, chain)
    forged = [chain[0], {**chain[1], "signature": link(2, 1, 2, signer=3)["signature"]}]
    unendorsed = [chain[0], {**chain[1], "endorsement": chain[0]["endorsement"]}]
    loop = [link(1, 0, 1), link(2, 1, 0)]
    extra = [chain[0], {**chain[1], "note": "x"}]
    cases = [
        ("two rotations from the first key", pin(a, 0), served, pin(c, 2, a, b)),
        ("one rotation from the second key", pin(b, 1), served, pin(c, 2, b)),
        ("a pin given from outside (sequence unknown)", pin(a, None), served, pin(c, 2, a, b)),
        ("unchanged key", pin(c, 2, a, b), served, pin(c, 2, a, b)),
        ("unchanged key, sequence unknown: it stays unknown", pin(c, None), served, pin(c, None)),
        ("unchanged key served at another sequence", pin(c, 1), served, None),
        (
            "a truncated chain (renumbered)",
            pin(a, 0),
            document(c, [{**chain[1], "sequence": 1}]),
            None,
        ),
        ("a chain not starting from the pin (a stranger's key)", pin(d, 0), served, None),
        ("a rollback to a retired key", pin(c, 2, a, b), document(b, chain[:1]), None),
        ("a link signed by another key", pin(a, 0), document(c, forged), None),
        ("a link not endorsed by its new key", pin(a, 0), document(c, unendorsed), None),
        ("a loop back to a retired key", pin(b, 1, a), document(a, loop), None),
        ("key_id not the served key's", pin(a, 0), {**served, "key_id": key_id(d)}, None),
        ("a link with an unknown member", pin(a, 0), document(c, extra), None),
        ("the sequence not the number of links", pin(a, 0), {**served, "sequence": 3}, None),
        ("not Ed25519", pin(a, 0), {**served, "algorithm": "Ed448"}, None),
        (
            "a public key in base64 without padding",
            pin(a, 0),
            {**served, "public_key": encode(c).rstrip("=")},
            None,
        ),
    ]
    return {
        "cases": [{"name": n, "pin": p, "document": doc, "expect": e} for n, p, doc, e in cases]
    }
