"""Cross-origin access for pages on other sites that embed the respond form.

``CORS_ORIGINS`` (none by default) lists the origins whose pages may, from the
browser, read the public key and a signed survey and post reports: exactly
``GET /api/v1/key``, ``GET /api/v1/surveys/<id>`` and
``POST /api/v1/surveys/<id>/reports``.  Nothing else is shared cross-origin
(results, export, survey creation and the operator routes stay same-origin),
credentials are never allowed, and the only request headers allowed are
``Content-Type`` and the enrolment header.  flask-cors answers the preflights.
"""

from __future__ import annotations

from flask import Flask

ROUTES = r"^/api/v1/(key|surveys/[^/]+|surveys/[^/]+/reports)$"
ALLOWED_HEADERS = ["Content-Type", "X-Deniable-Enrolment"]


def parse_origins(value: object) -> tuple[str, ...]:
    """A comma-separated list of origins (scheme://host[:port]); empty means none."""
    if isinstance(value, list | tuple):
        items = [str(v) for v in value]
    else:
        items = [v for v in str(value or "").split(",")]
    origins = tuple(item.strip().rstrip("/") for item in items if item.strip())
    for origin in origins:
        scheme, _, rest = origin.partition("://")
        if scheme not in ("http", "https") or not rest or "/" in rest or "*" in origin:
            raise ValueError(f"must be origins like https://forms.example.org, got {origin!r}")
    return origins


def init_app(app: Flask, routes: str = ROUTES) -> None:
    """Share ``routes`` (a path regex; the relay passes its own) with ``CORS_ORIGINS``."""
    origins = list(app.config["CORS_ORIGINS"])
    if not origins:
        return
    from flask_cors import CORS

    CORS(
        app,
        resources={routes: {"origins": origins}},
        methods=["GET", "POST"],
        allow_headers=ALLOWED_HEADERS,
        supports_credentials=False,
        max_age=600,
    )
