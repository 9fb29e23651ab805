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
permanent response.  The thresholds are bound through ε when they are the ones
this code derives from ε, and explicitly when a survey signs others
(``Question.probabilities``, accepted within the declared ε: docs/protocol.md §2.3).

The ledger charges by *memo family*, everything in ``info`` but the value
(:func:`family_tag`): a longitudinal question costs its permanent ε for the
first d answers of its family (d = number of values) and nothing after, since
at most d permanent responses exist.  That bounds the true loss, ε times the
distinct values answered, and unlike a charge per new value it does not depend
on the answers, so neither do the budget's refusals.

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
_FAMILY = b"deniable.client.memo/family/2"

__all__ = ["HmacSource", "family_tag", "is_longitudinal", "permanent_response"]


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


def _info(question: Question, value: int | None) -> bytes:
    """The memo's info: the family's, and the value's label unless ``value`` is None."""
    assert is_longitudinal(question) and question.longitudinal is not None
    oracle = cast("LongitudinalGRR", question.oracle)
    family = [
        question.longitudinal.key,
        question.labels,
        oracle.epsilon,
        oracle.instantaneous_epsilon,
    ]
    if question.probabilities:
        # Signed thresholds other than the ones derived from ε shape the permanent response
        # too (docs/protocol.md §5.4); a survey with them is another family, charged again.
        family.append(dict(sorted(question.probabilities.items())))
    return json.dumps(
        family if value is None else [*family, question.labels[value]],
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")


def _subkey(secret: bytes, purpose: bytes) -> bytes:
    return _mac(secret, purpose).digest()


def permanent_response(secret: bytes, question: Question, value: int) -> int:
    """The memoized permanent response for a checked true value (category index)."""
    if not is_longitudinal(question):
        raise InvalidParameter(f"question {question.id!r} is not longitudinal")
    oracle = cast("LongitudinalGRR", question.oracle)
    source = HmacSource(_subkey(secret, _PERMANENT), _info(question, value))
    return oracle.permanent_response(value, rng=source)


def family_tag(secret: bytes, question: Question) -> str:
    """An opaque tag for the question's memo family (key, labels, both ε): never a value."""
    if not is_longitudinal(question):
        raise InvalidParameter(f"question {question.id!r} is not longitudinal")
    return _mac(_subkey(secret, _FAMILY), _info(question, None)).hexdigest()
