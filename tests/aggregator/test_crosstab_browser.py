"""The browser client's submission joins: the respond page in real Chromium.

Two people answer on the respond page of a real gunicorn aggregator; each
page posts one submission, so the crosstab counts both and its recount from
the raw export (by submission key) agrees.  Skipped like the other browser
tests when Chromium or Playwright is missing.
"""

from __future__ import annotations

import json

import pytest
import requests

from deniable.aggregator import cli, demo

from .respond_stack import answer_burnout, answer_questionnaire, check_option
from .test_respond_browser import ARGS, CHROMIUM, _require

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_respond_page_submissions_join(tmp_path) -> None:
    _require()
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
            browser.close()
        url = f"{base}/api/v1/surveys/{survey.id}/crosstab?rows=commute&columns=burnout"
        document = requests.get(url, timeout=10).json()
        assert document["kind"] == "joint" and document["n"] == 2
    finally:
        demo.stop_server(server)
