"""Relay noise (relay/noise.py): the relay adds dummy units to a noised survey's batches.

End to end with the relay and the aggregator as real processes (conftest.py): the relay
refuses to register noise it cannot account for; a noised batch carries its real count and
exactly real + sum of D_y blobs; every dummy opens with the aggregator's current private key
to a valid report of one output value, and is as long as a real unit, with an id of the same
form, sealed to the same key; a relay killed (SIGKILL) after forming a batch and before its
acknowledgement sends the very same blobs again, and the aggregator stores each once and
publishes the real respondents with every dummy taken out (:func:`assert_published`).  And
the per-value dummy counts follow the signed law (bounds with false-alarm rate <= 1e-6).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
import signal
import sqlite3
import time
from collections import Counter
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deniable import sealing
from deniable.dummies import BinomialDummies, GeometricDummies, calibrate
from deniable.errors import InvalidSurvey
from deniable.relay import noise
from deniable.survey import Survey
from deniable.wire import RelayBatch, strict_json

from .conftest import BACKENDS, deployed, sealed_submission

# A signed law that meets its signed (epsilon, delta) (deniable.dummies.calibrate), and one
# that does not: two fair coins per value are far from delta 1e-6 at epsilon 1.
NOISE = calibrate(3.0, 1e-4)
SIGNED_NOISE = {"epsilon": 3.0, "delta": 1e-4, "law": NOISE.law.to_dict()}
WEAK_NOISE = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 2}}
MIN_BATCH = 5
UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ANSWERS = [{"smoker": i % 2 == 0, "team": ["red", "green", "blue"][i % 3]} for i in range(40)]


def noised_definition(survey_id: str, relay_url: str, relay_noise: dict[str, Any]) -> dict:
    return {
        "format": "deniable.survey/2",
        "id": survey_id,
        "title": f"Noised {survey_id}",
        "questions": [
            {"id": "smoker", "type": "yes_no", "text": "Do you smoke?", "epsilon": 1.0},
            {
                "id": "team",
                "type": "single_choice",
                "text": "Your team?",
                "epsilon": 2.0,
                "options": ["red", "green", "blue"],
                "mechanism": "grr",
            },
        ],
        "relay": {
            "url": relay_url,
            "min_batch": MIN_BATCH,
            "shuffle_unit": "question",
            "noise": relay_noise,
        },
    }


@pytest.fixture(scope="module", params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path_factory):
    """An aggregator and a relay relaying the noised survey ``n``."""
    directory = tmp_path_factory.mktemp(f"noise-{request.param}")
    with deployed(
        request.param,
        directory,
        lambda relay_url: {"n": noised_definition("n", relay_url, SIGNED_NOISE)},
    ) as running:
        yield running


def relay_query(deployment, sql: str) -> list[tuple[Any, ...]]:
    """Rows of one query on the relay's database (either backend)."""
    database = deployment.relay_env["DENIABLE_RELAY_DATABASE"]
    if deployment.backend == "sqlite":
        with sqlite3.connect(database) as connection:
            return connection.execute(sql).fetchall()
    import psycopg

    with psycopg.connect(database) as connection:
        return connection.execute(sql).fetchall()


def private_encryption_key(deployment) -> Any:
    """The aggregator's current X25519 private key, from its data directory."""
    from deniable.aggregator.signing import load_encryption_keys

    home = Path(deployment.aggregator_env["DENIABLE_HOME"])
    keys = load_encryption_keys(home / "signing_key.pem")
    assert keys is not None and keys.key_id == deployment.key_id
    return keys.current


def assert_published(
    deployment, survey_id: str, respondents: int, rows: list[dict[str, Any]], batches: int = 1
) -> dict[str, Any]:
    """The published results of a survey whose every batch carried plausible dummies:
    n is the real respondents, the three figures are there with their words, and each
    estimate is the mechanism's estimator on the exported statistics less the published
    expectation of the dummies per output value."""
    document = deployment.results(survey_id)
    survey = deployment.surveys[survey_id]
    signed = survey.relay.noise
    assert document["relay"]["respondents"] == respondents
    assert document["n_reports"] == respondents * len(survey.questions)
    assert document["relay"]["dummies"] == len(rows) - document["n_reports"] > 0
    # the same number on the dashboard's survey page and its list of surveys
    page = deployment.session.get(f"{deployment.aggregator.url}/surveys/{survey_id}", timeout=30)
    assert f'data-respondents="{respondents}"' in page.text
    listed = deployment.session.get(f"{deployment.aggregator.url}/api/v1/surveys", timeout=30)
    (entry,) = [s for s in listed.json()["surveys"] if s["id"] == survey_id]
    assert entry["n_reports"] == document["n_reports"]
    noise = document["relay"]["noise"]
    assert (noise["epsilon"], noise["delta"]) == (signed.epsilon, signed.delta)
    assert noise["law"] == signed.law.to_dict()
    assert noise["noised_batches"] == noise["plausible_batches"] == batches * len(survey.questions)
    for question, result in zip(survey.questions, document["questions"], strict=True):
        oracle = question.oracle
        outputs = oracle.output_reports()
        assert result["n"] == respondents
        assert result["noise"]["batches"] == batches
        expected = result["noise"]["expected_dummies"]
        assert expected == pytest.approx(batches * len(outputs) * signed.law.mean)
        payloads = [row["payload"] for row in rows if row["question"] == question.id]
        statistics = oracle.wire_statistics(payloads)
        recount = oracle.estimate(statistics - expected / len(outputs), respondents)
        estimates = [category["estimate"] for category in result["categories"]]
        assert np.allclose(estimates, recount, rtol=0, atol=1e-9), (estimates, recount)
        central = result["central"]
        figures = {figure["name"]: figure for figure in central["figures"]}
        assert list(figures) == ["local", "shuffle", "noised"]
        assert figures["local"]["epsilon"] == central["local_epsilon"] == question.epsilon
        assert "even if the relay colludes" in figures["local"]["words"]
        assert "relay does not collude" in figures["shuffle"]["words"]
        assert f"of {respondents:,} respondents" in figures["shuffle"]["words"]
        assert "With the relay's dummy reports" in figures["noised"]["words"]
        assert "does not collude" in figures["noised"]["words"]
        assert central["noised_epsilon"] <= min(signed.epsilon + 1e-9, central["shuffle_epsilon"])
        assert central["central_epsilon"] == central["noised_epsilon"]
        assert "noise_note" not in central
    return document


# -- registration --------------------------------------------------------------------------------


def test_the_relay_refuses_to_register_a_law_that_misses_its_signed_delta(deployment):
    """The aggregator signed a definition whose law gives more than its delta (stored here
    without the create command's checks): add-survey verifies the law and refuses, one line,
    exit status 4, and relays nothing."""
    from deniable.aggregator.storage import open_storage

    definition = noised_definition("weak", deployment.relay.url, WEAK_NOISE)
    storage = open_storage({"DATABASE": deployment.aggregator_env["DENIABLE_DATABASE"]})
    try:
        storage.create_survey(Survey.from_dict(definition), results_public=True)
    finally:
        storage.close()
    credential = deployment.directory / "credential"
    done = deployment.relay_cli(
        "add-survey",
        deployment.aggregator.url,
        "weak",
        "--credential-file",
        str(credential),
        check=False,
    )
    assert done.returncode == 4, done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert line.startswith("deniable-relay: error: survey 'weak': this relay cannot add the noise")
    assert "more than the signed" in line and "delta" in line
    assert "weak" not in deployment.relay_status()


def test_check_terms_refuses_what_the_relay_cannot_add():
    """relay/noise.py check_terms, on definitions the parser would refuse too (built around
    it): a whole-submission unit, a mechanism without output reports, and a weak law."""
    good = Survey.from_dict(noised_definition("n", "https://relay.example", SIGNED_NOISE))
    noise.check_terms(good)  # the calibrated law meets its signed delta
    relay = good.relay
    whole = dataclasses.replace(good, relay=dataclasses.replace(relay, shuffle_unit="submission"))
    with pytest.raises(InvalidSurvey, match="shuffle_unit 'question'"):
        noise.check_terms(whole)
    hashed = Survey.from_dict(
        {
            "format": "deniable.survey/2",
            "id": "m",
            "title": "Hashed",
            "questions": [
                {
                    "id": "pick",
                    "type": "single_choice",
                    "text": "Which?",
                    "epsilon": 1.0,
                    "options": ["a", "b", "c", "d"],
                    "mechanism": "olh",
                },
            ],
        }
    )
    unsupported = [q for q in hashed.questions if q.oracle.output_reports() is None]
    assert unsupported, "a mechanism without output reports is needed for this test"
    mixed = dataclasses.replace(good, questions=(*good.questions, unsupported[0]))
    with pytest.raises(InvalidSurvey, match="one value of a small set"):
        noise.check_terms(mixed)
    weak = Survey.from_dict(noised_definition("n", "https://relay.example", WEAK_NOISE))
    with pytest.raises(InvalidSurvey, match="more than the signed"):
        noise.check_terms(weak)


# -- what a noised batch carries, and a SIGKILL between forming and acknowledging ----------------


def test_a_noised_batch_holds_its_dummies_once_and_a_resend_after_sigkill_is_the_same(deployment):
    survey = deployment.surveys["n"]
    reports = []
    deployment.aggregator.signal(signal.SIGSTOP)  # the relay's PUT will hang in the socket
    try:
        for answers in ANSWERS[:MIN_BATCH]:
            body, inside = sealed_submission(
                survey, answers, deployment.encryption_key, deployment.key_id
            )
            assert deployment.submit("n", body).status_code == 202
            reports.extend(inside)
        deployment.wait_for(lambda: deployment.relay_status()["n"]["in_batches"] == 2 * MIN_BATCH)
        batches = {
            batch_id: (unit, size, real_units)
            for batch_id, unit, size, real_units in relay_query(
                deployment, "SELECT batch_id, unit, size, real_units FROM batches"
            )
        }
        held = relay_query(deployment, "SELECT batch_id, sealed, key_id FROM held")
        dummies = relay_query(deployment, "SELECT batch_id, sealed FROM dummies")
        time.sleep(0.3)  # the PUT has been sent (or is being sent) to the stopped aggregator
        deployment.relay.kill()
    finally:
        deployment.aggregator.signal(signal.SIGCONT)
    assert sorted(unit for unit, _, _ in batches.values()) == ["smoker", "team"]
    assert all(size == real == MIN_BATCH for _, size, real in batches.values())
    assert {key_id for _, _, key_id in held} == {deployment.key_id}

    # Every dummy opens with the aggregator's current key to a valid report of one output
    # value; it is as long as a real unit and its id has the same form.
    private = private_encryption_key(deployment)
    dummy_ids = set()
    per_batch: dict[str, list[bytes]] = {batch_id: [] for batch_id in batches}
    for batch_id, sealed in dummies:
        per_batch[batch_id].append(bytes(sealed))
    real_lengths = {batches[b][0]: {len(bytes(s)) for bb, s, _ in held if bb == b} for b in batches}
    for batch_id, blobs in per_batch.items():
        unit = batches[batch_id][0]
        question = survey.question(unit)
        size = sealing.unit_size(survey, unit)
        assert real_lengths[unit] == {sealing.sealed_length(size)}
        outputs = question.oracle.output_reports()
        assert len(blobs) <= len(outputs) * NOISE.law.high
        for blob in blobs:
            assert len(blob) == sealing.sealed_length(size)
            body = sealing.open_sealed(private, survey_id="n", unit=unit, sealed=blob, size=size)
            report = json.loads(body)
            assert body == sealing.unit_body([report], unit)  # the device's exact spelling
            assert list(report) == ["id", "payload", "question"]
            assert UUID4.fullmatch(report["id"]) and report["question"] == unit
            assert report["payload"] in outputs
            question.oracle.decode(report["payload"])
            dummy_ids.add(report["id"])
    assert len(dummy_ids) == len(dummies) > 0  # P(no dummy at all) is below 1e-9 here

    # Restarted, the relay sends the same batches (ids and blobs); each is stored once.
    deployment.relay.start()
    deployment.wait_for(
        lambda: deployment.relay_status()["n"]["forwarded_batches"] == 2, seconds=30
    )
    status = deployment.relay_status()["n"]
    assert status["noise"] == {**SIGNED_NOISE, "epsilon": 3.0}
    assert status["forwarded_reports"] == 2 * MIN_BATCH  # real units only
    assert status["in_batches"] == 0
    assert relay_query(deployment, "SELECT COUNT(*) FROM dummies") == [(0,)]
    summary = json.loads(deployment.aggregator_cli("relay", "batches", "n", "--json").stdout)
    dummies_of = {batches[b][0]: len(blobs) for b, blobs in per_batch.items()}
    for unit, stored in summary["units"].items():
        # One batch per unit, nothing dropped: every dummy opened to a valid report.  (A
        # batch cut short by the kill and sent again counts its first part in no batch.)
        assert stored["batches"] == 1 and stored["dropped"] == 0
        assert stored["stored"] <= MIN_BATCH + dummies_of[unit]
    rows = deployment.export("n")
    for unit, count in dummies_of.items():
        of_unit = [row for row in rows if row["question"] == unit]
        assert len(of_unit) == len({row["id"] for row in of_unit}) == MIN_BATCH + count
    # Exactly the real reports and the dummies formed before the kill: none redrawn.
    assert {row["id"] for row in rows} == {r["id"] for r in reports} | dummy_ids
    # And published so: n the real respondents (neither lost nor doubled), every dummy
    # taken out (one batch per question, its dummies' expectation), as a recount says.
    document = assert_published(deployment, "n", MIN_BATCH, rows)
    assert document["relay"]["dummies"] == len(dummies)


def test_the_python_client_answers_a_noised_survey_and_the_relay_adds_dummies(deployment):
    """Devices (deniable.client) take the signed relay.noise as part of the definition and
    send as for any relayed survey; each forwarded batch then holds its MIN_BATCH real
    reports and its dummies, which the aggregator stores as reports of output values."""
    before = {row["id"] for row in deployment.export("n")}
    forwarded = deployment.relay_status()["n"]["forwarded_batches"]
    receipts = []
    for index in range(MIN_BATCH):
        receipt = deployment.client(f"device-{index}").answer("n", ANSWERS[index])
        assert receipt.delivered
        receipts.append(receipt)
    deployment.wait_for(
        lambda: deployment.relay_status()["n"]["forwarded_batches"] == forwarded + 2, seconds=30
    )
    rows = [row for row in deployment.export("n") if row["id"] not in before]
    real = {report_id for receipt in receipts for report_id in receipt.report_ids}
    assert real <= {row["id"] for row in rows}
    survey = deployment.surveys["n"]
    for question in survey.questions:
        added = [r for r in rows if r["question"] == question.id and r["id"] not in real]
        assert 0 < len(added) <= len(question.oracle.output_reports()) * NOISE.law.high
        assert {r["payload"] for r in added} <= set(question.oracle.output_reports())


# -- the per-value counts follow the law ---------------------------------------------------------

DRAWS = 20_000
LAW = BinomialDummies(trials=2)  # P(D = 0, 1, 2) = 1/4, 1/2, 1/4
# A geometric law on [0, 4] centred at 2 (drawn through the cumulative weights, not bit counts).
GEOMETRIC = GeometricDummies(shift=2, top=4, lower_ratio="1/2", upper_ratio="1/3")


@pytest.mark.parametrize(("law", "unit"), [(LAW, "smoker"), (GEOMETRIC, "team")])
def test_the_dummies_per_value_follow_the_signed_law_independently(monkeypatch, law, unit):
    """Over DRAWS batches, the dummies per output value match the law, and the first two
    values' counts (D_0, D_1) match law x law: every cell (each value's count; each pair)
    within a Hoeffding bound, a union bound over all the cells making the false-alarm
    rate 1e-6.  Sealing is replaced by the plaintext here (the test above opens real
    dummies); the draws are the OS CSPRNG's, not the random module's."""
    survey = Survey.from_dict(noised_definition("n", "https://relay.example", SIGNED_NOISE))
    dummies = noise.Dummies(survey=survey, law=law)
    monkeypatch.setattr(sealing, "seal", lambda public, *, plaintext, **_: plaintext)
    outputs = survey.question(unit).oracle.output_reports()
    support = range(law.high + 1)
    single: Counter = Counter()
    pairs: Counter = Counter()
    for _ in range(DRAWS):
        payloads = Counter(json.loads(body)["payload"] for body in dummies.draw(unit, b""))
        assert set(payloads) <= set(outputs)
        for y, payload in enumerate(outputs):
            single[y, payloads[payload]] += 1
        pairs[payloads[outputs[0]], payloads[outputs[1]]] += 1
    pmf = law.pmf()
    cells = len(outputs) * len(support) + len(support) ** 2
    bound = math.sqrt(DRAWS * math.log(2 * cells / 1e-6) / 2)
    for y, t in product(range(len(outputs)), support):
        assert abs(single[y, t] - DRAWS * pmf[t]) < bound, single
    for t, s in product(support, repeat=2):
        assert abs(pairs[t, s] - DRAWS * pmf[t] * pmf[s]) < bound, pairs
    random.seed(7)
    first = [len(dummies.draw(unit, b"")) for _ in range(32)]
    random.seed(7)
    assert [len(dummies.draw(unit, b"")) for _ in range(32)] != first


def test_the_bound_has_power_against_one_draw_reused_for_every_value():
    """A relay drawing one D and adding it to every value (not independent) puts mass 1/4 on
    the cells (0, 0) and (2, 2) and none off the diagonal: far beyond the bound."""
    bound = math.sqrt(DRAWS * math.log(2 * (2 * 3 + 9) / 1e-6) / 2)
    pmf = LAW.pmf()
    reused, independent = pmf[0], pmf[0] * pmf[0]  # P(cell (0, 0)) either way
    spread = math.sqrt(DRAWS * reused * (1 - reused))
    assert DRAWS * (reused - independent) - bound > 6 * spread


def test_a_noised_batch_body_names_its_real_units_before_its_blobs():
    """The PUT body of a noised batch (relay/upstream.py batch_body): real_units after unit."""
    from deniable.relay import upstream

    body = upstream.batch_body("smoker", [b"\x00", b"\x01", b"\x02"], 2)
    assert body == (
        b'{"format":"deniable.batch/1","unit":"smoker","real_units":2,"sealed":["AA","AQ","Ag"]}'
    )
    parsed = RelayBatch.parse(strict_json.loads(body), {"smoker"}, 2)
    assert parsed.real_units == 2 and parsed.real_count == 2
    assert b"real_units" not in upstream.batch_body("smoker", [b"\x00"])
