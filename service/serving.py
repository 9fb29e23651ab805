"""Serving: gunicorn manages the processes, waitress reads the requests.

Why not gunicorn's sync workers: a sync worker reads a request on the one
thread that also runs the app, so W connections that trickle their headers or
body (slowloris) hold all W workers until the worker timeout, and ``/health``
waited 60 s behind two of them.  Here each gunicorn worker runs
waitress instead: its asyncore loop reads every connection without blocking
and buffers a request *whole* (headers, then the body up to
``MAX_BODY_BYTES``, spooled to a temporary file past 512 KiB) before a thread
of its pool runs the app.  A slow or stalled client therefore holds a socket,
never a thread; a connection idle for ``CHANNEL_TIMEOUT`` seconds is closed,
and each worker keeps at most ``CONNECTION_LIMIT`` connections open (poll(),
not select(), so more than 1,024 descriptors work).  gunicorn keeps what it is
good at: forking ``--workers`` processes on one listening socket, restarting a
dead one, graceful SIGTERM, and the heartbeat that replaces a hung worker.
Its control socket (gunicorn 25.1 onwards) is off: it lives at one path per
user, so instances on one host would share it.

Each service serves its own app factory this way (``deniable-aggregator serve``,
``deniable-relay serve``).

Errors that waitress writes itself, before the app runs (a body over the
limit, headers over 256 KiB, a malformed request line), are plain text, not
problem+json: docs/api.md says which.

The body limit is decided per request, once its headers are in and before any
of its body is read: twice ``MAX_BODY_BYTES`` (so a body a little over the
app's limit still reaches the app, which answers problem+json 413), unless the
app registered a :data:`BODY_LIMIT` callable (:func:`set_body_limit`) that
allows more for this request (the aggregator: its batch route, with a valid
relay credential).  A larger ``Content-Length`` is answered 413 at once and the
connection closed; a chunked body is cut off as it passes the limit.  Why not
one limit for every route: waitress buffers a body whole before the app runs,
so the largest limit any route needs would let anyone make it spool that much.
"""

from __future__ import annotations

import copy
import ctypes
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.workers.base import Worker

# Per worker process: app threads, open connections, idle seconds before a close.
THREADS = 8
CONNECTION_LIMIT = 1000
CHANNEL_TIMEOUT = 30
_M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def limit_malloc_arenas() -> bool:
    """One glibc malloc arena for this process (True if set; False off glibc).

    glibc gives threads arenas of their own, up to 8 per core, and keeps what is
    freed in each.  A worker's 8 threads take turns at large, short-lived
    allocations (SQLite's page cache and sorter while ids merge, request
    bodies), so each arena ended up holding its own high-water mark: a worker's
    resident memory grew by about 150 bytes per report stored.  With
    one arena the next such allocation reuses what the last one freed.  The
    threads serialize on the GIL anyway; in-process bulk ingest ran as fast.
    Called in each worker before its threads start.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return False
    return mallopt(_M_ARENA_MAX, 1) == 1


# The app's extension key for a callable ``(method, path, headers) -> int | None``: the
# largest body this request may send, or None for the default (twice MAX_BODY_BYTES).
# ``headers`` are waitress's (upper case, dashes as underscores).  It runs on the event
# loop, before the body is read: it must answer quickly.
BODY_LIMIT = "deniable.body_limit"

BodyLimit = Callable[[str, str, Mapping[str, str]], "int | None"]


def set_body_limit(app: Any, limit: BodyLimit) -> None:
    """Let ``limit`` raise the body limit of the requests it names (see :data:`BODY_LIMIT`)."""
    app.extensions[BODY_LIMIT] = limit


def _limited_parser(default: int, limit: BodyLimit | None) -> type:
    """waitress's request parser, with the body limit decided per request once its
    headers are read (the module docstring says why)."""
    from waitress.parser import HTTPRequestParser
    from waitress.utilities import RequestEntityTooLarge

    class LimitedParser(HTTPRequestParser):
        def received(self, data: bytes) -> int:
            before = self.headers_finished
            consumed = super().received(data)
            if before or not self.headers_finished or self.completed:
                return consumed
            allowed = default
            if limit is not None:
                try:
                    allowed = max(default, limit(self.command, self.path, self.headers) or 0)
                except Exception:  # noqa: BLE001 - in doubt, the default limit
                    allowed = default
            # Why a copy: the adjustments are the server's; this request's limit is its own
            # (waitress checks a chunked body against adj.max_request_body_size as it reads).
            self.adj = copy.copy(self.adj)
            self.adj.max_request_body_size = allowed
            if self.content_length >= allowed:
                self.error = RequestEntityTooLarge(f"exceeds max_body of {allowed}")
                self.completed = True
            return consumed

    return LimitedParser


class WaitressWorker(Worker):
    """A gunicorn worker that serves its inherited listening sockets with waitress."""

    def run(self) -> None:
        from waitress.channel import HTTPChannel
        from waitress.server import BaseWSGIServer, create_server

        max_body = int(self.app.app_config.get("MAX_BODY_BYTES", 1_048_576))
        channels: dict = {}  # waitress's asyncore map: the listeners and every connection
        server = create_server(
            self.wsgi,
            map=channels,
            sockets=[listener.sock for listener in self.sockets],
            threads=THREADS,
            connection_limit=CONNECTION_LIMIT,
            channel_timeout=CHANNEL_TIMEOUT,
            cleanup_interval=5,
            asyncore_use_poll=True,
            # The most any request may send; each request's own limit is set by
            # _limited_parser once its headers are read (the module docstring).
            max_request_body_size=max(
                2 * max_body, int(self.app.app_config.get("MAX_RELAY_BATCH_BYTES", 0))
            ),
            ident="deniable",
            clear_untrusted_proxy_headers=False,  # the app applies TRUST_PROXY itself
        )
        limit = getattr(self.wsgi, "extensions", {}).get(BODY_LIMIT)
        parser = _limited_parser(2 * max_body, limit)
        channel = type("LimitedChannel", (HTTPChannel,), {"parser_class": parser})
        for listener in list(channels.values()):
            if isinstance(listener, BaseWSGIServer):
                listener.channel_class = channel
        last_beat = 0.0
        try:
            while self.alive:
                server.asyncore.loop(timeout=0.5, map=channels, use_poll=True, count=1)
                now = time.monotonic()
                if now - last_beat >= 1.0:
                    self.notify()  # gunicorn's heartbeat: this worker is not hung
                    last_beat = now
                if self.ppid != os.getppid():
                    break  # the master is gone
        finally:
            server.task_dispatcher.shutdown(timeout=max(1, self.cfg.graceful_timeout))
            server.close()


class ServiceApplication(BaseApplication):
    """gunicorn with :class:`WaitressWorker`, serving ``factory(config)`` in each worker.

    ``child_exit``: gunicorn's hook when a worker ends (the metrics forget its live values);
    ``after_load``: called with each worker's app once it is built.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        bind: str,
        workers: int,
        timeout: int,
        *,
        factory: Callable[[Mapping[str, Any]], Any],
        process_name: str,
        child_exit: Callable[[Any, Any], None] | None = None,
        after_load: Callable[[Any], None] | None = None,
    ) -> None:
        self.app_config = dict(config)
        self.bind, self.workers, self.timeout = bind, workers, timeout
        self.factory, self.process_name = factory, process_name
        self.child_exit, self.after_load = child_exit, after_load
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", [self.bind])
        self.cfg.set("workers", self.workers)
        self.cfg.set("timeout", self.timeout)
        self.cfg.set("proc_name", self.process_name)
        self.cfg.set("worker_class", f"{__name__}.WaitressWorker")
        if "control_socket_disable" in self.cfg.settings:  # gunicorn >= 25.1
            # Why: gunicorn's control socket sits at one per-user path
            # ($XDG_RUNTIME_DIR/gunicorn.ctl) for every instance, so a second aggregator
            # (or a relay) on the host took it over and stopping either deleted it under
            # the other.  Nothing here uses it: signals manage the server.
            self.cfg.set("control_socket_disable", True)
        if self.child_exit is not None:
            self.cfg.set("child_exit", self.child_exit)

    def load(self):
        limit_malloc_arenas()
        # Why: built in each worker after fork, so no connection crosses a fork.
        app = self.factory(self.app_config)
        if self.after_load is not None:
            self.after_load(app)
        return app


def serve(
    config: Mapping[str, Any],
    bind: str,
    workers: int,
    timeout: int = 60,
    *,
    factory: Callable[[Mapping[str, Any]], Any],
    process_name: str,
    child_exit: Callable[[Any, Any], None] | None = None,
    after_load: Callable[[Any], None] | None = None,
) -> None:
    """Serve ``factory``'s app (blocks until stopped); see the module and
    :class:`ServiceApplication`."""
    ServiceApplication(
        config,
        bind,
        workers,
        timeout,
        factory=factory,
        process_name=process_name,
        child_exit=child_exit,
        after_load=after_load,
    ).run()


__all__ = [
    "BODY_LIMIT",
    "CHANNEL_TIMEOUT",
    "BodyLimit",
    "CONNECTION_LIMIT",
    "THREADS",
    "ServiceApplication",
    "WaitressWorker",
    "limit_malloc_arenas",
    "serve",
    "set_body_limit",
]
