"""The editor's tables, over the storage's dialect (migration 0012): drafts and sessions.

* ``editor_drafts``: a survey in progress as JSON (``{"definition": ..., "results_public":
  ..., "require_enrolment": ...}``); it is saved even when it does not validate yet, so
  no typing is lost, and validated again on every save and at publishing.  Each draft has
  its own preview key (an Ed25519 seed) and a secret for its preview's URL.
* ``editor_sessions``: the SHA-256 of each session cookie, the operator token that signed
  in (a revoked token ends its sessions at once), the session's CSRF token, its expiry.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from deniable.errors import NotFound
from deniable.service.storage import Dialect

__all__ = ["SESSION_SECONDS", "Draft", "EditorStore", "Session", "new_draft_document"]

# A session lasts a working day; signing in again starts a new one.
SESSION_SECONDS = 12 * 3600


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_draft_document() -> dict[str, Any]:
    """What a new draft holds: an untitled survey with no questions yet."""
    return {
        "definition": {
            "format": "deniable.survey/2",
            "id": "",
            "title": "",
            "questions": [],
        },
        "results_public": True,
        "require_enrolment": False,
    }


@dataclass(frozen=True, kw_only=True)
class Draft:
    """One stored draft: its document, preview key seed and preview URL secret."""

    id: str
    document: dict[str, Any]
    preview_seed: bytes
    preview_token: str
    updated_at: int

    @property
    def definition(self) -> dict[str, Any]:
        return self.document["definition"]


@dataclass(frozen=True, kw_only=True)
class Session:
    """A signed-in browser: the operator token's id and the session's CSRF token."""

    token_id: int
    csrf: str


class EditorStore:
    """Drafts and sessions (``EditorStore(current_storage().dialect)``)."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    # -- drafts ---------------------------------------------------------------------
    def create_draft(self, document: dict[str, Any]) -> str:
        draft_id = secrets.token_hex(8)
        now = int(time.time())
        with self.dialect.write() as connection:
            self.dialect.run(
                connection,
                "INSERT INTO editor_drafts (id, document, preview_seed, preview_token,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    draft_id,
                    json.dumps(document, ensure_ascii=False),
                    secrets.token_hex(32),
                    secrets.token_urlsafe(24),
                    now,
                    now,
                ),
            )
        return draft_id

    def _draft(self, row: tuple) -> Draft:
        return Draft(
            id=row[0],
            document=json.loads(row[1]),
            preview_seed=bytes.fromhex(row[2]),
            preview_token=row[3],
            updated_at=int(row[4]),
        )

    def get_draft(self, draft_id: str) -> Draft:
        with self.dialect.read() as connection:
            row = self.dialect.run(
                connection,
                "SELECT id, document, preview_seed, preview_token, updated_at"
                " FROM editor_drafts WHERE id = ?",
                (draft_id,),
            ).fetchone()
        if row is None:
            raise NotFound(f"no draft {draft_id[:40]!r}")
        return self._draft(row)

    def list_drafts(self) -> list[Draft]:
        with self.dialect.read() as connection:
            rows = self.dialect.run(
                connection,
                "SELECT id, document, preview_seed, preview_token, updated_at"
                " FROM editor_drafts ORDER BY updated_at DESC, id",
            ).fetchall()
        return [self._draft(row) for row in rows]

    def save_draft(self, draft_id: str, document: dict[str, Any]) -> None:
        with self.dialect.write() as connection:
            updated = self.dialect.run(
                connection,
                "UPDATE editor_drafts SET document = ?, updated_at = ? WHERE id = ?",
                (json.dumps(document, ensure_ascii=False), int(time.time()), draft_id),
            ).rowcount
        if not updated:
            raise NotFound(f"no draft {draft_id[:40]!r}")

    def delete_draft(self, draft_id: str) -> None:
        with self.dialect.write() as connection:
            self.dialect.run(connection, "DELETE FROM editor_drafts WHERE id = ?", (draft_id,))

    # -- sessions -------------------------------------------------------------------
    def create_session(self, token_id: int) -> str:
        """A new session for the operator token ``token_id``: the cookie's value."""
        cookie = secrets.token_urlsafe(32)
        now = int(time.time())
        with self.dialect.write() as connection:
            # Why here: expired sessions are swept whenever someone signs in.
            self.dialect.run(connection, "DELETE FROM editor_sessions WHERE expires_at < ?", (now,))
            self.dialect.run(
                connection,
                "INSERT INTO editor_sessions (digest, token_id, csrf, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (_digest(cookie), token_id, secrets.token_urlsafe(32), now, now + SESSION_SECONDS),
            )
        return cookie

    def find_session(self, cookie: str) -> Session | None:
        """The live session of ``cookie``: unexpired, its operator token unrevoked."""
        with self.dialect.read() as connection:
            row = self.dialect.run(
                connection,
                "SELECT s.token_id, s.csrf FROM editor_sessions s"
                " JOIN operator_tokens t ON t.id = s.token_id"
                " WHERE s.digest = ? AND s.expires_at > ? AND t.revoked_at IS NULL"
                " AND t.surveys IS NULL",
                (_digest(cookie), int(time.time())),
            ).fetchone()
        return None if row is None else Session(token_id=int(row[0]), csrf=row[1])

    def end_session(self, cookie: str) -> None:
        with self.dialect.write() as connection:
            self.dialect.run(
                connection, "DELETE FROM editor_sessions WHERE digest = ?", (_digest(cookie),)
            )
