"""Cross-origin access for pages on other sites that embed the respond form.

``CORS_ORIGINS`` (none by default) lists the origins whose pages may, from the
browser, use the routes a service names and no other: at the aggregator, read the
public key and a signed survey and post reports (exactly ``GET /api/v1/key``,
``GET /api/v1/surveys/<id>`` and ``POST /api/v1/surveys/<id>/reports``; results,
export, survey creation and the operator routes stay same-origin); at the relay,
post sealed submissions.  Credentials are never allowed, and the only request
headers allowed are ``Content-Type`` and the enrolment header.

Each listed origin is parsed strictly and kept in its serialized form (RFC 6454
section 6.1, as browsers send it in ``Origin``: lower-case scheme and host, an
IPv6 address compressed in brackets, no default port; :mod:`deniable.origins`, the
one parser of origins and relay URLs), and a request's
``Origin`` is allowed only if it equals one of them, character for character.
An entry that is not an origin (a path, a query, ``$``, ``*``, a user name, a zone
index ...) stops the server at start-up.  Why not flask-cors: it takes an entry
holding regular-expression characters for a pattern, so a listed IPv6 origin
allowed ``http://d:8443`` and refused itself.

Responses of the named routes carry ``Vary: Origin`` (their CORS headers depend
on it), and ``Access-Control-Allow-Origin`` only when the request's Origin is listed.
"""

from __future__ import annotations

import re

from flask import Flask, Request, Response, request

from deniable.origins import serialize_origin

ALLOWED_HEADERS = ("Content-Type", "X-Deniable-Enrolment")
ALLOWED_METHODS = ("GET", "POST")
MAX_AGE = 600


def parse_origins(value: object) -> tuple[str, ...]:
    """A comma-separated list of origins, each in its serialized form; empty means none."""
    if isinstance(value, list | tuple):
        items = [str(v) for v in value]
    else:
        items = str(value or "").split(",")
    origins = []
    for item in (item.strip() for item in items):
        if item and (origin := serialize_origin(item)) not in origins:
            origins.append(origin)
    return tuple(origins)


class CrossOrigin:
    """The after-request hook that writes the CORS headers of the routes ``routes`` matches."""

    def __init__(self, origins: tuple[str, ...], routes: str) -> None:
        self.origins = frozenset(origins)
        self.routes = re.compile(routes)

    def __call__(self, response: Response) -> Response:
        return self.apply(request, response)

    def apply(self, incoming: Request, response: Response) -> Response:
        if not self.routes.match(incoming.path):
            return response
        response.vary.add("Origin")
        origin = incoming.headers.get("Origin")
        if origin is None or origin not in self.origins:
            return response
        response.headers["Access-Control-Allow-Origin"] = origin
        if incoming.method == "OPTIONS" and "Access-Control-Request-Method" in incoming.headers:
            response.headers["Access-Control-Allow-Methods"] = ", ".join(ALLOWED_METHODS)
            response.headers["Access-Control-Allow-Headers"] = ", ".join(ALLOWED_HEADERS)
            response.headers["Access-Control-Max-Age"] = str(MAX_AGE)
        return response


def init_app(app: Flask, routes: str) -> None:
    """Share ``routes`` (a regular expression of request paths) with ``CORS_ORIGINS``."""
    origins = tuple(app.config["CORS_ORIGINS"])
    if origins:
        app.after_request(CrossOrigin(origins, routes))


__all__ = [
    "CrossOrigin",
    "init_app",
    "parse_origins",
]
