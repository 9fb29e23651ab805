"""What the respond page's Chromium tests share: a served aggregator, embedding sites, helpers.

Playwright for Python drives Debian's /usr/bin/chromium (never a downloaded browser) against a
real gunicorn aggregator on a free loopback port.  Each test module starts one stack
(``run_stack``, its module-scoped fixture) and opens a browser context per state.
Skipped with the reason when Chromium or Playwright is missing, unless
DENIABLE_REQUIRE_BROWSER=1 (then it fails).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import requests

from deniable.aggregator import cli, demo

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SURVEY = "demo-workplace"
ENROLLED = "demo-enrolled"
# The demo survey sent through a relay (nothing is sent to it: its page's words are checked).
RELAYED = "demo-relayed"
RELAY = {"url": "https://relay.example.org", "min_batch": 1000, "shuffle_unit": "question"}
# A German survey translated into English, and the same untranslated
# (tests/shared/test_translations.py).
GERMAN, GERMAN_ONLY = "glueck", "nur-deutsch"
ANSWERS = {"commute": "Bicycle", "tools": ["Email", "Meetings"], "overtime": "3.5"}
# What must never appear in any request the page makes (labels of the true answers).
TRUE_TEXT = ("Bicycle", "Email", "Meetings", "3.5", "burnout=", "true")
REQUIRED = os.environ.get("DENIABLE_REQUIRE_BROWSER") == "1"


def require_browser() -> None:
    reasons = []
    if not os.path.exists(CHROMIUM):
        reasons.append(f"{CHROMIUM} is not installed")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reasons.append("playwright (Python) is not installed")
    if reasons:
        if REQUIRED:
            pytest.fail("DENIABLE_REQUIRE_BROWSER=1 but " + "; ".join(reasons))
        pytest.skip("; ".join(reasons))


class _EmbedHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = self.server.page.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in self.server.headers.items():  # type: ignore[attr-defined]
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class EmbedSite(ThreadingHTTPServer):
    """Another origin: a page embedding the form, loading the client from the aggregator."""

    page = ""
    headers: dict[str, str] = {}  # e.g. the host page's own Content-Security-Policy

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


def host_page(snippet: str, lang: str = "en") -> str:
    """A host site's page with the aggregator's /embed snippet pasted in."""
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        "<title>Embed</title></head><body><main><h1>Our staff survey</h1>\n"
        f"{snippet}</main></body></html>"
    )


def run_stack(tmp_path_factory) -> Iterator[dict[str, Any]]:
    """A gunicorn aggregator with the demo survey (also enrolled, and relayed), one allowed embed
    origin and one not."""
    require_browser()
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
    relayed = {**demo.demo_survey().upgraded().to_dict(), "id": RELAYED, "relay": RELAY}
    definition.write_text(json.dumps(relayed))  # a relay needs format /2
    assert cli.main([*options, "create-survey", str(definition)]) == 0
    from tests.shared.test_translations import german

    untranslated = {k: v for k, v in german().items() if k != "translations"}
    for translated in (german(), {**untranslated, "id": GERMAN_ONLY}):
        definition.write_text(json.dumps(translated))
        assert cli.main([*options, "create-survey", str(definition)]) == 0
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
    snippet = requests.get(f"{base}/surveys/{SURVEY}/embed", timeout=10).text
    allowed.page = refused.page = host_page(snippet)
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
    try:
        yield {
            "base": base,
            "browser": browser,
            "allowed": allowed,
            "refused": refused,
            "snippet": snippet,
            "token": tokens.read_text().split()[0],
        }
    finally:
        browser.close()
        playwright.stop()
        allowed.stop()
        refused.stop()
        demo.stop_server(server)


def counts(base: str, survey: str = SURVEY) -> list[int]:
    results = requests.get(f"{base}/api/v1/surveys/{survey}/results", timeout=10).json()
    return [q["n"] for q in results["questions"]]


class Recorder:
    """Every request a page makes (method, URL and body) and what it wrote to the console."""

    def __init__(self, page) -> None:
        self.requests: list[tuple[str, str, str]] = []
        self.console: list[str] = []
        page.on("request", lambda r: self.requests.append((r.method, r.url, r.post_data or "")))
        page.on("console", lambda m: self.console.append(m.text))

    def posts(self) -> list[tuple[str, str, str]]:
        return [r for r in self.requests if r[0] == "POST"]

    def assert_no_true_answer(self) -> None:
        for method, url, body in self.requests:
            for text in TRUE_TEXT:
                assert text not in url and text not in body, (method, url, body)


def open_page(stack, **options):
    """A fresh browser context, a page in it, and a recorder of that page's requests."""
    context = stack["browser"].new_context(**options)
    page = context.new_page()
    return context, page, Recorder(page)


def answer_burnout(page) -> None:
    """Yes to the demo's first question (its follow-up then appears: declined here)."""
    page.check("#q-burnout-0")
    page.check("#q-burnout_cause-declined")


def answer_questionnaire(page) -> None:
    """The demo's optional sensitive question declined and its 0-10 scale at 8."""
    page.check("#q-harassment-declined")
    page.check("#q-recommend-8")


def fill(page, overtime: str = ANSWERS["overtime"]) -> None:
    answer_burnout(page)
    check_option(page, "commute", ANSWERS["commute"])
    for label in ANSWERS["tools"]:
        check_option(page, "tools", label)
    page.fill("#q-overtime", overtime)
    answer_questionnaire(page)


def check_option(page, question: str, label: str) -> None:
    """Checks the option ``label`` of the demo's ``question`` (labels repeat across questions)."""
    index = demo.demo_survey().question(question).options.index(label)
    page.check(f"#q-{question}-{index}")


def answer_and_send(page) -> None:
    """Fill in ANSWERS, randomize them, and send the noisy values from the review."""
    fill(page)
    page.get_by_role("button", name="Randomize my answers").click()
    state(page, "review")
    page.get_by_role("button", name="Send these noisy values").click()


def queue_offline(context, page) -> None:
    """Answer and send with the context offline: the batch waits on the device ("queued")."""
    context.set_offline(True)
    answer_and_send(page)
    assert state(page, "sent", "queued") == "queued"


def state(page, *states: str, timeout: float = 20_000) -> str:
    """Waits until the form's data-state is one of ``states``; returns it."""
    selector = ", ".join(f"[data-deniable-survey][data-state={s}]" for s in states)
    page.wait_for_selector(selector, timeout=timeout, state="attached")
    return page.get_attribute("[data-deniable-survey]", "data-state")
