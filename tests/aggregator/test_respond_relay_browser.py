"""A relayed survey's page in real headless Chromium: sealed in the browser, sent to the relay.

A real gunicorn aggregator serves the respond page of a relayed survey; the browser
client (imported from the page, under the page's CSP) fetches and verifies the survey
and the signed encryption key, seals with Chromium's WebCrypto and posts to a minimal
loopback relay (a recording HTTP server with CORS; the relay service itself is tested in
tests/relay/). The aggregator's key opens what arrived.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from deniable import sealing
from deniable.aggregator import demo, signing
from deniable.survey import Survey

from .test_respond_browser import CHROMIUM, _require

pytestmark = [pytest.mark.browser, pytest.mark.slow]


class _Relay(BaseHTTPRequestHandler):
    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin", "*"))
        self.send_header("Access-Control-Allow-Methods", "POST")
        self.send_header("Access-Control-Allow-Headers", "Content-Type, Accept")

    def do_OPTIONS(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(204)
        self._cors()
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append((self.path, dict(self.headers), body))  # type: ignore[attr-defined]
        self.send_response(202)
        self._cors()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        pass


class _Relay6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


# The relay on IPv4, and on IPv6 named in full: no CSP host source can name an
# IPv6 literal (Chromium drops one as invalid), so the page's connect-src allows its scheme.
@pytest.mark.parametrize(
    ("server", "host", "named", "source"),
    [
        (ThreadingHTTPServer, "127.0.0.1", "127.0.0.1", "http://127.0.0.1:{port}"),
        (_Relay6, "::1", "[0:0:0:0:0:0:0:1]", "http:"),
    ],
    ids=["ipv4", "ipv6"],
)
def test_the_page_seals_in_chromium_and_posts_to_the_relay_only(
    tmp_path, server, host, named, source
):
    _require()
    from playwright.sync_api import sync_playwright

    relay = server((host, 0), _Relay)
    relay.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=relay.serve_forever, daemon=True).start()
    relay_url = f"http://{named}:{relay.server_address[1]}"
    definition = {
        "format": "deniable.survey/2",
        "id": "rel",
        "title": "Relayed",
        "questions": [
            {"id": "q1", "type": "yes_no", "text": "Yes?", "epsilon": 1.0},
            {
                "id": "q2",
                "type": "single_choice",
                "text": "Which?",
                "epsilon": 1.0,
                "options": ["a", "b", "c"],
            },
        ],
        "relay": {"url": relay_url, "min_batch": 5, "shuffle_unit": "question"},
    }
    (tmp_path / "s.json").write_text(json.dumps(definition))
    command = [sys.executable, "-m", "deniable.aggregator.cli", "--data-dir", str(tmp_path)]
    subprocess.run([*command, "init"], check=True, capture_output=True)
    subprocess.run(
        [*command, "create-survey", str(tmp_path / "s.json")], check=True, capture_output=True
    )
    config = {
        "DATABASE": str(tmp_path / "deniable.sqlite3"),
        "SIGNING_KEY_PATH": str(tmp_path / "signing_key.pem"),
    }
    port = demo.free_port()
    server = demo.start_server(config, port, workers=1)
    aggregator_posts = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM)
            page = browser.new_page()
            page.on(
                "request",
                lambda r: (
                    aggregator_posts.append(r.url)
                    if r.method == "POST" and f":{port}/" in r.url
                    else None
                ),
            )
            csp = page.goto(f"http://127.0.0.1:{port}/surveys/rel/respond").headers[
                "content-security-policy"
            ]
            key = page.get_attribute("[data-deniable-key]", "data-deniable-key")
            result = page.evaluate(
                """async ([key]) => {
              const m = await import('/static/deniable/deniable.js');
              const c = new m.SurveyClient(location.origin,
                { publicKey: key, storage: new m.MemoryStorage() });
              const r = await c.answer(await c.fetchSurvey('rel'), { q1: true, q2: 'b' });
              return { delivered: r.delivered, ids: r.reportIds };
            }""",
                [key],
            )
            browser.close()
    finally:
        demo.stop_server(server)
        relay.shutdown()
        relay.server_close()
    assert f"connect-src 'self' {source.format(port=relay.server_address[1])};" in csp
    assert result["delivered"] and aggregator_posts == []
    ((path, headers, body),) = relay.seen  # type: ignore[attr-defined]
    assert path == "/api/v1/surveys/rel/sealed" and "X-Deniable-Enrolment" not in headers
    keys = signing.load_key(config["SIGNING_KEY_PATH"]).encryption
    survey = Survey.from_dict(definition)
    document = json.loads(body)
    assert document["key_id"] == keys.key_id
    opened = []
    for item in document["units"]:
        raw = base64.urlsafe_b64decode(item["sealed"] + "=" * (-len(item["sealed"]) % 4))
        opened.append(
            json.loads(
                keys.open_sealed(
                    survey_id="rel",
                    unit=item["unit"],
                    sealed=raw,
                    size=sealing.unit_size(survey, item["unit"]),
                )
            )
        )
    assert [r["question"] for r in opened] == ["q1", "q2"]
    assert sorted(r["id"] for r in opened) == sorted(result["ids"])
