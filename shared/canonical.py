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

from .errors import InvalidSurvey

__all__ = ["jcs", "legacy_bytes"]


def jcs(document: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON-compatible document (InvalidSurvey if not)."""
    try:
        return rfc8785.dumps(document)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as error:
        raise InvalidSurvey(f"survey: cannot be canonicalized ({error})") from None


def legacy_bytes(document: Any) -> bytes:
    """The ``deniable.survey/1`` canonical bytes (Python json.dumps, sorted keys)."""
    return json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")
