"""The relay in process: settings, storage rules, rate limits, command-line errors.

The end-to-end behaviour against a real aggregator is in test_relay.py; here the
relay's own pieces are checked on their own (real SQLite, real Redis when
``DENIABLE_TEST_REDIS_URL`` is set), fast.
"""

from __future__ import annotations

import base64
import json
import os
import time

import pytest

from deniable.relay import create_app, settings
from deniable.relay.cli import main
from deniable.relay.storage import RelayedSurvey, SqliteRelayStorage, open_storage
from deniable.relay.storage.base import MIGRATIONS
from deniable.survey import Survey
from tests.relay.conftest import BACKENDS, _databases

RELAY_URL = "http://127.0.0.1:9"
DEFINITION = {
    "format": "deniable.survey/2",
    "id": "s",
    "title": "S",
    "questions": [
        {"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1.0},
        {"id": "b", "type": "yes_no", "text": "B?", "epsilon": 1.0},
    ],
    "relay": {"url": RELAY_URL, "min_batch": 3, "shuffle_unit": "question"},
}


def stored_survey(min_batch: int = 3) -> RelayedSurvey:
    survey = Survey.from_dict(DEFINITION).upgraded()
    document = {"id": "s", "status": "open", "definition": survey.to_dict()}
    return RelayedSurvey(
        survey_id="s",
        aggregator_url="http://127.0.0.1:1",
        credential="dnr_x",
        signing_key="",
        key_sequence=None,
        document=json.dumps(document),
        status="open",
        min_batch=min_batch,
        shuffle_unit="question",
        require_enrolment=False,
        refreshed_at="",
        encryption_keys=("abc",),
    )


@pytest.fixture(params=BACKENDS)
def storage(request, tmp_path):
    """The relay's storage on SQLite, and on PostgreSQL in a schema of its own."""
    databases = _databases(request.param, tmp_path)
    _, database = next(databases)
    store = open_storage({"DATABASE": database})
    store.migrate()
    store.add_survey(stored_survey(), ["a", "b"])
    yield store
    store.close()
    next(databases, None)


def blob(seed: int) -> bytes:
    return seed.to_bytes(4, "big") * 20


def test_settings_are_read_under_the_relays_own_prefix():
    values = settings.load(
        {},
        {
            "DENIABLE_RELAY_WINDOW_SECONDS": "7",
            "DENIABLE_DATABASE": "x.db",
            "DENIABLE_RELAY_HOME": "/tmp/r",
        },
    )
    assert values["WINDOW_SECONDS"] == 7.0
    assert values["DATABASE"] == "/tmp/r/relay.sqlite3"  # the aggregator's variable is ignored
    assert values["RATE_LIMIT_KEY_PREFIX"] == "deniable-relay"
    with pytest.raises(settings.SettingsError, match="PUBLIC_URL"):
        settings.load({"PUBLIC_URL": "ftp://relay"})


def test_a_batch_needs_min_batch_units_and_the_window(storage):
    for seed in range(2):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    assert storage.form_batches("s", window=0) == []  # 2 < min_batch 3
    storage.hold("s", [("a", blob(2)), ("b", blob(3))], enrolment_token=None, key_id="abc")
    same = storage.hold("s", [("a", blob(2))], enrolment_token=None, key_id="abc")
    assert same == 0  # the same bytes
    assert storage.form_batches("s", window=3600) == []  # the window has not passed
    formed = storage.form_batches("s", window=0)
    assert len(formed) == 1  # unit a has 3; unit b has 1
    (batch,) = storage.lease_batches(lease=60)
    assert sorted(batch.sealed) == sorted([blob(0), blob(1), blob(2)])
    assert storage.lease_batches(lease=60) == []  # leased to one sender
    storage.acknowledged(batch)
    assert storage.held_counts("s") == {"b": (1, 0)}
    assert storage.list_surveys()[0].smallest_batch == 3


def test_a_batch_holds_units_sealed_to_one_encryption_key_only(storage):
    """An aggregator that hands one device an encryption key of its own (validly signed:
    it signs what it likes) would find that device's report in a mixed batch as the one
    blob its key opens.  Units sealed to each key batch apart, each group min_batch."""
    for seed in range(3):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    storage.hold("s", [("a", blob(9))], enrolment_token=None, key_id="tagged")
    (formed,) = storage.form_batches("s", window=0)
    (batch,) = storage.lease_batches(lease=60)
    assert batch.batch_id == formed and sorted(batch.sealed) == [blob(0), blob(1), blob(2)]
    assert storage.held_counts("s") == {"a": (1, 3)}  # the tagged unit waits alone
    storage.acknowledged(batch)
    for seed in range(10, 12):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="tagged")
    assert len(storage.form_batches("s", window=0)) == 1  # three under "tagged" now
    (batch,) = storage.lease_batches(lease=60)
    assert sorted(batch.sealed) == sorted([blob(9), blob(10), blob(11)])


def test_a_backlog_larger_than_one_request_is_split_into_batches_of_min_batch_or_more(storage):
    """The aggregator refuses a body over its MAX_RELAY_BATCH_BYTES (413) every time, so a
    window's backlog past it would never be delivered: it goes out as several batches,
    each of at least min_batch units and, where min_batch allows, within the bound."""
    from deniable.relay import upstream

    for seed in range(10):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    most = 200 + 4 * 110  # room for four 80-byte units (110 characters each, encoded)
    formed = storage.form_batches("s", window=0, max_bytes=most)
    batches = storage.lease_batches(lease=60)
    assert len(formed) == len(batches) == 3
    assert sorted(len(b.sealed) for b in batches) == [3, 3, 4]  # none below min_batch 3
    assert sorted(s for b in batches for s in b.sealed) == sorted(blob(n) for n in range(10))
    assert all(len(upstream.batch_body("a", b.sealed)) <= most for b in batches)
    for seed in range(10, 13):  # min_batch comes first: a batch may exceed the bound for it
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    assert len(storage.form_batches("s", window=0, max_bytes=1)) == 1


def test_no_batch_holds_more_units_than_an_aggregator_takes(storage, monkeypatch):
    """The aggregator refuses a batch of more than MAX_BATCH_UNITS blobs (413) every time:
    a backlog goes out in batches of at most that many, each of at least min_batch; where
    no split fits both, full batches go and the rest waits for the next window."""
    from deniable.relay.storage import batches as batch_store

    monkeypatch.setattr(batch_store, "MAX_BATCH_UNITS", 4)
    for seed in range(10):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    assert len(storage.form_batches("s", window=0)) == 3
    assert sorted(len(b.sealed) for b in storage.lease_batches(lease=60)) == [3, 3, 4]
    monkeypatch.setattr(batch_store, "MAX_BATCH_UNITS", 3)  # min_batch 3: 7 fit no split
    for seed in range(10, 17):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    assert len(storage.form_batches("s", window=0)) == 2
    leased = storage.lease_batches(lease=60)
    assert sorted(len(b.sealed) for b in leased) == [3, 3]
    assert storage.held_counts("s") == {"a": (1, 16)}  # one waits for more company


def test_the_held_rows_carry_no_arrival_order(storage):
    for seed in range(50):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None, key_id="abc")
    stored = [sealed for _, sealed in storage.held_rows("s")]
    assert sorted(stored) == sorted(blob(s) for s in range(50))
    assert stored != [blob(s) for s in range(50)]  # keyed by a hash, not by arrival


def _app(tmp_path, storage_url: str, prefix: str):
    database = tmp_path / "relay.sqlite3"
    if not database.exists():
        store = SqliteRelayStorage(str(database))
        store.migrate()
        store.add_survey(stored_survey(), ["a", "b"])
        store.close()
    return create_app(
        {
            "DATABASE": str(database),
            "TESTING": True,
            "RATE_LIMIT_EXEMPT": "",
            "RATE_LIMIT_PER_ADDRESS": "2/minute",
            "RATE_LIMIT_STORAGE": storage_url,
            "RATE_LIMIT_KEY_PREFIX": prefix,
        }
    )


def _body() -> dict:
    from deniable import sealing

    survey = Survey.from_dict(DEFINITION)
    units = []
    for unit in ("a", "b"):  # one unit per question, in the survey's order
        length = sealing.sealed_length(sealing.unit_size(survey, unit))
        sealed = base64.urlsafe_b64encode(os.urandom(length)).decode().rstrip("=")
        units.append({"unit": unit, "sealed": sealed})
    return {"format": "deniable.sealed/1", "key_id": "abc", "units": units}


@pytest.mark.parametrize("shared", [False, True], ids=["memory", "redis"])
def test_rate_limits_per_address_are_the_aggregators_and_may_be_shared(tmp_path, shared):
    url = "memory://"
    if shared:
        url = os.environ.get("DENIABLE_TEST_REDIS_URL", "")
        if not url:
            pytest.skip("DENIABLE_TEST_REDIS_URL is unset")
    prefix = f"relay-test-{time.time_ns()}"
    first = _app(tmp_path, url, prefix).test_client()
    assert first.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202
    assert first.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202
    if shared:  # another process of this relay (its database, the Redis): refused there
        first = _app(tmp_path, url, prefix).test_client()
    refused = first.post("/api/v1/surveys/s/sealed", json=_body())
    assert refused.status_code == 429 and refused.headers["Retry-After"]
    assert refused.headers["Content-Type"] == "application/problem+json"
    if shared:  # Redis holds the count under a pseudonym, never the address
        import redis

        keys = [k.decode() for k in redis.Redis.from_url(url).keys(f"*{prefix}*")]
        assert keys and not any("127.0.0.1" in k for k in keys)


def test_add_survey_needs_a_public_url_and_says_so_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DENIABLE_RELAY_PUBLIC_URL", raising=False)
    credential = tmp_path / "credential"
    credential.write_text("dnr_x")
    assert main(["--data-dir", str(tmp_path), "init"]) == 0
    assert "PUBLIC_URL" in capsys.readouterr().err  # init reminds
    status = main(
        [
            "--data-dir",
            str(tmp_path),
            "add-survey",
            "http://127.0.0.1:1",
            "s",
            "--credential-file",
            str(credential),
        ]
    )
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "PUBLIC_URL" in err
    assert main(["--data-dir", str(tmp_path / "none"), "status"]) == 3


@pytest.mark.slow
def test_a_large_batch_is_opened_by_several_processes_with_the_same_outcome(tmp_path, monkeypatch):
    """The parallel opening path (processes) drops and stores exactly as the serial one."""
    import secrets
    import uuid

    from deniable import sealing
    from deniable.aggregator import create_app as aggregator_app
    from deniable.aggregator.api import opening
    from deniable.aggregator.signing import current_key
    from deniable.aggregator.storage import current_storage

    monkeypatch.setattr(opening, "PARALLEL_FROM", 10)
    monkeypatch.setattr(opening, "DECRYPT_PROCESSES", 2)
    # A body limit far below the batch's: only the relay's credential lifts it, to
    # MAX_RELAY_BATCH_BYTES.
    app = aggregator_app({"HOME": str(tmp_path), "TESTING": True, "MAX_BODY_BYTES": 2048})
    survey = Survey.from_dict(DEFINITION).upgraded()
    with app.app_context():
        current_storage().create_survey(survey, results_public=True)
        credential = current_storage().relay.create_credential(RELAY_URL)
        public = current_key().encryption.public_bytes
    question = survey.question("a")
    size = sealing.unit_size(survey, "a")
    blobs = [
        sealing.seal(
            public,
            survey_id="s",
            unit="a",
            size=size,
            plaintext=sealing.unit_body(
                [{"id": str(uuid.uuid4()), "question": "a", "payload": question.randomize(True)}],
                "a",
            ),
        )
        for _ in range(40)
    ]
    blobs[5] = blobs[5][:-1] + bytes([blobs[5][-1] ^ 1])
    body = {
        "format": "deniable.batch/1",
        "unit": "a",
        "sealed": [base64.urlsafe_b64encode(b).rstrip(b"=").decode() for b in blobs],
    }
    response = app.test_client().put(
        f"/api/v1/surveys/s/batches/{secrets.token_hex(16)}",
        json=body,
        headers={"Authorization": f"Bearer {credential}"},
    )
    assert response.status_code == 201, response.json
    assert (response.json["stored"], response.json["dropped"]) == (39, 1)
    assert len(json.dumps(body)) > 2048  # taken although over MAX_BODY_BYTES


def test_concurrent_submissions_commit_together_and_a_refusal_stays_alone(storage):
    """Group commit: many holds in one transaction, each in its own savepoint."""
    from concurrent.futures import ThreadPoolExecutor

    from deniable.errors import Forbidden
    from deniable.relay.storage import token_digest

    storage.add_enrolment_digests("s", [token_digest("good")])

    def hold(seed: int) -> object:
        token = {0: "forged", 1: "good"}.get(seed)
        try:
            return storage.hold(
                "s", [("a", blob(seed)), ("b", blob(seed))], enrolment_token=token, key_id="abc"
            )
        except Forbidden as error:
            return error

    with ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(hold, range(40)))
    assert isinstance(outcomes[0], Forbidden)
    assert outcomes[1:] == [2] * 39
    assert storage.held_counts("s") == {"a": (39, 0), "b": (39, 0)}
    assert storage.enrolment_counts("s") == (1, 1)


def test_enrolment_digests_follow_the_aggregators_list(storage):
    from deniable.relay.storage import token_digest

    storage.add_enrolment_digests("s", [token_digest(t) for t in ("one", "two", "three")])
    storage.hold("s", [("a", blob(1))], enrolment_token="one", key_id="abc")
    # "two" was revoked at the aggregator, "four" issued; "one" is spent here (not listed).
    added, forgotten = storage.sync_enrolment_digests(
        "s", [token_digest(t) for t in ("three", "four")]
    )
    assert (added, forgotten) == (1, 1)
    assert storage.enrolment_counts("s") == (3, 1)  # one (spent), three, four
    from deniable.errors import Forbidden

    with pytest.raises(Forbidden):
        storage.hold("s", [("a", blob(2))], enrolment_token="two", key_id="abc")


def test_the_relay_keeps_the_current_and_a_few_retired_encryption_key_ids(storage):
    from deniable.aggregator.signing import RETIRED_ENCRYPTION_KEYS

    assert storage.get_survey("s").encryption_keys == ("abc",)
    for number in range(8):
        storage.accept_encryption_key("s", f"key{number}")
    storage.accept_encryption_key("s", "key7")  # the current one again: no change
    kept = storage.get_survey("s").encryption_keys
    assert kept == tuple(f"key{n}" for n in range(7, 6 - RETIRED_ENCRYPTION_KEYS, -1))


def test_an_unknown_key_id_is_refused_even_when_the_aggregator_cannot_be_asked(tmp_path):
    client = _app(tmp_path, "memory://", f"relay-test-{time.time_ns()}").test_client()
    body = dict(_body(), key_id="0123456789abcdef")
    refused = client.post("/api/v1/surveys/s/sealed", json=body)  # aggregator at port 1: down
    assert refused.status_code == 409, refused.json
    assert refused.headers["Content-Type"] == "application/problem+json"
    assert "0123456789abcdef" in refused.json["detail"]
    assert refused.json["type"] == "urn:deniable:problem:unknown-key"  # a device reseals
    assert client.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202


def test_the_relays_backend_and_its_options_follow_the_settings(tmp_path):
    sqlite = open_storage({"DATABASE": str(tmp_path / "r.sqlite3"), "BUSY_TIMEOUT_MS": 1234})
    postgres = open_storage(
        {"DATABASE": "postgresql://nobody@127.0.0.1:1/x", "POOL_SIZE": 3, "POOL_TIMEOUT": 2}
    )
    assert (sqlite.backend, sqlite.dialect.busy_timeout_ms) == ("sqlite", 1234)
    assert sqlite.dialect.pragmas == ("secure_delete = ON",)
    dialect = postgres.dialect
    assert (postgres.backend, dialect.pool_size, dialect.pool_timeout, dialect.name) == (
        "postgresql",
        3,
        2,
        "deniable-relay",
    )
    sqlite.close()
    postgres.close()


def test_the_relays_schema_version_is_read_from_its_own_version_table(storage):
    migrations = sorted((MIGRATIONS / storage.backend).glob("*.sql"))
    assert storage.schema_version() == storage.migrate() == len(migrations)
    with storage._transaction() as connection:
        (count,) = connection.execute("SELECT COUNT(*) FROM relay_schema_version").fetchone()
    assert count == len(migrations)


def test_settings_prints_the_relays_settings_with_their_help(capsys):
    assert main(["settings", "-v"]) == 0
    out = capsys.readouterr().out
    assert "DENIABLE_RELAY_WINDOW_SECONDS = 3600" in out and "Seconds between" in out


def test_the_signed_relay_url_names_public_url_by_origin_and_path():
    from deniable.origins import same_url

    assert same_url("https://[2001:DB8:0:0:0:0:0:5]:443/r", "https://[2001:db8::5]/r/")
    assert same_url("https://Relay.Example", "https://relay.example:443")
    assert not same_url("https://relay.example/r", "https://relay.example")
    assert not same_url("https://relay.example", "https://relay.example:8443")
    assert not same_url("https://relay.example", "not a url")


def test_a_token_stays_linked_to_its_units_only_while_any_is_held(storage, tmp_path):
    """Issue 18, unit by unit: the link goes when the last unit a token admitted is
    acknowledged (delivered) or discarded; the end-to-end check is test_token_links.py."""
    from deniable.errors import AlreadyDelivered, Conflict
    from deniable.relay.storage import submission_digest, token_digest

    def rows() -> dict[str, object]:
        with storage._transaction() as connection:  # either backend's own connection
            spent = connection.execute("SELECT digest, spent_by FROM enrolment_digests").fetchall()
            admitted = connection.execute("SELECT COUNT(*) FROM admitted").fetchone()[0]
            return {"admitted": admitted, **dict(spent)}

    def forward(unit: str) -> None:
        assert len(storage.form_batches("s", window=0)) == 1
        (batch,) = storage.lease_batches(lease=60)
        assert batch.unit == unit
        storage.acknowledged(batch)

    one, two = [("a", blob(1)), ("b", blob(2))], [("a", blob(3)), ("b", blob(4))]
    storage.add_enrolment_digests("s", [token_digest(t) for t in ("one", "two", "three")])
    storage.hold("s", one, enrolment_token="one", key_id="abc")
    storage.hold("s", two, enrolment_token="two", key_id="abc")
    assert rows()["admitted"] == 4
    storage.hold("s", [("a", blob(5))], enrolment_token=None, key_id="abc")
    forward("a")  # unit a's batch: each token still has unit b held, so it stays linked
    assert rows()["admitted"] == 2
    assert rows()[token_digest("one")] == submission_digest("s", one)
    # idempotent, nothing re-held
    assert storage.hold("s", one, enrolment_token="one", key_id="abc") == 0
    storage.hold("s", [("b", blob(6))], enrolment_token=None, key_id="abc")
    forward("b")
    assert rows() == {
        "admitted": 0,
        token_digest("one"): "delivered",
        token_digest("two"): "delivered",
        token_digest("three"): None,
    }
    for units in (one, [("a", blob(9))]):  # the same units or others: the token was used
        with pytest.raises(AlreadyDelivered):
            storage.hold("s", units, enrolment_token="one", key_id="abc")
    storage.hold("s", [("a", blob(7))], enrolment_token="three", key_id="abc")
    storage.update_survey(
        "s",
        document=storage.get_survey("s").document,
        status="closed",
        signing_key="",
        key_sequence=None,
    )
    assert storage.discard_closed("s") == 1
    assert rows()[token_digest("three")] == "discarded" and rows()["admitted"] == 0
    with pytest.raises(Conflict, match="closed before") as refused:
        storage.hold("s", [("a", blob(7))], enrolment_token="three", key_id="abc")
    assert not isinstance(refused.value, AlreadyDelivered)


def test_waitress_names_no_client_address_in_the_relays_logs(tmp_path, caplog):
    """waitress logs a connection by its peer address when an error escapes it
    (wasyncore's handle_error: "closing channel <HTTPChannel connected 203.0.113.9:51234
    ...>"); in a relay process that line keeps the error and loses the address."""
    import logging

    from waitress.channel import HTTPChannel

    _app(tmp_path, "memory://", f"relay-test-{time.time_ns()}")
    channel = HTTPChannel.__new__(HTTPChannel)  # its repr only: no socket needed
    channel.addr, channel.accepting, channel.connected = ("203.0.113.9", 51234), False, True
    channel6 = HTTPChannel.__new__(HTTPChannel)
    channel6.addr, channel6.accepting, channel6.connected = ("2001:db8::7", 443), False, True
    with caplog.at_level(logging.INFO, logger="waitress"):
        for item in (channel, channel6):
            item.log_info(
                f"uncaptured python exception, closing channel {item!r} (<class 'MemoryError'>:)",
                "error",
            )
    text = caplog.text
    assert "uncaptured python exception" in text and "HTTPChannel" in text
    assert "203.0.113.9" not in text and "2001:db8" not in text, text
