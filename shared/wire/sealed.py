"""``deniable.sealed/1``: one respondent's sealed units, as a device posts them to a relay.

docs/protocol.md §10.5 and §11.2.  The body (compact JSON, members in this order)::

    {"format":"deniable.sealed/1","key_id":"<encryption key id>",
     "units":[{"unit":"<question id, or ''>","sealed":"<unpadded base64url>"},...],
     "enrolment_token":"<token>"}        (only for a survey that requires enrolment)

Each ``sealed`` is a blob of :func:`deniable.sealing.seal` in its one canonical spelling
(:func:`deniable.sealing.decode_blob`).  :meth:`SealedSubmission.parse` checks the shape
and, given the survey's unit lengths, the survey's signed terms; the relay's intake
adds what needs its storage (the key, the token).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidReport, PayloadTooLarge, SealingError
from ..sealing import decode_blob, encode_blob

__all__ = ["FORMAT", "SealedSubmission", "SealedUnit"]

FORMAT = "deniable.sealed/1"
_FIELDS = frozenset({"format", "key_id", "units", "enrolment_token"})
_UNIT_FIELDS = frozenset({"unit", "sealed"})
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, kw_only=True)
class SealedUnit:
    """One sealed unit: the question id (or ``""`` for a whole submission) and its blob."""

    unit: str
    sealed: bytes

    def to_dict(self) -> dict[str, str]:
        return {"unit": self.unit, "sealed": encode_blob(self.sealed)}


@dataclass(frozen=True, kw_only=True)
class SealedSubmission:
    """The body a device posts to ``{relay}/api/v1/surveys/{id}/sealed``."""

    key_id: str
    units: tuple[SealedUnit, ...]
    enrolment_token: str | None = None

    def encode(self) -> bytes:
        """Compact ASCII JSON, members in the order format, key_id, units, enrolment_token."""
        document: dict[str, Any] = {
            "format": FORMAT,
            "key_id": self.key_id,
            "units": [unit.to_dict() for unit in self.units],
        }
        if self.enrolment_token is not None:
            document["enrolment_token"] = self.enrolment_token
        return json.dumps(document, separators=(",", ":"), ensure_ascii=True).encode("ascii")

    @classmethod
    def parse(cls, document: object, lengths: Mapping[str, int] | None = None) -> SealedSubmission:
        """A parsed body, strictly; InvalidReport (422), or PayloadTooLarge (413) for a unit
        longer than its fixed sealed length.

        ``lengths`` maps each unit the survey takes to the exact length of its sealed blobs
        (``{"": n}`` for a survey shuffled by whole submissions); with it, a unit the
        survey does not take, more units than it has, and a blob of another length are
        refused (docs/protocol.md §11.2).  Without it, only the shape is checked.
        """
        if not isinstance(document, dict):
            raise InvalidReport("body: must be an object")
        extra = set(document) - _FIELDS
        if extra:
            raise InvalidReport(f"body: unknown field(s) {', '.join(sorted(map(str, extra)))}")
        if document.get("format") != FORMAT:
            raise InvalidReport(f"body: format must be {FORMAT!r}")
        key_id = document.get("key_id")
        if not isinstance(key_id, str) or not _KEY_ID.fullmatch(key_id):
            raise InvalidReport("body: key_id must be the aggregator's encryption key id")
        token = document.get("enrolment_token")
        if not isinstance(token, str | None):  # null: as if absent
            raise InvalidReport("body: enrolment_token must be the token's text")
        units = document.get("units")
        if not isinstance(units, list) or not units:
            raise InvalidReport("body: units must be a non-empty list")
        whole = lengths is not None and set(lengths) == {""}
        if lengths is not None and len(units) > len(lengths):
            raise InvalidReport(
                f"body: one respondent sends at most {len(lengths)} unit(s), got {len(units)}"
            )
        seen: set[str] = set()
        result = []
        for index, item in enumerate(units):
            where = f"units[{index}]"
            if not isinstance(item, dict) or set(item) != _UNIT_FIELDS:
                raise InvalidReport(f"{where}: must have exactly the fields sealed and unit")
            unit = item["unit"]
            if not isinstance(unit, str) or (lengths is not None and unit not in lengths):
                expected = (
                    "'' (this survey shuffles whole submissions)"
                    if whole
                    else "a question id of the survey"
                )
                raise InvalidReport(f"{where}: unit must be {expected}")
            if unit in seen:
                raise InvalidReport(
                    f"{where}: unit {unit!r} appears twice; one respondent sends "
                    "one sealed unit per question"
                )
            seen.add(unit)
            length = None if lengths is None else lengths[unit]
            sealed = _blob(item["sealed"], f"{where}.sealed", length)
            result.append(SealedUnit(unit=unit, sealed=sealed))
        return cls(key_id=key_id, units=tuple(result), enrolment_token=token)

    def with_token(self, token: str | None) -> SealedSubmission:
        """The same units under another enrolment token (the only member that may change)."""
        return SealedSubmission(key_id=self.key_id, units=self.units, enrolment_token=token)


def _blob(text: object, where: str, length: int | None) -> bytes:
    """A unit's bytes: canonical base64url, and exactly ``length`` bytes when given."""
    if not isinstance(text, str) or not text:
        raise InvalidReport(f"{where}: must be a non-empty base64url string")
    if length is not None and len(text) > 2 * length:
        # Checked before decoding: no work for an absurd string.
        raise PayloadTooLarge(f"{where}: larger than this unit's {length} bytes")
    try:
        raw = decode_blob(text)
    except SealingError as error:
        raise InvalidReport(f"{where}: {error}") from None
    if length is None:
        return raw
    if len(raw) > length:
        raise PayloadTooLarge(f"{where}: {len(raw)} bytes, larger than this unit's {length}")
    if len(raw) != length:
        raise InvalidReport(
            f"{where}: {len(raw)} bytes; every sealed unit of this survey's "
            f"unit is {length} bytes (docs/protocol.md §10.3)"
        )
    return raw
