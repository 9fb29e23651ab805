"""Relay noise end to end, up to the published results: a real relay and a real aggregator
(conftest.py, both backends), a survey signing calibrate(1, 1e-6) relay noise.

Respondents answer from the Python client and from the respond page in real Chromium;
the relay forms and forwards noised batches; the aggregator's published results count
the real respondents only (n), show the three privacy figures with their words, and
their estimates equal an independent recount from the export (JSON lines and CSV)
less the dummies' published expectation.  The stored dummy rows look like the real ones
(every stored column, id form, payload length, position in the batch), and a batch that
carries no real count is published with the shuffle bound alone, said in words.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
from math import comb
from typing import Any

import numpy as np
import pytest
import requests

from deniable.dummies import calibrate, dummy_total_law, noised_central_epsilon
from deniable.shuffle import central_epsilon

from .conftest import BACKENDS, deployed, sealed_submission
from .test_noise import ANSWERS, MIN_BATCH, UUID4, assert_published, noised_definition

CALIBRATED = calibrate(1.0, 1e-6)
NOISE = {"epsilon": 1.0, "delta": 1e-6, "law": CALIBRATED.law.to_dict()}
LAW = CALIBRATED.law  # geometric on [0, 54], 27 dummies per output value on average
SURVEYS = ("py", "web", "bare")


def extended_definition(relay_url: str) -> dict[str, Any]:
    """``ext``: the noised survey's yes/no gate, then a conditional and optional single choice
    by GRR, an optional 5-point scale and an optional number (Duchi with a status)."""
    definition = noised_definition("ext", relay_url, NOISE)
    gate = definition["questions"][0]
    definition["questions"] = [
        gate,
        {
            "id": "brand",
            "type": "single_choice",
            "text": "Which brand?",
            "epsilon": 2.0,
            "options": ["a", "b", "c"],
            "mechanism": "grr",
            "optional": True,
            "show_if": {"question": "smoker", "equals": True},
        },
        {
            "id": "mood",
            "type": "scale",
            "text": "How are you?",
            "epsilon": 2.0,
            "points": 5,
            "mechanism": "grr",
            "optional": True,
        },
        {
            "id": "cigarettes",
            "type": "numeric",
            "text": "How many a day?",
            "epsilon": 2.0,
            "lo": 0,
            "hi": 40,
            "optional": True,
        },
    ]
    return definition


@pytest.fixture(scope="module", params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path_factory):
    """A relay and an aggregator relaying the noised surveys ``py`` (answered from the
    Python client), ``web`` (from the respond page), ``bare`` (with a batch by hand) and
    ``ext`` (optional, conditional and scale questions, from the Python client)."""
    directory = tmp_path_factory.mktemp(f"noise-results-{request.param}")
    with deployed(
        request.param,
        directory,
        lambda relay_url: {
            **{s: noised_definition(s, relay_url, NOISE) for s in SURVEYS},
            "ext": extended_definition(relay_url),
        },
    ) as running:
        yield running


def forwarded(deployment, survey_id: str, batches: int) -> None:
    """Waits until the relay has forwarded ``batches`` batches of the survey, all acknowledged."""

    def done() -> bool:
        status = deployment.relay_status()[survey_id]
        return status["forwarded_batches"] == batches and status["in_batches"] == 0

    deployment.wait_for(done, seconds=60)


def aggregator_reports(deployment, survey_id: str) -> list[dict[str, Any]]:
    """Every stored column of the survey's rows in the aggregator's database, in seq order."""
    database = deployment.aggregator_env["DENIABLE_DATABASE"]
    sql = "SELECT * FROM reports WHERE survey_id = ? ORDER BY seq"
    if deployment.backend == "sqlite":
        import sqlite3

        with sqlite3.connect(database) as connection:
            cursor = connection.execute(sql, (survey_id,))
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    import psycopg

    with psycopg.connect(database) as connection:
        cursor = connection.execute(sql.replace("?", "%s"), (survey_id,))
        names = [column.name for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def export_csv(deployment, survey_id: str) -> list[dict[str, str]]:
    token = deployment.aggregator_cli("token", "create").stdout.strip().split()[-1]
    response = requests.get(
        f"{deployment.aggregator.url}/api/v1/surveys/{survey_id}/export?format=csv",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def order_false_alarm(real: list[int], outputs: list[int]) -> float:
    """The chance that a batch of ``real[b]`` real rows among its dummies (``outputs[b]``
    output values drawn from LAW) is stored with its real rows all first or all last,
    when the order is uniformly random: E[2 / C(r + T, r)], T the batch's dummy total."""
    rate = 0.0
    for r, m in zip(real, outputs, strict=True):
        total = dummy_total_law(LAW, m)
        rate += sum(float(p) * 2 / comb(r + t, r) for t, p in enumerate(total))
    return rate


# -- the Python client ---------------------------------------------------------------------------


def test_python_client_respondents_are_published_and_the_dummies_look_like_them(deployment):
    """MIN_BATCH devices answer ``py`` with deniable.client: one noised batch per question.

    Stored rows: every column other than the row's number, id and payload holds the same
    values for dummies as for real reports of the batch; ids are uuid4 alike; payloads of
    one question are equally long; and the real rows are not stored first nor last in
    their batch.  That last check fails by chance with the rate ``order_false_alarm``
    computes (about 4.9e-7 here: 4.3e-7 for the yes/no batch, 6.0e-8 for the 3-option
    one), asserted below 1e-6."""
    receipts = [
        deployment.client(f"py-{index}").answer("py", ANSWERS[index]) for index in range(MIN_BATCH)
    ]
    assert all(receipt.delivered for receipt in receipts)
    real = {report_id for receipt in receipts for report_id in receipt.report_ids}
    forwarded(deployment, "py", 2)
    rows = deployment.export("py")
    assert_published(deployment, "py", MIN_BATCH, rows)

    # The real count arrived with each batch and was stored beside it.
    summary = json.loads(deployment.aggregator_cli("relay", "batches", "py", "--json").stdout)
    for unit in summary["units"].values():
        assert unit["batches"] == unit["noised_batches"] == unit["plausible_batches"] == 1
        assert unit["smallest_batch"] == MIN_BATCH

    stored = aggregator_reports(deployment, "py")
    assert [str(row["report_id"]) for row in stored] == [row["id"] for row in rows]
    survey = deployment.surveys["py"]
    outputs = []
    for question in survey.questions:
        of_batch = [row for row in stored if row["question_id"] == question.id]
        is_real = [str(row["report_id"]) in real for row in of_batch]
        assert sum(is_real) == MIN_BATCH < len(of_batch)
        for column in of_batch[0]:
            if column in ("seq", "report_id", "payload", "digest"):
                continue
            values = {True: set(), False: set()}
            for row, flag in zip(of_batch, is_real, strict=True):
                values[flag].add(row[column])
            assert values[True] == values[False], column  # e.g. one arrival time for all
        assert all(UUID4.fullmatch(str(row["report_id"])) for row in of_batch)
        assert len({len(row["payload"]) for row in of_batch}) == 1
        if "digest" in of_batch[0]:
            assert len({len(row["digest"]) for row in of_batch}) == 1
        positions = [index for index, flag in enumerate(is_real) if flag]
        assert positions != list(range(MIN_BATCH)), "the real rows were stored first"
        last = list(range(len(of_batch) - MIN_BATCH, len(of_batch)))
        assert positions != last, "the real rows were stored last"
        outputs.append(len(question.oracle.output_reports()))
    assert order_false_alarm([MIN_BATCH] * len(outputs), outputs) < 1e-6


# -- optional, conditional and scale questions -------------------------------------------------

EXTENDED_ANSWERS = [
    {"smoker": True, "brand": "a", "mood": 4, "cigarettes": 10.0},
    {"smoker": True, "mood": 5},  # declines the brand and the number
    {"smoker": False, "mood": 1, "cigarettes": 0.0},  # the brand does not apply
    {"smoker": False},  # declines the scale and the number
    {"smoker": True, "brand": "c", "mood": 3, "cigarettes": 25.5},
]


def test_optional_conditional_and_scale_questions_are_published_without_the_dummies(deployment):
    """MIN_BATCH devices answer ``ext`` (declining, skipped by a condition, answering): the
    relay adds dummies of every output value, "declined" and "not applicable" included, and
    the published rows are a recount by hand from the export: each question's frequencies
    over its whole domain with the dummies' mean taken out (a number's status under both
    signs: two draws per status), then the shares among those who answered, who declined
    among those asked, whom it did not apply to, and the scale's and the number's mean."""
    assert len(EXTENDED_ANSWERS) == MIN_BATCH
    receipts = [
        deployment.client(f"ext-{index}").answer("ext", answers)
        for index, answers in enumerate(EXTENDED_ANSWERS)
    ]
    assert all(receipt.delivered for receipt in receipts)
    survey = deployment.surveys["ext"]
    forwarded(deployment, "ext", len(survey.questions))
    rows = deployment.export("ext")
    document = deployment.results("ext")
    assert document["relay"]["respondents"] == MIN_BATCH
    assert document["relay"]["noise"]["plausible_batches"] == len(survey.questions)
    page = deployment.session.get(f"{deployment.aggregator.url}/surveys/ext", timeout=30)
    assert page.status_code == 200 and f'data-respondents="{MIN_BATCH}"' in page.text
    mean = LAW.mean
    for question, result in zip(survey.questions, document["questions"], strict=True):
        oracle = question.oracle
        outputs = oracle.output_reports()
        assert result["n"] == MIN_BATCH
        assert result["noise"]["expected_dummies"] == pytest.approx(len(outputs) * mean)
        central = result["central"]
        # the extended domain's figure: the dummies' bound or the shuffle bound at its local ε
        figure = noised_central_epsilon(LAW, question.epsilon, MIN_BATCH, 1e-6)
        assert central["noised_epsilon"] == pytest.approx(figure, rel=1e-12) and figure <= 1.0
        assert central["local_epsilon"] == question.epsilon
        payloads = [row["payload"] for row in rows if row["question"] == question.id]
        assert len(payloads) > MIN_BATCH  # dummies were stored beside the real reports
        # every output value, the non-responses' included, was a possible dummy
        assert set(payloads) <= set(outputs)
        statistics = oracle.wire_statistics(payloads).astype(float)
        published = {row["label"]: row for row in result["categories"]}
        if question.type == "numeric":
            status = oracle.status_oracle.estimate(statistics[1:] - 2 * mean, MIN_BATCH)
            answered = 1 - status[1:].sum()
            t_sum = oracle.sign_oracle.bound * statistics[0] / MIN_BATCH  # dummies' mean 0
            expected = {
                "declined": status[1],
                "mean": oracle.lo + (oracle.hi - oracle.lo) / 2 * (t_sum + answered) / answered,
            }
        else:
            f = oracle.estimate(statistics - mean, MIN_BATCH)
            base = question.base_size
            answered = 1 - f[base:].sum()
            expected = {label: f[i] / answered for i, label in enumerate(question.base_labels)}
            extras = dict(zip(question.extras, f[base:], strict=True))
            if "not_applicable" in extras:
                expected["not_applicable"] = extras["not_applicable"]
                expected["declined"] = extras["declined"] / (1 - extras["not_applicable"])
            elif extras:
                expected["declined"] = extras["declined"]
            if question.type == "scale":
                points = np.arange(1, 6)
                expected["mean"] = 1 + (points - 1) @ f[:base] / answered
        if question.extras == () and question.type != "scale":
            continue  # the gate: a plain yes/no, checked by the tests above
        for label, value in expected.items():
            row = published[label]
            if row["estimate"] is None or not 0 < answered:
                continue
            # The estimate the interval is built around; the published point is chosen
            # inside the interval from it (deniable.nonresponse.consistent_points).
            assert row["raw"] == pytest.approx(value, abs=1e-9), (question.id, label)
            assert row["lower"] <= row["estimate"] <= row["upper"]
        assert result["answered"] == pytest.approx(min(max(answered, 0.0), 1.0), abs=1e-9)


# -- a batch without a real count ----------------------------------------------------------------


def test_a_batch_without_real_units_is_published_with_the_shuffle_bound_only(deployment):
    """A relay build with noise turned off (a batch by hand with the relay's credential and
    no real_units) beside a batch the relay noised: the first counts in full and earns
    the shuffle bound alone, and the results say so in words."""
    for index in range(MIN_BATCH):
        body, _ = sealed_submission(
            deployment.surveys["bare"], ANSWERS[index], deployment.encryption_key, deployment.key_id
        )
        assert deployment.submit("bare", body).status_code == 202
    forwarded(deployment, "bare", 2)
    plain = [
        sealed_submission(
            deployment.surveys["bare"], answers, deployment.encryption_key, deployment.key_id
        )[0]["units"][0]["sealed"]
        for answers in ANSWERS[10 : 10 + 2 * MIN_BATCH]
    ]
    response = requests.put(
        f"{deployment.aggregator.url}/api/v1/surveys/bare/batches/{secrets.token_hex(16)}",
        json={"format": "deniable.batch/1", "unit": "smoker", "sealed": plain},
        headers={"Authorization": f"Bearer {deployment.credential}"},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    document = deployment.results("bare")
    smoker, team = document["questions"]
    assert (smoker["n"], team["n"]) == (3 * MIN_BATCH, MIN_BATCH)
    assert smoker["noise"]["batches"] == 1  # only the noised batch has dummies to take out
    central = smoker["central"]
    assert central["noise_note"] == (
        "1 of 2 batches were published with the shuffle bound only "
        "(1 without dummies, 0 whose dummies were not plausible)."
    )
    assert "1 of 2 batches count with shuffling alone" in central["figures"][2]["words"]
    # the worse of the noised batch (MIN_BATCH real) with its dummies and the batch by
    # hand (2 * MIN_BATCH) by shuffling alone
    alone = central_epsilon(1.0, 2 * MIN_BATCH, central["shuffle_delta"])
    noised = noised_central_epsilon(LAW, 1.0, MIN_BATCH, 1e-6)
    assert central["noised_epsilon"] == pytest.approx(max(alone, noised), rel=1e-12)
    assert "noise_note" not in team["central"] and team["central"]["noised_epsilon"] <= 1.0
    assert document["relay"]["respondents"] == 3 * MIN_BATCH
    rows = deployment.export("bare")
    statistics = (
        deployment.surveys["bare"]
        .question("smoker")
        .oracle.wire_statistics([row["payload"] for row in rows if row["question"] == "smoker"])
    )
    expected = smoker["noise"]["expected_dummies"] / 2
    recount = (
        deployment.surveys["bare"]
        .question("smoker")
        .oracle.estimate(statistics - expected, 3 * MIN_BATCH)
    )
    assert np.allclose([c["estimate"] for c in smoker["categories"]], recount, atol=1e-9)


# -- the respond page in Chromium ----------------------------------------------------------------

MADE_UP = "The relay also mixes made-up answers in with the real ones"


@pytest.mark.browser
@pytest.mark.slow
def test_respond_page_respondents_in_chromium_are_published_through_the_noised_relay(deployment):
    """MIN_BATCH people answer ``web`` on the aggregator's respond page in real Chromium (each
    a fresh browser profile); the page seals in the browser and posts to the real relay,
    which noises and forwards.  The page says the relay mixes made-up answers in, with no
    axe-core WCAG 2.2 AA violation at 1280x800 and 390x844 (landing in English and German,
    review, sent); the
    published results match a recount from the CSV export."""
    from playwright.sync_api import sync_playwright

    from tests.aggregator.respond_stack import require_browser, state
    from tests.aggregator.test_respond_axe import AXE, SHOTS, _check_both

    require_browser()
    if not AXE.exists():
        pytest.skip(f"axe-core is not installed at {AXE}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    respond = f"{deployment.aggregator.url}/surveys/web/respond"
    found: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            # the German page says it too, as plainly (a look, then axe at both sizes)
            context = browser.new_context(locale="de-DE")
            context.add_init_script(path=str(AXE))
            page = context.new_page()
            page.goto(f"{respond}?lang=de")
            state(page, "ready")
            passage = page.locator(".deniable-relay").inner_text()
            assert "erfundene Antworten" in passage and "nicht mit den Veranstaltern" in passage
            found += _check_both(page, f"relay-noise-{deployment.backend}-landing-de")
            context.close()
            for index in range(MIN_BATCH):
                context = browser.new_context()
                context.add_init_script(path=str(AXE))  # outside the page's CSP
                page = context.new_page()
                posts: list[str] = []
                page.on("request", lambda r, p=posts: p.append(r.url) if r.method == "POST" else 0)
                page.goto(respond)
                state(page, "ready")
                passage = page.locator(".deniable-relay").inner_text()
                assert MADE_UP in passage and "does not work together" in passage
                first = index == 0
                if first:
                    found += _check_both(page, f"relay-noise-{deployment.backend}-landing")
                answers = ANSWERS[index]
                page.get_by_label("Yes" if answers["smoker"] else "No", exact=True).check()
                page.get_by_label(answers["team"], exact=True).check()
                page.get_by_role("button", name="Randomize my answers").click()
                state(page, "review")
                if first:
                    found += _check_both(page, f"relay-noise-{deployment.backend}-review")
                page.get_by_role("button", name="Send these noisy values").click()
                assert state(page, "sent", "queued") == "sent"
                if first:
                    found += _check_both(page, f"relay-noise-{deployment.backend}-sent")
                # the page posted to the relay only, never to the aggregator
                assert posts and all(url.startswith(deployment.relay.url) for url in posts)
                context.close()
        finally:
            browser.close()
    assert found == [], "\n".join(found)
    forwarded(deployment, "web", 2)
    rows = export_csv(deployment, "web")
    assert {row["id"] for row in rows} == {row["id"] for row in deployment.export("web")}
    assert_published(deployment, "web", MIN_BATCH, rows)
