"""The demo: the packaged survey, simulated respondents, and a real server to send them to.

Simulated respondents draw their *true* answers with numpy (a simulation, not a
device); every answer is then randomized by the real mechanisms from the CSPRNG
and POSTed over HTTP, as a fleet of devices would.  The server helpers start
``deniable-aggregator serve`` in a child process on loopback; tests and
benchmarks use them too.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from importlib import resources
from typing import Any

import numpy as np

from deniable.questionnaire import DECLINED, NOT_APPLICABLE, shown
from deniable.survey import Question, Survey

from .terminal import Progress, _fail

__all__ = [
    "demo_survey",
    "free_port",
    "port_is_free",
    "respondent_reports",
    "simulate_answers",
    "start_server",
    "stop_server",
    "submit_all",
    "true_summary",
    "verify_signature",
]

# -- simulated respondents ------------------------------------------------------------


def simulate_answers(survey: Survey, respondents: int, rng: np.random.Generator) -> list[dict]:
    """True answers of ``respondents`` people, drawn with numpy from a fixed population.

    Each question gets a population distribution drawn once from ``rng`` (uneven,
    so the chart has something to show), then every respondent's answer is drawn
    from it.  Each respondent then walks the survey: a question whose ``show_if`` is
    false on their true answers is left out (not shown), and an optional one is
    declined (``None``) by about one in six.  Returns one ``{question id: answer}`` per
    respondent, answers in the types :meth:`Survey.path_answers` accepts.
    """
    columns: dict[str, list[Any]] = {}
    for q in survey.questions:
        if q.type == "yes_no":
            share = rng.uniform(0.25, 0.75)
            columns[q.id] = [bool(v) for v in rng.random(respondents) < share]
        elif q.type in ("single_choice", "scale"):
            values = list(q.options) or [int(label) for label in q.base_labels]
            weights = rng.dirichlet(np.full(len(values), 1.5))
            picks = rng.choice(len(values), size=respondents, p=weights)
            columns[q.id] = [values[i] for i in picks]
        elif q.type == "multiple_choice":
            shares = rng.uniform(0.1, 0.8, size=len(q.options))
            chosen = rng.random((respondents, len(q.options))) < shares
            columns[q.id] = [[q.options[i] for i in np.flatnonzero(row)] for row in chosen]
        else:
            lo, hi = float(q.lo), float(q.hi)  # type: ignore[arg-type]
            values = lo + (hi - lo) * rng.beta(2.0, 5.0, size=respondents)
            columns[q.id] = [float(v) for v in values]
    declines = rng.random((respondents, len(survey.questions))) < 1 / 6
    people = []
    for i in range(respondents):
        seen: dict[str, Any] = {}
        answers: dict[str, Any] = {}
        for j, q in enumerate(survey.questions):
            if not shown(q.show_if, seen):
                seen[q.id] = NOT_APPLICABLE
            elif q.optional and declines[i, j]:
                answers[q.id] = None
                seen[q.id] = DECLINED
            else:
                answers[q.id] = columns[q.id][i]
                seen[q.id] = q.check_base(answers[q.id])
        people.append(answers)
    return people


def true_summary(question: Question, answers: list[Any]) -> list[float]:
    """The exact values of simulated true answers, in the results' row order.

    ``answers``: each respondent's answer, ``None`` if declined, ``NOT_APPLICABLE`` if the
    question was not shown.  Shares among those who answered, then the declined share of
    those asked and the not-applicable share of all, then a scale's mean and NPS.
    """
    n = len(answers)
    absent = sum(a is NOT_APPLICABLE for a in answers)
    declined = sum(a is None for a in answers)
    given = [a for a in answers if a is not None and a is not NOT_APPLICABLE]
    extras = {
        "declined": declined / max(1, n - absent),
        "not_applicable": absent / max(1, n),
    }
    tail = [extras[label] for label in question.extras]
    m = max(1, len(given))
    if question.type == "numeric":
        return [float(np.mean(given)) if given else float("nan"), *tail]
    if question.type == "yes_no":
        yes = sum(bool(a) for a in given) / m
        return [1.0 - yes, yes, *tail]
    if question.type == "multiple_choice":
        return [sum(label in a for a in given) / m for label in question.options] + tail
    values = list(question.options) or [int(label) for label in question.base_labels]
    shares = [sum(a == value for a in given) / m for value in values]
    if question.type != "scale":
        return shares + tail
    points = [float(np.mean(given)) if given else float("nan")]
    if question.points == 11:
        points.append(100 * (sum(a >= 9 for a in given) - sum(a <= 6 for a in given)) / m)
    return shares + tail + points


def respondent_reports(survey: Survey, answers: Mapping[str, Any]) -> dict[str, list]:
    """One respondent's batch: every question randomized on 'the device' (CSPRNG), uuid4 ids:
    one report per question on every path (a hidden one "not applicable", a declined one
    "declined"; docs/protocol.md §5.5)."""
    values = survey.path_answers(answers)
    return {
        "reports": [
            {
                "id": str(uuid.uuid4()),
                "question": q.id,
                "payload": q.oracle.encode(q.oracle.randomize(values[q.id])),
            }
            for q in survey.questions
        ]
    }


def submit_all(
    base_url: str,
    survey_id: str,
    bodies: Sequence[Mapping[str, Any]],
    *,
    threads: int = 8,
    progress: Progress | None = None,
    attempts: int = 5,
) -> int:
    """POST every body to the reports endpoint over HTTP; retries 429/503 and lost connections."""
    import requests

    url = f"{base_url}/api/v1/surveys/{survey_id}/reports"
    local = threading.local()

    def post(body: Mapping[str, Any]) -> int:
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = requests.Session()
        delay = 0.2
        for attempt in range(attempts):
            try:
                response = session.post(url, json=body, timeout=30)
            except requests.ConnectionError:
                if attempt == attempts - 1:
                    raise
            else:
                if response.status_code == 201:
                    if progress:
                        progress.advance()
                    return int(response.json()["received"])
                if response.status_code not in (429, 503) or attempt == attempts - 1:
                    raise _fail(
                        f"the server refused a report batch: HTTP {response.status_code} "
                        f"{response.text[:300]}"
                    )
                delay = float(response.headers.get("Retry-After", delay))
            time.sleep(delay)
            delay *= 2
        return 0  # pragma: no cover - the loop returns or raises

    received = 0
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = [pool.submit(post, body) for body in bodies]
        for future in as_completed(futures):
            received += future.result()
    return received


def demo_survey() -> Survey:
    """The packaged demo survey (aggregator/demo_survey.json)."""
    text = resources.files("deniable.aggregator").joinpath("demo_survey.json").read_text("utf-8")
    return Survey.from_json(text)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def start_server(
    config: Mapping[str, Any],
    port: int,
    *,
    workers: int = 2,
    host: str = "127.0.0.1",
    environment: Mapping[str, str] | None = None,
) -> subprocess.Popen:
    """``deniable-aggregator serve`` in a child process, returned once it answers /health.

    ``environment``: DENIABLE_* settings added to this process's environment for the server.
    """
    import os

    import requests

    command = [
        sys.executable,
        "-m",
        "deniable.aggregator.cli",
        "--database",
        str(config["DATABASE"]),
        "--signing-key",
        str(config["SIGNING_KEY_PATH"]),
        "serve",
        "--bind",
        f"{host}:{port}",
        "--workers",
        str(workers),
    ]
    log = tempfile.TemporaryFile(mode="w+")
    env = {**os.environ, **(environment or {})}
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    server.log = log  # type: ignore[attr-defined]
    deadline = time.monotonic() + 60
    url = f"http://{host}:{port}/api/v1/health"
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            tail = log.read()[-2000:]
            raise _fail(f"the server exited with status {server.returncode}:\n{tail}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return server
        except requests.RequestException:
            pass
        time.sleep(0.1)
    stop_server(server)
    raise _fail(f"the server did not answer {url} within 60 s")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    log = getattr(server, "log", None)
    if log is not None:
        log.close()


def verify_signature(document: Mapping[str, Any], key: Mapping[str, Any]) -> Survey:
    """Check a served survey's Ed25519 signature as a respondent's device would."""
    import base64

    from deniable.keychain import signature_valid

    survey = Survey.from_dict(document["definition"])
    public = base64.b64decode(key["public_key"])
    signature = base64.b64decode(document["signature"])
    if not signature_valid(public, signature, survey.canonical_bytes()):
        raise _fail(f"survey {survey.id!r}: the served signature does not verify")
    return survey


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
