"""Storage below the HTTP layer: migrations, token hashing, append-only log, folding, outages."""

from __future__ import annotations

import sqlite3

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.storage import hash_token, open_storage
from deniable.aggregator.storage.base import migrations
from deniable.errors import Conflict, NotFound
from deniable.survey import Survey
from deniable.wire import parse_submission

from .conftest import assert_problem, demo_survey_dict, random_reports

SURVEY = Survey.from_dict(demo_survey_dict())


def reports(count: int, seed: int = 0):
    return parse_submission({"reports": random_reports(SURVEY, count, seed)}, SURVEY,
                            max_batch=10_000)  # fmt: skip


def raw(storage, sql: str):
    """Run SQL on the backend's own connection (tests only)."""
    with storage._transaction() as connection:
        return connection.execute(sql).fetchall()


def test_migrations_are_versioned_and_idempotent(storage):
    latest = len(migrations(storage.backend))
    assert storage.schema_version() == latest
    assert storage.migrate() == latest
    assert raw(storage, "SELECT version FROM schema_version") == [
        (v,) for v in range(1, latest + 1)
    ]


def test_every_backend_has_the_same_migrations():
    assert [m.version for m in migrations("sqlite")] == [
        m.version for m in migrations("postgresql")
    ]


def test_tokens_are_stored_only_as_hashes(storage):
    token = storage.create_operator_token("ops")
    assert storage.verify_operator_token(token)
    assert not storage.verify_operator_token(token + "x")
    stored = raw(storage, "SELECT token_hash, label FROM operator_tokens")
    assert stored == [(hash_token(token), "ops")]
    assert token not in repr(stored)


def test_report_log_is_append_only(storage):
    storage.create_survey(SURVEY, results_public=True)
    storage.add_reports("demo", reports(3))
    for statement in ("UPDATE reports SET payload = '00'", "DELETE FROM reports"):
        with pytest.raises(Exception, match="append-only"):
            raw(storage, statement)
    assert storage.count_reports("demo") == 3


def test_add_reports_is_idempotent_and_all_or_nothing(storage):
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(10)
    assert storage.add_reports("demo", batch) == [r.id for r in batch]
    assert storage.add_reports("demo", batch) == [r.id for r in batch]
    assert storage.count_reports("demo") == 10
    fresh = reports(5, seed=1)
    forged = type(batch[0])(id=batch[0].id, question="smoker",
                            payload="00" if batch[0].payload != "00" else "01")  # fmt: skip
    with pytest.raises(Conflict):
        storage.add_reports("demo", [*fresh, forged])
    assert storage.count_reports("demo") == 10
    with pytest.raises(NotFound):
        storage.add_reports("nope", fresh)
    storage.close_survey("demo")
    with pytest.raises(Conflict):
        storage.add_reports("demo", fresh)


def test_fold_moves_pending_rows_into_statistics(storage):
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(50)
    storage.add_reports("demo", batch[:20])
    assert raw(storage, "SELECT COUNT(*) FROM pending") == [(20,)]
    storage.fold("demo", chunk=6)
    assert raw(storage, "SELECT COUNT(*) FROM pending") == [(0,)]
    storage.add_reports("demo", batch[20:])
    statistics = storage.fold("demo", chunk=1000)
    for question in SURVEY.questions:
        payloads = [r.payload for r in batch if r.question == question.id]
        assert statistics[question.id].n == len(payloads)
        assert statistics[question.id].statistics.tolist() == \
            question.statistics(payloads).tolist()  # fmt: skip
    assert storage.get_survey("demo").n_reports == 50


def test_export_is_the_whole_log_in_order(storage):
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(25)
    storage.add_reports("demo", batch[:10])
    storage.fold("demo")
    storage.add_reports("demo", batch[10:])
    exported = list(storage.export_reports("demo"))
    assert [r.id for r in exported] == [r.id for r in batch]
    assert all(r.received_at.endswith("Z") for r in exported)
    with pytest.raises(NotFound):
        storage.export_reports("nope")


def test_unreachable_postgresql_is_503(tmp_path):
    app = create_app({
        "DATABASE": "postgresql://postgres@127.0.0.1:1/none?connect_timeout=1",
        "SIGNING_KEY_PATH": str(tmp_path / "k.pem"), "MIGRATE": False, "POOL_TIMEOUT": 1,
    })  # fmt: skip
    try:
        response = app.test_client().get("/api/v1/health")
        body = assert_problem(response, 503, "storage-unavailable")
        assert "127.0.0.1" not in body["detail"]
        assert response.headers["Retry-After"] == "1"
    finally:
        app.extensions["deniable.storage"].close()


def test_unwritable_sqlite_is_503(tmp_path):
    database = tmp_path / "db.sqlite3"
    app = create_app({"DATABASE": str(database), "SIGNING_KEY_PATH": str(tmp_path / "k.pem")})
    storage = app.extensions["deniable.storage"]
    storage.create_survey(SURVEY, results_public=True)
    locker = sqlite3.connect(database, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # Why: hold the write lock past the busy timeout.
    try:
        storage.busy_timeout_ms = 50
        response = app.test_client().post("/api/v1/surveys/demo/reports",
                                          json=random_reports(SURVEY, 1)[0])  # fmt: skip
        assert_problem(response, 503, "storage-unavailable")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert storage.count_reports() == 0


def test_open_storage_picks_the_backend(tmp_path):
    assert open_storage({"DATABASE": str(tmp_path / "x.sqlite3")}).backend == "sqlite"
    assert open_storage({"DATABASE": "postgresql://nobody@127.0.0.1:1/x"}).backend == "postgresql"
