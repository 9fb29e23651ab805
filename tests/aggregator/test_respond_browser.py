"""The respond page in real headless Chromium against a real gunicorn aggregator.

Playwright for Python drives Debian's /usr/bin/chromium (never a downloaded browser).
Every request each page makes is recorded, to show that no true answer leaves it:
the page posts once, only fixed-size noisy payloads, and only after "Send".
Skipped with the reason when Chromium or Playwright is missing, unless
DENIABLE_REQUIRE_BROWSER=1 (then it fails).
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from deniable.aggregator import cli, demo
from deniable.aggregator.respond import MODULES
from deniable.survey import Survey

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
SURVEY = "demo-workplace"
ENROLLED = "demo-enrolled"
ANSWERS = {"commute": "Bicycle", "tools": ["Email", "Meetings"], "overtime": "3.5"}
# What must never appear in any request the page makes (labels of the true answers).
TRUE_TEXT = ("Bicycle", "Email", "Meetings", "3.5", "burnout=", "true")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _require() -> None:
    reasons = []
    if not os.path.exists(CHROMIUM):
        reasons.append(f"{CHROMIUM} is not installed")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reasons.append("playwright (Python) is not installed")
    if reasons:
        if os.environ.get("DENIABLE_REQUIRE_BROWSER") == "1":
            pytest.fail("DENIABLE_REQUIRE_BROWSER=1 but " + "; ".join(reasons))
        pytest.skip("; ".join(reasons))


class _EmbedHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = self.server.page.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class EmbedSite(ThreadingHTTPServer):
    """Another origin: a page embedding the form, loading the client from the aggregator."""

    page = ""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _EmbedHandler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """A gunicorn aggregator with the demo survey, one allowed embed origin and one not."""
    _require()
    from playwright.sync_api import sync_playwright

    directory = tmp_path_factory.mktemp("respond")
    database, key = directory / "deniable.sqlite3", directory / "key.pem"
    options = ["--database", str(database), "--signing-key", str(key)]
    assert cli.main([*options, "init"]) == 0
    definition = directory / "survey.json"
    definition.write_text(json.dumps(demo.demo_survey().to_dict()))
    assert cli.main([*options, "create-survey", str(definition)]) == 0
    enrolled = {**demo.demo_survey().to_dict(), "id": ENROLLED}
    definition.write_text(json.dumps(enrolled))
    assert cli.main([*options, "create-survey", "--require-enrolment", str(definition)]) == 0
    tokens = directory / "tokens.txt"
    assert cli.main([*options, "token", "issue", ENROLLED, "--count", "1", "-o", str(tokens)]) == 0
    port = demo.free_port()
    base = f"http://127.0.0.1:{port}"
    allowed, refused = EmbedSite(), EmbedSite()
    os.environ["DENIABLE_CORS_ORIGINS"] = allowed.origin
    try:
        server = demo.start_server({"DATABASE": database, "SIGNING_KEY_PATH": key}, port)
    finally:
        del os.environ["DENIABLE_CORS_ORIGINS"]
    public_key = requests.get(f"{base}/api/v1/key", timeout=10).json()["public_key"]
    allowed.page = refused.page = (
        f'<!doctype html><html lang="en"><title>Embed</title><main>'
        f'<div data-deniable-survey="{SURVEY}" data-deniable-aggregator="{base}" '
        f'data-deniable-key="{public_key}"><noscript>JavaScript is required.</noscript></div>'
        f'</main><script type="module" src="{base}/static/deniable/respond.js"></script></html>'
    )
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        yield {"base": base, "browser": browser, "allowed": allowed, "refused": refused,
               "token": tokens.read_text().split()[0]}  # fmt: skip
    finally:
        browser.close()
        playwright.stop()
        allowed.stop()
        refused.stop()
        demo.stop_server(server)


def _counts(base: str) -> list[int]:
    results = requests.get(f"{base}/api/v1/surveys/{SURVEY}/results", timeout=10).json()
    return [q["n"] for q in results["questions"]]


class Recorder:
    """Every request a page makes: method, URL and body."""

    def __init__(self, page) -> None:
        self.requests: list[tuple[str, str, str]] = []
        page.on("request", lambda r: self.requests.append((r.method, r.url, r.post_data or "")))

    def posts(self) -> list[tuple[str, str, str]]:
        return [r for r in self.requests if r[0] == "POST"]

    def assert_no_true_answer(self) -> None:
        for method, url, body in self.requests:
            for text in TRUE_TEXT:
                assert text not in url and text not in body, (method, url, body)


def _open(stack):
    """A fresh browser context, a page in it, and a recorder of that page's requests."""
    context = stack["browser"].new_context()
    page = context.new_page()
    return context, page, Recorder(page)


def _fill(page) -> None:
    page.get_by_label("Yes", exact=True).check()
    page.get_by_label(ANSWERS["commute"], exact=True).check()
    for label in ANSWERS["tools"]:
        page.get_by_label(label, exact=True).check()
    page.fill("#q-overtime", ANSWERS["overtime"])


def _answer_and_send(page) -> None:
    """Fill in ANSWERS, randomize them, and send the noisy values from the review."""
    _fill(page)
    page.get_by_role("button", name="Randomize my answers").click()
    _state(page, "review")
    page.get_by_role("button", name="Send these noisy values").click()


def _state(page, *states: str, timeout: float = 20_000) -> str:
    selector = ", ".join(f"[data-deniable-survey][data-state={s}]" for s in states)
    page.wait_for_selector(selector, timeout=timeout, state="attached")
    return page.get_attribute("[data-deniable-survey]", "data-state")


def test_answer_in_the_page_only_noisy_values_leave(stack) -> None:
    base = stack["base"]
    before = _counts(base)
    context, page, recorder = _open(stack)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert _state(page, "ready", "refused") == "ready"
    # Every module the page ran is pinned in it by an SRI hash (the mechanism modules the client
    # loads for this survey included), and it loaded only those: not every mechanism.
    links = page.query_selector_all("link[rel=modulepreload][integrity]")
    script = page.get_attribute("script[integrity]", "src")
    pinned = {f"{base}{link.get_attribute('href')}" for link in links} | {f"{base}{script}"}
    fetched = {url for _, url, _ in recorder.requests if "/static/deniable/" in url}
    assert fetched == pinned and len(fetched) < len(MODULES)
    _fill(page)
    page.get_by_role("button", name="Randomize my answers").click()
    _state(page, "review")
    assert recorder.posts() == [], "nothing is sent before the respondent clicks Send"
    shown = page.inner_text(".review")
    assert "not your answers" in shown and "ε =" in shown
    page.get_by_role("button", name="Send these noisy values").click()
    assert _state(page, "sent", "queued") == "sent"
    posts = recorder.posts()
    assert len(posts) == 1 and posts[0][1] == f"{base}/api/v1/surveys/{SURVEY}/reports"
    body = json.loads(posts[0][2])
    survey = Survey.from_dict(requests.get(f"{base}/api/v1/surveys/{SURVEY}", timeout=10)
                              .json()["definition"], resolved=True)  # fmt: skip
    assert [r["question"] for r in body["reports"]] == survey.question_ids
    for report in body["reports"]:
        oracle = survey.question(report["question"]).oracle
        assert len(report["payload"]) == oracle.report_length
        oracle.decode(report["payload"])  # what the aggregator decodes: valid
    recorder.assert_no_true_answer()
    assert _counts(base) == [n + 1 for n in before]
    # The "answered" mark lives in the page's storage: a reload refuses a second answer.
    page.reload()
    assert _state(page, "ready", "refused") == "refused"
    assert "already answered" in page.inner_text("[data-deniable-survey]")
    assert len(recorder.posts()) == 1
    context.close()


def test_without_javascript_the_page_says_so_and_posts_nothing(stack) -> None:
    context = stack["browser"].new_context(java_script_enabled=False)
    page = context.new_page()
    recorder = Recorder(page)
    page.goto(f"{stack['base']}/surveys/{SURVEY}/respond")
    assert "JavaScript is required" in page.inner_text("main")
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
    assert "signature" in page.inner_text("[data-deniable-survey]")
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
    _fill(page)
    context.set_offline(True)
    page.get_by_role("button", name="Randomize my answers").click()
    _state(page, "review")
    page.get_by_role("button", name="Send these noisy values").click()
    assert _state(page, "sent", "queued") == "queued"
    assert _counts(base) == before
    context.set_offline(False)  # the page's "online" handler flushes the outbox
    # (wait_for_function would evaluate a string: the page's CSP forbids that, rightly)
    page.locator(".status", has_text="delivered").wait_for(timeout=20_000)
    assert _counts(base) == [n + 1 for n in before]
    page.reload()  # flushes again on load: nothing is left to send
    _state(page, "ready", "refused")
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
            route.fulfill(status=503, headers={"Retry-After": "1"},
                          content_type="application/problem+json", body="{}")  # fmt: skip
        else:
            route.continue_()

    page.route(f"{base}/api/v1/surveys/{SURVEY}/reports", busy_once)
    page.goto(f"{base}/surveys/{SURVEY}/respond")
    assert _state(page, "ready", "refused") == "ready"
    _answer_and_send(page)
    assert _state(page, "sent", "queued") == "queued"
    assert _counts(base) == before
    # No "online" event and no reload: the page's own timer sends the batch again.
    page.locator(".status", has_text="delivered").wait_for(timeout=20_000)
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
    pinned = "randomness.js jcs.js survey.js deniable.js keychain.js mechanism.js grr.js"
    site.page = original.replace('data-deniable-key=', f'data-deniable-modules="{pinned}" '
                                 'data-deniable-key=')  # fmt: skip
    context, page, recorder = _open(stack)
    try:
        page.goto(site.origin + "/")
        assert _state(page, "ready", "refused") == "refused"
        assert "not pinned" in page.inner_text("[data-deniable-survey]")
        fetched = {url.rsplit("/", 1)[1] for _, url, _ in recorder.requests
                   if "/static/deniable/" in url}  # fmt: skip
        assert not fetched & {"option_sampling.js", "duchi.js"} and recorder.posts() == []
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
    import importlib.util

    from werkzeug.serving import make_server

    path = Path(__file__).resolve().parents[2] / "examples" / "webform" / "site.py"
    spec = importlib.util.spec_from_file_location("webform_site", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
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
    assert len(received) == 1 and len(received[0]["reports"]) == 4
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
    page.get_by_role("button", name="Send my saved noisy answers").click()
    assert _state(page, "sent") == "sent"
    posts = [r for r in recorder.requests if r[0] == "POST"]
    assert len(posts) == 2 and posts[0][2] == posts[1][2], "the same reports, ids included"
    results = requests.get(f"{base}/api/v1/surveys/{ENROLLED}/results", timeout=10).json()
    assert [q["n"] for q in results["questions"]] == [1, 1, 1, 1]
    recorder.assert_no_true_answer()
    context.close()
