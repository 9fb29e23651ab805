"""The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

from __future__ import annotations

from deniable.service.storage import PostgresServiceStorage

from .base import RelayStorage

__all__ = ["PostgresRelayStorage"]


class PostgresRelayStorage(PostgresServiceStorage, RelayStorage):
    """The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

    pool_name = "deniable-relay"
    # An arbitrary constant: the advisory lock that serializes the relay's migrators.
    migration_lock = 0x72656C61
