"""What every service's command line shares: the parser, settings, storage, argument types,
output.

The exit statuses are the core's table (:mod:`deniable.terminal`): 2 usage, 3 not found,
4 refused, 5 unavailable.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from deniable.terminal import EXIT_NOT_FOUND, EXIT_USAGE

from .terminal import fail, format_table

# Command-line options (argparse destinations) that override a setting, both services.
OVERRIDES: Mapping[str, str] = {"data_dir": "HOME", "database": "DATABASE"}


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# -- settings ------------------------------------------------------------------------------


def overrides(args: argparse.Namespace, options: Mapping[str, str] = OVERRIDES) -> dict[str, Any]:
    """The settings the command line gives: ``options`` maps an option to its setting."""
    given = {}
    for option, name in options.items():
        value = getattr(args, option, None)
        if value:
            given[name] = value
    return given


def load_settings(
    args: argparse.Namespace,
    resolve: Callable[..., Sequence[Any]],
    options: Mapping[str, str] = OVERRIDES,
) -> dict[str, Any]:
    """A service's settings (defaults < environment < command-line overrides), by its
    ``resolve``; a bad value is a usage error (exit status 2)."""
    return {item.setting.name: item.value for item in _resolved(args, resolve, options)}


def show_settings(
    args: argparse.Namespace,
    resolve: Callable[..., Sequence[Any]],
    options: Mapping[str, str] = OVERRIDES,
) -> int:
    """A service's ``settings`` command: every setting's value in effect and its source
    (:func:`print_settings`; ``--json``, ``--verbose``); a bad value is a usage error."""
    print_settings(_resolved(args, resolve, options), as_json=args.json, verbose=args.verbose)
    return 0


def _resolved(
    args: argparse.Namespace, resolve: Callable[..., Sequence[Any]], options: Mapping[str, str]
) -> Sequence[Any]:
    from .settings import SettingsError

    try:
        return resolve(overrides(args, options), config_source="command line")
    except SettingsError as error:
        raise fail(str(error), EXIT_USAGE) from None


# -- storage -------------------------------------------------------------------------------


def shown_database(config: Mapping[str, Any]) -> str:
    """The DATABASE setting without a password, for messages and logs."""
    from .limits import shown_storage

    return shown_storage(str(config["DATABASE"]))


@contextlib.contextmanager
def opened_storage(
    config: Mapping[str, Any],
    opener: Callable[[Mapping[str, Any]], Any],
    *,
    migrate: bool = False,
    missing: str | None = None,
    uninitialised: str | None = None,
) -> Iterator[Any]:
    """A service's storage, ``opener(config)``, closed on leaving; with ``migrate``,
    migrated first.

    ``missing``: a command that needs a database the service's ``init`` made refuses
    an SQLite file that does not exist with this message (exit status 3) rather than
    create it; ``uninitialised``: likewise a database no migration ran on.
    """
    from .storage import is_postgres

    database = str(config["DATABASE"])
    if missing is not None and not is_postgres(database) and not Path(database).exists():
        raise fail(missing, EXIT_NOT_FOUND)
    storage = opener(config)
    try:
        if migrate:
            storage.migrate()
        if uninitialised is not None and storage.schema_version() == 0:
            raise fail(uninitialised, EXIT_NOT_FOUND)
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


# -- output --------------------------------------------------------------------------------


def add_serve_arguments(parser: argparse.ArgumentParser, *, port: int, workers: int) -> None:
    """``--bind``, ``--workers`` and ``--timeout``: how every service's ``serve`` listens."""
    parser.add_argument(
        "--bind",
        type=bind_address,
        default=("127.0.0.1", port),
        metavar="HOST:PORT",
        help=f"address to listen on (default 127.0.0.1:{port})",
    )
    parser.add_argument(
        "--workers", type=positive, default=workers, help=f"gunicorn workers (default {workers})"
    )
    parser.add_argument(
        "--timeout",
        type=positive,
        default=60,
        help="seconds before gunicorn restarts a silent worker (default 60)",
    )


def add_json(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--json", action="store_true", help=f"print {what} as JSON (for scripts) instead of a table"
    )


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def print_settings(resolved: Sequence[Any], *, as_json: bool, verbose: bool = False) -> None:
    """The ``settings`` command's output (the aggregator's and the relay's): every setting's
    variable, value (a database or Redis URL without its password) and source."""
    from .limits import shown_storage

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


__all__ = [
    "add_serve_arguments",
    "OVERRIDES",
    "Parser",
    "add_json",
    "bind_address",
    "load_settings",
    "opened_storage",
    "overrides",
    "port",
    "positive",
    "print_json",
    "print_settings",
    "show_settings",
    "shown_database",
]
