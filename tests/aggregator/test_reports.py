"""Submitting reports: acknowledgements, idempotency, all-or-nothing batches, export."""

from __future__ import annotations

import csv
import io
import json

import pytest

from .conftest import assert_problem, random_reports

URL = "/api/v1/surveys/demo/reports"
BULK = URL + "/bulk"


def test_single_report_is_acknowledged(client, created_survey, demo_definition, storage):
    (report,) = random_reports(demo_definition, 1)
    response = client.post(URL, json=report)
    assert response.status_code == 201
    assert response.get_json() == {"survey": "demo", "received": 1, "reports": [report["id"]]}
    assert storage.count_reports("demo") == 1


def test_batch_retry_is_identical_and_not_double_counted(
    client, created_survey, demo_definition, storage, operator_headers
):
    reports = random_reports(demo_definition, 40)
    first = client.post(BULK, json={"reports": reports}, headers=operator_headers)
    assert first.status_code == 201
    assert first.get_json() == {
        "survey": "demo",
        "received": 40,
        "reports": [r["id"] for r in reports],
    }
    again = client.post(BULK, json={"reports": reports}, headers=operator_headers)
    assert (again.status_code, again.get_json()) == (201, first.get_json())
    # A batch mixing new reports and retried ones stores only the new ones.
    more = random_reports(demo_definition, 10, seed=1)
    mixed = client.post(BULK, json={"reports": reports[:5] + more}, headers=operator_headers)
    assert mixed.get_json()["received"] == 15
    assert storage.count_reports("demo") == 50
    results = client.get("/api/v1/surveys/demo/results").get_json()
    assert results["n_reports"] == 50


def test_same_id_in_one_batch_with_same_body_counts_once(
    client, created_survey, demo_definition, storage
):
    (report,) = random_reports(demo_definition, 1)
    response = client.post(URL, json={"reports": [report, report]})
    assert response.get_json()["reports"] == [report["id"]]
    assert storage.count_reports("demo") == 1


def test_reused_id_with_another_body_is_409_and_stores_nothing(
    client, created_survey, demo_definition, storage
):
    reports = random_reports(demo_definition, 4)
    client.post(URL, json=reports[0])
    forged = dict(reports[0], payload="00" if reports[0]["payload"] != "00" else "01")
    assert_problem(client.post(URL, json=forged), 409, "conflict")
    batch = {"reports": [reports[1], reports[2], forged, reports[3]]}
    assert_problem(client.post(URL, json=batch), 409, "conflict")
    assert storage.count_reports("demo") == 1
    exported = storage.export_reports("demo")
    assert [r.id for r in exported] == [reports[0]["id"]]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r.update(payload="zz"),
        lambda r: r.update(payload="0"),
        lambda r: r.update(payload="FF"),
        lambda r: r.update(id="not-a-uuid"),
        lambda r: r.update(id=r["id"].upper()),
        lambda r: r.update(question="unknown"),
        lambda r: r.update(extra=1),
        lambda r: r.pop("payload"),
        lambda r: r.update(payload=7),
    ],
    ids=["hex", "length", "uppercase", "uuid", "uuid-case", "question", "extra", "missing", "type"],
)
def test_any_invalid_report_rejects_the_whole_batch(
    client, created_survey, demo_definition, storage, operator_headers, mutate
):
    reports = random_reports(demo_definition, 8)
    mutate(reports[5])
    response = client.post(BULK, json={"reports": reports}, headers=operator_headers)
    assert_problem(response, 422, "invalid-report")
    assert_problem(client.post(URL, json={"reports": reports[4:]}), 422, "invalid-report")
    assert storage.count_reports() == 0


def test_batch_shapes_are_checked(client, created_survey, demo_definition, storage):
    reports = random_reports(demo_definition, 2)
    for body in (
        {"reports": []},
        {"reports": reports, "x": 1},
        {"reports": "no"},
        [reports[0]],
        "report",
        3,
        None,
    ):
        data = json.dumps(body)
        response = client.post(URL, data=data, content_type="application/json")
        assert_problem(response, 422, "invalid-report")
    twice = dict(reports[1], id=reports[0]["id"])
    assert_problem(client.post(URL, json={"reports": [reports[0], twice]}), 422)
    assert storage.count_reports() == 0


def test_batch_and_body_limits_are_413(app_config, demo_definition):
    from deniable.aggregator import create_app

    app = create_app({**app_config, "MAX_BATCH": 5, "MAX_BODY_BYTES": 4096})
    storage = app.extensions["deniable.storage"]
    try:
        client = app.test_client()
        headers = {"Authorization": f"Bearer {storage.create_operator_token()}"}
        client.post("/api/v1/surveys", json={"definition": demo_definition}, headers=headers)
        reports = random_reports(demo_definition, 6)
        response = client.post(BULK, json={"reports": reports}, headers=headers)
        assert_problem(response, 413, "payload-too-large")
        assert client.post(BULK, json={"reports": reports[:5]}, headers=headers).status_code == 201
        padding = {"reports": random_reports(demo_definition, 5, seed=2), "pad": "x" * 5000}
        assert_problem(client.post(BULK, json=padding, headers=headers), 413, "payload-too-large")
        assert storage.count_reports() == 5
    finally:
        storage.close()


def test_wrong_media_type_and_bad_json(client, created_survey, demo_definition, storage):
    (report,) = random_reports(demo_definition, 1)
    text = json.dumps(report)
    assert_problem(client.post(URL, data=text, content_type="text/plain"), 415)
    assert_problem(client.post(URL, data=text), 415, "unsupported-media-type")
    bodies = [b"{", b'{"id": NaN}', b"\xff\xfe", b"[" * 5000 + b"]" * 5000, b"1" * 5000]
    bodies += [b'{"id": 1e999}', b'{"id": "a", "id": "b"}', b'{"id": Infinity}', b""]
    for body in bodies:
        response = client.post(URL, data=body, content_type="application/json")
        assert_problem(response, 400, "invalid-json")
    assert storage.count_reports() == 0


def test_closed_and_unknown_surveys(
    client, created_survey, demo_definition, operator_headers, storage
):
    reports = random_reports(demo_definition, 3)
    assert_problem(client.post("/api/v1/surveys/nope/reports", json=reports[0]), 404)
    client.post(URL, json=reports[0])
    client.post("/api/v1/surveys/demo/close", headers=operator_headers)
    assert_problem(client.post(URL, json=reports[1]), 409, "survey-closed")
    # A retry of a stored batch (its acknowledgement lost) is acknowledged again once closed,
    # storing nothing; the same id with another body, or a new report with it, is not.
    again = client.post(URL, json=reports[0])
    assert again.status_code == 201 and again.get_json()["reports"] == [reports[0]["id"]]
    assert_problem(client.post(URL, json={**reports[0], "payload": reports[1]["payload"]}), 409)
    assert_problem(client.post(URL, json={"reports": [reports[0], reports[1]]}), 409)
    assert storage.count_reports() == 1


def test_export_in_append_order(client, created_survey, demo_definition, operator_headers):
    reports = random_reports(demo_definition, 12)
    client.post(BULK, json={"reports": reports[:7]}, headers=operator_headers)
    client.post(BULK, json={"reports": reports[7:]}, headers=operator_headers)
    export = "/api/v1/surveys/demo/export"
    assert_problem(client.get(export), 401)
    assert_problem(client.get(export, headers={"Authorization": "Bearer nope"}), 403)
    assert_problem(client.get(export + "?format=xml", headers=operator_headers), 400)
    assert_problem(client.get("/api/v1/surveys/nope/export", headers=operator_headers), 404)
    response = client.get(export, headers=operator_headers)
    assert response.status_code == 200
    rows = [json.loads(line) for line in response.data.decode().splitlines()]
    assert [(r["id"], r["question"], r["payload"]) for r in rows] == [
        (r["id"], r["question"], r["payload"]) for r in reports
    ]
    assert [r["seq"] for r in rows] == sorted(r["seq"] for r in rows)
    keys = {"seq", "id", "question", "payload", "received_at", "submission"}
    assert all(set(r) == keys for r in rows)
    response = client.get(export + "?format=csv", headers=operator_headers)
    assert response.mimetype == "text/csv"
    table = list(csv.DictReader(io.StringIO(response.data.decode())))
    assert [r["id"] for r in table] == [r["id"] for r in reports]


def test_one_submission_is_one_respondent(client, created_survey, demo_definition, storage):
    """Regression: 1,000 reports for one question in one public batch were stored."""
    many = random_reports(demo_definition, 1000)
    sybil = [dict(r, question="smoker", payload="01") for r in many]
    assert_problem(client.post(URL, json={"reports": sybil}), 422, "invalid-report")
    two = {"reports": sybil[:2]}
    problem = assert_problem(client.post(URL, json=two), 422, "invalid-report")
    assert "more than once" in problem["detail"]
    # One respondent: one report per question, in any order.
    respondent = random_reports(demo_definition, 4, seed=3)[::-1]
    assert client.post(URL, json={"reports": respondent}).get_json()["received"] == 4
    assert storage.count_reports("demo") == 4


def test_bulk_requests_take_turns_in_a_process_on_sqlite(
    app, created_survey, demo_definition, storage, operator_headers, backend
):
    """While this process's bulk turn is held, a bulk request waits (SQLite) or not (PostgreSQL)."""
    import threading

    body = {"reports": random_reports(demo_definition, 12)}
    answered = threading.Event()

    def post() -> None:
        response = app.test_client().post(BULK, json=body, headers=operator_headers)
        assert response.status_code == 201
        answered.set()

    with storage.bulk_turn():
        sender = threading.Thread(target=post)
        sender.start()
        # SQLite: the request cannot finish while the turn is held (it waits 0.5 s
        # here for nothing); PostgreSQL: it finishes without waiting for the turn.
        assert answered.wait(0.5 if backend == "sqlite" else 10) is (backend == "postgresql")
    sender.join(10)
    assert answered.is_set() and storage.count_reports() == 12


def test_bulk_route_needs_an_operator(
    client, created_survey, demo_definition, storage, operator_headers
):
    reports = random_reports(demo_definition, 12)
    assert_problem(client.post(BULK, json={"reports": reports}), 401, "unauthorized")
    wrong = {"Authorization": "Bearer dnb_wrong"}
    assert_problem(client.post(BULK, json={"reports": reports}, headers=wrong), 403)
    assert storage.count_reports() == 0
    nowhere = "/api/v1/surveys/nope/reports/bulk"
    assert_problem(client.post(nowhere, json={"reports": reports}, headers=operator_headers), 404)
    response = client.post(BULK, json={"reports": reports}, headers=operator_headers)
    assert response.status_code == 201 and response.get_json()["received"] == 12
    client.post("/api/v1/surveys/demo/close", headers=operator_headers)
    more = {"reports": random_reports(demo_definition, 4, seed=8)}
    assert_problem(client.post(BULK, json=more, headers=operator_headers), 409, "survey-closed")
    assert storage.count_reports() == 12
