"""Credentials masked out of settings before they are printed or logged.

Every form in which libpq (PostgreSQL, ``DATABASE``) and redis-py
(``RATE_LIMIT_STORAGE``) accept a secret:

* the password of a URL's user information (``scheme://user:SECRET@host...``),
  whatever it holds (``@``, ``?``, ``#`` ...) up to the last ``@`` before the path;
* a query parameter whose name, percent-decoded and in any case, ends in
  ``password`` (libpq's ``password`` and ``sslpassword``; redis-py passes every
  query parameter on, e.g. ``password`` and ``ssl_password``);
* in a libpq key/value string (``host=db password=SECRET``), any ``...password``
  keyword's value, quoted or not.

The rest stays as given, so the value remains recognisable in ``settings``, the
``serve`` start-up line and the rate limiter's warnings.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
_QUERY_PARAMETER = re.compile(r"(?<=[?&;])([^=&;#]*)=([^&;#]*)")
_KEYWORD = re.compile(r"""\b(\w*password)\s*=\s*('(?:[^'\\]|\\.)*'|\S+)""", re.IGNORECASE)


def _secret_name(name: str) -> bool:
    return unquote(name).strip().lower().endswith("password")


def mask_credentials(text: str) -> str:
    """``text`` (a URL or a key/value connection string) with every secret replaced by ***."""
    scheme, separator, rest = text.partition("://")
    if not separator:
        return _KEYWORD.sub(lambda match: f"{match[1]}={MASK}", text)
    path_at = rest.find("/")
    head, tail = (rest, "") if path_at < 0 else (rest[:path_at], rest[path_at:])
    if "@" in head:
        userinfo, _, hosts = head.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        if colon:
            head = f"{user}:{MASK}@{hosts}"
    rest = _QUERY_PARAMETER.sub(
        lambda match: f"{match[1]}={MASK}" if _secret_name(match[1]) else match[0], head + tail
    )
    return f"{scheme}://{rest}"


__all__ = [
    "MASK",
    "mask_credentials",
]
