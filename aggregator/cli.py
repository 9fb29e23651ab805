"""``deniable-aggregator``: run, administer and demonstrate the aggregator.

Every command reads the same settings as the server (``DENIABLE_*`` environment
variables, see ``deniable-aggregator settings``); ``--database`` and
``--signing-key`` override the two that matter most.  Commands that change state
(``init``, ``create-survey``, ``close-survey``, ``token create``, ``token issue``) call the
aggregator's storage and signing modules directly, on the same database the
server uses; ``demo`` talks to a server it starts over real HTTP, like a fleet
of respondents would.

Bad input prints one line ``deniable-aggregator: error: ...`` on stderr and exits
with status 2 (usage) or 1 (the command failed).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import logging
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from deniable.errors import DeniableError
from deniable.survey import Survey

from . import planning
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
from .terminal import CommandError, Progress, _fail, format_table, results_table

PROG = "deniable-aggregator"
DEMO_RESPONDENTS = 2000
DEMO_PORT = 8000


# -- settings, storage and the server --------------------------------------------------


def load_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The server's settings (defaults < DENIABLE_* environment < command-line overrides)."""
    from flask import Flask

    from . import settings

    overrides = {}
    if getattr(args, "database", None):
        overrides["DATABASE"] = args.database
    if getattr(args, "signing_key", None):
        overrides["SIGNING_KEY_PATH"] = args.signing_key
    # Why: the same default instance folder as create_app, so both find one database.
    instance = Flask("deniable.aggregator", instance_relative_config=True).instance_path
    return settings.load(overrides, instance_path=instance)


@contextlib.contextmanager
def opened_storage(config: Mapping[str, Any], *, migrated: bool = True) -> Iterator[Any]:
    """The configured storage; with ``migrated``, refuse a database ``init`` never ran on."""
    from .storage import open_storage

    storage = open_storage(config)
    try:
        if migrated and storage.schema_version() == 0:
            raise _fail(
                f"database {_shown_database(config)} is not initialised; run '{PROG} init' first"
            )
        yield storage
    finally:
        storage.close()


def _shown_database(config: Mapping[str, Any]) -> str:
    """The database setting without a password, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    database = str(config["DATABASE"])
    parts = urlsplit(database)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return database


def survey_results(
    config: Mapping[str, Any], survey_id: str, beta: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(results document, survey definition), computed exactly as the API computes them."""
    from . import create_app
    from .api.results import compute_results
    from .storage import current_storage

    app = create_app({**config, "MIGRATE": False})
    with app.app_context():
        record = current_storage().get_survey(survey_id)
        return compute_results(record, beta), record.survey.to_dict()


def _bind(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"must be HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}") from None
    # Why the ceiling: ids are 64-bit in both databases (SQLite raised OverflowError past it).
    if not 1 <= number < 2**63:
        raise argparse.ArgumentTypeError(f"must be a positive integer below 2^63, got {value!r}")
    return number


def _port(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {value!r}")
    return number


def _beta(value: str) -> float:
    from deniable.estimation import check_beta

    try:
        return check_beta(float(value))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {value!r}") from None


def run_gunicorn(config: Mapping[str, Any], bind: str, workers: int, timeout: int = 60) -> None:
    """Serve ``create_app(config)``: gunicorn processes, waitress reading requests (serving.py)."""
    from .serving import serve

    serve(config, bind, workers, timeout)


# -- commands -----------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
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
        raise _fail(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise _fail(f"{path} is not UTF-8 text") from None
    data: Any
    try:
        data = json.loads(text)
    except ValueError as error:
        raise _fail(f"{path} is not valid JSON: {error}") from None
    if isinstance(data, dict) and "definition" in data and "format" not in data:
        data = data["definition"]  # accept the API's request body shape too
    return Survey.from_dict(data)


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
    return 0


def cmd_close_survey(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        record = storage.close_survey(args.survey)
    print(f"survey {record.id!r} is closed ({record.n_reports:,} reports)")
    return 0


def cmd_token_create(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        token = storage.create_operator_token(args.label)
    print(token)
    print("This operator token is shown once and stored only as a hash; keep it safe.",
          file=sys.stderr)  # fmt: skip
    return 0


def cmd_token_issue(args: argparse.Namespace) -> int:
    """One-time enrolment tokens for a survey: one per line, on stdout or in a new 0600 file."""
    import os

    config = load_settings(args)
    out = None
    if args.output:
        try:
            # Why O_EXCL: never overwrite (and so lose) tokens issued earlier.
            descriptor = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise _fail(f"{args.output} exists; refusing to overwrite it") from None
        except OSError as error:
            raise _fail(f"cannot create {args.output}: {error.strerror}") from None
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
    print(f"issued {len(tokens):,} enrolment tokens for survey {args.survey!r}{where}; each "
          "admits one submission; they are stored only as hashes", file=sys.stderr)  # fmt: skip
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        tokens = storage.list_operator_tokens()
    rows = [[t.id, t.label or "-", t.created_at, t.revoked_at or "-"] for t in tokens]
    print(format_table(["id", "label", "created", "revoked"], rows))
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config) as storage:
        if not storage.revoke_operator_token(args.id):
            raise _fail(f"no unrevoked operator token with id {args.id}")
    print(f"revoked operator token {args.id}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    config = load_settings(args)
    with opened_storage(config):
        pass  # Why: a clear message for a database that init never ran on.
    document, definition = survey_results(config, args.survey, args.beta)
    if args.json:
        print(json.dumps(document, indent=2))
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
                out = stack.enter_context(open(args.output, "w", encoding="utf-8", newline=""))
            except OSError as error:
                raise _fail(f"cannot write {args.output}: {error.strerror}") from None
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
        writer.writerow(["seq", "id", "question", "payload", "received_at"])
        for report in reports:
            writer.writerow([report.seq, report.id, report.question, report.payload,
                             report.received_at])  # fmt: skip
            count += 1
    else:
        for report in reports:
            out.write(json.dumps(report.to_dict(), separators=(",", ":")) + "\n")
            count += 1
    return count


def cmd_settings(args: argparse.Namespace) -> int:
    from . import settings

    print(settings.describe())
    return 0


# -- demo ---------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    import requests

    if args.dir:
        directory = Path(args.dir)
        directory.mkdir(parents=True, exist_ok=True)
        created_directory = False
    else:
        directory = Path(tempfile.mkdtemp(prefix="deniable-demo-"))
        created_directory = True
    database = directory / "deniable.sqlite3"
    if database.exists():
        raise _fail(f"{database} already exists; the demo needs a fresh directory")
    config = load_settings(
        argparse.Namespace(database=str(database), signing_key=str(directory / "signing_key.pem"))
    )
    port = args.port
    if port is None:
        port = DEMO_PORT if port_is_free(DEMO_PORT) else free_port()
    elif port == 0:
        port = free_port()
    elif not port_is_free(port):
        raise _fail(f"port {port} on 127.0.0.1 is in use; pick another with --port")

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
        print(f"\ndashboard:      {base}/surveys/{served.id}")
        print(f"results (JSON): {base}/api/v1/surveys/{served.id}/results")
        print(f"operator token: {token}")
        sys.stdout.flush()
        if args.no_serve:
            return 0
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


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit status 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Run and administer the Deniable aggregator.",
        epilog=f"Settings come from DENIABLE_* environment variables; see '{PROG} settings'.",
    )
    parser.add_argument(
        "--database",
        metavar="PATH_OR_DSN",
        help="SQLite file or postgresql:// DSN (overrides DENIABLE_DATABASE)",
    )
    parser.add_argument("--signing-key", metavar="PATH",
                        help="Ed25519 key file (overrides DENIABLE_SIGNING_KEY_PATH)")  # fmt: skip
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    sub = commands.add_parser("init", help="apply database migrations and create the signing key")
    sub.set_defaults(func=cmd_init)

    sub = commands.add_parser("serve", help="serve the API and dashboard (gunicorn)")
    sub.add_argument(
        "--bind",
        type=_bind,
        default=("127.0.0.1", 8000),
        metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:8000)",
    )
    sub.add_argument("--workers", type=_positive, default=2, help="gunicorn workers (default 2)")
    sub.add_argument("--timeout", type=_positive, default=60, help="worker timeout, seconds")
    sub.add_argument("--dev", action="store_true", help="Flask's development server instead")
    sub.set_defaults(func=cmd_serve)  # fmt: skip

    sub = commands.add_parser("create-survey", help="create a survey from a definition file")
    sub.add_argument("file", help="survey definition JSON ('-' for stdin)")
    sub.add_argument("--private", action="store_true",
                     help="results need an operator token (default: public)")  # fmt: skip
    sub.add_argument("--require-enrolment", action="store_true",
                     help="each submission needs a one-time token ('token issue')")  # fmt: skip
    sub.set_defaults(func=cmd_create_survey)

    sub = commands.add_parser("close-survey", help="close a survey: no more reports")
    sub.add_argument("survey", metavar="ID")
    sub.set_defaults(func=cmd_close_survey)

    token = commands.add_parser("token", help="operator tokens; enrolment tokens ('issue')")
    token_commands = token.add_subparsers(dest="token_command", metavar="ACTION",
                                          parser_class=_Parser)  # fmt: skip
    token_commands.required = True
    sub = token_commands.add_parser("create", help="create an operator token (printed once)")
    sub.add_argument("--label", default="", help="a note on who or what holds the token")
    sub.set_defaults(func=cmd_token_create)
    sub = token_commands.add_parser("list", help="list operator tokens (never their values)")
    sub.set_defaults(func=cmd_token_list)
    sub = token_commands.add_parser("revoke", help="revoke an operator token by id")
    sub.add_argument("id", type=_positive)
    sub.set_defaults(func=cmd_token_revoke)
    sub = token_commands.add_parser(
        "issue", help="issue one-time enrolment tokens for a survey (printed once)"
    )
    sub.add_argument("survey", metavar="SURVEY")
    sub.add_argument("--count", type=_positive, required=True, help="how many tokens")
    sub.add_argument("--output", "-o", metavar="FILE",
                     help="write them to this new file (mode 0600) instead of stdout")  # fmt: skip
    sub.set_defaults(func=cmd_token_issue)

    sub = commands.add_parser("results", help="a survey's estimates as a table")
    sub.add_argument("survey", metavar="ID")
    sub.add_argument(
        "--beta",
        type=_beta,
        default=0.05,
        help="allowed failure probability of each interval (default 0.05)",
    )
    sub.add_argument("--json", action="store_true", help="the API's JSON document instead")
    sub.set_defaults(func=cmd_results)  # fmt: skip

    planning.add_parser(commands)

    sub = commands.add_parser("export", help="every raw report of a survey")
    sub.add_argument("survey", metavar="ID")
    sub.add_argument("--format", choices=("csv", "jsonl"), default="jsonl")
    sub.add_argument("--output", "-o", metavar="FILE", help="write here instead of stdout")
    sub.set_defaults(func=cmd_export)

    sub = commands.add_parser(
        "demo", help="a throw-away aggregator with simulated respondents and the dashboard"
    )
    sub.add_argument(
        "--respondents",
        type=_positive,
        default=DEMO_RESPONDENTS,
        help=f"simulated respondents (default {DEMO_RESPONDENTS})",
    )
    sub.add_argument(
        "--port",
        type=_port,
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
    sub.add_argument("--no-serve", action="store_true", help="exit after submitting")
    sub.add_argument("--keep", action="store_true", help="keep the temporary directory")
    sub.set_defaults(func=cmd_demo)  # fmt: skip

    sub = commands.add_parser("settings", help="list every DENIABLE_* setting")
    sub.set_defaults(func=cmd_settings)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.func is not cmd_serve:
        # Why: the PostgreSQL pool logs every failed connection attempt, which Python prints
        # on stderr when logging is not configured; a failed command says so in one line.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    try:
        return args.func(args)
    except (CommandError, DeniableError) as error:
        message = str(error).strip() or type(error).__name__
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
