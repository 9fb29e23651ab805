"""Rate limits on report submissions, per client address and per enrolment token.

The counting is done by ``limits``, the library under Flask-Limiter, with its
moving-window strategy: at most ``count`` submissions in any ``period``, so a client may
burst ``count`` requests and then keeps the configured average.  Over the
limit the API answers 429 ``rate-limited`` with ``Retry-After``: whole seconds
(at least 1) until the oldest counted request leaves the window.

Where the counts live is ``RATE_LIMIT_STORAGE``: ``memory://`` (the default)
keeps them in each process, so with W gunicorn workers on M machines a client
gets up to W x M times the limit; ``redis://host:port/db`` (also ``rediss://``,
``redis+unix://``) shares one count between every process and machine that
names the same Redis and ``RATE_LIMIT_KEY_PREFIX``.  If Redis stops answering,
each process counts in its own memory (logged once a minute) and tries Redis
again after :data:`FALLBACK_SECONDS`: a submission is never refused because
the limiter's store is down.

Why ``limits`` without the Flask-Limiter extension: the extension runs a hook
before every request (about 0.1 ms here, on reads too), while these checks
must run inside the submission routes, in the order docs/api.md states (address
first; the token only once the survey is known to require one).

Only the moving window's recent hits are kept (per key at most ``count`` time
stamps, expiring after ``period``), so a flood of distinct addresses or forged
tokens costs memory in proportion to the requests of the last period.

The client address is the socket peer (``REMOTE_ADDR``) unless ``TRUST_PROXY``
is a number of proxies N > 0: then it is the N-th entry from the right of
``X-Forwarded-For`` (each trusted proxy appends the address it saw).  Either is
normalized first (:func:`normalize_address`: no quotes, port or zone, one spelling of
IPv6, every inet_aton form of IPv4 as dotted decimal, IPv4 carried in IPv6 as IPv4),
and an IPv6 client is counted by its /64, so one client cannot multiply its limit by
spelling its address another way.
Addresses in ``RATE_LIMIT_EXEMPT`` (default: loopback) are never limited by
address.  Enrolment tokens are counted under their SHA-256, so the store
never holds a usable token.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from deniable.errors import RateLimited

EXTENSION = "deniable.ratelimit"
PERIODS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86_400.0}
UNIT_ALIASES = {
    "s": "second",
    "seconds": "second",
    "sec": "second",
    "m": "minute",
    "min": "minute",
    "minutes": "minute",
    "h": "hour",
    "hours": "hour",
    "d": "day",
    "days": "day",
}
STORAGE_SCHEMES = ("memory://", "redis://", "rediss://", "redis+unix://")
# After a failed call to the shared store, count in memory this long before trying it again.
FALLBACK_SECONDS = 5.0
STRATEGY = "moving-window"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rate:
    """``count`` requests per ``period`` seconds."""

    count: int
    period: float

    def __str__(self) -> str:
        unit = next((u for u, s in PERIODS.items() if s == self.period), None)
        return f"{self.count}/{unit}" if unit else f"{self.count}/{self.period:g}s"

    def item(self) -> Any:
        """This rate as a ``limits`` rate-limit item."""
        from limits import parse

        return parse(str(self))


def parse_rate(value: object) -> Rate | None:
    """``"600/minute"`` (also ``/second``, ``/hour``, ``/day``) → Rate; ``0``/``off`` → None."""
    if isinstance(value, Rate) or value is None:
        return value
    if isinstance(value, bool):
        raise ValueError("must be N/second|minute|hour|day, or 0 to disable")
    text = str(value).strip().lower()
    if text in {"0", "off", "none", "false", "disabled"}:
        return None
    count_text, sep, unit = text.partition("/")
    unit = UNIT_ALIASES.get(unit.strip(), unit.strip())
    try:
        count = int(count_text.strip())
    except ValueError:
        count = -1
    if not sep or unit not in PERIODS or not 1 <= count <= 10_000_000:
        raise ValueError(
            f"must be N/second|minute|hour|day with 1 <= N <= 10,000,000, or 0 to disable; "
            f"got {str(value)[:40]!r}"
        )
    return Rate(count, PERIODS[unit])


def parse_storage(value: object) -> str:
    """``memory://`` or a Redis URL (``redis://``, ``rediss://``, ``redis+unix://``)."""
    text = str(value or "").strip()
    if not text.startswith(STORAGE_SCHEMES):
        raise ValueError(
            "must be memory:// or a redis://, rediss:// or redis+unix:// URL, got "
            f"{shown_storage(text)[:60]!r}"
        )
    return text


def parse_key_prefix(value: object) -> str:
    text = str(value or "").strip()
    if not text or len(text) > 100 or not text.isprintable() or " " in text:
        raise ValueError("must be 1-100 printable characters without spaces")
    return text


def parse_networks(value: object) -> tuple[Network, ...]:
    """A comma-separated list of addresses or CIDR networks (empty: none)."""
    if isinstance(value, tuple):
        return value
    items = [item.strip() for item in str(value or "").split(",") if item.strip()]
    try:
        return tuple(ipaddress.ip_network(item, strict=False) for item in items)
    except ValueError as error:
        raise ValueError(f"must be comma-separated IP addresses or networks ({error})") from None


def parse_proxies(value: object) -> int:
    """Trusted proxy hops: an integer 0-10, or a boolean (true = 1)."""
    if isinstance(value, bool):
        return int(value)
    text = str(value).strip().lower()
    if text in {"true", "yes", "on"}:
        return 1
    if text in {"false", "no", "off", ""}:
        return 0
    try:
        number = int(text)
    except ValueError:
        number = -1
    if not 0 <= number <= 10:
        raise ValueError("must be a number of trusted proxies 0-10 (or true/false)")
    return number


def normalize_address(text: str) -> str:
    """One spelling per client address, so no client multiplies its limit by respelling.

    Double quotes (RFC 7239), brackets, a port (``192.0.2.1:5555``, ``[2001:db8::1]:443``,
    ``::ffff:192.0.2.1:5555``) and an IPv6 zone index are stripped; an IPv4 address in any
    form ``inet_aton`` reads (octal ``0300.0.2.1``, hexadecimal, one integer, fewer parts)
    is written dotted-decimal; IPv6 is written in its compressed lower-case form
    (RFC 5952), and an IPv6 address that only carries an IPv4 one (mapped
    ``::ffff:192.0.2.1``, translated ``::ffff:0:192.0.2.1``, compatible ``::192.0.2.1``)
    as the IPv4 address.  Anything else (an obfuscated identifier a proxy wrote) is
    kept, trimmed to 100 characters.
    """
    value = text.strip().strip('"').strip()
    if value.startswith("[") and "]" in value:
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # IPv4 with a port
        value = value.partition(":")[0]
    elif _PORT_AFTER_IPV4.fullmatch(value):  # an IPv6 form ending in IPv4, with a port
        value = value.rpartition(":")[0]
    ip = _parsed_address(value.partition("%")[0])
    if ip is None:
        return text.strip()[:100]
    return str(_embedded_ipv4(ip) or ip)


# An address ending in a dotted IPv4 address, then ":port" (unbracketed).
_PORT_AFTER_IPV4 = re.compile(r".*:[0-9a-fA-FxX.]*\.[0-9a-fA-FxX]+:[0-9]{1,5}")
# What inet_aton reads as IPv4: one to four parts, each decimal, octal or hexadecimal.
_LEGACY_IPV4 = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


def _legacy_ipv4(value: str) -> ipaddress.IPv4Address | None:
    """``value`` as inet_aton reads it (the forms a C resolver, and so some proxies, accept)."""
    if not _LEGACY_IPV4.fullmatch(value):
        return None
    try:
        parts = [_inet_aton_number(part) for part in value.split(".")]
    except ValueError:  # a bad octal digit ("08"): inet_aton refuses it too
        return None
    *high, last = parts
    if any(part > 255 for part in high) or last >= 256 ** (4 - len(high)):
        return None
    number = 0
    for part in high:
        number = number * 256 + part
    return ipaddress.IPv4Address(number * 256 ** (4 - len(high)) + last)


def _inet_aton_number(part: str) -> int:
    """One part as inet_aton reads it: ``0x`` hexadecimal, leading ``0`` octal, else decimal."""
    if part[:2].lower() == "0x":
        return int(part[2:], 16)
    return int(part, 8) if len(part) > 1 and part[0] == "0" else int(part)


def _parsed_address(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    if ":" not in value:
        return _legacy_ipv4(value)
    head, _, tail = value.rpartition(":")
    embedded = _legacy_ipv4(tail) if "." in tail else None
    if embedded is None:
        return None
    try:
        return ipaddress.ip_address(f"{head}:{embedded}")
    except ValueError:
        return None


def _embedded_ipv4(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address only carries: mapped (::ffff:0:0/96), translated
    (::ffff:0:0:0/96, RFC 2765) or compatible (::/96 but :: and ::1, RFC 4291)."""
    if ip.version == 4:
        return None
    number = int(ip)
    high = number >> 32
    if high in (0xFFFF, 0xFFFF_0000) or (high == 0 and number > 1):
        return ipaddress.IPv4Address(number & 0xFFFF_FFFF)
    return None


def shown_storage(uri: str) -> str:
    """The storage URL without a password in any form, for logs and messages (masking.py)."""
    from .masking import mask_credentials

    return mask_credentials(uri)


class RateLimits:
    """The app's limits: per client address and per enrolment token (either may be off).

    ``limiter``: from :func:`open_limiter` (anything whose ``limiter`` attribute is a
    ``limits`` strategy); without one, counts stay in this object's memory.
    """

    def __init__(
        self,
        *,
        per_address: Rate | None,
        per_token: Rate | None,
        exempt: Iterable[Network] = (),
        trust_proxy: int = 0,
        storage: str = "memory://",
        key_prefix: str = "deniable",
        limiter: Any = None,
    ) -> None:
        from limits.storage import MemoryStorage
        from limits.strategies import STRATEGIES

        self.per_address = per_address
        self.per_token = per_token
        self.exempt = tuple(exempt)
        self.trust_proxy = trust_proxy
        self.storage = storage
        self.key_prefix = key_prefix
        self._address_item = per_address.item() if per_address else None
        self._token_item = per_token.item() if per_token else None
        if limiter is None:
            limiter = _StandaloneLimiter(STRATEGIES[STRATEGY](MemoryStorage()))
        self._limiter = limiter
        self._fallback = STRATEGIES[STRATEGY](MemoryStorage())
        self._shared_until = 0.0  # time.monotonic() before which the fallback counts
        self._warned_at = -math.inf
        self._lock = threading.Lock()

    @property
    def shared(self) -> bool:
        """True if the counts live in a store other processes can share."""
        return not self.storage.startswith("memory://")

    def client_address(self, remote_addr: str | None, forwarded_for: str | None) -> str:
        """The client's address (:func:`normalize_address`): the peer, or the trusted
        proxies' X-Forwarded-For entry."""
        if self.trust_proxy and forwarded_for:
            hops = [hop.strip() for hop in forwarded_for.split(",")]
            if len(hops) >= self.trust_proxy and hops[-self.trust_proxy]:
                return normalize_address(hops[-self.trust_proxy])
        return normalize_address(remote_addr or "unknown")

    @staticmethod
    def limit_key(address: str) -> str:
        """What one client's submissions are counted under: its IPv4 address, or its IPv6 /64.

        Why the /64: one host (one subscriber's LAN) commonly holds a whole /64, so
        counting each IPv6 address alone gave it 2**64 limits.
        """
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return address
        if ip.version == 6:
            return str(ipaddress.ip_network(f"{ip}/64", strict=False))
        return address

    def is_exempt(self, address: str) -> bool:
        if not self.exempt:
            return False
        try:
            ip = ipaddress.ip_address(normalize_address(address))
        except ValueError:
            return False
        return any(ip in network for network in self.exempt)

    def _hit(self, item: Any, kind: str, key: str, *, count: bool = True) -> float:
        """Count one request (``count``; else only test): 0.0 if allowed, else seconds until
        one is allowed again."""
        identifiers = (self.key_prefix, kind, key)
        strategy = self._limiter.limiter
        if self.shared and time.monotonic() < self._shared_until:
            strategy = self._fallback
        try:
            if (strategy.hit if count else strategy.test)(item, *identifiers):
                return 0.0
            reset = strategy.get_window_stats(item, *identifiers).reset_time
        except Exception as error:  # noqa: BLE001 - any store failure: count locally instead
            if strategy is self._fallback:
                raise
            self._store_failed(error)
            return self._hit(item, kind, key, count=count)
        return max(reset - time.time(), 0.001)

    def _store_failed(self, error: Exception) -> None:
        now = time.monotonic()
        with self._lock:
            self._shared_until = now + FALLBACK_SECONDS
            if now - self._warned_at >= 60:
                self._warned_at = now
                logger.warning(
                    "rate-limit storage %s failed (%s: %s); counting in this process's memory",
                    shown_storage(self.storage),
                    type(error).__name__,
                    shown_storage(str(error)[:200]),
                )

    def wait(self, rate: Rate, kind: str, key: str, *, count: bool = True) -> float:
        """Count one request of ``kind`` by ``key`` against ``rate`` (another use than the
        submissions', such as the editor's failed sign-ins): 0.0 if allowed, else seconds to
        wait.  ``count=False`` only asks whether one more would be allowed."""
        return self._hit(rate.item(), kind, key, count=count)

    def check_address(self, address: str) -> None:
        if self._address_item is None or self.is_exempt(address):
            return
        wait = self._hit(self._address_item, "address", self.limit_key(address))
        if wait > 0:
            raise RateLimited(
                f"too many submissions from this address (limit {self.per_address}); "
                f"retry in {math.ceil(wait)} s",
                retry_after=wait,
            )

    def check_token(self, token: str) -> None:
        if self._token_item is None:
            return
        # Why hashed: the store never holds a usable token.
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        wait = self._hit(self._token_item, "token", key)
        if wait > 0:
            raise RateLimited(
                f"too many submissions with this enrolment token (limit {self.per_token}); "
                f"retry in {math.ceil(wait)} s",
                retry_after=wait,
            )


@dataclass(frozen=True)
class _StandaloneLimiter:
    limiter: Any


def open_limiter(storage: str) -> Any:
    """The moving-window strategy of ``limits`` over the store named by ``storage``."""
    from limits.storage import storage_from_string
    from limits.strategies import STRATEGIES

    options: dict[str, Any] = {}
    if storage.startswith(("redis://", "rediss://", "redis+unix://")):
        # Why short timeouts: a slow Redis must not hold submissions; the fallback counts.
        options = {"socket_timeout": 1.0, "socket_connect_timeout": 1.0}
    return _StandaloneLimiter(STRATEGIES[STRATEGY](storage_from_string(storage, **options)))


def init_app(app: Any) -> None:
    """Attach the limits, counted in ``RATE_LIMIT_STORAGE``."""
    from .settings import SettingsError

    storage = app.config["RATE_LIMIT_STORAGE"]
    try:
        limiter = open_limiter(storage)
    except Exception as error:  # noqa: BLE001 - a bad URL or a missing redis package
        raise SettingsError(
            f"setting RATE_LIMIT_STORAGE ({shown_storage(storage)}): {shown_storage(str(error))}"
        ) from None
    app.extensions[EXTENSION] = RateLimits(
        per_address=app.config["RATE_LIMIT_PER_ADDRESS"],
        per_token=app.config["RATE_LIMIT_PER_TOKEN"],
        exempt=app.config["RATE_LIMIT_EXEMPT"],
        trust_proxy=app.config["TRUST_PROXY"],
        storage=storage,
        key_prefix=app.config["RATE_LIMIT_KEY_PREFIX"],
        limiter=limiter,
    )


def current_limits() -> RateLimits:
    from flask import current_app

    return current_app.extensions[EXTENSION]


def check_submission_address() -> None:
    """429 if the requesting client address has used up its submissions."""
    from flask import request

    limits = current_limits()
    forwarded = request.headers.get("X-Forwarded-For") if limits.trust_proxy else None
    limits.check_address(limits.client_address(request.remote_addr, forwarded))


__all__ = [
    "EXTENSION",
    "FALLBACK_SECONDS",
    "PERIODS",
    "STORAGE_SCHEMES",
    "Rate",
    "RateLimits",
    "check_submission_address",
    "current_limits",
    "init_app",
    "normalize_address",
    "open_limiter",
    "parse_key_prefix",
    "parse_networks",
    "parse_proxies",
    "parse_rate",
    "parse_storage",
    "shown_storage",
]
