"""Origins and relay URLs, parsed strictly and serialized once (pure: no I/O, no Flask).

One parser for every place that reads "an origin" or "a URL under an origin": the
aggregator's ``CORS_ORIGINS`` (service/cors.py), a relayed survey's signed
``relay.url`` (survey_relay.py), and the respond page's Content-Security-Policy
``connect-src`` for that relay (aggregator/respond).  The browser client's
``parseRelay`` (client/browser/sealed.js) accepts exactly the same URLs; the
cross-language vectors (``relay_urls`` in protocol-vectors.json) hold both to it.

What is accepted (docs/protocol.md §10, "The relay member"):

* the scheme ``http`` or ``https``, in any case;
* the host: a DNS name of ASCII labels (an internationalized name in its ``xn--``
  form; a name whose last label is a number, such as ``0x7f.1``, is refused, as browsers
  would read it as an IPv4 address), a dotted-quad IPv4 address, or an IPv6 address in
  brackets (full or compressed; a zone index is refused, it names an interface of
  one machine);
* an optional ``:port`` in 1-65535;
* for a URL only, a path: ``/`` segments without white space, ``.``/``..`` segments,
  empty segments or a trailing ``/``;
* never user information, a query or a fragment.

The serialized origin is RFC 6454 section 6.1's, as a browser sends it in ``Origin``
and matches it in a CSP source: lower-case scheme and host, IPv6 compressed per
RFC 5952 section 4 in brackets, no default port.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from .errors import InvalidParameter

__all__ = ["Origin", "canonical_url", "parse_origin", "parse_url", "same_url", "serialize_origin"]

DEFAULT_PORTS = {"http": 80, "https": 443}
# One DNS label, lower case ASCII (an internationalized name in its xn-- form).
LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# A last label browsers read as a number (WHATWG URL, "ends in a number"): an IPv4 address.
NUMERIC = re.compile(r"[0-9]+|0x[0-9a-f]*")
# One path segment: RFC 3986 pchar without "@" (never user information), %HH escapes only.
SEGMENT = re.compile(r"(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})+")
EXAMPLE = "origins like https://forms.example.org, http://192.0.2.7:8080 or https://[2001:db8::1]"


@dataclass(frozen=True, kw_only=True)
class Origin:
    """A parsed origin: ``scheme``, serialized ``host``, ``port`` (None: the default)."""

    scheme: str
    host: str
    port: int | None = None

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}" + (f":{self.port}" if self.port else "")

    @property
    def csp_source(self) -> str:
        """The narrowest Content-Security-Policy source expression that matches this origin:
        the origin itself, or for an IPv6 host its scheme (``https:``).

        Why: CSP's host-source grammar has no IPv6 literal (W3C Content Security Policy
        Level 3, "Source Lists"), and Chromium drops ``http://[::1]:8100`` from a source
        list as invalid, so the origin itself would block the very connection it names.
        """
        return f"{self.scheme}:" if self.host.startswith("[") else str(self)

    @property
    def is_loopback(self) -> bool:
        """``localhost``, an IPv4 address in 127.0.0.0/8, or ``[::1]``."""
        if self.host in ("localhost", "[::1]"):
            return True
        try:
            return ipaddress.IPv4Address(self.host).is_loopback
        except ValueError:
            return False


def _ipv6(literal: str) -> str:
    """An IPv6 address serialized per RFC 5952 section 4 (lower case, the longest run of two
    or more zero groups as ``::``, the first if tied; never a dotted IPv4 tail), in brackets.

    Why not ``IPv6Address.compressed``: Python 3.13 writes an IPv4-mapped address with a
    dotted tail, which is not how browsers serialize it (``Origin``, CSP matching).
    """
    packed = ipaddress.IPv6Address(literal).packed
    groups = [int.from_bytes(packed[i : i + 2], "big") for i in range(0, 16, 2)]
    best, length, start = -1, 1, None
    for index, group in enumerate([*groups, 1]):
        if group == 0 and start is None:
            start = index
        elif group and start is not None:
            if index - start > length:
                best, length = start, index - start
            start = None
    text = [f"{g:x}" for g in groups]
    if best < 0:
        return f"[{':'.join(text)}]"
    return f"[{':'.join(text[:best])}::{':'.join(text[best + length :])}]"


def _host(text: str, refuse) -> tuple[str, str]:
    """(serialized host, what follows it) of an authority, or ``refuse(why)``."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise refuse("an unclosed [")
        literal, after = text[1:end], text[end + 1 :]
        if "%" in literal:
            raise refuse("a zone index cannot appear in an origin")
        try:
            return _ipv6(literal), after
        except ValueError:
            raise refuse("not an IPv6 address in brackets") from None
    host, colon, port = text.partition(":")
    host = host.lower()
    if not host:
        raise refuse("no host")
    labels = host.split(".")
    if re.fullmatch(r"[0-9.]+", host) or NUMERIC.fullmatch(labels[-1]):
        try:
            return str(ipaddress.IPv4Address(host)), colon + port
        except ValueError:
            raise refuse("not an IPv4 address (four decimal numbers 0-255)") from None
    if len(host) > 253 or not all(LABEL.fullmatch(label) for label in labels):
        raise refuse("a host name is letters, digits and hyphens in dot-separated labels")
    return host, colon + port


def _parse(text: object, *, path: bool) -> tuple[Origin, str]:
    shown = repr(text[:80]) if isinstance(text, str) else type(text).__name__

    def refuse(why: str) -> InvalidParameter:
        if path:
            return InvalidParameter(f"{shown} is not an http(s) URL ({why})")
        return InvalidParameter(f"{shown} is not an origin ({why}); give {EXAMPLE}")

    if not isinstance(text, str):
        raise refuse("not a string")
    if not text.isascii() or not text.isprintable() or " " in text or "\\" in text:
        raise refuse(
            "only ASCII without spaces or backslashes; an internationalized name in its xn-- form"
        )
    scheme, separator, rest = text.partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in DEFAULT_PORTS:
        raise refuse("the scheme must be http:// or https://")
    if "?" in rest or "#" in rest:
        raise refuse("no query or fragment")
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        raise refuse("no user name or password")
    host, after = _host(authority, refuse)
    port = None
    if after:
        digits = after[1:] if after.startswith(":") else ""
        if not digits.isdigit() or len(digits) > 5:
            raise refuse(
                "after the host only :PORT may follow"
                + ("" if path else ": no path, query or fragment")
            )
        port = int(digits)
        if not 0 < port <= 65535:
            raise refuse("the port must be 1-65535")
        if port == DEFAULT_PORTS[scheme]:
            port = None
    if slash and not path:
        raise refuse("after the host only :PORT may follow: no path, query or fragment")
    if slash and not all(SEGMENT.fullmatch(s) and s not in (".", "..") for s in tail.split("/")):
        raise refuse("a path is /-separated segments, none empty or . or .., no trailing /")
    return Origin(scheme=scheme, host=host, port=port), slash + tail


def parse_origin(text: object) -> Origin:
    """The origin ``text`` names (:class:`~deniable.errors.InvalidParameter` if not one)."""
    return _parse(text, path=False)[0]


def serialize_origin(text: object) -> str:
    """The RFC 6454 serialization of the origin ``text`` (InvalidParameter if not one)."""
    return str(parse_origin(text))


def parse_url(text: object) -> tuple[Origin, str]:
    """An http(s) URL with an optional path: its origin and its path (``""`` or ``/...``),
    or InvalidParameter (user information, query, fragment, trailing ``/``, ...)."""
    return _parse(text, path=True)


def canonical_url(text: object) -> str:
    """``text`` (an http(s) URL with an optional path, :func:`parse_url`) written one way:
    its serialized origin, then its path; InvalidParameter if it is not one."""
    origin, path = parse_url(text)
    return f"{origin}{path}"


def same_url(first: object, second: object) -> bool:
    """Whether two relay URLs name the same relay: the same origin (case, a default port and
    IPv6 spelling aside) and path; a trailing ``/`` on either is ignored. Never raises."""
    try:
        return canonical_url(_untrailed(first)) == canonical_url(_untrailed(second))
    except InvalidParameter:
        return False


def _untrailed(text: object) -> object:
    return text.removesuffix("/") if isinstance(text, str) else text
