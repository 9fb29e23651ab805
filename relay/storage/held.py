"""The relay's held units: one submission's sealed units stored (or refused) at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from deniable.errors import AlreadyDelivered, Conflict, Forbidden, NotFound
from deniable.service.storage import Dialect, iso, utc_now

from .records import DELIVERED, DISCARDED, held_id, submission_digest, token_digest

__all__ = ["HeldStore"]

# Most units one INSERT takes (5 parameters each, well under SQLite's 32,766).
_ROWS_PER_INSERT = 500


class HeldStore:
    """Held units: intake, and deletion once forwarded or discarded, over a dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def hold(
        self,
        survey_id: str,
        units: list[tuple[str, bytes]],
        *,
        enrolment_token: str | None,
        key_id: str,
    ) -> int:
        """Hold one submission's sealed units durably, all or nothing; return how many are new.

        ``key_id`` is the encryption key the device sealed them to: a batch takes units of
        one key only (:meth:`~.batches.BatchStore.form_batches`).

        With ``enrolment_token`` (a survey that requires enrolment) its digest must be
        known and unspent, or spent by this very submission (a resend): Forbidden
        otherwise.  The token is spent in the same transaction.  Once every unit it
        admitted is forwarded and acknowledged the relay forgets which units they were
        (:meth:`delete`): a resend with the token is then AlreadyDelivered, whatever
        its units (docs/relay.md, "What the relay keeps").
        """
        with self.dialect.write() as connection:
            return self.hold_in(connection, survey_id, units, enrolment_token, key_id)

    def hold_in(
        self,
        connection: Any,
        survey_id: str,
        units: list[tuple[str, bytes]],
        enrolment_token: str | None,
        key_id: str,
    ) -> int:
        """:meth:`hold` inside the caller's transaction."""
        row = self.dialect.run(
            connection,
            "SELECT status FROM relayed_surveys WHERE survey_id = ?" + self.dialect.for_share,
            (survey_id,),
        ).fetchone()
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        if enrolment_token is not None:
            submission = submission_digest(survey_id, units)
            digest = token_digest(enrolment_token)
            found = self.dialect.run(
                connection,
                "SELECT spent_by FROM enrolment_digests WHERE "
                "survey_id = ? AND digest = ?" + self.dialect.for_update,
                (survey_id, digest),
            ).fetchone()
            if found is not None and found[0] == DELIVERED:
                raise AlreadyDelivered(
                    f"the submission this enrolment token admitted to survey "
                    f"{survey_id!r} was delivered already; nothing more is "
                    "taken with it"
                )
            if found is not None and found[0] == DISCARDED:
                raise Conflict(
                    f"survey {survey_id!r} closed before the submission this "
                    "enrolment token admitted could be forwarded"
                )
            if found is None or found[0] not in (None, submission):
                raise Forbidden(
                    f"the enrolment token is not valid for survey {survey_id!r} (unknown, or spent)"
                )
            if found[0] == submission:
                return 0  # a resend of the admitted submission, still held: held already
        if row[0] != "open":
            raise Conflict(f"survey {survey_id!r} is closed")
        added = 0
        # Why one statement for many units: each statement releases and takes back the
        # GIL, and taking it back waits for the request threads' turns (the switch
        # interval); one per unit, inside the write transaction, made the write lock wait
        # on the GIL once per unit.
        for start in range(0, len(units), _ROWS_PER_INSERT):
            rows = units[start : start + _ROWS_PER_INSERT]
            added += self.dialect.run(
                connection,
                "INSERT INTO held (id, survey_id, unit, sealed, key_id) VALUES "
                + ", ".join(["(?, ?, ?, ?, ?)"] * len(rows))
                + " ON CONFLICT DO NOTHING",
                [
                    value
                    for unit, sealed in rows
                    for value in (held_id(survey_id, unit, sealed), survey_id, unit, sealed, key_id)
                ],
            ).rowcount
        if enrolment_token is not None:
            digest = token_digest(enrolment_token)
            self.dialect.run(
                connection,
                "UPDATE enrolment_digests SET spent_by = ? WHERE survey_id = ? AND digest = ?",
                (submission, survey_id, digest),
            )
            for unit, sealed in units:  # the link, until these units are forwarded
                self.dialect.run(
                    connection,
                    "INSERT INTO admitted (survey_id, held_id, digest) VALUES "
                    "(?, ?, ?) ON CONFLICT DO NOTHING",
                    (survey_id, held_id(survey_id, unit, sealed), digest),
                )
        return added

    def delete(
        self, connection: Any, survey_id: str, condition: str, values: tuple, outcome: str
    ) -> int:
        """Delete the held units of ``survey_id`` that match ``condition``, and forget which
        enrolment token admitted them: a token none of whose units is held any more keeps
        only ``outcome`` (DELIVERED: acknowledged by the aggregator; DISCARDED).

        Why: the link from a token's digest to its units' digests is what idempotent retry
        needs while they are held; kept longer, a leaked relay database and the blobs the
        aggregator stores would together say who sent what.  Orphaned links (a
        unit deleted while a concurrent resend linked it) are forgotten here too.
        """
        count = self.dialect.run(
            connection,
            f"DELETE FROM held WHERE survey_id = ? AND {condition}",
            (survey_id, *values),
        ).rowcount
        orphaned = "survey_id = ? AND NOT EXISTS (SELECT 1 FROM held h WHERE h.id = held_id)"
        tokens = [
            d
            for (d,) in self.dialect.run(
                connection, f"SELECT DISTINCT digest FROM admitted WHERE {orphaned}", (survey_id,)
            ).fetchall()
        ]
        self.dialect.run(connection, f"DELETE FROM admitted WHERE {orphaned}", (survey_id,))
        for digest in tokens:
            self.dialect.run(
                connection,
                "UPDATE enrolment_digests SET spent_by = ? WHERE survey_id = ? "
                "AND digest = ? AND NOT EXISTS (SELECT 1 FROM admitted a WHERE "
                "a.survey_id = ? AND a.digest = ?)",
                (outcome, survey_id, digest, survey_id, digest),
            )
        return int(count)

    def held_counts(self, survey_id: str) -> dict[str, tuple[int, int]]:
        """Per unit: (units waiting for a batch, units in batches not yet acknowledged)."""
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT unit, COUNT(*) - COUNT(batch_id), "
                "COUNT(batch_id) FROM held WHERE survey_id = ? GROUP BY unit",
                (survey_id,),
            ).fetchall()
        return {unit: (int(waiting), int(batched)) for unit, waiting, batched in rows}

    def held_count(self, survey_id: str, refresh_seconds: float) -> tuple[int, str]:
        """(respondents whose answers wait for a batch, when that was counted): the survey's
        snapshot, counted again only once it is ``refresh_seconds`` old.

        Respondents: the most units waiting for any one unit (a respondent sends one unit
        per unit, and no dummy is ever held).  Why a snapshot kept in the database: every
        process of the relay answers with the same one, so asking several of them, or
        asking often, reads no fresher count (docs/threat-model.md §5)."""
        with self.dialect.write() as connection:
            row = self.dialect.run(
                connection,
                "SELECT held_waiting, held_counted_at FROM relayed_surveys WHERE survey_id = ?"
                + self.dialect.for_update,
                (survey_id,),
            ).fetchone()
            if row is None:
                raise NotFound(f"this relay does not relay survey {survey_id!r}")
            now = utc_now()
            waiting, counted_at = row
            if counted_at is not None:
                age = now - datetime.fromisoformat(iso(counted_at).replace("Z", "+00:00"))
                if waiting is not None and 0 <= age.total_seconds() < refresh_seconds:
                    return int(waiting), iso(counted_at)
            (waiting,) = self.dialect.run(
                connection,
                "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM held "
                "WHERE survey_id = ? AND batch_id IS NULL GROUP BY unit) AS counts",
                (survey_id,),
            ).fetchone()
            counted_at = iso(now)
            self.dialect.run(
                connection,
                "UPDATE relayed_surveys SET held_waiting = ?, held_counted_at = ? "
                "WHERE survey_id = ?",
                (int(waiting), counted_at, survey_id),
            )
        return int(waiting), counted_at

    def held_rows(self, survey_id: str) -> list[tuple[str, bytes]]:
        """Every held (unit, sealed bytes) of a survey (for audits and tests)."""
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT unit, sealed FROM held WHERE survey_id = ? ORDER BY id",
                (survey_id,),
            ).fetchall()
        return [(unit, bytes(sealed)) for unit, sealed in rows]
