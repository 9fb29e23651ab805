"""``deniable.batch/1``: a relay's batch of sealed units, and the aggregator's acknowledgement.

docs/protocol.md §11.3 and §11.4.  The relay PUTs, under a random batch id::

    {"format":"deniable.batch/1","unit":"<question id, or ''>","sealed":["<base64url>",...]}

A relay that adds dummy reports (the survey's signed ``relay.noise``) also sends
``"real_units": n`` after ``unit``: how many of the blobs are respondents' units,
never which.  Without it every blob counts as real.

and deletes the batch's units only after a 200 or 201 whose body is the aggregator's
acknowledgement of this very batch::

    {"survey":"<id>","batch":"<batch id>","unit":"<unit>","received":n,"stored":s,"dropped":d}

(:meth:`Acknowledgement.acknowledges`); any other answer, a proxy's page for one, is a
failure to retry.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidJson, InvalidReport, PayloadTooLarge, SealingError
from ..sealing import decode_blob, encode_blob
from ..survey_relay import MAX_BATCH_UNITS

__all__ = ["FORMAT", "Acknowledgement", "RelayBatch"]

FORMAT = "deniable.batch/1"
_FIELDS = frozenset({"format", "unit", "sealed"})
_NOISED_FIELDS = _FIELDS | {"real_units"}


@dataclass(frozen=True, kw_only=True)
class RelayBatch:
    """The sealed blobs of one (survey, unit), in the order the relay sends them."""

    unit: str
    sealed: tuple[bytes, ...]
    # How many of ``sealed`` are respondents' units when the relay added dummies; None
    # when it added none (every blob is real).
    real_units: int | None = None

    def __post_init__(self) -> None:
        if self.real_units is not None and not 0 <= self.real_units <= len(self.sealed):
            raise InvalidReport(f"real_units: must be an integer in [0, {len(self.sealed)}]")

    @property
    def real_count(self) -> int:
        """The respondents' units in the batch: ``real_units``, or every blob."""
        return len(self.sealed) if self.real_units is None else self.real_units

    def encode(self) -> bytes:
        """Compact ASCII JSON, members in the order format, unit, [real_units,] sealed."""
        body: dict[str, Any] = {"format": FORMAT, "unit": self.unit}
        if self.real_units is not None:
            body["real_units"] = self.real_units
        body["sealed"] = list(map(encode_blob, self.sealed))
        return json.dumps(body, separators=(",", ":")).encode("ascii")

    @classmethod
    def parse(
        cls, document: object, units: Collection[str] | None = None, min_batch: int = 1
    ) -> RelayBatch:
        """A parsed batch body, strictly: InvalidReport (422), PayloadTooLarge (413) past
        :data:`~deniable.survey_relay.MAX_BATCH_UNITS` blobs.

        ``units`` (the survey's units: its question ids, or ``{""}`` for whole submissions)
        and ``min_batch`` (its signed minimum) check the batch against the survey's terms.
        """
        if not isinstance(document, dict) or set(document) not in (_FIELDS, _NOISED_FIELDS):
            raise InvalidReport(f"body: must be {{format: {FORMAT!r}, unit, [real_units,] sealed}}")
        if document.get("format") != FORMAT:
            raise InvalidReport(f"body: must be {{format: {FORMAT!r}, unit, sealed}}")
        unit, texts = document["unit"], document["sealed"]
        if units is not None and set(units) == {""}:
            if unit != "":
                raise InvalidReport("unit: this survey shuffles whole submissions; unit must be ''")
        elif not isinstance(unit, str) or (units is not None and unit not in units):
            raise InvalidReport("unit: must be a question id of the survey")
        if not isinstance(texts, list):
            raise InvalidReport("sealed: must be a list of base64url strings")
        if len(texts) > MAX_BATCH_UNITS:
            raise PayloadTooLarge(f"sealed: at most {MAX_BATCH_UNITS} blobs per batch")
        real_units = document.get("real_units")
        if "real_units" in document and (
            isinstance(real_units, bool)
            or not isinstance(real_units, int)
            or not 0 <= real_units <= len(texts)
        ):
            raise InvalidReport(f"real_units: must be an integer in [0, {len(texts)}]")
        real = len(texts) if real_units is None else real_units
        if real < min_batch:
            raise InvalidReport(
                f"sealed: {real} respondents' units, fewer than the survey's min_batch "
                f"{min_batch}; a relay never forwards a smaller batch"
            )
        return cls(
            unit=unit,
            sealed=tuple(_blob(text, i) for i, text in enumerate(texts)),
            real_units=real_units,
        )


def _blob(text: object, index: int) -> bytes:
    if not isinstance(text, str):
        raise InvalidReport(f"sealed[{index}]: must be a base64url string")
    try:
        return decode_blob(text)
    except SealingError as error:
        raise InvalidReport(f"sealed[{index}]: {error}") from None


_COUNTS = ("received", "stored", "dropped")


@dataclass(frozen=True, kw_only=True)
class Acknowledgement:
    """The aggregator's answer to a batch it stored (201) or had stored before (200).

    ``received`` counts the batch's blobs, ``stored`` those that added someone, ``dropped``
    those that did not open or held no valid report (docs/protocol.md §11.4).
    """

    survey: str
    batch: str
    unit: str
    received: int
    stored: int
    dropped: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "survey": self.survey,
            "batch": self.batch,
            "unit": self.unit,
            "received": self.received,
            "stored": self.stored,
            "dropped": self.dropped,
        }

    def encode(self) -> bytes:
        """The JSON text the aggregator answers (``json.dumps`` defaults but UTF-8)."""
        return json.dumps(self.to_dict(), ensure_ascii=False).encode("utf-8")

    @classmethod
    def parse(cls, document: object) -> Acknowledgement:
        """A parsed answer: an object with the six members, counts non-negative integers
        (other members ignored, so a later aggregator may add some); InvalidJson otherwise."""
        if not isinstance(document, Mapping):
            raise InvalidJson("acknowledgement: must be an object", reason="not-acknowledgement")
        for name in ("survey", "batch", "unit"):
            if not isinstance(document.get(name), str):
                raise InvalidJson(
                    f"acknowledgement: {name} must be a string", reason="not-acknowledgement"
                )
        for name in _COUNTS:
            value = document.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidJson(
                    f"acknowledgement: {name} must be a non-negative integer",
                    reason="not-acknowledgement",
                )
        return cls(
            survey=document["survey"],
            batch=document["batch"],
            unit=document["unit"],
            received=document["received"],
            stored=document["stored"],
            dropped=document["dropped"],
        )

    def acknowledges(self, survey: str, batch: str, unit: str, received: int) -> bool:
        """Whether this answer is about exactly that batch, with every blob received."""
        return (self.survey, self.batch, self.unit, self.received) == (
            survey,
            batch,
            unit,
            received,
        )
