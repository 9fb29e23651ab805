"""The respond page in Chromium on a relayed survey: sealed units go to the relay, only."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import BACKENDS

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module", params=BACKENDS[:1])  # one backend: the page is the subject
def deployment(request):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    pytest.importorskip("playwright.sync_api")
    from .conftest import deployment as factory

    yield from factory.__wrapped__(request, request.getfixturevalue("tmp_path_factory"))


def test_the_respond_page_seals_and_sends_to_the_relay_only(deployment):
    from playwright.sync_api import sync_playwright

    before = deployment.relay_status()["q"]["waiting"]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context().new_page()
        posts = []
        page.on("request", lambda r: r.method == "POST" and posts.append((r.url, r.post_data)))
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(f"{deployment.aggregator.url}/surveys/q/respond")
        page.wait_for_selector("[data-deniable-survey][data-state=ready]", state="attached",
                               timeout=20_000)  # fmt: skip
        page.get_by_label("Yes", exact=True).check()
        page.get_by_label("green", exact=True).check()
        page.get_by_role("button", name="Randomize my answers").click()
        page.wait_for_selector("[data-deniable-survey][data-state=review]", state="attached")
        page.get_by_role("button", name="Send these noisy values").click()
        page.wait_for_selector("[data-deniable-survey][data-state=sent]", state="attached",
                               timeout=20_000)  # fmt: skip
        browser.close()
    assert errors == []
    assert len(posts) == 1 and posts[0][0] == f"{deployment.relay.url}/api/v1/surveys/q/sealed"
    body = json.loads(posts[0][1])
    assert [u["unit"] for u in body["units"]] == ["smoker", "team"]
    assert "green" not in posts[0][1]
    after = deployment.relay_status()["q"]["waiting"]
    assert {unit: after.get(unit, 0) - before.get(unit, 0) for unit in ("smoker", "team")} == {
        "smoker": 1, "team": 1}
