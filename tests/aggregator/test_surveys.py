"""Surveys over HTTP: create, read (signed), list, close; operator auth; on both backends."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from deniable.survey import Survey

from .conftest import assert_problem, demo_survey_dict, random_reports


def test_health_names_the_backend(client, backend):
    response = client.get("/api/v1/health")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok", "storage": backend, "version": "0.1.0"}


def test_create_returns_the_signed_resolved_definition(client, operator_headers, demo_definition):
    response = client.post(
        "/api/v1/surveys", json={"definition": demo_definition}, headers=operator_headers
    )
    assert response.status_code == 201
    assert response.headers["Location"] == "/api/v1/surveys/demo"
    document = response.get_json()
    survey = Survey.from_dict(demo_definition).upgraded()
    assert document["definition"] == survey.to_dict()  # defaults and parameters filled in
    assert document["definition"]["questions"][1]["mechanism"]
    assert document["status"] == "open" and document["results_public"] is True
    assert document["closed_at"] is None and document["created_at"].endswith("Z")
    key = client.get("/api/v1/key").get_json()
    assert document["key_id"] == key["key_id"]
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
    public.verify(base64.b64decode(document["signature"]), survey.canonical_bytes())
    assert client.get("/api/v1/surveys/demo").get_json() == document


def test_list_summarises_every_survey(client, operator_headers, created_survey):
    client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict("second"), "results_public": False},
        headers=operator_headers,
    )
    surveys = client.get("/api/v1/surveys").get_json()["surveys"]
    assert [s["id"] for s in surveys] == ["demo", "second"]
    first = surveys[0]
    assert set(first) == {
        "id",
        "title",
        "status",
        "results_public",
        "require_enrolment",
        "total_epsilon",
        "n_reports",
        "created_at",
        "closed_at",
    }
    assert first["total_epsilon"] == 6.5 and first["n_reports"] == 0
    assert first["require_enrolment"] is False
    assert surveys[1]["results_public"] is False
    # Regression: a private survey's count is for operators only.
    client.post("/api/v1/surveys/second/reports", json=random_reports(demo_survey_dict(), 1)[0])
    assert surveys[1]["n_reports"] is None
    listed = client.get("/api/v1/surveys", headers=operator_headers).get_json()["surveys"]
    assert listed[1]["n_reports"] == 1 and listed[0]["n_reports"] == 0
    assert "n_reports" not in client.get("/api/v1/surveys/second").get_json()
    wrong = client.get("/api/v1/surveys", headers={"Authorization": "Bearer dnb_wrong"})
    assert_problem(wrong, 403)


def test_create_needs_an_operator_token(client, demo_definition, storage):
    body = {"definition": demo_definition}
    response = client.post("/api/v1/surveys", json=body)
    assert_problem(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert_problem(
        client.post("/api/v1/surveys", json=body, headers={"Authorization": "Basic abc"}), 401
    )
    forged = {"Authorization": "Bearer dnb_forged"}
    assert_problem(client.post("/api/v1/surveys", json=body, headers=forged), 403, "forbidden")
    assert storage.list_surveys() == []


def test_revoked_token_is_forbidden(client, storage, demo_definition):
    token = storage.create_operator_token("short-lived")
    (entry,) = [t for t in storage.list_operator_tokens() if t.label == "short-lived"]
    assert storage.revoke_operator_token(entry.id)
    assert not storage.revoke_operator_token(entry.id)
    response = client.post(
        "/api/v1/surveys",
        json={"definition": demo_definition},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert_problem(response, 403)


def test_duplicate_id_is_a_conflict(client, operator_headers, created_survey, demo_definition):
    response = client.post(
        "/api/v1/surveys", json={"definition": demo_definition}, headers=operator_headers
    )
    assert_problem(response, 409, "conflict")


def test_invalid_definitions_are_422(client, operator_headers, demo_definition, storage):
    bad_epsilon = demo_survey_dict("bad")
    bad_epsilon["questions"][0]["epsilon"] = -1
    bad_parameters = demo_survey_dict("worse")
    bad_parameters["questions"][3]["parameters"] = {"nonsense": [[1]]}
    for body in (
        {"definition": bad_epsilon},
        {"definition": bad_parameters},
        {"definition": {"format": "deniable.survey/1"}},
        {"definition": demo_definition, "extra": 1},
        {"definition": demo_definition, "results_public": "yes"},
        {},
        [],
        "survey",
    ):
        response = client.post("/api/v1/surveys", json=body, headers=operator_headers)
        assert_problem(response, 422, "invalid-survey")
    assert storage.list_surveys() == []


def test_unknown_survey_is_404(client):
    assert_problem(client.get("/api/v1/surveys/nope"), 404, "not-found")


def test_close_is_idempotent_and_needs_an_operator(client, operator_headers, created_survey):
    assert_problem(client.post("/api/v1/surveys/demo/close"), 401)
    first = client.post("/api/v1/surveys/demo/close", headers=operator_headers)
    assert first.status_code == 200
    document = first.get_json()
    assert document["status"] == "closed" and document["closed_at"]
    again = client.post("/api/v1/surveys/demo/close", headers=operator_headers)
    assert again.get_json() == document
    assert_problem(client.post("/api/v1/surveys/nope/close", headers=operator_headers), 404)
