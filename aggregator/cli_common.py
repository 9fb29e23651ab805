"""What every ``deniable-aggregator`` command shares: settings, storage, argument types, output.

Split out of cli.py so the token and key commands (cli_tokens.py, cli_keys.py)
can use it without importing the command line itself.  What the relay's command line
shares with it is the service kit's (:mod:`deniable.service.cli`), re-exported here.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Mapping
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
    shown_database,
)

from .terminal import CommandError

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


def opened_storage(
    config: Mapping[str, Any], *, migrated: bool = True
) -> contextlib.AbstractContextManager[Any]:
    """The configured storage (:func:`deniable.service.cli.opened_storage`).

    With ``migrated`` (every command but ``init`` and ``serve``) an SQLite file that
    does not exist is never created, and a database ``init`` never ran on is refused
    (exit status 3).
    """
    from .storage import open_storage

    if not migrated:
        return _kit.opened_storage(config, open_storage)
    return _kit.opened_storage(
        config,
        open_storage,
        missing=f"no database at {shown_database(config)}; run '{PROG} init' first (or "
        "give --data-dir, --database or DENIABLE_HOME)",
        uninitialised=f"database {shown_database(config)} is not initialised; run "
        f"'{PROG} init' first",
    )


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
