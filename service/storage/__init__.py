"""The storage layer both services stand on: SQLite or PostgreSQL, one way.

* :mod:`~deniable.service.storage.dialect`: a :class:`Dialect` per backend, side by
  side: connections (SQLite pragmas, the PostgreSQL pool), transactions, error
  mapping, placeholders, row locks and the other spellings that differ;
* :mod:`~deniable.service.storage.migrations`: numbered SQL files per backend,
  applied by :meth:`Dialect.migrate`;
* :mod:`~deniable.service.storage.base`: :class:`ServiceStorage`, a service's storage
  over a dialect (migrate, ping, close), its SQLite and PostgreSQL constructors, and
  :func:`open_storage`, which picks the backend from the DATABASE setting;
* :mod:`~deniable.service.storage.timestamps`: one timestamp format.

A service writes each of its statements once, over a dialect, and keeps its own
tables and migrations (the aggregator's ``deniable.aggregator.storage``, the
relay's ``deniable.relay.storage``).  :func:`init_app` attaches a service's
storage to its Flask app.
"""

from __future__ import annotations

import atexit
import functools
from collections.abc import Callable, Mapping
from typing import Any

from .base import (
    PostgresServiceStorage,
    ServiceStorage,
    SqliteServiceStorage,
    beside,
    open_storage,
)
from .dialect import (
    POSTGRES_SCHEMES,
    Dialect,
    PostgresDialect,
    SqliteDialect,
    is_postgres,
    split_statements,
)
from .migrations import Migration, migrations
from .timestamps import iso, utc_now

__all__ = [
    "POSTGRES_SCHEMES",
    "Dialect",
    "Migration",
    "PostgresDialect",
    "PostgresServiceStorage",
    "ServiceStorage",
    "SqliteDialect",
    "SqliteServiceStorage",
    "beside",
    "forwarded",
    "init_app",
    "is_postgres",
    "iso",
    "migrations",
    "open_storage",
    "split_statements",
    "utc_now",
]


def init_app(app: Any, *, opener: Callable[[Mapping[str, Any]], Any], extension: str) -> None:
    """Open a service's storage (``opener(app.config)``), migrate it unless the setting
    ``MIGRATE`` is off, keep it as ``app.extensions[extension]`` and close it at exit."""
    storage = opener(app.config)
    if app.config.get("MIGRATE", True):
        storage.migrate()
        # Why: a server that forks after create_app (gunicorn --preload) must not share
        # the parent's pooled connections; each process reopens its own on first use.
        storage.close()
    app.extensions[extension] = storage
    atexit.register(storage.close)


def forwarded(store: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of the store held in attribute ``store``, as a method of the storage
    that holds it: a service's storage offers its stores' methods under one name each."""

    @functools.wraps(method)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(getattr(self, store), *args, **kwargs)

    return forward
