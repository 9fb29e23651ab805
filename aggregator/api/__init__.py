"""The HTTP API (docs/api.md): one blueprint per area, all under ``/api/v1``."""

from __future__ import annotations

from flask import Flask

__all__ = ["init_app"]

PREFIX = "/api/v1"


def init_app(app: Flask) -> None:
    """Register every blueprint of the v1 API."""
    from . import batches, caching, crosstab, health, openapi, reports, results, surveys
    from .common import check_survey_id

    for module in (health, surveys, reports, results, crosstab, openapi, batches):
        app.register_blueprint(module.blueprint, url_prefix=PREFIX)
    app.url_value_preprocessor(check_survey_id)
    caching.init_app(app)
