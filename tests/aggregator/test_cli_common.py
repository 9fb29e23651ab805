"""``deniable-aggregator`` as scripts see it: real subprocesses, exit statuses, no stray files.

Covers the data directory, database URL forms, read-only commands, ``surveys``,
``settings``, ``--json``, closed pipes, help texts, the serve startup line and a
base install without Flask.  Both backends where a database is involved.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deniable.aggregator.cli import build_parser

from .conftest import demo_survey_dict

PROG = [sys.executable, "-m", "deniable.aggregator.cli"]


def cli(
    *args: str, home: Path | None = None, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """The real command line in a subprocess (in ``cwd``: home's parent by default)."""
    environment = {**os.environ, **(env or {})}
    if home is not None:
        environment["DENIABLE_HOME"] = str(home)
    where = cwd or (home.parent if home is not None else None)
    return subprocess.run(
        [*PROG, *args], capture_output=True, text=True, timeout=60, env=environment, cwd=where
    )


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("deniable-aggregator: error: "), result.stderr
    return lines[0]


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


@pytest.mark.parametrize(
    "url", ["mysql://u@h/db", "sqlite://host/x.db", "http://example.org/x", "sqlite:"]
)
def test_unsupported_database_urls_exit_2_and_create_nothing(tmp_path, url):
    result = cli("--database", url, "init", home=tmp_path / "home")
    assert result.returncode == 2
    assert "DATABASE" in one_error_line(result)
    assert files_under(tmp_path) == []  # nothing: not in the data dir, not in the cwd


@pytest.mark.parametrize(
    "command",
    [
        ["surveys"],
        ["results", "x"],
        ["export", "x"],
        ["token", "list"],
        ["key", "show"],
        ["settings"],
    ],
)
def test_read_only_commands_never_create_a_database_or_key(tmp_path, command):
    absolute = tmp_path / "srv" / "x.db"
    result = cli("--database", f"sqlite:///{absolute}", *command, home=tmp_path / "home")
    if command == ["settings"]:
        assert result.returncode == 0 and f"{absolute}" in result.stdout
    else:
        assert result.returncode == 3
        assert "no database" in one_error_line(result) or "no signing key" in result.stderr
    assert files_under(tmp_path) == []


def test_init_and_serve_use_the_data_dir_and_sqlite_urls(tmp_path):
    home = tmp_path / "home"
    assert cli("init", home=home).returncode == 0
    # The write-lock file queues SQLite writers (aggregator/storage/sqlite_ids.py).
    assert files_under(home) == [
        "deniable.sqlite3",
        "deniable.sqlite3.write-lock",
        "signing_key.encryption.pem",
        "signing_key.pem",
    ]
    other = tmp_path / "other"
    result = cli("--data-dir", str(other), "init", home=home)
    assert result.returncode == 0 and (other / "deniable.sqlite3").exists()
    relative = cli("--database", "sqlite:rel/x.db", "init", home=home, cwd=tmp_path)
    assert relative.returncode == 0 and (tmp_path / "rel" / "x.db").exists()


def test_surveys_settings_and_results_speak_json(tmp_path, database):
    home = tmp_path / "home"
    env = {"DENIABLE_DATABASE": database}
    assert cli("init", home=home, env=env).returncode == 0
    definition = tmp_path / "survey.json"
    definition.write_text(json.dumps(demo_survey_dict("listed")))
    assert cli("create-survey", str(definition), home=home, env=env).returncode == 0
    assert cli("close-survey", "listed", home=home, env=env).returncode == 0
    surveys = cli("surveys", "--json", home=home, env=env)
    assert surveys.returncode == 0, surveys.stderr
    (row,) = json.loads(surveys.stdout)
    assert row["id"] == "listed" and row["status"] == "closed" and row["respondents"] == 0
    assert row["created_at"].endswith("Z")
    table = cli("surveys", home=home, env=env)
    assert "listed" in table.stdout and "respondents" in table.stdout
    results = cli("results", "listed", "--json", home=home, env=env)
    assert results.returncode == 0 and json.loads(results.stdout)["survey"] == "listed"
    assert cli("results", "nope", home=home, env=env).returncode == 3
    assert cli("create-survey", str(definition), home=home, env=env).returncode == 4  # taken


def test_settings_show_values_in_effect_and_their_source(tmp_path):
    result = cli(
        "--database",
        "postgresql://user:secret@db.example/x",
        "settings",
        "--json",
        home=tmp_path / "home",
        env={"DENIABLE_MAX_BATCH": "50"},
    )
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["MAX_BATCH"]["value"] == 50 and rows["MAX_BATCH"]["source"] == "DENIABLE_MAX_BATCH"
    assert rows["DATABASE"]["source"] == "command line"
    assert "secret" not in result.stdout and "user:***@db.example" in rows["DATABASE"]["value"]
    assert rows["HOME"]["value"] == str(tmp_path / "home")
    assert rows["MAX_BODY_BYTES"]["source"] == "default"
    bad = cli("settings", home=tmp_path, env={"DENIABLE_MAX_BATCH": "many"})
    assert bad.returncode == 2 and "MAX_BATCH" in one_error_line(bad)


def test_output_to_a_closed_pipe_ends_quietly(tmp_path):
    home = tmp_path / "home"
    assert cli("init", home=home).returncode == 0
    definition = tmp_path / "survey.json"
    definition.write_text(json.dumps(demo_survey_dict("piped")))
    assert cli("create-survey", str(definition), home=home).returncode == 0
    issued = cli("token", "issue", "piped", "--count", "1", home=home)
    assert issued.returncode == 4  # the survey does not require enrolment
    env = {**os.environ, "DENIABLE_HOME": str(home)}
    # `settings --verbose` prints far more than one pipe buffer read by `head -n 1`.
    pipeline = subprocess.run(
        f"{sys.executable} -m deniable.aggregator.cli settings --verbose | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert pipeline.returncode == 0 and pipeline.stdout.startswith("DENIABLE_HOME")
    assert pipeline.stderr == "", pipeline.stderr


def test_every_command_and_option_has_help():
    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        if not parser.description and path:
            missing.append(f"{path}: description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {choice.dest: choice.help for choice in action._choices_actions}
                for name, sub in action.choices.items():
                    if not helps.get(name):
                        missing.append(f"{path} {name}: help")
                    walk(sub, f"{path} {name}".strip())
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "")
    assert missing == []


def test_help_lists_the_exit_statuses():
    result = cli("--help")
    assert result.returncode == 0
    for phrase in ("2 usage", "3 not found", "4 refused", "5 unavailable"):
        assert phrase in " ".join(result.stdout.split())


def test_a_base_install_says_to_install_the_server_extra(tmp_path):
    # Flask missing, as in `pip install deniable` without [server].
    code = (
        "import sys; sys.modules['flask'] = None; "
        "from deniable.aggregator.cli import main; sys.exit(main(['surveys']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DENIABLE_HOME": str(tmp_path)},
    )
    assert result.returncode == 5
    assert "pip install 'deniable[server]'" in one_error_line(result)


def test_serve_logs_one_startup_line(tmp_path, database):
    from deniable.aggregator.demo import free_port, start_server, stop_server

    config: dict[str, Any] = {"DATABASE": database, "SIGNING_KEY_PATH": str(tmp_path / "k.pem")}
    server = start_server(config, free_port(), workers=1)  # returns once /health answers
    try:
        server.log.seek(0)  # type: ignore[attr-defined]
        log = server.log.read()  # type: ignore[attr-defined]
    finally:
        stop_server(server)
    (line,) = [line for line in log.splitlines() if "serving backend=" in line]
    backend = "postgresql" if database.startswith("postgresql") else "sqlite"
    assert f"backend={backend}" in line and "bind=127.0.0.1:" in line and "workers=1" in line
    assert "key=" in line and "password" not in line
