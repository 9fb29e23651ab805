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
from deniable.relay.storage import RelayedSurvey, SqliteRelayStorage
from deniable.survey import Survey

RELAY_URL = "http://127.0.0.1:9"
DEFINITION = {
    "format": "deniable.survey/2", "id": "s", "title": "S",
    "questions": [{"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1.0},
                  {"id": "b", "type": "yes_no", "text": "B?", "epsilon": 1.0}],
    "relay": {"url": RELAY_URL, "min_batch": 3, "shuffle_unit": "question"},
}  # fmt: skip


def stored_survey(min_batch: int = 3) -> RelayedSurvey:
    survey = Survey.from_dict(DEFINITION).upgraded()
    document = {"id": "s", "status": "open", "definition": survey.to_dict()}
    return RelayedSurvey(survey_id="s", aggregator_url="http://127.0.0.1:1", credential="dnr_x",
                         signing_key="", key_sequence=None, document=json.dumps(document),
                         status="open", min_batch=min_batch, shuffle_unit="question",
                         require_enrolment=False, refreshed_at="",
                         encryption_keys=("abc",))  # fmt: skip


@pytest.fixture
def storage(tmp_path):
    store = SqliteRelayStorage(str(tmp_path / "relay.sqlite3"))
    store.migrate()
    store.add_survey(stored_survey(), ["a", "b"])
    yield store
    store.close()


def blob(seed: int) -> bytes:
    return seed.to_bytes(4, "big") * 20


def test_settings_are_read_under_the_relays_own_prefix():
    values = settings.load({}, {"DENIABLE_RELAY_WINDOW_SECONDS": "7", "DENIABLE_DATABASE": "x.db",
                                "DENIABLE_RELAY_HOME": "/tmp/r"})  # fmt: skip
    assert values["WINDOW_SECONDS"] == 7.0
    assert values["DATABASE"] == "/tmp/r/relay.sqlite3"  # the aggregator's variable is ignored
    assert values["RATE_LIMIT_KEY_PREFIX"] == "deniable-relay"
    with pytest.raises(settings.SettingsError, match="PUBLIC_URL"):
        settings.load({"PUBLIC_URL": "ftp://relay"})


def test_a_batch_needs_min_batch_units_and_the_window(storage):
    for seed in range(2):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None)
    assert storage.form_batches("s", window=0) == []  # 2 < min_batch 3
    storage.hold("s", [("a", blob(2)), ("b", blob(3))], enrolment_token=None)
    assert storage.hold("s", [("a", blob(2))], enrolment_token=None) == 0  # the same bytes
    assert storage.form_batches("s", window=3600) == []  # the window has not passed
    formed = storage.form_batches("s", window=0)
    assert len(formed) == 1  # unit a has 3; unit b has 1
    (batch,) = storage.lease_batches(lease=60)
    assert sorted(batch.sealed) == sorted([blob(0), blob(1), blob(2)])
    assert storage.lease_batches(lease=60) == []  # leased to one sender
    storage.acknowledged(batch)
    assert storage.held_counts("s") == {"b": (1, 0)}
    assert storage.list_surveys()[0].smallest_batch == 3


def test_the_held_rows_carry_no_arrival_order(storage):
    for seed in range(50):
        storage.hold("s", [("a", blob(seed))], enrolment_token=None)
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
    return create_app({"DATABASE": str(database), "TESTING": True, "RATE_LIMIT_EXEMPT": "",
                       "RATE_LIMIT_PER_ADDRESS": "2/minute", "RATE_LIMIT_STORAGE": storage_url,
                       "RATE_LIMIT_KEY_PREFIX": prefix})  # fmt: skip


def _body() -> dict:
    from deniable import sealing

    length = sealing.sealed_length(sealing.unit_size(Survey.from_dict(DEFINITION), "a"))
    sealed = base64.urlsafe_b64encode(os.urandom(length)).decode().rstrip("=")
    units = [{"unit": "a", "sealed": sealed}]
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
    status = main(["--data-dir", str(tmp_path), "add-survey", "http://127.0.0.1:1", "s",
                   "--credential-file", str(credential)])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "PUBLIC_URL" in err
    assert main(["--data-dir", str(tmp_path / "none"), "status"]) == 3


@pytest.mark.slow
def test_a_large_batch_is_opened_by_several_processes_with_the_same_outcome(tmp_path,
                                                                         monkeypatch):  # fmt: skip
    """The parallel opening path (processes) drops and stores exactly as the serial one."""
    import secrets
    import uuid

    from deniable import sealing
    from deniable.aggregator import create_app as aggregator_app
    from deniable.aggregator.api import opening
    from deniable.aggregator.signing import current_key
    from deniable.aggregator.storage import current_storage
    from deniable.aggregator.storage import relay as relay_storage

    monkeypatch.setattr(opening, "PARALLEL_FROM", 10)
    monkeypatch.setattr(opening, "DECRYPT_PROCESSES", 2)
    # A body limit far below the batch's: only the relay's credential lifts it, to
    # MAX_RELAY_BATCH_BYTES.
    app = aggregator_app({"HOME": str(tmp_path), "TESTING": True, "MAX_BODY_BYTES": 2048})
    survey = Survey.from_dict(DEFINITION).upgraded()
    with app.app_context():
        current_storage().create_survey(survey, results_public=True)
        credential = relay_storage.create_credential(current_storage(), RELAY_URL)
        public = current_key().encryption.public_bytes
    question = survey.question("a")
    size = sealing.unit_size(survey, "a")
    blobs = [sealing.seal(public, survey_id="s", unit="a", size=size,
                          plaintext=sealing.unit_body([{"id": str(uuid.uuid4()), "question": "a",
                                                        "payload": question.randomize(True)}],
                                                      "a")) for _ in range(40)]  # fmt: skip
    blobs[5] = blobs[5][:-1] + bytes([blobs[5][-1] ^ 1])
    body = {"format": "deniable.batch/1", "unit": "a",
            "sealed": [base64.urlsafe_b64encode(b).rstrip(b"=").decode() for b in blobs]}
    response = app.test_client().put(f"/api/v1/surveys/s/batches/{secrets.token_hex(16)}",
                                     json=body, headers={"Authorization": f"Bearer {credential}"})
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
            return storage.hold("s", [("a", blob(seed)), ("b", blob(seed))],
                                enrolment_token=token)  # fmt: skip
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
    storage.hold("s", [("a", blob(1))], enrolment_token="one")
    # "two" was revoked at the aggregator, "four" issued; "one" is spent here (not listed).
    added, forgotten = storage.sync_enrolment_digests(
        "s", [token_digest(t) for t in ("three", "four")])
    assert (added, forgotten) == (1, 1)
    assert storage.enrolment_counts("s") == (3, 1)  # one (spent), three, four
    from deniable.errors import Forbidden

    with pytest.raises(Forbidden):
        storage.hold("s", [("a", blob(2))], enrolment_token="two")


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
    assert client.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202


def test_settings_prints_the_relays_settings_with_their_help(capsys):
    assert main(["settings", "-v"]) == 0
    out = capsys.readouterr().out
    assert "DENIABLE_RELAY_WINDOW_SECONDS = 3600" in out and "Seconds between" in out
