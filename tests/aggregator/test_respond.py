"""The respond page, the client's files, the embed snippet and CORS, over Flask's test client.

The page itself runs in real Chromium in test_respond_browser.py; here: headers, the SRI
hashes against the served bytes, the no-JavaScript text, and which routes CORS opens.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.respond import CORE, MODULES, ROTATION, survey_modules
from deniable.aggregator.storage import EXTENSION as STORAGE_EXTENSION
from deniable.survey import Survey

ORIGIN = "https://forms.example.org"


def _sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def test_page_has_a_strict_csp_and_sri_for_every_module(client, created_survey) -> None:
    response = client.get(f"/surveys/{created_survey['id']}/respond")
    assert response.status_code == 200
    policy = response.headers["Content-Security-Policy"]
    assert "unsafe" not in policy
    assert "form-action 'none'" in policy and "frame-ancestors 'none'" in policy
    page = response.get_data(as_text=True)
    assert "JavaScript is required" in page and "<form" not in page
    # The one inline script is the import map, allowed by its hash alone.
    (inline,) = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"script-src 'self' 'sha256-{digest}';" in policy
    assert '<script type="importmap">' in page
    preloaded = dict(re.findall(r'href="/static/deniable/([\w.]+)" integrity="([^"]+)"', page))
    preloaded.update(re.findall(r'src="/static/deniable/([\w.]+)" integrity="([^"]+)"', page))
    # The core and only the demo survey's mechanisms (binary_rr, grr, option_sampling, duchi).
    survey = Survey.from_dict(created_survey["definition"], resolved=True)
    mechanisms = {"mechanism.js", "grr.js", "option_sampling.js", "duchi.js"}
    assert set(preloaded) == set(survey_modules(survey)) == {*CORE, *mechanisms, "respond.js"}
    # keychain.js (a rotation only) is not preloaded, but pinned by the import map's integrity.
    lazy = json.loads(inline)["integrity"]
    assert set(lazy) == {f"/static/deniable/{name}" for name in ROTATION}
    assert not set(ROTATION) & set(preloaded)
    pinned = {**preloaded, **{url.rsplit("/", 1)[1]: integrity for url, integrity in lazy.items()}}
    for name, integrity in pinned.items():
        served = client.get(f"/static/deniable/{name}")
        assert served.status_code == 200 and served.mimetype == "text/javascript"
        assert _sri(served.data) == integrity, name
    key = client.get("/api/v1/key").get_json()["public_key"]
    assert f'data-deniable-key="{key}"' in page
    # The client may import exactly the modules the page pinned, and no other.
    (listed,) = re.findall(r'data-deniable-modules="([^"]*)"', page)
    assert set(listed.split()) == set(pinned)


def test_only_the_client_files_are_served(client) -> None:
    assert client.get("/static/deniable/package.json").status_code == 200
    for name in ("../__init__.py", "test", "audit.js", "nope.js"):
        assert client.get(f"/static/deniable/{name}").status_code == 404


def test_unknown_and_closed_surveys(client, created_survey, operator_headers) -> None:
    assert client.get("/surveys/nope/respond").status_code == 404
    client.post(f"/api/v1/surveys/{created_survey['id']}/close", headers=operator_headers)
    page = client.get(f"/surveys/{created_survey['id']}/respond").get_data(as_text=True)
    assert "closed" in page and "data-deniable-survey" not in page


def test_embed_snippet(client, created_survey) -> None:
    snippet = client.get(f"/surveys/{created_survey['id']}/embed").get_data(as_text=True)
    key = client.get("/api/v1/key").get_json()["public_key"]
    assert f'data-deniable-key="{key}"' in snippet
    survey = Survey.from_dict(created_survey["definition"], resolved=True)
    # An embed keeps the key it was pasted with: it preloads keychain.js for a rotation.
    modules = survey_modules(survey, rotation=True)
    assert snippet.count('integrity="sha384-') == len(modules) < len(MODULES)
    (listed,) = re.findall(r'data-deniable-modules="([^"]*)"', snippet)
    assert listed.split() == list(modules)
    assert "/static/deniable/keychain.js" in snippet


def test_no_cors_by_default(client, created_survey) -> None:
    response = client.get(f"/api/v1/surveys/{created_survey['id']}", headers={"Origin": ORIGIN})
    assert "Access-Control-Allow-Origin" not in response.headers


@pytest.fixture
def cors_client(app_config):
    app = create_app({**app_config, "CORS_ORIGINS": ORIGIN})
    yield app.test_client()
    app.extensions[STORAGE_EXTENSION].close()


def test_cors_allowlist_opens_exactly_the_respondent_routes(cors_client) -> None:
    preflight = cors_client.options(
        "/api/v1/surveys/any/reports",
        headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "content-type,x-deniable-enrolment"},
    )  # fmt: skip
    assert preflight.headers["Access-Control-Allow-Origin"] == ORIGIN
    allowed = preflight.headers["Access-Control-Allow-Headers"].lower()
    assert "x-deniable-enrolment" in allowed and "content-type" in allowed
    assert "Access-Control-Allow-Credentials" not in preflight.headers
    for path in ("/api/v1/key", "/api/v1/surveys/any"):
        response = cors_client.get(path, headers={"Origin": ORIGIN})
        assert response.headers.get("Access-Control-Allow-Origin") == ORIGIN, path
    for path in ("/api/v1/surveys", "/api/v1/surveys/any/results", "/api/v1/surveys/any/export"):
        response = cors_client.get(path, headers={"Origin": ORIGIN})
        assert "Access-Control-Allow-Origin" not in response.headers, path
    other = cors_client.get("/api/v1/key", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers


@pytest.mark.parametrize("value", ["*", "forms.example.org", "https://a.example/path", "ftp://x"])
def test_bad_cors_origins_are_refused_at_start(app_config, value) -> None:
    from deniable.aggregator.settings import SettingsError

    with pytest.raises(SettingsError, match="CORS_ORIGINS"):
        create_app({**app_config, "CORS_ORIGINS": value})
