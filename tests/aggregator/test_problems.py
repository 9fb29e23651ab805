"""Every error is problem+json: framework errors, typed errors, and the catch-all."""

from __future__ import annotations

import pytest

from deniable.aggregator import create_app
from deniable.errors import AlreadyDelivered, Conflict, SurveyClosed, UnknownKey
from deniable.service.problems import (
    HTTP_TYPES,
    PROBLEMS,
    InvalidJson,
    classify,
    parse_json,
)
from deniable.wire import ProblemType

from .conftest import assert_problem


def test_unknown_route_and_wrong_method(client):
    assert_problem(client.get("/api/v1/nothing"), 404, "not-found")
    assert_problem(client.get("/no/such/page"), 404)
    response = client.delete("/api/v1/surveys")
    assert_problem(response, 405, "method-not-allowed")
    assert "GET" in response.headers["Allow"] and "POST" in response.headers["Allow"]


def test_body_over_the_limit_is_413(app_config):
    app = create_app({**app_config, "MAX_BODY_BYTES": 2048})
    storage = app.extensions["deniable.storage"]
    try:
        client = app.test_client()
        headers = {"Authorization": f"Bearer {storage.create_operator_token()}"}
        big = b'{"definition": "' + b"a" * 4000 + b'"}'
        response = client.post(
            "/api/v1/surveys", data=big, headers=headers, content_type="application/json"
        )
        assert_problem(response, 413, "payload-too-large")
        assert storage.list_surveys() == []
    finally:
        storage.close()


def test_unexpected_errors_are_500_problems_without_traceback(app):
    @app.get("/boom")
    def boom():
        raise RuntimeError("secret internals")

    app.testing = False  # Why: in testing mode Flask re-raises instead of handling.
    app.config["PROPAGATE_EXCEPTIONS"] = False
    response = app.test_client().get("/boom")
    body = assert_problem(response, 500, "internal")
    assert "secret" not in body["detail"]


@pytest.mark.parametrize(
    "data",
    [
        b"\xc3\x28",
        b"[" * 65 + b"]" * 65,
        b"9" * 4301,
        b"1e400",
        b"-Infinity",
        b"NaN",
        b'{"a": 1, "a": 2}',
        b'{"r": [{"i": 1}, {"i": 1, "i": 1}]}',
        b"{'a': 1}",
        b"",
        b"  ",
        b'{"k": ["\\ud800"]}',
        b'{"\\udfff": 1}',
    ],
)
def test_strict_json_rejects(data):
    with pytest.raises(InvalidJson):
        parse_json(data)


def test_strict_json_accepts_ordinary_documents():
    assert parse_json(b'{"a": [1, 2.5, "\\u00e9", {"b": null}]}') == {
        "a": [1, 2.5, "é", {"b": None}]
    }
    assert parse_json(b"[" * 64 + b"]" * 64)
    assert parse_json(b'"[[[[["') == "[[[[["  # brackets inside strings are not nesting
    assert parse_json(b'"\\ud83d\\ude00"') == "\U0001f600"  # a surrogate pair is one character


SURVEY_ROUTES = [
    ("GET", "/api/v1/surveys/{}"),
    ("POST", "/api/v1/surveys/{}/close"),
    ("POST", "/api/v1/surveys/{}/reports"),
    ("POST", "/api/v1/surveys/{}/reports/bulk"),
    ("GET", "/api/v1/surveys/{}/results"),
    ("GET", "/api/v1/surveys/{}/export"),
]


@pytest.mark.parametrize("method,route", SURVEY_ROUTES)
def test_impossible_survey_ids_are_404_before_storage(client, operator_headers, method, route):
    """Regression: a NUL byte in a survey id gave 503 on PostgreSQL."""
    for survey_id in ("a%00b", "%0Aforged", "UPPER", "x" * 65):
        response = client.open(
            route.format(survey_id), method=method, headers=operator_headers, json={"id": "x"}
        )
        body = assert_problem(response, 404, "not-found")
        assert not any(ord(c) < 32 for c in body["detail"])
    page = client.get("/surveys/a%00b")
    assert page.status_code == 404 and page.mimetype == "text/html"


def test_driver_data_errors_are_the_callers_not_an_outage(storage):
    from deniable.errors import InvalidParameter, NotFound

    expected = InvalidParameter if storage.backend == "postgresql" else NotFound
    with pytest.raises(expected):
        storage.get_survey("a\x00b")


def test_control_characters_never_reach_a_problem_or_a_log(client, caplog):
    response = client.get("/api/v1/no%0Asuch%1B[31m")
    body = assert_problem(response, 404)
    assert "\n" not in body["detail"] and "\x1b" not in body["detail"]
    assert "\\x0a" in body["detail"]


def test_every_response_says_nosniff(client, created_survey):
    for path in (
        "/api/v1/health",
        "/api/v1/surveys",
        "/api/v1/nothing",
        "/",
        "/surveys/demo",
        "/api/v1/surveys/demo/results?format=csv",
        "/api/v1/openapi.json",
    ):
        assert client.get(path).headers["X-Content-Type-Options"] == "nosniff", path
    assert client.post("/api/v1/surveys", json={}).headers["X-Content-Type-Options"] == "nosniff"


def test_health_is_degraded_when_the_database_refuses_writes(postgres_database, tmp_path):
    """PostgreSQL with every transaction read-only: reads answer, /health must not say ok."""
    from urllib.parse import quote

    app = create_app(
        {
            "TESTING": True,
            "DATABASE": postgres_database,
            "SIGNING_KEY_PATH": str(tmp_path / "key.pem"),
        }
    )
    try:
        assert app.test_client().get("/api/v1/health").status_code == 200
    finally:
        app.extensions["deniable.storage"].close()
    read_only = postgres_database + quote(" -c default_transaction_read_only=on")
    app = create_app(
        {
            "TESTING": True,
            "DATABASE": read_only,
            "MIGRATE": False,
            "SIGNING_KEY_PATH": str(tmp_path / "key.pem"),
        }
    )
    try:
        response = app.test_client().get("/api/v1/health")
        assert_problem(response, 503, "storage-unavailable")
        assert app.test_client().get("/api/v1/surveys").status_code == 200  # reads still work
    finally:
        app.extensions["deniable.storage"].close()


def test_each_condition_a_client_acts_on_has_its_own_problem_type():
    assert classify(SurveyClosed("x"))[:2] == (409, ProblemType.SURVEY_CLOSED)
    assert classify(UnknownKey("x"))[:2] == (409, ProblemType.UNKNOWN_KEY)
    assert classify(AlreadyDelivered("x"))[:2] == (409, ProblemType.ALREADY_DELIVERED)
    assert classify(Conflict("x"))[:2] == (409, ProblemType.CONFLICT)
    assert len({ProblemType.SURVEY_CLOSED, ProblemType.UNKNOWN_KEY, ProblemType.CONFLICT}) == 3


def test_every_problem_kind_the_services_answer_with_is_in_the_enumeration():
    kinds = {kind for _, _, kind, _ in PROBLEMS} | {kind for kind, _ in HTTP_TYPES.values()}
    assert kinds <= set(ProblemType)


def test_an_error_answer_is_the_bytes_of_the_cores_problem_document(
    client, operator_headers, created_survey
):
    from deniable.wire import Problem

    client.post("/api/v1/surveys/demo/close", headers=operator_headers)
    response = client.post("/api/v1/surveys/demo/reports", json={"reports": []})
    expected = Problem.of(
        ProblemType.SURVEY_CLOSED,
        title="Survey closed",
        status=409,
        detail="survey 'demo' is closed",
    )
    assert response.get_data() == expected.encode()
    assert Problem.parse(response.json) == expected
