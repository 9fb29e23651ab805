"""A relay batch opened and stored chunk by chunk (api/batches.py, api/opening.py), both backends.

The chunks are made small (:data:`CHUNK` blobs) so that a batch of a few dozen
blobs spans several of them and is opened by the real decryption processes: a
duplicate or a reused id in another chunk than its first copy, a tampered or
invalid blob in any chunk, a batch cut short after some chunks were stored, and a
survey closed between two chunks.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import time
import uuid
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import pytest

from deniable import sealing
from deniable.aggregator.api import batches, opening
from deniable.aggregator.signing import current_key
from deniable.survey import Survey
from tests.shared.spellings import noncanonical_spellings

RELAY_URL = "http://127.0.0.1:9"
CHUNK = 7


def definition(survey_id: str, shuffle_unit: str) -> dict[str, Any]:
    return {
        "format": "deniable.survey/2",
        "id": survey_id,
        "title": survey_id.title(),
        "questions": [
            {"id": "a", "type": "yes_no", "text": "A?", "epsilon": 1.0},
            {"id": "b", "type": "yes_no", "text": "B?", "epsilon": 1.0},
        ],
        "relay": {"url": RELAY_URL, "min_batch": 3, "shuffle_unit": shuffle_unit},
    }


@pytest.fixture
def relayed(app, storage, monkeypatch) -> dict[str, Any]:
    """Surveys ``q`` (per question) and ``w`` (whole submissions), the relay's credential, and
    the aggregator's public encryption key; batches of 10 blobs or more are opened in
    chunks of :data:`CHUNK` by two decryption processes."""
    monkeypatch.setattr(opening, "PARALLEL_FROM", 10)
    monkeypatch.setattr(opening, "CHUNK", CHUNK)
    monkeypatch.setattr(opening, "DECRYPT_PROCESSES", 2)
    surveys = {}
    for survey_id, unit in (("q", "question"), ("w", "submission")):
        surveys[survey_id] = Survey.from_dict(definition(survey_id, unit)).upgraded()
        storage.create_survey(surveys[survey_id], results_public=True)
    with app.app_context():
        public = current_key().encryption.public_bytes
    return {
        "surveys": surveys,
        "public": public,
        "credential": storage.relay.create_credential(RELAY_URL),
    }


def report(question: str = "a", payload: str = "01") -> dict[str, str]:
    """A report of a yes/no question (binary randomized response: payload "00" or "01")."""
    return {"id": str(uuid.uuid4()), "question": question, "payload": payload}


def seal(
    relayed: dict[str, Any],
    survey_id: str,
    reports: list[dict],
    unit: str = "a",
    as_unit: str | None = None,
) -> bytes:
    """``reports`` sealed for ``unit``, their body built as ``as_unit``'s (default: ``unit``)."""
    survey = relayed["surveys"][survey_id]
    return sealing.seal(
        relayed["public"],
        survey_id=survey_id,
        unit=unit,
        plaintext=sealing.unit_body(reports, unit if as_unit is None else as_unit),
        size=sealing.unit_size(survey, unit),
    )


def put(
    client,
    relayed: dict[str, Any],
    survey_id: str,
    batch_id: str,
    blobs: list[bytes],
    unit: str = "a",
):
    body = {
        "format": "deniable.batch/1",
        "unit": unit,
        "sealed": [base64.urlsafe_b64encode(b).rstrip(b"=").decode() for b in blobs],
    }
    return client.put(
        f"/api/v1/surveys/{survey_id}/batches/{batch_id}",
        json=body,
        headers={"Authorization": f"Bearer {relayed['credential']}"},
    )


def stored(storage, survey_id: str) -> list[Any]:
    return list(storage.export_reports(survey_id))


def tampered(blob: bytes) -> bytes:
    return blob[:-5] + bytes([blob[-5] ^ 1]) + blob[-4:]


def test_a_batch_over_several_chunks_stores_each_valid_blob_once_and_drops_the_rest(
    client, storage, relayed
):
    sent = [report(payload=f"0{i % 2}") for i in range(40)]
    blobs = [seal(relayed, "q", [r]) for r in sent]
    for index in (3, 17, 39):  # altered: do not open
        blobs[index] = tampered(blobs[index])
    blobs[8] = seal(relayed, "q", [report(payload="02")])  # opens, not a yes/no payload
    blobs[12] = seal(relayed, "q", [report(question="b")], as_unit="b")  # another question
    blobs[20] = seal(relayed, "q", [sent[1]])  # a resend of chunk 0's report: adds nobody
    blobs[25] = seal(relayed, "q", [{**sent[2], "payload": "01"}])  # chunk 0's id, "00" there
    valid = [r for i, r in enumerate(sent) if i not in (3, 17, 39, 8, 12, 20, 25)]
    batch_id = secrets.token_hex(16)
    first = put(client, relayed, "q", batch_id, blobs)
    assert first.status_code == 201, first.json
    # 3 altered, 2 invalid, 1 id with another body; the resend is neither stored nor dropped.
    assert first.json == {
        "survey": "q",
        "batch": batch_id,
        "unit": "a",
        "received": 40,
        "stored": len(valid),
        "dropped": 6,
    }
    rows = stored(storage, "q")
    assert [(r.id, r.question, r.payload) for r in rows] == [
        (r["id"], r["question"], r["payload"]) for r in valid
    ]  # the forwarded order
    assert {r.received_at for r in rows} == {rows[0].received_at}  # one time for the batch
    assert {r.submission for r in rows} == {None}  # per question: nothing joins them
    again = put(client, relayed, "q", batch_id, blobs[::-1])  # replayed, in another order
    assert (again.status_code, again.json) == (200, first.json)
    assert len(stored(storage, "q")) == len(valid)


def test_whole_submissions_keep_one_key_per_respondent_across_chunks(client, storage, relayed):
    respondents = [[report("a", "01"), report("b", "00")] for _ in range(20)]
    blobs = [seal(relayed, "w", pair, unit="") for pair in respondents]
    blobs[9] = tampered(blobs[9])
    response = put(client, relayed, "w", secrets.token_hex(16), blobs, unit="")
    assert (response.status_code, response.json["stored"], response.json["dropped"]) == (201, 19, 1)
    keys = {r.id: r.submission for r in stored(storage, "w")}
    kept = [pair for i, pair in enumerate(respondents) if i != 9]
    assert len(keys) == 38 and None not in keys.values()
    assert all(keys[a["id"]] == keys[b["id"]] for a, b in kept)
    assert len({keys[a["id"]] for a, _ in kept}) == 19  # no two respondents share a key


def test_a_batch_cut_short_is_not_recorded_and_stores_each_report_once_when_sent_again(
    client, storage, relayed, monkeypatch
):
    """The request dies after two chunks were stored (as a killed process would, without the
    kill): the batch is not recorded, so the relay sends it again, and the reports stored
    the first time are acknowledged again by id, not stored twice, nor counted in the
    batch's size (the aggregator cannot tell them from a replay: understated, never over)."""
    sent = [report(payload=f"0{i % 2}") for i in range(30)]
    blobs = [seal(relayed, "q", [r]) for r in sent]
    blobs[16] = tampered(blobs[16])  # in the third chunk, which the first attempt never stores
    store, calls = batches._store, []

    def dies_at_the_third_chunk(*args: Any) -> int:
        calls.append(args)
        if len(calls) == 3:
            raise RuntimeError("the process died")
        return store(*args)

    monkeypatch.setattr(batches, "_store", dies_at_the_third_chunk)
    batch_id = secrets.token_hex(16)
    assert put(client, relayed, "q", batch_id, blobs).status_code == 500
    assert storage.relay.find_batch("q", batch_id) is None
    assert len(stored(storage, "q")) == 2 * CHUNK
    monkeypatch.setattr(batches, "_store", store)
    again = put(client, relayed, "q", batch_id, blobs)
    assert again.status_code == 201, again.json
    assert (again.json["stored"], again.json["dropped"]) == (29 - 2 * CHUNK, 1)
    rows = stored(storage, "q")
    assert sorted(r.id for r in rows) == sorted(r["id"] for i, r in enumerate(sent) if i != 16)
    assert (put(client, relayed, "q", batch_id, blobs).status_code, len(stored(storage, "q"))) == (
        200,
        29,
    )


@pytest.mark.parametrize("survey_id", ["q", "w"])
def test_blobs_replayed_under_a_new_batch_id_count_in_no_batch_size(
    client, storage, relayed, survey_id
):
    """A blob whose reports were all stored before with the same body adds nobody: neither
    stored nor dropped, so ``smallest_batch`` (the central epsilon) never credits a batch
    with respondents another one added.  Per question one report a blob, whole submissions
    two; a blob with one report new and one stored before adds its respondent."""
    unit = "a" if survey_id == "q" else ""
    make = (lambda: [report()]) if survey_id == "q" else (lambda: [report("a"), report("b")])
    units = [make() for _ in range(4)]
    blobs = [seal(relayed, survey_id, reports, unit=unit) for reports in units]
    first = put(client, relayed, survey_id, secrets.token_hex(16), blobs[:3], unit=unit)
    assert (first.status_code, first.json["stored"], first.json["dropped"]) == (201, 3, 0)
    # one new blob and two replayed (sealed anew: other bytes, the same reports)
    mixed = [blobs[3]] + [seal(relayed, survey_id, reports, unit=unit) for reports in units[:2]]
    response = put(client, relayed, survey_id, secrets.token_hex(16), mixed, unit=unit)
    assert response.status_code == 201, response.json
    assert (response.json["received"], response.json["stored"], response.json["dropped"]) == (
        3,
        1,
        0,
    )
    replay = put(client, relayed, survey_id, secrets.token_hex(16), blobs[:3], unit=unit)
    assert (replay.status_code, replay.json["stored"], replay.json["dropped"]) == (201, 0, 0)
    summary = storage.relay.batch_summary(survey_id)[unit]
    # the replay stored nobody: not a batch that hides anyone (counted apart)
    assert (summary["batches"], summary["smallest_batch"], summary["stored"]) == (2, 1, 4)
    assert summary["empty_batches"] == 1
    assert len(stored(storage, survey_id)) == 4 * len(units[0])
    if survey_id == "w":  # one report new, one stored before: the blob adds its respondent
        half = [units[0][0], report("b")]
        blobs = [seal(relayed, "w", reports, unit="") for reports in (half, units[1], units[2])]
        response = put(client, relayed, "w", secrets.token_hex(16), blobs, unit="")
        assert (response.status_code, response.json["stored"]) == (201, 1), response.json


@pytest.mark.parametrize("survey_id", ["q", "w"])
@pytest.mark.parametrize("empty", ["replay", "garbage"])
def test_a_batch_that_stored_nobody_leaves_the_published_central_epsilon_standing(
    client, storage, relayed, survey_id, empty
):
    """A batch that stored no one (a replay under a new batch id, a batch of blobs that do
    not open) hides no one and is not the smallest batch: the central epsilon stays the one
    of the smallest batch that stored someone, and the empty batch is counted apart."""
    unit = "a" if survey_id == "q" else ""
    make = (lambda: [report()]) if survey_id == "q" else (lambda: [report("a"), report("b")])
    units = [make() for _ in range(4)]
    blobs = [seal(relayed, survey_id, reports, unit=unit) for reports in units]
    first = put(client, relayed, survey_id, secrets.token_hex(16), blobs, unit=unit)
    assert (first.status_code, first.json["stored"]) == (201, 4), first.json
    if empty == "replay":
        nobody = [seal(relayed, survey_id, reports, unit=unit) for reports in units[:3]]
    else:
        nobody = [tampered(blob) for blob in blobs[:3]]
    response = put(client, relayed, survey_id, secrets.token_hex(16), nobody, unit=unit)
    assert (response.status_code, response.json["stored"]) == (201, 0), response.json
    summary = storage.relay.batch_summary(survey_id)[unit]
    assert (summary["batches"], summary["smallest_batch"], summary["stored"]) == (1, 4, 4)
    assert summary["empty_batches"] == 1
    results = client.get(f"/api/v1/surveys/{survey_id}/results")
    assert results.status_code == 200, results.json
    assert results.json["relay"]["smallest_batch"] == 4
    assert results.json["relay"]["batches"] == 1
    assert results.json["relay"]["empty_batches"] == 1
    for question in results.json["questions"]:
        if survey_id == "q" and question["question"] != "a":
            continue  # question b's unit had no batch
        central = question["central"]
        assert central["central_epsilon"] is not None, central
        assert central["batch"] == 4


@pytest.mark.parametrize("closed_after", [0, 1])
def test_a_survey_closed_between_chunks_keeps_what_was_stored_and_says_so(
    client, storage, relayed, monkeypatch, closed_after
):
    """Closed before the first chunk: refused whole, nothing stored.  Closed after it: the
    batch is recorded with the reports stored before, and the rest is not stored."""
    blobs = [seal(relayed, "q", [report()]) for _ in range(20)]
    store, calls = batches._store, []

    def closes(*args: Any) -> int:
        if len(calls) == closed_after:
            storage.close_survey("q")
        calls.append(args)
        return store(*args)

    monkeypatch.setattr(batches, "_store", closes)
    batch_id = secrets.token_hex(16)
    response = put(client, relayed, "q", batch_id, blobs)
    if closed_after == 0:
        assert response.status_code == 409, response.json
        assert response.json["type"] == "urn:deniable:problem:survey-closed"  # relay drops it
        assert storage.relay.find_batch("q", batch_id) is None
        assert stored(storage, "q") == []
        return
    assert response.status_code == 201, response.json
    assert (response.json["stored"], response.json["dropped"]) == (CHUNK, 0)
    assert len(stored(storage, "q")) == CHUNK
    again = put(client, relayed, "q", batch_id, blobs)
    assert (again.status_code, again.json) == (200, response.json)
    fresh = put(client, relayed, "q", secrets.token_hex(16), blobs[:3])
    assert fresh.status_code == 409 and fresh.json["type"] == "urn:deniable:problem:survey-closed"


class KillsAProcess:
    """A pool that, once ``chunks`` chunks are queued, SIGKILLs one of its stopped processes
    (SIGSTOPped, so no chunk is opened before) and lets the other go on."""

    def __init__(self, pool: Any, chunks: int) -> None:
        self.pool, self.left = pool, chunks

    def submit(self, *args: Any) -> Any:
        future = self.pool.submit(*args)
        self.left -= 1
        if self.left == 0:
            killed, *others = self.pool._processes.values()
            os.kill(killed.pid, signal.SIGKILL)
            killed.join()
            # Why wait: the pool must see the death before the others run, or under load
            # they may open every chunk first and the batch is (rightly) stored whole.
            deadline = time.monotonic() + 30
            while not self.pool._broken and time.monotonic() < deadline:
                time.sleep(0.01)
            for process in others:
                os.kill(process.pid, signal.SIGCONT)
        return future

    def shutdown(self, **kwargs: Any) -> None:
        self.pool.shutdown(**kwargs)


def test_a_decryption_process_killed_mid_batch_refuses_it_and_a_new_pool_takes_it_again(
    client, storage, relayed, monkeypatch
):
    """A decryption process killed while the batch's chunks wait: 503 and nothing recorded;
    the resend is opened by a new pool and stores each report once.  A process killed
    while the pool is idle costs nothing: the next batch starts a new pool."""
    monkeypatch.setattr(opening, "_pool", None)  # this test's own pools
    blobs = [seal(relayed, "q", [report()]) for _ in range(30)]
    assert put(client, relayed, "q", secrets.token_hex(16), blobs[:10]).status_code == 201
    pool = opening._decryption_pool()
    for process in pool._processes.values():
        os.kill(process.pid, signal.SIGSTOP)
    opening._pool = KillsAProcess(pool, chunks=3)  # 20 blobs: chunks of 7, 7 and 6
    batch_id = secrets.token_hex(16)
    refused = put(client, relayed, "q", batch_id, blobs[10:])
    assert refused.status_code == 503, refused.json
    assert storage.relay.find_batch("q", batch_id) is None
    assert len(stored(storage, "q")) == 10
    again = put(client, relayed, "q", batch_id, blobs[10:])
    assert (again.status_code, again.json["stored"]) == (201, 20), again.json
    rows = stored(storage, "q")
    assert len({r.id for r in rows}) == len(rows) == 30

    idle = opening._decryption_pool()
    assert idle is not pool
    process = next(iter(idle._processes.values()))
    os.kill(process.pid, signal.SIGKILL)
    process.join()
    with pytest.raises(BrokenProcessPool):  # once the pool has seen it die
        for _ in range(200):
            idle.submit(abs, 1).result()
            time.sleep(0.05)
    assert put(client, relayed, "q", secrets.token_hex(16), blobs[:10]).status_code == 201
    fresh = opening._decryption_pool()
    assert fresh is not idle
    fresh.shutdown()


# The length of a yes/no question's sealed unit; canonical text with "-", "_" and spare bits.
RAW = b"\xfb\xff\xff" + bytes(range(124))


@pytest.mark.parametrize("spelling", noncanonical_spellings(RAW))
def test_a_blob_not_in_canonical_unpadded_base64url_is_refused_and_nothing_stored(
    client, storage, relayed, spelling
):
    good = sealing.encode_blob(seal(relayed, "q", [report()]))
    body = {
        "format": "deniable.batch/1",
        "unit": "a",
        "sealed": [good, good, noncanonical_spellings(RAW)[spelling]],
    }
    response = client.put(
        f"/api/v1/surveys/q/batches/{'b' * 32}",
        json=body,
        headers={"Authorization": f"Bearer {relayed['credential']}"},
    )
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.json["type"] == "urn:deniable:problem:invalid-report"
    assert "sealed[2]" in response.json["detail"]
    assert stored(storage, "q") == []
    assert storage.relay.find_batch("q", "b" * 32) is None


def _spelled(reports: list[dict], unit: str, order: tuple[str, ...]) -> bytes:
    """A body with each report's members in ``order`` (compact JSON, ASCII)."""
    import json

    def one(report: dict) -> dict:
        return {key: report[key] for key in order}

    document = one(reports[0]) if unit else {"reports": [one(r) for r in reports]}
    return json.dumps(document, separators=(",", ":")).encode("ascii")


@pytest.mark.parametrize("survey_id", ["q", "w"])
@pytest.mark.parametrize(
    "order", [("id", "question", "payload"), ("question", "payload", "id")], ids=["6.1", "other"]
)
def test_a_sealed_body_with_its_members_in_another_order_is_stored(
    client, storage, relayed, survey_id, order
):
    """docs/protocol.md §10.3: senders write a body's members in lexicographic order, and a
    recipient reads the body as JSON: the order of its members is not checked (it is
    inside the AEAD and padded to a fixed size, so it tells no one anything)."""
    unit = "a" if survey_id == "q" else ""
    make = (lambda: [report()]) if survey_id == "q" else (lambda: [report("a"), report("b")])
    sets = [make() for _ in range(3)]
    survey = relayed["surveys"][survey_id]
    blobs = [
        sealing.seal(
            relayed["public"],
            survey_id=survey_id,
            unit=unit,
            plaintext=_spelled(reports, unit, order),
            size=sealing.unit_size(survey, unit),
        )
        for reports in sets
    ]
    response = put(client, relayed, survey_id, secrets.token_hex(16), blobs, unit=unit)
    assert (response.status_code, response.json["stored"], response.json["dropped"]) == (
        201,
        3,
        0,
    ), response.json
    assert len(stored(storage, survey_id)) == 3 * len(sets[0])


def test_identical_blobs_count_toward_min_batch_but_store_one_respondent(client, storage, relayed):
    """docs/protocol.md §11.4: ``min_batch`` counts the blobs received, copies included (an
    honest relay holds identical bytes once, so it never sends two); the batch's size,
    and so the central epsilon, counts the respondents stored: the copy adds nobody."""
    first, second = (seal(relayed, "q", [report()]) for _ in range(2))
    response = put(client, relayed, "q", secrets.token_hex(16), [first, first, second])
    assert response.status_code == 201, response.json
    assert (response.json["received"], response.json["stored"], response.json["dropped"]) == (
        3,
        2,
        0,
    )
    assert storage.relay.batch_summary("q")["a"]["smallest_batch"] == 2
