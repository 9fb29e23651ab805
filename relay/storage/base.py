"""The relay's storage protocol: the statements of surveys.py, held.py and batches.py,
and what each backend (sqlite.py, postgres.py) says about running them."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from .batches import BatchStore
from .held import HeldStore
from .surveys import SurveyStore

MIGRATIONS = Path(__file__).with_name("migrations")


class RelayStorage(SurveyStore, HeldStore, BatchStore):
    """The relay's storage protocol; subclasses say how one transaction runs."""

    backend: str
    placeholder = "?"
    for_update = ""

    # -- dialect ---------------------------------------------------------------------------
    def _transaction(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _read(self) -> contextlib.AbstractContextManager[Any]:
        """A transaction that only reads (SQLite: takes no write lock)."""
        return self._transaction()

    def _sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def _run(self, connection: Any, sql: str, params: tuple = ()) -> Any:
        return connection.execute(self._sql(sql), params)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def migrate(self) -> int:
        raise NotImplementedError

    def ping(self) -> None:
        with self._transaction() as connection:
            self._run(connection, "SELECT 1").fetchone()
