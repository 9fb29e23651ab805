"""What every ``deniable-aggregator`` command shares: settings, storage, argument types, output.

Split out of cli.py so the token and key commands (cli_tokens.py, cli_keys.py)
can use it without importing the command line itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .terminal import EXIT_NOT_FOUND, EXIT_USAGE, CommandError, _fail, format_table

PROG = "deniable-aggregator"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# -- settings and storage ------------------------------------------------------------------


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the command line gives (``--data-dir``, ``--database``, ``--signing-key``)."""
    given = {}
    for option, name in (
        ("data_dir", "HOME"),
        ("database", "DATABASE"),
        ("signing_key", "SIGNING_KEY_PATH"),
    ):
        value = getattr(args, option, None)
        if value:
            given[name] = value
    return given


def load_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The server's settings (defaults < DENIABLE_* environment < command-line overrides)."""
    from . import settings

    try:
        resolved = settings.resolve(overrides(args), config_source="command line")
        return {item.setting.name: item.value for item in resolved}
    except settings.SettingsError as error:
        raise _fail(str(error), EXIT_USAGE) from None


def shown_database(config: Mapping[str, Any]) -> str:
    """The database setting without a password, for messages and logs."""
    from .ratelimit import shown_storage

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


# -- argument types ------------------------------------------------------------------------


def bind_address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"must be HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}") from None
    # Why the ceiling: ids are 64-bit in both databases (SQLite raised OverflowError past it).
    if not 1 <= number < 2**63:
        raise argparse.ArgumentTypeError(f"must be a positive integer below 2^63, got {value!r}")
    return number


def port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {value!r}")
    return number


def beta(value: str) -> float:
    from deniable.estimation import check_beta

    try:
        return check_beta(float(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {value!r}") from None


def add_json(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--json", action="store_true", help=f"print {what} as JSON (for scripts) instead of a table"
    )


def add_beta(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--beta",
        type=beta,
        default=0.05,
        help="allowed failure probability of each interval (default 0.05)",
    )


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


__all__ = [
    "PROG",
    "CommandError",
    "Parser",
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
    "shown_database",
]


def print_settings(resolved: Sequence[Any], *, as_json: bool, verbose: bool = False) -> None:
    """The ``settings`` command's output (the aggregator's and the relay's): every setting's
    variable, value (a database or Redis URL without its password) and source."""
    from .ratelimit import shown_storage

    def shown(value: Any) -> Any:
        if isinstance(value, tuple):
            return ",".join(str(item) for item in value)
        if value is None or isinstance(value, bool | int | float):
            return value
        return shown_storage(str(value))

    rows = [
        {
            "name": r.setting.name,
            "variable": r.setting.environment_variable,
            "value": shown(r.value),
            "source": r.source,
            "help": r.setting.help,
        }
        for r in resolved
    ]
    if as_json:
        print_json(rows)
    elif verbose:
        for row in rows:
            print(f"{row['variable']} = {row['value']}  [{row['source']}]\n    {row['help']}")
    else:
        print(
            format_table(
                ["setting", "value", "source"],
                [[r["variable"], r["value"], r["source"]] for r in rows],
            )
        )
