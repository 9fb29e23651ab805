"""The aggregator's settings: one table, with defaults, help text and parsers, resolved by
the service kit's machinery (:mod:`deniable.service.settings`).

Precedence, lowest first: the defaults below, environment variables named
``DENIABLE_<NAME>`` (e.g. ``DENIABLE_DATABASE``), then the ``config`` mapping
given to :func:`deniable.aggregator.create_app` (the command line's
``--data-dir``, ``--database`` and ``--signing-key`` land there).  Every value
is parsed and checked at start-up; a bad one raises :class:`SettingsError`
naming the setting, so a misconfigured server never starts.

Where data lives: ``HOME`` (``DENIABLE_HOME``, ``--data-dir``), by default the
platform's user data directory (``$XDG_DATA_HOME/deniable``, else
``~/.local/share/deniable``; ``~/Library/Application Support/deniable`` on macOS;
``%LOCALAPPDATA%\\deniable`` on Windows) and never a folder inside the installed
package or its virtual environment, so reinstalling loses nothing.  The SQLite
database and the signing key default to files in it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from deniable.service import settings as _kit
from deniable.service.masking import mask_credentials as mask_credentials  # masks settings
from deniable.service.settings import (
    COMMON_BY_NAME,
    Resolved,
    Setting,
    SettingsError,
    parse_boolean,
    parse_database,
    parse_home,
    parse_integer,
    parse_optional_text,
    user_data_dir,
)

from .public_url import parse_public_url

# The one table.  ``None`` defaults are filled in from HOME.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="HOME",
        default=None,
        help="Directory for the aggregator's data (--data-dir): the default SQLite database "
        "and signing key live here. Default: the platform's user data directory, e.g. "
        "$XDG_DATA_HOME/deniable or ~/.local/share/deniable.",
        parse=parse_home,
    ),
    Setting(
        name="DATABASE",
        default=None,
        help="An SQLite file path, sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH (default: "
        "HOME/deniable.sqlite3), or a postgresql:// DSN to use PostgreSQL. Other forms are "
        "refused.",
        parse=parse_database,
    ),
    Setting(
        name="SIGNING_KEY_PATH",
        default=None,
        help="Ed25519 private key (PEM, created with mode 0600 if missing; default: "
        "HOME/signing_key.pem; its rotation chain sits beside it). Every process serving "
        "one database must share it.",
        parse=parse_optional_text,
    ),
    COMMON_BY_NAME["MAX_BODY_BYTES"],
    Setting(
        name="MAX_BATCH",
        default=1000,
        help="Most reports in one batch submission (more: 413).",
        parse=parse_integer(1, 100_000),
    ),
    Setting(
        name="RESULTS_CACHE_BYTES",
        default=32 << 20,
        help="Bytes of serialized results (JSON/CSV bodies) kept in memory per process, keyed "
        "by the folded statistics and beta (0 disables). An entry is only reused when no "
        "report arrived since.",
        parse=parse_integer(0, 1 << 34),
    ),
    Setting(
        name="FOLD_CHUNK",
        default=10_000,
        help="Pending reports folded into the stored statistics per transaction.",
        parse=parse_integer(1, 10_000_000),
    ),
    COMMON_BY_NAME["POOL_SIZE"],
    COMMON_BY_NAME["POOL_TIMEOUT"],
    COMMON_BY_NAME["BUSY_TIMEOUT_MS"],
    COMMON_BY_NAME["RATE_LIMIT_PER_ADDRESS"],
    COMMON_BY_NAME["RATE_LIMIT_PER_TOKEN"],
    COMMON_BY_NAME["RATE_LIMIT_STORAGE"],
    COMMON_BY_NAME["RATE_LIMIT_KEY_PREFIX"],
    COMMON_BY_NAME["RATE_LIMIT_EXEMPT"],
    COMMON_BY_NAME["TRUST_PROXY"],
    COMMON_BY_NAME["CORS_ORIGINS"],
    Setting(
        name="METRICS",
        default=False,
        help="Serve Prometheus metrics at GET /metrics (reports accepted, submissions refused "
        "by reason, request latency, fold time, database errors) to an operator token that is "
        "not limited to some surveys.",
        parse=parse_boolean,
    ),
    Setting(
        name="MAX_RELAY_BATCH_BYTES",
        default=256 << 20,
        help="Largest body of one batch from a relayed survey's relay, in bytes (larger: 413); "
        "only a request with that relay's credential may exceed MAX_BODY_BYTES.",
        parse=parse_integer(1_024, 1 << 34),
    ),
    Setting(
        name="PUBLIC_URL",
        default="",
        help="The aggregator's public URL (https://host[:port]) where browsers reach it: the "
        "base of the URLs in the embed snippet. Empty: the request's Host and scheme (the "
        "scheme from X-Forwarded-Proto only with TRUST_PROXY); set it behind a proxy.",
        parse=parse_public_url,
    ),
    COMMON_BY_NAME["MIGRATE"],
)

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}

# Settings whose default is a file in HOME, when unset.
DERIVED = {"DATABASE": "deniable.sqlite3", "SIGNING_KEY_PATH": "signing_key.pem"}


def resolve(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    *,
    config_source: str | None = None,
) -> list[Resolved]:
    """Every setting's parsed value and its source (SettingsError on a bad value)."""
    return _kit.resolve(
        config, environment, config_source=config_source, table=SETTINGS, derived=DERIVED
    )


def load(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    *,
    instance_path: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Every setting's parsed value: defaults, then environment, then ``config``.

    Keys of ``config`` that Flask itself understands (upper-case names that are
    not in the table, e.g. ``TESTING``) pass through unparsed.  ``instance_path``
    is accepted for compatibility and ignored: data lives in HOME.
    """
    return _kit.load(config, environment, table=SETTINGS, derived=DERIVED)


def describe() -> str:
    """A plain-text table of every setting, for ``--help`` texts and docs."""
    return _kit.describe(SETTINGS)


__all__ = [
    "BY_NAME",
    "DERIVED",
    "SETTINGS",
    "Resolved",
    "Setting",
    "SettingsError",
    "describe",
    "load",
    "mask_credentials",
    "parse_database",
    "resolve",
    "user_data_dir",
]
