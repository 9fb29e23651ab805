"""Settings machinery for a service: one table of :class:`Setting`, resolved once at start-up.

Each service writes its table (the aggregator's ``deniable.aggregator.settings``, the
relay's ``deniable.relay.settings``) out of :class:`Setting` rows, the parsers here and
the rows both services share (:data:`COMMON`), and resolves it with :func:`resolve`.

Precedence, lowest first: each setting's default, the environment variable named
``<prefix><NAME>`` (``DENIABLE_DATABASE``, ``DENIABLE_RELAY_DATABASE``), then the
``config`` mapping given to the app factory (the command line's ``--data-dir`` and
``--database`` land there).  Every value is parsed and checked at start-up; a bad one
raises :class:`SettingsError` naming the setting, so a misconfigured server never starts.

Where data lives: ``HOME``, by default the platform's user data directory
(:func:`user_data_dir`: ``$XDG_DATA_HOME/deniable``, else ``~/.local/share/deniable``;
``~/Library/Application Support/deniable`` on macOS; ``%LOCALAPPDATA%\\deniable`` on
Windows) and never a folder inside the installed package or its virtual environment, so
reinstalling loses nothing.  Settings whose default is a file in HOME are ``derived``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable import origins
from deniable.errors import DeniableError, InvalidParameter

from .cors import parse_origins
from .limits import parse_key_prefix, parse_networks, parse_proxies, parse_rate, parse_storage

ENVIRONMENT_PREFIX = "DENIABLE_"


class SettingsError(DeniableError, ValueError):
    """A setting has an invalid value or is unknown."""


def parse_integer(minimum: int, maximum: int) -> Callable[[object], int]:
    """A parser of integers in [minimum, maximum] (a string of digits or an int, not a bool)."""

    def parse(value: object) -> int:
        if isinstance(value, bool):
            raise ValueError("must be an integer")
        number = int(str(value).strip()) if isinstance(value, str) else value
        if not isinstance(number, int) or not minimum <= number <= maximum:
            raise ValueError(f"must be an integer in [{minimum}, {maximum}]")
        return number

    return parse


def parse_seconds(minimum: float, maximum: float) -> Callable[[object], float]:
    """A parser of a number of seconds in [minimum, maximum]."""

    def parse(value: object) -> float:
        try:
            number = float(str(value).strip())
        except ValueError:
            number = float("nan")
        if not minimum <= number <= maximum:
            raise ValueError(f"must be a number of seconds in [{minimum:g}, {maximum:g}]")
        return number

    return parse


def parse_text(value: object) -> str:
    """A non-empty string (or path)."""
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise ValueError("must be a non-empty string")
    return str(value)


def parse_optional_text(value: object) -> str | None:
    """A non-empty string, or None for empty."""
    if value is None or value == "":
        return None
    return parse_text(value)


def parse_boolean(value: object) -> bool:
    """A boolean: true/false, 1/0, yes/no, on/off."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError("must be a boolean (true/false, 1/0, yes/no, on/off)")


# A URL scheme (two characters at least, so a Windows drive letter is a path).
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")
DATABASE_FORMS = (
    "an SQLite file path, sqlite:///ABSOLUTE/PATH, sqlite:RELATIVE/PATH, or a postgresql:// DSN"
)


def user_data_dir() -> Path:
    """The platform's per-user data directory for Deniable (not created here)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "deniable"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "deniable"
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is invalid, ignore it
        base = str(Path.home() / ".local" / "share")
    return Path(base) / "deniable"


def parse_database(value: object) -> str | None:
    """The DATABASE setting: an SQLite path (returned as a plain path) or a PostgreSQL DSN.

    Accepted: a path without a URL scheme; ``sqlite:///ABSOLUTE`` (→ ``/ABSOLUTE``);
    ``sqlite:RELATIVE`` (→ ``RELATIVE``); ``postgresql://...`` (also ``postgres://``).
    Anything else, e.g. ``mysql://...`` or ``sqlite://host/x``, is refused.
    """
    if value is None or value == "":
        return None
    text = parse_text(value).strip()
    if text.startswith(("postgresql://", "postgres://")):
        return text
    lowered = text.lower()
    if lowered.startswith("sqlite:"):
        rest = text[len("sqlite:") :]
        if "?" in rest or "#" in rest:
            raise ValueError(f"SQLite URLs take no query or fragment; use {DATABASE_FORMS}")
        if rest.startswith("///") and len(rest) > 3:
            return rest[2:]  # sqlite:///srv/x.db → /srv/x.db
        if rest.startswith("//") or not rest:
            raise ValueError(
                f"unsupported SQLite URL {text[:60]!r}: use sqlite:///ABSOLUTE/PATH or "
                "sqlite:RELATIVE/PATH"
            )
        return rest
    if SCHEME.match(text):
        scheme = text.split(":", 1)[0]
        raise ValueError(f"unsupported database URL scheme {scheme!r}; use {DATABASE_FORMS}")
    return text


def parse_home(value: object) -> str | None:
    """The HOME setting: a directory path (not a URL), or None for the default."""
    if value is None or value == "":
        return None
    text = parse_text(value)
    if SCHEME.match(text) and "://" in text:
        raise ValueError("must be a directory path, not a URL")
    return text


def parse_url(value: object) -> str | None:
    """An http(s) base URL without query or fragment, without a trailing slash."""
    if value is None or value == "":
        return None
    text = str(value).strip().removesuffix("/")
    try:
        origins.parse_url(text)  # the parser of relay.url: what a survey can name, this can be
    except InvalidParameter as error:
        raise ValueError(f"must be an http(s) URL such as https://relay.example: {error}") from None
    return text


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One setting: its name (without prefix), default, help text and parser."""

    name: str
    default: Any
    help: str
    parse: Callable[[object], Any]
    prefix: str = ENVIRONMENT_PREFIX  # the relay's table uses DENIABLE_RELAY_

    @property
    def environment_variable(self) -> str:
        return self.prefix + self.name


# The rows both services read the same way (through the kit's storage, limits and CORS),
# by name; each table places them where it lists them.
COMMON: tuple[Setting, ...] = (
    Setting(
        name="MAX_BODY_BYTES",
        default=1_048_576,
        help="Largest request body accepted, in bytes (larger: 413).",
        parse=parse_integer(1_024, 1 << 30),
    ),
    Setting(
        name="POOL_SIZE",
        default=10,
        help="PostgreSQL: most connections per process (psycopg_pool).",
        parse=parse_integer(1, 1000),
    ),
    Setting(
        name="POOL_TIMEOUT",
        default=10,
        help="PostgreSQL: seconds to wait for a pooled connection before answering 503.",
        parse=parse_integer(1, 3600),
    ),
    Setting(
        name="BUSY_TIMEOUT_MS",
        default=30_000,
        help="SQLite: milliseconds a writer waits for the database lock before answering 503.",
        parse=parse_integer(0, 3_600_000),
    ),
    Setting(
        name="RATE_LIMIT_PER_ADDRESS",
        default="600/minute",
        help="Report submissions per client address: N/second|minute|hour|day, at most N in "
        "any such moving window (0 disables). Counted where RATE_LIMIT_STORAGE says. Over it: "
        "429 with Retry-After.",
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
        name="RATE_LIMIT_STORAGE",
        default="memory://",
        help="Where rate limits are counted: memory:// (each process on its own: the effective "
        "limit is this times the number of processes) or redis://HOST:PORT/DB (also rediss://, "
        "redis+unix://): one count shared by every process and machine using that Redis.",
        parse=parse_storage,
    ),
    Setting(
        name="RATE_LIMIT_KEY_PREFIX",
        default="deniable",
        help="Prefix of the rate-limit keys in RATE_LIMIT_STORAGE; aggregators that share a "
        "Redis share limits exactly when their prefixes are equal.",
        parse=parse_key_prefix,
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
        parse=parse_boolean,
    ),
)

COMMON_BY_NAME: Mapping[str, Setting] = {setting.name: setting for setting in COMMON}


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """One setting's value in effect and where it came from."""

    setting: Setting
    value: Any
    source: str  # "default", "DENIABLE_<NAME>", "command line" or "config[...]"


def resolve(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    *,
    table: tuple[Setting, ...],
    derived: Mapping[str, str],
    config_source: str | None = None,
    default_home: Path | None = None,
) -> list[Resolved]:
    """Every setting of ``table``: its parsed value and its source (SettingsError on a bad value).

    ``table`` must hold ``HOME``; ``derived`` maps settings whose unset value is a file
    in HOME to that file's name; ``default_home`` replaces :func:`user_data_dir`.
    """
    environment = os.environ if environment is None else environment
    by_name = {setting.name: setting for setting in table}
    resolved: dict[str, Resolved] = {}
    for setting in table:
        raw, source = setting.default, "default"
        if setting.environment_variable in environment:
            raw, source = environment[setting.environment_variable], setting.environment_variable
        if config and setting.name in config:
            raw, source = config[setting.name], config_source or f"config[{setting.name!r}]"
        try:
            value = setting.parse(raw)
        except (TypeError, ValueError) as error:
            raise SettingsError(f"setting {setting.name} (from {source}): {error}") from None
        resolved[setting.name] = Resolved(setting=setting, value=value, source=source)
    home = resolved["HOME"]
    if home.value is None:
        home_dir = default_home if default_home is not None else user_data_dir()
        resolved["HOME"] = Resolved(
            setting=home.setting,
            value=str(home_dir),
            source="default (platform user data directory)",
        )
    for name, filename in derived.items():
        if resolved[name].value is None:
            resolved[name] = Resolved(
                setting=by_name[name],
                value=str(Path(resolved["HOME"].value) / filename),
                source="default (in HOME)",
            )
    return list(resolved.values())


def load(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Every setting's parsed value (:func:`resolve`, ``options`` passed on).

    Keys of ``config`` that Flask itself understands (upper-case names that are
    not in the table, e.g. ``TESTING``) pass through unparsed.
    """
    resolved = resolve(config, environment, **options)
    values = {item.setting.name: item.value for item in resolved}
    extra = {k: v for k, v in (config or {}).items() if k not in values}
    return {**extra, **values}


def describe(table: tuple[Setting, ...]) -> str:
    """A plain-text table of every setting, for ``--help`` texts and docs."""
    lines = []
    for setting in table:
        lines.append(f"{setting.environment_variable} (default: {setting.default!r})")
        lines.append(f"    {setting.help}")
    return "\n".join(lines)


__all__ = [
    "COMMON",
    "COMMON_BY_NAME",
    "DATABASE_FORMS",
    "ENVIRONMENT_PREFIX",
    "Resolved",
    "Setting",
    "SettingsError",
    "describe",
    "load",
    "parse_boolean",
    "parse_database",
    "parse_home",
    "parse_integer",
    "parse_optional_text",
    "parse_seconds",
    "parse_text",
    "parse_url",
    "resolve",
    "user_data_dir",
]
