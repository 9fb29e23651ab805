"""What every command line (``deniable``, ``deniable-aggregator``, ``deniable-relay``) shares on
a terminal.

* The exit-status table, one for every program (documented in docs/operations.md):

  ====  =====================================================================
  0     success
  1     an unexpected failure (a bug: please report it)
  2     usage: a bad option, argument, setting, database URL or input file
  3     not found: no such survey, token, key or database
  4     refused: by policy or because of a conflict (closed survey, id taken,
        signature or budget check, a spent or revoked token, rate limit)
  5     unavailable: the database, the aggregator or the device state cannot
        be reached or read, or a needed component is not installed
  130   interrupted (Ctrl-C)
  ====  =====================================================================

* :class:`Progress`, the one progress bar: redrawn in place (at most ten times a
  second) on a terminal; on anything else (a log file, a pipe) one line at each
  quarter, so logs stay short.
* :func:`quiet_pipe`: output to a closed pipe (``... | head``) ends the program
  quietly instead of with a BrokenPipeError traceback.

It lives in the core, standard library only, so the device needs no Flask and the
services no device client.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import TextIO

from deniable.errors import (
    AuthenticationError,
    ClientError,
    Conflict,
    InvalidParameter,
    InvalidReport,
    InvalidSurvey,
    InvalidValue,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    StateError,
    StorageError,
    TransportError,
)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_REFUSED = 4
EXIT_UNAVAILABLE = 5
EXIT_INTERRUPTED = 130

# Most specific first.
EXIT_STATUSES: tuple[tuple[type[BaseException], int], ...] = (
    (NotFound, EXIT_NOT_FOUND),
    (StorageError, EXIT_UNAVAILABLE),
    (StateError, EXIT_UNAVAILABLE),
    (TransportError, EXIT_UNAVAILABLE),
    (InvalidParameter, EXIT_USAGE),
    (InvalidValue, EXIT_USAGE),
    (InvalidSurvey, EXIT_USAGE),
    (InvalidReport, EXIT_USAGE),
    (Conflict, EXIT_REFUSED),
    (AuthenticationError, EXIT_REFUSED),
    (RateLimited, EXIT_REFUSED),
    (PayloadTooLarge, EXIT_REFUSED),
    (ClientError, EXIT_REFUSED),
)


def exit_status(error: BaseException) -> int:
    """The exit status for an error that ends a command (see the table above)."""
    code = getattr(error, "exit_status", None)
    if isinstance(code, int):
        return code
    if isinstance(error, TransportError) and error.status is not None and error.status < 500:
        return EXIT_NOT_FOUND if error.status == 404 else EXIT_REFUSED
    for cls, status in EXIT_STATUSES:
        if isinstance(error, cls):
            return status
    if type(error).__name__ == "SettingsError":  # the service kit's; a ValueError
        return EXIT_USAGE
    return EXIT_FAILURE


@contextlib.contextmanager
def quiet_pipe() -> Iterator[None]:
    """Run a command; if its reader went away (EPIPE), end quietly with status 0.

    Why redirect stdout to devnull: the interpreter flushes stdout again at exit,
    which would raise (and print) a second BrokenPipeError.
    """
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(EXIT_OK) from None


class Progress:
    """A progress bar on a stream (stderr by default).

    On a terminal it is redrawn in place at most ten times a second; elsewhere it
    writes one line at 25%, 50%, 75% and 100%.  ``stream=None`` draws nothing.
    Thread-safe: senders on several threads may :meth:`advance` it.
    """

    def __init__(
        self, total: int, label: str, stream: TextIO | None = sys.stderr, width: int = 30
    ) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream
        self.width = width
        self.done = 0
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self._next_quarter = 1
        self._last_draw = -1.0
        self._finished = False
        self._lock = threading.Lock()
        self._started = time.monotonic()

    def advance(self, count: int = 1) -> None:
        """Add ``count``; the increment happens under the lock, so no thread's count is lost."""
        with self._lock:
            self._show(self.done + count, final=False)

    def update(self, done: int, *, final: bool = False) -> None:
        """Show ``done`` of ``total``; ``final`` (or reaching the total) ends the bar."""
        with self._lock:
            self._show(done, final=final)

    def _show(self, done: int, *, final: bool) -> None:
        """Draw ``done`` (the caller holds the lock)."""
        self.done = done
        if self.stream is None or self._finished:
            return
        final = final or done >= self.total
        now = time.monotonic()
        if self.tty:
            if final or now - self._last_draw >= 0.1:
                self._last_draw = now
                self.stream.write("\r" + self._text(now) + ("\n" if final else ""))
                self.stream.flush()
        else:
            quarter = 4 * min(done, self.total) // self.total
            if final or quarter >= self._next_quarter:
                self._next_quarter = quarter + 1
                self.stream.write(self._text(now) + "\n")
                self.stream.flush()
        self._finished = final

    def _text(self, now: float) -> str:
        fraction = min(self.done / self.total, 1.0)
        rate = self.done / max(now - self._started, 1e-9)
        filled = int(fraction * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{self.label} [{bar}] {self.done:,}/{self.total:,} ({rate:,.0f}/s)"


__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_STATUSES",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "Progress",
    "exit_status",
    "quiet_pipe",
]
