"""Relayed surveys' bookkeeping, over a dialect (migrations 0010 and 0011).

* ``relay_credentials``: SHA-256 of each relay credential and the relay URL it
  may forward for (a survey's signed ``relay.url``); revocable.
* ``relay_batches``: each batch stored, once per (survey, batch id): its
  content digest (order-free), size, reports stored and blobs dropped; for a
  batch the relay added dummies to, its real count (``real_units``) and whether its
  dummies are plausible under the signed law (``plausible``, computed at intake).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deniable.errors import InvalidParameter
from deniable.origins import canonical_url
from deniable.service.storage import Dialect, iso

if TYPE_CHECKING:
    pass

__all__ = [
    "CREDENTIAL_PREFIX",
    "BatchRecord",
    "RelayStore",
    "credential_digest",
    "normalized_url",
]

CREDENTIAL_PREFIX = "dnr_"  # a relay credential, told apart from operator and enrolment tokens


def credential_digest(credential: str) -> str:
    return hashlib.sha256(credential.encode("utf-8")).hexdigest()


def normalized_url(url: str) -> str:
    """A relay URL written one way (:func:`deniable.origins.canonical_url`), so a credential
    and a survey's signed ``relay.url`` compare equal whenever they name the same relay."""
    text = url.strip().removesuffix("/")
    try:
        return canonical_url(text)
    except InvalidParameter:  # stored before URLs were checked: as written, matching no survey
        return text


@dataclass(frozen=True, kw_only=True)
class BatchRecord:
    """One stored batch: ``size`` blobs received (``received``), ``stored`` those that added
    someone (a report stored new), ``dropped`` those that did not open or were invalid.
    The rest (``size - stored - dropped``) added nobody: their reports were stored before
    with the same body (a replay, a resend), or the survey closed while the batch was
    stored (api/batches.py).

    ``real_units``: how many blobs the relay says are respondents' units, when it added
    dummy reports (None: it added none).  ``plausible``: whether the dummies the batch
    stored (``stored - real_units``) are consistent with the survey's signed law
    (``deniable.dummies.plausible``); None without dummies."""

    batch_id: str
    unit: str
    digest: str
    size: int
    stored: int
    dropped: int
    real_units: int | None = None
    plausible: bool | None = None

    def to_dict(self, survey_id: str) -> dict[str, Any]:
        return {
            "survey": survey_id,
            "batch": self.batch_id,
            "unit": self.unit,
            "received": self.size,
            "stored": self.stored,
            "dropped": self.dropped,
            "real_units": self.real_units,
            "plausible": self.plausible,
        }


class RelayStore:
    """Relay credentials and the batches relays delivered (``Storage.relay``)."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def create_credential(self, relay_url: str) -> str:
        """A new relay credential for ``relay_url``; returns the plaintext (stored hashed)."""
        credential = CREDENTIAL_PREFIX + secrets.token_urlsafe(32)
        dialect = self.dialect
        with dialect.write() as connection:
            dialect.run(
                connection,
                "INSERT INTO relay_credentials (digest, relay_url, created_at) VALUES (?, ?, ?)",
                (credential_digest(credential), normalized_url(relay_url), dialect.now()),
            )
        return credential

    def credential_url(self, credential: str) -> str | None:
        """The relay URL of an unrevoked credential, or None."""
        with self.dialect.read() as connection:
            row = self.dialect.run(
                connection,
                "SELECT relay_url FROM relay_credentials WHERE digest = ? AND revoked_at IS NULL",
                (credential_digest(credential),),
            ).fetchone()
        return None if row is None else normalized_url(row[0])

    def credential_digests(self) -> list[str]:
        """The SHA-256 digests of every unrevoked relay credential."""
        with self.dialect.read() as connection:
            rows = connection.execute(
                "SELECT digest FROM relay_credentials WHERE revoked_at IS NULL"
            ).fetchall()
        return [row[0] for row in rows]

    def list_credentials(self) -> list[dict[str, Any]]:
        with self.dialect.read() as connection:
            rows = connection.execute(
                "SELECT digest, relay_url, created_at, revoked_at FROM "
                "relay_credentials ORDER BY created_at"
            ).fetchall()
        return [
            {"digest": d[:16], "relay_url": u, "created_at": iso(c), "revoked_at": iso(r)}
            for d, u, c, r in rows
        ]

    def revoke_credential(self, digest_prefix: str) -> int:
        """Revoke the credentials whose digest starts with ``digest_prefix`` (at least 8 hex)."""
        dialect = self.dialect
        with dialect.write() as connection:
            return dialect.run(
                connection,
                "UPDATE relay_credentials SET revoked_at = ? WHERE "
                "digest LIKE ? AND revoked_at IS NULL",
                (dialect.now(), digest_prefix + "%"),
            ).rowcount

    def find_batch(self, survey_id: str, batch_id: str) -> BatchRecord | None:
        with self.dialect.read() as connection:
            row = self.dialect.run(
                connection,
                "SELECT batch_id, unit, digest, size, stored, dropped, real_units, plausible"
                " FROM relay_batches WHERE survey_id = ? AND batch_id = ?",
                (survey_id, batch_id),
            ).fetchone()
        if row is None:
            return None
        batch, unit, digest, size, stored, dropped, real, plausible = row
        return BatchRecord(
            batch_id=batch,
            unit=unit,
            digest=digest,
            size=int(size),
            stored=int(stored),
            dropped=int(dropped),
            real_units=None if real is None else int(real),
            plausible=None if plausible is None else bool(plausible),
        )

    def record_batch(self, survey_id: str, record: BatchRecord) -> BatchRecord:
        """Record a stored batch once; return the record that stands (an earlier one wins)."""
        dialect = self.dialect
        with dialect.write() as connection:
            dialect.run(
                connection,
                "INSERT INTO relay_batches (survey_id, batch_id, unit, digest, size, stored,"
                " dropped, received_at, real_units, plausible)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    survey_id,
                    record.batch_id,
                    record.unit,
                    record.digest,
                    record.size,
                    record.stored,
                    record.dropped,
                    dialect.now(),
                    record.real_units,
                    None if record.plausible is None else int(record.plausible),
                ),
            )
        return self.find_batch(survey_id, record.batch_id) or record

    def batch_summary(self, survey_id: str) -> dict[str, dict[str, int]]:
        """Per unit: ``batches`` that stored someone, the smallest of them by real count
        (``smallest_batch``: ``real_units`` for a batch with dummies, else ``stored``),
        ``stored`` (blobs that opened to new valid reports; a replayed blob is in
        neither), ``dropped`` (blobs that did not open or were invalid) and
        ``empty_batches`` (batches that stored nobody).

        Relay noise: ``noised_batches`` (batches with dummies), ``plausible_batches``
        (those whose dummies are plausible), ``dummies`` (the dummies stored:
        ``stored - real_units`` summed over noised batches), ``smallest_plausible`` (the
        smallest real count of a plausible batch, 0 if none) and
        ``smallest_shuffle_only`` (the smallest real count of the batches published with
        the shuffle bound alone: no dummies, or implausible ones; 0 if none).

        Why a batch that stored nobody is left out of the smallest: it hides no one (a
        replay under a new batch id, blobs that do not open, a resend after a crash
        whose reports were stored the first time).  Counted in, its size 0 would erase
        the central epsilon of every respondent the other batches hold."""
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT unit, SUM(CASE WHEN stored > 0 THEN 1 ELSE 0 END),"
                " MIN(CASE WHEN stored > 0 THEN COALESCE(real_units, stored) END),"
                " SUM(stored), SUM(dropped), SUM(CASE WHEN stored > 0 THEN 0 ELSE 1 END),"
                " SUM(CASE WHEN stored > 0 AND real_units IS NOT NULL THEN 1 ELSE 0 END),"
                " SUM(CASE WHEN stored > 0 AND plausible = 1 THEN 1 ELSE 0 END),"
                " SUM(CASE WHEN real_units IS NOT NULL THEN stored - real_units ELSE 0 END),"
                " MIN(CASE WHEN stored > 0 AND plausible = 1 THEN real_units END),"
                " MIN(CASE WHEN stored > 0 AND (plausible IS NULL OR plausible = 0)"
                " THEN COALESCE(real_units, stored) END)"
                " FROM relay_batches WHERE survey_id = ? GROUP BY unit",
                (survey_id,),
            ).fetchall()
        return {
            row[0]: {
                "batches": int(row[1]),
                "smallest_batch": int(row[2] or 0),
                "stored": int(row[3]),
                "dropped": int(row[4]),
                "empty_batches": int(row[5]),
                "noised_batches": int(row[6]),
                "plausible_batches": int(row[7]),
                "dummies": int(row[8]),
                "smallest_plausible": int(row[9] or 0),
                "smallest_shuffle_only": int(row[10] or 0),
            }
            for row in rows
        }

    def unspent_enrolment_digests(self, survey_id: str) -> list[str]:
        """SHA-256 digests of the survey's enrolment tokens neither spent nor revoked."""
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT token_hash FROM enrolment_tokens WHERE survey_id = ? AND spent_at IS NULL"
                " AND revoked_at IS NULL ORDER BY token_hash",
                (survey_id,),
            ).fetchall()
        return [row[0] for row in rows]
