"""The relay's relayed surveys, its secrets and the enrolment token digests it spends."""

from __future__ import annotations

import secrets

from deniable.errors import Conflict, NotFound
from deniable.keychain import RETIRED_ENCRYPTION_KEYS
from deniable.service.storage import Dialect, iso, utc_now

from .records import SURVEY_COLUMNS, RelayedSurvey

__all__ = ["SurveyStore"]


class SurveyStore:
    """Relayed surveys, secrets and enrolment digests, over a dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def add_survey(self, survey: RelayedSurvey, units: list[str]) -> None:
        """Store a survey to relay and open a window for each of its units (Conflict if known)."""
        now = iso(utc_now())
        with self.dialect.write() as connection:
            found = self.dialect.run(
                connection, "SELECT 1 FROM relayed_surveys WHERE survey_id = ?", (survey.survey_id,)
            ).fetchone()
            if found:
                raise Conflict(f"survey {survey.survey_id!r} is relayed already")
            self.dialect.run(
                connection,
                f"INSERT INTO relayed_surveys ({SURVEY_COLUMNS}) VALUES ({', '.join('?' * 16)})",
                (
                    survey.survey_id,
                    survey.aggregator_url,
                    survey.credential,
                    survey.signing_key,
                    survey.key_sequence,
                    survey.document,
                    survey.status,
                    survey.min_batch,
                    survey.shuffle_unit,
                    survey.require_enrolment,
                    now,
                    0,
                    0,
                    None,
                    0,
                    " ".join(survey.encryption_keys),
                ),
            )
            for unit in units:
                self.dialect.run(
                    connection,
                    "INSERT INTO windows (survey_id, unit, opened_at) VALUES (?, ?, ?)",
                    (survey.survey_id, unit, now),
                )

    def update_survey(
        self,
        survey_id: str,
        *,
        document: str,
        status: str,
        signing_key: str,
        key_sequence: int | None,
    ) -> None:
        """Record a fresh, verified survey document (state and pinned key)."""
        with self.dialect.write() as connection:
            self.dialect.run(
                connection,
                "UPDATE relayed_surveys SET document = ?, status = ?, "
                "signing_key = ?, key_sequence = ?, refreshed_at = ? WHERE survey_id = ?",
                (document, status, signing_key, key_sequence, iso(utc_now()), survey_id),
            )

    def set_credential(self, survey_id: str, credential: str) -> None:
        """Replace the relay credential the survey's batches are sent with (held units stay)."""
        with self.dialect.write() as connection:
            changed = self.dialect.run(
                connection,
                "UPDATE relayed_surveys SET credential = ? WHERE survey_id = ?",
                (credential, survey_id),
            ).rowcount
        if not changed:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")

    def accept_encryption_key(
        self, survey_id: str, key_id: str, public_key: bytes | None = None
    ) -> tuple[str, ...]:
        """Record a verified encryption key id as the aggregator's current one; keep the
        previous ones it may still open (newest first, at most ``1 + RETIRED_ENCRYPTION_KEYS``,
        as many as the aggregator keeps).  Returns the ids kept.

        ``public_key`` (the key's 32 verified bytes) is kept beside its id while the id is:
        a noised batch's dummies are sealed to the key its real units were sealed to."""
        with self.dialect.write() as connection:
            row = self.dialect.run(
                connection,
                "SELECT encryption_keys FROM relayed_surveys WHERE survey_id = ?"
                + self.dialect.for_update,
                (survey_id,),
            ).fetchone()
            if row is None:
                raise NotFound(f"this relay does not relay survey {survey_id!r}")
            known = tuple(row[0].split())
            kept = (key_id, *(k for k in known if k != key_id))[: 1 + RETIRED_ENCRYPTION_KEYS]
            if kept != known:
                self.dialect.run(
                    connection,
                    "UPDATE relayed_surveys SET encryption_keys = ? WHERE survey_id = ?",
                    (" ".join(kept), survey_id),
                )
            if public_key is not None:
                self.dialect.run(
                    connection,
                    "INSERT INTO encryption_public (survey_id, key_id, public_key) "
                    "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                    (survey_id, key_id, bytes(public_key)),
                )
            for (stale,) in self.dialect.run(
                connection,
                "SELECT key_id FROM encryption_public WHERE survey_id = ?",
                (survey_id,),
            ).fetchall():
                if stale not in kept:
                    self.dialect.run(
                        connection,
                        "DELETE FROM encryption_public WHERE survey_id = ? AND key_id = ?",
                        (survey_id, stale),
                    )
        return kept

    def count_flush(self, survey_id: str, limit: int) -> int:
        """Count one flush of ``survey_id``; return how many it has had, this one included.
        Conflict, counting nothing, once it has had ``limit`` (docs/relay.md, "Flushing")."""
        with self.dialect.write() as connection:
            counted = self.dialect.run(
                connection,
                "UPDATE relayed_surveys SET flushes = flushes + 1 "
                "WHERE survey_id = ? AND flushes < ?",
                (survey_id, limit),
            ).rowcount
            row = self.dialect.run(
                connection, "SELECT flushes FROM relayed_surveys WHERE survey_id = ?", (survey_id,)
            ).fetchone()
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        if not counted:
            raise Conflict(
                f"survey {survey_id!r} was flushed {int(row[0]):,} times already, the most this "
                f"relay allows (its setting DENIABLE_RELAY_FLUSH_LIMIT is {limit:,}); its "
                "forwarder still sends each batch of at least min_batch once its window passes"
            )
        return int(row[0])

    def flush_count(self, survey_id: str) -> int:
        """How many flushes ``survey_id`` has had."""
        with self.dialect.read() as connection:
            row = self.dialect.run(
                connection, "SELECT flushes FROM relayed_surveys WHERE survey_id = ?", (survey_id,)
            ).fetchone()
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        return int(row[0])

    def get_survey(self, survey_id: str) -> RelayedSurvey:
        with self.dialect.read() as connection:
            row = self.dialect.run(
                connection,
                f"SELECT {SURVEY_COLUMNS} FROM relayed_surveys WHERE survey_id = ?",
                (survey_id,),
            ).fetchone()
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        return RelayedSurvey.from_row(row)

    def list_surveys(self) -> list[RelayedSurvey]:
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection, f"SELECT {SURVEY_COLUMNS} FROM relayed_surveys ORDER BY survey_id"
            ).fetchall()
        return [RelayedSurvey.from_row(row) for row in rows]

    def remove_survey(self, survey_id: str) -> int:
        """Forget a survey and delete everything held for it; return the units deleted."""
        with self.dialect.write() as connection:
            count = self.dialect.run(
                connection, "SELECT COUNT(*) FROM held WHERE survey_id = ?", (survey_id,)
            ).fetchone()[0]
            for table in (
                "held",
                "batches",
                "dummies",
                "windows",
                "enrolment_digests",
                "admitted",
                "encryption_public",
            ):
                self.dialect.run(
                    connection, f"DELETE FROM {table} WHERE survey_id = ?", (survey_id,)
                )
            deleted = self.dialect.run(
                connection, "DELETE FROM relayed_surveys WHERE survey_id = ?", (survey_id,)
            ).rowcount
        if not deleted:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        return int(count)

    def secret(self, name: str) -> bytes:
        """A random 32-byte secret shared by every process on this database (made once)."""
        with self.dialect.write() as connection:
            self.dialect.run(
                connection,
                "INSERT INTO relay_secrets (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (name, secrets.token_bytes(32)),
            )
            (value,) = self.dialect.run(
                connection, "SELECT value FROM relay_secrets WHERE name = ?", (name,)
            ).fetchone()
        return bytes(value)

    # -- enrolment ---------------------------------------------------------------------------
    def add_enrolment_digests(self, survey_id: str, digests: list[str]) -> int:
        """Add digests not known yet; return how many were new."""
        added = 0
        with self.dialect.write() as connection:
            for digest in digests:
                added += self.dialect.run(
                    connection,
                    "INSERT INTO enrolment_digests (survey_id, digest)"
                    " VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (survey_id, digest),
                ).rowcount
        return added

    def sync_enrolment_digests(self, survey_id: str, digests: list[str]) -> tuple[int, int]:
        """Make the unspent digests the aggregator's: add new ones, forget unspent ones it no
        longer lists (revoked there); spent ones stay.  Returns (added, forgotten)."""
        listed = set(digests)
        with self.dialect.write() as connection:
            unspent = {
                d
                for (d,) in self.dialect.run(
                    connection,
                    "SELECT digest FROM enrolment_digests WHERE survey_id = ? AND spent_by IS NULL",
                    (survey_id,),
                ).fetchall()
            }
            for digest in unspent - listed:
                self.dialect.run(
                    connection,
                    "DELETE FROM enrolment_digests WHERE survey_id = ? AND "
                    "digest = ? AND spent_by IS NULL",
                    (survey_id, digest),
                )
        added = self.add_enrolment_digests(survey_id, sorted(listed - unspent))
        return added, len(unspent - listed)

    def enrolment_counts(self, survey_id: str) -> tuple[int, int]:
        """(known, spent) enrolment digests of a survey."""
        with self.dialect.read() as connection:
            known, spent = self.dialect.run(
                connection,
                "SELECT COUNT(*), COUNT(spent_by) FROM enrolment_digests WHERE survey_id = ?",
                (survey_id,),
            ).fetchone()
        return int(known), int(spent)
