"""Concurrent writers on both backends: nothing acknowledged is lost or counted twice."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from .conftest import expected_results as expected
from .conftest import random_reports

REPORTS = "/api/v1/surveys/demo/reports"
BULK = REPORTS + "/bulk"  # many respondents per request: operator only
THREADS = 16
PER_THREAD = 500
BATCH = 10


def run_together(count: int, work) -> list:
    """Run ``work(index)`` in ``count`` threads released at the same moment."""
    barrier = threading.Barrier(count)

    def start(index: int):
        barrier.wait()
        return work(index)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(start, range(count)))


def test_sixteen_writers_store_and_count_every_report(
    app, created_survey, demo_definition, storage, operator_headers
):
    reports = random_reports(demo_definition, THREADS * PER_THREAD, seed=11)

    def write(index: int) -> int:
        client = app.test_client()
        mine = reports[index * PER_THREAD : (index + 1) * PER_THREAD]
        acknowledged = 0
        for start in range(0, PER_THREAD, BATCH):
            # One single-report post per thread too, beside the batches.
            if start == 0:
                response = client.post(REPORTS, json=mine[0])
                assert response.status_code == 201, response.data
            response = client.post(
                BULK, json={"reports": mine[start : start + BATCH]}, headers=operator_headers
            )
            assert response.status_code == 201, response.data
            acknowledged += response.get_json()["received"]
        return acknowledged

    assert sum(run_together(THREADS, write)) == THREADS * PER_THREAD
    assert storage.count_reports("demo") == THREADS * PER_THREAD
    document = app.test_client().get("/api/v1/surveys/demo/results").get_json()
    assert document["n_reports"] == THREADS * PER_THREAD
    assert document["questions"] == expected(demo_definition, reports)


def test_fifty_posts_of_one_id_store_one_row(app, created_survey, demo_definition, storage):
    (report,) = random_reports(demo_definition, 1, seed=5)

    def post(_: int):
        response = app.test_client().post(REPORTS, json=report)
        return response.status_code, response.get_json()

    answers = run_together(50, post)
    assert {status for status, _ in answers} == {201}
    assert all(body == answers[0][1] for _, body in answers)
    assert storage.count_reports("demo") == 1
    document = app.test_client().get("/api/v1/surveys/demo/results").get_json()
    assert document["n_reports"] == 1


def test_conflicting_bodies_race_one_wins(app, created_survey, demo_definition, storage):
    (report,) = random_reports(demo_definition, 1, seed=6)
    bodies = [dict(report, question="smoker", payload=p) for p in ("00", "01")]

    def post(index: int) -> int:
        return app.test_client().post(REPORTS, json=bodies[index % 2]).status_code

    statuses = run_together(20, post)
    assert set(statuses) == {201, 409}
    assert storage.count_reports("demo") == 1


def test_folds_race_with_writers(app, created_survey, demo_definition, storage, operator_headers):
    reports = random_reports(demo_definition, 600, seed=9)

    def work(index: int):
        client = app.test_client()
        if index % 2:
            mine = reports[(index // 2) * 100 : (index // 2 + 1) * 100]
            for start in range(0, 100, 4):  # one respondent (four questions) per request
                assert (
                    client.post(REPORTS, json={"reports": mine[start : start + 4]}).status_code
                    == 201
                )
        else:
            for _ in range(10):
                assert client.get("/api/v1/surveys/demo/results").status_code == 200

    run_together(12, work)
    document = app.test_client().get("/api/v1/surveys/demo/results").get_json()
    assert document["questions"] == expected(demo_definition, reports)
