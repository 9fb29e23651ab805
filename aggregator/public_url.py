"""The aggregator's public URL, for what it prints for other sites (the embed snippet).

``PUBLIC_URL`` (e.g. ``https://surveys.example.org``) is where browsers reach the
aggregator.  Set, it is the base of every URL the embed snippet holds, whatever
the request said.  Unset (a local or development server), the base is the
request's own: its ``Host`` (checked to be a host and port, nothing more) and its
scheme, which is the connection's (``http`` under ``serve``) unless ``TRUST_PROXY``
is on, when the trusted proxy's ``X-Forwarded-Proto`` says it (a TLS proxy in
front: ``https``).  Without ``TRUST_PROXY`` that header is ignored: anyone can send it.
"""

from __future__ import annotations

from flask import current_app, request
from werkzeug.exceptions import BadRequest

from deniable.origins import serialize_origin

__all__ = ["parse_public_url", "public_base_url"]

SCHEMES = ("http", "https")


def parse_public_url(value: object) -> str | None:
    """The PUBLIC_URL setting: an origin (scheme://host[:port]), or empty for none."""
    text = str(value or "").strip()
    if not text:
        return None
    return serialize_origin(text.removesuffix("/"))


def forwarded_scheme(header: str | None, trusted: int) -> str | None:
    """The scheme the trusted proxies report in X-Forwarded-Proto (None if they say none)."""
    if not trusted or not header:
        return None
    hops = [hop.strip().lower() for hop in header.split(",")]
    chosen = hops[-trusted] if len(hops) >= trusted else hops[0]
    return chosen if chosen in SCHEMES else None


def public_base_url() -> str:
    """The base of URLs printed for other sites (see the module), without a trailing /."""
    configured = current_app.config.get("PUBLIC_URL")
    if configured:
        return configured
    scheme = forwarded_scheme(
        request.headers.get("X-Forwarded-Proto"), int(current_app.config.get("TRUST_PROXY") or 0)
    )
    scheme = scheme or (request.scheme if request.scheme in SCHEMES else "http")
    try:
        return serialize_origin(f"{scheme}://{request.host}")
    except ValueError:
        raise BadRequest(
            "the Host header is not a host name and port; set "
            "DENIABLE_PUBLIC_URL to the aggregator's public URL"
        ) from None
