"""The relay and the aggregator as real processes: the relay flow end to end.

One deployment per backend (module scope; conftest.py): surveys ``q`` (per
question, min_batch 20), ``w`` (whole submissions, min_batch 10) and ``p``
(per question, min_batch 60, for the order test).  Tests run in file order
and build on what earlier ones forwarded only where they say so.
"""

from __future__ import annotations

import base64
import json
import math
import os
import secrets
import signal
import sqlite3
import time
import uuid

import pytest
import requests

from deniable import sealing
from deniable.errors import SealingError
from deniable.results import question_results

from .conftest import MARKER, WINDOW_SECONDS, b64

# The tables where a service's own URL (on 127.0.0.1 in these tests) belongs.
ADDRESSES_ALLOWED = {"surveys", "relay_credentials", "relayed_surveys"}
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ANSWERS = [{"smoker": i % 3 == 0, "team": ["red", "green", "blue"][i % 3]} for i in range(200)]


def stored_batches(deployment, survey_id: str) -> dict:
    done = deployment.aggregator_cli("relay", "batches", survey_id, "--json")
    return json.loads(done.stdout)["units"]


def estimates(deployment, survey_id: str, reports: list[dict]) -> dict:
    """The unsealed path's estimator over the same reports (deniable.results.question_results)."""
    survey = deployment.surveys[survey_id]
    expected = {}
    for question in survey.questions:
        payloads = [r["payload"] for r in reports if r["question"] == question.id]
        result = question_results(question, question.statistics(payloads), len(payloads), beta=0.05)
        expected[question.id] = [c["estimate"] for c in result["categories"]]
    return expected


def test_reports_reach_results_only_after_min_batch_and_match_the_unsealed_estimator(deployment):
    sent = []
    for answers in ANSWERS[:19]:
        body, reports = deployment.seal("q", answers)
        response = deployment.submit("q", body)
        assert response.status_code == 202, response.text
        sent += reports
    time.sleep(WINDOW_SECONDS + 0.6)  # the window passed; 19 < min_batch 20 must wait
    assert deployment.results("q")["n_reports"] == 0
    waiting = deployment.relay_status()["q"]["waiting"]
    assert waiting == {"smoker": 19, "team": 19}
    body, reports = deployment.seal("q", ANSWERS[19])
    assert deployment.submit("q", body).status_code == 202
    sent += reports
    document = deployment.wait_for(lambda: (d := deployment.results("q"))["n_reports"] == 40 and d)
    expected = estimates(deployment, "q", sent)
    for question in document["questions"]:
        got = [c["estimate"] for c in question["categories"]]
        assert got == pytest.approx(expected[question["question"]], abs=1e-12)
        central = question["central"]
        assert central["batch"] == 20 and central["delta"] == 1e-6
        assert 0 < central["central_epsilon"] <= central["local_epsilon"] == question["epsilon"]
    relay = document["relay"]
    assert relay["smallest_batch"] == 20 and relay["dropped"] == 0 and relay["batches"] == 2
    assert any("collude" in condition for condition in relay["conditions"])
    status = deployment.relay_status()["q"]
    assert sum(status["waiting"].values()) == 0 and status["in_batches"] == 0
    assert status["forwarded_reports"] == 40 and status["smallest_batch"] == 20
    csv = requests.get(
        f"{deployment.aggregator.url}/api/v1/surveys/q/results?format=csv", timeout=10
    ).text
    assert "central_epsilon" in csv.splitlines()[0]
    table = deployment.aggregator_cli("results", "q").stdout
    assert "central epsilon" in table and "did not collude" in table
    page = requests.get(f"{deployment.aggregator.url}/surveys/q", timeout=10).text
    assert 'id="relay-notice"' in page and 'data-smallest-batch="20"' in page
    assert page.count('class="meta central"') == 2 and "did not collude" in page


def test_the_python_client_sends_to_the_relay_only_and_its_answers_reach_the_results(deployment):
    before = deployment.results("q")["n_reports"]
    receipts = []
    for index in range(20):
        client = deployment.client(f"device-{index}")
        receipt = client.answer("q", ANSWERS[index])
        assert receipt.delivered  # 202 from the relay
        receipts.append(receipt)
    deployment.wait_for(lambda: deployment.results("q")["n_reports"] == before + 40)
    stored = {row["id"] for row in deployment.export("q")}
    assert all(set(r.report_ids) <= stored for r in receipts)


def test_enrolment_tokens_are_checked_and_spent_at_the_relay(deployment):
    body, _ = deployment.seal("e", ANSWERS[0])
    missing = deployment.submit("e", body)
    assert missing.status_code == 401
    forged = deployment.submit("e", {**body, "enrolment_token": "not-issued"})
    assert forged.status_code == 403
    first = {**body, "enrolment_token": deployment.tokens[0]}
    assert deployment.submit("e", first).status_code == 202
    assert deployment.submit("e", first).status_code == 202  # a resend: held once
    other, _ = deployment.seal("e", ANSWERS[1])
    spent = deployment.submit("e", {**other, "enrolment_token": deployment.tokens[0]})
    assert spent.status_code == 403
    assert (
        deployment.submit("e", {**other, "enrolment_token": deployment.tokens[1]}).status_code
        == 202
    )
    deployment.wait_for(lambda: deployment.results("e")["n_reports"] == 4)
    status = deployment.relay_status()["e"]
    assert status["enrolment_tokens"] == {"known": 3, "spent": 2}
    direct = requests.post(
        f"{deployment.aggregator.url}/api/v1/surveys/e/reports",
        timeout=10,
        json={"id": str(uuid.uuid4()), "question": "smoker", "payload": "01"},
        headers={"X-Deniable-Enrolment": deployment.tokens[2]},
    )
    assert direct.status_code == 403  # a token never travels to the aggregator with a report


def test_whole_submissions_are_one_unit_and_stored_together(deployment):
    sent = []
    for answers in ANSWERS[:10]:
        body, reports = deployment.seal("w", answers)
        assert [u["unit"] for u in body["units"]] == [""]
        assert deployment.submit("w", body).status_code == 202
        sent += reports
    document = deployment.wait_for(lambda: (d := deployment.results("w"))["n_reports"] == 20 and d)
    expected = estimates(deployment, "w", sent)
    for question in document["questions"]:
        got = [c["estimate"] for c in question["categories"]]
        assert got == pytest.approx(expected[question["question"]], abs=1e-12)
        assert question["central"]["local_epsilon"] == pytest.approx(3.0)  # the survey's total
    assert stored_batches(deployment, "w")[""]["smallest_batch"] == 10
    # Each respondent's reports share one submission key, and no two respondents share one.
    by_id = {r["id"]: r["submission"] for r in deployment.export("w")}
    keys = {by_id[r["id"]] for r in sent}
    assert None not in keys and len(keys) == 10
    assert all(by_id[a["id"]] == by_id[b["id"]] for a, b in zip(sent[::2], sent[1::2], strict=True))


def test_no_address_header_or_arrival_time_is_stored_or_logged(deployment):
    rows = deployment.export("q")
    assert rows and {r["received_at"] for r in rows[:20]} == {rows[0]["received_at"]}
    assert all(
        set(r) == {"seq", "id", "question", "payload", "received_at", "submission"} for r in rows
    )
    # Shuffled per question: no key joins one respondent's answers across questions.
    assert all(r["submission"] is None for r in rows)
    if deployment.backend == "sqlite":
        blobs = b"".join(path.read_bytes() for path in deployment.directory.rglob("*.sqlite3*"))
        assert MARKER.encode() not in blobs
    else:
        import psycopg

        for dsn in (
            deployment.aggregator_env["DENIABLE_DATABASE"],
            deployment.relay_env["DENIABLE_RELAY_DATABASE"],
        ):
            with psycopg.connect(dsn) as connection:
                tables = [
                    t
                    for (t,) in connection.execute(
                        "SELECT table_name FROM information_schema.tables WHERE "
                        "table_schema = current_schema()"
                    )
                ]
                for table in tables:
                    found = connection.execute(
                        f'SELECT COUNT(*) FROM "{table}" t WHERE t::text LIKE %s', (f"%{MARKER}%",)
                    ).fetchone()
                    assert found[0] == 0, table
                    found = connection.execute(
                        f"SELECT COUNT(*) FROM \"{table}\" t WHERE t::text LIKE '%%127.0.0.1%%'"
                    ).fetchone()
                    # Survey definitions and the relay's list name the services' URLs.
                    assert found[0] == 0 or table in ADDRESSES_ALLOWED, table
    for log in (deployment.relay.log(), deployment.aggregator.log()):
        assert MARKER not in log


def test_the_relay_cannot_read_what_it_holds(deployment):
    body, reports = deployment.seal("q", ANSWERS[0])
    assert deployment.submit("q", body).status_code == 202
    from deniable.relay.storage import open_storage

    storage = open_storage({"DATABASE": deployment.relay_env["DENIABLE_RELAY_DATABASE"]})
    try:
        held = dict(storage.held_rows("q"))
    finally:
        storage.close()
    assert set(held) == {"smoker", "team"}
    for report in reports:
        blob = held[report["question"]]
        # The id (36 bytes) and the whole plaintext body never appear: a short payload such
        # as "00" would turn up in random bytes by chance (~0.3%), so it is not looked for alone.
        body = sealing.unit_body([report], report["question"])
        assert report["id"].encode() not in blob and body not in blob
        with pytest.raises(SealingError):  # any key the relay could hold is not the aggregator's
            sealing.open_sealed(
                sealing.generate_private_key(), survey_id="q", unit=report["question"], sealed=blob
            )
    keys = [p for p in (deployment.directory / "relay").rglob("*") if p.suffix == ".pem"]
    assert keys == []  # the relay has no private key at all


def test_forwarded_order_is_independent_of_arrival_order(deployment):
    """Kendall's inversion count between arrival and stored order, with a Hoeffding bound.

    Under a uniform permutation the inversion count I of n items is a sum of
    independent U_i uniform on {0..i-1} (the Lehmer code), so
    P(|I - n(n-1)/4| >= t) <= 2 exp(-2 t^2 / sum_i (i-1)^2).  t is chosen so that
    this false-alarm rate is 1e-6; arrival order kept (I = 0) or reversed is caught.
    """
    n = 60
    order = []
    for answers in ANSWERS[:n]:
        body, reports = deployment.seal("p", answers)
        assert deployment.submit("p", body).status_code == 202
        order.append(next(r["id"] for r in reports if r["question"] == "smoker"))
    deployment.wait_for(lambda: deployment.results("p")["n_reports"] == 2 * n)
    stored = [r["id"] for r in deployment.export("p") if r["question"] == "smoker"]
    arrival = {report_id: index for index, report_id in enumerate(order)}
    positions = [arrival[report_id] for report_id in stored]
    inversions = sum(1 for i in range(n) for j in range(i + 1, n) if positions[i] > positions[j])
    spread = sum((i - 1) ** 2 for i in range(1, n + 1))
    t = math.sqrt(spread * math.log(2 / 1e-6) / 2)
    assert abs(inversions - n * (n - 1) / 4) < t, (inversions, t)
    assert sorted(positions) == list(range(n))  # every report once


def put(deployment, survey_id, batch_id, blobs, *, unit="smoker", credential=None):
    headers = {}
    if credential is not False:
        headers["Authorization"] = f"Bearer {credential or deployment.credential}"
    return requests.put(
        f"{deployment.aggregator.url}/api/v1/surveys/{survey_id}/batches/{batch_id}",
        json={"format": "deniable.batch/1", "unit": unit, "sealed": [b64(b) for b in blobs]},
        headers=headers,
        timeout=30,
    )


def sealed_blobs(deployment, survey_id, count, unit="smoker"):
    blobs = []
    for answers in ANSWERS[:count]:
        body, _ = deployment.seal(survey_id, answers)
        blob = next(u["sealed"] for u in body["units"] if u["unit"] == unit)
        blobs.append(base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4)))
    return blobs


def test_tampered_blobs_are_dropped_and_counted_and_batches_are_idempotent(deployment):
    blobs = sealed_blobs(deployment, "q", 22)
    for index in (3, 7):
        tampered = bytearray(blobs[index])
        tampered[-5] ^= 0x01
        blobs[index] = bytes(tampered)
    before = deployment.results("q")
    batch_id = secrets.token_hex(16)
    first = put(deployment, "q", batch_id, blobs)
    assert first.status_code == 201, first.text
    assert first.json() | {} == {
        "survey": "q",
        "batch": batch_id,
        "unit": "smoker",
        "received": 22,
        "stored": 20,
        "dropped": 2,
    }
    smoker = lambda d: next(q for q in d["questions"] if q["question"] == "smoker")  # noqa: E731
    after = deployment.results("q")
    assert smoker(after)["n"] == smoker(before)["n"] + 20
    assert after["relay"]["dropped"] == before["relay"]["dropped"] + 2
    # The same batch again, in another order: acknowledged again, nothing stored twice.
    again = put(deployment, "q", batch_id, list(reversed(blobs)))
    assert again.status_code == 200 and again.json() == first.json()
    assert smoker(deployment.results("q"))["n"] == smoker(after)["n"]
    # Another content under that id: refused.
    other = put(deployment, "q", batch_id, sealed_blobs(deployment, "q", 20))
    assert other.status_code == 409
    assert stored_batches(deployment, "q")["smoker"]["dropped"] >= 2
    # A report id stored before, sealed again with another payload: dropped, the rest stored.
    survey = deployment.surveys["q"]
    taken = next(r for r in deployment.export("q") if r["question"] == "smoker")
    other = "01" if taken["payload"] == "00" else "00"
    reused = sealing.seal(
        deployment.encryption_key,
        survey_id="q",
        unit="smoker",
        plaintext=sealing.unit_body([{**taken, "payload": other}], "smoker"),
        size=sealing.unit_size(survey, "smoker"),
    )
    fresh = sealed_blobs(deployment, "q", 20)
    mixed = put(deployment, "q", secrets.token_hex(16), [*fresh, reused])
    assert mixed.status_code == 201 and (mixed.json()["stored"], mixed.json()["dropped"]) == (20, 1)


def test_unauthenticated_foreign_small_and_direct_submissions_are_refused(deployment):
    blobs = sealed_blobs(deployment, "q", 20)
    batch = secrets.token_hex(16)
    assert put(deployment, "q", batch, blobs, credential=False).status_code == 401
    assert put(deployment, "q", batch, blobs, credential="dnr_forged").status_code == 403
    other = deployment.aggregator_cli(
        "relay", "credential", "--relay-url", "https://other-relay.example"
    ).stdout.strip()
    refused = put(deployment, "q", batch, blobs, credential=other)
    assert refused.status_code == 403 and "another relay" in refused.json()["detail"]
    small = put(deployment, "q", batch, blobs[:19])
    assert small.status_code == 422 and "min_batch" in small.json()["detail"]
    direct = requests.post(
        f"{deployment.aggregator.url}/api/v1/surveys/q/reports",
        json={"id": str(uuid.uuid4()), "question": "smoker", "payload": "01"},
        timeout=10,
    )
    assert direct.status_code == 403 and "relay" in direct.json()["detail"]
    assert direct.headers["Content-Type"] == "application/problem+json"
    for units in stored_batches(deployment, "q").values():
        assert units["smallest_batch"] >= 20  # never a batch below min_batch


def test_the_relay_refuses_what_it_cannot_relay(deployment):
    body, _ = deployment.seal("q", ANSWERS[0])
    url = f"{deployment.relay.url}/api/v1/surveys"
    unknown = requests.post(f"{url}/nope/sealed", json=body, timeout=10)
    assert unknown.status_code == 404
    assert unknown.headers["Content-Type"] == "application/problem+json"
    oversize = json.loads(json.dumps(body))
    oversize["units"][0]["sealed"] = b64(b"x" * 20_000)
    assert requests.post(f"{url}/q/sealed", json=oversize, timeout=10).status_code == 413
    short = json.loads(json.dumps(body))  # every unit of a question has one sealed length
    blob = base64.urlsafe_b64decode(short["units"][0]["sealed"] + "==")
    short["units"][0]["sealed"] = b64(blob[:-1])
    refused = requests.post(f"{url}/q/sealed", json=short, timeout=10)
    assert refused.status_code == 422 and "bytes" in refused.json()["detail"]
    malformed = json.loads(json.dumps(body))
    malformed["units"].append(malformed["units"][0])
    assert requests.post(f"{url}/q/sealed", json=malformed, timeout=10).status_code == 422
    assert (
        requests.post(
            f"{url}/q/sealed", data="{", timeout=10, headers={"Content-Type": "application/json"}
        ).status_code
        == 400
    )
    whole = json.loads(json.dumps(body))  # a question unit sent to a whole-submission survey
    assert requests.post(f"{url}/w/sealed", json=whole, timeout=10).status_code == 422


@pytest.mark.slow
def test_every_acknowledged_report_is_stored_once_across_sigkills(deployment):
    """SIGKILL the relay while its batch waits in a stopped aggregator, then the aggregator."""
    before = deployment.results("p")["n_reports"]
    acknowledged = 0
    deployment.aggregator.signal(signal.SIGSTOP)  # the relay's PUT will hang in the socket
    try:
        for answers in ANSWERS[:60]:
            body, _ = deployment.seal("p", answers)
            assert deployment.submit("p", body).status_code == 202
            acknowledged += 1
        deployment.wait_for(lambda: deployment.relay_status()["p"]["in_batches"] == 120)
        time.sleep(0.3)  # the PUT has been sent (or is being sent) to the stopped aggregator
        deployment.relay.kill()
    finally:
        deployment.aggregator.signal(signal.SIGCONT)
    # The aggregator may have stored the batch whose acknowledgement nobody read.
    deployment.relay.start()
    for answers in ANSWERS[60:120]:
        body, _ = deployment.seal("p", answers)
        assert deployment.submit("p", body).status_code == 202
        acknowledged += 1
    time.sleep(WINDOW_SECONDS + 0.2)
    deployment.aggregator.kill()  # mid-ingest of the next batch, or just before it
    deployment.aggregator.start()
    deployment.wait_for(
        lambda: (
            deployment.relay_status()["p"]["in_batches"] == 0
            and sum(deployment.relay_status()["p"]["waiting"].values()) == 0
        ),
        seconds=30,
    )
    document = deployment.results("p")
    assert document["n_reports"] == before + 2 * acknowledged
    rows = deployment.export("p")
    assert len({r["id"] for r in rows}) == len(rows) == before + 2 * acknowledged


@pytest.mark.browser
def test_the_respond_page_seals_and_sends_to_the_relay_only(deployment):
    """One short Chromium run (one backend: the page is the subject)."""
    if deployment.backend != "sqlite":
        pytest.skip("the respond page is checked once, on SQLite")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    sync_playwright = sync_api.sync_playwright

    before = deployment.relay_status()["q"]["waiting"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context().new_page()
        posts = []
        page.on("request", lambda r: r.method == "POST" and posts.append((r.url, r.post_data)))
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(f"{deployment.aggregator.url}/surveys/q/respond")
        page.wait_for_selector(
            "[data-deniable-survey][data-state=ready]", state="attached", timeout=20_000
        )
        page.get_by_label("Yes", exact=True).check()
        page.get_by_label("green", exact=True).check()
        page.get_by_role("button", name="Randomize my answers").click()
        page.wait_for_selector("[data-deniable-survey][data-state=review]", state="attached")
        page.get_by_role("button", name="Send these noisy values").click()
        page.wait_for_selector(
            "[data-deniable-survey][data-state=sent]", state="attached", timeout=20_000
        )
        browser.close()
    assert errors == []
    assert len(posts) == 1 and posts[0][0] == f"{deployment.relay.url}/api/v1/surveys/q/sealed"
    body = json.loads(posts[0][1])
    assert [u["unit"] for u in body["units"]] == ["smoker", "team"]
    assert "green" not in posts[0][1]
    after = deployment.relay_status()["q"]["waiting"]
    assert {unit: after.get(unit, 0) - before.get(unit, 0) for unit in ("smoker", "team")} == {
        "smoker": 1,
        "team": 1,
    }


def test_closed_surveys_are_refused_at_the_relay(deployment):
    for answers in ANSWERS[:3]:  # fewer than min_batch 10: they can never be forwarded
        body, _ = deployment.seal("w", answers)
        assert deployment.submit("w", body).status_code == 202
    deployment.aggregator_cli("close-survey", "w", "--yes")  # relayed: confirmed
    deployment.wait_for(lambda: deployment.relay_status()["w"]["status"] == "closed")
    status = deployment.wait_for(
        lambda: (s := deployment.relay_status()["w"])["discarded_reports"] == 3 and s
    )
    assert sum(status["waiting"].values()) == 0  # deleted, never forwarded
    body, _ = deployment.seal("w", ANSWERS[0])
    refused = deployment.submit("w", body)
    assert refused.status_code == 409 and "closed" in refused.json()["detail"]
    assert refused.json()["type"] == "urn:deniable:problem:survey-closed"


def test_the_relay_database_holds_no_time_or_address_columns(deployment):
    if deployment.backend != "sqlite":
        pytest.skip("the schema is the same on both backends; read from SQLite")
    path = deployment.relay_env["DENIABLE_RELAY_DATABASE"]
    with sqlite3.connect(path) as connection:
        columns = connection.execute("SELECT name FROM pragma_table_info('held')").fetchall()
    # key_id: the encryption key a unit was sealed to, one for every unit of a key
    assert {c for (c,) in columns} == {"id", "survey_id", "unit", "sealed", "batch_id", "key_id"}


def test_the_relay_credential_is_replaced_without_losing_held_units(deployment):
    """docs/operations.md, "Rotating the relay credential": a new credential, set at the
    relay (units held meanwhile stay), the old one revoked; batches go on being accepted.
    Near the end of this module: the other surveys keep the revoked credential."""
    import hashlib

    before = deployment.relay_status()["q"]["forwarded_reports"]
    for answers in ANSWERS[:5]:  # held while the credential changes
        assert deployment.submit("q", deployment.seal("q", answers)[0]).status_code == 202
    relay_url = deployment.relay_env["DENIABLE_RELAY_PUBLIC_URL"]
    credential = deployment.aggregator_cli(
        "relay", "credential", "--relay-url", relay_url
    ).stdout.strip()
    path = deployment.directory / "credential.new"
    path.write_text(credential)
    done = deployment.relay_cli("set-credential", "q", "--credential-file", str(path))
    assert "q" in done.stdout
    old = hashlib.sha256(deployment.credential.encode()).hexdigest()[:16]
    deployment.aggregator_cli("relay", "revoke", old)
    missing = deployment.relay_cli(
        "set-credential", "nope", "--credential-file", str(path), check=False
    )
    assert missing.returncode == 3 and missing.stderr.count("\n") == 1
    for answers in ANSWERS[5:20]:
        assert deployment.submit("q", deployment.seal("q", answers)[0]).status_code == 202
    deployment.wait_for(
        lambda: deployment.relay_status()["q"]["forwarded_reports"] >= before + 2 * 20
    )  # both units of the 20 submissions


def _replayed(deployment) -> tuple[dict, dict, int]:
    """A batch, its blobs again under a new batch id, and one old blob with a new one
    (what a relay holding the credential, or a captured forward, could send)."""

    def smoker() -> int:
        questions = deployment.results("e")["questions"]
        return next(q for q in questions if q["question"] == "smoker")["n"]

    before = smoker()
    blobs = sealed_blobs(deployment, "e", 3)
    # a credential of this relay's own (an earlier test revokes the first one)
    credential = deployment.aggregator_cli(
        "relay", "credential", "--relay-url", deployment.relay.url
    ).stdout.strip()
    first = put(deployment, "e", secrets.token_hex(16), blobs[:2], credential=credential)
    assert first.status_code == 201 and first.json()["stored"] == 2, first.text
    replay = put(
        deployment, "e", secrets.token_hex(16), list(reversed(blobs[:2])), credential=credential
    )
    mixed = put(deployment, "e", secrets.token_hex(16), [blobs[0], blobs[2]], credential=credential)
    assert replay.status_code == mixed.status_code == 201
    return replay.json(), mixed.json(), smoker() - before


def test_a_forward_replayed_under_a_new_batch_id_stores_nobody_twice(deployment):
    _, _, added = _replayed(deployment)
    assert added == 3  # two, then only the new one of the mixed batch


def test_a_replayed_report_counts_in_no_batch_size(deployment):
    """relayed.py: a batch's size is the blobs that opened to NEW valid reports."""
    replay, mixed, _ = _replayed(deployment)
    assert (replay["stored"], mixed["stored"]) == (0, 1)


def test_a_unit_sealed_to_a_key_the_aggregator_does_not_accept_is_refused_at_the_relay(deployment):
    """The body's key_id must be an encryption key the relay verified in the aggregator's
    signed key document: the current one, or one retired since (still opened there).
    Runs last in this module: it rotates the aggregator's keys."""
    from .conftest import sealed_submission

    def held() -> int:  # every unit the relay took for q: waiting, in a batch, or forwarded
        row = deployment.relay_status()["q"]
        return sum(row["waiting"].values()) + row["in_batches"] + row["forwarded_reports"]

    before = held()
    body, _ = deployment.seal("q", ANSWERS[0])
    for key_id in ("0123456789abcdef", deployment.key_id[::-1]):
        refused = deployment.submit("q", dict(body, key_id=key_id))
        assert refused.status_code == 409, refused.text
        assert refused.headers["Content-Type"] == "application/problem+json"
        assert key_id in refused.json()["detail"] and "key" in refused.json()["detail"]
    assert held() == before  # nothing refused is held
    deployment.aggregator_cli("key", "rotate")
    key_url = f"{deployment.aggregator.url}/api/v1/key"
    served = deployment.wait_for(
        lambda: (
            (k := requests.get(key_url, timeout=10).json())["encryption_key"]["key_id"]
            != deployment.key_id
            and k
        )
    )
    new_key = served["encryption_key"]
    public = base64.b64decode(new_key["public_key"])
    fresh, _ = sealed_submission(deployment.surveys["q"], ANSWERS[1], public, new_key["key_id"])
    # The relay learns the new key at its next refresh, or sooner when a unit sealed to an
    # unknown key makes it ask (at most every KEY_RECHECK_SECONDS; the refusals above asked).
    deployment.wait_for(lambda: deployment.submit("q", fresh).status_code == 202)
    retired, _ = deployment.seal("q", ANSWERS[2])  # sealed to the key rotated away just now
    assert deployment.submit("q", retired).status_code == 202
    assert held() == before + 4
