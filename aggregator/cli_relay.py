"""``deniable-aggregator relay ...``: credentials for relays, and what they forwarded.

* ``relay credential --relay-url URL``: a new credential for the relay at URL
  (the ``relay.url`` a relayed survey's signed definition names), printed once;
  only its SHA-256 is stored.  Hand it to the relay's operator, who gives it to
  ``deniable-relay add-survey --credential-file``.
* ``relay credentials``: the credentials (digest prefix, URL, created, revoked).
* ``relay revoke DIGEST_PREFIX``: revoke; that relay's batches are refused from then on.
* ``relay batches SURVEY``: per unit, batches stored, the smallest, reports
  stored and sealed blobs dropped (did not open, or held an invalid report).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .cli_common import add_json, load_settings, opened_storage, print_json
from .terminal import EXIT_NOT_FOUND, EXIT_USAGE, _fail, format_table

__all__ = ["register"]


def cmd_credential(args: argparse.Namespace) -> int:
    from deniable.service.settings import parse_url

    try:
        url = parse_url(args.relay_url)
    except ValueError as error:
        raise _fail(f"--relay-url {error}", EXIT_USAGE) from None
    config = load_settings(args)
    with opened_storage(config) as storage:
        credential = storage.relay.create_credential(url)
    print(credential)
    print(f"relay credential for {url} (shown once; only its SHA-256 is stored)", file=sys.stderr)
    return 0


def cmd_credentials(args: argparse.Namespace) -> int:

    config = load_settings(args)
    with opened_storage(config) as storage:
        rows = storage.relay.list_credentials()
    if args.json:
        print_json(rows)
    else:
        print(
            format_table(
                ["digest", "relay", "created", "revoked"],
                [
                    [r["digest"], r["relay_url"], r["created_at"], r["revoked_at"] or "-"]
                    for r in rows
                ],
            )
        )
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:

    prefix = args.digest.lower()
    if len(prefix) < 8 or any(c not in "0123456789abcdef" for c in prefix):
        raise _fail("give at least 8 hex digits of the credential's digest", EXIT_USAGE)
    config = load_settings(args)
    with opened_storage(config) as storage:
        count = storage.relay.revoke_credential(prefix)
    if not count:
        raise _fail(f"no unrevoked relay credential with digest {prefix}...", EXIT_NOT_FOUND)
    print(f"revoked {count} relay credential(s)")
    return 0


def cmd_batches(args: argparse.Namespace) -> int:

    config = load_settings(args)
    with opened_storage(config) as storage:
        storage.get_survey(args.survey, count=False)
        summary = storage.relay.batch_summary(args.survey)
    if args.json:
        print_json({"survey": args.survey, "units": summary})
    else:
        print(
            format_table(
                ["unit", "batches", "smallest", "stored", "dropped", "with dummies", "plausible"],
                [
                    [
                        unit or "(submission)",
                        s["batches"],
                        s["smallest_batch"],
                        s["stored"],
                        s["dropped"],
                        s["noised_batches"],
                        s["plausible_batches"],
                    ]
                    for unit, s in sorted(summary.items())
                ],
            )
        )
    return 0


def register(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``relay credential|credentials|revoke|batches`` to the command line."""
    group = commands.add_parser(
        "relay",
        help="relay credentials and forwarded batches",
        description="Credentials for the relays of relayed surveys, "
        "and the batches they forwarded (docs/relay.md).",
    )
    actions = group.add_subparsers(
        dest="relay_command", metavar="ACTION", parser_class=parser_class
    )
    actions.required = True
    sub = actions.add_parser(
        "credential",
        help="create a relay credential (printed once)",
        description="Create a credential for the relay at --relay-url; "
        "print it once (only its SHA-256 is stored).",
    )
    sub.add_argument(
        "--relay-url",
        required=True,
        metavar="URL",
        help="the relay's URL, as relayed surveys name it (relay.url)",
    )
    sub.set_defaults(func=cmd_credential)
    sub = actions.add_parser(
        "credentials",
        help="list relay credentials",
        description="List relay credentials: digest prefix, relay URL, created, revoked.",
    )
    add_json(sub, "the credentials")
    sub.set_defaults(func=cmd_credentials)
    sub = actions.add_parser(
        "revoke",
        help="revoke a relay credential by digest prefix",
        description="Revoke a relay credential: that relay's batches are refused from then on.",
    )
    sub.add_argument(
        "digest",
        metavar="DIGEST_PREFIX",
        help="at least 8 hex digits of the credential's digest ('relay credentials')",
    )
    sub.set_defaults(func=cmd_revoke)
    sub = actions.add_parser(
        "batches",
        help="a relayed survey's batches: smallest, dropped",
        description="Per shuffle unit of a relayed survey: batches stored, "
        "the smallest, reports stored and sealed blobs dropped.",
    )
    sub.add_argument("survey", metavar="ID", help="id of the relayed survey")
    add_json(sub, "the summary")
    sub.set_defaults(func=cmd_batches)
