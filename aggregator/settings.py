"""The aggregator's settings: one table, with defaults, help text and parsers.

Precedence, lowest first: the defaults below, environment variables named
``DENIABLE_<NAME>`` (e.g. ``DENIABLE_DATABASE``), then the ``config`` mapping
given to :func:`deniable.aggregator.create_app`.  Every value is parsed and
checked at start-up; a bad one raises :class:`SettingsError` naming the
setting, so a misconfigured server never starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable.errors import DeniableError

from .cors import parse_origins
from .ratelimit import parse_networks, parse_proxies, parse_rate

ENVIRONMENT_PREFIX = "DENIABLE_"


class SettingsError(DeniableError, ValueError):
    """A setting has an invalid value or is unknown."""


def _integer(minimum: int, maximum: int) -> Callable[[object], int]:
    def parse(value: object) -> int:
        if isinstance(value, bool):
            raise ValueError("must be an integer")
        number = int(str(value).strip()) if isinstance(value, str) else value
        if not isinstance(number, int) or not minimum <= number <= maximum:
            raise ValueError(f"must be an integer in [{minimum}, {maximum}]")
        return number

    return parse


def _text(value: object) -> str:
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise ValueError("must be a non-empty string")
    return str(value)


def _optional_text(value: object) -> str | None:
    if value is None or value == "":
        return None
    return _text(value)


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError("must be a boolean (true/false, 1/0, yes/no, on/off)")


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One setting: its name (without prefix), default, help text and parser."""

    name: str
    default: Any
    help: str
    parse: Callable[[object], Any]

    @property
    def environment_variable(self) -> str:
        return ENVIRONMENT_PREFIX + self.name


# The one table.  ``None`` defaults are filled in from the Flask instance folder.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="DATABASE",
        default=None,
        help="SQLite file path (default: <instance>/deniable.sqlite3), or a postgresql:// DSN "
        "to use PostgreSQL.",
        parse=_optional_text,
    ),
    Setting(
        name="SIGNING_KEY_PATH",
        default=None,
        help="Ed25519 private key (PEM, created with mode 0600 if missing; default: "
        "<instance>/signing_key.pem). Every process serving one database must share it.",
        parse=_optional_text,
    ),
    Setting(
        name="MAX_BODY_BYTES",
        default=1_048_576,
        help="Largest request body accepted, in bytes (larger: 413).",
        parse=_integer(1_024, 1 << 30),
    ),
    Setting(
        name="MAX_BATCH",
        default=1000,
        help="Most reports in one batch submission (more: 413).",
        parse=_integer(1, 100_000),
    ),
    Setting(
        name="RESULTS_CACHE",
        default=256,
        help="Result documents kept in memory per process, keyed by the folded statistics "
        "(0 disables). A cached entry is only reused when no report arrived since.",
        parse=_integer(0, 1_000_000),
    ),
    Setting(
        name="FOLD_CHUNK",
        default=10_000,
        help="Pending reports folded into the stored statistics per transaction.",
        parse=_integer(1, 10_000_000),
    ),
    Setting(
        name="POOL_SIZE",
        default=10,
        help="PostgreSQL: most connections per process (psycopg_pool).",
        parse=_integer(1, 1000),
    ),
    Setting(
        name="POOL_TIMEOUT",
        default=10,
        help="PostgreSQL: seconds to wait for a pooled connection before answering 503.",
        parse=_integer(1, 3600),
    ),
    Setting(
        name="BUSY_TIMEOUT_MS",
        default=30_000,
        help="SQLite: milliseconds a writer waits for the database lock before answering 503.",
        parse=_integer(0, 3_600_000),
    ),
    Setting(
        name="RATE_LIMIT_PER_ADDRESS",
        default="600/minute",
        help="Report submissions per client address: N/second|minute|hour|day, a token bucket "
        "holding N (0 disables). In memory, per process: the effective limit is this times "
        "the number of processes. Over it: 429 with Retry-After.",
        parse=parse_rate,
    ),
    Setting(
        name="RATE_LIMIT_PER_TOKEN",
        default="10/minute",
        help="Report submissions per enrolment token (surveys that require enrolment), as "
        "RATE_LIMIT_PER_ADDRESS; each token admits one batch, so this only bounds retries.",
        parse=parse_rate,
    ),
    Setting(
        name="RATE_LIMIT_EXEMPT",
        default="127.0.0.0/8,::1",
        help="Client addresses or networks never limited by address (comma-separated; empty: "
        "none). Loopback by default: local benchmarks, the demo, a same-host proxy without "
        "TRUST_PROXY.",
        parse=parse_networks,
    ),
    Setting(
        name="TRUST_PROXY",
        default=0,
        help="Number of reverse proxies in front of the server (0: none). With N > 0 the "
        "client address is the N-th entry from the right of X-Forwarded-For; never set it "
        "without such proxies, or clients choose their own address.",
        parse=parse_proxies,
    ),
    Setting(
        name="CORS_ORIGINS",
        default="",
        help="Origins (https://host[:port], comma-separated; empty: none) whose pages may fetch "
        "the key and signed surveys and post reports from the browser (embedded respond form, "
        "docs/embedding.md). Nothing else is shared cross-origin; credentials never are.",
        parse=parse_origins,
    ),
    Setting(
        name="MIGRATE",
        default=True,
        help="Apply pending schema migrations at start-up.",
        parse=_boolean,
    ),
)

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}


def load(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    *,
    instance_path: str | os.PathLike[str],
) -> dict[str, Any]:
    """Every setting's parsed value: defaults, then environment, then ``config``.

    Keys of ``config`` that Flask itself understands (upper-case names that are
    not in the table, e.g. ``TESTING``) pass through unparsed.
    """
    environment = os.environ if environment is None else environment
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        raw, source = setting.default, "default"
        if setting.environment_variable in environment:
            raw, source = environment[setting.environment_variable], setting.environment_variable
        if config and setting.name in config:
            raw, source = config[setting.name], f"config[{setting.name!r}]"
        try:
            values[setting.name] = setting.parse(raw)
        except (TypeError, ValueError) as error:
            raise SettingsError(f"setting {setting.name} (from {source}): {error}") from None
    instance = Path(instance_path)
    if values["DATABASE"] is None:
        values["DATABASE"] = str(instance / "deniable.sqlite3")
    if values["SIGNING_KEY_PATH"] is None:
        values["SIGNING_KEY_PATH"] = str(instance / "signing_key.pem")
    extra = {k: v for k, v in (config or {}).items() if k not in BY_NAME}
    return {**extra, **values}


def describe() -> str:
    """A plain-text table of every setting, for ``--help`` texts and docs."""
    lines = []
    for setting in SETTINGS:
        lines.append(f"{setting.environment_variable} (default: {setting.default!r})")
        lines.append(f"    {setting.help}")
    return "\n".join(lines)
