"""The relay's settings: one table, resolved by the service kit's settings machinery.

Variables are named ``DENIABLE_RELAY_<NAME>`` (``DENIABLE_RELAY_DATABASE``,
...), so a relay and an aggregator on one host never read each other's.
Precedence, lowest first: defaults, environment, the ``config`` mapping (the
command line's ``--data-dir`` and ``--database`` land there).  A bad value
raises :class:`~deniable.service.settings.SettingsError` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from deniable.service import settings as common
from deniable.service.settings import (
    COMMON_BY_NAME,
    Setting,
    SettingsError,
    parse_boolean,
    parse_database,
    parse_home,
    parse_integer,
    parse_seconds,
    parse_url,
)

PREFIX = "DENIABLE_RELAY_"
DERIVED = {"DATABASE": "relay.sqlite3"}

__all__ = ["SETTINGS", "SettingsError", "describe", "load", "parse_url", "resolve"]


def _shared(name: str, help: str | None = None) -> Setting:
    """One of the settings both services read (the kit's), as DENIABLE_RELAY_<NAME>."""
    setting = COMMON_BY_NAME[name]
    return replace(setting, prefix=PREFIX, help=help or setting.help)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="HOME",
        default=None,
        prefix=PREFIX,
        parse=parse_home,
        help="Directory for the relay's data (--data-dir): the default SQLite database "
        "lives here. Default: the platform's user data directory + '-relay', e.g. "
        "~/.local/share/deniable-relay.",
    ),
    Setting(
        name="DATABASE",
        default=None,
        prefix=PREFIX,
        parse=parse_database,
        help="An SQLite file path, sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH "
        "(default: HOME/relay.sqlite3), or a postgresql:// DSN. Never the aggregator's "
        "database: the relay is another operator's.",
    ),
    Setting(
        name="PUBLIC_URL",
        default=None,
        prefix=PREFIX,
        parse=parse_url,
        help="This relay's URL as relayed surveys name it (their signed relay.url); a "
        "survey naming another URL is not relayed here. Required to add surveys.",
    ),
    Setting(
        name="WINDOW_SECONDS",
        default=3600.0,
        prefix=PREFIX,
        parse=parse_seconds(0, 365 * 86400),
        help="Minimum time a batch window stays open: a batch is forwarded once it holds "
        "min_batch reports (the survey's) AND this long passed since the last batch "
        "of its unit (or since the survey was added).",
    ),
    Setting(
        name="FORWARD_INTERVAL",
        default=5.0,
        prefix=PREFIX,
        parse=parse_seconds(0.05, 3600),
        help="Seconds between the forwarder's checks for batches to form and send.",
    ),
    Setting(
        name="REFRESH_SECONDS",
        default=60.0,
        prefix=PREFIX,
        parse=parse_seconds(0.1, 86400),
        help="Seconds between re-fetching each relayed survey's signed document (open or "
        "closed) and enrolment token digests from its aggregator.",
    ),
    Setting(
        name="FORWARD_TIMEOUT",
        default=120.0,
        prefix=PREFIX,
        parse=parse_seconds(1, 3600),
        help="Seconds to wait for the aggregator to acknowledge one batch; a batch is "
        "sent again (same batch id) after a failure.",
    ),
    Setting(
        name="RETRY_MAX_SECONDS",
        default=300.0,
        prefix=PREFIX,
        parse=parse_seconds(0.05, 86400),
        help="Longest wait before sending an unacknowledged batch again (the wait starts at "
        "FORWARD_INTERVAL and doubles with each failed attempt).",
    ),
    Setting(
        name="FORWARDER",
        default=True,
        prefix=PREFIX,
        parse=parse_boolean,
        help="Run the forwarder in each serving process (off: only 'deniable-relay "
        "forward' sends batches).",
    ),
    Setting(
        name="MAX_BATCH_BYTES",
        default=256 << 20,
        prefix=PREFIX,
        parse=parse_integer(1_024, 1 << 34),
        help="Largest body of one forwarded batch, in bytes: more units waiting go out as "
        "several batches, each of at least min_batch. At most the aggregator's "
        "MAX_RELAY_BATCH_BYTES (which refuses a larger body every time).",
    ),
    Setting(
        name="FLUSH_LIMIT",
        default=3,
        prefix=PREFIX,
        parse=parse_integer(0, 1_000),
        help="Most flushes the aggregator may ask for per survey (close-survey "
        "--flush-relay), over the survey's life on this relay; 0 refuses every flush. Each "
        "flush's answer tells the aggregator how many units wait at that moment, so asking "
        "again and again would time the arrivals (docs/relay.md, 'Flushing').",
    ),
    Setting(
        name="HELD_COUNT_SECONDS",
        default=900.0,
        prefix=PREFIX,
        parse=parse_seconds(1, 7 * 86400),
        help="How often, at most, the held count the aggregator may read is counted again "
        "(its survey page says 'the relay holds N answers', as of that time): the "
        "aggregator learns the arrivals per period of this length, never each arrival. "
        "Longer hides more (docs/relay.md, 'What the aggregator learns').",
    ),
    _shared("MAX_BODY_BYTES"),
    _shared("POOL_SIZE"),
    _shared("POOL_TIMEOUT"),
    _shared("BUSY_TIMEOUT_MS"),
    _shared(
        "RATE_LIMIT_PER_ADDRESS",
        "Sealed submissions per client address, as the "
        "aggregator's setting of that name (0 disables). Counted where RATE_LIMIT_STORAGE "
        "says; the address is never stored.",
    ),
    _shared("RATE_LIMIT_PER_TOKEN"),
    _shared("RATE_LIMIT_STORAGE"),
    replace(_shared("RATE_LIMIT_KEY_PREFIX"), default="deniable-relay"),
    _shared("RATE_LIMIT_EXEMPT"),
    _shared("TRUST_PROXY"),
    _shared(
        "CORS_ORIGINS",
        "Origins (https://host[:port], comma-separated) whose pages may "
        "post sealed submissions from the browser: the aggregators' respond pages and "
        "embedding sites of the surveys relayed here.",
    ),
    _shared("MIGRATE"),
)


def default_home() -> Path:
    base = common.user_data_dir()
    return base.with_name(base.name + "-relay")


def resolve(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    *,
    config_source: str | None = None,
) -> list[common.Resolved]:
    return common.resolve(
        config,
        environment,
        config_source=config_source,
        table=SETTINGS,
        derived=DERIVED,
        default_home=default_home(),
    )


def load(
    config: Mapping[str, Any] | None = None, environment: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return common.load(
        config, environment, table=SETTINGS, derived=DERIVED, default_home=default_home()
    )


def describe() -> str:
    return common.describe(SETTINGS)
