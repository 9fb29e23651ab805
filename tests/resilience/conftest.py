"""Shared pieces for the resilience tests ("prove it under attack").

* The aggregator fixtures (``backend``, ``database``, ``app``, ``client``,
  ``storage``, ``operator_headers``, ...) and :func:`assert_problem` come from
  ``tests/aggregator/conftest.py``; the client fixtures with the counting
  transport adapter (``aggregator``, ``adapter``, ``http``, ``store``,
  ``make_client``) from ``tests/client/conftest.py``.  They are imported here,
  not copied, so there is one definition of each.
* :class:`Server` runs ``deniable-aggregator serve`` (gunicorn) in a process
  group of its own on a free loopback port, so a test can SIGKILL the master
  and every worker at once, restart on the same database, and read the
  workers' RSS from ``/proc``.
* :class:`Recorded` is a light, picklable copy of an HTTP response that
  :func:`assert_problem` accepts (status, headers, bytes).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from deniable.aggregator.demo import free_port
from deniable.aggregator.storage import open_storage
from deniable.survey import Survey
from tests.aggregator.conftest import (  # noqa: F401 - fixtures are used by name
    PROBLEM_MEDIA_TYPE,
    app,
    app_config,
    assert_problem,
    backend,
    client,
    database,
    demo_survey_dict,
    operator_headers,
    operator_token,
    postgres_database,
    random_reports,
    storage,
)
from tests.client.conftest import (  # noqa: F401 - fixtures are used by name
    BASE,
    GENEROUS,
    FlaskAdapter,
    adapter,
    aggregator,
    http,
    make_client,
    store,
)

HOST = "127.0.0.1"
START_SECONDS = 60.0


def env_float(name: str, default: float) -> float:
    """A float from the environment (for durations CI may shorten or lengthen)."""
    text = os.environ.get(name, "").strip()
    return float(text) if text else default


@dataclass
class Recorded:
    """What a test keeps of a response: enough for :func:`assert_problem`."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    @classmethod
    def of(cls, response: requests.Response) -> Recorded:
        return cls(response.status_code, dict(response.headers), response.content)

    def json(self) -> Any:
        return json.loads(self.content)


def prepare_database(config: Mapping[str, Any], definitions: list[dict[str, Any]]) -> str:
    """Migrate, create the surveys (public results) and return a fresh operator token."""
    storage_ = open_storage(config)
    try:
        storage_.migrate()
        for definition in definitions:
            storage_.create_survey(Survey.from_dict(definition), results_public=True)
        return storage_.create_operator_token("resilience-tests")
    finally:
        storage_.close()


def _live_processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, stat fields after the command) of every live, non-zombie process, from /proc.

    The fields start: state ppid pgrp ...
    """
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields and fields[0] != "Z":
            yield int(entry), fields


def process_group_members(pgid: int) -> list[int]:
    """PIDs of live processes in process group ``pgid``."""
    return [pid for pid, fields in _live_processes() if int(fields[2]) == pgid]


def children_of(pid: int) -> list[int]:
    return sorted(child for child, fields in _live_processes() if int(fields[1]) == pid)


def rss_bytes(pid: int) -> int | None:
    """VmRSS of ``pid`` in bytes, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@dataclass
class Server:
    """``deniable-aggregator serve`` (gunicorn) in its own process group on 127.0.0.1."""

    config: dict[str, Any]
    token: str
    workers: int = 2
    environment: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    log: Any = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> None:
        assert self.process is None
        command = [
            sys.executable,
            "-m",
            "deniable.aggregator.cli",
            "--database",
            str(self.config["DATABASE"]),
            "--signing-key",
            str(self.config["SIGNING_KEY_PATH"]),
            "serve",
            "--bind",
            f"{HOST}:{self.port}",
            "--workers",
            str(self.workers),
        ]
        self.log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.environment},
            start_new_session=True,  # its own process group: one killpg reaches every worker
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                if requests.get(f"{self.url}/api/v1/health", timeout=2).status_code == 200:
                    # Both workers booted (the master answers nothing itself).
                    if len(self.worker_pids()) == self.workers:
                        return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        self.kill()
        pytest.fail(f"the server did not come up within {START_SECONDS:.0f} s:\n{self.tail()}")

    def tail(self, characters: int = 3000) -> str:
        if self.log is None:
            return ""
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-characters:]

    def worker_pids(self) -> list[int]:
        assert self.process is not None
        return children_of(self.process.pid)

    def worker_rss(self) -> dict[int, int]:
        sizes = {pid: rss_bytes(pid) for pid in self.worker_pids()}
        return {pid: size for pid, size in sizes.items() if size is not None}

    def kill(self) -> None:
        """SIGKILL the whole process group (master and workers); wait until none is left."""
        if self.process is None:
            return
        pgid = self.process.pid
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while process_group_members(pgid) and time.monotonic() < deadline:
            time.sleep(0.02)  # orphaned workers are reaped by init
        assert not process_group_members(pgid), "a server process survived SIGKILL"
        self.process = None

    def stop(self) -> None:
        """SIGTERM the group (a graceful gunicorn shutdown), SIGKILL if it lingers."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def close(self) -> None:
        self.stop()
        if self.log is not None:
            self.log.close()
            self.log = None

    # -- operator calls ---------------------------------------------------------
    def _operator(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def export(self, survey_id: str) -> list[dict[str, Any]]:
        response = requests.get(
            f"{self.url}/api/v1/surveys/{survey_id}/export?format=jsonl",
            headers=self._operator(),
            timeout=120,
        )
        assert response.status_code == 200, response.text[:500]
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]

    def results(self, survey_id: str) -> dict[str, Any]:
        response = requests.get(
            f"{self.url}/api/v1/surveys/{survey_id}/results", headers=self._operator(), timeout=120
        )
        assert response.status_code == 200, response.text[:500]
        return response.json()


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Any]:
    """``make_server(location, definitions, **options)``: a started :class:`Server`.

    Every server started here is stopped (its whole process group) at teardown.
    """
    servers: list[Server] = []

    def build(location: str, definitions: list[dict[str, Any]], **options: Any) -> Server:
        config = {"DATABASE": location, "SIGNING_KEY_PATH": str(tmp_path / "signing_key.pem")}
        token = prepare_database(config, definitions)
        server = Server(config=config, token=token, **options)
        servers.append(server)
        server.start()
        return server

    yield build
    for server in servers:
        server.close()
