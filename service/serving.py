"""Serving: gunicorn manages the processes, waitress reads the requests.

Why not gunicorn's sync workers: a sync worker reads a request on the one
thread that also runs the app, so W connections that trickle their headers or
body (slowloris) hold all W workers until the worker timeout, and ``/health``
waited 60 s behind two of them (issue 8).  Here each gunicorn worker runs
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

Errors that waitress writes itself, before the app runs (a body over the
limit, headers over 256 KiB, a malformed request line), are plain text, not
problem+json: docs/api.md says which.
"""

from __future__ import annotations

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
PROCESS_NAME = "deniable-aggregator"


class WaitressWorker(Worker):
    """A gunicorn worker that serves its inherited listening sockets with waitress."""

    def run(self) -> None:
        from waitress.server import create_server

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
            # Why twice the app's limit: a body a little over it still reaches the app,
            # which answers problem+json 413; far larger ones are cut off by waitress.
            max_request_body_size=max(
                2 * max_body, int(self.app.app_config.get("MAX_RELAY_BATCH_BYTES", 0))
            ),
            ident="deniable",
            clear_untrusted_proxy_headers=False,  # the app applies TRUST_PROXY itself
        )
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


class AggregatorApplication(BaseApplication):
    """gunicorn with :class:`WaitressWorker`, serving ``create_app(config)`` in each worker."""

    def __init__(
        self,
        config: Mapping[str, Any],
        bind: str,
        workers: int,
        timeout: int,
        *,
        factory: Callable[[Mapping[str, Any]], Any] | None = None,
        process_name: str = PROCESS_NAME,
    ) -> None:
        self.app_config = dict(config)
        self.bind, self.workers, self.timeout = bind, workers, timeout
        # Another service (the relay) serves its own app factory the same way.
        self.factory, self.process_name = factory, process_name
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
            # the other (issue 19).  Nothing here uses it: signals manage the server.
            self.cfg.set("control_socket_disable", True)
        if self.factory is None:
            from .metrics import child_exit

            self.cfg.set("child_exit", child_exit)  # metrics: forget a dead worker's live values

    def load(self):
        from . import create_app

        # Why: built in each worker after fork, so no connection crosses a fork.
        app = (self.factory or create_app)(self.app_config)
        if self.factory is None:
            from .api.opening import warm_when_relayed

            warm_when_relayed(app)  # a relay's first large batch finds its processes up
        return app


def serve(
    config: Mapping[str, Any],
    bind: str,
    workers: int,
    timeout: int = 60,
    *,
    factory: Callable[[Mapping[str, Any]], Any] | None = None,
    process_name: str = PROCESS_NAME,
) -> None:
    """Serve the aggregator, or ``factory``'s app (blocks until stopped); see the docstring."""
    AggregatorApplication(
        config, bind, workers, timeout, factory=factory, process_name=process_name
    ).run()
