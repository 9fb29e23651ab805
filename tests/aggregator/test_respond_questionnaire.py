"""The respond page with optional and conditional questions, in real Chromium, on a real aggregator.

The survey is the shared skip-logic table's (tests/client/condition_cases.json): a respondent
path with skips and a declined answer; questions shown and hidden as answers change (below the
control used, announced politely); "Prefer not to say" and help text; scales as radio groups;
the review explaining declined and not-asked values. And the device's requests (count, order,
URLs, sizes, headers, and when they happen) are the same on every path through the skip logic.
Each new state is checked by axe-core (0 violations) at 1280x800 and 390x844, and written as
a screenshot to build/screenshots/respond/ (DENIABLE_SCREENSHOTS changes the folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from deniable.aggregator import cli, demo

from .respond_stack import ARGS, CHROMIUM, EmbedSite, host_page, open_page, require_browser, state
from .test_respond_axe import AXE, SHOTS, SIZES, _check

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TABLE = json.loads((ROOT / "tests" / "client" / "condition_cases.json").read_text("utf-8"))
SURVEY = TABLE["definition"]["id"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """A gunicorn aggregator holding the table's survey (parameters resolved by the aggregator)."""
    require_browser()
    if not AXE.exists():
        pytest.fail(f"axe-core is not installed at {AXE} (npm ci --prefix .ci/node)")
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    directory = tmp_path_factory.mktemp("questionnaire")
    database, key = directory / "deniable.sqlite3", directory / "key.pem"
    options = ["--database", str(database), "--signing-key", str(key)]
    assert cli.main([*options, "init"]) == 0
    definition = json.loads(json.dumps(TABLE["definition"]))
    for question in definition["questions"]:
        del question["parameters"]  # the aggregator resolves them
    path = directory / "survey.json"
    path.write_text(json.dumps(definition))
    assert cli.main([*options, "create-survey", str(path)]) == 0
    port = demo.free_port()
    site = EmbedSite()
    server = demo.start_server(
        {"DATABASE": database, "SIGNING_KEY_PATH": key},
        port,
        environment={"DENIABLE_CORS_ORIGINS": site.origin},
    )
    base = f"http://127.0.0.1:{port}"
    site.page = host_page(requests.get(f"{base}/surveys/{SURVEY}/embed", timeout=10).text)
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        yield {"base": base, "browser": browser, "site": site}
    finally:
        browser.close()
        playwright.stop()
        site.stop()
        demo.stop_server(server)


def _open(stack, size: str = "desktop", lang: str = "en"):
    width, height = SIZES[size]
    context, page, recorder = open_page(stack, viewport={"width": width, "height": height})
    context.add_init_script(path=str(AXE))  # by the browser's debugger: outside the page's CSP
    page.goto(f"{stack['base']}/surveys/{SURVEY}/respond?lang={lang}")
    state(page, "ready")
    return context, page, recorder


def _fieldset(page, question: str):
    return page.locator(f"#q-{question}-set")


def _choose(page, question: str, label: str) -> None:
    """Picks an answer by its visible label, by keyboard (focus, then Space), as a person might."""
    _fieldset(page, question).get_by_label(label, exact=True).focus()
    page.keyboard.press("Space")


def _walk(page, answers: dict) -> None:
    """Answers a path of the table through the form (None: Prefer not to say)."""
    labels = {True: "Yes", False: "No", None: "Prefer not to say"}
    for question in TABLE["definition"]["questions"]:
        qid = question["id"]
        if qid not in answers:
            continue
        value = answers[qid]
        if question["type"] == "numeric" and value is not None:
            _fieldset(page, qid).locator("input[type=number]").fill(str(value))
        elif question["type"] == "multiple_choice" and value is not None:
            for label in value:
                _choose(page, qid, label)
        else:
            named = value is None or isinstance(value, bool)
            _choose(page, qid, labels[value] if named else str(value))


def _visible(page) -> list[str]:
    return page.eval_on_selector_all(
        "fieldset[data-question]",
        "sets => sets.filter(s => !s.hidden).map(s => s.dataset.question)",
    )


def test_a_path_with_skips_and_a_declined_answer(stack) -> None:
    context, page, recorder = _open(stack)
    violations: list[str] = []
    try:
        violations += _check(page, "desktop", "questionnaire-start")
        # At first only the unconditional questions show.
        assert _visible(page) == ["smoker", "mood", "nps"]
        # Help text is read with the question's controls.
        _walk(page, {"smoker": True})
        assert _visible(page) == ["smoker", "cigarettes", "mood", "nps"]
        live = page.locator(".deniable-announce")
        assert live.get_attribute("aria-live") == "polite"
        assert "How many cigarettes a day?" in live.text_content()
        number = page.locator("#q-cigarettes")
        described = number.get_attribute("aria-describedby").split()
        assert page.locator(f"#{described[0]}").text_content() == "Your best guess is fine."
        # Nothing above the control just used moves: its position is the same after a change.
        before = page.locator("#q-smoker-0").bounding_box()
        _walk(page, {"smoker": False})
        assert page.locator("#q-smoker-0").bounding_box() == before
        assert "no longer applies" in live.text_content()
        assert _visible(page) == ["smoker", "mood", "nps"]
        _walk(page, {"smoker": True, "cigarettes": 12, "mood": "Bad"})
        assert _visible(page) == ["smoker", "cigarettes", "quit", "mood", "why", "nps"]
        violations += _check(page, "desktop", "questionnaire-shown")
        # Randomize with required questions left: the error asks for an answer or a decline.
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "errors")
        assert "Prefer not to say" in _fieldset(page, "why").text_content()
        violations += _check(page, "desktop", "questionnaire-errors")
        # The scale is a radio group 0..10 with its words; "why" declined.
        radios = _fieldset(page, "nps").locator("input[type=radio]")
        assert radios.count() == 11
        _walk(page, {"quit": True, "why": None, "nps": 9})
        assert _visible(page) == [
            "smoker",
            "cigarettes",
            "quit",
            "mood",
            "why",
            "nps",
            "satisfaction",
        ]
        _walk(page, {"satisfaction": 4})
        violations += _check(page, "desktop", "questionnaire-answered")
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        review = page.locator(".deniable-review")
        text = review.text_content()
        assert "send one noisy value each too" in text  # the plain explanation
        assert text.count("You chose “Prefer not to say”") == 1  # why
        assert text.count("Not asked: this question did not apply") == 1  # detractor
        violations += _check(page, "desktop", "questionnaire-review")
        page.wait_for_timeout(1100)  # SEND_HOLD_MS
        page.get_by_role("button", name="Send these noisy values").click()
        state(page, "sent")
        (post,) = recorder.posts()
        assert len(json.loads(post[2])["reports"]) == len(TABLE["definition"]["questions"])
        results = requests.get(f"{stack['base']}/api/v1/surveys/{SURVEY}/results", timeout=120)
        assert results.status_code == 200, results.text[:500]
    finally:
        context.close()
    assert violations == []


def _path_requests(stack, answers: dict) -> list:
    """Every request of one respondent's visit on this path, with its phase and its form."""
    context, page, _ = _open(stack)
    seen: list = []
    phase = ["load"]
    page.on(
        "request",
        lambda r: seen.append(
            (
                phase[0],
                r.method,
                r.url,
                len(r.post_data_buffer or b""),
                sorted((k, v) for k, v in r.headers.items() if r.method == "POST"),
            )
        ),
    )
    try:
        # (Loading happened in _open; its requests are compared by a fresh context below.)
        phase[0] = "answering"
        _walk(page, answers)
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        page.wait_for_timeout(1100)
        phase[0] = "send"
        page.get_by_role("button", name="Send these noisy values").click()
        state(page, "sent")
    finally:
        context.close()
    return seen


def _load_requests(stack) -> list:
    context = stack["browser"].new_context()
    page = context.new_page()
    seen: list = []
    page.on("request", lambda r: seen.append((r.method, r.url, len(r.post_data_buffer or b""))))
    try:
        page.goto(f"{stack['base']}/surveys/{SURVEY}/respond?lang=en")
        state(page, "ready")
    finally:
        context.close()
    return seen


def test_every_path_makes_the_same_requests(stack) -> None:
    """Count, order, URLs, sizes, headers and timing class (when they happen) on every path."""
    questions = [q["id"] for q in TABLE["definition"]["questions"]]
    # A form asks for "Prefer not to say" explicitly where the table leaves an answer out.
    paths = [
        {
            **c["answers"],
            **{q: None for q, s in zip(questions, c["statuses"], strict=True) if s == "declined"},
        }
        for c in TABLE["cases"]
        if "refused" not in c
    ]
    loads = {json.dumps(_load_requests(stack)) for _ in range(2)}
    assert len(loads) == 1, loads
    shapes = {}
    for answers in paths:
        requests_made = _path_requests(stack, answers)
        # Answering (showing, hiding, declining) sends nothing; one POST after "Send".
        assert [r[0] for r in requests_made] == ["send"], requests_made
        shapes.setdefault(json.dumps(requests_made), []).append(answers)
    assert len(shapes) == 1, list(shapes.values())


@pytest.mark.parametrize("size", ["phone"])
def test_the_new_states_on_a_phone(stack, size) -> None:
    context, page, _ = _open(stack, size)
    violations: list[str] = []
    try:
        _walk(page, {"smoker": None})
        violations += _check(page, size, "questionnaire-start")
        _walk(page, {"mood": "Okay", "nps": 10})
        violations += _check(page, size, "questionnaire-shown")
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "errors")
        violations += _check(page, size, "questionnaire-errors")
        _walk(page, {"why": None, "satisfaction": None})
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        violations += _check(page, size, "questionnaire-review")
        # Reflow: nothing wider than the phone; text at least 12 px.
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= SIZES[size][0], width
        smallest = page.evaluate(
            "Math.min(...[...document.querySelectorAll('body *')].filter(e => e.offsetParent"
            " && e.textContent.trim()).map(e => parseFloat(getComputedStyle(e).fontSize)))"
        )
        assert smallest >= 12, smallest
    finally:
        context.close()
    assert violations == []


def test_the_embedded_form_skips_and_declines_alike(stack) -> None:
    """The /embed snippet on another site: the same form, skips, decline and review."""
    context, page, recorder = open_page(stack, viewport={"width": 390, "height": 844})
    context.add_init_script(path=str(AXE))
    violations: list[str] = []
    try:
        page.goto(stack["site"].origin)
        state(page, "ready")
        # An answer typed into a question that is then hidden is kept in the form, never sent.
        _walk(page, {"smoker": True, "cigarettes": 5})
        _walk(page, {"smoker": False, "mood": "Good", "nps": 10})
        assert page.locator("#q-cigarettes").input_value() == "5"
        assert _visible(page) == ["smoker", "mood", "nps", "satisfaction"]
        _walk(page, {"satisfaction": None})
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        text = page.locator(".deniable-review").text_content()
        assert text.count("Not asked: this question did not apply") == 4
        assert text.count("You chose “Prefer not to say”") == 1
        violations += _check(page, "phone", "questionnaire-embed-review")
        page.wait_for_timeout(1100)
        page.get_by_role("button", name="Send these noisy values").click()
        state(page, "sent")
        (post,) = recorder.posts()
        assert len(json.loads(post[2])["reports"]) == len(TABLE["definition"]["questions"])
    finally:
        context.close()
    assert violations == []


def test_the_form_in_german(stack) -> None:
    """ "Prefer not to say", the announcements, the errors and the review in the page's language."""
    context, page, _ = _open(stack, lang="de")
    violations: list[str] = []
    try:
        smoker = _fieldset(page, "smoker")
        smoker.get_by_label("Ja", exact=True).check()
        live = page.locator(".deniable-announce").text_content()
        assert "Eine weitere Frage betrifft Sie jetzt: „How many cigarettes a day?“." == live
        assert _fieldset(page, "cigarettes").get_by_label("Keine Angabe").count() == 1
        smoker.get_by_label("Keine Angabe", exact=True).check()
        assert (
            "trifft nach Ihren Antworten nicht mehr zu"
            in page.locator(".deniable-announce").text_content()
        )
        page.get_by_role("button", name="Meine Antworten zufällig verändern").click()
        state(page, "errors")
        violations += _check(page, "desktop", "questionnaire-errors-de")
        _walk(page, {"mood": "Okay"})
        _fieldset(page, "why").get_by_label("Keine Angabe").check()
        _fieldset(page, "nps").get_by_label("10", exact=True).check()
        _fieldset(page, "satisfaction").get_by_label("Keine Angabe").check()
        page.get_by_role("button", name="Meine Antworten zufällig verändern").click()
        state(page, "review")
        text = page.locator(".deniable-review").text_content()
        assert text.count("Sie haben „Keine Angabe“ gewählt.") == 3  # smoker, why, satisfaction
        assert text.count("Nicht gefragt: Diese Frage traf nach Ihren Antworten nicht zu.") == 3
        violations += _check(page, "desktop", "questionnaire-review-de")
    finally:
        context.close()
    assert violations == []
