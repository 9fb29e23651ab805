"""What a relay tells the aggregator it holds for one survey (docs/protocol.md §11.9).

The answer to the aggregator's signed held-count request (:mod:`deniable.relay_flush`)::

    {"format": "deniable.relay-held/1", "survey": "<id>", "waiting": <respondents>,
     "min_batch": <n>, "as_of": "<ISO 8601 UTC>", "refresh_seconds": <s>}

``waiting`` counts respondents whose answers wait for a batch: the most units held
for any one unit of the survey (each respondent sends exactly one unit per unit), never a
dummy (the relay draws those only when it forms a batch).  It is a snapshot taken at
``as_of`` and renewed at most every ``refresh_seconds``, whoever asks and however often:
a count that followed every arrival would let the aggregator, which the relay protects
respondents from, time each one (docs/threat-model.md §5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import InvalidReport

__all__ = ["HELD_FORMAT", "HeldCount"]

HELD_FORMAT = "deniable.relay-held/1"


@dataclass(frozen=True, kw_only=True)
class HeldCount:
    """A relay's snapshot of the respondents whose answers it holds for one survey."""

    survey: str
    waiting: int
    min_batch: int
    as_of: str
    refresh_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": HELD_FORMAT,
            "survey": self.survey,
            "waiting": self.waiting,
            "min_batch": self.min_batch,
            "as_of": self.as_of,
            "refresh_seconds": self.refresh_seconds,
        }

    @classmethod
    def from_dict(cls, document: object) -> HeldCount:
        """The document's count, checked (InvalidReport names the first bad member)."""
        members = {"format", "survey", "waiting", "min_batch", "as_of", "refresh_seconds"}
        if not isinstance(document, Mapping) or set(document) != members:
            raise InvalidReport(f"held count: must have exactly the members {sorted(members)}")
        if document["format"] != HELD_FORMAT:
            raise InvalidReport(f"held count: format must be {HELD_FORMAT!r}")
        if not isinstance(document["survey"], str) or not document["survey"]:
            raise InvalidReport("held count: survey must be a survey id")
        for name in ("waiting", "min_batch"):
            value = document[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidReport(f"held count: {name} must be a whole number")
        seconds = document["refresh_seconds"]
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
            raise InvalidReport("held count: refresh_seconds must be a positive number")
        as_of = document["as_of"]
        try:
            parsed = datetime.fromisoformat(str(as_of).replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if not isinstance(as_of, str) or parsed is None or parsed.tzinfo is None:
            raise InvalidReport("held count: as_of must be an ISO 8601 time in UTC")
        return cls(
            survey=document["survey"],
            waiting=document["waiting"],
            min_batch=document["min_batch"],
            as_of=as_of,
            refresh_seconds=float(seconds),
        )
