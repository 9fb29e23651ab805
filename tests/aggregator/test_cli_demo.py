"""deniable-aggregator serve and demo: real processes on loopback, real HTTP; the demo survey
and its simulated respondents.  The other commands: tests/aggregator/test_cli.py.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import requests

from deniable.aggregator import demo
from deniable.aggregator.storage import open_storage
from deniable.survey import Survey

from .test_cli import DEMO, call, run, single_error_line
from .test_cli import initialised as initialised  # noqa: F401 - a fixture
from .test_cli import paths as paths  # noqa: F401 - a fixture
from .test_cli import with_survey as with_survey  # noqa: F401 - a fixture


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 60) -> requests.Response:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        try:
            return requests.get(url, timeout=2)
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer")


@pytest.mark.slow
@pytest.mark.parametrize("mode", [["--workers", "2"], ["--dev"]])
def test_serve_answers_api_and_dashboard_then_stops_on_sigterm(with_survey, mode) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            *run(with_survey, "serve", "--bind", f"127.0.0.1:{port}", *mode),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        health = _wait_for(f"http://127.0.0.1:{port}/api/v1/health", process)
        assert health.json()["status"] == "ok" and health.json()["storage"] == "sqlite"
        page = requests.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 200 and DEMO["title"] in page.text
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    output = process.stdout.read()
    assert process.returncode in (0, -signal.SIGTERM), output
    if "--dev" not in mode:
        assert "Booting worker" in output


@pytest.mark.slow
def test_demo_no_serve_submits_over_http_and_prints_results(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "demo",
            "--no-serve",
            "--respondents",
            "300",
            "--port",
            "0",
            "--dir",
            str(directory),
            "--seed",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    reports = 300 * len(DEMO["questions"])  # one report per question on every path
    assert f"{reports:,} reports from 300 simulated respondents" in result.stdout
    # The server is gone: no URLs; the kept directory and its token are still true.
    assert "http://" not in result.stdout and "dashboard" not in result.stdout
    assert f"demo data kept in {directory}" in result.stdout
    assert "true (simulated)" in result.stdout
    assert "300/300" in result.stderr  # the progress bar reached the end
    storage = open_storage({"DATABASE": str(directory / "deniable.sqlite3")})
    try:
        assert storage.count_reports("demo-workplace") == reports
        statistics = storage.fold("demo-workplace")
        assert {s.n for s in statistics.values()} == {300}
    finally:
        storage.close()
    # A second run in the same directory would mix two demos: refused, one line.
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "demo",
            "--no-serve",
            "--dir",
            str(directory),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 4
    assert "already exists" in single_error_line(again.stderr)


def test_demo_refuses_a_busy_port(tmp_path: Path, capsys) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status, _, err = call(
            capsys, ["demo", "--no-serve", "--dir", str(tmp_path), "--port", str(port)]
        )
    assert status == 4 and "in use" in single_error_line(err)


def test_demo_survey_has_every_question_type() -> None:
    survey = demo.demo_survey()
    assert {q.type for q in survey.questions} == {
        "multiple_choice",
        "numeric",
        "single_choice",
        "yes_no",
        "scale",
    }
    # An optional sensitive question, a conditional one, help text and a 0-10 scale; the
    # device's default policy still admits it.
    assert any(q.optional and q.show_if is None for q in survey.questions)
    assert any(q.show_if is not None for q in survey.questions)
    assert any(q.help for q in survey.questions)
    assert any(q.type == "scale" and q.points == 11 for q in survey.questions)
    assert survey.total_epsilon <= 10.0
    answers = demo.simulate_answers(survey, 300, np.random.default_rng(1))
    assert any("burnout_cause" not in a for a in answers)  # not shown to some
    assert any(a.get("harassment", False) is None for a in answers)  # declined by some


def test_simulated_respondents_take_every_path() -> None:
    from ..shared.questionnaire_vectors import QUESTIONNAIRE_SURVEY

    survey = Survey.from_dict(QUESTIONNAIRE_SURVEY)
    answers = demo.simulate_answers(survey, 300, np.random.default_rng(1))
    conditional = [q for q in survey.questions if q.show_if is not None]
    optional = [q for q in survey.questions if q.optional]
    assert any(q.id not in a for a in answers for q in conditional)  # not shown
    assert any(q.id in a and a[q.id] is not None for a in answers for q in conditional)
    assert any(a.get(q.id, 0) is None for a in answers for q in optional)  # declined
    for answer in answers[:20]:
        body = demo.respondent_reports(survey, answer)
        assert [r["question"] for r in body["reports"]] == survey.question_ids


def test_simulated_answers_are_valid_and_reports_decode() -> None:
    survey = demo.demo_survey()
    answers = demo.simulate_answers(survey, 50, np.random.default_rng(0))
    assert len(answers) == 50
    for answer in answers:
        body = demo.respondent_reports(survey, answer)
        assert [r["question"] for r in body["reports"]] == survey.question_ids
        for report in body["reports"]:
            survey.question(report["question"]).oracle.decode(report["payload"])
    truth = demo.true_summary(survey.question("commute"), [a["commute"] for a in answers])
    assert sum(truth) == pytest.approx(1.0)


@pytest.mark.slow
def test_demo_keeps_serving_until_terminated_and_then_stops_its_server(tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "demo",
            "--respondents",
            "20",
            "--port",
            str(port),
            "--dir",
            str(tmp_path / "demo"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        page = None
        while time.monotonic() < deadline and process.poll() is None:
            try:
                page = requests.get(f"http://127.0.0.1:{port}/surveys/demo-workplace", timeout=2)
                if "data-estimate" in page.text:
                    break
            except (requests.ConnectionError, requests.Timeout):
                pass
            time.sleep(0.2)
        assert page is not None and "data-estimate" in page.text
        time.sleep(0.5)
        assert process.poll() is None  # still serving after submitting
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert f"http://127.0.0.1:{port}/surveys/demo-workplace" in out
    assert f"link to answer: http://127.0.0.1:{port}/surveys/demo-workplace/respond" in out
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=2)
