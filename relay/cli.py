"""``deniable-relay``: run and administer a relay (docs/relay.md).

Commands: ``init`` (create or migrate the database), ``serve`` (gunicorn +
waitress, as the aggregator; the forwarder runs in each process),
``add-survey`` (relay a survey of an aggregator: verify its signed definition
names this relay and that its relay noise, if any, is noise the relay can add, pin the
aggregator's key, keep its relay credential),
``set-credential`` (a new relay credential, held units kept),
``remove-survey``, ``status`` (per survey: state, the relay noise it signs, units held
per unit, batches waiting for an acknowledgement, forwarded, smallest batch, discarded,
the aggregator's flushes; respondents' units only, never dummies),
``forward`` (one forwarder pass now) and ``settings``.

Every command reads the relay's settings (``DENIABLE_RELAY_*``; ``--data-dir``
and ``--database`` before the command override HOME and DATABASE).  Failures
print one line ``deniable-relay: error: ...`` and exit with the aggregator's
documented statuses: 2 usage, 3 not found, 4 refused or conflict, 5 unavailable.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deniable.errors import DeniableError
from deniable.service import cli as kit
from deniable.service.cli import (
    Parser,
    add_json,
    add_serve_arguments,
    print_json,
    shown_database,
)
from deniable.service.terminal import CommandError, format_table
from deniable.service.terminal import fail as _fail
from deniable.terminal import (
    EXIT_FAILURE,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    exit_status,
    quiet_pipe,
)

PROG = "deniable-relay"


def load_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The relay's settings (defaults < DENIABLE_RELAY_* < ``--data-dir``, ``--database``)."""
    from . import settings

    return kit.load_settings(args, settings.resolve)


def opened_storage(
    config: Mapping[str, Any], *, migrate: bool = False
) -> contextlib.AbstractContextManager[Any]:
    """The relay's storage (:func:`deniable.service.cli.opened_storage`): migrated with
    ``migrate``, else an SQLite file ``init`` did not make is refused (exit status 3)."""
    from .storage import open_storage

    missing = f"no relay database at {config['DATABASE']}; run '{PROG} init' first"
    return kit.opened_storage(
        config, open_storage, migrate=migrate, missing=None if migrate else missing
    )


def cmd_init(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config, migrate=True) as storage:
        version = storage.migrate()
    print(f"relay database {shown_database(config)}: schema version {version}")
    if not config["PUBLIC_URL"]:
        print(
            f"{PROG}: note: set DENIABLE_RELAY_PUBLIC_URL to the URL surveys name for this "
            "relay before adding surveys",
            file=sys.stderr,
        )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from deniable.service.serving import serve

    from . import create_app

    config = load_settings(args)
    with opened_storage(config, migrate=True):
        pass
    host, port = args.bind
    print(
        f"{PROG}: serving database={shown_database(config)} "
        f"public_url={config['PUBLIC_URL']} window={config['WINDOW_SECONDS']:g}s "
        f"bind={host}:{port} workers={args.workers}",
        file=sys.stderr,
        flush=True,
    )
    serve(
        config, f"{host}:{port}", args.workers, args.timeout, factory=create_app, process_name=PROG
    )
    return 0


def _read_credential(path: str) -> str:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text("utf-8")
    except OSError as error:
        raise _fail(f"cannot read the credential: {error}", EXIT_USAGE) from None
    credential = text.strip()
    if not credential or len(credential) > 500 or any(c.isspace() for c in credential):
        raise _fail("the credential file must hold the relay credential alone", EXIT_USAGE)
    return credential


def cmd_add_survey(args: argparse.Namespace) -> int:
    from . import upstream
    from .storage import RelayedSurvey

    config = load_settings(args)
    if not config["PUBLIC_URL"]:
        raise _fail(
            "set DENIABLE_RELAY_PUBLIC_URL (this relay's URL as surveys name it) first", EXIT_USAGE
        )
    aggregator = args.aggregator.rstrip("/")
    credential = _read_credential(args.credential_file)
    if args.aggregator_key:
        pin = upstream.pin_from(args.aggregator_key, None)
    else:
        pin = upstream.fetch_key(aggregator)
        print(
            f"pinned the aggregator's served signing key {pin.key_id}; confirm it with the "
            "aggregator's operator ('deniable-aggregator key show')",
            file=sys.stderr,
        )
    verified = upstream.verify_survey(aggregator, args.survey, pin, public_url=config["PUBLIC_URL"])
    encryption, public = upstream.encryption_key(aggregator, verified.pin)
    relay = verified.relay
    questions = verified.survey.questions
    units = [""] if relay.shuffle_unit == "submission" else [q.id for q in questions]
    with opened_storage(config) as storage:
        storage.add_survey(
            RelayedSurvey(
                survey_id=args.survey,
                aggregator_url=aggregator,
                credential=credential,
                signing_key=upstream.pin_text(verified.pin),
                key_sequence=verified.pin.sequence,
                document=json.dumps(verified.document),
                status=verified.status,
                min_batch=relay.min_batch,
                shuffle_unit=relay.shuffle_unit,
                require_enrolment=verified.require_enrolment,
                refreshed_at="",
                encryption_keys=(encryption,),
            ),
            units,
        )
        storage.accept_encryption_key(args.survey, encryption, public)
        if verified.require_enrolment:
            digests = upstream.fetch_enrolment_digests(aggregator, args.survey, credential)
            storage.add_enrolment_digests(args.survey, digests)
    noise = ""
    if relay.noise is not None:
        law = relay.noise.law
        noise = (
            f", relay noise {law.name} dummies ({law.mean:g} per output value on average) for "
            f"central epsilon {relay.noise.epsilon:g} at delta {relay.noise.delta:g}"
        )
    print(
        f"relaying survey {args.survey} of {aggregator}: min_batch {relay.min_batch}, shuffle "
        f"unit {relay.shuffle_unit}, status {verified.status}, key {verified.pin.key_id}{noise}"
    )
    return 0


def cmd_set_credential(args: argparse.Namespace) -> int:
    config = load_settings(args)
    credential = _read_credential(args.credential_file)
    with opened_storage(config) as storage:
        for survey_id in args.surveys:
            storage.get_survey(survey_id)  # all known, or none changed
        for survey_id in args.surveys:
            storage.set_credential(survey_id, credential)
    print(
        f"new relay credential for survey(s) {', '.join(args.surveys)}; held units kept. "
        "Ask the aggregator's operator to revoke the old one now"
    )
    return 0


def cmd_remove_survey(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        deleted = storage.remove_survey(args.survey)
    print(f"survey {args.survey} no longer relayed; {deleted} held units deleted unsent")
    return 0


def status_rows(storage: Any) -> list[dict[str, Any]]:
    from .forwarder import signed_survey

    rows = []
    for stored in storage.list_surveys():
        noise = signed_survey(stored).relay.noise
        held = storage.held_counts(stored.survey_id)
        known, spent = storage.enrolment_counts(stored.survey_id)
        rows.append(
            {
                "survey": stored.survey_id,
                "aggregator": stored.aggregator_url,
                "status": stored.status,
                "min_batch": stored.min_batch,
                "shuffle_unit": stored.shuffle_unit,
                "noise": None if noise is None else noise.to_dict(),
                "waiting": {unit: counts[0] for unit, counts in sorted(held.items())},
                "in_batches": sum(counts[1] for counts in held.values()),
                "unacknowledged_batches": [
                    {"batch": b, "unit": u, "size": s, "attempts": a, "last_error": e}
                    for b, u, s, a, e in storage.pending_batches(stored.survey_id)
                ],
                "forwarded_batches": stored.forwarded_batches,
                "forwarded_reports": stored.forwarded_reports,
                "smallest_batch": stored.smallest_batch,
                "discarded_reports": stored.discarded_reports,
                "flushes": storage.flush_count(stored.survey_id),
                "enrolment_tokens": {"known": known, "spent": spent},
                "refreshed_at": stored.refreshed_at,
            }
        )
    return rows


def cmd_status(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        rows = status_rows(storage)
    if args.json:
        print_json(rows)
        return 0
    print(
        format_table(
            [
                "survey",
                "status",
                "min_batch",
                "unit",
                "noise",
                "waiting",
                "in batches",
                "forwarded",
                "smallest",
                "discarded",
            ],
            [
                [
                    r["survey"],
                    r["status"],
                    r["min_batch"],
                    r["shuffle_unit"],
                    f"epsilon {r['noise']['epsilon']:g}" if r["noise"] else "-",
                    sum(r["waiting"].values()),
                    r["in_batches"],
                    f"{r['forwarded_reports']} in {r['forwarded_batches']}",
                    r["smallest_batch"] if r["smallest_batch"] is not None else "-",
                    r["discarded_reports"],
                ]
                for r in rows
            ],
        )
    )
    return 0


def cmd_forward(args: argparse.Namespace) -> int:
    from .forwarder import forward_once

    config = load_settings(args)
    with opened_storage(config) as storage:
        counts = forward_once(storage, config)
    print(", ".join(f"{name} {count}" for name, count in counts.items()))
    return 0 if counts["failed"] == 0 else EXIT_UNAVAILABLE


def cmd_settings(args: argparse.Namespace) -> int:
    from . import settings

    return kit.show_settings(args, settings.resolve)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Run and administer a Deniable relay (docs/relay.md).",
        epilog="exit status: 0 ok, 1 failure, 2 usage, 3 not found, 4 refused or "
        "conflict, 5 unavailable",
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="directory of the default database (overrides DENIABLE_RELAY_HOME)",
    )
    parser.add_argument(
        "--database",
        metavar="PATH_OR_URL",
        help="SQLite path or postgresql:// DSN (overrides DENIABLE_RELAY_DATABASE)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    def command(name: str, summary: str) -> Any:
        return commands.add_parser(name, help=summary, description=summary)

    command("init", "create or migrate the relay's database").set_defaults(func=cmd_init)
    sub = command("serve", "serve the relay (gunicorn + waitress; the forwarder runs inside)")
    add_serve_arguments(sub, port=8100, workers=1)
    sub.set_defaults(func=cmd_serve)
    sub = command(
        "add-survey", "relay a survey of an aggregator (its signed definition must name this relay)"
    )
    sub.add_argument("aggregator", metavar="AGGREGATOR_URL", help="the aggregator's base URL")
    sub.add_argument("survey", metavar="SURVEY_ID", help="id of the relayed survey")
    sub.add_argument(
        "--credential-file",
        required=True,
        metavar="FILE",
        help="file holding the relay credential the aggregator's operator issued "
        "('deniable-aggregator relay-credential'); '-' reads stdin",
    )
    sub.add_argument(
        "--aggregator-key",
        metavar="BASE64",
        help="the aggregator's Ed25519 signing key to pin (default: the one it "
        "serves now, printed for you to confirm)",
    )
    sub.set_defaults(func=cmd_add_survey)
    sub = command("set-credential", "replace the relay credential of surveys (units held stay)")
    sub.add_argument("surveys", nargs="+", metavar="SURVEY_ID")
    sub.add_argument(
        "--credential-file",
        required=True,
        metavar="FILE",
        help="file holding the new relay credential ('-' reads standard input)",
    )
    sub.set_defaults(func=cmd_set_credential)
    sub = command("remove-survey", "stop relaying a survey and delete what is held for it")
    sub.add_argument("survey", metavar="SURVEY_ID")
    sub.set_defaults(func=cmd_remove_survey)
    sub = command("status", "per survey: held, batches waiting, forwarded, smallest, discarded")
    add_json(sub, "the status")
    sub.set_defaults(func=cmd_status)
    command("forward", "one forwarder pass now: refresh, form and send due batches").set_defaults(
        func=cmd_forward
    )
    sub = command("settings", "every DENIABLE_RELAY_* setting: value in effect and its source")
    add_json(sub, "the settings")
    sub.add_argument("--verbose", "-v", action="store_true", help="add each setting's help text")
    sub.set_defaults(func=cmd_settings)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if importlib.util.find_spec("flask") is None:
        print(
            f"{PROG}: error: the relay needs the server extra: pip install 'deniable[server]'",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    try:
        with quiet_pipe():
            return args.func(args)
    except (CommandError, DeniableError) as error:
        print(f"{PROG}: error: {str(error).strip() or type(error).__name__}", file=sys.stderr)
        return exit_status(error)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - one line, never a traceback
        print(f"{PROG}: error: unexpected {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_FAILURE


__all__ = ["EXIT_NOT_FOUND", "EXIT_REFUSED", "main"]

if __name__ == "__main__":
    sys.exit(main())
