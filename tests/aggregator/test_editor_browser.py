"""The survey editor in real headless Chromium against a real gunicorn aggregator.

One walk, as an operator would take it: sign in (by keyboard), build a survey with a
question of every type (and, when the core has them, an optional question and a skip
condition), preview it in English and German (the real respond page, running the browser
client on the draft's preview), publish it, answer it from its respond page, and see its
results.  Every editor page is checked by axe-core (WCAG 2.0, 2.1, 2.2 A and AA) at
1280x800 and 390x844 and written as a full-page screenshot to build/screenshots/editor/
(DENIABLE_SCREENSHOTS changes the folder) for people to look at.
"""

from __future__ import annotations

import json
import os

import pytest
import requests

from deniable.aggregator import cli, demo
from deniable.aggregator.editor.forms import QUESTIONNAIRE
from deniable.aggregator.respond import static_file
from deniable.aggregator.respond.words import translator

from .respond_stack import ARGS, CHROMIUM, require_browser, state
from .test_respond_axe import AXE, REQUIRED, ROOT_DIR, SIZES, TAGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = ROOT_DIR / "build/screenshots/editor"
if "DENIABLE_SCREENSHOTS" in os.environ:
    SHOTS = type(SHOTS)(os.environ["DENIABLE_SCREENSHOTS"]) / "editor"
SURVEY = "wellbeing"
# The questionnaire members (an optional scale shown on a condition) are built when the core
# knows them and answered when the browser client does too.
QUESTIONNAIRE_PAGE = QUESTIONNAIRE and b"show_if" in static_file("survey.js")


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    require_browser()
    if not AXE.exists():
        if REQUIRED:
            pytest.fail(f"DENIABLE_REQUIRE_BROWSER=1 but axe-core is not installed at {AXE}")
        pytest.skip(f"axe-core is not installed at {AXE}")
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    directory = tmp_path_factory.mktemp("editor")
    database, key = directory / "deniable.sqlite3", directory / "key.pem"
    options = ["--database", str(database), "--signing-key", str(key)]
    assert cli.main([*options, "init"]) == 0
    from deniable.aggregator.storage import open_storage

    storage = open_storage({"DATABASE": str(database)})
    storage.migrate()
    token = storage.create_operator_token("browser test")
    storage.close()
    port = demo.free_port()
    server = demo.start_server({"DATABASE": database, "SIGNING_KEY_PATH": key}, port)
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        yield {"base": f"http://127.0.0.1:{port}", "browser": browser, "token": token}
    finally:
        browser.close()
        playwright.stop()
        demo.stop_server(server)


def check(page, name: str) -> list[str]:
    """axe's violations of the page at both sizes (one line each), after its screenshots."""
    found = []
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SHOTS / f"{name}-{size}.png"), full_page=True)
        run = "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})"
        result = page.evaluate(run, TAGS)
        assert len(result["passes"]) >= 5, name
        found += [
            f"{name}/{size}: {v['id']} ({v['impact']}): "
            + "; ".join(json.dumps(n["target"]) for n in v["nodes"])
            for v in result["violations"]
        ]
        # Nothing wider than the phone's screen (reflow), no text under 12px.
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{name}/{size}: {wide}px wide"
        small = page.evaluate(
            "[...document.querySelectorAll('body *')].filter(e => e.childNodes.length &&"
            " [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) &&"
            " parseFloat(getComputedStyle(e).fontSize) < 12).length"
        )
        assert small == 0, f"{name}/{size}: {small} elements with text under 12px"
    page.set_viewport_size({"width": 1280, "height": 800})
    return found


def add_question(page, kind_words: str, fields: dict[str, str], *, then: str = "Save") -> None:
    page.get_by_label("New question's type").select_option(label=kind_words)
    page.get_by_role("button", name="Add a question").click()
    page.wait_for_selector("#question-form")
    for label, value in fields.items():
        page.get_by_label(label, exact=True).fill(value)
    page.get_by_role("button", name=then, exact=True).click()


def test_a_translated_survey_s_draft_and_its_preview_in_each_language(stack) -> None:
    """A German survey with an English translation, copied into a draft: its language and
    translations on the draft's page, and the preview in English showing the translation."""
    from tests.shared.test_translations import german

    base, found = stack["base"], []
    created = requests.post(
        f"{base}/api/v1/surveys",
        json={"definition": german()},
        headers={"Authorization": f"Bearer {stack['token']}"},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(path=str(AXE))
    page = context.new_page()
    try:
        page.goto(f"{base}/editor/sign-in")
        page.get_by_label("Operator token").fill(stack["token"])
        page.keyboard.press("Enter")
        page.wait_for_selector("#drafts-heading")
        page.goto(f"{base}/editor/surveys/glueck")
        page.get_by_role("button", name="Copy as new (next wave)").click()
        page.wait_for_selector("#survey-heading")
        assert page.get_by_label("Language of the survey's text").input_value() == "de"
        assert page.get_by_label("Keep the translations").is_checked()
        found += check(page, "draft-translated")
        page.get_by_role("link", name="English", exact=True).click()
        assert state(page, "ready", "refused") == "ready"
        assert page.locator("html").get_attribute("lang") == "en"
        assert page.locator("h1").inner_text() == "Happiness at work"
        assert page.locator("legend", has_text="Which colour?").count() == 1
        found += check(page, "preview-translated-en")
    finally:
        context.close()
    assert found == [], "\n".join(found)


# Last in this module: it ends by exhausting the sign-in limit of the module's server.
def test_build_preview_publish_answer_and_see_results(stack) -> None:
    base, found = stack["base"], []
    context = stack["browser"].new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(path=str(AXE))  # by the debugger: outside the pages' CSP
    page = context.new_page()
    posted: list[str] = []  # every request that could carry reports
    page.on("request", lambda r: posted.append(r.url) if r.method != "GET" else None)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{base}/editor/")
        assert page.url.startswith(f"{base}/editor/sign-in")
        found += check(page, "sign-in")
        # By keyboard: the token field, typed, Enter.
        page.get_by_label("Operator token").focus()
        page.keyboard.type(stack["token"])
        page.keyboard.press("Enter")
        page.wait_for_selector("#drafts-heading")
        found += check(page, "home-empty")
        page.get_by_role("button", name="New draft").click()
        page.wait_for_selector("#survey-heading")
        found += check(page, "draft-new")

        # The first question by keyboard alone: the type, Tab to "Add a question", Enter;
        # then its text and id, Tab to "Save", Enter.
        active = "document.activeElement.textContent.trim()"
        page.get_by_label("New question's type").focus()
        page.keyboard.press("Tab")
        assert page.evaluate(active) == "Add a question"
        page.keyboard.press("Enter")
        page.wait_for_selector("#question-form")
        page.get_by_label("Question", exact=True).focus()
        page.keyboard.type("Have you felt burnt out?")
        page.get_by_label("Question id").focus()
        page.keyboard.press("Control+A")
        page.keyboard.type("burnout")
        page.keyboard.press("Tab")
        assert page.evaluate(active) == "Save"
        page.keyboard.press("Enter")
        page.wait_for_selector("[data-question=burnout]")
        # The others by their forms.
        add_question(
            page,
            "One choice",
            {"Question": "How do you get to work?", "Options, one per line": "Car\nBus\nBike",
             "Question id": "commute", "Privacy: ε": "2"},
        )  # fmt: skip
        # A mistake first: one option only is refused next to the field, in words.
        add_question(
            page,
            "Several choices",
            {"Question": "Which tools slow you down?", "Options, one per line": "Mail",
             "Question id": "tools"},
        )  # fmt: skip
        problem = page.locator("#options-problem")
        assert "must be a list of 2 to 64 labels" in problem.inner_text()
        assert page.get_by_label("Options, one per line").get_attribute("aria-invalid") == "true"
        found += check(page, "question-error")
        page.get_by_label("Options, one per line").fill("Mail\nChat\nMeetings")
        page.get_by_role("button", name="Save and update the advice").click()
        page.wait_for_selector("#advice-local")
        found += check(page, "question-advice")
        page.get_by_role("link", name="← Back to the draft").click()
        # A new question opens without a problem shown; its type's fields follow the Type
        # select at once (the editor's own script), no reload.
        page.get_by_label("New question's type").select_option(label="A number")
        page.get_by_role("button", name="Add a question").click()
        page.wait_for_selector("#question-form")
        assert page.locator(".problem").count() == 0
        found += check(page, "question-new")
        opened = page.url
        page.get_by_label("Type", exact=True).select_option(label="A scale (5, 7 or 11 points)")
        assert page.get_by_label("Points").is_visible() and not page.locator("#lo").is_visible()
        page.get_by_label("Type", exact=True).select_option(label="One choice")
        assert page.get_by_label("Options, one per line").is_visible()
        assert not page.get_by_label("Points").is_visible()
        page.get_by_label("Type", exact=True).select_option(label="A number")
        assert page.locator("#lo").is_visible() and page.url == opened
        for label, value in {"Question": "Hours of unpaid overtime last week?",
                             "Smallest answer": "0", "Largest answer": "20",
                             "Question id": "overtime"}.items():  # fmt: skip
            page.get_by_label(label, exact=True).fill(value)
        page.get_by_role("button", name="Save", exact=True).click()
        expected = ["burnout", "commute", "tools", "overtime"]
        if QUESTIONNAIRE_PAGE:
            add_question(page, "A scale (5, 7 or 11 points)", {
                "Question": "How satisfied are you?", "Question id": "satisfied"})  # fmt: skip
            page.get_by_role("link", name="Edit question 5").click()
            page.get_by_label("Optional: respondents may choose “Prefer not to say”").check()
            page.get_by_label("Earlier question").select_option(value="burnout")
            page.get_by_label("Value", exact=True).fill("Yes")
            page.get_by_label("Label of the lowest point (optional)").fill("Not at all")
            page.get_by_label("Label of the highest point (optional)").fill("Completely")
            page.get_by_label("Help text (optional, shown under the question)").fill("Overall.")
            page.get_by_role("button", name="Save and update the advice").click()
            page.wait_for_selector("#advice-local")
            found += check(page, "question-scale")
            page.get_by_role("button", name="Save", exact=True).click()
            expected.append("satisfied")
        assert (
            page.locator("[data-question]").evaluate_all(
                "nodes => nodes.map(n => n.dataset.question)"
            )
            == expected
        )
        # Reorder by the buttons: the number up, then back down.
        page.get_by_role("button", name="Move up question 4").click()
        assert page.locator("[data-question]").nth(2).get_attribute("data-question") == "overtime"
        page.get_by_role("button", name="Move down question 3").click()
        assert page.locator("[data-question]").nth(3).get_attribute("data-question") == "overtime"

        # Settings wrong three ways: each beside its field, all listed at once.
        page.get_by_label("Relay address").fill("javascript:alert(1)")
        page.get_by_role("button", name="Save survey settings").click()
        page.wait_for_selector("#relay_url-problem")
        assert page.locator("#title-problem").is_visible()
        assert page.locator("#draft-problems li").count() == 3  # title, id, relay
        found += check(page, "draft-problems")
        page.get_by_label("Relay address").fill("")
        page.get_by_label("Title").fill("Wellbeing <b>wave</b> 1")
        page.get_by_label("Survey id").fill(SURVEY)
        page.get_by_label("Description (shown above the questions)").fill(
            "Randomized on your device."
        )
        page.get_by_role("button", name="Save survey settings").click()
        page.wait_for_selector("#ready")
        found += check(page, "draft-ready")

        # The preview, in both languages: the real respond page on the draft.
        for lang in ("en", "de"):
            t = translator(lang)
            page.goto(f"{page.url.split('?')[0].split('#')[0]}/preview?lang={lang}")
            assert state(page, "ready", "refused") == "ready"
            assert page.locator("html").get_attribute("lang") == lang
            assert page.get_by_role("button", name=t("randomize")).is_visible()
            assert page.locator("legend", has_text="How do you get to work?").count() == 1
            found += check(page, f"preview-{lang}")
            if QUESTIONNAIRE_PAGE and lang == "en":  # the condition holds: the scale shows
                assert not page.locator("#q-satisfied-set").is_visible()
                page.get_by_label("Yes", exact=True).first.check()
                page.wait_for_selector("#q-satisfied-set", state="visible")
                assert page.get_by_label("Prefer not to say").count() >= 1
                found += check(page, "preview-en-condition-met")
            if lang == "en":  # "Send" sends nothing and charges this device nothing
                ledger = "localStorage.getItem('deniable.state/1')"
                before = page.evaluate(ledger)
                page.get_by_label("Yes", exact=True).first.check()
                page.get_by_label("Bike", exact=True).check()
                page.get_by_label("Chat", exact=True).check()
                page.fill("#q-overtime", "3")
                if QUESTIONNAIRE_PAGE:
                    page.locator("#q-satisfied-set input").first.check()
                page.get_by_role("button", name=t("randomize")).click()
                state(page, "review")
                page.get_by_role("button", name=t("send")).click()
                assert state(page, "previewed") == "previewed"
                assert page.locator("[role=status]").inner_text() == t("preview_not_sent")
                assert page.locator("input[id$=token]").count() == 0
                assert page.evaluate(ledger) == before
                found += check(page, "preview-en-sent")
            page.get_by_role(
                "link", name="Back to the draft" if lang == "en" else "Zurück zum Entwurf"
            ).click()
            page.wait_for_selector("#publish-heading")

        assert not [url for url in posted if "/preview/" in url], posted
        page.get_by_role("button", name="Publish", exact=True).click()
        page.wait_for_selector("#published-now")
        found += check(page, "published")
        page.get_by_role("link", name=f"{base}/surveys/{SURVEY}/respond").click()

        # A respondent answers it from the respond page.
        assert state(page, "ready", "refused") == "ready"
        page.get_by_label("Yes", exact=True).first.check()
        page.get_by_label("Bike", exact=True).check()
        page.get_by_label("Chat", exact=True).check()
        page.fill("#q-overtime", "3")
        if QUESTIONNAIRE_PAGE:
            page.locator("#q-satisfied-set input").first.check()
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        page.get_by_role("button", name="Send these noisy values").click()
        assert state(page, "sent", "queued") == "sent"
        results = requests.get(f"{base}/api/v1/surveys/{SURVEY}/results", timeout=120).json()
        assert {q["question"]: q["n"] for q in results["questions"]} == dict.fromkeys(expected, 1)
        page.goto(f"{base}/surveys/{SURVEY}")
        assert "Wellbeing <b>wave</b> 1" in page.locator("h1").inner_text()
        page.screenshot(path=str(SHOTS / "results-desktop.png"), full_page=True)

        page.goto(f"{base}/editor/")
        found += check(page, "home")
        # Sign-in attempts past the limit: a page in words.  (Each of the server's two
        # processes counts in its own memory here: attempts go on until one says so.)
        for i in range(30):
            requests.post(f"{base}/editor/sign-in", data={"token": f"dnb_wrong{i}"},
                          headers={"Origin": base}, timeout=30)  # fmt: skip
        for _ in range(60):
            page.goto(f"{base}/editor/sign-in")
            page.get_by_label("Operator token").fill("dnb_wrong")
            with page.expect_navigation():
                page.keyboard.press("Enter")
            if page.locator("#refusal").count():
                break
        assert "Too many sign-in attempts" in page.locator("h1").inner_text()
        found += check(page, "sign-in-limited")
    finally:
        context.close()
    assert found == [], "\n".join(found)
