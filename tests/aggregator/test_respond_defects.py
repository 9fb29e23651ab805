"""The respond page's defects of issue 19, each driven in real Chromium against a served aggregator.

1. A module whose first fetch fails is fetched again: the second fetch must be pinned too.
2. A double click (or tap, or key repeat) on "Randomize" must not send from the review.
3. A revisit that delivers the queued batch says so (not "already answered … nothing was sent").
4. An old error does not stay on screen after a valid resubmit.
5. Every loading failure ends in a visible, plain-words message; a CORS refusal names the
   origin to allow in the console.
"""

from __future__ import annotations

import pytest

from deniable.aggregator import demo
from deniable.aggregator.respond import survey_modules

from .respond_stack import SURVEY, open_page, run_stack, state

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = "[data-deniable-survey]"
# A marker the modified modules set: were any of them run, the page would show it.
TAMPERED = "\nglobalThis.deniableTampered = true;\n"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from run_stack(tmp_path_factory)


def _fail_first_then_modify(page, url: str, failure: str) -> list[str]:
    """The first fetch of ``url`` fails (a 503, or the connection drops); later fetches get a
    modified module. Returns what was served, in order."""
    served: list[str] = []

    def route(route) -> None:
        if not served:
            served.append(failure)
            if failure == "503":
                route.fulfill(status=503, body="busy")
            else:
                route.abort("connectionreset")
            return
        served.append("modified")
        response = route.fetch()
        route.fulfill(response=response, body=response.text() + TAMPERED)

    page.route(url, route)
    return served


@pytest.mark.parametrize("where", ["respond page", "embed"])
def test_a_module_whose_first_fetch_fails_is_still_pinned(stack, where) -> None:
    """Defect 1: Chromium fetches a module again after a failed preload; the import map's
    `integrity` must pin that second fetch, so a modified module never runs."""
    base = stack["base"]
    names = survey_modules(demo.demo_survey())
    url = f"{base}/surveys/{SURVEY}/respond" if where == "respond page" else stack["allowed"].origin
    context, _, _ = open_page(stack)
    try:
        for index, name in enumerate(names):
            page = context.new_page()
            recorder_posts: list[str] = []
            page.on("request", lambda r, p=recorder_posts: r.method == "POST" and p.append(r.url))
            served = _fail_first_then_modify(page, f"{base}/static/deniable/{name}",
                                             "503" if index % 2 else "drop")  # fmt: skip
            page.goto(url)
            assert state(page, "ready", "refused") == "refused", (name, served)
            assert page.evaluate("globalThis.deniableTampered") is None, name
            if name != "respond.js":  # the entry is fetched once, with its own hash
                assert served[-1] == "modified", (name, served)  # fetched again, and refused
            message = page.inner_text(ROOT)
            assert "could not be loaded safely" in message and "Nothing was sent" in message, name
            assert page.is_visible(f"{ROOT} .deniable-error"), name
            assert page.query_selector(f"{ROOT} form") is None and recorder_posts == [], name
            page.close()
    finally:
        context.close()
