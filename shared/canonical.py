"""Canonical bytes of a survey definition: what the aggregator signs and every client verifies.

Format ``deniable.survey/2`` uses the JSON Canonicalization Scheme (RFC 8785,
JCS): keys sorted by their UTF-16 code units, no whitespace, strings escaped
minimally and otherwise kept as UTF-8, numbers written as ECMAScript's
``Number.prototype.toString`` writes them (shortest round-trip form, ``1`` not
``1.0``, ``1e+21``).  Any language with a JCS library (or ``JSON.stringify``
plus sorted keys, in JavaScript) produces the same bytes from the parsed
document, so a client never needs Python's float ``repr``.  The ``rfc8785``
package implements it here (docs/protocol.md §2).

Format ``deniable.survey/1`` keeps its historical bytes (Python's
``json.dumps`` with sorted keys and ``repr`` floats) so that surveys stored
before /2 keep verifying under the signatures devices have already seen.
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785

from .errors import InvalidJson, InvalidSurvey

__all__ = ["jcs", "legacy_bytes", "loads"]


# Integers JSON numbers can hold exactly as doubles (what a JavaScript parser keeps).
SAFE_INTEGER = 2**53 - 1


def _as_doubles(value: Any) -> Any:
    """``value`` with every integer beyond ±(2**53 - 1) as the double JSON's number model gives.

    Why: JCS writes a double such as 1e16 as ``10000000000000000``, which Python's parser
    reads back as an int, and rfc8785 refuses ints beyond 2**53 - 1; JavaScript reads the
    same text as the double it was.  Turned back into that double, it gets the same bytes.
    """
    if isinstance(value, dict):
        return {key: _as_doubles(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_doubles(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > SAFE_INTEGER:
        return float(value)
    return value


def jcs(document: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON-compatible document (InvalidSurvey if not)."""
    try:
        return rfc8785.dumps(_as_doubles(document))
    except (rfc8785.CanonicalizationError, TypeError, ValueError, OverflowError) as error:
        raise InvalidSurvey(f"survey: cannot be canonicalized ({error})") from None


def loads(text: str | bytes) -> Any:
    """A survey or key document parsed by the one strict reader (:mod:`deniable.wire.strict_json`).

    An object with a member name twice is refused with InvalidSurvey (reason
    ``duplicate-member``).  Why: parsers disagree on which duplicate wins (Python's json and
    JavaScript's JSON.parse keep the last, others the first), so one signed text could mean
    two definitions; JCS (RFC 8785 §3.1, I-JSON) has no duplicates (docs/protocol.md §2.2).
    Anything else the strict reader refuses (not JSON, not UTF-8, NaN, a lone surrogate,
    absurd nesting) is an InvalidJson, a ValueError.
    """
    from .wire.strict_json import loads as strict_loads

    try:
        return strict_loads(text, "survey document")
    except InvalidJson as error:
        if error.reason != "duplicate-member":
            raise
        raise InvalidSurvey(str(error), reason="duplicate-member") from None


def legacy_bytes(document: Any) -> bytes:
    """The ``deniable.survey/1`` canonical bytes (Python json.dumps, sorted keys)."""
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")
