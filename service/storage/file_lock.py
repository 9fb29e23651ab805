"""A file lock that queues a SQLite database's writers across threads and processes.

:class:`FileLock` is what :attr:`~.dialect.SqliteDialect.write_turn` takes before
``BEGIN IMMEDIATE``: writers wait on an ``flock`` handed over within 0.2 ms, rather
than on SQLite's busy handler, which sleeps up to 100 ms between tries.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

from deniable.errors import StorageError
from deniable.service.datadir import open_lock_file

__all__ = ["FileLock"]

_POLL_S = 0.0002


class FileLock:
    """An exclusive ``flock`` on a file beside the database: one holder among every
    thread and process, handed over within 0.2 ms.

    SQLite's own busy handler polls with sleeps of up to 100 ms, so two workers
    writing in turn left the write lock idle for most of each wait.  Each thread
    opens its own descriptor: a lock belongs to an open file description, so a
    shared one would let the threads of one process in together.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._opened: list[int] = []  # every thread's descriptor, closed by close()
        self._generation = 0
        weakref.finalize(self, _close_all, self._opened)

    def close(self) -> None:
        """Close every thread's descriptor (each reopens on its next use)."""
        self._generation += 1
        _close_all(self._opened)

    @contextlib.contextmanager
    def held(self, *, wait: float = 0.0) -> Iterator[bool]:
        """Yield True while holding the lock; False if it is still taken after ``wait`` s."""
        local = self._local
        if getattr(local, "depth", 0):  # already held by this thread: nested, not re-taken
            local.depth += 1
            try:
                yield True
            finally:
                local.depth -= 1
            return
        if getattr(local, "opened", None) != (os.getpid(), self._generation):
            try:
                # Why not a plain open: a symbolic link planted as the lock file is refused.
                local.descriptor = open_lock_file(self.path)
            except OSError as error:
                raise StorageError(f"sqlite lock file {self.path}: {error}") from None
            local.opened = (os.getpid(), self._generation)
            self._opened.append(local.descriptor)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(local.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(_POLL_S)
        local.depth = 1
        try:
            yield True
        finally:
            local.depth = 0
            fcntl.flock(local.descriptor, fcntl.LOCK_UN)


def _close_all(descriptors: list[int]) -> None:
    while descriptors:
        with contextlib.suppress(OSError):
            os.close(descriptors.pop())
