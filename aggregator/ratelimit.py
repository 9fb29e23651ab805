"""Rate limits on report submissions: token buckets per client address and per enrolment token.

A bucket holds at most ``count`` requests and refills at ``count / period``
requests per second, so a client may burst ``count`` requests and then keeps
the configured average.  An empty bucket answers 429 ``rate-limited`` with
``Retry-After``: whole seconds (at least 1) until one request is allowed again.

The buckets live in memory, **per process**: with W gunicorn workers on M
machines a client may get up to W x M times the configured rate (see
docs/scaling.md).  They are bounded (:data:`MAX_KEYS` per kind; the least
recently used bucket is dropped first, and a dropped bucket starts full
again), so a flood of distinct addresses or forged tokens cannot exhaust memory.

The client address is the socket peer (``REMOTE_ADDR``) unless ``TRUST_PROXY``
is a number of proxies N > 0: then it is the N-th entry from the right of
``X-Forwarded-For`` (each trusted proxy appends the address it saw).
Addresses in ``RATE_LIMIT_EXEMPT`` (default: loopback) are never limited by
address.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from flask import Flask, current_app, request

from deniable.errors import RateLimited

EXTENSION = "deniable.ratelimit"
MAX_KEYS = 100_000
PERIODS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86_400.0}
UNIT_ALIASES = {"s": "second", "seconds": "second", "sec": "second", "m": "minute",
                "min": "minute", "minutes": "minute", "h": "hour", "hours": "hour",
                "d": "day", "days": "day"}  # fmt: skip

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Rate:
    """``count`` requests per ``period`` seconds."""

    count: int
    period: float

    def __str__(self) -> str:
        unit = next((u for u, s in PERIODS.items() if s == self.period), None)
        return f"{self.count}/{unit}" if unit else f"{self.count}/{self.period:g}s"


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


class TokenBuckets:
    """One token bucket per key, all with the same rate; thread-safe, bounded, LRU."""

    def __init__(
        self,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.rate = rate
        self.clock = clock
        self.max_keys = max_keys
        self._per_second = rate.count / rate.period
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take one request from ``key``'s bucket: 0.0 if allowed, else seconds to wait."""
        with self._lock:
            now = self.clock()
            tokens, last = self._buckets.pop(key, (float(self.rate.count), now))
            tokens = min(float(self.rate.count), tokens + max(0.0, now - last) * self._per_second)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                wait = 0.0
            else:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self._per_second
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
            return wait

    def __len__(self) -> int:
        return len(self._buckets)


class RateLimits:
    """The app's limits: per client address and per enrolment token (either may be off)."""

    def __init__(
        self,
        *,
        per_address: Rate | None,
        per_token: Rate | None,
        exempt: Iterable[Network] = (),
        trust_proxy: int = 0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.exempt = tuple(exempt)
        self.trust_proxy = trust_proxy
        self.by_address = TokenBuckets(per_address, clock=self._now) if per_address else None
        self.by_token = TokenBuckets(per_token, clock=self._now) if per_token else None
        self.clock = clock

    def _now(self) -> float:
        # Why indirect: tests swap ``clock`` on a running app.
        return self.clock()

    def client_address(self, remote_addr: str | None, forwarded_for: str | None) -> str:
        """The address to limit: the peer, or the trusted proxies' X-Forwarded-For entry."""
        if self.trust_proxy and forwarded_for:
            hops = [hop.strip() for hop in forwarded_for.split(",")]
            if len(hops) >= self.trust_proxy and hops[-self.trust_proxy]:
                return hops[-self.trust_proxy][:100]
        return remote_addr or "unknown"

    def is_exempt(self, address: str) -> bool:
        if not self.exempt:
            return False
        try:
            ip = ipaddress.ip_address(address.strip("[]"))
        except ValueError:
            return False
        return any(ip in network for network in self.exempt)

    def check_address(self, address: str) -> None:
        if self.by_address is None or self.is_exempt(address):
            return
        wait = self.by_address.take(address)
        if wait > 0:
            raise RateLimited(
                f"too many submissions from this address (limit {self.by_address.rate}); "
                f"retry in {math.ceil(wait)} s",
                retry_after=wait,
            )

    def check_token(self, token: str) -> None:
        if self.by_token is None:
            return
        # Why hashed: the bucket table never holds a usable token.
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        wait = self.by_token.take(key)
        if wait > 0:
            raise RateLimited(
                f"too many submissions with this enrolment token (limit {self.by_token.rate}); "
                f"retry in {math.ceil(wait)} s",
                retry_after=wait,
            )


def init_app(app: Flask) -> None:
    app.extensions[EXTENSION] = RateLimits(
        per_address=app.config["RATE_LIMIT_PER_ADDRESS"],
        per_token=app.config["RATE_LIMIT_PER_TOKEN"],
        exempt=app.config["RATE_LIMIT_EXEMPT"],
        trust_proxy=app.config["TRUST_PROXY"],
    )


def current_limits() -> RateLimits:
    return current_app.extensions[EXTENSION]


def check_submission_address() -> None:
    """429 if the requesting client address has no request left in its bucket."""
    limits = current_limits()
    forwarded = request.headers.get("X-Forwarded-For") if limits.trust_proxy else None
    limits.check_address(limits.client_address(request.remote_addr, forwarded))
