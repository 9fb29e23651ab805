"""What the relay's storage holds, as Python values: a relayed survey, a batch, and the
keys and digests rows are stored under (no arrival order, no token in the clear)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from deniable.service.storage import iso

__all__ = [
    "Batch",
    "DELIVERED",
    "DISCARDED",
    "RelayedSurvey",
    "SURVEY_COLUMNS",
    "held_id",
    "submission_digest",
    "token_digest",
]

# What ``enrolment_digests.spent_by`` holds once the units a token admitted are gone from
# ``held`` (the submission's digest until then): never a digest, so no link to any unit.
DELIVERED = "delivered"
DISCARDED = "discarded"

SURVEY_COLUMNS = """survey_id, aggregator_url, credential, signing_key, key_sequence, document,
    status, min_batch, shuffle_unit, require_enrolment, refreshed_at, forwarded_batches,
    forwarded_reports, smallest_batch, discarded_reports, encryption_keys"""


@dataclass(frozen=True, kw_only=True)
class RelayedSurvey:
    """One survey this relay forwards, as stored."""

    survey_id: str
    aggregator_url: str
    credential: str
    signing_key: str
    key_sequence: int | None
    document: str
    status: str
    min_batch: int
    shuffle_unit: str
    require_enrolment: bool
    refreshed_at: str
    forwarded_batches: int = 0
    forwarded_reports: int = 0
    smallest_batch: int | None = None
    discarded_reports: int = 0
    # The aggregator's encryption key ids verified from its signed key document, newest first.
    encryption_keys: tuple[str, ...] = ()

    @property
    def is_open(self) -> bool:
        return self.status == "open"

    @classmethod
    def from_row(cls, row: tuple) -> RelayedSurvey:
        names = [n.strip() for n in SURVEY_COLUMNS.split(",")]
        values = dict(zip(names, row, strict=True))
        values["require_enrolment"] = bool(values["require_enrolment"])
        values["refreshed_at"] = iso(values["refreshed_at"])
        values["encryption_keys"] = tuple(values["encryption_keys"].split())
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class Batch:
    """A formed batch: its id, survey, unit and sealed units (in storage order: the real
    units, then the dummies; the forwarder shuffles them together before sending)."""

    batch_id: str
    survey_id: str
    unit: str
    sealed: list[bytes]
    # How many of ``sealed`` are respondents' units when the relay added dummies (relay
    # noise); None when it added none, and every blob is real.
    real_units: int | None = None

    @property
    def real_count(self) -> int:
        """The respondents' units in the batch."""
        return len(self.sealed) if self.real_units is None else self.real_units


def held_id(survey_id: str, unit: str, sealed: bytes) -> bytes:
    """The held row's key: SHA-256 of survey, unit and bytes (no arrival order in it)."""
    digest = hashlib.sha256()
    for part in (survey_id.encode(), unit.encode(), sealed):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.digest()


def submission_digest(survey_id: str, units: list[tuple[str, bytes]]) -> str:
    """What an enrolment token admitted: the submission's held ids, order-free."""
    ids = sorted(held_id(survey_id, unit, sealed) for unit, sealed in units)
    return hashlib.sha256(b"".join(ids)).hexdigest()


def token_digest(token: str) -> str:
    """An enrolment token as the aggregator hands it over: SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
