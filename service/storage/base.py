"""A service's storage over one dialect: its lifecycle, its two backends, opening it.

:class:`ServiceStorage` is what the aggregator's ``Storage`` and the relay's
``RelayStorage`` have in common: a :class:`~.dialect.Dialect`, the service's own
migrations and version table, ``migrate``, ``schema_version``, ``ping`` and
``close``.  :class:`SqliteServiceStorage` and :class:`PostgresServiceStorage` build
that dialect from a path or a DSN, so a service's backend class names only what is
its own (SQLite pragmas; the pool's name and the migration lock); and
:func:`open_storage` picks the backend from the DATABASE setting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .dialect import Dialect, PostgresDialect, SqliteDialect, is_postgres
from .file_lock import FileLock

__all__ = [
    "PostgresServiceStorage",
    "ServiceStorage",
    "SqliteServiceStorage",
    "beside",
    "open_storage",
]

T = TypeVar("T")


class ServiceStorage:
    """A service's storage over ``dialect``: its statements are the service's own, its
    lifecycle is this."""

    migrations_folder: ClassVar[Path]  # the service's migrations: <backend>/NNNN_name.sql
    version_table: ClassVar[str] = "schema_version"
    stamped: ClassVar[bool] = True  # the version table records when each was applied

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.backend = dialect.backend

    def migrate(self) -> int:
        """Apply pending migrations; return the schema version."""
        return self.dialect.migrate(
            self.migrations_folder, table=self.version_table, stamped=self.stamped
        )

    def schema_version(self) -> int:
        """The highest applied migration (0 for an empty database)."""
        return self.dialect.schema_version(self.version_table)

    def ping(self) -> None:
        """Raise StorageError unless the database answers and would accept writes."""
        self.dialect.ping()

    def close(self) -> None:
        """Release this process's connections (each reopens on its next use)."""
        self.dialect.close()

    def _transaction(self) -> contextlib.AbstractContextManager[Any]:
        """A write transaction on the backend's own connection (tests and benchmarks run
        raw SQL in it)."""
        return self.dialect.write()


def beside(path: Path, suffix: str) -> Path:
    """A file next to the database: its name and ``suffix``."""
    return path.with_name(path.name + suffix)


class SqliteServiceStorage(ServiceStorage):
    """A service's storage in one SQLite file (:class:`~.dialect.SqliteDialect`), its
    connections running the service's ``pragmas`` too."""

    pragmas: ClassVar[tuple[str, ...]] = ()

    def __init__(self, path: str, *, busy_timeout_ms: int = 30_000) -> None:
        dialect = SqliteDialect(path, busy_timeout_ms=busy_timeout_ms, pragmas=self.pragmas)
        # Why the turn: writers queue on a file lock handed over within 0.2 ms; on SQLite's
        # busy handler a waiting writer sleeps up to 100 ms between tries, and the lock
        # stood idle meanwhile.
        dialect.write_turn = FileLock(beside(dialect.path, ".write-lock"))
        super().__init__(dialect)
        self.path = dialect.path


class PostgresServiceStorage(ServiceStorage):
    """A service's storage in PostgreSQL (:class:`~.dialect.PostgresDialect`: psycopg 3,
    a pool named ``pool_name``; ``migration_lock``, an arbitrary constant per service,
    is the advisory lock that serializes its migrators)."""

    pool_name: ClassVar[str]
    migration_lock: ClassVar[int]

    def __init__(self, dsn: str, *, pool_size: int = 10, pool_timeout: float = 10) -> None:
        super().__init__(
            PostgresDialect(
                dsn,
                pool_size=pool_size,
                pool_timeout=pool_timeout,
                name=self.pool_name,
                migration_lock=self.migration_lock,
            )
        )
        self.dsn = dsn


def open_storage(settings: Mapping[str, Any], openers: Mapping[str, Callable[..., T]]) -> T:
    """A service's storage for ``settings["DATABASE"]``, not yet migrated.

    ``openers`` maps a backend (``"sqlite"``, ``"postgresql"``) to what opens the
    service's storage in it: ``(dsn, pool_size=POOL_SIZE, pool_timeout=POOL_TIMEOUT)``
    for a ``postgresql://`` DSN, ``(path, busy_timeout_ms=BUSY_TIMEOUT_MS)`` for an
    SQLite file, each setting with its default where ``settings`` has none.
    """
    database = str(settings["DATABASE"])
    if is_postgres(database):
        return openers["postgresql"](
            database,
            pool_size=settings.get("POOL_SIZE", 10),
            pool_timeout=settings.get("POOL_TIMEOUT", 10),
        )
    return openers["sqlite"](database, busy_timeout_ms=settings.get("BUSY_TIMEOUT_MS", 30_000))
