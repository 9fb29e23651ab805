"""Slow answers a page shows without waiting for them: computed once per key on a worker thread.

A page that needs something slow (the relay's held count, a relay-noise plan) asks
:meth:`BackgroundResults.get`: a kept answer is returned at once; otherwise the work is
started (once per key, however many pages ask) and the page waits at most ``wait`` seconds
for it, then shows what it has (a stale answer, or nothing yet) while the work goes on and
is kept for the next page.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["BackgroundResults"]


class BackgroundResults:
    """Answers by key, each computed on one of ``workers`` threads and kept ``ttl`` seconds
    (None: until the oldest are dropped past ``capacity``); at most ``max_pending`` computed
    at once (None: no limit).  The work itself should catch what it expects (an answer that
    says "failed" is an answer); anything else it raises is kept nowhere, and the next page
    asks again."""

    def __init__(
        self,
        *,
        name: str,
        workers: int,
        capacity: int,
        ttl: float | None = None,
        max_pending: int | None = None,
    ) -> None:
        self._kept: dict[Hashable, tuple[float, Any]] = {}
        self._pending: dict[Hashable, Future] = {}
        self._lock = threading.RLock()  # a future already done runs its callback at once, in here
        self._workers = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._capacity, self._ttl, self._max_pending = capacity, ttl, max_pending

    def get(
        self, key: Hashable, work: Callable[..., Any], *arguments: Any, wait: float
    ) -> tuple[bool, Any]:
        """(True, the answer) when one is kept fresh or arrives within ``wait`` seconds, else
        (False, the stale answer or None) while ``work(*arguments)`` goes on in the background.
        Raises what the work raised if it failed within ``wait``."""
        now = time.monotonic()
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and (self._ttl is None or now - kept[0] < self._ttl):
                return True, kept[1]
            future = self._pending.get(key)
            if future is None:
                if self._max_pending is not None and len(self._pending) >= self._max_pending:
                    return False, None if kept is None else kept[1]
                future = self._workers.submit(work, *arguments)
                self._pending[key] = future
                future.add_done_callback(lambda done: self._done(key, done))
        try:
            return True, future.result(timeout=wait)
        except TimeoutError:
            return False, None if kept is None else kept[1]

    def _done(self, key: Hashable, future: Future) -> None:
        with self._lock:
            self._pending.pop(key, None)
            if future.exception() is not None:
                return
            self._kept[key] = (time.monotonic(), future.result())
            while len(self._kept) > self._capacity:
                self._kept.pop(next(iter(self._kept)))
