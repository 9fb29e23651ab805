"""A relay and an aggregator as real processes on free loopback ports (SQLite or PostgreSQL).

:func:`deployment` starts both for a test module: the aggregator (gunicorn +
waitress, one worker) with relayed surveys created through its command line
and a relay credential, and the relay (its own database, ``add-survey`` for
each survey, a short batch window) whose forwarder sends batches to it.
Devices are played by :func:`sealed_submission`, which randomizes answers on
"the device" (CSPRNG) and seals each unit to the aggregator's published
encryption key.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable import sealing
from deniable.aggregator.demo import free_port
from deniable.keychain import decode_public_key
from deniable.survey import Survey
from tests.aggregator.conftest import postgres_admin_dsn, with_search_path

HOST = "127.0.0.1"
START_SECONDS = 30.0
WINDOW_SECONDS = 0.4
INTERVAL = 0.1
# A marker a test sends as its User-Agent and a header: it must appear in no stored row or log.
MARKER = "relay-test-marker-" + uuid.uuid4().hex[:12]

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


def survey_definition(
    survey_id: str, relay_url: str, min_batch: int, unit: str = "question"
) -> dict[str, Any]:
    return {
        "format": "deniable.survey/2",
        "id": survey_id,
        "title": f"Relayed {survey_id}",
        "questions": [
            {"id": "smoker", "type": "yes_no", "text": "Do you smoke?", "epsilon": 1.0},
            {
                "id": "team",
                "type": "single_choice",
                "text": "Your team?",
                "epsilon": 2.0,
                "options": ["red", "green", "blue"],
                "mechanism": "grr",
            },
        ],
        "relay": {"url": relay_url, "min_batch": min_batch, "shuffle_unit": unit},
    }


@dataclass
class Process:
    """One service in its own process group, its output in a file."""

    command: list[str]
    environment: dict[str, str]
    port: int
    health: str
    process: subprocess.Popen | None = None
    log_path: Path = field(default_factory=lambda: Path(tempfile.mktemp(prefix="relay-test-")))

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        log = open(self.log_path, "a")  # noqa: SIM115 - the child keeps it
        self.process = subprocess.Popen(
            self.command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.environment},
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"{self.command[2]} exited:\n{self.log()[-3000:]}")
            try:
                if requests.get(self.url + self.health, timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self.kill()
        pytest.fail(f"{self.command} did not come up:\n{self.log()[-3000:]}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def signal(self, number: int) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, number)

    def kill(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)
        time.sleep(0.2)  # gunicorn's worker notices its parent is gone
        self.process = None


@dataclass
class Deployment:
    backend: str
    directory: Path
    aggregator: Process
    relay: Process
    aggregator_env: dict[str, str]
    relay_env: dict[str, str]
    credential: str
    surveys: dict[str, Survey]
    encryption_key: bytes
    key_id: str
    tokens: list[str]
    session: requests.Session = field(default_factory=requests.Session)  # keep-alive

    def aggregator_cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(["-m", "deniable.aggregator.cli", *args], self.aggregator_env, check=check)

    def relay_cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(["-m", "deniable.relay.cli", *args], self.relay_env, check=check)

    def relay_status(self) -> dict[str, Any]:
        rows = json.loads(self.relay_cli("status", "--json").stdout)
        return {row["survey"]: row for row in rows}

    def results(self, survey_id: str) -> dict[str, Any]:
        response = self.session.get(
            f"{self.aggregator.url}/api/v1/surveys/{survey_id}/results", timeout=30
        )
        assert response.status_code == 200, response.text
        return response.json()

    def export(self, survey_id: str) -> list[dict[str, Any]]:
        token = self.aggregator_cli("token", "create").stdout.strip().split()[-1]
        response = requests.get(
            f"{self.aggregator.url}/api/v1/surveys/{survey_id}/export",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines()]

    def client(self, name: str) -> Any:
        """The Python client (deniable.client.SurveyClient) with its own state file."""
        from deniable.client import SurveyClient

        return SurveyClient(self.aggregator.url, state=self.directory / f"{name}.state")

    def submit(self, survey_id: str, body: dict[str, Any]) -> requests.Response:
        return self.session.post(
            f"{self.relay.url}/api/v1/surveys/{survey_id}/sealed",
            json=body,
            headers={"User-Agent": MARKER, "X-Marker": MARKER},
            timeout=30,
        )

    def seal(self, survey_id: str, answers: dict[str, Any]) -> tuple[dict[str, Any], list[dict]]:
        return sealed_submission(self.surveys[survey_id], answers, self.encryption_key, self.key_id)

    def wait_for(self, condition: Callable[[], Any], seconds: float = 20.0) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(0.05)
        pytest.fail(
            f"timed out; relay log:\n{self.relay.log()[-2000:]}\naggregator log:\n"
            f"{self.aggregator.log()[-2000:]}"
        )


def run(
    command: list[str], environment: dict[str, str], *, check: bool = True
) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` run in this process (its main(), real settings and storage):
    a subprocess per command cost a second of imports each."""
    from deniable.aggregator import cli as aggregator_cli
    from deniable.relay import cli as relay_cli

    assert command[0] == "-m"
    main = {"deniable.aggregator.cli": aggregator_cli.main, "deniable.relay.cli": relay_cli.main}[
        command[1]
    ]
    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(environment)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(command[2:])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    done = subprocess.CompletedProcess(command, status, out.getvalue(), err.getvalue())
    if check and status != 0:
        pytest.fail(f"{' '.join(command[1:])}: exit {status}\n{done.stderr}")
    return done


def sealed_submission(
    survey: Survey, answers: dict[str, Any], public_key: bytes, key_id: str
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """(the device's sealed body, the plain reports inside it), as a device builds them."""
    reports = [
        {"id": str(uuid.uuid4()), "question": q.id, "payload": q.randomize(answers[q.id])}
        for q in survey.questions
    ]
    whole = survey.relay.shuffle_unit == "submission"
    groups = [("", reports)] if whole else [(r["question"], [r]) for r in reports]
    units = []
    for unit, inside in groups:
        blob = sealing.seal(
            public_key,
            survey_id=survey.id,
            unit=unit,
            plaintext=sealing.unit_body(inside, unit),
            size=sealing.unit_size(survey, unit),
        )
        units.append({"unit": unit, "sealed": b64(blob)})
    return {"format": "deniable.sealed/1", "key_id": key_id, "units": units}, reports


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _databases(backend: str, directory: Path) -> Iterator[tuple[str, str]]:
    if backend == "sqlite":
        yield str(directory / "aggregator.sqlite3"), str(directory / "relay.sqlite3")
        return
    import psycopg

    admin = postgres_admin_dsn()
    schemas = [f"relay_test_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    with psycopg.connect(admin, autocommit=True) as connection:
        for schema in schemas:
            connection.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(admin, schemas[0]), with_search_path(admin, schemas[1])
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            for schema in schemas:
                connection.execute(f'DROP SCHEMA "{schema}" CASCADE')


STANDARD_SURVEYS = (
    ("q", 20, "question"),
    ("w", 10, "submission"),
    ("p", 60, "question"),
    ("e", 2, "question"),
)


@pytest.fixture(scope="module", params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Deployment]:
    """An aggregator and a relay relaying surveys ``q`` (per question, min_batch 20),
    ``w`` (whole submissions, min_batch 10) and ``p`` (per question, min_batch 60)."""

    def definitions(relay_url: str) -> dict[str, dict[str, Any]]:
        return {
            survey_id: survey_definition(survey_id, relay_url, min_batch, unit)
            for survey_id, min_batch, unit in STANDARD_SURVEYS
        }

    directory = tmp_path_factory.mktemp(f"relay-{request.param}")
    with deployed(request.param, directory, definitions, enrolment={"e"}) as running:
        yield running


@contextlib.contextmanager
def deployed(
    backend: str,
    directory: Path,
    definitions: Callable[[str], dict[str, dict[str, Any]]],
    *,
    enrolment: Collection[str] = (),
) -> Iterator[Deployment]:
    """An aggregator and a relay as real processes, relaying the surveys ``definitions``
    gives for the relay's URL (created through the aggregator's command line, added to
    the relay with ``add-survey``); those in ``enrolment`` require enrolment tokens."""
    databases = _databases(backend, directory)
    aggregator_db, relay_db = next(databases)
    aggregator_port, relay_port = free_port(), free_port()
    relay_url = f"http://{HOST}:{relay_port}"
    aggregator_env = {
        "DENIABLE_HOME": str(directory / "aggregator"),
        "DENIABLE_DATABASE": aggregator_db,
    }
    relay_env = {
        "DENIABLE_RELAY_HOME": str(directory / "relay"),
        "DENIABLE_RELAY_DATABASE": relay_db,
        "DENIABLE_RELAY_PUBLIC_URL": relay_url,
        "DENIABLE_RELAY_WINDOW_SECONDS": str(WINDOW_SECONDS),
        "DENIABLE_RELAY_FORWARD_INTERVAL": str(INTERVAL),
        "DENIABLE_RELAY_REFRESH_SECONDS": "0.5",
        "DENIABLE_RELAY_FORWARD_TIMEOUT": "3",
        "DENIABLE_RELAY_RETRY_MAX_SECONDS": "0.5",
        # the aggregator's respond page posts to the relay from its origin
        "DENIABLE_RELAY_CORS_ORIGINS": f"http://{HOST}:{aggregator_port}",
    }
    aggregator = Process(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "serve",
            "--bind",
            f"{HOST}:{aggregator_port}",
            "--workers",
            "1",
        ],
        aggregator_env,
        aggregator_port,
        "/api/v1/health",
    )
    relay = Process(
        [
            sys.executable,
            "-m",
            "deniable.relay.cli",
            "serve",
            "--bind",
            f"{HOST}:{relay_port}",
            "--workers",
            "1",
        ],
        relay_env,
        relay_port,
        "/api/v1/health",
    )
    surveys = {}
    try:
        run(["-m", "deniable.aggregator.cli", "init"], aggregator_env)
        created = definitions(relay_url)
        for survey_id, definition in created.items():
            path = directory / f"{survey_id}.json"
            path.write_text(json.dumps(definition))
            required = ["--require-enrolment"] if survey_id in enrolment else []
            run(
                ["-m", "deniable.aggregator.cli", "create-survey", str(path), *required],
                aggregator_env,
            )
        tokens = [
            token
            for survey_id in sorted(enrolment)
            for token in run(
                ["-m", "deniable.aggregator.cli", "token", "issue", survey_id, "--count", "3"],
                aggregator_env,
            ).stdout.split()
        ]
        credential = run(
            ["-m", "deniable.aggregator.cli", "relay", "credential", "--relay-url", relay_url],
            aggregator_env,
        ).stdout.strip()
        aggregator.start()
        key_document = requests.get(f"{aggregator.url}/api/v1/key", timeout=10).json()
        encryption = key_document["encryption_key"]
        run(["-m", "deniable.relay.cli", "init"], relay_env)
        credential_file = directory / "credential"
        credential_file.write_text(credential)
        for survey_id in created:
            run(
                [
                    "-m",
                    "deniable.relay.cli",
                    "add-survey",
                    aggregator.url,
                    survey_id,
                    "--credential-file",
                    str(credential_file),
                    "--aggregator-key",
                    key_document["public_key"],
                ],
                relay_env,
            )
            document = requests.get(
                f"{aggregator.url}/api/v1/surveys/{survey_id}", timeout=10
            ).json()
            surveys[survey_id] = Survey.from_dict(document["definition"], resolved=True)
        relay.start()
        yield Deployment(
            backend=backend,
            directory=directory,
            aggregator=aggregator,
            relay=relay,
            aggregator_env=aggregator_env,
            relay_env=relay_env,
            credential=credential,
            surveys=surveys,
            encryption_key=decode_public_key(encryption["public_key"], "key"),
            key_id=encryption["key_id"],
            tokens=tokens,
        )
    finally:
        relay.kill()
        aggregator.kill()
        next(databases, None)
