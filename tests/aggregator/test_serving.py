"""``deniable-aggregator serve`` for real (service/serving.py): what it leaves on the host
and beside other instances.  Each test starts the command in a subprocess on a free
loopback port, with its own TMPDIR and XDG_RUNTIME_DIR, and stops it with SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from .test_server import free_port

pytestmark = pytest.mark.slow


class Served:
    """One ``serve`` process: its port, its stderr and the way to stop it."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process, self.port, self.log = process, port, log

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def host_environment(tmp_path: Path) -> dict[str, str]:
    """A clean environment whose temporary and runtime directories are the test's own."""
    for name in ("tmp", "run"):
        (tmp_path / name).mkdir(mode=0o700, exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DENIABLE_")}
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return {
        **environment,
        "TMPDIR": str(tmp_path / "tmp"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }


def start(
    tmp_path: Path, name: str, environment: dict[str, str] | None = None, workers: int = 2
) -> Served:
    """``deniable-aggregator --data-dir tmp_path/name serve`` on a free port, once healthy."""
    port = free_port()
    log = tmp_path / f"{name}.log"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "--data-dir",
            str(tmp_path / name),
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
        ],
        env={**host_environment(tmp_path), **(environment or {})},
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        cwd=tmp_path,
    )
    served = Served(process, port, log)
    deadline = time.monotonic() + 40
    while True:
        try:
            if requests.get(f"{served.base}/api/v1/health", timeout=2).status_code == 200:
                return served
        except (requests.ConnectionError, requests.Timeout):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            served.stop()
            pytest.fail(f"serve did not start:\n{served.output()[-3000:]}")
        time.sleep(0.1)


@pytest.fixture
def servers() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for served in started:
        served.stop()


def test_serve_removes_its_metrics_directory_when_it_stops(tmp_path, servers):
    """The multiprocess directory goes with the server."""
    served = start(tmp_path, "data", {"DENIABLE_METRICS": "true"})
    servers.append(served)
    assert requests.get(f"{served.base}/api/v1/health", timeout=5).status_code == 200
    made = [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("deniable-metrics-")]
    assert len(made) == 1 and any(made[0].iterdir())  # the workers wrote their files there
    assert served.stop() == 0, served.output()[-3000:]
    assert not made[0].exists()


def test_two_aggregators_on_one_host_do_not_share_a_control_socket(tmp_path, servers):
    """Stopping one instance leaves the other whole ("Two aggregators on one host").

    gunicorn keeps a control socket at a per-user path by default
    ($XDG_RUNTIME_DIR/gunicorn.ctl), shared by every instance; the aggregator runs
    without one.
    """
    first = start(tmp_path, "first", workers=1)
    servers.append(first)
    second = start(tmp_path, "second", workers=1)
    servers.append(second)
    runtime = tmp_path / "run"
    assert not list(runtime.rglob("*.ctl")), list(runtime.rglob("*"))
    assert first.stop() == 0
    assert requests.get(f"{second.base}/api/v1/health", timeout=5).status_code == 200
    assert second.process.poll() is None
    assert second.stop() == 0
    for served in (first, second):
        assert "control" not in served.output().lower(), served.output()[-2000:]


SECRET = "hunter2Zq"


def test_serve_never_prints_a_password_given_in_a_query_string(tmp_path, servers):
    """The start-up line and the rate limiter's warnings mask ``?password=`` (4)."""
    from .conftest import postgres_admin_dsn

    dsn = postgres_admin_dsn()  # skips without PostgreSQL
    redis_url = os.environ.get("DENIABLE_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("DENIABLE_TEST_REDIS_URL is unset")
    separator = "&" if "?" in dsn else "?"
    # The test servers trust local connections, so the passwords are sent and ignored
    # (PostgreSQL) or refused (Redis without one: the limiter warns and counts in memory).
    environment = {
        "DENIABLE_DATABASE": f"{dsn}{separator}password={SECRET}",
        "DENIABLE_RATE_LIMIT_STORAGE": f"{redis_url}?password={SECRET}",
        "DENIABLE_RATE_LIMIT_EXEMPT": "",
    }
    served = start(tmp_path, "data", environment, workers=1)
    servers.append(served)
    report = {"id": "6f1e4a3c-0d7b-4c55-9a8e-0123456789ab", "question": "q", "payload": "1"}
    requests.post(f"{served.base}/api/v1/surveys/none/reports", json=report, timeout=10)
    assert served.stop() == 0
    output = served.output()
    assert "serving backend=postgresql" in output and "password=***" in output, output[-2000:]
    assert "rate-limit storage" in output, output[-2000:]
    assert SECRET not in output


def test_behind_a_tls_proxy_the_embed_snippet_never_says_http(tmp_path, servers):
    """Issue 19: with TRUST_PROXY the proxy's X-Forwarded-Proto: https reaches the snippet
    through gunicorn and waitress (without it the header is ignored: test_public_url.py)."""
    from deniable.aggregator import cli
    from deniable.aggregator.storage import open_storage
    from deniable.survey import Survey

    from .conftest import demo_survey_dict

    data = tmp_path / "data"
    assert cli.main(["--data-dir", str(data), "init"]) == 0
    storage = open_storage({"DATABASE": str(data / "deniable.sqlite3")})
    try:
        definition = {**demo_survey_dict("embedded"), "format": "deniable.survey/2"}
        storage.create_survey(Survey.from_dict(definition), results_public=True)
    finally:
        storage.close()
    proxied = {
        "X-Forwarded-Proto": "https",
        "X-Forwarded-For": "203.0.113.9",
        "Host": "surveys.example.org",
    }
    served = start(tmp_path, "data", {"DENIABLE_TRUST_PROXY": "1"}, workers=1)
    servers.append(served)
    snippet = requests.get(f"{served.base}/surveys/embedded/embed", headers=proxied, timeout=10)
    assert snippet.status_code == 200, snippet.text
    assert "http://" not in snippet.text and "https://surveys.example.org/" in snippet.text


def _spawned_under(root: int) -> list[int]:
    """Pids of multiprocessing's spawned children anywhere below ``root`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])

    def below(pid: int) -> bool:
        while pid in parents and pid > 1:
            pid = parents[pid]
            if pid == root:
                return True
        return False

    found = []
    for pid in parents:
        try:
            command = (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        if b"multiprocessing.spawn" in command and below(pid):
            found.append(pid)
    return found


def test_an_aggregator_with_a_relay_starts_its_decryption_processes_before_any_batch(
    tmp_path, servers
):
    """Starting the decryption processes costs about 0.4 s; a worker of an aggregator that
    has issued a relay credential starts them at boot, not on its first large batch."""
    from deniable.aggregator.api.opening import DECRYPT_PROCESSES

    if DECRYPT_PROCESSES < 2:
        pytest.skip("one core: batches are opened in the serving process")
    environment = host_environment(tmp_path)
    for name, relay in (("relayed", True), ("direct", False)):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "deniable.aggregator.cli",
                "--data-dir",
                str(tmp_path / name),
                "init",
            ],
            env=environment,
            check=True,
            capture_output=True,
        )
        if relay:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "deniable.aggregator.cli",
                    "--data-dir",
                    str(tmp_path / name),
                    "relay",
                    "credential",
                    "--relay-url",
                    "https://relay.example",
                ],
                env=environment,
                check=True,
                capture_output=True,
            )
    relayed = start(tmp_path, "relayed")
    servers.append(relayed)
    direct = start(tmp_path, "direct")
    servers.append(direct)
    deadline = time.monotonic() + 30
    while len(_spawned_under(relayed.process.pid)) < 2 * DECRYPT_PROCESSES:
        assert time.monotonic() < deadline, _spawned_under(relayed.process.pid)
        time.sleep(0.2)
    assert _spawned_under(direct.process.pid) == []  # no relay: no processes held for it


MAX_BODY = 1 << 20  # the default MAX_BODY_BYTES


def _answer_while_sending(port: int, head: bytes, body_bytes: int, chunked: bool) -> tuple:
    """Send ``head`` then up to ``body_bytes`` of body in 64 KiB pieces, reading any answer as
    it comes: (the answer's first line, or "closed" if the server closed the connection
    first (a reset may swallow its answer), and the body bytes sent until then)."""
    import select
    import socket

    piece = b"x" * 65536
    sent, answer = 0, b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            readable, writable, _ = select.select(
                [connection], [connection] if sent < body_bytes else [], [], 5
            )
            try:
                if readable:
                    data = connection.recv(65536)
                    answer += data
                    if not data and not answer:
                        return "closed", sent
                    if not data or b"\r\n" in answer:
                        break
                elif writable:
                    data = (b"%x\r\n" % len(piece) + piece + b"\r\n") if chunked else piece
                    connection.sendall(data)
                    sent += len(piece)
                else:
                    break  # nothing to send, nothing answered within 5 s
            except (BrokenPipeError, ConnectionResetError):
                return answer.split(b"\r\n", 1)[0].decode("latin-1") or "closed", sent
    return answer.split(b"\r\n", 1)[0].decode("latin-1"), sent


def _head(path: str, length: int | None, authorization: str | None = None) -> bytes:
    lines = [f"PUT {path} HTTP/1.1" if "batches" in path else f"POST {path} HTTP/1.1"]
    lines += ["Host: 127.0.0.1", "Content-Type: application/json"]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    if authorization:
        lines.append(f"Authorization: Bearer {authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def test_only_a_relay_with_its_credential_may_send_a_body_over_twice_max_body_bytes(
    tmp_path, servers
):
    """The server reads a body over twice MAX_BODY_BYTES only on the batch route, with a valid
    relay credential; anywhere else (or with no or another credential) it answers 413 as
    soon as the headers say so, or as soon as a chunked body passes the limit, and closes
    the connection without reading the rest (the client may see the reset first)."""

    def aggregator(*args: str) -> str:
        command = [sys.executable, "-m", "deniable.aggregator.cli", "--data-dir"]
        return subprocess.run(
            [*command, str(tmp_path / "data"), *args],
            env=host_environment(tmp_path),
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        ).stdout.strip()

    aggregator("init")
    credential = aggregator("relay", "credential", "--relay-url", "http://127.0.0.1:9")
    served = start(tmp_path, "data", workers=1)
    servers.append(served)
    huge = 100 * 1000 * 1000
    reports = "/api/v1/surveys/demo/reports"
    batch = "/api/v1/surveys/demo/batches/" + "b" * 32
    for path, authorization in (
        (reports, None),
        (reports, credential),  # a relay credential is for batches only
        (batch, None),
        (batch, "dnr_" + "x" * 43),  # not a credential of this aggregator
    ):
        line, sent = _answer_while_sending(
            served.port, _head(path, huge, authorization), huge, False
        )
        assert line.startswith("HTTP/1.1 413") or line == "closed", (path, line, sent)
        assert sent < 16 * MAX_BODY, (path, sent)  # answered long before 100 MB went
        line, sent = _answer_while_sending(
            served.port, _head(path, None, authorization), 64 * MAX_BODY, True
        )
        assert line.startswith("HTTP/1.1 413") or line == "closed", (path, line, sent)
        assert sent < 32 * MAX_BODY, (path, sent)
    # The relay's credential on its route: the body is read, and the app answers.
    body = b'{"format": "deniable.batch/1", "unit": "a", "sealed": ["' + b"A" * (3 * MAX_BODY)
    response = requests.put(
        f"{served.base}{batch}",
        data=body + b'"]}',
        headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 404, response.text[:300]  # no survey demo: the app said so
    assert response.headers["Content-Type"].startswith("application/problem+json")
