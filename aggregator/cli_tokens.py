"""``deniable-aggregator token ...``: operator tokens and one-time enrolment tokens.

Operator tokens (bearer tokens for the operator API): ``create`` (optionally
limited to some surveys with ``--survey``), ``list``, ``revoke ID``.  Enrolment
tokens (one admitted submission each, for surveys created with
``--require-enrolment``): ``issue SURVEY``, ``list --survey SURVEY``,
``revoke --survey SURVEY (ID... | --tokens-file FILE | --unspent)``.  Plaintexts
are printed once and stored only as SHA-256 hashes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .cli_common import add_json, load_settings, opened_storage, positive, print_json, when
from .terminal import EXIT_NOT_FOUND, EXIT_USAGE, _fail, format_table

__all__ = ["register"]


def cmd_token_create(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        if args.survey:
            for survey_id in args.survey:
                storage.get_survey(survey_id, count=False)  # NotFound (exit 3) for a typo
        token = storage.create_operator_token(args.label, surveys=args.survey or None)
    print(token)
    scope = f" limited to surveys {', '.join(args.survey)}" if args.survey else ""
    print(
        f"This operator token{scope} is shown once and stored only as a hash; keep it safe.",
        file=sys.stderr,
    )
    return 0


def cmd_token_issue(args: argparse.Namespace) -> int:
    """One-time enrolment tokens for a survey: one per line, on stdout or in a new 0600 file."""
    config = load_settings(args)
    out = None
    if args.output:
        try:
            # Why O_EXCL: never overwrite (and so lose) tokens issued earlier.
            descriptor = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise _fail(f"{args.output} exists; refusing to overwrite it", EXIT_USAGE) from None
        except OSError as error:
            raise _fail(f"cannot create {args.output}: {error.strerror}", EXIT_USAGE) from None
        out = os.fdopen(descriptor, "w", encoding="ascii")
    try:
        with opened_storage(config) as storage:
            tokens = storage.issue_enrolment_tokens(args.survey, args.count)
        text = "".join(token + "\n" for token in tokens)
        if out is None:
            sys.stdout.write(text)
        else:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        if out is not None:
            out.close()
            Path(args.output).unlink(missing_ok=True)
        raise
    if out is not None:
        out.close()
    where = f" to {args.output} (mode 0600)" if out is not None else ""
    print(
        f"issued {len(tokens):,} enrolment tokens for survey {args.survey!r}{where}; each "
        "admits one submission; they are stored only as hashes",
        file=sys.stderr,
    )
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        if args.survey:
            return _list_enrolment(storage, args)
        tokens = storage.list_operator_tokens()
    if args.json:
        print_json(
            [
                {
                    "id": t.id,
                    "label": t.label,
                    "surveys": t.surveys,
                    "created_at": t.created_at,
                    "revoked_at": t.revoked_at,
                }
                for t in tokens
            ]
        )
        return 0
    rows = [
        [
            t.id,
            t.label or "-",
            ",".join(t.surveys) if t.surveys else "(all)",
            when(t.created_at),
            when(t.revoked_at),
        ]
        for t in tokens
    ]
    print(format_table(["id", "label", "surveys", "created", "revoked"], rows))
    return 0


def _list_enrolment(storage: Any, args: argparse.Namespace) -> int:
    tokens = storage.list_enrolment_tokens(args.survey)
    if args.json:
        print_json(
            [
                {
                    "id": t.id,
                    "status": t.status,
                    "created_at": t.created_at,
                    "spent_at": t.spent_at,
                    "revoked_at": t.revoked_at,
                }
                for t in tokens
            ]
        )
        return 0
    counts = {
        status: sum(t.status == status for t in tokens)
        for status in ("unspent", "spent", "revoked")
    }
    rows = [[t.id, t.status, when(t.created_at), when(t.spent_at or t.revoked_at)] for t in tokens]
    print(format_table(["id", "status", "created", "spent/revoked"], rows))
    print(
        f"{len(tokens):,} enrolment tokens for {args.survey!r}: "
        + ", ".join(f"{n:,} {status}" for status, n in counts.items()),
        file=sys.stderr,
    )
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    config = load_settings(args)
    if not args.survey:
        if args.tokens_file or args.unspent or len(args.ids) != 1:
            raise _fail(
                "give one operator token id, or --survey SURVEY for enrolment tokens", EXIT_USAGE
            )
        try:
            token_id = positive(args.ids[0])
        except argparse.ArgumentTypeError as error:
            raise _fail(f"operator token id {error}", EXIT_USAGE) from None
        with opened_storage(config) as storage:
            if not storage.revoke_operator_token(token_id):
                raise _fail(f"no unrevoked operator token with id {token_id}", EXIT_NOT_FOUND)
        print(f"revoked operator token {token_id}")
        return 0
    tokens: list[str] = []
    if args.tokens_file:
        try:
            tokens = Path(args.tokens_file).read_text("ascii").split()
        except (OSError, UnicodeDecodeError) as error:
            raise _fail(f"cannot read {args.tokens_file}: {error}", EXIT_USAGE) from None
    if not (args.ids or tokens or args.unspent):
        raise _fail(
            "name enrolment tokens to revoke: IDs, --tokens-file FILE or --unspent", EXIT_USAGE
        )
    with opened_storage(config) as storage:
        count = storage.revoke_enrolment_tokens(
            args.survey, ids=args.ids, tokens=tokens, unspent=args.unspent
        )
    print(f"revoked {count:,} unspent enrolment tokens of survey {args.survey!r}")
    return 0


def register(commands: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``token`` and its actions to the command line."""
    token = commands.add_parser(
        "token",
        help="operator tokens and one-time enrolment tokens",
        description="Operator tokens (bearer tokens for the operator API) and one-time "
        "enrolment tokens (one submission each). Plaintexts are printed once and stored only "
        "as hashes.",
    )
    actions = token.add_subparsers(
        dest="token_command", metavar="ACTION", parser_class=parser_class
    )
    actions.required = True

    sub = actions.add_parser(
        "create",
        help="create an operator token (printed once)",
        description="Create an operator token; print it once.",
    )
    sub.add_argument("--label", default="", help="a note on who or what holds the token")
    sub.add_argument(
        "--survey",
        action="append",
        metavar="SURVEY",
        help="limit the token to this survey (repeat for several); a limited "
        "token cannot act on other surveys, create surveys or read metrics",
    )
    sub.set_defaults(func=cmd_token_create)

    sub = actions.add_parser(
        "list",
        help="list operator tokens, or a survey's enrolment tokens (never values)",
        description="List operator tokens; with --survey, that survey's enrolment tokens "
        "(id = first 16 hex digits of the token's hash).",
    )
    sub.add_argument("--survey", metavar="SURVEY", help="list this survey's enrolment tokens")
    add_json(sub, "the tokens")
    sub.set_defaults(func=cmd_token_list)

    sub = actions.add_parser(
        "revoke",
        help="revoke an operator token, or a survey's unspent enrolment tokens",
        description="Revoke an operator token by id; with --survey, revoke unspent enrolment "
        "tokens of that survey (by listed id, by plaintext in a file, or all unspent ones). "
        "A spent token stays spent: its submission is kept.",
    )
    sub.add_argument(
        "ids",
        nargs="*",
        metavar="ID",
        help="operator token id; with --survey, enrolment token ids as listed",
    )
    sub.add_argument("--survey", metavar="SURVEY", help="revoke enrolment tokens of this survey")
    sub.add_argument(
        "--tokens-file",
        metavar="FILE",
        help="with --survey: revoke the enrolment tokens in this file (one a line)",
    )
    sub.add_argument(
        "--unspent",
        action="store_true",
        help="with --survey: revoke every unspent enrolment token of the survey",
    )
    sub.set_defaults(func=cmd_token_revoke)

    sub = actions.add_parser(
        "issue",
        help="issue one-time enrolment tokens for a survey (printed once)",
        description="Issue one-time enrolment tokens for a survey created with "
        "--require-enrolment: one per line, on stdout or in a new file (mode 0600).",
    )
    sub.add_argument("survey", metavar="SURVEY", help="id of the survey")
    sub.add_argument("--count", type=positive, required=True, help="how many tokens")
    sub.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="write them to this new file (mode 0600) instead of stdout",
    )
    sub.set_defaults(func=cmd_token_issue)
