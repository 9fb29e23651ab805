"""The respond page in real headless Chromium against a real gunicorn aggregator.

Every request each page makes is recorded, to show that no true answer leaves it:
the page posts once, only fixed-size noisy payloads, and only after "Send".
The stack (aggregator, embedding sites, browser) and helpers: respond_stack.py.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
import requests

from deniable.aggregator import demo
from deniable.aggregator.respond import MODULES
from deniable.survey import Survey

from .respond_stack import (  # ARGS, CHROMIUM, _require: other browser tests import them here
    ARGS,  # noqa: F401
    CHROMIUM,  # noqa: F401
    ENROLLED,
    SURVEY,
    TRUE_TEXT,
    Recorder,
    host_page,
    run_stack,
)
from .respond_stack import answer_and_send as _answer_and_send
from .respond_stack import counts as _counts
from .respond_stack import fill as _fill
from .respond_stack import open_page as _open
from .respond_stack import queue_offline as _queue_offline
from .respond_stack import require_browser as _require  # noqa: F401
from .respond_stack import state as _state

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    # Module scope, not session: other modules start Playwright's sync API of their own,
    # which cannot run while another instance is open.
    yield from run_stack(tmp_path_factory)


def test_answer_in_the_page_only_noisy_values_leave(stack) -> None:
    base = stack["base"]
    before = _counts(base)
    context, page, recorder = _open(stack)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert _state(page, "ready", "refused") == "ready"
    # Every module the page ran is pinned in it by an SRI hash (the mechanism modules the client
    # loads for this survey included), and it loaded only those: not every mechanism.
    pinned = {
        f"{base}{node.get_attribute('href') or node.get_attribute('src')}"
        for node in page.query_selector_all("link[integrity], script[integrity]")
    }
    fetched = {url for _, url, _ in recorder.requests if "/static/deniable/" in url}
    assert fetched == pinned and len(fetched) < len(MODULES)
    _fill(page)
    page.get_by_role("button", name="Randomize my answers").click()
    _state(page, "review")
    assert recorder.posts() == [], "nothing is sent before the respondent clicks Send"
    shown = page.inner_text(".deniable-review")
    assert "not your answers" in shown and "ε =" in shown
    page.get_by_role("button", name="Send these noisy values").click()
    assert _state(page, "sent", "queued") == "sent"
    posts = recorder.posts()
    assert len(posts) == 1 and posts[0][1] == f"{base}/api/v1/surveys/{SURVEY}/reports"
    body = json.loads(posts[0][2])
    survey = Survey.from_dict(
        requests.get(f"{base}/api/v1/surveys/{SURVEY}", timeout=10).json()["definition"],
        resolved=True,
    )
    assert [r["question"] for r in body["reports"]] == survey.question_ids
    for report in body["reports"]:
        oracle = survey.question(report["question"]).oracle
        assert len(report["payload"]) == oracle.report_length
        oracle.decode(report["payload"])  # what the aggregator decodes: valid
    recorder.assert_no_true_answer()
    assert _counts(base) == [n + 1 for n in before]
    # The "answered" mark lives in the page's storage: a reload refuses a second answer.
    page.reload()
    assert _state(page, "ready", "answered", "refused") == "answered"
    assert "already answered" in page.inner_text("[data-deniable-survey]")
    assert len(recorder.posts()) == 1
    context.close()


def test_without_javascript_the_page_says_so_and_posts_nothing(stack) -> None:
    context = stack["browser"].new_context(java_script_enabled=False)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{stack['base']}/surveys/{SURVEY}/respond")
    assert "JavaScript is required" in page.inner_text("main")
    assert not page.is_visible("[data-deniable-loading]")  # no "Loading…" that never ends
    assert page.query_selector("form") is None and recorder.posts() == []
    context.close()


@pytest.mark.parametrize("tamper", ["definition", "signature"])
def test_a_tampered_survey_is_refused_and_nothing_is_posted(stack, tamper) -> None:
    base = stack["base"]
    context, page, recorder = _open(stack)

    def alter(route) -> None:
        response = route.fetch()
        document = response.json()
        if tamper == "definition":
            document["definition"]["questions"][0]["text"] = "Did you leave work early?"
        else:
            signature = document["signature"]
            document["signature"] = ("A" if signature[0] != "A" else "B") + signature[1:]
        route.fulfill(response=response, body=json.dumps(document))

    page.route(f"{base}/api/v1/surveys/{SURVEY}", alter)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert _state(page, "ready", "refused") == "refused"
    assert "could not be verified" in page.inner_text("[data-deniable-survey]")
    assert page.query_selector("form") is None and recorder.posts() == []
    context.close()


@pytest.mark.parametrize("tamper_module", [False, True])
def test_keychain_is_imported_for_another_key_id_and_pinned_by_the_import_map(
    stack, tamper_module
) -> None:
    """keychain.js is not preloaded; when needed, the import map's integrity pins it."""
    base = stack["base"]
    context, page, recorder = _open(stack)

    def other_key_id(route) -> None:  # the key is unchanged: the rotation check keeps the pin
        response = route.fetch()
        route.fulfill(response=response, body=json.dumps({**response.json(), "key_id": "0" * 16}))

    def modified(route) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=response.text() + "\n// modified\n")

    page.route(f"{base}/api/v1/surveys/{SURVEY}", other_key_id)
    if tamper_module:
        page.route(f"{base}/static/deniable/keychain.js", modified)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert page.query_selector("link[rel=modulepreload][href$='/keychain.js']") is None
    fetched = lambda: [url for _, url, _ in recorder.requests if url.endswith("/keychain.js")]  # noqa: E731
    if tamper_module:  # the browser refuses a keychain.js that does not match its hash
        assert _state(page, "ready", "refused") == "refused"
        assert recorder.posts() == []
    else:  # keychain.js ran: it fetched the key document and found the key unchanged, so the
        # survey, still naming another key, is refused (docs/protocol.md §6.2, reason key-id)
        assert _state(page, "ready", "refused") == "refused"
        assert any(url.endswith("/api/v1/key") for _, url, _ in recorder.requests)
        assert recorder.posts() == []
    assert fetched() == [f"{base}/static/deniable/keychain.js"]
    context.close()


def test_offline_then_online_delivers_exactly_once(stack) -> None:
    base = stack["base"]
    before = _counts(base)
    context, page, recorder = _open(stack)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert _state(page, "ready", "refused") == "ready"
    _queue_offline(context, page)
    assert _counts(base) == before
    context.set_offline(False)  # the page's "online" handler flushes the outbox
    # (wait_for_function would evaluate a string: the page's CSP forbids that, rightly)
    page.locator(".deniable-status", has_text="delivered").wait_for(timeout=20_000)
    assert _counts(base) == [n + 1 for n in before]
    page.reload()  # flushes again on load: nothing is left to send
    assert _state(page, "ready", "answered", "refused") == "answered"
    bodies = {body for method, _, body in recorder.requests if method == "POST"}
    assert len(bodies) == 1, "every retry resends the identical body (same report ids)"
    assert _counts(base) == [n + 1 for n in before]
    recorder.assert_no_true_answer()
    context.close()


def test_a_busy_aggregator_is_retried_after_retry_after_and_counted_once(stack) -> None:
    base = stack["base"]
    before = _counts(base)
    context, page, recorder = _open(stack)
    answered: list[int] = []

    def busy_once(route) -> None:  # the first POST meets a 503, as from an overloaded server
        answered.append(len(answered))
        if len(answered) == 1:
            route.fulfill(
                status=503,
                headers={"Retry-After": "1"},
                content_type="application/problem+json",
                body="{}",
            )
        else:
            route.continue_()

    page.route(f"{base}/api/v1/surveys/{SURVEY}/reports", busy_once)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert _state(page, "ready", "refused") == "ready"
    _answer_and_send(page)
    assert _state(page, "sent", "queued") == "queued"
    assert _counts(base) == before
    # No "online" event and no reload: the page's own timer sends the batch again.
    page.locator(".deniable-status", has_text="delivered").wait_for(timeout=20_000)
    assert _state(page, "sent") == "sent"
    assert _counts(base) == [n + 1 for n in before]
    bodies = {body for method, _, body in recorder.requests if method == "POST"}
    assert len(answered) == 2 and len(bodies) == 1, "the retry resends the identical body"
    recorder.assert_no_true_answer()
    context.close()


def test_embedded_in_another_origin_works_only_when_cors_allows_it(stack) -> None:
    base = stack["base"]
    before = _counts(base)
    for name, expected in (("refused", "refused"), ("allowed", "ready")):
        context, page, recorder = _open(stack)
        page.goto(stack[name].origin + "/")
        assert _state(page, "ready", "refused") == expected, name
        if expected == "ready":
            _answer_and_send(page)
            assert _state(page, "sent", "queued") == "sent"
            recorder.assert_no_true_answer()
        else:
            assert recorder.posts() == []
        context.close()
    assert _counts(base) == [n + 1 for n in before]


def test_an_embed_imports_no_module_its_snippet_did_not_pin(stack) -> None:
    """A snippet pasted for another survey pins fewer modules: the client refuses the
    survey before fetching a mechanism module that no hash covers."""
    site = stack["allowed"]
    original = site.page
    unpinned = ("option_sampling.js", "duchi.js")
    snippet = "\n".join(
        line
        for line in stack["snippet"].splitlines()
        if "modulepreload" not in line or not any(f'/{name}"' in line for name in unpinned)
    )
    snippet = re.sub(
        r'data-deniable-modules="[^"]*"',
        lambda m: " ".join(name for name in m.group(0).split() if name.rstrip('"') not in unpinned),
        snippet,
    )
    site.page = host_page(snippet)
    context, page, recorder = _open(stack)
    try:
        page.goto(site.origin + "/")
        assert _state(page, "ready", "refused") == "refused"
        assert "could not be loaded safely" in page.inner_text("[data-deniable-survey]")
        assert any("not pinned" in line for line in recorder.console)  # for the developer
        fetched = {
            url.rsplit("/", 1)[1] for _, url, _ in recorder.requests if "/static/deniable/" in url
        }
        assert not fetched & set(unpinned) and recorder.posts() == []
    finally:
        context.close()
        site.page = original


def test_respond_page_headers(stack) -> None:
    response = requests.get(f"{stack['base']}/surveys/{SURVEY}/respond", timeout=10)
    policy = response.headers["Content-Security-Policy"]
    assert "unsafe-inline" not in policy and "script-src 'self'" in policy
    assert "form-action 'none'" in policy
    assert 'integrity="sha384-' in response.text
    assert requests.get(f"{stack['base']}/surveys/nope/respond", timeout=10).status_code == 404


def test_example_site_relays_only_noisy_reports(stack) -> None:
    """examples/webform/site.py (design B): the site's server receives only noisy batches."""
    from werkzeug.serving import make_server

    module = _example("webform", "site")
    base = stack["base"]
    key = requests.get(f"{base}/api/v1/key", timeout=10).json()["public_key"]
    site = module.create_site(base, SURVEY, key)
    server = make_server("127.0.0.1", 0, site, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    before = _counts(base)
    context, page, recorder = _open(stack)
    try:
        page.goto(f"http://127.0.0.1:{server.server_port}/")
        assert _state(page, "ready", "refused") == "ready"
        _answer_and_send(page)
        assert _state(page, "sent", "queued") == "sent"
        recorder.assert_no_true_answer()
    finally:
        context.close()
        server.shutdown()
    received = site.config["RECEIVED"]
    assert len(received) == 1 and len(received[0]["reports"]) == len(demo.demo_survey().questions)
    text = json.dumps(received)
    assert not any(answer in text for answer in TRUE_TEXT)
    assert _counts(base) == [n + 1 for n in before]


def test_a_survey_that_requires_enrolment_takes_the_token_in_the_form(stack) -> None:
    """A mistyped token is refused (403); the charged batch waits, even across a reload,
    until a valid token sends the same reports."""
    base = stack["base"]
    context, page, recorder = _open(stack)
    page.goto(f"{base}/surveys/{ENROLLED}/respond")
    assert _state(page, "ready", "refused") == "ready"
    _fill(page)
    page.get_by_label("Enrolment token", exact=False).fill("dne_" + "x" * 43)
    page.get_by_role("button", name="Randomize my answers").click()
    _state(page, "review")
    page.get_by_role("button", name="Send these noisy values").click()
    assert _state(page, "sent", "token") == "token"
    page.reload()  # the batch is saved: the page asks for a token again, not for answers
    assert _state(page, "token", "ready", "refused") == "token"
    page.fill("#deniable-retry-token", stack["token"])
    page.get_by_role("button", name="Send my saved noisy values").click()
    assert _state(page, "sent") == "sent"
    posts = [r for r in recorder.requests if r[0] == "POST"]
    assert len(posts) == 2 and posts[0][2] == posts[1][2], "the same reports, ids included"
    results = requests.get(f"{base}/api/v1/surveys/{ENROLLED}/results", timeout=10).json()
    assert [q["n"] for q in results["questions"]] == [1] * len(demo.demo_survey().questions)
    recorder.assert_no_true_answer()
    context.close()


def _example(folder: str, name: str):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{folder}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_embed_example_host_page(stack) -> None:
    """examples/embed/host.py: the snippet pasted in a static page on another (allowed)
    origin, under the host page's own CSP as docs/embedding.md states it."""
    host, base, site = _example("embed", "host"), stack["base"], stack["allowed"]
    original = site.page
    site.page = host.page(stack["snippet"])
    site.headers = {"Content-Security-Policy": host.content_security_policy(stack["snippet"], base)}
    before = _counts(base)
    context, page, recorder = _open(stack)
    try:
        page.goto(site.origin + "/")
        assert _state(page, "ready", "refused") == "ready"
        _answer_and_send(page)
        assert _state(page, "sent", "queued") == "sent"
        recorder.assert_no_true_answer()
        assert not [line for line in recorder.console if "Content Security Policy" in line]
    finally:
        context.close()
        site.page, site.headers = original, {}
    assert _counts(base) == [n + 1 for n in before]


def test_keyboard_only(stack) -> None:
    """The whole form by keyboard alone: Tab, Space, arrow keys, typing and Enter."""
    base = stack["base"]
    context, page, recorder = _open(stack)
    keys = page.keyboard
    focused = lambda: page.evaluate("document.activeElement.id || document.activeElement.tagName")  # noqa: E731
    try:
        page.goto(f"{base}/surveys/{SURVEY}/respond")
        assert _state(page, "ready", "refused") == "ready"
        keys.press("Tab")  # the link to what ε means
        assert page.evaluate("document.activeElement.textContent") == "What does ε mean?"
        keys.press("Tab")
        assert focused() == "q-burnout-0"
        keys.press("Space")  # Yes: its follow-up appears after the number
        keys.press("Tab")
        assert focused() == "q-commute-0"
        keys.press("ArrowDown")
        keys.press("ArrowDown")  # Bicycle
        keys.press("Tab")
        keys.press("Space")  # Email
        keys.press("Tab")
        keys.press("Tab")
        keys.press("Space")  # Meetings
        keys.press("Tab")
        keys.press("Tab")
        assert focused() == "q-overtime"
        keys.type("3.5")
        keys.press("Tab")
        assert focused() == "q-burnout_cause-0"
        keys.press("Space")  # its first cause
        keys.press("Tab")
        assert focused() == "q-harassment-0"
        keys.press("Space")  # Yes
        keys.press("Tab")
        assert focused() == "q-recommend-0"
        for _ in range(8):
            keys.press("ArrowRight")  # 8 on the 0-10 scale
        keys.press("Tab")
        keys.press("Enter")  # Randomize my answers
        assert _state(page, "review") == "review" and focused() == "deniable-review"
        names = ("q-burnout-0", "q-commute-2", "q-tools-0", "q-tools-2", "q-tools-1")
        names += ("q-burnout_cause-0", "q-harassment-0", "q-recommend-8")
        checked = [page.is_checked(f"#{name}") for name in names]
        assert checked == [True, True, True, True, False, True, True, True]
        page.wait_for_selector(".deniable-review button.deniable-primary:enabled")  # after the hold
        keys.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Send these noisy values"
        keys.press("Enter")
        assert _state(page, "sent", "queued") == "sent" and focused() == "deniable-thanks"
        assert len(recorder.posts()) == 1
        recorder.assert_no_true_answer()
    finally:
        context.close()
