"""The Flask app every service starts from, and the headers every response carries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask, Response


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


def nosniff(response: Response) -> Response:
    """Every response a service writes: its media type is the one declared, never sniffed."""
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


__all__ = ["flask_app", "nosniff"]
