"""The embed snippet's URLs (aggregator/public_url.py): from PUBLIC_URL when set; never
https lost behind a trusted TLS proxy; X-Forwarded-Proto ignored without TRUST_PROXY."""

from __future__ import annotations

import re
import uuid

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.settings import SettingsError
from deniable.aggregator.storage import EXTENSION as STORAGE_EXTENSION

from .conftest import demo_survey_dict

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


def snippet_urls(app_config, headers=None, **settings) -> set[str]:
    app = create_app({**app_config, **settings})
    try:
        client = app.test_client()
        storage = app.extensions[STORAGE_EXTENSION]
        token = storage.create_operator_token("embed")
        survey_id = f"embed-{uuid.uuid4().hex[:8]}"
        definition = {**demo_survey_dict(survey_id), "format": "deniable.survey/2"}
        created = client.post(
            "/api/v1/surveys",
            json={"definition": definition},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert created.status_code == 201, created.get_json()
        response = client.get(f"/surveys/{survey_id}/embed", headers=headers or {})
        assert response.status_code == 200, response.get_data(as_text=True)
        text = response.get_data(as_text=True)
    finally:
        app.extensions[STORAGE_EXTENSION].close()
    urls = set(re.findall(r'(?:href|src|data-deniable-aggregator)="([^"]+)"', text))
    assert urls
    return urls


def test_the_configured_public_url_wins_over_the_host_header(app_config):
    urls = snippet_urls(
        app_config,
        {"Host": "evil.example", "X-Forwarded-Proto": "http"},
        PUBLIC_URL="https://Surveys.Example.org/",
        TRUST_PROXY=1,
    )
    assert all(url.startswith("https://surveys.example.org") for url in urls), urls
    assert "https://surveys.example.org" in urls


def test_forwarded_proto_only_with_trust_proxy(app_config):
    headers = {"Host": "surveys.example.org", "X-Forwarded-Proto": "https"}
    trusted = snippet_urls(app_config, headers, TRUST_PROXY=1)
    assert all(url.startswith("https://surveys.example.org") for url in trusted), trusted
    ignored = snippet_urls(app_config, headers)
    assert all(url.startswith("http://surveys.example.org") for url in ignored), ignored


@pytest.mark.parametrize(
    "value",
    ["https://x.example/path", "ftp://x.example", "x.example", "https://x.example?q", "https://"],
)
def test_a_public_url_that_is_not_an_origin_is_refused(app_config, value):
    with pytest.raises(SettingsError, match="PUBLIC_URL"):
        create_app({**app_config, "PUBLIC_URL": value})
