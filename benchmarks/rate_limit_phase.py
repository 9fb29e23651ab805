"""The rate-limiter phase of benchmarks/ingest.py: limit off, in memory, in Redis.

Three real aggregators (gunicorn, 2 sync workers each) share one fresh SQLite database
and differ only in ``RATE_LIMIT_PER_ADDRESS`` / ``RATE_LIMIT_STORAGE``.  Loopback is
not exempt here (``RATE_LIMIT_EXEMPT`` empty) and the limit is far above the load, so
every submission is counted and none is refused.  The single-report load of ingest.py
runs against each in turn, for ``rounds`` alternating rounds, so machine drift falls on
the three alike; the figures are summed over the rounds.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET_REDIS_RATIO = 0.85
# Far above any load this machine can make, so nothing is refused; per second, so the
# moving window holds at most one second of hits.
UNREACHED_LIMIT = "10000000/second"


def redis_reachable(url: str) -> str | None:
    """None if Redis at ``url`` answers PING, else why not."""
    try:
        import redis
    except ImportError:
        return "the redis package is not installed (pip install 'deniable[server]')"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as error:
        return f"Redis at {url} unreachable ({type(error).__name__})"
    return None


def run_rate_limits(
    args: Any,
    payloads: list[str],
    *,
    create_survey: Callable[[str, Path], str],
    start_real: Callable[..., tuple[Any, int]],
    stop: Callable[[Any], None],
    measure_single: Callable[..., dict[str, float]],
    rounds: int = 2,
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="deniable-bench-limits-", dir=args.dir))
    database = str(workdir / "limits.sqlite3")
    prefix = f"deniable-bench-{uuid.uuid4().hex[:12]}"
    variants = {
        "off": {"DENIABLE_RATE_LIMIT_PER_ADDRESS": "0"},
        "memory": {"DENIABLE_RATE_LIMIT_STORAGE": "memory://"},
        "redis": {
            "DENIABLE_RATE_LIMIT_STORAGE": args.redis_url,
            "DENIABLE_RATE_LIMIT_KEY_PREFIX": prefix,
        },
    }
    common = {"DENIABLE_RATE_LIMIT_EXEMPT": "", "DENIABLE_RATE_LIMIT_PER_ADDRESS": UNREACHED_LIMIT}
    servers: dict[str, tuple[Any, int]] = {}
    try:
        create_survey(database, workdir / "key.pem")
        for name, environment in variants.items():
            servers[name] = start_real(
                database, workdir / "key.pem", workdir, {**common, **environment}
            )
        totals: dict[str, dict[str, Any]] = {
            name: {"latencies": [], "seconds": 0.0} for name in variants
        }
        duration = args.duration / rounds
        for round_number in range(rounds):
            print(
                f"[rate limits] round {round_number + 1}/{rounds}: off, memory, redis",
                file=sys.stderr,
            )
            for name, (_, port) in servers.items():
                figures = measure_single(port, payloads, duration, keep_latencies=True)
                totals[name]["latencies"].extend(figures["latencies"])
                totals[name]["seconds"] += duration
        result = {}
        for name, total in totals.items():
            latencies = sorted(total["latencies"])
            result[name] = {
                "reports": len(latencies),
                "rate": len(latencies) / total["seconds"],
                "p50_ms": 1000 * latencies[len(latencies) // 2],
                "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            }
        return result
    finally:
        for process, _ in servers.values():
            stop(process)
        _clear_redis(args.redis_url, prefix)
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _clear_redis(url: str, prefix: str) -> None:
    try:
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=2)
        for key in client.scan_iter(match=f"*{prefix}*", count=1000):
            client.delete(key)
    except Exception:  # noqa: BLE001, S110 - best effort: the keys expire within a second anyway
        pass


def report(result: dict[str, Any], clients: int) -> str:
    lines = [
        f"rate limiter, single-report POSTs, {clients} clients (SQLite, every request counted):"
    ]
    for name, label in (("off", "limit off"), ("memory", "in memory"), ("redis", "Redis")):
        figures = result[name]
        lines.append(
            f"  {label:9}  {figures['rate']:9,.0f} reports/s   p50 "
            f"{figures['p50_ms']:7.2f} ms   p99 {figures['p99_ms']:7.2f} ms   "
            f"({figures['reports']:,} reports)"
        )
    ratio = result["redis"]["rate"] / result["memory"]["rate"]
    verdict = "meets target" if ratio >= TARGET_REDIS_RATIO else "MISSES target"
    lines.append(
        f"  ratio Redis/memory = {ratio:.3f}  (target >= {TARGET_REDIS_RATIO:.2f}: "
        f"{verdict}); Redis/off = {result['redis']['rate'] / result['off']['rate']:.3f}"
    )
    return "\n".join(lines)
