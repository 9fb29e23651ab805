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

from deniable.aggregator import create_app, respond
from deniable.aggregator.respond import (
    CORE,
    FORM,
    MODULES,
    PAGE_FILES,
    ROTATION,
    survey_modules,
    words,
)
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
    # The inline scripts are the import map and watch.js (which then cannot fail to load),
    # each allowed by its hash alone.
    inline, watch = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", page, re.S)
    assert watch == respond.static_file("watch.js").decode()
    digests = [
        base64.b64encode(hashlib.sha256(t.encode()).digest()).decode() for t in (inline, watch)
    ]
    assert "script-src 'self' 'sha256-{}' 'sha256-{}';".format(*digests) in policy
    assert '<script type="importmap">' in page
    preloaded = dict(re.findall(r'href="/static/deniable/([\w.]+)" integrity="([^"]+)"', page))
    preloaded.update(re.findall(r'src="/static/deniable/([\w.]+)" integrity="([^"]+)"', page))
    # The page's own style is pinned too (watch.js is inline, above).
    assert preloaded.pop("respond.css") == respond.integrity()["respond.css"]
    # The core and only the demo survey's mechanisms (binary_rr, grr, option_sampling, duchi).
    survey = Survey.from_dict(created_survey["definition"], resolved=True)
    mechanisms = {"mechanism.js", "grr.js", "option_sampling.js", "duchi.js"}
    assert set(preloaded) == set(survey_modules(survey)) == {*CORE, *mechanisms, *FORM}
    # Every module is pinned by the import map's integrity as well: a module fetched again
    # after a failed preload is checked too. keychain.js (a rotation only) is not preloaded.
    mapped = json.loads(inline)["integrity"]
    assert set(mapped) == {f"/static/deniable/{name}" for name in MODULES}
    assert not set(ROTATION) & set(preloaded)
    lazy = {url: hash for url, hash in mapped.items() if url.rsplit("/", 1)[1] in ROTATION}
    for name, hash in preloaded.items():
        assert mapped[f"/static/deniable/{name}"] == hash, name
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
    assert "closed" in page and 'data-deniable-survey="' not in page


def test_embed_snippet(client, created_survey) -> None:
    snippet = client.get(f"/surveys/{created_survey['id']}/embed").get_data(as_text=True)
    key = client.get("/api/v1/key").get_json()["public_key"]
    assert f'data-deniable-key="{key}"' in snippet
    survey = Survey.from_dict(created_survey["definition"], resolved=True)
    # An embed keeps the key it was pasted with: it preloads keychain.js for a rotation.
    modules = survey_modules(survey, rotation=True)
    assert snippet.count('integrity="sha384-') == len(modules) + len(PAGE_FILES)
    assert len(modules) < len(MODULES)
    (listed,) = re.findall(r'data-deniable-modules="([^"]*)"', snippet)
    assert listed.split() == list(modules)
    assert "/static/deniable/keychain.js" in snippet
    # The import map pins every module at its absolute URL: a refetch is checked too.
    (mapped,) = re.findall(r'<script type="importmap">(.*?)</script>', snippet)
    digest = base64.b64encode(hashlib.sha256(mapped.encode()).digest()).decode()
    assert f"script-src http://localhost 'sha256-{digest}'; style-src" in snippet  # host CSP
    hashes = respond.integrity()
    assert json.loads(mapped)["integrity"] == {
        f"http://localhost/static/deniable/{name}": hashes[name] for name in MODULES
    }
    # The language is the embedding page's choice; the page's words travel with the snippet.
    german = client.get(f"/surveys/{created_survey['id']}/embed?lang=de").get_data(as_text=True)
    assert 'data-deniable-lang="de"' in german and "zufällig verändert" in german
    assert 'data-deniable-lang="en"' in snippet and "randomized on this device" in snippet


def test_language_follows_accept_language_and_the_epsilon_page(client, created_survey) -> None:
    german = {"Accept-Language": "de-CH, en;q=0.5"}
    url = f"/surveys/{created_survey['id']}/respond"
    page = client.get(url, headers=german).get_data(as_text=True)
    assert '<html lang="de">' in page and 'data-deniable-lang="de"' in page
    assert "Die Umfrage wird geladen" in page
    english = client.get(f"/surveys/{created_survey['id']}/respond").get_data(as_text=True)
    assert '<html lang="en">' in english and "Loading the survey" in english
    about = client.get("/about/epsilon?lang=de")
    assert about.status_code == 200 and "Privatsphäre" in about.get_data(as_text=True)
    assert "ε" in client.get("/about/epsilon").get_data(as_text=True)
    missing = client.get("/surveys/nope/respond", headers={"Accept-Language": "de"})
    assert missing.status_code == 404 and "nope" not in missing.get_data(as_text=True)


def test_a_survey_s_language_sets_the_page_s_and_marks_its_text(
    client, created_survey, operator_headers
) -> None:
    """A German survey is a German page (WCAG 3.1.1); its text read in another page's language,
    or an English survey's in a German page, carries its own lang (WCAG 3.1.2)."""
    from tests.shared.test_translations import german

    untranslated = {k: v for k, v in german().items() if k != "translations"}
    for definition in (german(), {**untranslated, "id": "nur-deutsch"}):
        response = client.post(
            "/api/v1/surveys", json={"definition": definition}, headers=operator_headers
        )
        assert response.status_code == 201, response.data

    def page(survey_id: str, **headers: str) -> str:
        return client.get(f"/surveys/{survey_id}/respond", headers=headers).get_data(as_text=True)

    plain = page("glueck")
    assert '<html lang="de">' in plain and "Die Umfrage wird geladen" in plain
    assert "<h1>Glück bei der Arbeit</h1>" in plain and 'data-deniable-text-lang="de"' in plain
    # Asked for English, which the survey is translated into: all English, no mark needed.
    english = page("glueck", **{"Accept-Language": "en-GB"})
    assert '<html lang="en">' in english and "<h1>Happiness at work</h1>" in english
    assert 'data-deniable-text-lang="en"' in english and "Loading the survey" in english
    # A language neither the page's words nor the survey have: the survey's (German) throughout.
    assert '<html lang="de">' in page("glueck", **{"Accept-Language": "fr"})
    # English words around an untranslated German survey: its text is marked German.
    mixed = page("nur-deutsch", **{"Accept-Language": "en"})
    assert '<html lang="en">' in mixed and '<h1 lang="de">Glück bei der Arbeit</h1>' in mixed
    assert 'data-deniable-text-lang="de"' in mixed
    # And the other way round: an English survey in a German page.
    demo = page(created_survey["id"], **{"Accept-Language": "de"})
    assert '<html lang="de">' in demo and '<h1 lang="en">Demo survey</h1>' in demo
    # The embed's words default to the survey's language too.
    embed = client.get("/surveys/nur-deutsch/embed").get_data(as_text=True)
    assert 'data-deniable-lang="de"' in embed and "zufällig verändert" in embed


def test_the_catalogue_is_complete_in_every_language() -> None:
    catalogue = words.catalogue()
    english = catalogue["en"]
    # Every message the form and the pages ask for is in it (and nothing is left unused).
    from importlib import resources

    sources = [respond.static_file(name).decode() for name in respond.FORM] + [
        path.read_text()
        for path in resources.files("deniable.aggregator.respond").joinpath("templates").iterdir()
        if path.name.endswith(".html")
    ]
    sources.append((resources.files("deniable.aggregator.respond") / "__init__.py").read_text())
    asked = {name for text in sources for name in re.findall(r"""\bt\(["'](\w+)["']""", text)}
    assert asked <= set(english), asked - set(english)
    quoted = {name for text in sources for name in re.findall(r"""["'](\w+)["']""", text)}
    assert set(english) - quoted <= {"language"}, set(english) - quoted
    fields = lambda text: sorted(re.findall(r"\{(\w+)\}", text))  # noqa: E731
    for lang, table in catalogue.items():
        assert set(table) == set(english), lang
        for name, text in table.items():
            assert text.strip() and fields(text) == fields(english[name]), (lang, name)
            if lang != "en" and name not in {"language"}:
                assert text != english[name], (lang, name)


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
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type,x-deniable-enrolment",
        },
    )
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


def test_the_results_link_only_when_results_are_public(
    client, operator_headers, demo_definition, created_survey
) -> None:
    public = client.get(f"/surveys/{created_survey['id']}/respond").get_data(as_text=True)
    assert f'data-deniable-results="/surveys/{created_survey["id"]}"' in public
    private = {**demo_definition, "id": "private-one"}
    response = client.post(
        "/api/v1/surveys",
        headers=operator_headers,
        json={"definition": private, "results_public": False},
    )
    assert response.status_code == 201, response.data
    for path in ("/surveys/private-one/respond", "/surveys/private-one/embed"):
        assert "data-deniable-results" not in client.get(path).get_data(as_text=True), path
