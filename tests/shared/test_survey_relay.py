"""Survey.relay: the signed ``relay`` member (url, min_batch, shuffle_unit)."""

from __future__ import annotations

import pytest

from deniable.errors import InvalidSurvey
from deniable.survey import Relay, Survey

BASE = {
    "format": "deniable.survey/2",
    "id": "relayed",
    "title": "Relayed",
    "questions": [{"id": "q", "type": "yes_no", "text": "Yes?", "epsilon": 1.0}],
}
RELAY = {"url": "https://relay.example", "min_batch": 1000, "shuffle_unit": "question"}


def test_parsed_kept_and_signed():
    survey = Survey.from_dict({**BASE, "relay": RELAY})
    assert survey.relay == Relay(url="https://relay.example", min_batch=1000)
    assert survey.to_dict()["relay"] == RELAY
    assert (
        b'"relay":{"min_batch":1000,"shuffle_unit":"question","url":"https://relay.example"}'
        in survey.canonical_bytes()
    )
    # The resolved (signed) form round-trips; a client re-parses it byte for byte.
    again = Survey.from_dict(survey.to_dict(), resolved=True)
    assert again == survey and again.canonical_bytes() == survey.canonical_bytes()
    assert survey.relay.units(survey) == ["q"]
    assert Survey.from_dict(BASE).relay is None
    assert "relay" not in Survey.from_dict(BASE).to_dict()


def test_submission_unit_and_default():
    survey = Survey.from_dict({**BASE, "relay": {**RELAY, "shuffle_unit": "submission"}})
    assert survey.relay.units(survey) == [""]
    default = Survey.from_dict({**BASE, "relay": {"url": RELAY["url"], "min_batch": 5}})
    assert default.relay.shuffle_unit == "question"
    # A signed definition always spells the unit out (its canonical form does).
    with pytest.raises(InvalidSurvey, match="resolved"):
        Survey.from_dict({**BASE, "relay": {"url": RELAY["url"], "min_batch": 5}}, resolved=True)


@pytest.mark.parametrize(
    ("relay", "match"),
    [
        ({**RELAY, "url": "ftp://relay.example"}, "https"),
        ({**RELAY, "url": "http://relay.example"}, "loopback"),
        ({**RELAY, "url": "https://relay.example/"}, "trailing"),
        ({**RELAY, "url": "https://relay.example?x=1"}, "query"),
        ({**RELAY, "url": "https://user@relay.example"}, "credentials"),
        ({**RELAY, "url": 7}, "URL"),
        ({**RELAY, "min_batch": 0}, "min_batch"),
        ({**RELAY, "min_batch": True}, "min_batch"),
        ({**RELAY, "min_batch": 1.5}, "min_batch"),
        ({**RELAY, "shuffle_unit": "answer"}, "shuffle_unit"),
        ({**RELAY, "extra": 1}, "unknown"),
        ({"url": RELAY["url"]}, "missing"),
        ("https://relay.example", "object"),
    ],
)
def test_refused(relay, match):
    with pytest.raises(InvalidSurvey, match=match):
        Survey.from_dict({**BASE, "relay": relay})


def test_loopback_http_allowed_for_tests_and_v1_refused():
    for url in ("http://127.0.0.1:8080", "http://localhost", "http://[::1]:9000/relay"):
        assert Survey.from_dict({**BASE, "relay": {**RELAY, "url": url}}).relay.url == url
    with pytest.raises(InvalidSurvey, match="needs format"):
        Survey.from_dict({**BASE, "format": "deniable.survey/1", "relay": RELAY})
