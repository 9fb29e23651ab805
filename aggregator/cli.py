"""``deniable-aggregator``: run, administer and demonstrate the aggregator.

Every command reads the same settings as the server (``DENIABLE_*`` environment
variables, see ``deniable-aggregator settings``); ``--data-dir``, ``--database``
and ``--signing-key`` (given before the command) override the three that say
where data lives.  Commands that change state call the aggregator's storage and
signing modules directly, on the same database the server uses; read-only
commands (``surveys``, ``results``, ``export``, ``token list``, ``key show``,
``settings``) never create a file.  ``demo`` talks to a server it starts over
real HTTP, like a fleet of respondents would.  Token commands live in
cli_tokens.py, key commands in cli_keys.py.

Failures print one line ``deniable-aggregator: error: ...`` on stderr and exit
with a documented status (:mod:`deniable.terminal`, docs/operations.md):
2 usage, 3 not found, 4 refused or conflict, 5 unavailable; output to a closed
pipe (``... | head``) ends quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from deniable.errors import DeniableError
from deniable.service.cli import add_serve_arguments
from deniable.survey import Survey

from . import cli_crosstab, cli_keys, cli_relay, cli_tokens, planning
from .cli_common import (
    PROG,
    Parser,
    add_beta,
    add_json,
    load_settings,
    opened_storage,
    port,
    positive,
    print_json,
    shown_database,
)
from .demo import (
    _interrupt,
    demo_survey,
    free_port,
    port_is_free,
    respondent_reports,
    simulate_answers,
    start_server,
    stop_server,
    submit_all,
    true_summary,
    verify_signature,
)
from .terminal import (
    EXIT_FAILURE,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CommandError,
    Progress,
    _fail,
    exit_status,
    format_table,
    quiet_pipe,
    results_table,
)

__all__ = ["build_parser", "main"]

DEMO_RESPONDENTS = 2000
DEMO_PORT = 8000
_shown_database = shown_database  # the name earlier versions exported

logger = logging.getLogger("deniable.aggregator")


# -- the server -----------------------------------------------------------------------------


def survey_results(
    config: Mapping[str, Any], survey_id: str, beta: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results document, survey definition), computed exactly as the API computes them.

    Builds a bare Flask app around the storage (no signing key: nothing is created).
    """
    from flask import Flask

    from .api.results import compute_results
    from .storage import EXTENSION

    with opened_storage(config) as storage:
        app = Flask("deniable.aggregator")
        app.config.update(config)
        app.extensions[EXTENSION] = storage
        with app.app_context():
            record = storage.get_survey(survey_id)
            return compute_results(record, beta), record.survey.to_dict()


def startup_line(config: Mapping[str, Any], bind: str, workers: int | str) -> str:
    """The one line ``serve`` logs: backend, database, key, bind address, workers."""
    from . import signing
    from .storage import is_postgres

    key = signing.load_key(config["SIGNING_KEY_PATH"])
    backend = "postgresql" if is_postgres(str(config["DATABASE"])) else "sqlite"
    return (
        f"{PROG}: serving backend={backend} database={shown_database(config)} "
        f"key={key.key_id} (sequence {len(key.chain)}, {config['SIGNING_KEY_PATH']}) "
        f"bind={bind} workers={workers}"
    )


def run_gunicorn(config: Mapping[str, Any], bind: str, workers: int, timeout: int = 60) -> None:
    """Serve ``create_app(config)``: gunicorn processes, waitress reading requests
    (:mod:`deniable.service.serving`)."""
    from deniable.service import metrics
    from deniable.service.serving import serve

    # Why: every worker writes its counts where any worker can sum them for a scrape.
    with metrics.multiprocess_directory(bool(config.get("METRICS")) and workers > 1):
        serve(
            config,
            bind,
            workers,
            timeout,
            factory=_worker_app,
            process_name=PROG,
            child_exit=metrics.child_exit,  # metrics: forget a dead worker's live values
        )


def _worker_app(config: Mapping[str, Any]) -> Any:
    """One serving process's app, its decryption processes started if a relay may call."""
    from . import create_app
    from .api.opening import warm_when_relayed

    app = create_app(config)
    warm_when_relayed(app)  # a relay's first large batch finds its processes up
    return app


# -- commands -----------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    """Create (or migrate) the database and create the signing key if there is none."""
    from . import signing

    config = load_settings(args)
    with opened_storage(config, migrated=False) as storage:
        version = storage.migrate()
    created = signing.create_key(config["SIGNING_KEY_PATH"])
    key = signing.load_key(config["SIGNING_KEY_PATH"])
    print(f"database {_shown_database(config)}: schema version {version}")
    print(
        f"signing key {config['SIGNING_KEY_PATH']}: {'created' if created else 'kept'}, "
        f"key id {key.key_id}"
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from . import signing

    config = load_settings(args)
    host, port = args.bind
    # Why: migrate and create the key once, here, rather than racing in every worker.
    with opened_storage(config, migrated=False) as storage:
        storage.migrate()
    signing.create_key(config["SIGNING_KEY_PATH"])
    workers = "1 (Flask development server)" if args.dev else args.workers
    print(startup_line(config, f"{host}:{port}", workers), file=sys.stderr, flush=True)
    if args.dev:
        from . import create_app

        print(f"development server on http://{host}:{port}/ (not for production)", file=sys.stderr)
        create_app(config).run(host=host, port=port, debug=False, use_reloader=False)
        return 0
    run_gunicorn(config, f"{host}:{port}", args.workers, args.timeout)
    return 0


def _read_definition(path: str) -> Survey:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text("utf-8")
    except OSError as error:
        raise _fail(f"cannot read {path}: {error.strerror}", EXIT_USAGE) from None
    except UnicodeDecodeError:
        raise _fail(f"{path} is not UTF-8 text", EXIT_USAGE) from None
    data: Any
    try:
        data = json.loads(text)
    except ValueError as error:
        raise _fail(f"{path} is not valid JSON: {error}", EXIT_USAGE) from None
    if isinstance(data, dict) and "definition" in data and "format" not in data:
        data = data["definition"]  # accept the API's request body shape too
    survey = Survey.from_dict(data)
    relay = getattr(survey, "relay", None)
    if relay is not None and relay.noise is not None:
        relay.noise.verify()  # the exact δ of the signed law, as the API checks it
    return survey


def cmd_create_survey(args: argparse.Namespace) -> int:
    survey = _read_definition(args.file)
    config = load_settings(args)
    with opened_storage(config) as storage:
        record = storage.create_survey(
            survey, results_public=not args.private, require_enrolment=args.require_enrolment
        )
    visibility = "public" if record.results_public else "private"
    enrolment = "; enrolment tokens required" if record.require_enrolment else ""
    print(
        f"created survey {record.id!r}: {len(survey.questions)} questions, "
        f"total epsilon {survey.total_epsilon:g}, {visibility} results{enrolment}"
    )
    from .public_url import respond_links  # flask: the server extra (see main)

    links = respond_links(record, config.get("PUBLIC_URL"))
    if links is not None:
        print(f"link for respondents: {links.respond}")
        print(f"embed snippet: {links.embed} (HTML to paste into another site)")
        if not links.absolute:
            print(
                "set DENIABLE_PUBLIC_URL to the address browsers reach this aggregator at "
                "(https://host[:port]) to print the full links"
            )
    return 0


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
        "closing, check with the relay's operator ('deniable-relay status') that nothing is "
        "waiting, or that what waits may be lost."
    )


def _confirmed(question: str) -> bool:
    """The operator's yes at a terminal (False when stdin is not one: nobody to ask)."""
    if not sys.stdin.isatty():
        return False
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def cmd_close_survey(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        warning = relay_warning(storage.get_survey(args.survey, count=False))
        if warning is not None:
            print(f"warning: {warning}", file=sys.stderr)
            if not args.yes and not _confirmed("Close it and discard what the relay holds?"):
                raise _fail(
                    f"survey {args.survey!r} is still open; to close it all the same, "
                    "confirm at a terminal or add --yes",
                    EXIT_REFUSED,
                )
        record = storage.close_survey(args.survey)
    print(f"survey {record.id!r} is closed ({record.n_reports:,} reports)")
    if warning is not None:
        print("the relay discards the answers it still holds for it")
    return 0


def survey_row(record: Any, statistics: dict[str, Any], base: str | None = None) -> dict[str, Any]:
    """One survey of ``surveys``: status, respondents, created, and where to answer it."""
    from .public_url import respond_links
    from .storage.records import respondents

    links = respond_links(record, base)
    questions = len(record.survey.questions)
    return {
        "id": record.id,
        "title": record.survey.title,
        "status": record.status,
        "respondents": respondents(statistics),
        "reports": record.n_reports or 0,
        "questions": questions,
        "results_public": record.results_public,
        "require_enrolment": record.require_enrolment,
        "created_at": record.created_at,
        "closed_at": record.closed_at,
        "respond_url": links.respond if links else None,
        "embed_url": links.embed if links else None,
    }


def cmd_surveys(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        rows = [
            survey_row(record, storage.fold(record.id), config.get("PUBLIC_URL"))
            for record in storage.list_surveys()
        ]
    if args.json:
        print_json(rows)
        return 0
    table = [
        [
            r["id"],
            r["status"],
            f"{r['respondents']:,}",
            f"{r['reports']:,}",
            "public" if r["results_public"] else "private",
            r["created_at"],
        ]
        for r in rows
    ]
    print(format_table(["id", "status", "respondents", "reports", "results", "created"], table))
    answerable = [r for r in rows if r["respond_url"]]
    if answerable:
        print("\nlink for respondents (open surveys):")
        print(format_table(["id", "link"], [[r["id"], r["respond_url"]] for r in answerable]))
        if not config.get("PUBLIC_URL"):
            print(
                "set DENIABLE_PUBLIC_URL to the address browsers reach this aggregator at "
                "to print the full links"
            )
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    config = load_settings(args)
    document, definition = survey_results(config, args.survey, args.beta)
    if args.json:
        print_json(document)
    else:
        print(results_table(document, {"definition": definition}))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with contextlib.ExitStack() as stack:
        storage = stack.enter_context(opened_storage(config))
        reports = storage.export_reports(args.survey)
        if args.output:
            try:
                # Why 0600 whatever the umask: raw reports are for operators only.
                descriptor = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.fchmod(descriptor, 0o600)
                out = stack.enter_context(os.fdopen(descriptor, "w", encoding="utf-8", newline=""))
            except OSError as error:
                raise _fail(f"cannot write {args.output}: {error.strerror}", EXIT_USAGE) from None
        else:
            out = sys.stdout
        count = write_export(reports, args.format, out)
    print(f"exported {count:,} reports of {args.survey!r}", file=sys.stderr)
    return 0


def write_export(reports: Iterator[Any], fmt: str, out: TextIO) -> int:
    """Stored reports as CSV (with a header) or JSON lines; returns how many."""
    count = 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["seq", "id", "question", "payload", "received_at", "submission"])
        for report in reports:
            writer.writerow(
                [
                    report.seq,
                    report.id,
                    report.question,
                    report.payload,
                    report.received_at,
                    report.submission,
                ]
            )
            count += 1
    else:
        for report in reports:
            out.write(json.dumps(report.to_dict(), separators=(",", ":")) + "\n")
            count += 1
    return count


def cmd_settings(args: argparse.Namespace) -> int:
    """Every setting's value in effect and where it came from (passwords masked)."""
    from . import settings
    from .cli_common import overrides, print_settings

    try:
        resolved = settings.resolve(overrides(args), config_source="command line")
    except settings.SettingsError as error:
        raise _fail(str(error), EXIT_USAGE) from None
    print_settings(resolved, as_json=args.json, verbose=args.verbose)
    return 0


# -- demo ---------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    import requests

    if args.dir:
        from deniable.service.datadir import private_directory

        directory = private_directory(args.dir)  # 0700, like every data directory
        created_directory = False
    else:
        directory = Path(tempfile.mkdtemp(prefix="deniable-demo-"))
        created_directory = True
    database = directory / "deniable.sqlite3"
    if database.exists():
        raise _fail(f"{database} already exists; the demo needs a fresh directory", 4)
    config = load_settings(
        argparse.Namespace(
            data_dir=str(directory),
            database=str(database),
            signing_key=str(directory / "signing_key.pem"),
        )
    )
    port = args.port
    if port is None:
        port = DEMO_PORT if port_is_free(DEMO_PORT) else free_port()
    elif port == 0:
        port = free_port()
    elif not port_is_free(port):
        raise _fail(f"port {port} on 127.0.0.1 is in use; pick another with --port", 4)

    from . import signing

    survey = demo_survey()
    with opened_storage(config, migrated=False) as storage:
        storage.migrate()
        storage.create_survey(survey, results_public=True)
        token = storage.create_operator_token("demo")
    signing.create_key(config["SIGNING_KEY_PATH"])
    print(f"demo data in {directory}", file=sys.stderr)

    server = start_server(config, port)
    base = f"http://127.0.0.1:{port}"
    try:
        session = requests.Session()
        document = session.get(f"{base}/api/v1/surveys/{survey.id}", timeout=10).json()
        key = session.get(f"{base}/api/v1/key", timeout=10).json()
        served = verify_signature(document, key)
        rng = np.random.default_rng(args.seed)
        answers = simulate_answers(served, args.respondents, rng)
        bodies = [respondent_reports(served, a) for a in answers]
        progress = Progress(len(bodies), f"submitting {args.respondents:,} respondents")
        received = submit_all(base, served.id, bodies, progress=progress)
        results = session.get(f"{base}/api/v1/surveys/{served.id}/results", timeout=30).json()
        truth = {q.id: true_summary(q, [a[q.id] for a in answers]) for q in served.questions}
        print(f"{received:,} reports from {args.respondents:,} simulated respondents\n")
        print(results_table(results, document, truth))
        if args.no_serve:
            # Only what stays true once the server is gone: where the data is, if kept.
            if not created_directory or args.keep:
                print(f"\ndemo data kept in {directory}")
                print(f"operator token for it: {token}")
                print(
                    f"serve it again: {PROG} --data-dir {directory} serve --bind 127.0.0.1:{port}"
                )
            sys.stdout.flush()
            return 0
        print(f"\ndashboard:      {base}/surveys/{served.id}")
        print(f"results (JSON): {base}/api/v1/surveys/{served.id}/results")
        print(f"operator token: {token}")
        sys.stdout.flush()
        print("serving; press Ctrl-C to stop", file=sys.stderr)
        # Why: `kill` (SIGTERM) must stop the server too, not orphan it.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            status = server.wait()
        except KeyboardInterrupt:
            print("\nstopping", file=sys.stderr)
            return 0
        raise _fail(f"the server stopped unexpectedly (status {status})")
    finally:
        stop_server(server)
        if created_directory and not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


# -- argument parsing -----------------------------------------------------------------------

EXIT_CODES = """exit status: 0 success; 1 unexpected failure; 2 usage (bad option, setting, database
URL or input file); 3 not found (survey, token, key, database); 4 refused or conflict;
5 unavailable (database unreachable, storage error, server extra not installed); 130
interrupted. Settings come from DENIABLE_* environment variables; see '%(prog)s settings'."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Run and administer the Deniable aggregator.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="directory of the default database and signing key (overrides "
        "DENIABLE_HOME; default: the platform user data directory)",
    )
    parser.add_argument(
        "--database",
        metavar="PATH_OR_URL",
        help="SQLite path, sqlite:///ABSOLUTE, sqlite:RELATIVE or postgresql:// "
        "DSN (overrides DENIABLE_DATABASE)",
    )
    parser.add_argument(
        "--signing-key",
        metavar="PATH",
        help="Ed25519 key file (overrides DENIABLE_SIGNING_KEY_PATH)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands.required = True

    def command(name: str, summary: str, description: str | None = None) -> Any:
        return commands.add_parser(name, help=summary, description=description or summary)

    sub = command(
        "init",
        "create or migrate the database and create the signing key",
        "Apply pending database migrations (creating the database if needed) and "
        "create the Ed25519 signing key if there is none. Safe to run again.",
    )
    sub.set_defaults(func=cmd_init)

    sub = command(
        "serve",
        "serve the API and dashboard (gunicorn)",
        "Migrate, create the key if missing, log one startup line (backend, "
        "database, key id, bind address, workers), then serve.",
    )
    add_serve_arguments(sub, port=8000, workers=2)
    sub.add_argument(
        "--dev",
        action="store_true",
        help="Flask's development server instead (one process; not for production)",
    )
    sub.set_defaults(func=cmd_serve)

    sub = command("create-survey", "create a survey from a definition file")
    sub.add_argument("file", help="survey definition JSON ('-' for stdin)")
    sub.add_argument(
        "--private", action="store_true", help="results need an operator token (default: public)"
    )
    sub.add_argument(
        "--require-enrolment",
        action="store_true",
        help="each submission needs a one-time token ('token issue')",
    )
    sub.set_defaults(func=cmd_create_survey)

    sub = command(
        "close-survey",
        "close a survey: no more reports",
        "Close a survey: it refuses reports from now on; results stay readable. A relayed "
        "survey's relay then discards the answers it still holds, so the command warns and "
        "asks first (or takes --yes).",
    )
    sub.add_argument("survey", metavar="ID", help="id of the survey to close")
    sub.add_argument(
        "--yes",
        action="store_true",
        help="a relayed survey: close without asking, although the relay then discards "
        "the answers it still holds (see docs/operations.md)",
    )
    sub.set_defaults(func=cmd_close_survey)

    sub = command("surveys", "list surveys: status, respondents, created")
    add_json(sub, "the surveys")
    sub.set_defaults(func=cmd_surveys)

    cli_tokens.register(commands, Parser)
    cli_keys.register(commands, Parser)
    cli_relay.register(commands, Parser)
    cli_crosstab.register(commands, Parser)

    sub = command("results", "a survey's estimates and intervals as a table")
    sub.add_argument("survey", metavar="ID", help="id of the survey")
    add_beta(sub)
    add_json(sub, "the API's results document")
    sub.set_defaults(func=cmd_results)

    planning.add_parser(commands)

    sub = command("export", "every raw report of a survey (CSV or JSON lines)")
    sub.add_argument("survey", metavar="ID", help="id of the survey")
    sub.add_argument(
        "--format",
        choices=("csv", "jsonl"),
        default="jsonl",
        help="csv (with a header) or jsonl, one report per line (default)",
    )
    sub.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    sub.set_defaults(func=cmd_export)

    sub = command("demo", "a throw-away aggregator with simulated respondents and the dashboard")
    sub.add_argument(
        "--respondents",
        type=positive,
        default=DEMO_RESPONDENTS,
        help=f"simulated respondents (default {DEMO_RESPONDENTS})",
    )
    sub.add_argument(
        "--port",
        type=port,
        default=None,
        help=f"port on 127.0.0.1 (default {DEMO_PORT}, or a free one; 0: any free)",
    )
    sub.add_argument(
        "--dir",
        metavar="DIR",
        help="directory for the demo database (default: a new temporary one)",
    )
    sub.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the simulated true answers (the noise is always CSPRNG)",
    )
    sub.add_argument(
        "--no-serve", action="store_true", help="stop the server after the results table and exit"
    )
    sub.add_argument("--keep", action="store_true", help="keep the temporary directory")
    sub.set_defaults(func=cmd_demo)

    sub = command(
        "settings",
        "every DENIABLE_* setting: value in effect and its source",
        "Every setting's value in effect (passwords masked) and where it came from: "
        "default, environment variable or command line.",
    )
    add_json(sub, "the settings")
    sub.add_argument("--verbose", "-v", action="store_true", help="add each setting's help text")
    sub.set_defaults(func=cmd_settings)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if importlib.util.find_spec("flask") is None:
        print(
            f"{PROG}: error: the aggregator needs the server extra: pip install 'deniable[server]'",
            file=sys.stderr,
        )
        return EXIT_UNAVAILABLE
    if args.func is not cmd_serve:
        # Why: the PostgreSQL pool logs every failed connection attempt, which Python prints
        # on stderr when logging is not configured; a failed command says so in one line.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        with quiet_pipe():
            return args.func(args)
    except (CommandError, DeniableError) as error:
        message = str(error).strip() or type(error).__name__
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return exit_status(error)
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # noqa: BLE001 - one line, never a traceback, for scripts
        print(f"{PROG}: error: unexpected {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
