"""Hypothesis against both command-line programs.

CLI (in-process ``main(argv)``): arbitrary argv for ``deniable-aggregator``
(every command but ``serve`` and ``demo``, which start servers; they have their own
tests) and ``deniable`` (its HTTP goes to an in-process aggregator or to a
closed loopback port, never elsewhere), with arbitrary definition, state and
stdin contents.  Checked: nothing but SystemExit escapes (no traceback); a
non-zero exit prints exactly one line on stderr, naming the program.

The settings and the survey bodies are tests/resilience/test_fuzz.py's (the HTTP fuzzing).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from requests.adapters import HTTPAdapter

from deniable.aggregator import cli as aggregator_cli
from deniable.aggregator import create_app
from deniable.aggregator.storage import EXTENSION as STORAGE_EXTENSION
from deniable.client import SurveyClient
from deniable.client import cli as client_cli
from deniable.survey import Survey

from .conftest import BASE, FlaskAdapter, demo_survey_dict, env_float
from .test_fuzz import FUZZ_SETTINGS, mostly, survey_bodies

CLI_EXAMPLES = int(env_float("DENIABLE_FUZZ_EXAMPLES", 1000)) // 2  # per program

# -- CLI strategies ----------------------------------------------------------------------

SAFE_TEXT = st.text(max_size=20).filter(lambda t: "/" not in t and not t.startswith("~"))
AGGREGATOR_WORDS = [
    "init",
    "create-survey",
    "close-survey",
    "token",
    "create",
    "list",
    "revoke",
    "issue",
    "results",
    "export",
    "settings",
    "--database",
    "--signing-key",
    "--private",
    "--label",
    "--beta",
    "--json",
    "--format",
    "--output",
    "-o",
    "--count",
    "--require-enrolment",
    "--help",
    "-h",
    "fuzz",
    "closable",
    "nope",
    "def.json",
    "garbage.json",
    "missing.json",
    "dir",
    "-",
    "--",
    "0",
    "1",
    "-1",
    "2",
    "0.05",
    "nan",
    "1e309",
    "99999999999999999999999",
    "csv",
    "jsonl",
    "out.txt",
    "other.sqlite3",
    "",
]
CLIENT_WORDS = [
    "answer",
    "flush",
    "budget",
    "simulate",
    BASE,
    "http://127.0.0.1:9",
    "https://",
    "http://",
    "ftp://x",
    "http://[::1",
    "http://127.0.0.1:99999",
    "http://a b",
    "not a url",
    "s1",
    "nope",
    "--state",
    "state.bin",
    "corrupt.bin",
    "dir",
    "--timeout",
    "--trusted-key",
    "--yes",
    "--max-question-epsilon",
    "--max-survey-epsilon",
    "--enrolment-token",
    "--respondents",
    "--distribution",
    "uniform",
    "skewed",
    "--seed",
    "--batch-reports",
    "--concurrency",
    "--quiet",
    "--help",
    "0",
    "1",
    "2",
    "-1",
    "nan",
    "inf",
    "1e-9",
    "AAAA",
    "",
]


AGGREGATOR_COMMANDS = [
    ["init"],
    ["create-survey"],
    ["create-survey", "def.json"],
    ["create-survey", "garbage.json"],
    ["create-survey", "-"],
    ["close-survey"],
    ["close-survey", "closable"],
    ["token", "create"],
    ["token", "list"],
    ["token", "revoke"],
    ["token", "issue"],
    ["token", "issue", "fuzz"],
    ["results"],
    ["results", "fuzz"],
    ["export"],
    ["export", "fuzz"],
    ["settings"],
    ["token"],
    [],
]
CLIENT_URLS = [
    BASE,
    BASE,
    "http://127.0.0.1:9",
    "http://[::1",
    "http://127.0.0.1:99999",
    "http://a b",
    "https://",
    "ftp://x",
    "not a url",
    "http://127.0.0.1:x",
]


def argv_strategy(
    words: list[str], commands: list[list[str]], options: list[str] = ()
) -> st.SearchStrategy[list[str]]:
    """Global ``options``, a command (mostly a real one), then words (mostly the program's)."""
    word = mostly(st.sampled_from(words), SAFE_TEXT, percent=80)
    prefix = st.lists(st.sampled_from(options), max_size=2) if options else st.just([])
    return st.tuples(prefix, st.sampled_from(commands), st.lists(word, max_size=6)).map(
        lambda parts: parts[0] + parts[1] + parts[2]
    )


def bounded(argv: list[str]) -> bool:
    """No server, no demo, no huge respondent counts: each case stays fast and local."""
    if {"serve", "demo"} & set(argv):
        return False
    for value in argv:
        try:
            number = int(value)
        except ValueError:
            continue
        if number > 50 and value not in ("99999999999999999999999",):
            return False
    return True


LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits at


def one_line(text: str, program: str, echoed: list[str] = ()) -> None:
    """``text`` is one line naming ``program``.  An argv value echoed verbatim may hold
    line breaks of its own (the user typed them): it counts as one character."""
    assert text.startswith(program) and text.endswith("\n"), repr(text)
    assert "Traceback" not in text, text
    flattened = text
    for value in sorted(echoed, key=len, reverse=True):
        if any(c in LINE_BREAKS for c in value):
            flattened = flattened.replace(value, "?")
    lines = flattened.splitlines()
    assert len(lines) == 1 and lines[0].strip() != program, repr(text)


@pytest.fixture
def cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with an initialised aggregator database and test files."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DENIABLE_DATABASE", str(tmp_path / "aggregator.sqlite3"))
    monkeypatch.setenv("DENIABLE_SIGNING_KEY_PATH", str(tmp_path / "key.pem"))
    monkeypatch.setenv("DENIABLE_STATE", str(tmp_path / "state.bin"))
    monkeypatch.setenv("DENIABLE_STATE_KEY", "A" * 43 + "=")
    monkeypatch.setenv("DENIABLE_POOL_TIMEOUT", "1")
    (tmp_path / "dir").mkdir()
    (tmp_path / "def.json").write_text(json.dumps(demo_survey_dict("from-file")))
    (tmp_path / "corrupt.bin").write_bytes(b"\x00garbage" * 10)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert aggregator_cli.main(["init"]) == 0
        assert aggregator_cli.main(["create-survey", "def.json"]) == 0
    return tmp_path


def run_cli(main, argv: list[str], stdin: str, **options: Any) -> tuple[int, str, str]:
    """``main(argv)`` in-process: (exit status, stdout, stderr); only SystemExit is caught."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv, **options)
            except SystemExit as exit_:
                status = exit_.code if isinstance(exit_.code, int) else 1
                if not isinstance(exit_.code, int | None):
                    err.write(f"{exit_.code}\n")
    finally:
        sys.stdin = old_stdin
    return int(status or 0), out.getvalue(), err.getvalue()


@given(
    argv=argv_strategy(
        AGGREGATOR_WORDS,
        AGGREGATOR_COMMANDS,
        ["--database", "other.sqlite3", "--signing-key", "dir"],
    ),
    definition=st.one_of(
        st.binary(max_size=200), survey_bodies().map(lambda v: json.dumps(v).encode())
    ),
    stdin=st.text(max_size=100),
)
@example(argv=["token", "revoke", "99999999999999999999999"], definition=b"", stdin="")
@settings(FUZZ_SETTINGS, max_examples=CLI_EXAMPLES)
def test_aggregator_cli_never_shows_a_traceback(cli_home, argv, definition, stdin):
    assume(bounded(argv))
    (cli_home / "garbage.json").write_bytes(definition)
    status, _, err = run_cli(aggregator_cli.main, argv, stdin)
    if status != 0:
        one_line(err, "deniable-aggregator", argv)


@pytest.fixture
def client_world(cli_home: Path, monkeypatch: pytest.MonkeyPatch) -> FlaskAdapter:
    """Route the CLI's HTTP: BASE to an in-process aggregator, 127.0.0.1 to the real
    network stack (a closed port), anything else to a ConnectionError (never the network)."""
    app = create_app(
        {
            "DATABASE": str(cli_home / "client-side.sqlite3"),
            "SIGNING_KEY_PATH": str(cli_home / "client-key.pem"),
        }
    )
    storage = app.extensions[STORAGE_EXTENSION]
    storage.create_survey(Survey.from_dict(demo_survey_dict("s1")), results_public=True)
    adapter = FlaskAdapter(app=app)
    real_send = HTTPAdapter.send

    def send(self, request, **kwargs):
        host = urlsplit(request.url).hostname
        if request.url.startswith(BASE):
            return adapter.send(request, **kwargs)
        if host == "127.0.0.1":
            return real_send(self, request, **kwargs)
        raise requests.ConnectionError(f"resilience tests: no network to {host!r}")

    monkeypatch.setattr(HTTPAdapter, "send", send)
    # Retries against the closed port would back off for seconds per case.
    monkeypatch.setitem(SurveyClient.__init__.__kwdefaults__, "sleep", lambda seconds: None)
    return adapter


ANSWER_LINES = st.lists(
    st.sampled_from(["y", "n", "1", "2", "3", "1,2", "0", "7.5", "-1", "nan", "", "yes"])
    | st.text(max_size=10),
    max_size=8,
)


@given(
    argv=st.sampled_from(CLIENT_URLS).flatmap(
        lambda url: argv_strategy(
            CLIENT_WORDS,
            [
                ["answer", url, "s1"],
                ["answer", url, "s1", "--yes"],
                ["answer", url],
                ["flush", url],
                ["budget"],
                ["simulate", url, "s1", "--respondents", "3"],
                ["simulate", url],
                [],
            ],
        )
    ),
    lines=ANSWER_LINES,
    state=st.one_of(st.none(), st.binary(max_size=100)),
)
@example(argv=["flush", "http://[::1"], lines=[], state=None)
@example(argv=["answer", "http://127.0.0.1:99999", "s1"], lines=[], state=None)
@settings(FUZZ_SETTINGS, max_examples=CLI_EXAMPLES)
def test_client_cli_never_shows_a_traceback(client_world, cli_home, argv, lines, state):
    assume(bounded(argv))
    if state is not None:
        (cli_home / "corrupt.bin").write_bytes(state)
    answers = iter(lines)

    def read(prompt: str) -> str:
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None

    status, out, err = run_cli(client_cli.main, argv, "", read=read)
    if status != 0:
        one_line(err, "deniable", argv)


def test_unreachable_postgresql_dsn_is_one_line(tmp_path):
    """A PostgreSQL DSN nobody listens on: one line on stderr, not the pool's retry log.

    A subprocess, because in-process pytest's log capture would swallow what the
    connection pool logs (the real program prints it through logging's last resort).
    """
    dsn = "postgresql://postgres@127.0.0.1:1/nothing"
    command = [sys.executable, "-m", "deniable.aggregator.cli", "--database", dsn, "token", "list"]
    environment = {**os.environ, "DENIABLE_POOL_TIMEOUT": "1"}
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=environment, cwd=tmp_path
    )
    assert result.returncode == 5  # unavailable
    one_line(result.stderr, "deniable-aggregator")
