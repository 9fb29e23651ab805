"""Memoized permanent responses for longitudinal questions (RAPPOR §3).

The permanent randomized response for (longitudinal key, parameters, true
value) is *derived*, not stored: a :class:`HmacSource` keyed by the device
secret produces the random stream ``HMAC-SHA256(k, info || counter)`` for
counter = 0, 1, 2, ..., and :meth:`LongitudinalGRR.permanent_response` draws
from it.  The same device therefore gives the same permanent response to the
same question about the same value every time, across surveys and restarts,
while anyone without the secret sees outputs indistinguishable from fresh
randomness.  Each report then randomizes the permanent response again with
the CSPRNG (instantaneous layer), so reports do not repeat verbatim.

``info`` binds the key, the domain labels, both ε and the value, so a survey
that reuses a key with other options or another ε gets an independent
permanent response (and is charged again by the ledger).

Guarantees (docs/longitudinal.md): all reports about one value together reveal
at most the permanent ε; one report reveals at most ``report_epsilon``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

from deniable.errors import InvalidParameter
from deniable.randomness import ByteStreamSource

if TYPE_CHECKING:
    import hmac

    from deniable.mechanisms.longitudinal import LongitudinalGRR
    from deniable.survey import Question

_PERMANENT = b"deniable.client.memo/permanent/1"
_TAG = b"deniable.client.memo/tag/1"

__all__ = ["HmacSource", "is_longitudinal", "memo_tag", "permanent_response"]


def _mac(key: bytes, message: bytes) -> hmac.HMAC:
    """HMAC-SHA256 of ``message`` under ``key``.

    hashlib (it loads OpenSSL) is imported by the first use, not with ``import
    deniable.client``.
    """
    import hashlib
    import hmac

    return hmac.new(key, message, hashlib.sha256)


class HmacSource(ByteStreamSource):
    """A deterministic RandomSource: HMAC-SHA256 in counter mode under a secret key.

    ``secure`` is True in the sense that matters here: without the key the
    stream cannot be predicted or told apart from random bytes (HMAC is a PRF).
    Every draw is derived from ``token_bytes`` exactly as for the CSPRNG.
    """

    def __init__(self, key: bytes, info: bytes) -> None:
        if not isinstance(key, bytes) or len(key) < 16:
            raise InvalidParameter("HmacSource needs a key of at least 16 bytes")
        self._mac = _mac(key, info)
        self._counter = 0
        self._buffer = b""

    def token_bytes(self, count: int) -> bytes:
        while len(self._buffer) < count:
            mac = self._mac.copy()
            mac.update(self._counter.to_bytes(8, "big"))
            self._counter += 1
            self._buffer += mac.digest()
        out, self._buffer = self._buffer[:count], self._buffer[count:]
        return out


def is_longitudinal(question: Question) -> bool:
    # Imported here, not with the module (``import deniable.client`` loads no mechanism);
    # a Question exists only once deniable.survey has loaded it, so this costs a lookup.
    from deniable.mechanisms.longitudinal import LongitudinalGRR

    return question.longitudinal is not None and isinstance(question.oracle, LongitudinalGRR)


def _info(question: Question, value: int) -> bytes:
    assert is_longitudinal(question) and question.longitudinal is not None
    oracle = cast("LongitudinalGRR", question.oracle)
    return json.dumps(
        [question.longitudinal.key, question.labels, oracle.epsilon,
         oracle.instantaneous_epsilon, question.labels[value]],
        separators=(",", ":"), ensure_ascii=False,
    ).encode("utf-8")  # fmt: skip


def _subkey(secret: bytes, purpose: bytes) -> bytes:
    return _mac(secret, purpose).digest()


def permanent_response(secret: bytes, question: Question, value: int) -> int:
    """The memoized permanent response for a checked true value (category index)."""
    if not is_longitudinal(question):
        raise InvalidParameter(f"question {question.id!r} is not longitudinal")
    oracle = cast("LongitudinalGRR", question.oracle)
    source = HmacSource(_subkey(secret, _PERMANENT), _info(question, value))
    return oracle.permanent_response(value, rng=source)


def memo_tag(secret: bytes, question: Question, value: int) -> str:
    """An opaque tag for (key, parameters, value): what the ledger remembers, not the value."""
    return _mac(_subkey(secret, _TAG), _info(question, value)).hexdigest()
