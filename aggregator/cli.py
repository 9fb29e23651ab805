"""``deniable-aggregator``: run, administer and demonstrate the aggregator.

Every command reads the same settings as the server (``DENIABLE_*`` environment
variables, see ``deniable-aggregator settings``); ``--data-dir``, ``--database``
and ``--signing-key`` (given before the command) override the three that say
where data lives.  Commands that change state call the aggregator's storage and
signing modules directly, on the same database the server uses; read-only
commands (``surveys``, ``results``, ``export``, ``token list``, ``key show``,
``settings``, ``create-survey --dry-run``) never create a file.  ``demo`` talks to
a server it starts over real HTTP, like a fleet of respondents would.  Token commands live in
cli_tokens.py, key commands in cli_keys.py, ``create-survey``, ``surveys`` and
``close-survey`` in cli_surveys.py.

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
from deniable.questionnaire import NOT_APPLICABLE
from deniable.service.cli import add_serve_arguments, show_settings

from . import cli_crosstab, cli_keys, cli_relay, cli_surveys, cli_tokens, planning
from .cli_common import (
    OVERRIDES,
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
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CommandError,
    Progress,
    _fail,
    exit_status,
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

    return show_settings(args, settings.resolve, OVERRIDES)


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
        truth = {
            q.id: true_summary(q, [a.get(q.id, NOT_APPLICABLE) for a in answers])
            for q in served.questions
        }
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
        print(f"link to answer: {base}/surveys/{served.id}/respond")
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
URL or input file); 3 not found (survey, token, key, database); 4 refused or conflict
(including an XLSForm with rows create-survey cannot import, one line each);
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

    cli_surveys.register(commands, command)
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
