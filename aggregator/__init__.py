"""The Deniable aggregator: a Flask application over SQLite or PostgreSQL.

Run it with any WSGI server, e.g. ``gunicorn 'deniable.aggregator:create_app()'``,
or with ``deniable-aggregator serve``.  Needs the ``server`` extra
(``pip install 'deniable[server]'``); importing this package without it works, so
the command line can say so in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask


def flask_app(import_name: str, config: Mapping[str, Any]) -> Flask:
    """A Flask app with loaded settings ``config``, the body limit, exact JSON and the
    problem+json error handlers: what the aggregator and the relay start from."""
    from flask import Flask

    from . import problems

    app = Flask(import_name)
    app.config.from_mapping(config)
    app.config["MAX_CONTENT_LENGTH"] = app.config["MAX_BODY_BYTES"]
    # Why: the API speaks exact JSON; key order follows the documents we build.
    app.json.sort_keys = False  # type: ignore[attr-defined]
    problems.init_app(app)
    return app


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app: settings (defaults < DENIABLE_* environment < ``config``), then subsystems."""
    from . import (
        api,
        cors,
        dashboard,
        metrics,
        ratelimit,
        respond,
        settings,
        signing,
        storage,
    )

    app = flask_app(__name__, settings.load(config))
    storage.init_app(app)
    signing.init_app(app)
    ratelimit.init_app(app)
    metrics.init_app(app)
    api.init_app(app)
    dashboard.init_app(app)
    app.after_request(_nosniff)
    respond.init_app(app)
    cors.init_app(app)
    return app


def _nosniff(response):
    """Every response the app writes: its media type is the one declared, never sniffed."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
