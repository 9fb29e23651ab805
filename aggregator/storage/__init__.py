"""The aggregator's storage: SQLite (default) or PostgreSQL (a ``postgresql://`` DSN).

One :class:`Storage` over a dialect (:mod:`deniable.service.storage`).
:func:`open_storage` picks the backend from the DATABASE setting;
:func:`init_app` attaches one :class:`Storage` to the Flask app (migrating the
schema unless ``MIGRATE`` is off) and :func:`current_storage` returns it in a
request.  The CLI uses :func:`open_storage` directly with the same settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask, current_app

from deniable.service import storage as service_storage
from deniable.service.storage import is_postgres

from .base import Storage
from .records import QuestionStatistics, StoredReport, SurveyRecord
from .tokens import OperatorToken, hash_token

EXTENSION = "deniable.storage"

__all__ = [
    "EXTENSION",
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


def init_app(app: Flask) -> None:
    """Open (and migrate) the app's storage; close it at interpreter exit."""
    service_storage.init_app(app, opener=open_storage, extension=EXTENSION)


def current_storage() -> Storage:
    return current_app.extensions[EXTENSION]
