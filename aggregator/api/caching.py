"""Explicit ``Cache-Control`` on the API's documents (hardening).

Left to heuristics, a browser or a shared cache may keep a response without
``Cache-Control`` for a while.  Here each is said outright:

* the key document and survey documents: ``no-cache``, stored but revalidated on
  every use, so a key rotation, a re-signed survey or a closed survey is seen at once;
* results: ``no-cache`` when public, and exports of raw reports ``no-store``;
* every answer to a request that carried a token: ``private, no-store``, so no
  shared cache keeps what only an operator may read.

A route that sets ``Cache-Control`` itself keeps its own.
"""

from __future__ import annotations

from flask import Flask, Response, request

__all__ = ["init_app"]

BLUEPRINTS = frozenset({"health", "surveys", "results", "reports", "openapi"})  # the API's
AUTHENTICATED = "private, no-store"
BY_ENDPOINT = {
    "health.key": "no-cache",
    "health.health": "no-store",
    "surveys.get_survey": "no-cache",
    "surveys.list_surveys": "no-cache",
    "results.results": "no-cache",
    "reports.export": "no-store",
}


def cache_control(response: Response) -> Response:
    """The after-request hook: set the endpoint's Cache-Control unless one is set."""
    if "Cache-Control" in response.headers or request.blueprint not in BLUEPRINTS:
        return response
    if request.headers.get("Authorization"):
        response.headers["Cache-Control"] = AUTHENTICATED
    elif (value := BY_ENDPOINT.get(request.endpoint or "")) is not None:
        response.headers["Cache-Control"] = value
    return response


def init_app(app: Flask) -> None:
    app.after_request(cache_control)
