"""The Python client against a real relay and aggregator when its encryption key went stale.

A device fetched a relayed survey, then the aggregator rotated its keys more often than
it keeps retired ones (:data:`deniable.keychain.RETIRED_ENCRYPTION_KEYS`), so
the relay refuses units sealed to the key the device knows (409).  The client then
verifies the new key document (following the rotation chain) and seals the SAME
randomized reports to the new key once: the aggregator stores exactly those reports.
"""

from __future__ import annotations

import base64
import contextlib
import sqlite3

import pytest
import requests

from deniable.aggregator.signing import RETIRED_ENCRYPTION_KEYS

from .conftest import sealed_submission

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("deployment", ["sqlite"], indirect=True)]

ANSWERS = [{"smoker": i % 2 == 0, "team": ["red", "green", "blue"][i % 3]} for i in range(10)]


def test_a_stale_key_is_followed_and_the_same_reports_resealed(deployment):
    client = deployment.client("stale")
    verified = client.fetch("w")  # pins the aggregator key, learns its encryption key
    assert verified.encryption["key_id"] == deployment.key_id
    key_url = f"{deployment.aggregator.url}/api/v1/key"

    def relay_keys() -> list[str]:  # the encryption key ids the relay takes for w, newest first
        with contextlib.closing(sqlite3.connect(deployment.directory / "relay.sqlite3")) as db:
            row = db.execute("SELECT encryption_keys FROM relayed_surveys WHERE survey_id = 'w'")
            return row.fetchone()[0].split()

    seen = {deployment.key_id}

    def newest() -> dict | None:  # the key document once it serves a new key the relay took
        document = requests.get(key_url, timeout=10).json()
        key_id = document["encryption_key"]["key_id"]
        return document if key_id not in seen and relay_keys()[0] == key_id else None

    for _ in range(RETIRED_ENCRYPTION_KEYS + 1):
        deployment.aggregator_cli("key", "rotate")
        # Served within a second; the relay's refresh (every 0.5 s) records every key in turn.
        served = deployment.wait_for(newest)
        seen.add(served["encryption_key"]["key_id"])
    assert deployment.key_id not in relay_keys()
    stale, _ = deployment.seal("w", ANSWERS[0])
    assert deployment.submit("w", stale).status_code == 409

    receipt = client.answer(verified, ANSWERS[0])  # sealed to the stale key first
    assert receipt.delivered and client.pending() == 0
    assert client.pinned_key_id() == served["key_id"]  # the rotation chain was followed
    assert client.budget()["spent_total"] == pytest.approx(verified.total_epsilon)

    new = served["encryption_key"]
    public = base64.b64decode(new["public_key"])
    others = []
    for answers in ANSWERS[1:]:  # fill the batch (min_batch 10) so the relay forwards it
        body, reports = sealed_submission(deployment.surveys["w"], answers, public, new["key_id"])
        assert deployment.submit("w", body).status_code == 202
        others += [r["id"] for r in reports]
    stored = deployment.wait_for(
        lambda: (ids := {r["id"] for r in deployment.export("w")}) >= set(others) and ids
    )
    assert set(receipt.report_ids) <= stored  # the reports charged are the reports stored
