"""Relay noise on the aggregator (api/batches.py, api/relayed.py), both backends.

A batch the relay added dummy reports to says how many of its units are real
(``real_units``); intake stores that count with the batch record and whether the
dummies it stored are plausible under the survey's signed law.  Results estimate
with the dummies taken out (the estimates match a recount from the export minus the
dummies' expectation, n the real count) and publish three privacy figures with their
conditions in words; a batch without ``real_units``, or with implausible dummies, is
published with the shuffle bound alone and the results say so.  A survey whose
signed noise does not meet its signed (ε, δ) is refused when it is created.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from typing import Any

import numpy as np
import pytest

from deniable import sealing
from deniable.aggregator.signing import current_key
from deniable.dummies import calibrate, plausibility_threshold
from deniable.survey import Survey

RELAY_URL = "http://127.0.0.1:9"
LAW = calibrate(1.0, 1e-6).law  # geometric: 27 dummies per output value on average


def definition(survey_id: str, noise: dict[str, Any] | None) -> dict[str, Any]:
    relay: dict[str, Any] = {"url": RELAY_URL, "min_batch": 3, "shuffle_unit": "question"}
    if noise is not None:
        relay["noise"] = noise
    return {
        "format": "deniable.survey/2",
        "id": survey_id,
        "title": survey_id.title(),
        "questions": [
            {"id": "a", "type": "yes_no", "text": "A?", "epsilon": 8.0},
            {
                "id": "c",
                "type": "single_choice",
                "text": "C?",
                "options": ["x", "y", "z"],
                "epsilon": 4.0,
            },
        ],
        "relay": relay,
    }


NOISE = {"epsilon": 1.0, "delta": 1e-6, "law": LAW.to_dict()}


@pytest.fixture
def relayed(app, storage) -> dict[str, Any]:
    """Survey ``n`` (noised) and ``p`` (plain relay), the relay credential and the key."""
    surveys = {}
    for survey_id, noise in (("n", NOISE), ("p", None)):
        surveys[survey_id] = Survey.from_dict(definition(survey_id, noise)).upgraded()
        storage.create_survey(surveys[survey_id], results_public=True)
    with app.app_context():
        public = current_key().encryption.public_bytes
    return {
        "surveys": surveys,
        "public": public,
        "credential": storage.relay.create_credential(RELAY_URL),
    }


def blobs_for(relayed, survey_id: str, unit: str, payloads: list[str]) -> list[bytes]:
    survey = relayed["surveys"][survey_id]
    return [
        sealing.seal(
            relayed["public"],
            survey_id=survey_id,
            unit=unit,
            plaintext=sealing.unit_body(
                [{"id": str(uuid.uuid4()), "question": unit, "payload": payload}], unit
            ),
            size=sealing.unit_size(survey, unit),
        )
        for payload in payloads
    ]


def put(client, relayed, survey_id: str, unit: str, blobs: list[bytes], real_units=None):
    body: dict[str, Any] = {"format": "deniable.batch/1", "unit": unit}
    if real_units is not None:
        body["real_units"] = real_units
    body["sealed"] = [base64.urlsafe_b64encode(b).rstrip(b"=").decode() for b in blobs]
    return client.put(
        f"/api/v1/surveys/{survey_id}/batches/{secrets.token_hex(16)}",
        json=body,
        headers={"Authorization": f"Bearer {relayed['credential']}"},
    )


def noised_batch(real: list[str], dummies: list[int], outputs: list[str]) -> list[str]:
    """The payloads of a batch: the real ones and ``dummies[y]`` copies of output y, shuffled."""
    payloads = real + [outputs[y] for y, count in enumerate(dummies) for _ in range(count)]
    order = np.random.default_rng(len(payloads)).permutation(len(payloads))
    return [payloads[i] for i in order]


YES_NO = ["00", "01"]  # binary RR's output reports, in output_reports() order


def test_intake_stores_real_units_and_whether_the_dummies_are_plausible(client, storage, relayed):
    real = ["01"] * 6 + ["00"] * 4
    response = put(
        client,
        relayed,
        "n",
        "a",
        blobs_for(relayed, "n", "a", noised_batch(real, [27, 30], YES_NO)),
        real_units=10,
    )
    assert response.status_code == 201, response.json
    assert response.json["stored"] == 67
    threshold, _ = plausibility_threshold(LAW, 2)
    short = noised_batch(real, [threshold // 2 - 1, threshold // 2 - 1], YES_NO)  # too few
    assert (
        put(
            client, relayed, "n", "a", blobs_for(relayed, "n", "a", short), real_units=10
        ).status_code
        == 201
    )
    plain = put(client, relayed, "n", "a", blobs_for(relayed, "n", "a", ["01"] * 5))
    assert plain.status_code == 201
    records = {
        (r.real_units, r.plausible)
        for r in (storage.relay.find_batch("n", b) for b in _batch_ids(storage, "n"))
    }
    assert records == {(10, True), (10, False), (None, None)}
    summary = storage.relay.batch_summary("n")["a"]
    assert summary["batches"] == 3 and summary["noised_batches"] == 2
    assert summary["plausible_batches"] == 1 and summary["smallest_batch"] == 5
    assert summary["dummies"] == 57 + (threshold // 2 - 1) * 2
    assert (summary["smallest_plausible"], summary["smallest_shuffle_only"]) == (10, 5)


def _batch_ids(storage, survey_id: str) -> list[str]:
    with storage.dialect.read() as connection:
        rows = storage.dialect.run(
            connection, "SELECT batch_id FROM relay_batches WHERE survey_id = ?", (survey_id,)
        ).fetchall()
    return [row[0] for row in rows]


def test_a_survey_without_noise_refuses_a_batch_that_claims_dummies(client, relayed):
    response = put(
        client, relayed, "p", "a", blobs_for(relayed, "p", "a", ["01"] * 5), real_units=4
    )
    assert response.status_code == 422, response.json
    assert "real_units" in response.json["detail"]


def test_results_take_the_dummies_out_and_match_a_recount(client, storage, relayed):
    """Two plausible noised batches per question: n is the real count, the estimates are the
    mechanism's estimator on the export's statistics minus 2 · E[D] per output report."""
    rng = np.random.default_rng(5)
    for unit, outputs, real_count in (("a", YES_NO, 40), ("c", ["00", "01", "02"], 30)):
        for _ in range(2):
            real = [outputs[i] for i in rng.integers(0, len(outputs), real_count)]
            dummies = [int(x) for x in LAW.sample_values(len(outputs))]
            blobs = blobs_for(relayed, "n", unit, noised_batch(real, dummies, outputs))
            response = put(client, relayed, "n", unit, blobs, real_units=real_count)
            assert response.status_code == 201, response.json
    document = client.get("/api/v1/surveys/n/results").json
    survey = relayed["surveys"]["n"]
    exported = list(storage.export_reports("n"))
    for question, result in zip(survey.questions, document["questions"], strict=True):
        payloads = [r.payload for r in exported if r.question == question.id]
        oracle = question.oracle
        statistics = oracle.wire_statistics(payloads)
        m = len(oracle.output_reports())
        n = 80 if question.id == "a" else 60
        assert result["n"] == n
        recount = oracle.estimate(statistics - 2 * LAW.mean, n)
        estimates = [c["estimate"] for c in result["categories"]]
        assert np.allclose(estimates, recount, rtol=0, atol=1e-12)
        assert result["noise"]["batches"] == 2
        assert result["noise"]["expected_dummies"] == pytest.approx(2 * m * LAW.mean)
        central = result["central"]
        assert central["local_epsilon"] == question.epsilon
        assert [f["name"] for f in central["figures"]] == ["local", "shuffle", "noised"]
        assert central["noised_epsilon"] <= 1.0 + 1e-9  # the dummies' own bound
        assert central["central_epsilon"] == central["noised_epsilon"]
        assert central["shuffle_epsilon"] >= central["noised_epsilon"]
        assert "even if the relay colludes" in central["figures"][0]["words"]
        assert "noise_note" not in central
        assert result["tightest"] == "exact_tail"
    noise = document["relay"]["noise"]
    assert (noise["noised_batches"], noise["plausible_batches"], noise["epsilon"]) == (4, 4, 1.0)
    assert document["n_reports"] == 140 and document["relay"]["respondents"] == 80
    csv = client.get("/api/v1/surveys/n/results?format=csv").get_data(as_text=True)
    header = csv.splitlines()[0].split(",")
    assert {"local_epsilon", "shuffle_epsilon", "noised_epsilon"} <= set(header)
    from deniable.analysis import results_frame

    frame = results_frame(document)
    assert (
        frame.attrs["privacy"]["a"]["noised_epsilon"]
        == document["questions"][0]["central"]["noised_epsilon"]
    )
    assert list(frame["n"].unique()) == [80, 60]


def test_a_batch_without_real_units_or_with_implausible_dummies_gets_the_shuffle_bound(
    client, relayed
):
    real = ["01"] * 8 + ["00"] * 4
    assert (
        put(
            client,
            relayed,
            "n",
            "a",
            blobs_for(relayed, "n", "a", noised_batch(real, [27, 27], YES_NO)),
            real_units=12,
        ).status_code
        == 201
    )
    first = client.get("/api/v1/surveys/n/results").json["questions"][0]["central"]
    assert "noise_note" not in first and first["noised_epsilon"] <= 1.0 + 1e-9
    # a batch without real_units: its units all count as real, with the shuffle bound only
    assert (
        put(client, relayed, "n", "a", blobs_for(relayed, "n", "a", ["01"] * 6)).status_code == 201
    )
    central = client.get("/api/v1/surveys/n/results").json["questions"][0]["central"]
    assert central["noise_note"].startswith("1 of 2 batches were published with the shuffle")
    assert central["noised_epsilon"] == central["shuffle_epsilon"] == pytest.approx(8.0, rel=1e-6)
    assert "1 of 2 batches count with shuffling alone" in central["figures"][2]["words"]
    # implausible dummies (none at all): shuffle bound only, said so
    assert (
        put(
            client, relayed, "n", "a", blobs_for(relayed, "n", "a", ["00"] * 9), real_units=9
        ).status_code
        == 201
    )
    result = client.get("/api/v1/surveys/n/results").json["questions"][0]
    assert "1 whose dummies were not plausible" in result["central"]["noise_note"]
    assert result["n"] == 12 + 6 + 9


def test_a_survey_whose_noise_misses_its_signed_epsilon_is_refused(client, operator_headers):
    weak = {"epsilon": 0.5, "delta": 1e-6, "law": LAW.to_dict()}  # the law is for ε = 1
    response = client.post(
        "/api/v1/surveys",
        json={"definition": definition("weak", weak)},
        headers=operator_headers,
    )
    assert response.status_code == 422, response.json
    assert "delta" in response.json["detail"] and "noise" in response.json["detail"]
    good = client.post(
        "/api/v1/surveys", json={"definition": definition("good", NOISE)}, headers=operator_headers
    )
    assert good.status_code == 201, good.json


def test_a_comparison_takes_each_sides_dummies_out(client, relayed):
    real = ["01"] * 8 + ["00"] * 4
    blobs = blobs_for(relayed, "n", "a", noised_batch(real, [25, 29], YES_NO))
    assert put(client, relayed, "n", "a", blobs, real_units=12).status_code == 201
    document = client.get("/api/v1/surveys/n/compare?question=a&with=n").json
    assert document["first"]["n"] == document["second"]["n"] == 12
    results = client.get("/api/v1/surveys/n/results").json["questions"][0]
    row = document["comparisons"][0]
    assert row["first"] == pytest.approx(results["categories"][0]["estimate"], abs=1e-12)
    assert row["difference"] == 0.0


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_dashboard_shows_the_three_figures_in_words_without_wcag_violations(client, relayed):
    """The survey page's privacy figures (and the note on a shuffle-only batch) in Chromium,
    at desktop and phone sizes: axe-core finds no WCAG 2.2 AA violation."""
    from playwright.sync_api import sync_playwright

    from .respond_stack import require_browser
    from .test_respond_axe import AXE, SHOTS, _check_both

    require_browser()
    if not AXE.exists():
        pytest.skip(f"axe-core is not installed at {AXE}")
    real = ["01"] * 30 + ["00"] * 20
    blobs = blobs_for(relayed, "n", "a", noised_batch(real, [26, 28], YES_NO))
    assert put(client, relayed, "n", "a", blobs, real_units=50).status_code == 201
    assert (
        put(client, relayed, "n", "a", blobs_for(relayed, "n", "a", ["01"] * 7)).status_code == 201
    )
    html = client.get("/surveys/n").get_data(as_text=True)
    assert "even if the relay colludes" in html and "shuffle bound only" in html
    assert "also added dummy reports" in html
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            page = browser.new_page()
            page.set_content(html)
            page.add_script_tag(path=str(AXE))
            found = _check_both(page, "dashboard-relay-noise")
        finally:
            browser.close()
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_command_line_lists_batches_with_dummies(client, relayed, app_config, capsys):
    from deniable.aggregator import cli

    real = ["01"] * 5
    blobs = blobs_for(relayed, "n", "a", noised_batch(real, [27, 27], YES_NO))
    assert put(client, relayed, "n", "a", blobs, real_units=5).status_code == 201
    status = cli.main(["--database", app_config["DATABASE"], "relay", "batches", "n"])
    out = capsys.readouterr().out
    assert status == 0 and "with dummies" in out and "plausible" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("a "))
    assert row.split()[1:] == ["1", "5", "59", "0", "1", "1"]
