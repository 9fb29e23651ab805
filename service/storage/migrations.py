"""Numbered schema migrations: plain SQL files, one folder per backend.

A service keeps its own folder (``<root>/sqlite/NNNN_name.sql`` and
``<root>/postgresql/NNNN_name.sql``, numbered 1..n) and its own version table;
:meth:`deniable.service.storage.Dialect.migrate` applies the pending ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from deniable.errors import StorageError

if TYPE_CHECKING:
    from .dialect import Dialect

__all__ = ["Migration", "migrate", "migrations"]


@dataclass(frozen=True, kw_only=True)
class Migration:
    """One versioned schema change: ``NNNN_name.sql``."""

    version: int
    name: str
    sql: str


def migrations(backend: str, root: Path) -> list[Migration]:
    """The migrations of one backend under ``root``, in version order."""
    found = []
    for path in sorted((root / backend).glob("*.sql")):
        number, _, name = path.stem.partition("_")
        found.append(Migration(version=int(number), name=name, sql=path.read_text("utf-8")))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise StorageError(f"migrations for {backend} are not numbered 1..n: {versions}")
    return found


def migrate(dialect: Dialect, root: Path, *, table: str, stamped: bool) -> int:
    """Apply the migrations under ``root`` not yet in the version table ``table``, each
    with its version row in one transaction; return the version.

    ``stamped``: the version table records when each was applied.  Concurrent
    migrators (several processes starting) apply each migration once.
    """
    dialect.create_version_table(table, stamped)
    with dialect.write() as connection:
        dialect.lock_migrations(connection, table, stamped)
        (current,) = connection.execute(f"SELECT COALESCE(MAX(version), 0) FROM {table}").fetchone()
        for migration in migrations(dialect.backend, root):
            if migration.version <= current:
                continue
            dialect.run_script(connection, migration.sql)
            values = (migration.version, migration.name, *dialect.stamp(stamped))
            columns = "version, name" + (", applied_at" if len(values) == 3 else "")
            dialect.run(
                connection,
                f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(values))})",
                values,
            )
            current = migration.version
    return current
