"""A real gunicorn server in a subprocess, spoken to over plain HTTP with requests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import requests

from deniable.aggregator import settings
from deniable.aggregator.storage import open_storage

from .conftest import assert_problem, random_reports
from .conftest import expected_results as expected


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def server(database: str, tmp_path) -> Iterator[tuple[str, str]]:
    """(base URL, operator token) of gunicorn serving ``create_app()`` with two workers."""
    environment = {
        **os.environ,
        "DENIABLE_DATABASE": database,
        "DENIABLE_SIGNING_KEY_PATH": str(tmp_path / "key.pem"),
    }
    storage = open_storage(settings.load(environment=environment, instance_path=tmp_path))
    storage.migrate()
    token = storage.create_operator_token("server test")
    storage.close()
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--workers",
            "2",
            "--bind",
            f"127.0.0.1:{port}",
            "--graceful-timeout",
            "5",
            "deniable.aggregator:create_app()",
        ],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):
                pass  # not listening yet, or workers still booting
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.stdout.read().decode(errors="replace") if process.stdout else ""
                pytest.fail(f"gunicorn did not start:\n{output[-3000:]}")
            time.sleep(0.1)
        yield base, token
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_create_submit_and_read_results_over_http(server, demo_definition, backend):
    base, token = server
    operator = {"Authorization": f"Bearer {token}"}
    assert requests.get(f"{base}/health", timeout=5).json()["storage"] == backend
    created = requests.post(
        f"{base}/surveys", json={"definition": demo_definition}, headers=operator, timeout=5
    )
    assert created.status_code == 201, created.text
    reports = random_reports(demo_definition, 300, seed=21)
    with requests.Session() as session:
        for start in range(0, 300, 60):
            # Many respondents per request: the operator's bulk route.
            batch = {"reports": reports[start : start + 60]}
            response = session.post(
                f"{base}/surveys/demo/reports/bulk", json=batch, headers=operator, timeout=10
            )
            assert response.status_code == 201, response.text
        retry = session.post(f"{base}/surveys/demo/reports", json=reports[0], timeout=10)
        assert retry.json() == {"survey": "demo", "received": 1, "reports": [reports[0]["id"]]}
        results = session.get(f"{base}/surveys/demo/results", timeout=10).json()
        assert results["n_reports"] == 300
        assert results["questions"] == expected(demo_definition, reports)
        assert_problem(session.get(f"{base}/surveys/nope", timeout=5), 404)
        json_type = {"Content-Type": "application/json"}
        bad = session.post(f"{base}/surveys/demo/reports", data=b"\xff", headers=json_type)
        assert_problem(bad, 400)
        # A chunked body (no Content-Length) over MAX_BODY_BYTES is refused too.
        chunks = iter([b'{"definition": "', b"a" * 2_000_000, b'"}'])
        chunked = session.post(
            f"{base}/surveys", data=chunks, timeout=10, headers={**operator, **json_type}
        )
        assert_problem(chunked, 413, "payload-too-large")
        exported = session.get(f"{base}/surveys/demo/export", headers=operator, timeout=10)
        assert len(exported.text.splitlines()) == 300
