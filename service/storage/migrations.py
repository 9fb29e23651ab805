"""Numbered schema migrations: plain SQL files, one folder per backend.

A service keeps its own folder (``<root>/sqlite/NNNN_name.sql`` and
``<root>/postgresql/NNNN_name.sql``, numbered 1..n) and its own version table;
:meth:`deniable.service.storage.Dialect.migrate` applies the pending ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deniable.errors import StorageError

__all__ = ["Migration", "migrations"]


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
