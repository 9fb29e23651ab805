"""The Deniable relay: a separate operator's service that hides who sent which report.

Devices send it sealed reports (HPKE to the aggregator's key, so the relay
cannot read them); it holds them per survey and shuffle unit until a batch
has ``min_batch`` reports and a time window passed, then forwards the batch in
a CSPRNG-drawn random order to the aggregator in one authenticated request
(docs/relay.md).  Serving, settings, rate limits, CORS and problem+json errors are the
service kit's (:mod:`deniable.service`), as the aggregator's are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from deniable.service.app import nosniff

if TYPE_CHECKING:
    from flask import Flask

FORWARDER = "deniable.relay.forwarder"


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the relay app: settings (defaults < DENIABLE_RELAY_* < ``config``), then subsystems."""
    from deniable.service import cors, limits
    from deniable.service.app import flask_app

    from . import api, settings, storage

    app = flask_app(__name__, settings.load(config))
    storage.init_app(app)
    limits.init_app(app)
    api.init_app(app)
    cors.init_app(app, routes=r"^/api/v1/surveys/[^/]+/sealed$")
    app.after_request(_headers)
    _no_addresses(logging.getLogger("waitress"))
    if app.config["FORWARDER"] and not app.config.get("TESTING"):
        from .forwarder import Forwarder

        forwarder = Forwarder(app.extensions[storage.EXTENSION], app.config)
        app.extensions[FORWARDER] = forwarder
        forwarder.start()
    return app


def _headers(response):
    """Every response: never sniffed (the kit's :func:`~deniable.service.app.nosniff`), never
    stored by a cache (what the relay answers is about one submission)."""
    response.headers["Cache-Control"] = "no-store"
    return nosniff(response)


ADDRESS = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}|(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}")


class NoAddresses(logging.Filter):
    """Replaces anything shaped like an IPv4 or IPv6 address in a record with ``[address]``.

    Why: waitress names a connection by its peer address when an error escapes it
    (wasyncore's ``handle_error``: "closing channel <HTTPChannel connected
    203.0.113.9:51234 ...>"), and the relay logs no client address (docs/relay.md)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = ADDRESS.sub("[address]", record.getMessage()), None
        return True


def _no_addresses(logger: logging.Logger) -> None:
    if not any(isinstance(f, NoAddresses) for f in logger.filters):
        logger.addFilter(NoAddresses())


__all__ = ["FORWARDER", "NoAddresses", "create_app"]
