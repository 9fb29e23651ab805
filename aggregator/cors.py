"""Cross-origin access for pages on other sites that embed the respond form.

``CORS_ORIGINS`` (none by default) lists the origins whose pages may, from the
browser, read the public key and a signed survey and post reports: exactly
``GET /api/v1/key``, ``GET /api/v1/surveys/<id>`` and
``POST /api/v1/surveys/<id>/reports``.  Nothing else is shared cross-origin
(results, export, survey creation and the operator routes stay same-origin),
credentials are never allowed, and the only request headers allowed are
``Content-Type`` and the enrolment header.

Each listed origin is parsed strictly and kept in its serialized form (RFC 6454
section 6.1, as browsers send it in ``Origin``: lower-case scheme and host, an
IPv6 address compressed in brackets, no default port), and a request's
``Origin`` is allowed only if it equals one of them, character for character.
An entry that is not an origin (a path, a query, ``$``, ``*``, a user name, a zone
index ...) stops the server at start-up.  Why not flask-cors: it takes an entry
holding regular-expression characters for a pattern, so a listed IPv6 origin
allowed ``http://d:8443`` and refused itself (issue 21).

Responses of the three routes carry ``Vary: Origin`` (their CORS headers depend
on it), and ``Access-Control-Allow-Origin`` only when the request's Origin is listed.
"""

from __future__ import annotations

import ipaddress
import re

from flask import Flask, Request, Response, request

ROUTES = r"^/api/v1/(key|surveys/[^/]+|surveys/[^/]+/reports)$"
ALLOWED_HEADERS = ("Content-Type", "X-Deniable-Enrolment")
ALLOWED_METHODS = ("GET", "POST")
MAX_AGE = 600
DEFAULT_PORTS = {"http": 80, "https": 443}
# One DNS label, lower case ASCII (an internationalized name in its xn-- form).
LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
EXAMPLE = "origins like https://forms.example.org, http://192.0.2.7:8080 or https://[2001:db8::1]"


def serialize_origin(text: str) -> str:
    """The RFC 6454 serialization of one origin (ValueError if ``text`` is not one)."""

    def refuse(why: str) -> ValueError:
        return ValueError(f"{text[:80]!r} is not an origin ({why}); give {EXAMPLE}")

    if not text.isascii() or not text.isprintable() or " " in text:
        raise refuse("only ASCII without spaces; an internationalized name in its xn-- form")
    scheme, separator, rest = text.partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in DEFAULT_PORTS:
        raise refuse("the scheme must be http:// or https://")
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise refuse("an unclosed [")
        literal, after = rest[1:end], rest[end + 1 :]
        if "%" in literal:
            raise refuse("a zone index cannot appear in an origin")
        try:
            host = f"[{ipaddress.IPv6Address(literal).compressed}]"
        except ValueError:
            raise refuse("not an IPv6 address in brackets") from None
    else:
        host, colon, port_text = rest.partition(":")
        after = colon + port_text
        host = host.lower()
        if not host:
            raise refuse("no host")
        if re.fullmatch(r"[0-9.]+", host):
            try:
                host = str(ipaddress.IPv4Address(host))
            except ValueError:
                raise refuse("not an IPv4 address") from None
        elif len(host) > 253 or not all(LABEL.match(label) for label in host.split(".")):
            raise refuse("a host name is letters, digits and hyphens in dot-separated labels")
    if after:
        port_text = after[1:] if after.startswith(":") else None
        if not port_text or not port_text.isdigit() or len(port_text) > 5:
            raise refuse("after the host only :PORT may follow: no path, query or fragment")
        port = int(port_text)
        if not 0 < port <= 65535:
            raise refuse("the port must be 1-65535")
        if port != DEFAULT_PORTS[scheme]:
            host = f"{host}:{port}"
    return f"{scheme}://{host}"


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
    """The after-request hook that writes the CORS headers of the three routes."""

    def __init__(self, origins: tuple[str, ...], routes: str = ROUTES) -> None:
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


def init_app(app: Flask, routes: str = ROUTES) -> None:
    """Share ``routes`` (a path regex; the relay passes its own) with ``CORS_ORIGINS``."""
    origins = tuple(app.config["CORS_ORIGINS"])
    if origins:
        app.after_request(CrossOrigin(origins, routes))
