"""The client against the real aggregator running as a gunicorn subprocess on loopback."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deniable.client import StateStore, SurveyClient, TransportError

from .conftest import ANSWERS, STATE_KEY, LiveServer, definition

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, stdin: str = "", env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "deniable.client.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def test_offline_then_restart_then_flush_stores_every_report_once(
    live_server: LiveServer, tmp_path: Path
) -> None:
    for name in ("s1", "s2"):
        live_server.operator("POST", "/api/v1/surveys", {"definition": definition(name)})
    store = StateStore(tmp_path / "device" / "state.bin", key=STATE_KEY)
    client = SurveyClient(live_server.url, state=store, timeout=2, retries=1, backoff=0.05)
    first, second = client.fetch("s1"), client.fetch("s2")

    live_server.stop()
    receipt = client.answer(first, ANSWERS)
    assert not receipt.delivered and client.pending() == 1
    assert client.flush().pending == 1  # still down
    flushed = run_cli(
        "flush",
        live_server.url,
        "--state",
        str(store.path),
        env={"DENIABLE_STATE_KEY": base64.b64encode(STATE_KEY).decode()},
    )
    assert flushed.returncode == 5  # unavailable: reports still queued
    assert "1 still pending" in flushed.stdout
    assert flushed.stderr.count("\n") == 1 and "still pending" in flushed.stderr

    live_server.start()  # same port, same database, same signing key
    result = client.flush()
    assert (result.delivered, result.pending) == (1, 0)
    assert client.flush().delivered == 0
    stored = live_server.export("s1")
    assert sorted(r["id"] for r in stored) == sorted(receipt.report_ids)

    # Down again: the queued batch goes out with the next answer, ahead of it.
    live_server.stop()
    client2 = SurveyClient(live_server.url, state=store, timeout=2, retries=0)
    assert not client2.answer(second, ANSWERS).delivered
    live_server.start()
    assert client2.flush().delivered == 1
    assert len(live_server.export("s2")) == 4
    assert len(live_server.export("s1")) == 4


def test_unreachable_aggregator_at_fetch_is_a_transport_error(tmp_path: Path) -> None:
    from deniable.aggregator.demo import free_port

    store = StateStore(tmp_path / "state.bin", key=STATE_KEY)
    client = SurveyClient(
        f"http://127.0.0.1:{free_port()}", state=store, timeout=1, retries=1, backoff=0.01
    )
    with pytest.raises(TransportError, match="unreachable"):
        client.fetch("s1")


def test_cli_simulate_posts_every_respondent(shared_live_server: LiveServer) -> None:
    server = shared_live_server
    server.operator("POST", "/api/v1/surveys", {"definition": definition("sim")})
    # Without a token: one respondent per POST on the public route; with the operator
    # token: batches on the operator-only bulk route.
    result = run_cli(
        "simulate",
        server.url,
        "sim",
        "--respondents",
        "200",
        "--seed",
        "3",
        "--distribution",
        "skewed",
    )
    assert result.returncode == 0, result.stderr
    assert "200/200" in result.stderr  # the progress bar
    refused = run_cli(
        "simulate", server.url, "sim", "--respondents", "5", "--operator-token", "dnb_wrong"
    )
    assert refused.returncode == 4 and "403" in refused.stderr  # refused
    result = run_cli(
        "simulate",
        server.url,
        "sim",
        "--respondents",
        "400",
        "--seed",
        "4",
        "--operator-token",
        server.token,
    )
    assert result.returncode == 0, result.stderr
    assert "SIMULATION" in result.stdout and "respondents/s" in result.stdout
    # The shared progress bar: not a terminal here, so one line per quarter at most.
    assert "400/400" in result.stderr and len(result.stderr.splitlines()) <= 5
    assert len(server.export("sim")) == 600 * 4
    results = server.operator("GET", "/api/v1/surveys/sim/results")
    assert results["n_reports"] == 600 * 4
    # Bulk batches carry respondents: every simulated respondent's answers join.
    crosstab = server.operator("GET", "/api/v1/surveys/sim/crosstab?rows=commute&columns=smoker")
    assert crosstab["n"] == 600


def test_cli_answer_walks_through_the_survey(shared_live_server: LiveServer, tmp_path) -> None:
    server = shared_live_server
    server.operator("POST", "/api/v1/surveys", {"definition": definition("walk")})
    env = {"DENIABLE_STATE": str(tmp_path / "state.bin")}
    # yes/no: an invalid answer first, then y; choice 3; options 1 and 3; 7.5 hours; confirm.
    result = run_cli("answer", server.url, "walk", stdin="maybe\ny\n3\n1,3\n7.5\ny\n", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Signature verified" in out and "please answer yes or no" in out
    assert "Privacy cost ε = 1.00" in out and "Sent 4 randomized reports" in out
    assert len(server.export("walk")) == 4
    again = run_cli("answer", server.url, "walk", stdin="y\n", env=env)
    assert again.returncode == 4  # refused: already answered
    assert again.stderr.strip().count("\n") == 0
    assert "AlreadyAnswered" in again.stderr
    budget = run_cli("budget", env=env)
    assert "spent total: 4.000" in budget.stdout


def test_cli_declined_confirmation_sends_nothing(shared_live_server: LiveServer, tmp_path) -> None:
    server = shared_live_server
    server.operator("POST", "/api/v1/surveys", {"definition": definition("declined")})
    env = {"DENIABLE_STATE": str(tmp_path / "state.bin")}
    result = run_cli("answer", server.url, "declined", stdin="n\n1\n\n0\nn\n", env=env)
    assert result.returncode == 4 and "nothing was sent" in result.stderr  # refused, by you
    assert server.export("declined") == []
    again = run_cli("answer", server.url, "declined", stdin="", env=env)
    assert again.returncode == 4 and "declined survey 'declined'" in again.stderr  # no redraw
    fresh = {"DENIABLE_STATE": str(tmp_path / "fresh.bin")}
    closed = run_cli("answer", server.url, "declined", stdin="", env=fresh)  # EOF mid-survey
    assert closed.returncode == 4 and "input closed" in closed.stderr
    assert server.export("declined") == []


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        (["answer", "{url}", "no-such-survey"], "404", 3),
        (["answer", "{url}", "Bad Id"], "survey id must match", 2),
        (["answer", "not-a-url", "s"], "base_url", 2),
        (["simulate", "{url}", "no-such-survey", "--respondents", "5"], "404", 3),
        (["simulate", "{url}", "x", "--respondents", "0"], "must be at least 1", 2),
        (["simulate", "{url}", "x", "--respondents", "5", "--distribution", "odd"], "invalid", 2),
        (["frobnicate"], "invalid choice", 2),
    ],
)
def test_cli_bad_input_is_one_line_and_the_documented_status(
    shared_live_server: LiveServer, tmp_path, args, message, status
) -> None:
    args = [a.format(url=shared_live_server.url) for a in args]
    result = run_cli(*args, env={"DENIABLE_STATE": str(tmp_path / "state.bin")})
    assert result.returncode == status, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one clear line
    assert "Traceback" not in result.stderr


LEAN_CLIENT = """
import json, sys
from deniable.client import Policy, StateStore, SurveyClient
url, survey_id, state, answers = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
policy = Policy(max_survey_epsilon=20.0)
with SurveyClient(url, state=StateStore(state, key=bytes(32)), policy=policy) as client:
    receipt = client.answer(survey_id, answers)
print(json.dumps({"delivered": receipt.delivered, "numpy": "numpy" in sys.modules}))
"""


def test_answering_every_question_type_never_imports_numpy(
    shared_live_server: LiveServer, tmp_path: Path
) -> None:
    """Fetch, signature check, ledger, outbox and POST: the whole device path without numpy."""
    import json

    from tests.shared.test_device_path import EVERY_ANSWER, EVERY_QUESTION

    server = shared_live_server
    server.operator("POST", "/api/v1/surveys", {"definition": EVERY_QUESTION})
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            LEAN_CLIENT,
            server.url,
            EVERY_QUESTION["id"],
            str(tmp_path / "state.bin"),
            json.dumps(EVERY_ANSWER),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"delivered": True, "numpy": False}
    assert len(server.export(EVERY_QUESTION["id"])) == len(EVERY_QUESTION["questions"])


def test_cli_enrolment_refuses_before_asking_and_flush_takes_a_token(
    shared_live_server: LiveServer, tmp_path
) -> None:
    """Regression: without a token `deniable answer` asked every question, was
    refused, dropped the batch and then refused the respondent for ever."""
    from deniable.aggregator.storage import open_storage

    server = shared_live_server
    server.operator(
        "POST", "/api/v1/surveys", {"definition": definition("gated"), "require_enrolment": True}
    )
    storage = open_storage(server.config)
    try:
        first, second = storage.issue_enrolment_tokens("gated", 2)
    finally:
        storage.close()
    env = {"DENIABLE_STATE": str(tmp_path / "a.bin")}
    refused = run_cli("answer", server.url, "gated", stdin="y\n3\n1\n7\ny\n", env=env)
    assert refused.returncode == 4 and "EnrolmentTokenRequired" in refused.stderr
    assert "1." not in refused.stdout and "--enrolment-token" in refused.stderr
    assert "spent total: 0.000" in run_cli("budget", env=env).stdout
    answers = "y\n3\n1\n7\ny\n"
    done = run_cli(
        "answer", server.url, "gated", "--enrolment-token", first, stdin=answers, env=env
    )
    assert done.returncode == 0, done.stderr
    # Another device reuses the spent token: refused (403), but its batch is kept ...
    other = {"DENIABLE_STATE": str(tmp_path / "b.bin")}
    reused = run_cli(
        "answer", server.url, "gated", "--enrolment-token", first, stdin=answers, env=other
    )
    assert reused.returncode == 4 and "403" in reused.stderr
    waiting = run_cli("flush", server.url, env=other)
    assert waiting.returncode == 5 and "--enrolment-token" in waiting.stderr  # still queued
    # ... and delivered with a fresh token, charged once.
    flushed = run_cli("flush", server.url, "--enrolment-token", second, env=other)
    assert flushed.returncode == 0, flushed.stderr
    assert "delivered 1 batch(es)" in flushed.stdout
    assert "spent total: 4.000" in run_cli("budget", env=other).stdout
    assert len(server.export("gated")) == 8


def test_cli_answer_shows_the_randomized_reports_then_sends_exactly_those(
    shared_live_server: LiveServer, tmp_path
) -> None:
    """The respondent sees, in words, the randomized reports before saying yes; the
    aggregator then holds exactly those.  On no, nothing is sent and the device does not
    answer the survey again (no second draw)."""
    from deniable.client.wording import shown_report
    from deniable.survey import Survey

    server = shared_live_server
    server.operator("POST", "/api/v1/surveys", {"definition": definition("shown")})
    survey = Survey.from_dict(definition("shown"))
    env = {"DENIABLE_STATE": str(tmp_path / "state.bin")}
    result = run_cli("answer", server.url, "shown", stdin="y\n3\n1,3\n7.5\ny\n", env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    shown = out[out.index("What will be sent") :].splitlines()[1 : 1 + len(survey.questions)]
    assert out.index("What will be sent") < out.index("Send these randomized answers?")
    stored = {r["question"]: r["payload"] for r in server.export("shown")}
    assert shown == [
        f"  {n}. {q.text}: {shown_report(q, stored[q.id])}"
        for n, q in enumerate(survey.questions, 1)
    ]

    server.operator("POST", "/api/v1/surveys", {"definition": definition("shown-no")})
    other = {"DENIABLE_STATE": str(tmp_path / "other.bin")}
    declined = run_cli("answer", server.url, "shown-no", stdin="y\n3\n1,3\n7.5\nn\n", env=other)
    assert declined.returncode == 4 and "What will be sent" in declined.stdout
    assert "nothing was sent" in declined.stderr
    assert server.export("shown-no") == []
    again = run_cli("answer", server.url, "shown-no", stdin="y\n3\n1,3\n7.5\ny\n", env=other)
    assert again.returncode == 4 and "declined survey 'shown-no'" in again.stderr
    assert server.export("shown-no") == []
    budget = run_cli("budget", env=other)
    assert "spent total: 0.000" in budget.stdout  # nothing charged for what was not sent


def test_cli_simulate_follows_skip_logic_and_declines(shared_live_server: LiveServer) -> None:
    """Simulated respondents skip a question whose condition fails and decline optional
    ones: the results show "Not asked" and "declined" shares (ε = 8: nearly no noise)."""
    server = shared_live_server
    paths = {
        "format": "deniable.survey/2",
        "id": "simpaths",
        "title": "Paths",
        "questions": [
            {"id": "gate", "type": "yes_no", "text": "Gate?", "epsilon": 8},
            {"id": "why", "type": "single_choice", "text": "Why?", "epsilon": 8,
             "options": ["x", "y"], "show_if": {"question": "gate", "equals": True},
             "optional": True},
        ],
    }  # fmt: skip
    server.operator("POST", "/api/v1/surveys", {"definition": paths})
    argv = ["--respondents", "400", "--seed", "5", "--decline-rate", "0.5"]
    result = run_cli("simulate", server.url, "simpaths", *argv, "--operator-token", server.token)
    assert result.returncode == 0, result.stderr
    results = server.operator("GET", "/api/v1/surveys/simpaths/results")
    why = next(q for q in results["questions"] if q["question"] == "why")
    shares = {c["label"]: c["estimate"] for c in why["categories"]}
    assert shares["not_applicable"] > 0.3 and shares["declined"] > 0.1, shares
    refused = run_cli(
        "simulate", server.url, "simpaths", "--respondents", "5", "--decline-rate", "2"
    )
    assert refused.returncode == 2 and "from 0 to 1" in refused.stderr
