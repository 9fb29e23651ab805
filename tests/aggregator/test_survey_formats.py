"""Survey formats on the aggregator: new surveys are /2 (RFC 8785); stored /1 rows keep working.

A row stored before /2 existed holds the /1 canonical text.  It must still parse as /1,
be served as /1 with the very signature a device saw before (Ed25519 is deterministic and
the /1 bytes are unchanged), and accept and count reports.  Both backends.
"""

from __future__ import annotations

import base64
import json

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from deniable.canonical import legacy_bytes
from deniable.survey import FORMAT, FORMAT_V1, Survey

from .conftest import demo_survey_dict, random_reports


def _store_as_v1(storage, backend: str, survey: Survey) -> None:
    legacy = legacy_bytes(survey.to_dict()).decode("utf-8")
    placeholder = "?" if backend == "sqlite" else "%s"
    with storage._transaction() as connection:
        connection.execute(
            f"UPDATE surveys SET definition = {placeholder} WHERE id = {placeholder}",
            (legacy, survey.id),
        )


def test_new_surveys_are_v2_signed_over_jcs(client, operator_headers) -> None:
    definition = demo_survey_dict()
    response = client.post(
        "/api/v1/surveys", json={"definition": definition}, headers=operator_headers
    )
    document = response.get_json()
    assert document["definition"]["format"] == FORMAT
    assert all("parameters" in q for q in document["definition"]["questions"])
    key = client.get("/api/v1/key").get_json()
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
    public.verify(base64.b64decode(document["signature"]), rfc8785.dumps(document["definition"]))


def test_a_stored_v1_survey_keeps_its_bytes_signature_and_reports(
    client, operator_headers, storage, backend
) -> None:
    v1 = Survey.from_dict(demo_survey_dict())
    assert v1.format == FORMAT_V1
    client.post("/api/v1/surveys", json={"definition": v1.to_dict()}, headers=operator_headers)
    _store_as_v1(storage, backend, v1)
    document = client.get(f"/api/v1/surveys/{v1.id}").get_json()
    assert document["definition"] == v1.to_dict() and document["definition"]["format"] == FORMAT_V1
    served = Survey.from_dict(document["definition"], resolved=True)
    assert (
        served.canonical_bytes()
        == json.dumps(
            v1.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    )
    key = client.get("/api/v1/key").get_json()
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
    public.verify(base64.b64decode(document["signature"]), served.canonical_bytes())
    reports = random_reports(served, len(served.questions))  # one respondent: one per question
    response = client.post(f"/api/v1/surveys/{v1.id}/reports", json={"reports": reports})
    assert response.status_code == 201, response.get_json()
    results = client.get(f"/api/v1/surveys/{v1.id}/results").get_json()
    assert results["n_reports"] >= 1


def test_a_v1_survey_is_refused_in_the_browser_with_a_reason(
    client, operator_headers, storage, backend
) -> None:
    """Browsers answer /2 only (no table of defaults): the page and the snippet say so."""
    v1 = Survey.from_dict(demo_survey_dict())
    client.post("/api/v1/surveys", json={"definition": v1.to_dict()}, headers=operator_headers)
    assert client.get(f"/surveys/{v1.id}/respond").status_code == 200
    assert client.get(f"/surveys/{v1.id}/embed").status_code == 200
    _store_as_v1(storage, backend, v1)
    page = client.get(f"/surveys/{v1.id}/respond")
    text = page.get_data(as_text=True)
    assert page.status_code == 409 and "cannot be answered in a browser" in text
    # Plain words for the respondent (no format ids); the embedding developer gets the format.
    assert "Please ask the survey" in text and FORMAT not in text
    assert "data-deniable-survey" not in text and "<script" not in text
    assert "unsafe" not in page.headers["Content-Security-Policy"]
    embed = client.get(f"/surveys/{v1.id}/embed")
    assert embed.status_code == 409 and embed.mimetype == "application/problem+json"
    assert FORMAT in embed.get_json()["detail"]


def test_signed_thresholds_within_epsilon_are_kept_and_estimated_with(
    client, operator_headers
) -> None:
    """One threshold rule (docs/protocol.md §2.3): the aggregator accepts an operator's keep
    within the declared ε, signs it as given and estimates with it; beyond ε it refuses."""
    definition = Survey.from_dict(demo_survey_dict("chosen")).upgraded().to_dict()
    keep = 2**52 + 2**50  # p = 0.625: implied ε = ln(5/3) < 1
    definition["questions"][0]["parameters"]["keep"] = keep
    created = client.post(
        "/api/v1/surveys", json={"definition": definition}, headers=operator_headers
    )
    assert created.status_code == 201, created.get_json()
    document = client.get("/api/v1/surveys/chosen").get_json()
    assert document["definition"]["questions"][0]["parameters"]["keep"] == keep
    served = Survey.from_dict(document["definition"], resolved=True)
    reports = [
        {"id": "00000000-0000-4000-8000-000000000001", "question": "smoker", "payload": "01"}
    ]
    reports += random_reports(served, len(served.questions))[1:]
    posted = client.post("/api/v1/surveys/chosen/reports", json={"reports": reports})
    assert posted.status_code == 201, posted.get_json()
    results = client.get("/api/v1/surveys/chosen/results").get_json()
    smoker = next(q for q in results["questions"] if q["question"] == "smoker")
    # one "yes" report: (1 - q*)/(p* - q*) with p* = 0.625, q* = 0.375
    yes = next(c for c in smoker["categories"] if c["label"] == "yes")
    assert yes["estimate"] == 2.5 and smoker["variance_bound"] == 3.75  # p*(1 - p*)/(p* - q*)²
    definition["id"] = "too-much"
    definition["questions"][0]["parameters"]["keep"] = 2**53 - 2
    refused = client.post(
        "/api/v1/surveys", json={"definition": definition}, headers=operator_headers
    )
    assert refused.status_code == 422 and "imply" in refused.get_json()["detail"]
