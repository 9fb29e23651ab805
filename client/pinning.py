"""Which aggregator key a device trusts, and how it follows a rotation (docs/key-rotation.md).

A mixin of :class:`deniable.client.SurveyClient`: the pin lives in the device state
(``keys[origin]``: public key, key id, sequence, retired key ids).  The first key is
trusted on first use, or given as ``trusted_key``; every later key only through the
aggregator's signed rotation chain (:func:`deniable.keychain.follow_chain`), never on
first sight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deniable.errors import SignatureError

if TYPE_CHECKING:
    from deniable.keychain import Pin

__all__ = ["KeyPinning", "decode_public_key"]


def _keychain() -> Any:
    """deniable.keychain, imported by the first pin (it imports cryptography), not by
    ``import deniable.client``."""
    from deniable import keychain

    return keychain


def key_id_of(raw: bytes) -> str:
    return _keychain().key_id(raw)


def decode_public_key(text: object, where: str) -> bytes:
    return _keychain().decode_public_key(text, where)


class KeyPinning:
    """Pin handling for a client with ``store``, ``origin``, ``_trusted_key`` and ``_request``."""

    store: Any
    origin: str
    clock: Any
    _trusted_key: bytes | None

    def _stored_pin(self) -> Pin | None:
        """The pin in the state file (one followed from ``trusted_key``, if that is given)."""
        pin = self.store.load().keys.get(self.origin)
        if pin is None:
            return None
        stored = _keychain().Pin(
            public_key=decode_public_key(pin.get("public_key"), "pinned key"),
            sequence=pin.get("sequence"),
            retired=tuple(pin.get("retired", ())),
        )
        if (
            self._trusted_key is not None
            and self._trusted_key != stored.public_key
            and (key_id_of(self._trusted_key) not in stored.retired)
        ):
            return None  # the caller's trusted_key overrides an unrelated pin
        return stored

    def _save_pin(self, pin: Pin, expected: str | None) -> None:
        """Store ``pin``, unless another process changed the pin since it was read."""
        keychain = _keychain()
        with self.store.transaction() as state:
            existing = state.keys.get(self.origin)
            if existing is not None and existing.get("public_key") != expected:
                raise SignatureError(f"aggregator key for {self.origin} changed; refusing")
            state.keys[self.origin] = {
                "algorithm": keychain.ALGORITHM,
                "public_key": keychain.encode(pin.public_key),
                "key_id": pin.key_id,
                "sequence": pin.sequence,
                "retired": list(pin.retired),
                "pinned_at": self.clock(),
            }

    def _key_document(self) -> Any:
        response = self._request("GET", "/api/v1/key")
        if response.status_code != 200:
            raise self._http_error("GET", "/api/v1/key", response)
        from deniable.canonical import loads
        from deniable.errors import InvalidSurvey

        try:  # a member twice could name two keys: refused, as in survey documents
            return loads(response.content)
        except InvalidSurvey as error:
            raise SignatureError(f"key rotation refused: {error}", reason=error.reason) from None
        except ValueError:
            raise SignatureError("key rotation refused: the key document is not JSON") from None

    def _pinned_key(self) -> tuple[bytes, str]:
        stored = self._stored_pin()
        if stored is not None:
            return stored.public_key, stored.key_id
        if self._trusted_key is not None:
            return self._trusted_key, key_id_of(self._trusted_key)
        # Trust on first use: the only time a key is taken without a signature chain.
        document = self._key_document()
        if not isinstance(document, dict):
            raise SignatureError("aggregator key document must be an object")
        served = decode_public_key(document.get("public_key"), "aggregator key")
        keychain = _keychain()
        pin = keychain.follow_chain(keychain.Pin(public_key=served), document)
        pin = keychain.Pin(
            public_key=pin.public_key, sequence=document.get("sequence"), retired=pin.retired
        )
        existing = self.store.load().keys.get(self.origin)
        self._save_pin(pin, None if existing is None else existing.get("public_key"))
        return pin.public_key, pin.key_id

    def follow_rotation(self) -> str:
        """Fetch the key document and follow its chain from the pinned key; the key id now.

        Raises SignatureError (and keeps the old pin) unless the chain leads from the
        pinned key to the served one, link by link (docs/key-rotation.md).
        """
        key, _ = self._pinned_key()
        return self._follow_chain(key, self._key_document()).key_id

    def _follow_chain(self, key: bytes, document: Any) -> Pin:
        """``document``'s chain followed from the pinned ``key``; the pin stored if it moved."""
        stored = self._stored_pin()
        keychain = _keychain()
        pin = stored if stored is not None else keychain.Pin(public_key=key)
        followed = keychain.follow_chain(pin, document)
        if followed != pin or stored is None:
            previous = self.store.load().keys.get(self.origin)
            self._save_pin(followed, None if previous is None else previous.get("public_key"))
        return followed

    def verified_encryption_key(self) -> dict[str, Any]:
        """The aggregator's encryption key member, verified under the (followed) pinned key.

        For relayed surveys (:mod:`deniable.sealing`): fetches the key document, follows
        its rotation chain if the signing key changed (as :meth:`follow_rotation`), and
        checks that the pinned key signed ``encryption_key``; SignatureError otherwise, so
        a relay or mirror cannot have reports sealed to a key of its own.
        """
        key, _ = self._pinned_key()
        keychain = _keychain()
        document = self._key_document()
        if isinstance(document, dict) and document.get("public_key") != keychain.encode(key):
            key = self._follow_chain(key, document).public_key
        keychain.verify_encryption_key(document, key)
        return dict(document["encryption_key"])

    def pinned_key_id(self) -> str | None:
        """The key id this client trusts for its aggregator, if one is pinned."""
        stored = self._stored_pin()
        if stored is not None:
            return stored.key_id
        if self._trusted_key is not None:
            return key_id_of(self._trusted_key)
        return None
