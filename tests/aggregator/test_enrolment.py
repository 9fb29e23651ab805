"""Enrolment tokens (Sybil control), on both backends.

A survey created with ``require_enrolment`` admits one batch per one-time token
(header ``X-Deniable-Enrolment``).  Tokens are stored only as SHA-256 hashes and
spent in the transaction that stores the batch: a refused batch stores nothing
and spends nothing; the batch that spent a token is acknowledged again on retry.
"""

from __future__ import annotations

import sqlite3
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from deniable.aggregator import cli
from deniable.aggregator.storage import hash_token, open_storage
from deniable.aggregator.storage.base import MIGRATIONS, migrations
from deniable.errors import Conflict, InvalidParameter, NotFound
from deniable.survey import Survey

from .conftest import assert_problem, demo_survey_dict, random_reports

HEADER = "X-Deniable-Enrolment"
SURVEY_ID = "gated"
REPORTS = f"/api/v1/surveys/{SURVEY_ID}/reports"


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    # Why: the races below must reach the database, not the per-token bucket.
    return {**app_config, "RATE_LIMIT_PER_TOKEN": 0}


@pytest.fixture
def gated(client, operator_headers) -> dict[str, Any]:
    response = client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict(SURVEY_ID), "require_enrolment": True},
        headers=operator_headers,
    )
    assert response.status_code == 201, response.data
    return response.get_json()


def batch(count: int = 4, seed: int = 0) -> dict[str, Any]:
    return {"reports": random_reports(demo_survey_dict(SURVEY_ID), count, seed)}


def post(client, body: Any, token: str | None = None, path: str = REPORTS):
    headers = {HEADER: token} if token is not None else {}
    return client.post(path, json=body, headers=headers)


def token_rows(storage) -> list[tuple]:
    with storage._transaction() as connection:
        return connection.execute(
            "SELECT token_hash, survey_id, batch_digest FROM enrolment_tokens ORDER BY token_hash"
        ).fetchall()


# -- the survey flag ------------------------------------------------------------------------


def test_flag_is_stored_and_shown(client, gated, created_survey):
    assert gated["require_enrolment"] is True
    assert created_survey["require_enrolment"] is False
    assert client.get(f"/api/v1/surveys/{SURVEY_ID}").get_json()["require_enrolment"] is True
    summaries = {s["id"]: s for s in client.get("/api/v1/surveys").get_json()["surveys"]}
    assert summaries[SURVEY_ID]["require_enrolment"] is True
    assert summaries["demo"]["require_enrolment"] is False


@pytest.mark.parametrize("value", ["yes", 1, None, []])
def test_flag_must_be_a_boolean(client, operator_headers, value):
    response = client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict("x"), "require_enrolment": value},
        headers=operator_headers,
    )
    assert_problem(response, 422, "invalid-survey")


# -- issuing ------------------------------------------------------------------------------------


def test_tokens_are_stored_only_as_hashes(storage, gated):
    tokens = storage.issue_enrolment_tokens(SURVEY_ID, 5)
    assert len(set(tokens)) == 5 and all(t.startswith("dne_") and len(t) == 47 for t in tokens)
    rows = token_rows(storage)
    assert sorted(r[0] for r in rows) == sorted(hash_token(t) for t in tokens)
    assert all(r[1] == SURVEY_ID and r[2] is None for r in rows)
    assert not any(t in repr(rows) for t in tokens)
    assert storage.enrolment_token_counts(SURVEY_ID) == (5, 0)


def test_issuing_is_refused_where_tokens_make_no_sense(
    storage, client, gated, created_survey, operator_headers
):
    with pytest.raises(NotFound):
        storage.issue_enrolment_tokens("nope", 1)
    with pytest.raises(Conflict, match="does not require enrolment"):
        storage.issue_enrolment_tokens("demo", 1)
    for count in (0, -1, 1_000_001, True):
        with pytest.raises(InvalidParameter):
            storage.issue_enrolment_tokens(SURVEY_ID, count)
    client.post(f"/api/v1/surveys/{SURVEY_ID}/close", headers=operator_headers)
    with pytest.raises(Conflict, match="closed"):
        storage.issue_enrolment_tokens(SURVEY_ID, 1)
    assert token_rows(storage) == []


# -- submitting ---------------------------------------------------------------------------------


def test_a_token_admits_one_batch(client, storage, gated):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    response = post(client, batch(), token)
    assert response.status_code == 201, response.data
    assert storage.count_reports(SURVEY_ID) == 4
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 1)
    second = post(client, batch(seed=1), token)
    assert "spent" in assert_problem(second, 403, "forbidden")["detail"]
    assert storage.count_reports(SURVEY_ID) == 4


def test_a_single_report_submission_works_too(client, storage, gated):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    report = batch(1)["reports"][0]
    assert post(client, report, token).status_code == 201
    assert storage.count_reports(SURVEY_ID) == 1


def test_missing_token_is_401_and_nothing_is_stored(client, storage, gated):
    storage.issue_enrolment_tokens(SURVEY_ID, 1)
    for headers in ({}, {HEADER: ""}, {HEADER: "   "}):
        response = client.post(REPORTS, json=batch(), headers=headers)
        assert_problem(response, 401, "unauthorized")
        assert response.headers["WWW-Authenticate"].startswith("Enrolment")
    assert storage.count_reports() == 0
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 0)


@pytest.mark.parametrize(
    "forged",
    [
        "dne_" + "A" * 43,  # well-formed, never issued
        "dne_short",
        "dnb_" + "A" * 43,  # an operator token's shape
        "x" * 5000,
        "dne_" + "A" * 42 + "!",
    ],
)
def test_forged_token_is_403_and_nothing_is_stored(client, storage, gated, forged):
    storage.issue_enrolment_tokens(SURVEY_ID, 1)
    assert_problem(post(client, batch(), forged), 403, "forbidden")
    assert storage.count_reports() == 0
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 0)


def test_operator_token_is_not_an_enrolment_token(client, storage, gated, operator_token):
    assert_problem(post(client, batch(), operator_token), 403, "forbidden")
    assert storage.count_reports() == 0


def test_token_of_another_survey_is_403(client, storage, operator_headers, gated):
    other = client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict("other"), "require_enrolment": True},
        headers=operator_headers,
    )
    assert other.status_code == 201
    (foreign,) = storage.issue_enrolment_tokens("other", 1)
    assert_problem(post(client, batch(), foreign), 403, "forbidden")
    assert storage.count_reports() == 0
    assert storage.enrolment_token_counts("other") == (1, 0)


def test_open_surveys_ignore_the_header(client, storage, created_survey):
    body = {"reports": random_reports(demo_survey_dict(), 4)}
    response = client.post(
        "/api/v1/surveys/demo/reports", json=body, headers={HEADER: "dne_" + "A" * 43}
    )
    assert response.status_code == 201
    assert storage.count_reports("demo") == 4


def test_refused_batches_do_not_spend_the_token(client, storage, gated):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    invalid = batch()
    invalid["reports"][0]["payload"] = "zz"
    assert_problem(post(client, invalid, token), 422)
    assert_problem(post(client, {"reports": []}, token), 422)
    response = client.post(
        REPORTS, data=b"{not json", content_type="application/json", headers={HEADER: token}
    )
    assert_problem(response, 400)
    # A conflict inside the storing transaction rolls the spend back too.
    (other,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    first = batch(seed=5)
    assert post(client, first, other).status_code == 201
    reused = batch(seed=6)
    reused["reports"][0]["id"] = first["reports"][0]["id"]
    assert_problem(post(client, reused, token), 409, "conflict")
    assert storage.count_reports() == 4
    assert storage.enrolment_token_counts(SURVEY_ID) == (2, 1)
    # The token is still good for one batch.
    assert post(client, batch(seed=7), token).status_code == 201
    assert storage.enrolment_token_counts(SURVEY_ID) == (2, 2)


def test_retry_with_the_spent_token_gets_the_same_acknowledgement(client, storage, gated):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    body = batch()
    first = post(client, body, token)
    assert first.status_code == 201
    for _ in range(3):
        again = post(client, body, token)
        assert again.status_code == 201
        assert again.get_json() == first.get_json()
    assert storage.count_reports() == 4
    # Same token, different batch (even a sub-batch or a reordering): 403.
    for changed in ({"reports": body["reports"][:3]}, {"reports": body["reports"][::-1]}):
        assert_problem(post(client, changed, token), 403, "forbidden")
    assert storage.count_reports() == 4


def test_closed_survey_is_409_and_keeps_the_token(client, storage, gated, operator_headers):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    client.post(f"/api/v1/surveys/{SURVEY_ID}/close", headers=operator_headers)
    assert_problem(post(client, batch(), token), 409, "survey-closed")
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 0)


def test_a_stored_batch_resent_with_a_fresh_token_spends_nothing(client, storage, gated):
    """A device whose acknowledgement was lost, given another token, resends the batch."""
    first, fresh = storage.issue_enrolment_tokens(SURVEY_ID, 2)
    body = batch()
    stored = post(client, body, first)
    assert stored.status_code == 201
    again = post(client, body, fresh)
    assert again.status_code == 201 and again.get_json() == stored.get_json()
    assert storage.count_reports() == 4
    assert storage.enrolment_token_counts(SURVEY_ID) == (2, 1)  # ``fresh`` is still unspent
    assert post(client, batch(seed=9), fresh).status_code == 201
    assert storage.enrolment_token_counts(SURVEY_ID) == (2, 2)


def test_a_stored_batch_is_acknowledged_after_the_survey_closes(
    client, storage, gated, operator_headers
):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    body = batch()
    stored = post(client, body, token)
    client.post(f"/api/v1/surveys/{SURVEY_ID}/close", headers=operator_headers)
    again = post(client, body, token)
    assert again.status_code == 201 and again.get_json() == stored.get_json()
    assert_problem(client.post(REPORTS, json=body), 401)  # without its token: not told
    assert_problem(post(client, batch(seed=3), token), 409, "survey-closed")
    assert storage.count_reports() == 4


# -- races -----------------------------------------------------------------------------------------


def race(app, bodies: list[Any], token: str, threads: int = 50) -> list[int]:
    """POST every body with ``token`` from ``threads`` threads, released together."""
    start = threading.Barrier(threads)
    local = threading.local()

    def send(body: Any) -> int:
        if not hasattr(local, "client"):
            local.client = app.test_client()
            start.wait()
        return local.client.post(REPORTS, json=body, headers={HEADER: token}).status_code

    with ThreadPoolExecutor(threads) as pool:
        # Why chunks of one: every worker thread takes a request, so the barrier fills.
        return list(pool.map(send, bodies, chunksize=1))


def test_a_thousand_racing_submissions_with_one_token_store_one(app, storage, gated):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    reports = random_reports(demo_survey_dict(SURVEY_ID), 1000, seed=11)
    statuses = race(app, reports, token)
    assert statuses.count(201) == 1, sorted(set(statuses))
    assert statuses.count(403) == 999, sorted(set(statuses))
    assert storage.count_reports() == 1
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 1)
    (exported,) = list(storage.export_reports(SURVEY_ID))
    winner = reports[statuses.index(201)]
    assert exported.id == winner["id"] and exported.payload == winner["payload"]


def test_racing_retries_of_one_batch_all_get_the_acknowledgement(app, storage, gated):
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    body = batch(4, seed=12)
    statuses = race(app, [body] * 200, token)
    assert statuses == [201] * 200
    assert storage.count_reports() == 4


# -- the command line ------------------------------------------------------------------------------


def run(capsys, database: str, key: str, *argv: str) -> tuple[int, str, str]:
    status = cli.main(["--database", database, "--signing-key", key, *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_token_issue(capsys, tmp_path, app_config, client, storage, gated, created_survey):
    database, key = app_config["DATABASE"], app_config["SIGNING_KEY_PATH"]
    status, out, err = run(capsys, database, key, "token", "issue", SURVEY_ID, "--count", "3")
    assert status == 0, err
    printed = out.split()
    assert len(printed) == 3 and len(set(printed)) == 3 and "issued 3" in err
    target = tmp_path / "tokens.txt"
    status, out, err = run(
        capsys, database, key, "token", "issue", SURVEY_ID, "--count", "25", "--output", str(target)
    )
    assert status == 0 and out == ""
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    written = target.read_text().splitlines()
    assert len(written) == 25 and not set(written) & set(printed)
    assert storage.enrolment_token_counts(SURVEY_ID) == (28, 0)
    # Issued tokens work over HTTP, once each.
    assert post(client, batch(seed=1), written[0]).status_code == 201
    assert post(client, batch(seed=2), printed[0]).status_code == 201
    assert_problem(post(client, batch(seed=3), written[0]), 403)


@pytest.mark.parametrize(
    ("argv", "message", "expected"),
    [
        (["nope", "--count", "2"], "no survey 'nope'", 3),
        (["demo", "--count", "2"], "does not require enrolment", 4),
        ([SURVEY_ID, "--count", "2000000"], "must be in [1, 1,000,000]", 2),
    ],
)
def test_cli_token_issue_refusals(
    capsys, tmp_path, app_config, storage, gated, created_survey, argv, message, expected
):
    database, key = app_config["DATABASE"], app_config["SIGNING_KEY_PATH"]
    target = tmp_path / "tokens.txt"
    status, out, err = run(capsys, database, key, "token", "issue", *argv, "-o", str(target))
    assert status == expected and out == ""
    assert (
        err.count("\n") == 1 and err.startswith("deniable-aggregator: error: ") and message in err
    )
    assert not target.exists()  # no half-written or empty token file is left behind
    assert token_rows(storage) == []


def test_cli_token_issue_usage_and_existing_file(capsys, tmp_path, app_config, gated):
    database, key = app_config["DATABASE"], app_config["SIGNING_KEY_PATH"]
    with pytest.raises(SystemExit) as stop:
        run(capsys, database, key, "token", "issue", SURVEY_ID, "--count", "0")
    assert stop.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1
    target = tmp_path / "tokens.txt"
    target.write_text("earlier tokens\n")
    status, _, err = run(
        capsys, database, key, "token", "issue", SURVEY_ID, "--count", "1", "-o", str(target)
    )
    assert status == 2 and "refusing to overwrite" in err and err.count("\n") == 1
    assert target.read_text() == "earlier tokens\n"


def test_cli_create_survey_with_enrolment(capsys, tmp_path, app_config, storage):
    database, key = app_config["DATABASE"], app_config["SIGNING_KEY_PATH"]
    path = tmp_path / "survey.json"
    path.write_text(Survey.from_dict(demo_survey_dict("cli-gated")).canonical_bytes().decode())
    status, out, err = run(capsys, database, key, "create-survey", "--require-enrolment", str(path))
    assert status == 0, err
    assert "enrolment tokens required" in out
    assert storage.get_survey("cli-gated").require_enrolment is True


# -- migration 0002 on an existing database --------------------------------------------------------


def test_migration_0002_upgrades_a_version_1_sqlite_database(tmp_path):
    path = tmp_path / "old.sqlite3"
    connection = sqlite3.connect(path)
    connection.executescript((MIGRATIONS / "sqlite" / "0001_initial.sql").read_text())
    connection.executescript(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
        " applied_at TEXT NOT NULL);"
        "INSERT INTO schema_version VALUES (1, 'initial', '2026-01-01T00:00:00Z');"
    )
    survey = Survey.from_dict(demo_survey_dict("old"))
    connection.execute(
        "INSERT INTO surveys (id, definition, results_public, status, created_at)"
        " VALUES (?, ?, 1, 'open', '2026-01-01T00:00:00Z')",
        ("old", survey.canonical_bytes().decode()),
    )
    connection.commit()
    connection.close()
    path.chmod(0o600)  # as the server creates it (a readable database is refused)
    storage = open_storage({"DATABASE": str(path)})
    assert storage.schema_version() == 1
    assert storage.migrate() == len(migrations("sqlite")) >= 2
    record = storage.get_survey("old")
    assert record.require_enrolment is False and record.n_reports == 0


def test_one_token_admits_one_respondent_not_a_thousand(client, gated, storage, operator_headers):
    """Regression: one token stored 1,000 'yes' reports for one question."""
    (token,) = storage.issue_enrolment_tokens(SURVEY_ID, 1)
    sybil = [dict(r, question="smoker", payload="01") for r in batch(1000)["reports"]]
    assert_problem(post(client, {"reports": sybil}, token), 422, "invalid-report")
    assert_problem(post(client, {"reports": sybil[:2]}, token), 422, "invalid-report")
    assert storage.count_reports(SURVEY_ID) == 0
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 0)
    assert post(client, batch(4), token).status_code == 201
    # The operator's bulk route (a relay or import) needs no enrolment token.
    bulk = post(client, batch(40, seed=1), path=REPORTS + "/bulk")
    assert_problem(bulk, 401)
    response = client.post(REPORTS + "/bulk", json=batch(40, seed=1), headers=operator_headers)
    assert response.status_code == 201
    assert storage.count_reports(SURVEY_ID) == 44
    assert storage.enrolment_token_counts(SURVEY_ID) == (1, 1)
