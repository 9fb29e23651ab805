"""Storage backends: SQLite (default) and PostgreSQL (a ``postgresql://`` DSN).

:func:`open_storage` picks the backend from the DATABASE setting;
:func:`init_app` attaches one :class:`Storage` to the Flask app (migrating the
schema unless ``MIGRATE`` is off) and :func:`current_storage` returns it in a
request.  The CLI uses :func:`open_storage` directly with the same settings.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, current_app

from .base import QuestionStatistics, Storage, StoredReport, SurveyRecord
from .tokens import OperatorToken, hash_token

EXTENSION = "deniable.storage"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")

__all__ = [
    "OperatorToken",
    "QuestionStatistics",
    "Storage",
    "StoredReport",
    "SurveyRecord",
    "current_storage",
    "hash_token",
    "init_app",
    "is_postgres",
    "open_storage",
]


def is_postgres(database: str) -> bool:
    return database.startswith(POSTGRES_SCHEMES)


def open_storage(settings: Mapping[str, Any]) -> Storage:
    """The backend for ``settings["DATABASE"]`` (not yet migrated)."""
    database = settings["DATABASE"]
    if is_postgres(database):
        # Why: imported lazily so an SQLite-only install needs no psycopg.
        from .postgres import PostgresStorage

        return PostgresStorage(
            database,
            pool_size=settings.get("POOL_SIZE", 10),
            pool_timeout=settings.get("POOL_TIMEOUT", 10),
        )
    from .sqlite import SqliteStorage

    return SqliteStorage(database, busy_timeout_ms=settings.get("BUSY_TIMEOUT_MS", 30_000))


def init_app(
    app: Flask,
    *,
    opener: Callable[[Mapping[str, Any]], Any] = open_storage,
    extension: str = EXTENSION,
) -> None:
    """Open (and migrate) the app's storage; close it at interpreter exit.

    ``opener`` and ``extension`` let another service (the relay) attach its own
    storage the same way."""
    storage = opener(app.config)
    if app.config.get("MIGRATE", True):
        storage.migrate()
        # Why: a server that forks after create_app (gunicorn --preload) must not share
        # the parent's pooled connections; each process reopens its own on first use.
        storage.close()
    app.extensions[extension] = storage
    atexit.register(storage.close)


def current_storage() -> Storage:
    return current_app.extensions[EXTENSION]
