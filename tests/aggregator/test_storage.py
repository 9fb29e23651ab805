"""Storage below the HTTP layer: migrations, token hashing, append-only log, folding, outages."""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import replace

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.storage import hash_token, open_storage
from deniable.aggregator.storage.base import definition_text, initial_statistics, migrations
from deniable.errors import Conflict, NotFound, StorageError
from deniable.survey import Survey
from deniable.wire import parse_submission

from .conftest import assert_problem, demo_survey_dict, random_reports

SURVEY = Survey.from_dict(demo_survey_dict())


def reports(count: int, seed: int = 0):
    return parse_submission(
        {"reports": random_reports(SURVEY, count, seed)}, SURVEY, max_batch=10_000
    )


def raw(storage, sql: str):
    """Run SQL on the backend's own connection (tests only)."""
    with storage._transaction() as connection:
        return connection.execute(sql).fetchall()


def pending_count(storage) -> int:
    """Reports not yet folded: pending rows (SQLite) or the seqs of pending batches."""
    if storage.backend == "sqlite":  # the reports after each survey's watermark
        sql = (
            "SELECT COUNT(*) FROM reports r JOIN surveys s"
            " ON r.survey_id = s.id WHERE r.seq > s.folded_through"
        )
        return raw(storage, sql)[0][0]
    return raw(storage, "SELECT COALESCE(SUM(cardinality(seqs)), 0) FROM pending_batches")[0][0]


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


@pytest.mark.parametrize("field", ["question", "payload"])
def test_a_reused_id_is_told_from_a_retry_by_its_stored_body(storage, field):
    """No digest is stored (migration 0006): the stored question and payload decide."""
    storage.create_survey(SURVEY, results_public=True)
    first, other = reports(2, seed=4)
    storage.add_reports("demo", [first])
    assert storage.add_reports("demo", [first]) == [first.id]  # a retry: acknowledged again
    forged = replace(first, **{field: getattr(other, field)})
    assert forged != first
    with pytest.raises(Conflict, match="already used"):
        storage.add_reports("demo", [other, forged])
    assert storage.count_reports("demo") == 1


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
    forged = type(batch[0])(
        id=batch[0].id, question="smoker", payload="00" if batch[0].payload != "00" else "01"
    )
    with pytest.raises(Conflict):
        storage.add_reports("demo", [*fresh, forged])
    assert storage.count_reports("demo") == 10
    with pytest.raises(NotFound):
        storage.add_reports("nope", fresh)
    storage.close_survey("demo")
    with pytest.raises(Conflict):
        storage.add_reports("demo", fresh)


def test_add_reports_says_which_ids_it_stored_new(storage):
    """The ids returned equal the plain list; ``new`` holds only those this call stored (a
    relay batch counts a blob as a respondent by it: api/batches.py)."""
    storage.create_survey(SURVEY, results_public=True)
    batch, fresh = reports(6), reports(4, seed=1)
    first = storage.add_reports("demo", batch[:3])
    assert first.new == {r.id for r in batch[:3]}
    mixed = storage.add_reports("demo", [*batch[:2], *batch[3:]])  # two stored before
    assert mixed == [r.id for r in [*batch[:2], *batch[3:]]]
    assert mixed.new == {r.id for r in batch[3:]}
    assert storage.add_reports("demo", batch).new == frozenset()
    assert storage.count_reports("demo") == 6
    storage.close_survey("demo")  # a retry stored whole already is acknowledged, adding none
    assert storage.add_reports("demo", batch[:3]).new == frozenset()
    with pytest.raises(Conflict):
        storage.add_reports("demo", fresh)


def test_fold_moves_pending_rows_into_statistics(storage):
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(50)
    storage.add_reports("demo", batch[:20])
    assert pending_count(storage) == 20
    storage.fold("demo", chunk=6)
    assert pending_count(storage) == 0
    storage.add_reports("demo", batch[20:])
    statistics = storage.fold("demo", chunk=1000)
    for question in SURVEY.questions:
        payloads = [r.payload for r in batch if r.question == question.id]
        assert statistics[question.id].n == len(payloads)
        assert statistics[question.id].statistics.tolist() == question.statistics(payloads).tolist()
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
    app = create_app(
        {
            "DATABASE": "postgresql://postgres@127.0.0.1:1/none?connect_timeout=1",
            "SIGNING_KEY_PATH": str(tmp_path / "k.pem"),
            "MIGRATE": False,
            "POOL_TIMEOUT": 1,
        }
    )
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
        response = app.test_client().post(
            "/api/v1/surveys/demo/reports", json=random_reports(SURVEY, 1)[0]
        )
        assert_problem(response, 503, "storage-unavailable")
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert storage.count_reports() == 0


def test_open_storage_picks_the_backend(tmp_path):
    assert open_storage({"DATABASE": str(tmp_path / "x.sqlite3")}).backend == "sqlite"
    assert open_storage({"DATABASE": "postgresql://nobody@127.0.0.1:1/x"}).backend == "postgresql"


def expected_statistics(batch, question):
    payloads = [r.payload for r in batch if r.question == question.id]
    return len(payloads), question.statistics(payloads).tolist()


def test_ingest_folds_a_backlog_and_results_still_count_every_report(storage, monkeypatch):
    from deniable.aggregator.storage import base

    monkeypatch.setattr(base, "FOLD_BACKLOG", 7)
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(90, seed=4)
    pending = []
    for start in range(0, 90, 5):
        storage.add_reports("demo", batch[start : start + 5])
        pending.append(pending_count(storage))
    # Pending never grows past the backlog plus one batch: ingest folds the rest.
    assert max(pending) <= 7 + 5 and min(pending) < 7
    folded = raw(storage, "SELECT SUM(n) FROM question_statistics")[0][0]
    assert folded + pending[-1] == 90 and folded > 0
    statistics = storage.fold("demo")  # read-your-writes: the rest is folded now
    for question in SURVEY.questions:
        n, vector = expected_statistics(batch, question)
        assert (statistics[question.id].n, statistics[question.id].statistics.tolist()) == (
            n,
            vector,
        )
    assert pending_count(storage) == 0


def test_interleaved_surveys_fold_early_never_late(storage, monkeypatch):
    """The backlog bound counts other surveys' seqs too: a fold may come early, not late."""
    from deniable.aggregator.storage import base

    monkeypatch.setattr(base, "FOLD_BACKLOG", 7)
    other = Survey.from_dict({**demo_survey_dict(), "id": "other"})
    storage.create_survey(SURVEY, results_public=True)
    storage.create_survey(other, results_public=True)
    batch = reports(60, seed=14)
    others = parse_submission({"reports": random_reports(other, 60, 15)}, other, max_batch=1000)
    for start in range(0, 60, 5):
        storage.add_reports("demo", batch[start : start + 5])
        storage.add_reports("other", others[start : start + 5])
        for survey_id in ("demo", "other"):
            unfolded = storage.get_survey(survey_id).n_reports - sum(
                n
                for (n,) in raw(
                    storage, f"SELECT n FROM question_statistics WHERE survey_id = '{survey_id}'"
                )
            )
            assert unfolded <= 7 + 5  # never more than the backlog plus one batch unfolded
    assert storage.get_survey("demo").n_reports == storage.get_survey("other").n_reports == 60
    for survey, stored, survey_id in ((SURVEY, batch, "demo"), (other, others, "other")):
        statistics = storage.fold(survey_id)
        for question in survey.questions:
            assert statistics[question.id].n == expected_statistics(stored, question)[0]


def test_over_backlog_bounds_the_pending_count():
    from deniable.aggregator.storage.base import FOLD_BACKLOG, over_backlog

    assert not over_backlog(None, None) and not over_backlog(10, None)
    assert not over_backlog(FOLD_BACKLOG, 1) and over_backlog(FOLD_BACKLOG + 1, 1)


def test_pending_rows_keep_no_payload(storage):
    storage.create_survey(SURVEY, results_public=True)
    storage.add_reports("demo", reports(3))
    if storage.backend == "sqlite":  # a watermark per survey, no pending rows (0008)
        assert raw(storage, "SELECT name FROM sqlite_master WHERE name = 'pending'") == []
        assert raw(storage, "SELECT folded_through FROM surveys") == [(0,)]
        return
    with storage._transaction() as connection:
        cursor = connection.execute("SELECT * FROM pending_batches")
        columns = [column[0] for column in cursor.description]
        cursor.fetchall()
    assert sorted(columns) == ["first_seq", "id", "seqs", "survey_id"]  # one row per batch


def test_migration_0004_keeps_unfolded_reports(backend, database):
    """Reports pending under schema 3 (payload in pending) are folded after 0004."""
    storage = open_storage({"DATABASE": database})
    try:
        with storage._transaction() as connection:
            if backend == "sqlite":
                connection.execute(
                    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                    " name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            else:
                connection.execute(
                    "CREATE TABLE schema_version (version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
            for migration in migrations(backend)[:3]:
                if backend == "sqlite":
                    from deniable.service.storage import split_statements

                    for statement in split_statements(migration.sql):
                        connection.execute(statement)
                else:
                    connection.execute(migration.sql.encode("utf-8"))
                connection.execute(
                    "INSERT INTO schema_version (version, name, applied_at) "
                    "VALUES (%s, %s, %s)".replace("%s", "?" if backend == "sqlite" else "%s"),
                    (migration.version, migration.name, "2026-01-01T00:00:00Z"),
                )
        assert storage.schema_version() == 3
        batch = reports(12, seed=9)
        mark = "?" if backend == "sqlite" else "%s"
        with storage._transaction() as connection:
            # The survey as schema 3 stored it (today's create_survey knows later columns).
            connection.execute(
                "INSERT INTO surveys (id, definition, results_public, status, created_at)"
                f" VALUES ({', '.join([mark] * 5)})",
                (
                    "demo",
                    definition_text(SURVEY),
                    1 if backend == "sqlite" else True,
                    "open",
                    "2026-01-01T00:00:00Z",
                ),
            )
            for question_id, position, zeros in initial_statistics(SURVEY):
                connection.execute(
                    "INSERT INTO question_statistics (survey_id, question_id, position,"
                    f" statistics) VALUES ({', '.join([mark] * 4)})",
                    (
                        "demo",
                        question_id,
                        position,
                        json.dumps(zeros) if backend == "sqlite" else zeros,
                    ),
                )
            for report in batch:
                connection.execute(
                    "INSERT INTO reports (survey_id, report_id, question_id, payload, digest,"
                    f" received_at) VALUES ({', '.join([mark] * 6)})",
                    (
                        "demo",
                        report.id,
                        report.question,
                        report.payload,
                        report.digest,
                        "2026-01-01T00:00:00Z",
                    ),
                )
            connection.execute(
                "INSERT INTO pending (seq, survey_id, question_id, payload)"
                " SELECT seq, survey_id, question_id, payload FROM reports"
            )
        assert storage.migrate() == len(migrations(backend))
        statistics = storage.fold("demo")
        for question in SURVEY.questions:
            n, vector = expected_statistics(batch, question)
            assert statistics[question.id].n == n
            assert statistics[question.id].statistics.tolist() == vector
        # Ids stored before the later migrations (0006, 0007) still tell retries from reuse.
        assert storage.add_reports("demo", batch[:3]) == [r.id for r in batch[:3]]
        forged = replace(batch[0], payload=batch[1].payload, question=batch[1].question)
        with pytest.raises(Conflict):
            storage.add_reports("demo", [forged])
        fresh = reports(2, seed=10)
        storage.add_reports("demo", fresh)
        seqs = [seq for seq, _ in raw(storage, "SELECT seq, report_id FROM reports ORDER BY seq")]
        assert len(seqs) == len(batch) + len(fresh) and seqs == sorted(set(seqs))
    finally:
        storage.close()


def test_sqlite_report_ids_merge_into_the_id_table(storage, backend, monkeypatch):
    """Ids after the last merge are checked in memory, the rest in report_ids (0007),
    whose prefixes in memory spare a lookup for every new id."""
    if backend != "sqlite":
        pytest.skip("report_ids and report_id_merge are SQLite's (migration 0007)")
    from deniable.aggregator.storage import sqlite_ids

    monkeypatch.setattr(sqlite_ids, "RECENT_IDS_LIMIT", 5)
    storage.create_survey(SURVEY, results_public=True)
    batches = [reports(4, seed=seed) for seed in range(20, 25)]
    for batch in batches:
        storage.add_reports("demo", batch)
    ((merged,),) = raw(storage, "SELECT merged_through FROM report_id_merge")
    settled = raw(storage, "SELECT report_id, seq FROM report_ids")
    every = [r.id for batch in batches for r in batch]
    assert 0 < merged < len(every) and {seq for _, seq in settled} == set(range(1, merged + 1))
    for fresh in (False, True):  # this process's memory, then a process that has none
        if fresh:
            storage._ids = sqlite_ids.IdIndex()
        for batch in batches:  # retries hit either side: acknowledged, nothing stored twice
            assert storage.add_reports("demo", batch) == [r.id for r in batch]
            forged = replace(batch[0], payload=batch[1].payload, question=batch[1].question)
            with pytest.raises(Conflict):
                storage.add_reports("demo", [*reports(1, seed=99), forged])
    assert storage.count_reports("demo") == len(every)
    assert sum(s.n for s in storage.fold("demo").values()) == len(every)


def test_sqlite_id_index_follows_merges_made_by_another_process(
    storage, backend, database, monkeypatch
):
    """Two storages on one file (two workers) merge in turn; each still finds every id."""
    if backend != "sqlite":
        pytest.skip("the id index is SQLite's (migration 0007)")
    from deniable.aggregator.storage import sqlite_ids

    monkeypatch.setattr(sqlite_ids, "RECENT_IDS_LIMIT", 3)
    storage.create_survey(SURVEY, results_public=True)
    other = open_storage({"DATABASE": database})
    try:
        batches = [reports(2, seed=seed) for seed in range(40, 52)]
        for number, batch in enumerate(batches):
            (storage, other)[number % 2].add_reports("demo", batch)
        for worker in (storage, other):
            for batch in batches:
                assert worker.add_reports("demo", batch) == [r.id for r in batch]
                forged = replace(batch[0], payload=batch[1].payload, question=batch[1].question)
                with pytest.raises(Conflict):
                    worker.add_reports("demo", [forged])
        assert storage.count_reports("demo") == 2 * len(batches)
        assert len(storage._ids._settled) < len(batches)  # runs are combined as they come
    finally:
        other.close()


@pytest.mark.parametrize("limit", [1_000_000, 3])  # ids recent, or mostly merged (SQLite)
def test_one_report_id_in_two_surveys_is_two_reports(storage, monkeypatch, limit):
    """Report ids are unique per survey: a prefix or id found in one survey is not the other's."""
    from deniable.aggregator.storage import sqlite_ids

    monkeypatch.setattr(sqlite_ids, "RECENT_IDS_LIMIT", limit)
    other = Survey.from_dict({**demo_survey_dict(), "id": "other"})
    storage.create_survey(SURVEY, results_public=True)
    storage.create_survey(other, results_public=True)
    batch = reports(8, seed=16)
    storage.add_reports("demo", batch)
    # The same ids with other bodies: new in "other", not a reuse.
    twins = [
        replace(r, payload=batch[(i + 1) % 8].payload, question=batch[(i + 1) % 8].question)
        for i, r in enumerate(batch)
    ]
    assert storage.add_reports("other", twins) == [r.id for r in twins]
    assert storage.add_reports("other", twins) == [r.id for r in twins]  # a retry
    assert storage.add_reports("demo", batch) == [r.id for r in batch]  # a retry
    with pytest.raises(Conflict):
        storage.add_reports("demo", [twins[0]])  # demo holds that id with another body
    assert storage.count_reports("demo") == storage.count_reports("other") == 8


def test_sqlite_a_failed_ingest_leaves_no_id_behind(storage, backend, monkeypatch):
    """The in-memory id index never keeps an id whose batch rolled back."""
    if backend != "sqlite":
        pytest.skip("the recent ids are SQLite's (migration 0007)")
    storage.create_survey(SURVEY, results_public=True)
    storage.add_reports("demo", reports(3, seed=30))
    batch = reports(4, seed=31)

    def fail(*args, **kwargs):
        raise StorageError("disk on fire")

    with monkeypatch.context() as patch:
        patch.setattr(type(storage), "_backlog", staticmethod(fail))
        with pytest.raises(StorageError):
            storage.add_reports("demo", batch)
    assert storage.count_reports("demo") == 3
    forged = replace(batch[0], payload=batch[1].payload, question=batch[1].question)
    assert storage.add_reports("demo", [forged]) == [forged.id]  # the id was never stored
    assert storage.count_reports("demo") == 4


def test_postgres_ingest_never_waits_for_a_fold_in_progress(storage, backend, monkeypatch):
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time; its backlog fold is tested below")

    from deniable.aggregator.storage import base

    monkeypatch.setattr(base, "FOLD_BACKLOG", 2)
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(20, seed=5)
    storage.add_reports("demo", batch[:5])
    with storage._get_pool().connection() as other, other.transaction():
        # Another fold holds the statistics rows: ingest must neither wait nor fail.
        other.execute("SELECT 1 FROM question_statistics WHERE survey_id = 'demo' FOR UPDATE")
        storage.add_reports("demo", batch[5:10])
        assert pending_count(storage) == 10
    storage.add_reports("demo", batch[10:])  # the lock is free again: the backlog is folded
    assert pending_count(storage) == 0
    statistics = storage.fold("demo")
    assert sum(s.n for s in statistics.values()) == 20


def test_postgres_ingest_waiting_on_a_close_stores_nothing(storage, backend):
    """The one-statement ingest locks the survey row first and re-reads it after a close."""
    if backend != "postgresql":
        pytest.skip("SQLite writers hold the database lock one at a time")
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(10, seed=11)
    outcome = []

    def ingest() -> None:
        try:
            storage.add_reports("demo", batch)
            outcome.append("stored")
        except Conflict:
            outcome.append("refused")

    with storage._get_pool().connection() as closer, closer.transaction():
        closer.execute("UPDATE surveys SET status = 'closed', closed_at = now() WHERE id = 'demo'")
        writer = threading.Thread(target=ingest)
        writer.start()
        writer.join(0.5)
        assert writer.is_alive()  # it waits for the close to commit...
    writer.join(10)
    assert outcome == ["refused"]  # ...then sees the survey closed
    assert storage.count_reports("demo") == 0 and pending_count(storage) == 0


def test_postgres_a_reused_id_in_a_new_batch_is_checked(storage, backend):
    """A batch holding one stored id takes the checked path: the rest stored, once."""
    if backend != "postgresql":
        pytest.skip("SQLite checks ids in memory (test_sqlite_ids.py)")
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(30, seed=12)
    storage.add_reports("demo", batch[:10])
    assert storage.add_reports("demo", batch[5:30]) == [r.id for r in batch[5:30]]
    assert storage.count_reports("demo") == 30 and pending_count(storage) == 30
    forged = replace(batch[29], payload=batch[28].payload, question=batch[28].question)
    with pytest.raises(Conflict):
        storage.add_reports("demo", [*reports(3, seed=13), forged])
    assert storage.count_reports("demo") == 30
    assert sum(s.n for s in storage.fold("demo").values()) == 30


def test_sqlite_a_backlog_fold_that_loses_a_race_counts_nothing_twice(
    storage, backend, monkeypatch
):
    """The backlog fold counts outside the write lock; a fold that ran meanwhile wins."""
    if backend != "sqlite":
        pytest.skip("PostgreSQL's backlog fold is tested above")
    from deniable.aggregator.storage import base, sqlite

    monkeypatch.setattr(base, "FOLD_BACKLOG", 2)
    storage.create_survey(SURVEY, results_public=True)
    batch = reports(20, seed=6)
    storage.add_reports("demo", batch[:2])
    counting = sqlite.fold_into
    raced = []

    def fold_into_while_another_fold_runs(*args, **kwargs):
        if not raced:
            raced.append(True)
            storage.add_reports("demo", batch[6:8])  # more reports arrive,
            storage.fold("demo")  # and a results call folds everything meanwhile
        return counting(*args, **kwargs)

    monkeypatch.setattr(sqlite, "fold_into", fold_into_while_another_fold_runs)
    storage.add_reports("demo", batch[2:6])
    assert raced and pending_count(storage) == 0
    assert sum(s.n for s in storage.fold("demo").values()) == 8  # none lost, none twice
    storage.add_reports("demo", batch[8:])  # no race now: the backlog fold writes
    assert pending_count(storage) == 0
    assert sum(s.n for s in storage.fold("demo").values()) == 20
