"""The browser client's submission joins: the respond page in real Chromium.

Two people answer on the respond page of a real gunicorn aggregator; each
page posts one submission, so the crosstab counts both and its recount from
the raw export (by submission key) agrees.  Then the crosstab page of an optional,
conditional question: its "hide declined and not asked" link is used by keyboard only,
and the hidden state is checked by axe-core (WCAG 2.2 AA) at 1280x800 and 390x844, with
screenshots beside the respond page's.  Skipped like the other browser tests when
Chromium or Playwright is missing.
"""

from __future__ import annotations

import json

import pytest
import requests

from deniable.aggregator import cli, demo

from .respond_stack import REQUIRED, answer_burnout, answer_questionnaire, check_option
from .test_respond_axe import AXE, _check_both
from .test_respond_browser import ARGS, CHROMIUM, _require

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_respond_page_submissions_join(tmp_path) -> None:
    _require()
    if REQUIRED and not AXE.exists():
        pytest.fail(f"DENIABLE_REQUIRE_BROWSER=1 but axe-core is not installed at {AXE}")
    from playwright.sync_api import sync_playwright

    database, key = tmp_path / "deniable.sqlite3", tmp_path / "key.pem"
    options = ["--database", str(database), "--signing-key", str(key)]
    assert cli.main([*options, "init"]) == 0
    survey = demo.demo_survey()
    (tmp_path / "survey.json").write_text(json.dumps(survey.to_dict()))
    assert cli.main([*options, "create-survey", str(tmp_path / "survey.json")]) == 0
    port = demo.free_port()
    base = f"http://127.0.0.1:{port}"
    server = demo.start_server({"DATABASE": database, "SIGNING_KEY_PATH": key}, port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for commute in ("Bicycle", "Car"):
                context = browser.new_context()  # a new person: no "already answered" mark
                page = context.new_page()
                page.goto(f"{base}/surveys/{survey.id}/respond")
                answer_burnout(page)
                check_option(page, "commute", commute)
                check_option(page, "tools", "Email")
                page.fill("#q-overtime", "3.5")
                answer_questionnaire(page)
                page.get_by_role("button", name="Randomize my answers").click()
                page.get_by_role("button", name="Send these noisy values").click()
                page.wait_for_selector(
                    "[data-deniable-survey][data-state=sent]", state="attached", timeout=20_000
                )
                context.close()
            context = browser.new_context()
            if AXE.exists():
                context.add_init_script(path=str(AXE))  # outside the page's CSP
            page = context.new_page()
            page.goto(f"{base}/surveys/{survey.id}/crosstab?rows=burnout_cause&columns=commute")
            assert page.locator("#joint th", has_text="Prefer not to say").count() == 1
            page.locator("nav[aria-label='Question for the columns'] a").last.focus()
            page.keyboard.press("Tab")
            focused = page.evaluate("document.activeElement.dataset.nonresponse")
            assert focused == "hide"  # the next stop is the hide link: keyboard only
            with page.expect_navigation():
                page.keyboard.press("Enter")
            assert "nonresponse=hide" in page.url
            assert page.locator("#answered-note").is_visible()
            assert page.locator("#joint th", has_text="Prefer not to say").count() == 0
            current = page.locator("#nonresponse [aria-current=true]")
            assert current.get_attribute("data-nonresponse") == "hide"
            found = _check_both(page, "crosstab-nonresponse-hidden") if AXE.exists() else []
            context.close()
            browser.close()
        assert found == [], "\n".join(found)
        url = f"{base}/api/v1/surveys/{survey.id}/crosstab?rows=commute&columns=burnout"
        document = requests.get(url, timeout=10).json()
        assert document["kind"] == "joint" and document["n"] == 2
    finally:
        demo.stop_server(server)
