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
from .sqlite import SqliteStorage
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


def _postgres_storage(dsn: str, **options: Any) -> Storage:
    # Why: imported lazily so an SQLite-only install needs no psycopg.
    from .postgres import PostgresStorage

    return PostgresStorage(dsn, **options)


# What opens the aggregator's storage in each backend (:func:`open_storage`).
OPENERS = {"sqlite": SqliteStorage, "postgresql": _postgres_storage}


def open_storage(settings: Mapping[str, Any]) -> Storage:
    """The backend for ``settings["DATABASE"]`` (not yet migrated)."""
    return service_storage.open_storage(settings, OPENERS)


def init_app(app: Flask) -> None:
    """Open (and migrate) the app's storage; close it at interpreter exit."""
    service_storage.init_app(app, opener=open_storage, extension=EXTENSION)


def current_storage() -> Storage:
    return current_app.extensions[EXTENSION]
