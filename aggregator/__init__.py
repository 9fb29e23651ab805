"""The Deniable aggregator: a Flask application over SQLite or PostgreSQL.

Run it with any WSGI server, e.g. ``gunicorn 'deniable.aggregator:create_app()'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app: settings (defaults < DENIABLE_* environment < ``config``), then subsystems."""
    from . import api, cors, dashboard, problems, ratelimit, respond, settings, signing, storage

    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(settings.load(config, instance_path=app.instance_path))
    app.config["MAX_CONTENT_LENGTH"] = app.config["MAX_BODY_BYTES"]
    # Why: the API speaks exact JSON; key order follows the documents we build.
    app.json.sort_keys = False  # type: ignore[attr-defined]
    problems.init_app(app)
    storage.init_app(app)
    signing.init_app(app)
    ratelimit.init_app(app)
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
