"""Prometheus metrics at ``GET /metrics`` (setting ``METRICS``; an unscoped operator token).

Off by default.  With ``METRICS=true`` the app counts, with ``prometheus-client``:

* ``deniable_reports_accepted_total{survey}``: reports acknowledged (stored, or a
  retry of stored ones);
* ``deniable_submissions_refused_total{reason}``: report submissions refused, by
  problem type (``rate-limited``, ``invalid-report``, ``conflict``, ``forbidden`` ...);
* ``deniable_request_duration_seconds{method,endpoint,status}``: request latency
  (methods outside :data:`METHODS` count as ``other``, requests no route matched as
  endpoint ``unmatched``: every label value comes from a fixed set, so no client can
  add series);
* ``deniable_fold_seconds``: time to fold pending reports into the statistics;
* ``deniable_storage_errors_total{backend,operation}``: database failures.

The endpoint answers only a bearer operator token that is not limited to some
surveys (401 without one, 403 with another).  Under gunicorn with several
workers, ``deniable-aggregator serve`` points ``PROMETHEUS_MULTIPROC_DIR`` at a
fresh directory before the workers start, so every scrape sums all workers
(prometheus-client's multiprocess mode), and removes it when it stops
(:func:`multiprocess_directory`); set it yourself under another server.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from deniable.errors import StorageError

EXTENSION = "deniable.metrics"
MULTIPROCESS_ENVIRONMENT = "PROMETHEUS_MULTIPROC_DIR"
SUBMISSION_BLUEPRINT = "reports"
# Label values of the request methods; any other method is "other".  Why: the method is
# whatever the client wrote, and each new value would be a series kept forever.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER = "other"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The app's instruments, in a registry of its own (so tests may build many apps)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        self.accepted = Counter(
            "deniable_reports_accepted", "Reports acknowledged", ["survey"], registry=self.registry
        )
        self.refused = Counter(
            "deniable_submissions_refused",
            "Report submissions refused, by problem type",
            ["reason"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "deniable_request_duration_seconds",
            "Request latency",
            ["method", "endpoint", "status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.fold = Histogram(
            "deniable_fold_seconds",
            "Time to fold pending reports",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.storage_errors = Counter(
            "deniable_storage_errors",
            "Database failures",
            ["backend", "operation"],
            registry=self.registry,
        )

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition format: this process's metrics, or every worker's."""
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

        if os.environ.get(MULTIPROCESS_ENVIRONMENT):
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class InstrumentedStorage:
    """A storage backend that reports accepted reports, fold time and failures."""

    def __init__(self, storage: Any, metrics: Metrics) -> None:
        self._storage = storage
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._storage, name)
        if not callable(attribute) or name.startswith("__"):
            return attribute
        metrics, backend = self._metrics, self._storage.backend

        @functools.wraps(attribute)
        def call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = attribute(*args, **kwargs)
            except StorageError:
                metrics.storage_errors.labels(backend, name).inc()
                raise
            if name == "fold":
                metrics.fold.observe(time.perf_counter() - started)
            elif name == "add_reports":
                metrics.accepted.labels(str(args[0] if args else kwargs.get("survey_id"))).inc(
                    len(result)
                )
            return result

        return call


def init_app(app: Any, *, storage: str, authorize: Callable[[], None]) -> None:
    """With METRICS on: instrument requests and storage, and serve ``GET /metrics``.

    ``storage``: the key of the app's storage in ``app.extensions`` (wrapped in an
    :class:`InstrumentedStorage`); ``authorize``: called first by every scrape, it raises
    the error that refuses one (the aggregator: an unscoped operator token).
    """
    if not app.config.get("METRICS"):
        return
    from flask import Blueprint, Response, g, request

    metrics = Metrics()
    app.extensions[EXTENSION] = metrics
    app.extensions[storage] = InstrumentedStorage(app.extensions[storage], metrics)

    @app.before_request
    def _start() -> None:
        g.deniable_started = time.perf_counter()

    @app.after_request
    def _observe(response: Response) -> Response:
        started = g.pop("deniable_started", None)
        if started is not None:
            metrics.latency.labels(
                *request_labels(request.method, request.endpoint, response.status_code)
            ).observe(time.perf_counter() - started)
        if (
            request.method == "POST"
            and request.blueprint == SUBMISSION_BLUEPRINT
            and response.status_code >= 400
        ):
            metrics.refused.labels(_problem_type(response)).inc()
        return response

    blueprint = Blueprint("metrics", __name__)

    @blueprint.get("/metrics")
    def scrape() -> Response:
        authorize()
        body, content_type = metrics.exposition()
        return Response(body, content_type=content_type)

    app.register_blueprint(blueprint)


def request_labels(method: str, endpoint: str | None, status: int) -> tuple[str, str, str]:
    """(method, endpoint, status) label values, each from a fixed set.

    ``endpoint`` is Flask's name of the matched route (the app's own, finite), or
    ``unmatched``; ``status`` is a three-digit code the app wrote.
    """
    status_label = str(status) if 100 <= status <= 599 else OTHER
    return (method if method in METHODS else OTHER), (endpoint or "unmatched"), status_label


def _problem_type(response: Any) -> str:
    """The problem type suffix of an error response (its status when it is not a problem)."""
    try:
        body = response.get_json(force=True, silent=True)
    except Exception:  # noqa: BLE001 - a streamed or odd body: fall back to the status
        body = None
    if isinstance(body, dict) and isinstance(body.get("type"), str):
        return body["type"].rsplit(":", 1)[-1][:40]
    return str(response.status_code)


def child_exit(server: Any, worker: Any) -> None:
    """gunicorn hook: drop a finished worker's live gauges (multiprocess mode)."""
    if os.environ.get(MULTIPROCESS_ENVIRONMENT):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


@contextlib.contextmanager
def multiprocess_directory(enabled: bool) -> Iterator[str | None]:
    """With ``enabled`` and no ``PROMETHEUS_MULTIPROC_DIR`` set: a fresh one for the workers.

    The directory (one file per worker and metric type) is removed when the block ends,
    however the server stops; a directory the operator set is left alone.
    """
    if not enabled or os.environ.get(MULTIPROCESS_ENVIRONMENT):
        yield os.environ.get(MULTIPROCESS_ENVIRONMENT)
        return
    directory = tempfile.mkdtemp(prefix="deniable-metrics-")
    os.environ[MULTIPROCESS_ENVIRONMENT] = directory
    owner = os.getpid()
    try:
        yield directory
    finally:
        # Why the pid: gunicorn forks its workers inside this block, so a worker that
        # exits unwinds it too; only the server that made the directory removes it.
        if os.getpid() == owner:
            os.environ.pop(MULTIPROCESS_ENVIRONMENT, None)
            shutil.rmtree(directory, ignore_errors=True)


__all__ = [
    "EXTENSION",
    "InstrumentedStorage",
    "METHODS",
    "MULTIPROCESS_ENVIRONMENT",
    "Metrics",
    "child_exit",
    "init_app",
    "multiprocess_directory",
    "request_labels",
]
