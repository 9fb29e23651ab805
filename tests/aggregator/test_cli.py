"""deniable-aggregator: every command, its output, and one-line errors with the right status
(serve and demo, real processes: tests/aggregator/test_cli_demo.py)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from deniable.aggregator import cli
from deniable.aggregator.storage import open_storage
from deniable.aggregator.storage.base import migrations
from deniable.survey import Survey
from deniable.wire import Report

PROG = "deniable-aggregator"
DEMO = json.loads((Path(cli.__file__).with_name("demo_survey.json")).read_text("utf-8"))


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    return {"database": tmp_path / "db.sqlite3", "key": tmp_path / "key.pem", "dir": tmp_path}


def run(paths: dict[str, Path], *args: str) -> list[str]:
    return ["--database", str(paths["database"]), "--signing-key", str(paths["key"]), *args]


def call(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exit_:  # argparse usage errors
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


def single_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{PROG}") and "error:" in lines[0]
    return lines[0]


@pytest.fixture
def initialised(paths, capsys) -> dict[str, Path]:
    status, _, err = call(capsys, run(paths, "init"))
    assert status == 0, err
    return paths


@pytest.fixture
def with_survey(initialised, capsys) -> dict[str, Path]:
    definition = initialised["dir"] / "survey.json"
    definition.write_text(json.dumps(DEMO), "utf-8")
    status, _, err = call(capsys, run(initialised, "create-survey", str(definition)))
    assert status == 0, err
    return initialised


def add_reports(paths: dict[str, Path], count: int, seed: int = 3) -> list[Report]:
    """``count`` respondents' reports, stored directly (randomize_many for speed)."""
    survey = Survey.from_dict(DEMO)
    rng = np.random.default_rng(seed)
    reports = []
    for question in survey.questions:
        oracle = question.oracle
        if question.type == "numeric":
            values = rng.uniform(0, 20, count)
        elif question.type == "multiple_choice":
            values = (rng.random((count, len(question.options))) < 0.4).astype(np.int64)
        else:
            values = rng.integers(0, question.domain_size, count)
        payloads = oracle.encode_many(oracle.randomize_many(values, rng))
        reports += [Report(id=str(uuid.uuid4()), question=question.id, payload=p) for p in payloads]
    storage = open_storage({"DATABASE": str(paths["database"])})
    try:
        storage.add_reports(DEMO["id"], reports)
    finally:
        storage.close()
    return reports


# -- init ---------------------------------------------------------------------------


def test_init_migrates_and_creates_a_private_key_once(paths, capsys) -> None:
    status, out, _ = call(capsys, run(paths, "init"))
    assert status == 0
    assert f"schema version {len(migrations('sqlite'))}" in out and "created" in out
    assert paths["database"].exists()
    assert stat.S_IMODE(paths["key"].stat().st_mode) == 0o600
    key_before = paths["key"].read_bytes()
    status, out, _ = call(capsys, run(paths, "init"))
    assert status == 0 and "kept" in out
    assert paths["key"].read_bytes() == key_before


@pytest.mark.parametrize(
    "command",
    [
        ["create-survey", "x.json"],
        ["close-survey", "s"],
        ["token", "create"],
        ["results", "s"],
        ["export", "s"],
    ],
)
def test_commands_refuse_a_database_init_never_ran_on(paths, capsys, command) -> None:
    if command[0] == "create-survey":
        (paths["dir"] / "x.json").write_text(json.dumps(DEMO))
        command = ["create-survey", str(paths["dir"] / "x.json")]
    status, _, err = call(capsys, run(paths, *command))
    assert status == 3  # not found: there is no database yet
    assert "no database at" in single_error_line(err) and f"{PROG} init" in err
    assert not paths["database"].exists()  # and the command did not create one


# -- surveys ------------------------------------------------------------------------


def test_create_survey_stores_the_resolved_definition(with_survey, capsys) -> None:
    storage = open_storage({"DATABASE": str(with_survey["database"])})
    record = storage.get_survey(DEMO["id"])
    storage.close()
    assert record.results_public and record.is_open
    assert record.survey == Survey.from_dict(DEMO).upgraded()  # new surveys are stored as /2


def test_create_survey_private_and_from_stdin(initialised, capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({**DEMO, "id": "from-stdin"})))
    status, out, _ = call(capsys, run(initialised, "create-survey", "-", "--private"))
    assert status == 0 and "'from-stdin'" in out and "private results" in out
    storage = open_storage({"DATABASE": str(initialised["database"])})
    assert storage.get_survey("from-stdin").results_public is False
    storage.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{not json", "not valid JSON"),
        (json.dumps({**DEMO, "questions": []}), "survey.questions"),
        (json.dumps({**DEMO, "id": "Bad Id!"}), "survey.id"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_create_survey_bad_input_is_one_line_and_status_2(initialised, capsys, content, message):
    path = initialised["dir"] / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    status, out, err = call(capsys, run(initialised, "create-survey", str(path)))
    assert status == 2 and out == ""
    assert message in single_error_line(err)


def test_create_survey_twice_is_a_conflict(with_survey, capsys) -> None:
    definition = with_survey["dir"] / "survey.json"
    status, _, err = call(capsys, run(with_survey, "create-survey", str(definition)))
    assert status == 4 and "taken" in single_error_line(err)


def test_close_survey(with_survey, capsys) -> None:
    add_reports(with_survey, 10)
    status, out, _ = call(capsys, run(with_survey, "close-survey", DEMO["id"]))
    assert status == 0 and f"is closed ({10 * len(DEMO['questions'])} reports)" in out
    storage = open_storage({"DATABASE": str(with_survey["database"])})
    assert storage.get_survey(DEMO["id"]).status == "closed"
    storage.close()
    status, _, err = call(capsys, run(with_survey, "close-survey", "no-such-survey"))
    assert status == 3 and "no-such-survey" in single_error_line(err)


# -- tokens -------------------------------------------------------------------------


def test_token_create_prints_a_working_token_once(initialised, capsys) -> None:
    status, out, err = call(capsys, run(initialised, "token", "create", "--label", "ci"))
    token = out.strip()
    assert status == 0 and token.startswith("dnb_") and len(out.splitlines()) == 1
    assert "shown once" in err
    storage = open_storage({"DATABASE": str(initialised["database"])})
    assert storage.verify_operator_token(token)
    assert not storage.verify_operator_token(token + "x")
    storage.close()
    status, out, _ = call(capsys, run(initialised, "token", "list"))
    assert status == 0 and "ci" in out and token not in out
    status, out, _ = call(capsys, run(initialised, "token", "revoke", "1"))
    assert status == 0
    storage = open_storage({"DATABASE": str(initialised["database"])})
    assert not storage.verify_operator_token(token)
    storage.close()
    status, _, err = call(capsys, run(initialised, "token", "revoke", "1"))
    assert status == 3 and "no unrevoked operator token" in single_error_line(err)


# -- results and export ---------------------------------------------------------------


def test_results_table_and_json_match_the_estimator(with_survey, capsys) -> None:
    add_reports(with_survey, 400)
    status, out, _ = call(capsys, run(with_survey, "results", DEMO["id"], "--json"))
    assert status == 0
    document = json.loads(out)
    assert document["n_reports"] == 400 * len(DEMO["questions"]) and document["beta"] == 0.05
    commute = next(q for q in document["questions"] if q["question"] == "commute")
    assert (
        commute["n"] == 400
        and [c["label"] for c in commute["categories"]] == DEMO["questions"][1]["options"]
    )
    status, out, _ = call(capsys, run(with_survey, "results", DEMO["id"]))
    assert status == 0
    assert "How do you usually get to work?" in out
    family = commute["tightest"]
    upper = "upper" if family == "chebyshev" else f"{family}_upper"
    for category in commute["categories"]:
        row = next(line for line in out.splitlines() if line.strip().startswith(category["label"]))
        assert f"{100 * category['estimate']:.1f}%" in row
        assert f"{100 * category[upper]:.1f}%" in row
    overtime = next(q for q in document["questions"] if q["question"] == "overtime")
    assert f"{overtime['mean']:.4g}" in out
    assert "interval Bernstein" in out and "cover the respondents' own answers" in out
    assert out.count("worst-case half-widths: chebyshev ±") == len(DEMO["questions"])
    assert "chebyshev_exact ±" in out and "bernstein ±" in out and "(all at once ±" in out
    status, out, _ = call(capsys, run(with_survey, "results", DEMO["id"], "--beta", "0.2"))
    assert status == 0 and "intervals: 80%" in out


def test_results_say_in_words_when_there_are_too_few_respondents(with_survey, capsys) -> None:
    add_reports(with_survey, 3)
    status, out, _ = call(capsys, run(with_survey, "results", DEMO["id"]))
    assert status == 0
    assert out.count("WARNING: too few respondents") == len(DEMO["questions"])
    assert "needed for ±10 points" in out
    status, out, _ = call(capsys, run(with_survey, "results", DEMO["id"], "--json"))
    document = json.loads(out)
    assert all(q["uninformative"] for q in document["questions"])


def test_plan_prints_a_table_and_json(capsys) -> None:
    status, out, _ = call(
        capsys,
        ["plan", "--type", "multiple_choice", "--options", "16", "--epsilon", "1", "--n", "10000"],
    )
    assert status == 0
    assert "option_sampling *" in out and "bernstein" in out and "± simultaneous" in out
    status, out, _ = call(
        capsys, ["plan", "--options", "16", "--epsilon", "1", "--half-width", "0.05", "--json"]
    )
    assert status == 0
    document = json.loads(out)
    assert document["target_half_width"] == 0.05
    rows = {(r["mechanism"], r["family"]): r for r in document["rows"]}
    assert (
        rows[("grr", "bernstein")]["n_for_half_width"]
        < rows[("grr", "chebyshev")]["n_for_half_width"]
    )
    status, _, err = call(capsys, ["plan", "--epsilon", "1", "--n", "5"])
    assert status == 2 and "number of options" in single_error_line(err)


def test_results_of_unknown_survey_and_bad_beta(with_survey, capsys) -> None:
    status, _, err = call(capsys, run(with_survey, "results", "nope"))
    assert status == 3 and "nope" in single_error_line(err)
    status, _, err = call(capsys, run(with_survey, "results", DEMO["id"], "--beta", "1.5"))
    assert status == 2 and "--beta" in single_error_line(err)


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_writes_every_report_in_order(with_survey, capsys, fmt) -> None:
    reports = add_reports(with_survey, 25)
    output = with_survey["dir"] / f"out.{fmt}"
    status, out, err = call(
        capsys, run(with_survey, "export", DEMO["id"], "--format", fmt, "-o", str(output))
    )
    assert status == 0 and out == "" and f"exported {25 * len(DEMO['questions'])} reports" in err
    text = output.read_text("utf-8")
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
    else:
        rows = [json.loads(line) for line in text.splitlines()]
    assert [r["id"] for r in rows] == [r.id for r in reports]
    assert [r["payload"] for r in rows] == [r.payload for r in reports]
    assert [int(r["seq"]) for r in rows] == sorted(int(r["seq"]) for r in rows)
    assert set(rows[0]) == {"seq", "id", "question", "payload", "received_at", "submission"}


def test_export_to_stdout_and_errors(with_survey, capsys) -> None:
    add_reports(with_survey, 2)
    status, out, _ = call(capsys, run(with_survey, "export", DEMO["id"]))
    assert status == 0 and len(out.splitlines()) == 2 * len(DEMO["questions"])
    status, _, err = call(capsys, run(with_survey, "export", DEMO["id"], "--format", "xml"))
    assert status == 2 and "invalid choice" in single_error_line(err)
    status, _, err = call(capsys, run(with_survey, "export", "nope"))
    assert status == 3 and "nope" in single_error_line(err)
    missing = with_survey["dir"] / "no" / "such" / "dir.csv"
    status, _, err = call(capsys, run(with_survey, "export", DEMO["id"], "-o", str(missing)))
    assert status == 2 and "cannot write" in single_error_line(err)


# -- usage errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "required"),
        (["frobnicate"], "invalid choice"),
        (["serve", "--bind", "nonsense"], "HOST:PORT"),
        (["serve", "--workers", "0"], "positive integer"),
        (["demo", "--respondents", "-5"], "positive integer"),
        (["demo", "--port", "70000"], "port number"),
        (["token"], "required"),
    ],
)
def test_usage_errors_exit_2_with_one_line(capsys, argv, message) -> None:
    status, _, err = call(capsys, argv)
    assert status == 2
    assert message in single_error_line(err)


def test_console_script_is_installed() -> None:
    script = shutil.which(PROG, path=str(Path(sys.executable).parent))
    assert script, f"{PROG} is not on the venv's PATH"
    result = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for command in (
        "init",
        "serve",
        "create-survey",
        "close-survey",
        "token",
        "results",
        "export",
        "demo",
    ):
        assert command in result.stdout


def test_settings_lists_every_setting(capsys) -> None:
    status, out, _ = call(capsys, ["settings"])
    assert status == 0 and "DENIABLE_DATABASE" in out and "DENIABLE_MAX_BATCH" in out


def test_environment_settings_are_honoured(paths, capsys, monkeypatch) -> None:
    monkeypatch.setenv("DENIABLE_DATABASE", str(paths["database"]))
    monkeypatch.setenv("DENIABLE_SIGNING_KEY_PATH", str(paths["key"]))
    status, _, _ = call(capsys, ["init"])
    assert status == 0 and paths["database"].exists() and paths["key"].exists()
    monkeypatch.setenv("DENIABLE_MAX_BATCH", "zero")
    status, _, err = call(capsys, ["init"])
    assert status == 2 and "MAX_BATCH" in single_error_line(err)
    assert os.environ["DENIABLE_DATABASE"] == str(paths["database"])


@pytest.mark.postgres
def test_the_admin_commands_on_postgresql(postgres_database, tmp_path, capsys) -> None:
    paths = {"database": postgres_database, "key": tmp_path / "key.pem", "dir": tmp_path}
    status, out, _ = call(capsys, run(paths, "results", "x"))
    assert status == 3  # not initialised yet
    status, out, err = call(capsys, run(paths, "init"))
    assert status == 0 and "schema version" in out, err
    (tmp_path / "s.json").write_text(json.dumps(DEMO))
    assert call(capsys, run(paths, "create-survey", str(tmp_path / "s.json")))[0] == 0
    status, out, _ = call(capsys, run(paths, "token", "create"))
    assert status == 0 and out.startswith("dnb_")
    reports = add_reports(paths, 30)
    status, out, _ = call(capsys, run(paths, "results", DEMO["id"], "--json"))
    assert status == 0 and json.loads(out)["n_reports"] == 30 * len(DEMO["questions"])
    status, out, _ = call(capsys, run(paths, "export", DEMO["id"], "--format", "csv"))
    assert status == 0
    assert [row["id"] for row in csv.DictReader(io.StringIO(out))] == [r.id for r in reports]
    status, out, _ = call(capsys, run(paths, "close-survey", DEMO["id"]))
    assert status == 0 and f"closed ({30 * len(DEMO['questions'])} reports)" in out


def test_messages_never_show_a_database_password() -> None:
    shown = cli._shown_database({"DATABASE": "postgresql://app:s3cret@db.example:5432/deniable"})
    assert shown == "postgresql://app:***@db.example:5432/deniable"
    assert cli._shown_database({"DATABASE": "/var/lib/deniable.sqlite3"}).endswith(".sqlite3")


def test_database_and_export_files_are_0600_whatever_the_umask(tmp_path, capsys) -> None:
    """Hardening: the SQLite file, its WAL/SHM files and `export -o` output."""
    import stat

    paths = {
        "database": tmp_path / "db" / "deniable.sqlite3",
        "key": tmp_path / "key.pem",
        "dir": tmp_path,
    }
    previous = os.umask(0o002)
    try:
        status, _, err = call(capsys, run(paths, "init"))
        assert status == 0, err
        definition = tmp_path / "survey.json"
        definition.write_text(json.dumps(DEMO), "utf-8")
        assert call(capsys, run(paths, "create-survey", str(definition)))[0] == 0
        add_reports(paths, 3)
        output = tmp_path / "raw.csv"
        assert call(capsys, run(paths, "export", DEMO["id"], "-o", str(output)))[0] == 0
        storage = open_storage({"DATABASE": str(paths["database"])})
        try:
            with storage._transaction() as connection:  # an open WAL connection: -wal, -shm
                connection.execute("SELECT 1").fetchone()
                files = [
                    paths["database"],
                    output,
                    paths["key"],
                    *paths["database"].parent.glob("deniable.sqlite3-*"),
                ]
                modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
        finally:
            storage.close()
    finally:
        os.umask(previous)
    assert {"deniable.sqlite3-wal", "deniable.sqlite3-shm"} <= set(modes)
    assert set(modes.values()) == {0o600}, modes
