"""The aggregator's settings: one table, with defaults, help text and parsers.

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
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deniable.errors import DeniableError

from .cors import parse_origins
from .masking import mask_credentials as mask_credentials  # settings masking lives there
from .public_url import parse_public_url
from .ratelimit import parse_key_prefix, parse_networks, parse_proxies, parse_rate, parse_storage

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
    text = _text(value).strip()
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


def _home(value: object) -> str | None:
    if value is None or value == "":
        return None
    text = _text(value)
    if SCHEME.match(text) and "://" in text:
        raise ValueError("must be a directory path, not a URL")
    return text


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
    prefix: str = ENVIRONMENT_PREFIX  # the relay's table uses DENIABLE_RELAY_

    @property
    def environment_variable(self) -> str:
        return self.prefix + self.name


# The one table.  ``None`` defaults are filled in from HOME.
SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="HOME",
        default=None,
        help="Directory for the aggregator's data (--data-dir): the default SQLite database "
        "and signing key live here. Default: the platform's user data directory, e.g. "
        "$XDG_DATA_HOME/deniable or ~/.local/share/deniable.",
        parse=_home,
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
        name="RESULTS_CACHE_BYTES",
        default=32 << 20,
        help="Bytes of serialized results (JSON/CSV bodies) kept in memory per process, keyed "
        "by the folded statistics and beta (0 disables). An entry is only reused when no "
        "report arrived since.",
        parse=_integer(0, 1 << 34),
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
        name="METRICS",
        default=False,
        help="Serve Prometheus metrics at GET /metrics (reports accepted, submissions refused "
        "by reason, request latency, fold time, database errors) to an operator token that is "
        "not limited to some surveys.",
        parse=_boolean,
    ),
    Setting(
        name="MAX_RELAY_BATCH_BYTES",
        default=256 << 20,
        help="Largest body of one batch from a relayed survey's relay, in bytes (larger: 413); "
        "only a request with that relay's credential may exceed MAX_BODY_BYTES.",
        parse=_integer(1_024, 1 << 34),
    ),
    Setting(
        name="PUBLIC_URL",
        default="",
        help="The aggregator's public URL (https://host[:port]) where browsers reach it: the "
        "base of the URLs in the embed snippet. Empty: the request's Host and scheme (the "
        "scheme from X-Forwarded-Proto only with TRUST_PROXY); set it behind a proxy.",
        parse=parse_public_url,
    ),
    Setting(
        name="MIGRATE",
        default=True,
        help="Apply pending schema migrations at start-up.",
        parse=_boolean,
    ),
)

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}


@dataclass(frozen=True, kw_only=True)
class Resolved:
    """One setting's value in effect and where it came from."""

    setting: Setting
    value: Any
    source: str  # "default", "DENIABLE_<NAME>", "command line" or "config[...]"


# Settings whose default is a file in HOME, when unset.
DERIVED = {"DATABASE": "deniable.sqlite3", "SIGNING_KEY_PATH": "signing_key.pem"}


def resolve(
    config: Mapping[str, Any] | None = None,
    environment: Mapping[str, str] | None = None,
    *,
    config_source: str | None = None,
    table: tuple[Setting, ...] = SETTINGS,
    derived: Mapping[str, str] = DERIVED,
    default_home: Path | None = None,
) -> list[Resolved]:
    """Every setting's parsed value and its source (SettingsError on a bad value).

    ``table``, ``derived`` and ``default_home`` let another service (the relay) resolve
    its own table with this machinery.
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
    *,
    instance_path: str | os.PathLike[str] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Every setting's parsed value: defaults, then environment, then ``config``.

    Keys of ``config`` that Flask itself understands (upper-case names that are
    not in the table, e.g. ``TESTING``) pass through unparsed.  ``instance_path``
    is accepted for compatibility and ignored: data lives in HOME.
    """
    resolved = resolve(config, environment, **options)
    values = {item.setting.name: item.value for item in resolved}
    extra = {k: v for k, v in (config or {}).items() if k not in values}
    return {**extra, **values}


def describe(table: tuple[Setting, ...] = SETTINGS) -> str:
    """A plain-text table of every setting, for ``--help`` texts and docs."""
    lines = []
    for setting in table:
        lines.append(f"{setting.environment_variable} (default: {setting.default!r})")
        lines.append(f"    {setting.help}")
    return "\n".join(lines)
