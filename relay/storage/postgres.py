"""The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

from __future__ import annotations

from deniable.service.storage import PostgresDialect

from .base import RelayStorage

__all__ = ["PostgresRelayStorage"]

# An arbitrary constant: the advisory lock that serializes the relay's migrators.
MIGRATION_LOCK = 0x72656C61


class PostgresRelayStorage(RelayStorage):
    """The relay's storage in PostgreSQL (psycopg 3, a connection pool)."""

    def __init__(self, dsn: str, *, pool_size: int = 10, pool_timeout: float = 10) -> None:
        super().__init__(
            PostgresDialect(
                dsn,
                pool_size=pool_size,
                pool_timeout=pool_timeout,
                name="deniable-relay",
                migration_lock=MIGRATION_LOCK,
            )
        )
        self.dsn = dsn
