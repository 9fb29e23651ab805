"""``create-survey``, ``surveys`` and ``close-survey``: a survey's life on the command line.

``create-survey FILE`` reads JSON, YAML (``.yaml``/``.yml``, ``yaml.safe_load``) or an
XLSForm workbook (``.xlsx``/``.xls``, read by pyxform) with :mod:`.importing`, the
defaults filled in; ``--dry-run`` prints what would be created and the planner's advice
per question (mechanism, respondents for ±5 and ±10 points; whom an optional or conditional
question is asked of, its condition and help) and creates nothing.  Once
created it prints the link for respondents, the embed snippet and, with ``--qr FILE``,
writes the link's QR code (SVG) for printed notices.

``close-survey ID`` on a relayed survey says how many answers the relay holds (its
signed-for snapshot, or that it did not answer), warns that the relay discards them and
asks first; ``--flush-relay`` first has the relay forward every group of at
least ``min_batch`` units (a request signed with the aggregator's signing key,
:mod:`deniable.relay_flush`), then closes, asking only if units below ``min_batch`` remain.
A flush the relay refuses (a survey may be flushed only ``DENIABLE_RELAY_FLUSH_LIMIT``
times, docs/relay.md) prints its reason on one line and exits 4 (refused); a relay that does
not answer exits 5 (unavailable); the survey stays open either way.

Exit statuses as for every command (cli.py); an XLSForm row that cannot be mapped is one
line each on stderr and the command exits 4 (refused), creating nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from deniable.survey import Survey

from .cli_common import PROG, add_json, load_settings, opened_storage, print_json, when
from .terminal import (
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    _fail,
    format_table,
)

__all__ = ["register", "relay_warning", "survey_row"]

PUBLIC_URL_HINT = (
    "set DENIABLE_PUBLIC_URL to the address browsers reach this aggregator at "
    "(https://host[:port]) to print the full links"
)


# -- create-survey ----------------------------------------------------------------------------


def read_survey(args: argparse.Namespace) -> tuple[Survey, tuple[str, ...]]:
    """The file's survey (checked) and the importer's notes; one line per refused row."""
    from deniable.errors import InvalidSurvey

    from .importing import ImportRefused, read_definition

    try:
        imported = read_definition(args.file, language=args.language, epsilon=args.epsilon)
    except ImportRefused as refused:
        for line in refused.lines:
            print(f"{PROG}: error: {args.file} {line}", file=sys.stderr)
        count = len(refused.lines)
        raise _fail(
            f"{args.file}: {count} item{'s' if count != 1 else ''} cannot be imported "
            "(above); nothing was created",
            EXIT_REFUSED,
        ) from None
    except ValueError as error:
        raise _fail(str(error), EXIT_USAGE) from None
    except ImportError as error:
        raise _fail(missing(error), EXIT_UNAVAILABLE) from None
    try:
        survey = Survey.from_dict(imported.definition)
        relay = getattr(survey, "relay", None)
        if relay is not None and relay.noise is not None:
            relay.noise.verify()  # the exact δ of the signed law, as the API checks it
    except InvalidSurvey as error:
        raise _fail(f"{args.file}: {error}", EXIT_USAGE) from None
    return survey, imported.notes


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def dry_run(survey: Survey, notes: tuple[str, ...], as_json: bool) -> int:
    from .advice import survey_advice

    advice = survey_advice(survey)
    if as_json:
        print_json({"definition": survey.to_dict(), "notes": list(notes), "advice": advice})
        return 0
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(
        f"would create survey {survey.id!r} ({survey.title}): "
        f"{_plural(len(survey.questions), 'question')}, total epsilon {survey.total_epsilon:g}"
    )

    def needed(value: int | None) -> str:
        return "-" if value is None else f"{value:,}"

    # Whom each question is asked of: a column only when some question is not for everyone.
    asked = {q.id: asked_of(q) for q in survey.questions}
    partial = any(words != "everyone" for words in asked.values())
    rows = [
        [
            a["question"],
            a["type"],
            *([asked[a["question"]]] if partial else []),
            f"{a['epsilon']:g}",
            a["mechanism"],
            needed(a["respondents"]["5"]),
            needed(a["respondents"]["10"]),
        ]
        for a in advice
    ]
    headers = ["question", "type", *(["asked"] if partial else []), "epsilon", "mechanism"]
    print(format_table([*headers, "n ±5", "n ±10"], rows))
    for line in question_notes(survey):
        print(line)
    print(
        "n ±5, n ±10: respondents needed for 95% intervals of ±5 and ±10 points (a number: "
        "percent of its range), at the planner's best interval; nothing was created"
    )
    if partial:
        print(
            "asked: an optional or conditional question's results are shares of the "
            "respondents it applies to who answer it, while n counts everyone: if a share s "
            "of respondents answers it, the same ± among them needs about n / s² respondents "
            "in all ('deniable-aggregator plan ... --applicable-share s')."
        )
    return 0


def asked_of(question: Any) -> str:
    """Whom a question is asked of, in a word: everyone, optional, conditional, or both."""
    kinds = [
        word
        for word, present in (
            ("optional", question.optional),
            ("conditional", question.show_if is not None),
        )
        if present
    ]
    return ", ".join(kinds) or "everyone"


def question_notes(survey: Survey) -> list[str]:
    """Per question, its skip condition and help, as the respondent meets them."""
    from .editor.drafts import condition_words  # the editor's words for a show_if

    titles = {q.id: q.text for q in survey.questions}
    lines = []
    for question in survey.questions:
        if question.show_if is not None:
            condition = condition_words(question.show_if.document, titles)
            lines.append(f"{question.id}: shown only when {condition}")
        if question.help:
            lines.append(f"{question.id}: help: {' '.join(question.help.split())}")
    return lines


def missing(error: ImportError) -> str:
    """One line for a module of the server extra that is not installed."""
    name = error.name or "a module"
    return (
        f"{name} is not installed; it comes with the server extra: pip install 'deniable[server]'"
    )


def write_qr(path: str, url: str) -> None:
    from .qr import qr_svg

    try:
        svg = qr_svg(url)
    except ImportError as error:
        raise _fail(missing(error), EXIT_UNAVAILABLE) from None
    try:
        Path(path).write_text(svg, encoding="utf-8")
    except OSError as error:
        raise _fail(f"cannot write {path}: {error.strerror}", EXIT_USAGE) from None


def print_links(record: Any, config: dict[str, Any], qr_path: str | None) -> None:
    """The link for respondents, the embed snippet and the QR code's file (or why not)."""
    from .public_url import respond_links

    links = respond_links(record, config.get("PUBLIC_URL"))
    if links is None:
        if qr_path:
            print("no QR code: browsers cannot answer this survey (closed, or format /1)")
        return
    print(f"link for respondents: {links.respond}")
    print(f"embed snippet: {links.embed} (HTML to paste into another site)")
    if not links.absolute:
        print(PUBLIC_URL_HINT)
        if qr_path:
            print("no QR code written: it needs the full link (DENIABLE_PUBLIC_URL)")
        return
    if qr_path:
        write_qr(qr_path, links.respond)
        print(f"QR code of the link: {qr_path} (SVG, for printed notices)")
    else:
        print(f"QR code of the link: {links.respond.removesuffix('/respond')}/qr.svg")


def cmd_create_survey(args: argparse.Namespace) -> int:
    survey, notes = read_survey(args)
    if args.dry_run:
        return dry_run(survey, notes, args.json)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    config = load_settings(args)
    with opened_storage(config) as storage:
        record = storage.create_survey(
            survey, results_public=not args.private, require_enrolment=args.require_enrolment
        )
    visibility = "public" if record.results_public else "private"
    enrolment = "; enrolment tokens required" if record.require_enrolment else ""
    print(
        f"created survey {record.id!r}: {_plural(len(survey.questions), 'question')}, "
        f"total epsilon {survey.total_epsilon:g}, {visibility} results{enrolment}"
    )
    print_links(record, config, args.qr)
    return 0


# -- surveys ------------------------------------------------------------------------------


def survey_row(
    record: Any,
    statistics: dict[str, Any],
    base: str | None = None,
    batches: dict[str, dict[str, int]] | None = None,
) -> dict[str, Any]:
    """One survey of ``surveys``: status, respondents, created, and where to answer it.

    Respondents and reports are the real ones, as the results publish them: the dummy
    reports a relay added (``batches``, its per unit batch summary) taken out."""
    from .public_url import respond_links
    from .relay_noise import real_counts, real_reports

    links = respond_links(record, base)
    return {
        "id": record.id,
        "title": record.survey.title,
        "status": record.status,
        "respondents": max(real_counts(record, statistics, batches).values(), default=0),
        "reports": real_reports(record, batches) or 0,
        "questions": len(record.survey.questions),
        "results_public": record.results_public,
        "require_enrolment": record.require_enrolment,
        "created_at": record.created_at,
        "closed_at": record.closed_at,
        "respond_url": links.respond if links else None,
        "embed_url": links.embed if links else None,
        # where the dashboard serves the link's QR code, under the public URL as the link is
        "qr_url": links.respond.removesuffix("/respond") + "/qr.svg" if links else None,
    }


def cmd_surveys(args: argparse.Namespace) -> int:
    from .api.relayed import relay_terms

    config = load_settings(args)
    with opened_storage(config) as storage:
        rows = [
            survey_row(
                record,
                storage.fold(record.id),
                config.get("PUBLIC_URL"),
                storage.relay.batch_summary(record.id) if relay_terms(record) else None,
            )
            for record in storage.list_surveys()
        ]
    if args.json:
        print_json(rows)  # exact times (ISO 8601 UTC) for scripts
        return 0
    table = [
        [
            r["id"],
            r["status"],
            f"{r['respondents']:,}",
            f"{r['reports']:,}",
            "public" if r["results_public"] else "private",
            when(r["created_at"]),
        ]
        for r in rows
    ]
    print(format_table(["id", "status", "respondents", "reports", "results", "created"], table))
    answerable = [r for r in rows if r["respond_url"]]
    if answerable:
        print("\nlink for respondents, embed snippet and QR code (open surveys):")
        for r in answerable:
            print(f"{r['id']}:\n  link:  {r['respond_url']}\n  embed: {r['embed_url']}")
            if r["qr_url"]:
                print(f"  QR:    {r['qr_url']}")
        if not config.get("PUBLIC_URL"):
            print(PUBLIC_URL_HINT)
    return 0


# -- close-survey ----------------------------------------------------------------------------


# Longest close-survey waits for the relay's held count before saying it is not known.
HELD_TIMEOUT_SECONDS = 10.0


def held_sentence(config: dict[str, Any], record: Any, timeout: float) -> str:
    """How many answers the relay holds for the survey, in a sentence (its snapshot, with
    the time it was counted), or that the relay did not say."""
    from deniable.service.settings import SettingsError

    from . import signing
    from .cli_relay import held_count
    from .dashboard.times import exact

    url = record.survey.relay.url
    try:
        key = signing.load_key(config["SIGNING_KEY_PATH"])
    except SettingsError as error:  # the relay answers only the aggregator's signed request
        return f"How many answers the relay at {url} holds is not known: {error}."
    count = held_count(key, record, min(timeout, HELD_TIMEOUT_SECONDS))
    if count is None:
        return f"The relay at {url} did not answer, so how many answers it holds is not known."
    answers = "answer" if count.waiting == 1 else "answers"
    return (
        f"The relay holds {count.waiting:,} {answers} waiting for a full batch "
        f"(as of {exact(count.as_of)})."
    )


def relay_warning(record: Any) -> str | None:
    """What closing a relayed survey does to the answers its relay holds (None: no relay)."""
    relay = record.survey.relay
    if relay is None:
        return None
    return (
        f"survey {record.id!r} is relayed through {relay.url}. The relay holds respondents' "
        f"answers until it has a batch of at least {relay.min_batch:,}; once the survey is "
        "closed, this aggregator refuses its batches and the relay discards every answer it "
        "still holds, although those respondents were told their answers were sent. Before "
        "closing, check on the survey's page (results public) or with the relay's operator "
        "('deniable-relay status') that nothing is waiting, or add --flush-relay to have the "
        "relay forward every batch it can first."
    )


def confirmed(question: str) -> bool:
    """The operator's yes at a terminal (False when stdin is not one: nobody to ask)."""
    if not sys.stdin.isatty():
        return False
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def flush_relay(config: dict[str, Any], record: Any, timeout: float) -> dict[str, Any]:
    """Ask the survey's relay to forward every batch ``min_batch`` allows (signed request)."""
    from . import signing
    from .cli_relay import ask_relay

    relay = record.survey.relay
    answer = ask_relay(signing.load_key(config["SIGNING_KEY_PATH"]), record, "flush", timeout)
    if answer.status is None:
        raise _fail(
            f"the relay at {relay.url} did not answer ({answer.error}); the survey is still open",
            EXIT_UNAVAILABLE,
        )
    if not answer.ok:
        detail = answer.detail
        raise _fail(
            f"the relay refused to forward (HTTP {answer.status}"
            f"{': ' + detail if detail else ''}); the survey is still open",
            EXIT_UNAVAILABLE if answer.status >= 500 else EXIT_REFUSED,
        )
    return answer.document


def cmd_close_survey(args: argparse.Namespace) -> int:
    from .api.relayed import relay_terms
    from .relay_noise import real_reports

    config = load_settings(args)
    with opened_storage(config) as storage:
        record = storage.get_survey(args.survey, count=False)
        warning = relay_warning(record)
        if args.flush_relay and warning is None:
            raise _fail(f"survey {args.survey!r} is not relayed: nothing to flush", EXIT_USAGE)
        if warning is not None and not args.flush_relay:
            print(held_sentence(config, record, args.timeout), file=sys.stderr)
        if args.flush_relay:
            counts = flush_relay(config, record, args.timeout)
            waiting = sum(int(n) for n in counts.get("waiting", {}).values())
            print(
                f"the relay forwarded {int(counts.get('forwarded_reports', 0)):,} reports in "
                f"{int(counts.get('batches_formed', 0)):,} batches; {waiting:,} units wait, "
                f"in groups below min_batch {record.survey.relay.min_batch:,}"
            )
            sending = int(counts.get("in_batches", 0)) + int(counts.get("failed_batches", 0))
            if sending:
                raise _fail(
                    f"the relay has not delivered {sending:,} units in batches yet; the survey "
                    "is still open: run the command again in a minute",
                    EXIT_UNAVAILABLE,
                )
            warning = None
            if waiting:
                warning = (
                    f"closing discards the {waiting:,} units the relay still holds (too few "
                    f"for a batch of {record.survey.relay.min_batch:,})"
                )
        if warning is not None:
            print(f"warning: {warning}", file=sys.stderr)
            if not args.yes and not confirmed("Close it and discard what the relay holds?"):
                raise _fail(
                    f"survey {args.survey!r} is still open; to close it all the same, "
                    "confirm at a terminal or add --yes",
                    EXIT_REFUSED,
                )
        record = storage.close_survey(args.survey)
        batches = storage.relay.batch_summary(record.id) if relay_terms(record) else None
    # the real reports, as the results publish them (a relay's dummies taken out)
    print(f"survey {record.id!r} is closed ({real_reports(record, batches) or 0:,} reports)")
    if warning is not None:
        print("the relay discards the answers it still holds for it")
    return 0


# -- argument parsing -----------------------------------------------------------------------


def register(commands: Any, command: Any) -> None:
    """Add ``create-survey``, ``close-survey`` and ``surveys`` (``command(name, summary,
    description)`` makes a subcommand parser)."""
    del commands
    sub = command(
        "create-survey",
        "create a survey from a definition file (JSON, YAML or XLSForm)",
        "Create a survey from FILE: JSON, YAML (.yaml, .yml) or an XLSForm workbook "
        "(.xlsx, .xls). Left out of a JSON or YAML file: format (the current one), id "
        "(from the title), a question's id (q1, q2, ...) and epsilon (the file's top-level "
        "epsilon, else --epsilon, else 1). See docs/operations.md, 'Definition files'.",
    )
    sub.add_argument("file", help="definition file ('-': JSON on stdin)")
    sub.add_argument(
        "--private", action="store_true", help="results need an operator token (default: public)"
    )
    sub.add_argument(
        "--require-enrolment",
        action="store_true",
        help="each submission needs a one-time token ('token issue')",
    )
    sub.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be created and the planner's advice; create nothing",
    )
    sub.add_argument(
        "--language",
        metavar="NAME",
        help="an XLSForm's language for the survey's own text, as in its columns (e.g. "
        "'French (fr)'; default: the form's default_language, else its first); the form's "
        "other languages with a code become translations",
    )
    sub.add_argument(
        "--epsilon",
        type=_epsilon,
        default=None,
        help="every question's epsilon where the file gives none (default 1)",
    )
    sub.add_argument("--qr", metavar="FILE", help="write the link's QR code here (SVG)")
    add_json(sub, "the dry run's definition and advice")
    sub.set_defaults(func=cmd_create_survey)

    sub = command(
        "close-survey",
        "close a survey: no more reports",
        "Close a survey: it refuses reports from now on; results stay readable. A relayed "
        "survey's relay then discards the answers it still holds, so the command warns and "
        "asks first (or takes --yes); --flush-relay has the relay forward what it can first.",
    )
    sub.add_argument("survey", metavar="ID", help="id of the survey to close")
    sub.add_argument(
        "--yes",
        action="store_true",
        help="a relayed survey: close without asking, although the relay then discards "
        "the answers it still holds (see docs/operations.md)",
    )
    sub.add_argument(
        "--flush-relay",
        action="store_true",
        help="first ask the relay to forward every group of at least min_batch units, "
        "then close (asking only if units below min_batch remain)",
    )
    sub.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the relay's answer (default 120)",
    )
    sub.set_defaults(func=cmd_close_survey)

    sub = command("surveys", "list surveys: status, respondents, created, links")
    add_json(sub, "the surveys")
    sub.set_defaults(func=cmd_surveys)


def _epsilon(value: str) -> float:
    from deniable.errors import InvalidParameter
    from deniable.parameters import check_epsilon

    try:
        return check_epsilon(float(value))
    except (ValueError, InvalidParameter):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {value!r}") from None
