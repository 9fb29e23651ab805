"""``deniable-aggregator relay ...``: credentials for relays, and what they forwarded.

* ``relay credential --relay-url URL``: a new credential for the relay at URL
  (the ``relay.url`` a relayed survey's signed definition names), printed once;
  only its SHA-256 is stored.  Hand it to the relay's operator, who gives it to
  ``deniable-relay add-survey --credential-file``.
* ``relay credentials``: the credentials (digest prefix, URL, created, revoked).
* ``relay revoke DIGEST_PREFIX``: revoke; that relay's batches are refused from then on.
* ``relay batches SURVEY``: per unit, batches stored, the smallest, reports
  stored and sealed blobs dropped (did not open, or held an invalid report).

:func:`ask_relay` is the one client of a relayed survey's relay: the signed flush
request of ``close-survey --flush-relay`` and the signed held-count request
(:func:`held_count`) of ``close-survey`` and the dashboard's survey page
(:mod:`deniable.relay_flush`, docs/protocol.md §11.8-§11.9).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Any

from .cli_common import add_json, load_settings, opened_storage, print_json, when
from .terminal import EXIT_NOT_FOUND, EXIT_USAGE, _fail, format_table

__all__ = ["RelayAnswer", "ask_relay", "held_count", "register"]


@dataclass(frozen=True, kw_only=True)
class RelayAnswer:
    """What the relay answered: its HTTP status and JSON document (``status`` None: no
    answer, ``error`` says why), and the problem's detail when it refused."""

    status: int | None
    document: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200 and isinstance(self.document, dict)

    @property
    def detail(self) -> str | None:
        found = self.document.get("detail") if isinstance(self.document, dict) else None
        return str(found) if found else None


def ask_relay(key: Any, record: Any, kind: str, timeout: float) -> RelayAnswer:
    """POST the aggregator's signed request ``kind`` (``"flush"`` or ``"held"``) for
    ``record``'s survey to its relay, signed with ``key`` (the aggregator's
    :class:`~.signing.SigningKey`); never raises for the relay's failures."""
    import requests

    from deniable.relay_flush import FLUSH_FORMAT, HELD_REQUEST_FORMAT, signed_message

    kinds = {"flush": FLUSH_FORMAT, "held": HELD_REQUEST_FORMAT}
    relay = record.survey.relay
    issued_at = int(time.time())
    body = {
        "format": kinds[kind],
        "survey": record.id,
        "relay": relay.url,
        "issued_at": issued_at,
        "key_id": key.key_id,
        "signature": key.sign(signed_message(kinds[kind], record.id, relay.url, issued_at)),
    }
    url = f"{relay.url}/api/v1/surveys/{record.id}/{kind}"
    try:
        response = requests.post(url, json=body, timeout=timeout, allow_redirects=False)
    except requests.RequestException as error:
        return RelayAnswer(status=None, error=type(error).__name__)
    try:
        document = response.json()
    except ValueError:
        document = None
    return RelayAnswer(status=response.status_code, document=document)


def held_count(key: Any, record: Any, timeout: float) -> Any:
    """The relay's signed-for snapshot of the answers it holds for ``record``'s survey
    (:class:`deniable.relay_held.HeldCount`), or None when it did not answer with one."""
    from deniable.errors import InvalidReport
    from deniable.relay_held import HeldCount

    answer = ask_relay(key, record, "held", timeout)
    if not answer.ok:
        return None
    try:
        count = HeldCount.from_dict(answer.document)
    except InvalidReport:
        return None
    return count if count.survey == record.id else None


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
                    [r["digest"], r["relay_url"], when(r["created_at"]), when(r["revoked_at"])]
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
