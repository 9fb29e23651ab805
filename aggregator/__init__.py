"""The Deniable aggregator: a Flask application over SQLite or PostgreSQL.

Run it with any WSGI server, e.g. ``gunicorn 'deniable.aggregator:create_app()'``,
or with ``deniable-aggregator serve``.  It is built from the service kit
(:mod:`deniable.service`), as the relay is.  Needs the ``server`` extra
(``pip install 'deniable[server]'``); importing this package without it works, so
the command line can say so in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

# What pages of other origins may use (CORS_ORIGINS): the key, a signed survey, reports.
CROSS_ORIGIN_ROUTES = r"^/api/v1/(key|surveys/[^/]+|surveys/[^/]+/reports)$"


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app: settings (defaults < DENIABLE_* environment < ``config``), then subsystems."""
    from deniable.service import cors, limits, metrics
    from deniable.service.app import flask_app, nosniff

    from . import api, dashboard, editor, respond, settings, signing, storage
    from .api.common import require_unscoped_operator

    app = flask_app(__name__, settings.load(config))
    storage.init_app(app)
    signing.init_app(app)
    limits.init_app(app)
    metrics.init_app(app, storage=storage.EXTENSION, authorize=require_unscoped_operator)
    api.init_app(app)
    dashboard.init_app(app)
    app.after_request(nosniff)
    respond.init_app(app)
    editor.init_app(app)
    cors.init_app(app, routes=CROSS_ORIGIN_ROUTES)
    return app


__all__ = ["CROSS_ORIGIN_ROUTES", "create_app"]
