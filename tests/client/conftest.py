"""Fixtures for the client tests: the REAL aggregator, in-process and as a subprocess.

* :class:`FlaskAdapter` is a ``requests`` transport adapter that routes every
  request of a ``requests.Session`` onto the Flask test client of a real
  ``deniable.aggregator.create_app()``.  It records every request it sees
  (method, path, headers, body) and can inject faults: be offline, drop the
  response after the server stored the request, or rewrite a response body.
* ``live_server`` runs ``deniable-aggregator serve`` (gunicorn) on a free
  loopback port, started and stopped by the test (for offline/restart tests).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from deniable.aggregator import create_app
from deniable.aggregator.demo import free_port, start_server, stop_server
from deniable.aggregator.storage import current_storage, open_storage
from deniable.client import Policy, StateStore, SurveyClient

BASE = "http://aggregator.test"
STATE_KEY = bytes(range(32))


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FlaskAdapter(BaseAdapter):
    """requests → Flask test client, with a request log and fault injection."""

    app: Any
    seen: list[Seen] = field(default_factory=list)
    offline: bool = False
    # Report POSTs whose response is lost *after* the server handled them.
    drop_responses: int = 0
    # Requests answered 503 before reaching the app.
    unavailable: int = 0
    retry_after: str | None = None
    rewrite: Callable[[str, Any], Any] | None = None

    def __post_init__(self) -> None:
        super().__init__()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        parts = urlsplit(request.url)
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.seen.append(Seen(request.method, parts.path, dict(request.headers), body))
        if self.offline:
            raise requests.ConnectionError("adapter: aggregator offline")
        if self.unavailable:
            self.unavailable -= 1
            headers = {"Content-Type": "application/problem+json"}
            if self.retry_after is not None:
                headers["Retry-After"] = self.retry_after
            return self._response(request, 503, headers, b'{"title": "busy"}')
        with self.app.test_client() as client:
            result = client.open(
                parts.path + (f"?{parts.query}" if parts.query else ""),
                method=request.method,
                headers=dict(request.headers),
                data=body,
            )
            content = result.get_data()
            status, headers = result.status_code, dict(result.headers)
        if self.rewrite is not None and status == 200:
            content = json.dumps(self.rewrite(parts.path, json.loads(content))).encode()
            headers["Content-Length"] = str(len(content))
        if self.drop_responses and request.method == "POST" and parts.path.endswith("/reports"):
            self.drop_responses -= 1
            raise requests.ConnectionError("adapter: connection dropped after the server stored")
        return self._response(request, status, headers, content)

    @staticmethod
    def _response(
        request: requests.PreparedRequest, status: int, headers: dict[str, str], content: bytes
    ) -> requests.Response:
        response = requests.Response()
        response.status_code = status
        response.headers = CaseInsensitiveDict(headers)
        response._content = content
        response.url = request.url
        response.request = request
        response.encoding = "utf-8"
        return response

    def close(self) -> None:
        pass

    def report_posts(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and s.path.endswith("/reports")]

    def report_bytes(self) -> int:
        return sum(len(s.body) for s in self.report_posts())


def make_app(directory: Path, name: str = "aggregator") -> Any:
    return create_app(
        {
            "DATABASE": str(directory / f"{name}.sqlite3"),
            "SIGNING_KEY_PATH": str(directory / f"{name}-key.pem"),
            "TESTING": True,
        }
    )


@dataclass
class Aggregator:
    """A real in-process aggregator and an operator token for it."""

    app: Any
    token: str

    def operator(self, method: str, path: str, body: Any = None) -> Any:
        with self.app.test_client() as client:
            response = client.open(
                path, method=method, json=body, headers={"Authorization": f"Bearer {self.token}"}
            )
        assert response.status_code < 300, response.get_data(as_text=True)
        return response.get_json()

    def create(self, definition: dict[str, Any]) -> dict[str, Any]:
        return self.operator("POST", "/api/v1/surveys", {"definition": definition})

    def close(self, survey_id: str) -> None:
        self.operator("POST", f"/api/v1/surveys/{survey_id}/close")

    def results(self, survey_id: str) -> dict[str, Any]:
        return self.operator("GET", f"/api/v1/surveys/{survey_id}/results")

    def export(self, survey_id: str) -> list[dict[str, Any]]:
        with self.app.test_client() as client:
            response = client.get(
                f"/api/v1/surveys/{survey_id}/export?format=jsonl",
                headers={"Authorization": f"Bearer {self.token}"},
            )
        text = response.get_data(as_text=True)
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def public_key(self) -> str:
        with self.app.test_client() as client:
            return client.get("/api/v1/key").get_json()["public_key"]


def operator_token(app: Any) -> str:
    with app.app_context():
        return current_storage().create_operator_token("client-tests")


@pytest.fixture
def aggregator(tmp_path: Path) -> Aggregator:
    app = make_app(tmp_path)
    return Aggregator(app=app, token=operator_token(app))


@pytest.fixture
def adapter(aggregator: Aggregator) -> FlaskAdapter:
    return FlaskAdapter(app=aggregator.app)


@pytest.fixture
def http(adapter: FlaskAdapter) -> requests.Session:
    session = requests.Session()
    session.mount(BASE, adapter)
    return session


@pytest.fixture
def store(tmp_path: Path) -> StateStore:
    return StateStore(tmp_path / "device" / "state.bin", key=STATE_KEY)


@pytest.fixture
def make_client(http: requests.Session, store: StateStore) -> Callable[..., SurveyClient]:
    def build(**options: Any) -> SurveyClient:
        options.setdefault("state", store)
        options.setdefault("session", http)
        options.setdefault("sleep", lambda seconds: None)
        options.setdefault("retries", 3)
        return SurveyClient(BASE, **options)

    return build


@pytest.fixture
def client(make_client: Callable[..., SurveyClient]) -> SurveyClient:
    return make_client()


# -- survey definitions -------------------------------------------------------------
def definition(survey_id: str = "s1", **overrides: Any) -> dict[str, Any]:
    """Four questions, one of each type; a small ε each."""
    data: dict[str, Any] = {
        "format": "deniable.survey/1",
        "id": survey_id,
        "title": "Client test survey",
        "questions": [
            {"id": "smoker", "type": "yes_no", "text": "Do you smoke?", "epsilon": 1.0},
            {
                "id": "commute",
                "type": "single_choice",
                "text": "Commute?",
                "epsilon": 1.0,
                "options": ["car", "bus", "bike", "walk", "home"],
            },
            {
                "id": "tools",
                "type": "multiple_choice",
                "text": "Tools?",
                "epsilon": 1.0,
                "options": ["email", "chat", "meetings"],
            },
            {"id": "hours", "type": "numeric", "text": "Hours?", "epsilon": 1.0, "lo": 0, "hi": 20},
        ],
    }
    data.update(overrides)
    return data


ANSWERS = {"smoker": True, "commute": "bike", "tools": ["chat"], "hours": 7.5}


def longitudinal_definition(survey_id: str, *, epsilon: float = 1.0, inst: float = 1.0) -> dict:
    return {
        "format": "deniable.survey/1",
        "id": survey_id,
        "title": "Weekly check-in",
        "questions": [
            {
                "id": "ok",
                "type": "yes_no",
                "text": "Feeling OK?",
                "epsilon": epsilon,
                "mechanism": "binary_rr",
                "longitudinal": {"key": "feeling-ok", "instantaneous_epsilon": inst},
            },
        ],
    }


# Every kind of question, for the side-channel canary and the CLI explanations.
CANARY_DEFINITION: dict[str, Any] = {
    "format": "deniable.survey/1",
    "id": "canary",
    "title": "Side-channel canary",
    "questions": [
        {"id": "yn", "type": "yes_no", "text": "?", "epsilon": 1.0},
        {
            "id": "one",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "options": ["a", "b", "c", "d", "e"],
        },
        {
            "id": "olh",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "mechanism": "olh",
            "options": ["a", "b", "c"],
        },
        {
            "id": "many",
            "type": "multiple_choice",
            "text": "?",
            "epsilon": 1.0,
            "options": ["x", "y", "z"],
        },
        {"id": "num", "type": "numeric", "text": "?", "epsilon": 1.0, "lo": -5, "hi": 300},
        {
            "id": "lap",
            "type": "numeric",
            "text": "?",
            "epsilon": 1.0,
            "lo": 0,
            "hi": 10,
            "mechanism": "discrete_laplace",
        },
        {
            "id": "memo",
            "type": "single_choice",
            "text": "?",
            "epsilon": 1.0,
            "mechanism": "grr",
            "options": ["p", "q", "r"],
            "longitudinal": {"key": "memo", "instantaneous_epsilon": 1.0},
        },
    ],
}


GENEROUS = Policy(lifetime_epsilon=1e6, period_epsilon=1e6, max_survey_epsilon=50)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- the aggregator as a subprocess ------------------------------------------------------
@dataclass
class LiveServer:
    config: dict[str, Any]
    port: int
    token: str = ""
    process: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = start_server(self.config, self.port, workers=1)

    def stop(self) -> None:
        if self.process is not None:
            stop_server(self.process)
            self.process = None

    def operator(self, method: str, path: str, body: Any = None) -> Any:
        response = requests.request(
            method,
            self.url + path,
            json=body,
            timeout=30,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        assert response.status_code < 300, response.text
        return response.json() if "json" in response.headers.get("Content-Type", "") else None

    def export(self, survey_id: str) -> list[dict[str, Any]]:
        response = requests.get(
            f"{self.url}/api/v1/surveys/{survey_id}/export?format=jsonl",
            timeout=30,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        assert response.status_code == 200, response.text
        return [json.loads(line) for line in response.text.splitlines() if line.strip()]


def launch(directory: Path) -> LiveServer:
    config = {
        "DATABASE": str(directory / "live.sqlite3"),
        "SIGNING_KEY_PATH": str(directory / "live-key.pem"),
    }
    server = LiveServer(config=config, port=free_port())
    server.start()
    storage = open_storage(config)
    try:
        server.token = storage.create_operator_token("client-tests")
    finally:
        storage.close()
    return server


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[LiveServer]:
    """A gunicorn aggregator of this test's own (it may stop and restart it)."""
    server = launch(tmp_path)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def shared_live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One gunicorn aggregator for a whole test module (tests must not stop it)."""
    server = launch(tmp_path_factory.mktemp("live"))
    try:
        yield server
    finally:
        server.stop()
