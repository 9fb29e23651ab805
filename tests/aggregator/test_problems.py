"""Every error is problem+json: framework errors, typed errors, and the catch-all."""

from __future__ import annotations

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.problems import InvalidJson, parse_json

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
        response = client.post("/api/v1/surveys", data=big, headers=headers,
                               content_type="application/json")  # fmt: skip
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
    [b"\xc3\x28", b"[" * 65 + b"]" * 65, b"9" * 4301, b"1e400", b"-Infinity", b"NaN",
     b'{"a": 1, "a": 2}', b"{'a': 1}", b"", b"  ", b'{"k": ["\\ud800"]}', b'{"\\udfff": 1}'],
)  # fmt: skip
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
