"""Operator and enrolment tokens: their shapes, hashes and records, and their tables.

Only SHA-256 hashes of tokens are stored.  Operator tokens (``dnb_``) authorise the
operator routes, for every survey or a listed few; an enrolment token (``dne_``)
admits one batch to a survey created with ``require_enrolment`` and is spent, with
the digest of that batch, in the transaction that stores it, so a retry of the
same batch is told from a second submission (``check_spent``).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deniable.errors import AuthenticationError, Conflict, Forbidden, InvalidParameter, NotFound
from deniable.service.storage import Dialect, iso
from deniable.survey import IDENTIFIER

if TYPE_CHECKING:
    from deniable.wire import Report

    from .records import SurveyRecord

__all__ = [
    "ENROLMENT_PREFIX",
    "TOKEN_PREFIX",
    "EnrolmentToken",
    "OperatorToken",
    "TokenStore",
    "batch_digest",
    "check_issuable",
    "check_issue_count",
    "hash_token",
    "is_enrolment_token",
    "new_enrolment_token",
    "new_token",
]

TOKEN_PREFIX = "dnb_"
ENROLMENT_PREFIX = "dne_"
# Enrolment tokens as issued: the prefix and 43 URL-safe base64 characters (32 bytes).
ENROLMENT_TOKEN = re.compile(r"dne_[A-Za-z0-9_-]{43}")
MAX_ENROLMENT_ISSUE = 1_000_000
ENROLMENT_ID = re.compile(r"[0-9a-f]{4,64}")


def hash_token(token: str) -> str:
    """The only form in which an operator token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_enrolment_token() -> str:
    return ENROLMENT_PREFIX + secrets.token_urlsafe(32)


def is_enrolment_token(token: str) -> bool:
    """True if ``token`` has the shape of an issued enrolment token (checked before any lookup)."""
    return ENROLMENT_TOKEN.fullmatch(token) is not None


def batch_digest(reports: list[Report]) -> str:
    """SHA-256 hex of a batch: its reports' digests, in order (the same body gives the same)."""
    return hashlib.sha256("\n".join(r.digest for r in reports).encode("ascii")).hexdigest()


def check_issue_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int):
        raise InvalidParameter("the number of enrolment tokens must be an integer")
    if not 1 <= count <= MAX_ENROLMENT_ISSUE:
        raise InvalidParameter(
            f"the number of enrolment tokens must be in [1, {MAX_ENROLMENT_ISSUE:,}], got {count}"
        )


@dataclass(frozen=True, kw_only=True)
class OperatorToken:
    """An operator token's metadata (the plaintext is never stored).

    ``surveys``: the survey ids it may act on, or None for every survey (and for
    what concerns no one survey: creating surveys, metrics).
    """

    id: int
    label: str
    created_at: str
    revoked_at: str | None
    surveys: tuple[str, ...] | None = None

    def may_act_on(self, survey_id: str | None) -> bool:
        if self.surveys is None:
            return True
        return survey_id is not None and survey_id in self.surveys


@dataclass(frozen=True, kw_only=True)
class EnrolmentToken:
    """An enrolment token's state; ``id`` is the first 16 hex digits of its hash."""

    id: str
    survey: str
    created_at: str
    spent_at: str | None
    revoked_at: str | None

    @property
    def status(self) -> str:
        if self.spent_at is not None:
            return "spent"
        return "revoked" if self.revoked_at is not None else "unspent"


def check_scope(surveys: Sequence[str] | None) -> tuple[str, ...] | None:
    """Validated survey ids of an operator token's scope (None: every survey)."""
    if surveys is None:
        return None
    scope = tuple(dict.fromkeys(surveys))
    if not scope:
        raise InvalidParameter("a scoped operator token needs at least one survey id")
    for survey_id in scope:
        if not isinstance(survey_id, str) or not IDENTIFIER.fullmatch(survey_id):
            raise InvalidParameter(f"not a survey id: {str(survey_id)[:60]!r}")
    return scope


def check_issuable(record: SurveyRecord) -> None:
    """Conflict unless enrolment tokens can be issued for ``record``."""
    if not record.require_enrolment:
        raise Conflict(
            f"survey {record.id!r} does not require enrolment tokens "
            "(it was created without require_enrolment)"
        )
    if not record.is_open:
        raise Conflict(f"survey {record.id!r} is closed")


def _operator_token(row: tuple) -> OperatorToken:
    token_id, label, created, revoked, surveys = row
    scope = None if surveys is None else tuple(json.loads(surveys))
    return OperatorToken(
        id=token_id, label=label, created_at=iso(created), revoked_at=iso(revoked), surveys=scope
    )


def check_spent(survey_id: str, row: tuple | None, digest: str) -> None:
    """After a failed spend: allow only a retry of the batch that spent the token.

    ``row``: (batch_digest, revoked_at) of the token, None if there is no such token.
    """
    if row is None:
        raise Forbidden(f"the enrolment token is not valid for survey {survey_id!r}")
    if row[0] is None and row[1] is not None:
        raise Forbidden(f"the enrolment token was revoked for survey {survey_id!r}")
    if row[0] != digest:
        raise Forbidden("the enrolment token was already spent on another submission")


def check_retry(survey_id: str, row: tuple | None, digest: str) -> None:
    """A batch already stored whole, sent again: nothing is spent, but its token must be
    this survey's, not revoked while unspent, and spent on no other batch.

    ``row``: (batch_digest, revoked_at) of the token, None if there is no such token.
    """
    if row is not None and row[0] is None and row[1] is None:
        return  # unspent: the retry spends nothing (the batch's own token may have been lost)
    check_spent(survey_id, row, digest)


class TokenStore:
    """The token tables (``operator_tokens``, ``enrolment_tokens``), over a dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def _check_survey(self, connection: Any, survey_id: str) -> None:
        """NotFound unless the survey exists."""
        if (
            self.dialect.run(
                connection, "SELECT 1 FROM surveys WHERE id = ?", (survey_id,)
            ).fetchone()
            is None
        ):
            raise NotFound(f"no survey {survey_id!r}")

    def spend(
        self, connection: Any, survey_id: str, token: str | None, digest: str, *, new: bool
    ) -> None:
        """Spend ``token`` on the batch ``digest`` in the caller's transaction, or refuse.

        ``new``: whether the batch stores any report; a batch already stored whole
        spends nothing (:func:`check_retry`), so resending it never burns a token.
        PostgreSQL, READ COMMITTED: a concurrent spender of the same token waits for
        this row lock, then re-checks ``spent_at IS NULL`` against the committed row:
        one UPDATE wins, every other sees the winner's digest (or the row unspent
        again if the winner rolled back).
        """
        if token is None:
            raise AuthenticationError(f"survey {survey_id!r} requires an enrolment token")
        token_hash = hash_token(token)
        if (
            new
            and connection.execute(
                self.dialect.sql(
                    "UPDATE enrolment_tokens SET spent_at = ?, batch_digest = ?"
                    " WHERE token_hash = ? AND survey_id = ? AND spent_at IS NULL"
                    " AND revoked_at IS NULL"
                ),
                (self.dialect.now(), digest, token_hash, survey_id),
            ).rowcount
            == 1
        ):
            return
        row = connection.execute(
            self.dialect.sql(
                "SELECT batch_digest, revoked_at FROM enrolment_tokens"
                " WHERE token_hash = ? AND survey_id = ?"
            ),
            (token_hash, survey_id),
        ).fetchone()
        (check_spent if new else check_retry)(survey_id, row, digest)

    # -- operator tokens --------------------------------------------------------
    def create_operator_token(self, label: str = "", surveys: Sequence[str] | None = None) -> str:
        """Create an operator token (for ``surveys`` only, if given); return its plaintext.

        The plaintext is never stored, only its SHA-256.
        """
        scope = check_scope(surveys)
        token = new_token()
        with self.dialect.write() as connection:
            connection.execute(
                self.dialect.sql(
                    "INSERT INTO operator_tokens (token_hash, label, created_at, surveys)"
                    " VALUES (?, ?, ?, ?)"
                ),
                (
                    hash_token(token),
                    label,
                    self.dialect.now(),
                    None if scope is None else json.dumps(list(scope)),
                ),
            )
        return token

    def find_operator_token(self, token: str) -> OperatorToken | None:
        """The stored, unrevoked operator token ``token`` (None if there is none)."""
        with self.dialect.read() as connection:
            row = connection.execute(
                self.dialect.sql(
                    "SELECT id, label, created_at, revoked_at, surveys FROM operator_tokens"
                    " WHERE token_hash = ? AND revoked_at IS NULL"
                ),
                (hash_token(token),),
            ).fetchone()
        return None if row is None else _operator_token(row)

    def verify_operator_token(self, token: str) -> bool:
        """True if ``token`` is a stored, unrevoked operator token."""
        return self.find_operator_token(token) is not None

    def list_operator_tokens(self) -> list[OperatorToken]:
        """Every operator token's metadata."""
        with self.dialect.read() as connection:
            rows = connection.execute(
                "SELECT id, label, created_at, revoked_at, surveys FROM operator_tokens ORDER BY id"
            ).fetchall()
        return [_operator_token(row) for row in rows]

    def revoke_operator_token(self, token_id: int) -> bool:
        """Revoke a token by id; False if no such unrevoked token."""
        with self.dialect.write() as connection:
            cursor = connection.execute(
                self.dialect.sql(
                    "UPDATE operator_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"
                ),
                (self.dialect.now(), token_id),
            )
            return cursor.rowcount == 1

    # -- enrolment tokens, listed and revoked -------------------------------------------
    def list_enrolment_tokens(self, survey_id: str) -> list[EnrolmentToken]:
        """Every enrolment token of a survey, oldest first (NotFound for an unknown survey)."""
        with self.dialect.read() as connection:
            self._check_survey(connection, survey_id)
            rows = connection.execute(
                self.dialect.sql(
                    "SELECT token_hash, created_at, spent_at, revoked_at"
                    " FROM enrolment_tokens WHERE survey_id = ? ORDER BY created_at,"
                    " token_hash"
                ),
                (survey_id,),
            ).fetchall()
        return [
            EnrolmentToken(
                id=r[0][:16],
                survey=survey_id,
                created_at=iso(r[1]),
                spent_at=iso(r[2]),
                revoked_at=iso(r[3]),
            )
            for r in rows
        ]

    def revoke_enrolment_tokens(
        self,
        survey_id: str,
        *,
        ids: Iterable[str] = (),
        tokens: Iterable[str] = (),
        unspent: bool = False,
    ) -> int:
        """Revoke unspent enrolment tokens of a survey; return how many were revoked.

        ``ids``: hash prefixes as listed (at least 4 hex digits, each matching exactly
        one token of the survey, else NotFound/InvalidParameter); ``tokens``: plaintexts
        (e.g. a leaked file); ``unspent``: every unspent one.  A spent token stays
        spent: its batch is stored and counted.
        """
        prefixes = [i.strip().lower() for i in ids]
        for prefix in prefixes:
            if not ENROLMENT_ID.fullmatch(prefix):
                raise InvalidParameter(f"not an enrolment token id: {prefix[:40]!r}")
        hashes = [hash_token(t.strip()) for t in tokens if t.strip()]
        now = self.dialect.now()
        with self.dialect.write() as connection:
            self._check_survey(connection, survey_id)
            for prefix in prefixes:
                matches = connection.execute(
                    self.dialect.sql(
                        "SELECT token_hash FROM enrolment_tokens"
                        " WHERE survey_id = ? AND token_hash LIKE ? LIMIT 2"
                    ),
                    (survey_id, prefix + "%"),
                ).fetchall()
                if not matches:
                    raise NotFound(f"no enrolment token {prefix!r} for survey {survey_id!r}")
                if len(matches) > 1:
                    raise InvalidParameter(
                        f"enrolment token id {prefix!r} is ambiguous; give more digits"
                    )
                hashes.append(matches[0][0])
            revoke = self.dialect.sql(
                "UPDATE enrolment_tokens SET revoked_at = ? WHERE survey_id = ?"
                " AND spent_at IS NULL AND revoked_at IS NULL"
            )
            if unspent:
                return connection.execute(revoke, (now, survey_id)).rowcount
            count = 0
            for token_hash in dict.fromkeys(hashes):
                count += connection.execute(
                    revoke + self.dialect.sql(" AND token_hash = ?"), (now, survey_id, token_hash)
                ).rowcount
            return count
