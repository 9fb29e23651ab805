"""What every ``deniable-aggregator`` command shares: settings, storage, argument types, output.

Split out of cli.py so the token and key commands (cli_tokens.py, cli_keys.py)
can use it without importing the command line itself.  What the relay's command line
shares with it is the service kit's (:mod:`deniable.service.cli`), re-exported here.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from deniable.service import cli as _kit
from deniable.service.cli import (
    Parser,
    add_json,
    bind_address,
    port,
    positive,
    print_json,
    print_settings,
)

from .terminal import EXIT_NOT_FOUND, CommandError, _fail

PROG = "deniable-aggregator"
# Options that override a setting: the kit's (--data-dir, --database) and --signing-key.
OVERRIDES: Mapping[str, str] = {**_kit.OVERRIDES, "signing_key": "SIGNING_KEY_PATH"}


# -- settings and storage ------------------------------------------------------------------


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the command line gives (``--data-dir``, ``--database``, ``--signing-key``)."""
    return _kit.overrides(args, OVERRIDES)


def load_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The server's settings (defaults < DENIABLE_* environment < command-line overrides)."""
    from . import settings

    return _kit.load_settings(args, settings.resolve, OVERRIDES)


def shown_database(config: Mapping[str, Any]) -> str:
    """The database setting without a password, for messages and logs."""
    from deniable.service.limits import shown_storage

    return shown_storage(str(config["DATABASE"]))


def is_sqlite(config: Mapping[str, Any]) -> bool:
    from .storage import is_postgres

    return not is_postgres(str(config["DATABASE"]))


@contextlib.contextmanager
def opened_storage(config: Mapping[str, Any], *, migrated: bool = True) -> Iterator[Any]:
    """The configured storage.

    With ``migrated`` (every command but ``init`` and ``serve``) an SQLite file that
    does not exist is never created, and a database ``init`` never ran on is refused
    (exit status 3).
    """
    from .storage import open_storage

    if migrated and is_sqlite(config) and not Path(config["DATABASE"]).exists():
        raise _fail(
            f"no database at {shown_database(config)}; run '{PROG} init' first (or "
            "give --data-dir, --database or DENIABLE_HOME)",
            EXIT_NOT_FOUND,
        )
    storage = open_storage(config)
    try:
        if migrated and storage.schema_version() == 0:
            raise _fail(
                f"database {shown_database(config)} is not initialised; run '{PROG} init' first",
                EXIT_NOT_FOUND,
            )
        yield storage
    finally:
        storage.close()


# -- output ---------------------------------------------------------------------------------


def when(value: str | None) -> str:
    """A stored time as a table shows it: "3 minutes ago" ("-" for none); ``--json`` and
    exports keep the exact ISO 8601 UTC time."""
    from .dashboard.times import ago

    return ago(value) if value else "-"


# -- argument types ------------------------------------------------------------------------


def beta(value: str) -> float:
    from deniable.estimation import check_beta

    try:
        return check_beta(float(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {value!r}") from None


def add_beta(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--beta",
        type=beta,
        default=0.05,
        help="allowed failure probability of each interval (default 0.05)",
    )


__all__ = [
    "OVERRIDES",
    "PROG",
    "CommandError",
    "Parser",
    "add_beta",
    "add_json",
    "beta",
    "bind_address",
    "is_sqlite",
    "load_settings",
    "opened_storage",
    "overrides",
    "port",
    "positive",
    "print_json",
    "print_settings",
    "shown_database",
    "when",
]
