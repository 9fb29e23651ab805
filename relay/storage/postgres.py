"""The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from deniable.aggregator.storage.base import migrations
from deniable.errors import StorageError

from .base import MIGRATIONS, RelayStorage


class PostgresRelayStorage(RelayStorage):
    """The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

    backend = "postgresql"
    placeholder = "%s"
    for_update = " FOR UPDATE"

    def __init__(self, dsn: str, *, pool_size: int = 10, pool_timeout: float = 10) -> None:
        self.dsn, self.pool_size, self.pool_timeout = dsn, pool_size, pool_timeout
        self._pool: Any = None
        self._pool_lock = threading.Lock()
        self._pid = os.getpid()

    def _get_pool(self) -> Any:
        from psycopg_pool import ConnectionPool, PoolTimeout

        with self._pool_lock:
            if self._pool is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._pool = ConnectionPool(
                    self.dsn,
                    min_size=1,
                    max_size=self.pool_size,
                    timeout=self.pool_timeout,
                    open=False,
                    name="deniable-relay",
                    kwargs={"autocommit": True},
                )
                try:
                    self._pool.open(wait=True, timeout=self.pool_timeout)
                except PoolTimeout as error:
                    self._pool = None
                    raise StorageError(f"postgresql: cannot connect ({error})") from None
            return self._pool

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            with self._get_pool().connection() as connection, connection.transaction():
                yield connection
        except PoolTimeout as error:
            raise StorageError(f"postgresql: no connection available ({error})") from None
        except psycopg.Error as error:
            raise StorageError(f"postgresql: {type(error).__name__}: {error}") from None

    def migrate(self) -> int:
        with self._transaction() as connection:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (0x72656C61,))
            connection.execute(
                "CREATE TABLE IF NOT EXISTS relay_schema_version ("
                " version integer PRIMARY KEY, name text NOT NULL)"
            )
            (current,) = connection.execute(
                "SELECT COALESCE(MAX(version), 0) FROM relay_schema_version"
            ).fetchone()
            for migration in migrations(self.backend, MIGRATIONS):
                if migration.version <= current:
                    continue
                connection.execute(migration.sql.encode("utf-8"))
                connection.execute(
                    "INSERT INTO relay_schema_version (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
                current = migration.version
        return current

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None and self._pid == os.getpid():
                self._pool.close()
            self._pool = None
