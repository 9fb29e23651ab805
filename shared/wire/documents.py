"""The two signed documents an aggregator serves: a survey's envelope and its key document.

Both are *checked* by :mod:`deniable.keychain` (the signature over the definition's
canonical bytes, the rotation chain, the signed encryption key), which owns that logic;
these classes give each document one typed shape, one parse and one encode, and hand the
document exactly as served to the keychain, so nothing is verified over a re-encoding.

``GET /api/v1/surveys/{id}`` (docs/protocol.md §2)::

    {"id", "status": "open" | "closed", "results_public", "require_enrolment",
     "created_at", "closed_at", "definition", "signature", "key_id"}

``GET /api/v1/key`` (docs/key-rotation.md)::

    {"algorithm": "Ed25519", "public_key", "key_id", "sequence", "chain",
     "encryption_key"}              (encryption_key: only where sealed reports are taken)

Unknown members are ignored (protocol.md §6.2), so a later aggregator may add some.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import SignatureError, TransportError

__all__ = ["KeyDocument", "STATUSES", "SurveyEnvelope"]

STATUSES = ("open", "closed")


def _json_bytes(document: Mapping[str, Any]) -> bytes:
    # Every answer of the aggregator: json.dumps defaults but UTF-8 (api/common.py's json_text).
    return json.dumps(document, ensure_ascii=False, allow_nan=False).encode("utf-8")


@dataclass(frozen=True, kw_only=True)
class SurveyEnvelope:
    """A survey document as served: the signed definition and its unsigned state.

    ``document`` is the parsed document as received, which :meth:`verify` hands to
    :func:`deniable.keychain.verify_document` (the signature covers ``definition`` only).
    """

    id: str
    status: str
    results_public: bool = True
    require_enrolment: bool = False
    created_at: str | None = None
    closed_at: str | None = None
    definition: Mapping[str, Any] = field(default_factory=dict, compare=False)
    signature: str = ""
    key_id: str | None = None
    document: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "results_public": self.results_public,
            "require_enrolment": self.require_enrolment,
            "created_at": self.created_at,
            "closed_at": self.closed_at,
            "definition": dict(self.definition),
            "signature": self.signature,
            "key_id": self.key_id,
        }

    def encode(self) -> bytes:
        return _json_bytes(self.to_dict())

    @classmethod
    def parse(cls, document: object, survey_id: str) -> SurveyEnvelope:
        """The unsigned members checked (TransportError: the aggregator answered nonsense);
        the signed ones are left to :meth:`verify`.  ``status`` must be open or closed and
        ``require_enrolment`` a boolean (absent: false); ``id`` defaults to ``survey_id``."""
        if not isinstance(document, dict):
            raise SignatureError(f"survey {survey_id!r}: the survey document is not an object")
        status = document.get("status")
        if status not in STATUSES:
            raise TransportError(f"survey {survey_id!r}: unknown status {status!r}")
        require_enrolment = document.get("require_enrolment", False)
        if not isinstance(require_enrolment, bool):
            raise TransportError(f"survey {survey_id!r}: require_enrolment is not a boolean")
        results_public = document.get("results_public", True)
        served_id, key_id = document.get("id", survey_id), document.get("key_id")
        definition, signature = document.get("definition"), document.get("signature")
        return cls(
            id=served_id if isinstance(served_id, str) else survey_id,
            status=status,
            results_public=results_public if isinstance(results_public, bool) else True,
            require_enrolment=require_enrolment,
            created_at=_text_or_none(document.get("created_at")),
            closed_at=_text_or_none(document.get("closed_at")),
            definition=definition if isinstance(definition, dict) else {},
            signature=signature if isinstance(signature, str) else "",
            key_id=key_id if isinstance(key_id, str) else None,
            document=document,
        )

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    def verify(self, survey_id: str, public_key: bytes) -> Any:
        """The validated :class:`deniable.survey.Survey`, verified under ``public_key``
        (:func:`deniable.keychain.verify_document`, over the document as served)."""
        from ..keychain import verify_document

        return verify_document(
            self.document if self.document is not None else self.to_dict(), survey_id, public_key
        )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, kw_only=True)
class KeyDocument:
    """The aggregator's key document: its current Ed25519 key, the rotation chain to it and,
    where it takes sealed reports, its signed X25519 encryption key.

    :meth:`follow` and :meth:`encryption_public` are :func:`deniable.keychain.follow_chain`
    and :func:`deniable.keychain.verify_encryption_key` over the document as served.
    """

    public_key: bytes = field(repr=False)
    sequence: int | None
    chain: tuple[Mapping[str, Any], ...] = field(default=(), compare=False, repr=False)
    encryption_key: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    document: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def key_id(self) -> str:
        from ..keychain import key_id

        return key_id(self.public_key)

    def to_dict(self) -> dict[str, Any]:
        from ..keychain import ALGORITHM, encode

        document: dict[str, Any] = {
            "algorithm": ALGORITHM,
            "public_key": encode(self.public_key),
            "key_id": self.key_id,
            "sequence": self.sequence,
            "chain": [dict(link) for link in self.chain],
        }
        if self.encryption_key is not None:
            document["encryption_key"] = dict(self.encryption_key)
        return document

    def encode(self) -> bytes:
        return _json_bytes(self.to_dict())

    @classmethod
    def parse(cls, document: object) -> KeyDocument:
        """An object whose ``public_key`` is 32 bytes of canonical base64 (SignatureError
        otherwise); ``sequence`` is kept if it is an integer.  The chain and the encryption
        key are checked when followed (:meth:`follow`, :meth:`encryption_public`)."""
        from ..keychain import decode_public_key

        if not isinstance(document, dict):
            raise SignatureError("the aggregator's key document is not an object")
        public = decode_public_key(document.get("public_key"), "aggregator key")
        sequence = document.get("sequence")
        chain = document.get("chain")
        encryption = document.get("encryption_key")
        return cls(
            public_key=public,
            sequence=sequence
            if isinstance(sequence, int) and not isinstance(sequence, bool)
            else None,
            chain=tuple(chain) if isinstance(chain, list) else (),
            encryption_key=encryption if isinstance(encryption, Mapping) else None,
            document=document,
        )

    def _served(self) -> Mapping[str, Any]:
        return self.document if self.document is not None else self.to_dict()

    def follow(self, pin: Any) -> Any:
        """The pin after this document (:func:`deniable.keychain.follow_chain`)."""
        from ..keychain import follow_chain

        return follow_chain(pin, self._served())

    def encryption_public(self, signing_public: bytes) -> bytes:
        """The encryption key's 32 raw bytes, verified under ``signing_public``."""
        from ..keychain import verify_encryption_key

        return verify_encryption_key(self._served(), signing_public)
