"""The relay's held units: one submission's sealed units stored (or refused) at once."""

from __future__ import annotations

from typing import Any

from deniable.errors import Conflict, Forbidden, NotFound

from .records import held_id, submission_digest, token_digest


class HeldStore:
    """Intake; mixed into :class:`~.base.RelayStorage` (its ``_transaction`` and ``_run``)."""

    for_update = ""
    _transaction: Any
    _read: Any
    _run: Any

    def hold(
        self, survey_id: str, units: list[tuple[str, bytes]], *, enrolment_token: str | None,
        key_id: str,
    ) -> int:  # fmt: skip
        """Hold one submission's sealed units durably, all or nothing; return how many are new.

        ``key_id`` is the encryption key the device sealed them to: a batch takes units of
        one key only (:meth:`~.batches.BatchStore.form_batches`).

        With ``enrolment_token`` (a survey that requires enrolment) its digest must be
        known and unspent, or spent by this very submission (a resend): Forbidden
        otherwise.  The token is spent in the same transaction.
        """
        with self._transaction() as connection:
            return self._hold_in(connection, survey_id, units, enrolment_token, key_id)

    def _hold_in(
        self, connection: Any, survey_id: str, units: list[tuple[str, bytes]],
        enrolment_token: str | None, key_id: str,
    ) -> int:  # fmt: skip
        """:meth:`hold` inside the caller's transaction."""
        row = self._run(connection, "SELECT status FROM relayed_surveys WHERE survey_id = ?"
                        + self.for_update.replace("UPDATE", "SHARE"),
                        (survey_id,)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"this relay does not relay survey {survey_id!r}")
        if enrolment_token is not None:
            submission = submission_digest(survey_id, units)
            digest = token_digest(enrolment_token)
            found = self._run(connection, "SELECT spent_by FROM enrolment_digests WHERE "
                              "survey_id = ? AND digest = ?" + self.for_update,
                              (survey_id, digest)).fetchone()  # fmt: skip
            if found is None or found[0] not in (None, submission):
                raise Forbidden(f"the enrolment token is not valid for survey {survey_id!r} "
                                "(unknown, or spent)")  # fmt: skip
            if found[0] == submission:
                return 0  # a resend of the admitted submission: held already (or forwarded)
        if row[0] != "open":
            raise Conflict(f"survey {survey_id!r} is closed")
        added = 0
        for unit, sealed in units:
            added += self._run(connection, "INSERT INTO held (id, survey_id, unit, sealed, "
                               "key_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                               (held_id(survey_id, unit, sealed), survey_id, unit, sealed,
                                key_id)).rowcount  # fmt: skip
        if enrolment_token is not None:
            self._run(connection, "UPDATE enrolment_digests SET spent_by = ? WHERE "
                      "survey_id = ? AND digest = ?",
                      (submission, survey_id, token_digest(enrolment_token)))  # fmt: skip
        return added

    def held_counts(self, survey_id: str) -> dict[str, tuple[int, int]]:
        """Per unit: (units waiting for a batch, units in batches not yet acknowledged)."""
        with self._read() as connection:
            rows = self._run(connection, "SELECT unit, COUNT(*) - COUNT(batch_id), "
                             "COUNT(batch_id) FROM held WHERE survey_id = ? GROUP BY unit",
                             (survey_id,)).fetchall()  # fmt: skip
        return {unit: (int(waiting), int(batched)) for unit, waiting, batched in rows}

    def held_rows(self, survey_id: str) -> list[tuple[str, bytes]]:
        """Every held (unit, sealed bytes) of a survey (for audits and tests)."""
        with self._read() as connection:
            rows = self._run(connection, "SELECT unit, sealed FROM held WHERE survey_id = ? "
                             "ORDER BY id", (survey_id,)).fetchall()  # fmt: skip
        return [(unit, bytes(sealed)) for unit, sealed in rows]
