"""The aggregator's public URL, for what it prints for other sites (the embed snippet).

``PUBLIC_URL`` (e.g. ``https://surveys.example.org``) is where browsers reach the
aggregator.  Set, it is the base of every URL the embed snippet holds, whatever
the request said.  Unset (a local or development server), the base is the
request's own: its ``Host`` (checked to be a host and port, nothing more) and its
scheme, which is the connection's (``http`` under ``serve``) unless ``TRUST_PROXY``
is on, when the trusted proxy's ``X-Forwarded-Proto`` says it (a TLS proxy in
front: ``https``).  Without ``TRUST_PROXY`` that header is ignored: anyone can send it.

:func:`survey_links` is what an operator sends out: the respondents' page and the
embed snippet of a survey, under that base (the command line, which has no request,
uses ``PUBLIC_URL`` alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import current_app, request
from werkzeug.exceptions import BadRequest

from deniable.origins import serialize_origin

__all__ = ["RespondLinks", "parse_public_url", "public_base_url", "respond_links", "survey_links"]

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


# Why a placeholder rather than a guess: the command line cannot know where browsers
# reach the server; a link that looks complete but is wrong would be sent out.
UNKNOWN_BASE = "<public URL>"


@dataclass(frozen=True, kw_only=True)
class RespondLinks:
    """Where respondents answer a survey (``respond``) and its embed snippet (``embed``)."""

    respond: str
    embed: str
    absolute: bool


def survey_links(base: str | None, survey_id: str) -> RespondLinks:
    """The links of ``survey_id`` under ``base`` (PUBLIC_URL; None: a placeholder)."""
    root = base.removesuffix("/") if base else UNKNOWN_BASE
    return RespondLinks(
        respond=f"{root}/surveys/{survey_id}/respond",
        embed=f"{root}/surveys/{survey_id}/embed",
        absolute=bool(base),
    )


def respond_links(record: Any, base: str | None) -> RespondLinks | None:
    """The links of a stored survey, or None when browsers cannot answer it.

    Closed surveys take no answers; a survey of an older format than the browser
    answers (its mechanism parameters are not signed) is answered with the client only.
    """
    from deniable.survey import FORMAT

    if not record.is_open or record.survey.format != FORMAT:
        return None
    return survey_links(base, record.id)
