"""The respond page of a relayed survey: sealed.js and sealing.js pinned, the relay allowed."""

from __future__ import annotations

import html
import re

import pytest

from deniable.aggregator.respond import SEALING, integrity, survey_modules
from deniable.survey import Survey

DEFINITION = {
    "format": "deniable.survey/2",
    "id": "relayed",
    "title": "Relayed",
    "questions": [{"id": "q", "type": "yes_no", "text": "Yes?", "epsilon": 1.0}],
}


def test_modules_and_csp_follow_the_signed_relay(client, operator_headers):
    plain = Survey.from_dict(DEFINITION)
    assert not set(SEALING) & set(survey_modules(plain))
    relay = {"url": "https://relay.example:8443", "min_batch": 10, "shuffle_unit": "question"}
    relayed = Survey.from_dict({**DEFINITION, "relay": relay})
    assert set(SEALING) <= set(survey_modules(relayed))
    response = client.post(
        "/api/v1/surveys",
        headers=operator_headers,
        json={"definition": {**DEFINITION, "relay": relay}},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    page = client.get("/surveys/relayed/respond")
    assert page.status_code == 200
    csp = page.headers["Content-Security-Policy"]
    assert "connect-src 'self' https://relay.example:8443;" in csp
    for name in ("sealed.js", "sealing.js"):
        assert integrity()[name] in page.get_data(as_text=True)
        assert client.get(f"/static/deniable/{name}").status_code == 200


@pytest.mark.parametrize(
    ("url", "source"),
    [
        # No CSP host source names an IPv6 literal (Chromium drops one): the scheme does.
        ("https://[2001:db8::5]:8100", "https:"),
        ("https://[2001:DB8:0:0:0:0:0:5]:8100/relay", "https:"),
        ("http://[0:0:0:0:0:0:0:1]:8100", "http:"),
        ("https://Relay.Example:443/in", "https://relay.example"),
        ("https://192.0.2.7", "https://192.0.2.7"),
    ],
)
def test_the_csp_allows_the_relay_by_its_serialized_origin(client, operator_headers, url, source):
    relay = {"url": url, "min_batch": 10, "shuffle_unit": "question"}
    response = client.post(
        "/api/v1/surveys",
        headers=operator_headers,
        json={"definition": {**DEFINITION, "relay": relay}},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    csp = client.get("/surveys/relayed/respond").headers["Content-Security-Policy"]
    assert f"connect-src 'self' {source};" in csp
    embed = client.get("/surveys/relayed/embed").get_data(as_text=True)
    assert f"connect-src http://localhost {source}\n" in embed
    assert "DENIABLE_CORS_ORIGINS setting" in embed


@pytest.mark.parametrize(
    ("unit", "english", "german"),
    [
        (
            "question",
            "The relay passes on the values for each question only in shuffled batches of"
            " at least 12,500,",
            "Dieser gibt die Werte jeder Frage nur gemischt und in Gruppen von"
            " mindestens 12.500 weiter",
        ),
        (
            "submission",
            "The relay passes on bundles only in shuffled batches of at least 12,500,",
            "Dieser gibt die Pakete nur gemischt und in Gruppen von mindestens 12.500 weiter",
        ),
    ],
)
def test_the_page_says_what_the_relay_does_in_plain_words(
    client, operator_headers, unit, english, german
):
    relay = {"url": "https://Mix.Relay.Example:8443/in", "min_batch": 12500, "shuffle_unit": unit}
    response = client.post(
        "/api/v1/surveys",
        headers=operator_headers,
        json={"definition": {**DEFINITION, "relay": relay}},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    services = {
        "en": "a separate relay service, mix.relay.example.",
        "de": "einen getrennten Weiterleitungsdienst, mix.relay.example.",
    }
    for lang, words in (("en", english), ("de", german)):
        service = services[lang]
        page = client.get(f"/surveys/relayed/respond?lang={lang}").get_data(as_text=True)
        (passage,) = re.findall(r'<p class="deniable-intro deniable-relay">([^<]*)</p>', page)
        # the host name the reader knows, no port, path or survey id; min_batch grouped
        assert words in passage and service in passage, passage
        assert "8443" not in passage and "relayed" not in passage
        embed = client.get(f"/surveys/relayed/embed?lang={lang}").get_data(as_text=True)
        (pasted,) = re.findall(r'<p class="deniable-intro deniable-relay">([^<]*)</p>', embed)
        assert html.unescape(pasted) == html.unescape(passage)  # the same words, escaped
    direct = client.post(
        "/api/v1/surveys",
        headers=operator_headers,
        json={"definition": {**DEFINITION, "id": "direct"}},
    )
    assert direct.status_code == 201
    for lang in ("en", "de"):
        page = client.get(f"/surveys/direct/respond?lang={lang}").get_data(as_text=True)
        assert "deniable-relay" not in page, lang
        assert "deniable-relay" not in client.get(f"/surveys/direct/embed?lang={lang}").text
        assert "relay service" not in page and "Weiterleitungsdienst" not in page, lang


def test_a_relay_that_forwards_one_at_a_time_is_not_said_to_hide_whose_values_are_whose(
    client, operator_headers
):
    """min_batch 1 mixes nobody: the page says what still holds (sealed, sent through the
    relay, which keeps the device's address from the survey's server) and claims no more."""
    relay = {"url": "https://relay.example", "min_batch": 1, "shuffle_unit": "question"}
    response = client.post(
        "/api/v1/surveys",
        headers=operator_headers,
        json={"definition": {**DEFINITION, "id": "single", "relay": relay}},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    for lang, unclaimed in (("en", "cannot tell"), ("de", "nicht erkennen")):
        page = client.get(f"/surveys/single/respond?lang={lang}").get_data(as_text=True)
        (passage,) = re.findall(r'<p class="deniable-intro deniable-relay">([^<]*)</p>', page)
        assert "relay.example" in passage and unclaimed not in passage, passage
        assert ("address" if lang == "en" else "Adresse") in passage, passage


def test_a_noised_surveys_page_says_the_relay_mixes_in_made_up_answers(client, operator_headers):
    """A survey whose relay adds dummy reports says so, in one sentence after the relay
    passage, with the condition it rests on (the relay does not collude with the owner)."""
    from deniable.dummies import calibrate

    noise = {"epsilon": 1.0, "delta": 1e-6, "law": calibrate(1.0, 1e-6).law.to_dict()}
    relay = {"url": "https://relay.example", "min_batch": 20, "shuffle_unit": "question"}
    for survey_id, terms in (("noised", {**relay, "noise": noise}), ("plain", relay)):
        response = client.post(
            "/api/v1/surveys",
            headers=operator_headers,
            json={"definition": {**DEFINITION, "id": survey_id, "relay": terms}},
        )
        assert response.status_code == 201, response.get_data(as_text=True)
    said = {
        "en": (
            "The relay also mixes made-up answers in with the real ones before the survey's"
            " organisers see them, which protects you further as long as the relay does not"
            " work together with the organisers."
        ),
        "de": (
            "Der Dienst mischt außerdem erfundene Antworten unter die echten, bevor die"
            " Veranstalter der Umfrage sie sehen; das schützt Sie zusätzlich, solange der"
            " Dienst nicht mit den Veranstaltern zusammenarbeitet."
        ),
    }
    for lang, sentence in said.items():
        for where in ("respond", "embed"):
            page = client.get(f"/surveys/noised/{where}?lang={lang}").get_data(as_text=True)
            (passage,) = re.findall(r'<p class="deniable-intro deniable-relay">([^<]*)</p>', page)
            assert html.unescape(passage).endswith(" " + sentence), passage
            plain = client.get(f"/surveys/plain/{where}?lang={lang}").get_data(as_text=True)
            assert sentence not in html.unescape(plain)


def test_the_survey_page_says_plainly_when_the_relays_held_count_is_not_known(
    client, operator_headers
):
    """The survey page asks the relay for its held count server-side, on a worker thread:
    a relay that never answers costs the page at most relay_held.WAIT_SECONDS, one that
    refuses connections is said to be unreachable, never a 500; a survey whose results are
    private says nothing of it (its counts stay hidden).  The answered case, with a real
    relay and aggregator, is tests/relay/test_flushing.py."""
    import socket
    import time

    from deniable.aggregator.dashboard import relay_held

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # takes connections, never answers
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    try:
        relays = {
            "silent": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "refused": f"http://127.0.0.1:{closed.getsockname()[1]}",
            "hidden": f"http://127.0.0.1:{closed.getsockname()[1]}",
        }
        for survey_id, url in relays.items():
            relay = {"url": url, "min_batch": 20, "shuffle_unit": "question"}
            response = client.post(
                "/api/v1/surveys",
                headers=operator_headers,
                json={
                    "definition": {**DEFINITION, "id": survey_id, "relay": relay},
                    "results_public": survey_id != "hidden",
                },
            )
            assert response.status_code == 201, response.get_data(as_text=True)
        started = time.monotonic()
        page = client.get("/surveys/silent")
        assert page.status_code == 200
        assert time.monotonic() - started < relay_held.WAIT_SECONDS + 1.0
        assert 'id="relay-held" data-known="no"' in page.text
        assert "its count is not known yet" in page.text
        deadline = time.monotonic() + 10
        while "could not be reached just now" not in (text := client.get("/surveys/refused").text):
            assert time.monotonic() < deadline, text
            time.sleep(0.1)
        assert "The relay holds" not in text
        hidden = client.get("/surveys/hidden")
        assert hidden.status_code == 200 and 'id="private-notice"' in hidden.text
        assert 'id="relay-held"' not in hidden.text
    finally:
        silent.close()
        closed.close()
