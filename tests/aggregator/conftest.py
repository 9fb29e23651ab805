"""Fixtures for the aggregator tests, shared by every test module here.

The ``app`` fixture runs each test on both backends: ``sqlite`` (a file in
``tmp_path``) and ``postgresql`` (a fresh schema per test in the database
named by ``DENIABLE_TEST_POSTGRES_DSN``; skipped, with the reason shown, when
that variable is unset, unless ``DENIABLE_REQUIRE_POSTGRES=1`` makes it fail).

Reusable pieces: ``app``, ``client``, ``storage``, ``operator_token``,
``operator_headers``, ``demo_definition``, ``created_survey``, and the one
error-shape helper :func:`assert_problem`; :func:`random_reports` makes valid
reports for a definition with a seeded generator.  The test folders are
packages, so helpers are imported relatively: ``from .conftest import
assert_problem`` (or ``from tests.aggregator.conftest import ...`` elsewhere).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
from flask import Flask
from flask.testing import FlaskClient

from deniable.aggregator import create_app
from deniable.aggregator.storage import EXTENSION as STORAGE_EXTENSION
from deniable.aggregator.storage import Storage
from deniable.results import question_results
from deniable.survey import Survey

POSTGRES_DSN = os.environ.get("DENIABLE_TEST_POSTGRES_DSN", "")
REQUIRE_POSTGRES = os.environ.get("DENIABLE_REQUIRE_POSTGRES") == "1"
PROBLEM_MEDIA_TYPE = "application/problem+json"

BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
]


def assert_problem(response: Any, status: int, kind: str | None = None) -> dict[str, Any]:
    """Assert ``response`` is an RFC 9457 problem with ``status`` (and type suffix ``kind``).

    Works for Flask test, ``requests`` and schemathesis responses; returns the body.
    """
    body_bytes = response.data if hasattr(response, "data") else response.content
    assert response.status_code == status, (response.status_code, body_bytes[:500])
    headers = {str(k).lower(): v for k, v in response.headers.items()}
    content_type = headers.get("content-type", "")
    if isinstance(content_type, list):  # schemathesis responses hold lists of values
        content_type = content_type[0]
    assert content_type.split(";")[0].strip() == PROBLEM_MEDIA_TYPE, content_type
    body = json.loads(body_bytes)
    assert set(body) == {"type", "title", "status", "detail"}, body
    assert body["status"] == status
    assert body["type"].startswith("urn:deniable:problem:")
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    assert "Traceback" not in body["detail"]
    if kind is not None:
        assert body["type"] == f"urn:deniable:problem:{kind}", body
    return body


def postgres_admin_dsn() -> str:
    if not POSTGRES_DSN:
        message = "DENIABLE_TEST_POSTGRES_DSN is unset: PostgreSQL tests skipped"
        if REQUIRE_POSTGRES:
            pytest.fail(message)
        pytest.skip(message)
    return POSTGRES_DSN


def with_search_path(dsn: str, schema: str) -> str:
    """``dsn`` with every connection's search_path set to ``schema``."""
    separator = "&" if "?" in dsn else "?"
    return f"{dsn}{separator}options={quote(f'-c search_path={schema}')}"


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A DSN whose connections see only a fresh, empty schema (dropped afterwards)."""
    import psycopg

    admin = postgres_admin_dsn()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield with_search_path(admin, schema)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def database(backend: str, tmp_path, request: pytest.FixtureRequest) -> str:
    """The DATABASE setting for this test's backend."""
    if backend == "postgresql":
        return request.getfixturevalue("postgres_database")
    return str(tmp_path / "deniable.sqlite3")


@pytest.fixture
def app_config(database: str, tmp_path) -> dict[str, Any]:
    """Settings for ``app``; tests may change them before ``app`` is requested."""
    return {
        "TESTING": True,
        "DATABASE": database,
        "SIGNING_KEY_PATH": str(tmp_path / "signing_key.pem"),
        "POOL_SIZE": 24,
    }


@pytest.fixture
def app(app_config: dict[str, Any]) -> Iterator[Flask]:
    application = create_app(app_config)
    yield application
    application.extensions[STORAGE_EXTENSION].close()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def storage(app: Flask) -> Storage:
    return app.extensions[STORAGE_EXTENSION]


@pytest.fixture
def operator_token(storage: Storage) -> str:
    return storage.create_operator_token("tests")


@pytest.fixture
def operator_headers(operator_token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {operator_token}"}


def demo_survey_dict(survey_id: str = "demo") -> dict[str, Any]:
    """A survey with one question of every type."""
    return {
        "format": "deniable.survey/1",
        "id": survey_id,
        "title": "Demo survey",
        "description": "One question of every type.",
        "questions": [
            {"id": "smoker", "type": "yes_no", "text": "Do you smoke?", "epsilon": 1.0},
            {
                "id": "transport",
                "type": "single_choice",
                "text": "How do you get to work?",
                "epsilon": 2.0,
                "options": ["car", "bus", "bicycle", "foot"],
            },
            {
                "id": "tools",
                "type": "multiple_choice",
                "text": "Which tools slow you down?",
                "epsilon": 2.0,
                "options": ["email", "chat", "meetings"],
            },
            {
                "id": "overtime",
                "type": "numeric",
                "text": "Hours of overtime last week?",
                "epsilon": 1.5,
                "lo": 0,
                "hi": 20,
            },
        ],
    }


@pytest.fixture
def demo_definition() -> dict[str, Any]:
    return demo_survey_dict()


@pytest.fixture
def created_survey(
    client: FlaskClient, operator_headers: dict[str, str], demo_definition: dict[str, Any]
) -> dict[str, Any]:
    """The survey document of ``demo_definition``, created with public results."""
    response = client.post(
        "/api/v1/surveys",
        json={"definition": demo_definition, "results_public": True},
        headers=operator_headers,
    )
    assert response.status_code == 201, response.data
    return response.get_json()


def random_answer(question: Any, rng: np.random.Generator) -> Any:
    if question.type == "yes_no":
        return bool(rng.integers(2))
    if question.type == "single_choice":
        return question.options[int(rng.integers(len(question.options)))]
    if question.type == "multiple_choice":
        return [o for o in question.options if rng.integers(2)]
    if question.type == "scale":
        return int(question.base_labels[int(rng.integers(question.base_size))])
    return float(rng.uniform(question.lo, question.hi))


def random_reports(
    definition: dict[str, Any] | Survey, count: int, seed: int = 0
) -> list[dict[str, str]]:
    """``count`` valid reports spread over the survey's questions, reproducibly."""
    survey = definition if isinstance(definition, Survey) else Survey.from_dict(definition)
    rng = np.random.default_rng(seed)
    reports = []
    for index in range(count):
        question = survey.questions[index % len(survey.questions)]
        reports.append(
            {
                "id": str(uuid.UUID(bytes=rng.bytes(16), version=4)),
                "question": question.id,
                "payload": question.randomize(random_answer(question, rng), rng),
            }
        )
    return reports


def expected_results(
    definition: dict[str, Any], reports: list[dict[str, str]], beta: float = 0.05
) -> list[dict[str, Any]]:
    """Results computed directly by deniable.survey from the same payloads."""
    survey = Survey.from_dict(definition)
    questions = []
    for question in survey.questions:
        payloads = [r["payload"] for r in reports if r["question"] == question.id]
        questions.append(
            question_results(question, question.statistics(payloads), len(payloads), beta=beta)
        )
    # Why a JSON round trip: the API serves JSON, and repr-based floats round-trip exactly.
    return json.loads(json.dumps(questions))


def post_bulk(client: FlaskClient, survey_id: str, reports: list[dict[str, str]]) -> Any:
    """POST many respondents' reports to the operator-only bulk route (a fresh operator token)."""
    token = client.application.extensions["deniable.storage"].create_operator_token("bulk")
    return client.post(
        f"/api/v1/surveys/{survey_id}/reports/bulk",
        json={"reports": reports},
        headers={"Authorization": f"Bearer {token}"},
    )
