"""Prometheus metrics: off by default; with METRICS on, behind an unscoped operator token,
counting accepted reports, refusals by reason, latency, fold time and database errors."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from deniable.aggregator import create_app

from .conftest import assert_problem, demo_survey_dict, random_reports

REPORTS = "/api/v1/surveys/demo/reports"


def samples(text: str) -> dict[tuple[str, tuple], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return {
        **app_config,
        "METRICS": True,
        "RATE_LIMIT_EXEMPT": "",
        "RATE_LIMIT_PER_ADDRESS": "3/day",
    }


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_metrics_are_off_by_default(app_config, operator_token):
    config = {k: v for k, v in app_config.items() if k != "METRICS"}
    app = create_app(config)
    headers = {"Authorization": f"Bearer {operator_token}"}
    assert_problem(app.test_client().get("/metrics", headers=headers), 404)
    app.extensions["deniable.storage"].close()


def test_metrics_count_what_happened(client, storage, operator_headers, created_survey):
    body = {"reports": random_reports(demo_survey_dict(), 4, 1)}
    assert client.post(REPORTS, json=body).status_code == 201
    assert client.post(REPORTS, json=body).status_code == 201  # a retry, acknowledged again
    assert_problem(client.post(REPORTS, json={"reports": [{"id": "x"}]}), 422)
    assert_problem(client.post(REPORTS, json=body), 429)
    assert client.get("/api/v1/surveys/demo/results").status_code == 200
    response = client.get("/metrics", headers=operator_headers)
    assert response.status_code == 200 and response.mimetype == "text/plain"
    found = samples(response.get_data(as_text=True))
    assert found[("deniable_reports_accepted_total", (("survey", "demo"),))] == 8
    assert found[("deniable_submissions_refused_total", (("reason", "invalid-report"),))] == 1
    assert found[("deniable_submissions_refused_total", (("reason", "rate-limited"),))] == 1
    assert found[("deniable_fold_seconds_count", ())] == 1
    latency = (
        "deniable_request_duration_seconds_count",
        (("endpoint", "reports.submit"), ("method", "POST"), ("status", "201")),
    )
    assert found[latency] == 2
    assert not any(name == "deniable_storage_errors_total" for name, _ in found)


def test_metrics_need_an_unscoped_operator_token(client, storage, created_survey):
    assert_problem(client.get("/metrics"), 401)
    assert_problem(client.get("/metrics", headers={"Authorization": "Bearer nope"}), 403)
    scoped = storage.create_operator_token("scoped", surveys=["demo"])
    assert_problem(client.get("/metrics", headers={"Authorization": f"Bearer {scoped}"}), 403)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_database_errors_are_counted(tmp_path, operator_token, app_config):
    app = create_app(app_config)
    client = app.test_client()
    storage = app.extensions["deniable.storage"]
    (tmp_path / "deniable.sqlite3").unlink()  # the database goes away under the server
    (tmp_path / "deniable.sqlite3").mkdir()
    storage.close()
    assert_problem(client.get("/api/v1/surveys"), 503, "storage-unavailable")
    (tmp_path / "deniable.sqlite3").rmdir()
    storage.migrate()
    token = storage.create_operator_token("after")
    found = samples(
        client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).get_data(as_text=True)
    )
    assert (
        found[
            (
                "deniable_storage_errors_total",
                (("backend", "sqlite"), ("operation", "list_surveys")),
            )
        ]
        == 1
    )
    storage.close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_label_values_come_from_fixed_sets(client, operator_headers, created_survey):
    """Made-up methods and paths fold into one label value each."""

    def series() -> set[tuple]:
        text = client.get("/metrics", headers=operator_headers).get_data(as_text=True)
        return {key for key in samples(text) if key[0].startswith("deniable_request_duration")}

    client.get("/api/v1/health")
    client.open("/api/v1/health", method="BREW")
    client.get("/no/such/path")
    client.open("/no/such/path", method="BREW")
    client.open(REPORTS, method="BREW")
    series()  # the scrape itself is a series too
    before = series()
    for number in range(60):
        client.open("/api/v1/health", method=f"X{number}")
        client.open(f"/made/up/{number}", method=f"M{number}")
        client.open(REPORTS, method=f"P{number}")
    after = series()
    assert after == before
    labels = {dict(key[1]).get("method") for key in after}
    assert labels <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"}
    assert "other" in labels


def test_a_worker_leaving_does_not_remove_the_metrics_directory_of_the_others(monkeypatch):
    """gunicorn forks workers from inside ``multiprocess_directory``: a worker that exits
    unwinds that block in its own process and must leave the shared directory to the
    server that made it (else a worker still booting fails and the server exits 1)."""
    import os

    from deniable.service import metrics

    monkeypatch.delenv(metrics.MULTIPROCESS_ENVIRONMENT, raising=False)
    seen: dict[str, object] = {}

    def serve_like() -> None:
        with metrics.multiprocess_directory(True) as directory:
            seen["directory"] = directory
            child = os.fork()
            if child == 0:
                raise SystemExit(0)  # a worker leaving: through the same block, as gunicorn's do
            os.waitpid(child, 0)
            seen["kept"] = os.path.isdir(directory)

    try:
        serve_like()
    except SystemExit:
        os._exit(0)  # only the forked worker gets here
    assert seen["kept"] is True
    assert not os.path.exists(seen["directory"])  # the server that made it removes it
