"""Noised batches in the relay's storage (relay/storage/batches.py), on both backends: each
batch's dummies are drawn once, stored with it, leased with its real units, deleted with
it, and never counted as respondents; the byte bound leaves room for them; a key whose
public half the relay never recorded gets its batch formed without dummies."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from deniable import sealing
from deniable.dummies import BinomialDummies
from deniable.relay.noise import Dummies
from deniable.relay.storage import open_storage
from deniable.survey import Survey
from tests.relay.conftest import BACKENDS, _databases
from tests.relay.test_relay_app import DEFINITION, stored_survey

NOISE = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 148}}
SURVEY = Survey.from_dict(
    {**DEFINITION, "relay": {**DEFINITION["relay"], "noise": NOISE}}
).upgraded()
KEY = sealing.generate_private_key()
PUBLIC = sealing.public_bytes(KEY)
SIZE = sealing.unit_size(SURVEY, "a")


class Counting(Dummies):
    """Dummies that count their draws (a draw must happen once per batch formed)."""

    draws = 0

    def draw(self, unit: str, public_key: bytes) -> list[bytes]:
        type(self).draws += 1
        return super().draw(unit, public_key)


@pytest.fixture(params=BACKENDS)
def storage(request, tmp_path):
    databases = _databases(request.param, tmp_path)
    _, database = next(databases)
    store = open_storage({"DATABASE": database})
    store.migrate()
    document = json.dumps({"id": "s", "status": "open", "definition": SURVEY.to_dict()})
    store.add_survey(replace(stored_survey(), document=document), ["a", "b"])
    store.accept_encryption_key("s", "abc", PUBLIC)
    yield store
    store.close()
    next(databases, None)


def real_unit(unit: str = "a") -> bytes:
    report = {"id": "00000000-0000-4000-8000-000000000000", "question": unit, "payload": "01"}
    body = sealing.unit_body([report], unit)
    return sealing.seal(PUBLIC, survey_id="s", unit=unit, plaintext=body, size=SIZE)


def hold(storage, count: int, key_id: str = "abc") -> None:
    for _ in range(count):
        storage.hold("s", [("a", real_unit())], enrolment_token=None, key_id=key_id)


def test_a_noised_batch_keeps_its_dummies_until_acknowledged_and_counts_real_units(storage):
    dummies = Counting(survey=SURVEY, law=BinomialDummies(trials=8))
    Counting.draws = 0
    hold(storage, 3)
    (batch_id,) = storage.form_batches("s", window=0, dummies=dummies)
    assert Counting.draws == 1
    (batch,) = storage.lease_batches(lease=60)
    assert batch.batch_id == batch_id and batch.real_units == 3 == batch.real_count
    assert 3 < len(batch.sealed) <= 3 + 2 * 8  # two output values, at most 8 dummies each
    assert {len(blob) for blob in batch.sealed} == {sealing.sealed_length(SIZE)}
    # A resend (the lease released after a crash) carries the very same blobs; nothing redrawn.
    storage.release_leases()
    (again,) = storage.lease_batches(lease=60)
    assert sorted(again.sealed) == sorted(batch.sealed) and again.real_units == 3
    assert Counting.draws == 1
    opened = [
        json.loads(sealing.open_sealed(KEY, survey_id="s", unit="a", sealed=blob, size=SIZE))
        for blob in batch.sealed
    ]
    assert sum(report["payload"] in ("00", "01") for report in opened) == len(batch.sealed)
    assert storage.held_counts("s") == {"a": (0, 3)}  # dummies are no held unit
    assert storage.pending_batches("s")[0][2] == 3
    storage.acknowledged(batch)
    survey = storage.get_survey("s")
    assert (survey.forwarded_reports, survey.smallest_batch) == (3, 3)
    assert storage.held_counts("s") == {}
    with storage._transaction() as connection:
        assert storage.dialect.run(connection, "SELECT COUNT(*) FROM dummies").fetchone()[0] == 0


def test_a_survey_without_noise_forms_batches_as_before(storage):
    hold(storage, 3)
    storage.form_batches("s", window=0)
    (batch,) = storage.lease_batches(lease=60)
    assert batch.real_units is None and len(batch.sealed) == 3


def test_a_key_without_its_public_half_gets_its_batch_without_dummies(storage):
    """Units sealed to a key id the relay kept no public key for (held before it kept
    them): no dummy can be sealed to that key, and sealing one to another key would mark
    it, so the batch goes out plain (no real_units: the shuffle bound alone)."""
    storage.accept_encryption_key("s", "old")  # the id only, as relays before noise did
    hold(storage, 3, key_id="old")
    storage.form_batches(
        "s", window=0, dummies=Dummies(survey=SURVEY, law=BinomialDummies(trials=8))
    )
    (batch,) = storage.lease_batches(lease=60)
    assert batch.real_units is None and len(batch.sealed) == 3


def test_the_byte_bound_leaves_room_for_the_most_dummies(storage):
    law = BinomialDummies(trials=8)
    hold(storage, 12)
    encoded = -(-4 * sealing.sealed_length(SIZE) // 3) + 3
    # Room for 24 blobs: without noise the 12 units would go in one batch; beside at most
    # 2 x 8 dummies, 8 real units fit, so they go in two batches of 6.
    max_bytes = 200 + 24 * encoded
    formed = storage.form_batches(
        "s", window=0, max_bytes=max_bytes, dummies=Dummies(survey=SURVEY, law=law)
    )
    batches = storage.lease_batches(lease=60)
    assert len(formed) == len(batches) == 2
    assert all(batch.real_units == 6 and len(batch.sealed) <= 24 for batch in batches)


def test_public_keys_are_kept_only_while_their_ids_are(storage):
    from deniable.keychain import RETIRED_ENCRYPTION_KEYS

    for number in range(RETIRED_ENCRYPTION_KEYS + 2):
        storage.accept_encryption_key("s", f"k{number}", bytes([number]) * 32)
    kept = storage.get_survey("s").encryption_keys
    with storage._transaction() as connection:
        rows = storage.dialect.run(
            connection, "SELECT key_id FROM encryption_public WHERE survey_id = 's'"
        ).fetchall()
    assert {key_id for (key_id,) in rows} == set(kept) and "abc" not in kept
