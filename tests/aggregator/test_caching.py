"""Explicit Cache-Control on the key document, survey documents and results
(aggregator/api/caching.py; hardening)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


def test_documents_say_how_they_may_be_cached(client, created_survey, operator_headers):
    survey = created_survey["id"]
    expected = {
        "/api/v1/key": "no-cache",
        f"/api/v1/surveys/{survey}": "no-cache",
        f"/api/v1/surveys/{survey}/results": "no-cache",
        "/api/v1/surveys/nope": "no-cache",  # a 404 problem of the same route too
    }
    for path, value in expected.items():
        assert client.get(path).headers.get("Cache-Control") == value, path
    for path in (
        f"/api/v1/surveys/{survey}/results",
        f"/api/v1/surveys/{survey}/export",
        "/api/v1/surveys",
    ):
        response = client.get(path, headers=operator_headers)
        assert response.headers.get("Cache-Control") == "private, no-store", path
    assert client.get(f"/surveys/{survey}/respond").headers["Cache-Control"] == "no-store"
