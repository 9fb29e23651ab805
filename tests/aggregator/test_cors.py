"""Cross-origin access (service/cors.py): origins parsed strictly (RFC 6454
serialization) and matched exactly, IPv6 included; Vary: Origin; no header without an Origin."""

from __future__ import annotations

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.settings import SettingsError
from deniable.aggregator.storage import EXTENSION as STORAGE_EXTENSION
from deniable.service.cors import parse_origins

IPV6 = "http://[2001:db8::1]:8443"
LISTED = f"https://forms.example.org,{IPV6},http://192.0.2.7:8080"

SQLITE = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def cors_client(app_config):
    app = create_app({**app_config, "CORS_ORIGINS": LISTED})
    yield app.test_client()
    app.extensions[STORAGE_EXTENSION].close()


def allowed(client, origin: str, path: str = "/api/v1/key") -> str | None:
    return client.get(path, headers={"Origin": origin}).headers.get("Access-Control-Allow-Origin")


@SQLITE
def test_an_ipv6_origin_is_matched_exactly_not_as_a_pattern(cors_client):
    """flask-cors took ``http://[2001:db8::1]:8443`` for a regular expression (3)."""
    assert allowed(cors_client, IPV6) == IPV6
    for origin in (
        "http://d:8443",
        "http://2:8443",
        "http://[2001:db8::2]:8443",
        "http://[2001:db8::1]:8444",
        "https://[2001:db8::1]:8443",
    ):
        assert allowed(cors_client, origin) is None, origin


@SQLITE
@pytest.mark.parametrize(
    "origin",
    [
        "https://forms.example.org.evil.example",
        "https://formsXexample.org",
        "https://forms.example.org:443",
        "https://FORMS.example.org",
        "http://forms.example.org",
        "https://forms.example.org/",
        "null",
        "https://evil.example",
        "http://192.0.2.7:808",
        "http://192.0.2.7:80800",
        "http://192.0.2.77:8080",
    ],
)
def test_only_the_exact_serialization_is_allowed(cors_client, origin):
    assert allowed(cors_client, origin) is None
    assert allowed(cors_client, "https://forms.example.org") == "https://forms.example.org"
    assert allowed(cors_client, "http://192.0.2.7:8080") == "http://192.0.2.7:8080"


@SQLITE
def test_vary_origin_and_no_allow_origin_without_an_origin(cors_client):
    for path in ("/api/v1/key", "/api/v1/surveys/none", "/api/v1/surveys/none/reports"):
        bare = cors_client.get(path)
        assert "Access-Control-Allow-Origin" not in bare.headers, path
        assert "Origin" in bare.headers.get("Vary", ""), path
        refused = cors_client.get(path, headers={"Origin": "https://evil.example"})
        assert "Access-Control-Allow-Origin" not in refused.headers
        assert "Origin" in refused.headers.get("Vary", "")
        ok = cors_client.get(path, headers={"Origin": IPV6})
        assert ok.headers["Access-Control-Allow-Origin"] == IPV6
        assert "Origin" in ok.headers.get("Vary", "")
        assert "Access-Control-Allow-Credentials" not in ok.headers
    preflight = cors_client.options(
        "/api/v1/surveys/x/reports",
        headers={
            "Origin": IPV6,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code in (200, 204)
    assert preflight.headers["Access-Control-Allow-Origin"] == IPV6
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    assert "Origin" in preflight.headers.get("Vary", "")
    refused = cors_client.options(
        "/api/v1/surveys/x/reports",
        headers={"Origin": "http://d:8443", "Access-Control-Request-Method": "POST"},
    )
    assert "Access-Control-Allow-Origin" not in refused.headers
    assert "Access-Control-Allow-Methods" not in refused.headers
    results = cors_client.get("/api/v1/surveys/x/results", headers={"Origin": IPV6})
    assert "Access-Control-Allow-Origin" not in results.headers


def test_listed_origins_are_put_in_their_serialized_form():
    assert parse_origins(
        "HTTPS://Forms.Example.ORG:443, http://[2001:DB8:0:0:0:0:0:1]:80,"
        "http://[::ffff:192.0.2.1]:08080"
    ) == (
        "https://forms.example.org",
        "http://[2001:db8::1]",
        "http://[::ffff:c000:201]:8080",
    )
    assert parse_origins("") == () and parse_origins(" , ") == ()
    assert parse_origins(["https://xn--bcher-kva.example"]) == ("https://xn--bcher-kva.example",)


@SQLITE
@pytest.mark.parametrize(
    "value",
    [
        "*",
        "forms.example.org",
        "https://a.example/path",
        "ftp://x",
        "https://a.example?x",
        "https://a.example$",
        "https://a.(b).example",
        "https://a.example:99999",
        "https://a.example:",
        "https://[fe80::1%25eth0]",
        "https://user@a.example",
        "https://a.example#",
        "null",
        "https://a..example",
        "https://-a.example",
        "https://bücher.example",
        r"https://.*\.example",
        "https://a.example/",
        "https://[2001:db8::1",
        "https://2001:db8::1",
        "https://[g::1]",
        "https://a_b.example",
        "https://a.example:+80",
        "https:///a.example",
        "https://",
        "https://a.example\\",
        "https://a b.example",
        "https://a.example:8O",
    ],
)
def test_entries_that_are_not_origins_are_refused(app_config, value):
    with pytest.raises(ValueError, match="origin"):
        parse_origins(value)
    with pytest.raises(SettingsError, match="CORS_ORIGINS"):
        create_app({**app_config, "CORS_ORIGINS": value})


@SQLITE
def test_the_share_box_names_the_cors_setting_while_no_origin_is_listed(
    cors_client, client, storage
):
    """Embedding on another site needs its origin in DENIABLE_CORS_ORIGINS: the survey
    page's share box says so (and where it is explained) until an origin is listed."""
    from deniable.aggregator.demo import demo_survey

    survey = demo_survey()
    storage.create_survey(survey, results_public=True)
    share = client.get(f"/surveys/{survey.id}").text.split('id="share"')[1].split("</section>")[0]
    assert 'id="cors-hint"' in share and "<code>DENIABLE_CORS_ORIGINS</code>" in share
    assert "docs/embedding.md" in share
    listed = cors_client.get(f"/surveys/{survey.id}").text
    assert 'id="share"' in listed and 'id="cors-hint"' not in listed
