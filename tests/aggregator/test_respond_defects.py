"""The respond page's known defects, each driven in real Chromium against a served aggregator.

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

from .respond_stack import (
    SURVEY,
    answer_burnout,
    answer_questionnaire,
    counts,
    fill,
    open_page,
    queue_offline,
    run_stack,
    state,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = "[data-deniable-survey]"
# A marker the modified modules set: were any of them run, the page would show it.
TAMPERED = "\nglobalThis.deniableTampered = true;\n"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # Module scope, not session: other modules start Playwright's sync API of their own,
    # which cannot run while another instance is open.
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
    if where == "embed":  # the same pins elsewhere: a static import, a dynamic one, the entry
        names = ("deniable.js", "duchi.js", "respond.js")
    url = f"{base}/surveys/{SURVEY}/respond" if where == "respond page" else stack["allowed"].origin
    context, _, _ = open_page(stack)
    refetched = 0
    try:
        for index, name in enumerate(names):
            page = context.new_page()
            recorder_posts: list[str] = []
            page.on("request", lambda r, p=recorder_posts: r.method == "POST" and p.append(r.url))
            served = _fail_first_then_modify(
                page, f"{base}/static/deniable/{name}", "503" if index % 2 else "drop"
            )
            page.goto(url)
            assert state(page, "ready", "refused") == "refused", (name, served)
            assert page.evaluate("globalThis.deniableTampered") is None, name
            refetched += served[-1] == "modified"  # fetched again (and refused)
            message = page.inner_text(ROOT)
            assert "could not be loaded safely" in message and "Nothing was sent" in message, name
            assert page.is_visible(f"{ROOT} .deniable-error"), name
            assert page.query_selector(f"{ROOT} form") is None and recorder_posts == [], name
            page.close()
    finally:
        context.close()
    # The mechanism modules (imported after the signature check) meet the second fetch: the
    # path that ran modified code before the import map pinned every module.
    assert refetched >= 1


# Per viewport: the gaps between the two clicks, and the other way of acting twice tried there
# (each try waits out the hold once, so they are spread over the viewports).
VIEWPORTS = {
    (1280, 720): ((0, 300), "send"),
    (1366, 768): ((150,), "keyboard"),
    (390, 844): ((150,), "touch"),
}


def _randomize_box(page) -> tuple[float, float]:
    button = page.get_by_role("button", name="Randomize my answers")
    button.scroll_into_view_if_needed()
    box = button.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def _still_reviewing(page, posts: list[str], how: str) -> None:
    page.wait_for_timeout(150)  # a send would have begun by now
    assert page.get_attribute(ROOT, "data-state") == "review", how
    assert posts == [], how
    page.get_by_role("button", name="Change my answers").click()  # active after the hold
    state(page, "ready")


@pytest.mark.parametrize("width, height", list(VIEWPORTS))
def test_a_double_click_tap_or_key_repeat_does_not_skip_the_review(stack, width, height) -> None:
    """Defect 2: "Send" needs an action taken after the review is visible."""
    gaps, other = VIEWPORTS[width, height]
    phone = other == "touch"
    context, page, _ = open_page(
        stack, viewport={"width": width, "height": height}, has_touch=phone, is_mobile=phone
    )
    posts: list[str] = []
    page.on("request", lambda r: r.method == "POST" and posts.append(r.url))
    try:
        page.goto(f"{stack['base']}/surveys/{SURVEY}/respond")
        state(page, "ready")
        fill(page)
        for gap in gaps:
            x, y = _randomize_box(page)
            page.mouse.click(x, y)  # a double click, 0–300 ms apart, where the pointer was
            page.wait_for_timeout(gap)
            page.mouse.click(x, y)
            # And wherever the layout puts "Send": it takes no click this early either.
            state(page, "review")
            page.get_by_role("button", name="Send these noisy values").click(force=True)
            _still_reviewing(page, posts, f"double click, {gap} ms, then Send")
        if other == "touch":  # a double tap
            x, y = _randomize_box(page)
            page.touchscreen.tap(x, y)
            page.wait_for_timeout(100)
            page.touchscreen.tap(x, y)
            _still_reviewing(page, posts, "double tap")
        elif other == "keyboard":  # Enter twice: the second meets the review's heading
            page.get_by_role("button", name="Randomize my answers").focus()
            page.keyboard.press("Enter")
            page.keyboard.press("Enter")
            page.keyboard.press("Space")
            _still_reviewing(page, posts, "Enter twice")
        else:  # a deliberate click once the review has been up for a moment sends
            page.get_by_role("button", name="Randomize my answers").click()
            state(page, "review")
            page.get_by_role("button", name="Send these noisy values").click()  # waits for it
            assert state(page, "sent", "queued") == "sent" and len(posts) == 1
    finally:
        context.close()


def test_a_revisit_that_delivers_the_queued_batch_says_so(stack) -> None:
    """Defect 3: not "already answered … Nothing was sent" in red, but "delivered now"."""
    base = stack["base"]
    before = counts(base)
    context, page, _ = open_page(stack)
    try:
        page.goto(f"{base}/surveys/{SURVEY}/respond")
        state(page, "ready")
        queue_offline(context, page)
        page.close()  # the respondent leaves, and comes back online later
        context.set_offline(False)
        page = context.new_page()
        page.goto(f"{base}/surveys/{SURVEY}/respond")
        assert state(page, "sent", "queued", "answered", "refused") == "sent"
        text = page.inner_text(ROOT)
        assert "delivered now" in text
        assert "Nothing was sent" not in text and "already answered" not in text
        assert page.query_selector(f"{ROOT} .deniable-error") is None
        assert counts(base) == [n + 1 for n in before]
        page.reload()  # and afterwards: answered, which is not an error
        assert state(page, "answered", "refused") == "answered"
        assert page.query_selector(f"{ROOT} .deniable-error") is None
    finally:
        context.close()


def test_errors_sit_by_their_field_and_go_when_fixed(stack) -> None:
    """Defect 4, with the page's focus rules: errors next to their field (aria-invalid,
    aria-describedby), focus on the first problem, none left after a valid resubmit, and
    focus never on <body> after "Change my answers" or "Send"."""
    context, page, _ = open_page(stack, viewport={"width": 390, "height": 844})
    active = lambda: page.evaluate("document.activeElement.id || document.activeElement.tagName")  # noqa: E731
    try:
        page.goto(f"{stack['base']}/surveys/{SURVEY}/respond")
        state(page, "ready")
        answer_burnout(page)
        answer_questionnaire(page)  # "commute" left unanswered
        page.fill("#q-overtime", "99")  # out of range
        page.get_by_role("button", name="Randomize my answers").click()
        assert state(page, "errors", "review") == "errors"
        assert page.inner_text("#q-commute-error") == "Please answer this question."
        assert page.get_attribute("#q-commute-0", "aria-invalid") == "true"
        assert active() == "q-commute-0"  # focus on the first problem, its message in view
        assert _in_viewport(page, "#q-commute-0") and _in_viewport(page, "#q-commute-error")
        error = page.locator("#q-overtime-error")
        assert "from 0 to 20" in error.inner_text() and "[" not in error.inner_text()
        assert page.get_attribute("#q-overtime", "aria-invalid") == "true"
        assert page.get_attribute("#q-overtime", "aria-describedby") == "q-overtime-error"
        # The layout: the title once, form text of 16 px, Send and Change told apart.
        assert page.get_by_text("Workplace wellbeing (demo)", exact=True).count() == 1
        for selector in ("#q-overtime", "button[type=submit]", "label[for=q-overtime]"):
            assert page.eval_on_selector(selector, "e => getComputedStyle(e).fontSize") == "16px"
        text = page.inner_text("main")
        for internal in ("question overtime", "demo-workplace", "[0, 20]", ".js", "q-"):
            assert internal not in text, internal
        page.get_by_label("Bicycle", exact=True).check()
        page.fill("#q-overtime", "3.5")
        page.get_by_role("button", name="Randomize my answers").click()
        assert state(page, "review") == "review"
        assert error.inner_text() == "" and page.query_selector("[aria-invalid]") is None
        assert page.query_selector(f"{ROOT} .deniable-error") is None
        assert active() == "deniable-review"
        look = "e => getComputedStyle(e).backgroundColor + ' ' + getComputedStyle(e).color"
        page.wait_for_selector(".deniable-review button.deniable-primary:enabled")
        assert page.eval_on_selector(".deniable-primary:enabled", look) != page.eval_on_selector(
            ".deniable-secondary", look
        )
        page.get_by_role("button", name="Change my answers").click()
        state(page, "ready")
        assert active() not in ("BODY", "")
        page.get_by_role("button", name="Randomize my answers").click()
        state(page, "review")
        page.get_by_role("button", name="Send these noisy values").click()
        assert state(page, "sent", "queued") == "sent"
        assert active() == "deniable-thanks"
        thanks = page.inner_text(".deniable-thanks")
        survey = demo.demo_survey()
        assert "Thank you" in thanks and f"{len(survey.questions)} values" in thanks
        assert f"ε = {survey.total_epsilon:g}" in thanks
        assert page.get_attribute(".deniable-thanks a", "href") == f"/surveys/{SURVEY}"
    finally:
        context.close()


def _in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    return box is not None and 0 <= box["y"] and box["y"] + box["height"] <= size["height"]


def test_a_cors_refusal_says_so_and_names_the_origin_to_allow(stack) -> None:
    """Defect 5: not "aggregator unreachable (Failed to fetch)"; the developer's hint in the
    console names the origin to add to the allowlist."""
    site = stack["refused"]
    context, page, recorder = open_page(stack)
    try:
        page.goto(site.origin + "/")
        assert state(page, "ready", "refused") == "refused"
        text = page.inner_text(ROOT)
        assert "cannot reach the survey from this website" in text and "Failed to fetch" not in text
        hint = [line for line in recorder.console if "DENIABLE_CORS_ORIGINS" in line]
        assert hint and site.origin in hint[0]
        assert recorder.posts() == []
    finally:
        context.close()


# (A blocked entry, respond.js itself: the first test's first fetch of respond.js.)
@pytest.mark.parametrize("failure", ["blocked module", "tampered module", "aggregator down"])
def test_every_loading_failure_ends_in_words(stack, failure) -> None:
    """Defect 5: a blocked or tampered module, or an unreachable aggregator, on the respond page
    and on an embedding page: never "Loading the survey…" forever, never an empty div."""
    base = stack["base"]
    context, _, _ = open_page(stack)
    try:
        for url in (f"{base}/surveys/{SURVEY}/respond", stack["allowed"].origin + "/"):
            page = context.new_page()
            if failure == "blocked module":
                page.route(f"{base}/static/deniable/duchi.js", lambda route: route.abort())
            elif failure == "tampered module":
                page.route(
                    f"{base}/static/deniable/survey.js",
                    lambda route: route.fulfill(
                        response=(r := route.fetch()), body=r.text() + TAMPERED
                    ),
                )
            else:
                page.route(f"{base}/api/v1/**", lambda route: route.abort("connectionrefused"))
            page.goto(url)
            assert state(page, "ready", "refused", timeout=10_000) == "refused", url
            text = page.inner_text(ROOT)
            down = failure == "aggregator down"
            expected = "cannot be reached" if down else "could not be loaded"
            assert expected in text and "Nothing was sent" in text, (url, text)
            assert "Loading the survey" not in text and page.is_visible(f"{ROOT} .deniable-error")
            page.close()
    finally:
        context.close()


@pytest.mark.parametrize("failure", ["503", "drop"])
def test_watch_js_failing_too_still_ends_in_words(stack, failure) -> None:
    """Issue 19: the watcher itself cannot fail to load on the respond page (it is inline, by
    its hash), so a page whose watch.js fetch and respond.js both fail still says so at once."""
    base = stack["base"]
    context, page, recorder = open_page(stack)
    try:

        def fail(route) -> None:
            if failure == "503":
                route.fulfill(status=503, body="busy")
            else:
                route.abort("connectionreset")

        for name in ("watch.js", "respond.js"):  # every fetch of either fails
            page.route(f"{base}/static/deniable/{name}", fail)
        page.goto(f"{base}/surveys/{SURVEY}/respond")
        assert state(page, "ready", "refused", timeout=10_000) == "refused"
        text = page.inner_text(ROOT)
        assert "could not be loaded safely" in text and "Nothing was sent" in text, text
        assert "Loading the survey" not in text and page.is_visible(f"{ROOT} .deniable-error")
        assert recorder.posts() == []
    finally:
        context.close()
