"""The relay's intake under arbitrary input (relay/api.py): never a 5xx, every refusal problem+json.

Hypothesis draws whole bodies (any JSON, raw bytes, valid submissions with one member
replaced by anything) and content types, against the relay app on real SQLite with a
survey that requires enrolment, one that does not, and one shuffled whole.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.relay import create_app
from deniable.relay.storage import SqliteRelayStorage, open_storage, token_digest
from deniable.survey import Survey
from tests.relay.conftest import BACKENDS, _databases, b64
from tests.relay.test_relay_app import DEFINITION, RELAY_URL, _body, stored_survey
from tests.shared.spellings import noncanonical_spellings

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["abc", "a", "b", "", "deniable.sealed/1"])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
PATHS = [
    ("format",),
    ("key_id",),
    ("units",),
    ("units", 0),
    ("units", 0, "unit"),
    ("units", 0, "sealed"),
    ("enrolment_token",),
    ("extra",),
]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/JSON",
    None,
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    directory = tmp_path_factory.mktemp("relay-api")
    store = SqliteRelayStorage(str(directory / "relay.sqlite3"))
    store.migrate()
    store.add_survey(stored_survey(), ["a", "b"])
    store.add_survey(replace(stored_survey(), survey_id="e", require_enrolment=True), ["a", "b"])
    store.add_survey(replace(stored_survey(), survey_id="w", shuffle_unit="submission"), [""])
    store.add_enrolment_digests("e", [token_digest(f"token-{n}") for n in range(1000)])
    store.close()
    app = create_app(
        {
            "DATABASE": str(directory / "relay.sqlite3"),
            "TESTING": True,
            "RATE_LIMIT_PER_ADDRESS": "0",
            "MAX_BODY_BYTES": 4096,
        }
    )
    return app.test_client()


def _mutated(path: tuple, value: object, drop: bool) -> dict:
    body = dict(copy.deepcopy(_body()), enrolment_token="token-1")
    target = body
    for step in path[:-1]:
        target = target[step]
    if drop and isinstance(target, dict):
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return body


BODIES = (
    JSON.map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=64)
    | st.builds(
        lambda p, v, d: json.dumps(_mutated(p, v, d)).encode(),
        st.sampled_from(PATHS),
        JSON,
        st.booleans(),
    )
    | st.sampled_from(
        [
            b"[" * 5000,
            b'{"a": 1, "a": 2}',
            b'{"format": NaN}',
            b"\xff\xfe",
            b'"\\udc00"',
            b"1" * 5000,
            b" " * 5000,
        ]
    )
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    survey=st.sampled_from(["s", "e", "w", "unknown", "x" * 70]),
    body=BODIES,
    content_type=st.sampled_from(CONTENT_TYPES),
)
def test_no_input_gets_a_5xx_and_every_refusal_is_problem_json(client, survey, body, content_type):
    response = client.post(f"/api/v1/surveys/{survey}/sealed", data=body, content_type=content_type)
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        assert response.headers["Content-Type"] == "application/problem+json"
        assert response.json["status"] == response.status_code
    else:
        assert response.status_code == 202


@pytest.mark.parametrize("token", [["x"], {"t": 1}, 7, True])
def test_an_enrolment_token_that_is_not_text_is_refused_even_where_none_is_needed(client, token):
    """A field of the wrong type is a malformed submission (422), never quietly dropped."""
    response = client.post("/api/v1/surveys/s/sealed", json=dict(_body(), enrolment_token=token))
    assert response.status_code == 422, response.get_data(as_text=True)


def test_units_sealed_to_two_verified_keys_never_share_a_batch(tmp_path):
    """Both keys are the aggregator's (current, and one it retired): each is held under the
    key its device named, so the three under one key batch without the one under the other."""
    store = SqliteRelayStorage(str(tmp_path / "relay.sqlite3"))
    store.migrate()
    store.add_survey(replace(stored_survey(), encryption_keys=("abc", "def")), ["a", "b"])
    client = create_app(
        {
            "DATABASE": str(tmp_path / "relay.sqlite3"),
            "TESTING": True,
            "RATE_LIMIT_PER_ADDRESS": "0",
        }
    ).test_client()
    bodies = [_body() for _ in range(4)]
    bodies[3]["key_id"] = "def"
    for body in bodies:
        assert client.post("/api/v1/surveys/s/sealed", json=body).status_code == 202
    assert len(store.form_batches("s", window=0)) == 2  # one per question, each of one key
    for batch in store.lease_batches(lease=60):
        index = ["a", "b"].index(batch.unit)
        sealed = {b["units"][index]["sealed"] for b in bodies[:3]}
        assert {b64(blob) for blob in batch.sealed} == sealed
    assert store.held_counts("s") == {"a": (1, 3), "b": (1, 3)}
    store.close()


def test_a_shared_rate_limit_store_holds_no_token_digest_the_aggregator_knows(tmp_path):
    """The aggregator stores SHA-256 of every enrolment token it issued (and knows whom it
    gave each to); a Redis key under that digest, with the moving window's hit times, would
    tell it when each enrolled person submitted.  Tokens are counted under the relay's
    pseudonym key, as addresses are."""
    import os
    import time

    url = os.environ.get("DENIABLE_TEST_REDIS_URL", "")
    if not url:
        pytest.skip("DENIABLE_TEST_REDIS_URL is unset")
    import redis

    store = SqliteRelayStorage(str(tmp_path / "relay.sqlite3"))
    store.migrate()
    store.add_survey(replace(stored_survey(), require_enrolment=True), ["a", "b"])
    store.add_enrolment_digests("s", [token_digest("token-7")])
    store.close()
    prefix = f"relay-test-{time.time_ns()}"
    client = create_app(
        {
            "DATABASE": str(tmp_path / "relay.sqlite3"),
            "TESTING": True,
            "RATE_LIMIT_STORAGE": url,
            "RATE_LIMIT_KEY_PREFIX": prefix,
            "RATE_LIMIT_PER_TOKEN": "5/hour",
        }
    ).test_client()
    body = dict(_body(), enrolment_token="token-7")
    accepted = client.post("/api/v1/surveys/s/sealed", json=body)
    assert accepted.status_code == 202, accepted.get_data(as_text=True)
    keys = [key.decode() for key in redis.Redis.from_url(url).keys(f"*{prefix}*")]
    assert any("token" in key for key in keys)  # counted, but not under the known digest
    assert not any(token_digest("token-7") in key or "token-7" in key for key in keys)


def _sealed_length() -> int:
    from deniable import sealing

    return sealing.sealed_length(sealing.unit_size(Survey.from_dict(DEFINITION), "a"))


# A unit of the right length whose canonical text holds "-" and "_" and ends in spare bits.
RAW = b"\xfb\xff\xff" + bytes(range(_sealed_length() - 3))


@pytest.mark.parametrize("spelling", noncanonical_spellings(RAW))
def test_a_unit_not_in_canonical_unpadded_base64url_is_refused(client, spelling):
    text = noncanonical_spellings(RAW)[spelling]
    other = _body()["units"][1]  # unit b, canonical
    body = dict(_body(), units=[{"unit": "a", "sealed": text}, other])
    response = client.post("/api/v1/surveys/s/sealed", json=body)
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.json["type"] == "urn:deniable:problem:invalid-report"
    canonical = dict(_body(), units=[{"unit": "a", "sealed": b64(RAW)}, other])
    assert client.post("/api/v1/surveys/s/sealed", json=canonical).status_code == 202


def _unit(unit: str) -> dict:
    return {"unit": unit, "sealed": b64(bytes(_sealed_length()))}


@pytest.mark.parametrize("units", [["a"], ["b"], ["b", "a"]], ids=["only-a", "only-b", "b-a"])
def test_a_submission_carries_one_unit_per_question_in_the_survey_order(client, units):
    """docs/protocol.md §10.5: one unit per question, in the survey's question order.  Fewer
    (a respondent who skipped a question would stand out by the count of its units) or
    another order is a malformed submission, and nothing is held."""
    body = dict(_body(), units=[_unit(unit) for unit in units])
    response = client.post("/api/v1/surveys/s/sealed", json=body)
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.json["type"] == "urn:deniable:problem:invalid-report"
    whole = dict(_body(), units=[_unit("a"), _unit("b")])
    assert client.post("/api/v1/surveys/s/sealed", json=whole).status_code == 202


def test_an_enrolment_token_on_a_survey_without_enrolment_is_ignored_and_never_stored(tmp_path):
    """docs/protocol.md §11.2: on a survey that does not require enrolment the token is
    neither checked, nor spent, nor kept (a client may hold one from another survey)."""
    import sqlite3

    database = tmp_path / "relay.sqlite3"
    store = SqliteRelayStorage(str(database))
    store.migrate()
    store.add_survey(stored_survey(), ["a", "b"])
    store.close()
    config = {"DATABASE": str(database), "TESTING": True, "RATE_LIMIT_PER_ADDRESS": "0"}
    client = create_app(config).test_client()
    token = "dne_" + "t" * 43
    for _ in range(2):  # not spent: the same token again is no refusal
        body = dict(_body(), enrolment_token=token)
        response = client.post("/api/v1/surveys/s/sealed", json=body)
        assert response.status_code == 202, response.get_data(as_text=True)
    with sqlite3.connect(database) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert token.encode() not in data and token_digest(token).encode() not in data, path


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_held_count_is_a_snapshot_and_flushes_stop_at_the_limit(backend, tmp_path):
    """On SQLite and PostgreSQL: the held count (respondents waiting for a batch, never units
    already in one) is counted again only once HELD_COUNT_SECONDS old; the FLUSH_LIMIT-th
    flush is the last, the next a 409 problem that forms nothing."""
    import time

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from deniable.keychain import encode, key_id
    from deniable.relay_flush import FLUSH_FORMAT, HELD_REQUEST_FORMAT, signed_message

    signing = Ed25519PrivateKey.generate()
    public = signing.public_key().public_bytes_raw()
    databases = _databases(backend, tmp_path)
    _, database = next(databases)
    store = open_storage({"DATABASE": database})
    try:
        store.migrate()
        store.add_survey(replace(stored_survey(), signing_key=encode(public)), ["a", "b"])
        app = create_app(
            {
                "DATABASE": database,
                "TESTING": True,
                "RATE_LIMIT_PER_ADDRESS": "0",
                "PUBLIC_URL": RELAY_URL,
                "HELD_COUNT_SECONDS": "1",
                "FLUSH_LIMIT": "1",
            }
        )
        client = app.test_client()

        def signed(kind: str) -> dict:
            issued = int(time.time())
            signature = encode(signing.sign(signed_message(kind, "s", RELAY_URL, issued)))
            return {"format": kind, "survey": "s", "relay": RELAY_URL, "issued_at": issued,
                    "key_id": key_id(public), "signature": signature}  # fmt: skip

        def held() -> dict:
            answer = client.post("/api/v1/surveys/s/held", json=signed(HELD_REQUEST_FORMAT))
            assert answer.status_code == 200, answer.get_data(as_text=True)
            return answer.json

        for _ in range(4):
            assert client.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202
        first = held()
        assert (first["waiting"], first["min_batch"], first["refresh_seconds"]) == (4, 3, 1)
        assert client.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202
        assert held() == first  # the same snapshot, however often asked
        time.sleep(1.1)
        assert held()["waiting"] == 5
        assert len(store.form_batches("s", window=0)) == 2  # all five of each unit, batched
        time.sleep(1.1)
        assert held()["waiting"] == 0  # in a batch is no longer waiting
        flushed = client.post("/api/v1/surveys/s/flush", json=signed(FLUSH_FORMAT))
        assert flushed.status_code == 200 and flushed.json["flushes_left"] == 0
        assert client.post("/api/v1/surveys/s/sealed", json=_body()).status_code == 202
        refused = client.post("/api/v1/surveys/s/flush", json=signed(FLUSH_FORMAT))
        assert refused.status_code == 409 and refused.mimetype == "application/problem+json"
        assert "flushed 1 times already" in refused.json["detail"]
        assert store.flush_count("s") == 1
        assert store.held_counts("s") == {"a": (1, 5), "b": (1, 5)}  # the refusal formed nothing
        forged = dict(signed(FLUSH_FORMAT), key_id="0" * 16)
        assert client.post("/api/v1/surveys/s/flush", json=forged).status_code == 401
    finally:
        store.close()
        next(databases, None)
