"""Survey.relay: the signed ``relay`` member (url, min_batch, shuffle_unit, noise)."""

from __future__ import annotations

import pytest

from deniable.dummies import GeometricDummies
from deniable.errors import InvalidSurvey
from deniable.survey import Relay, Survey
from deniable.survey_relay import RelayNoise

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


# -- relay.noise: the dummies the relay adds (deniable.survey_relay.RelayNoise) -----------------

CHOICE = {
    "id": "team",
    "type": "single_choice",
    "text": "Team?",
    "epsilon": 2.0,
    "options": ["red", "green", "blue"],
    "mechanism": "grr",
}
GEOMETRIC = {
    "distribution": "geometric",
    "shift": 7,
    "top": 14,
    "lower_ratio": "233969/1048576",
    "upper_ratio": "233969/1048576",
}
NOISE = {"epsilon": 3.0, "delta": 1e-4, "law": GEOMETRIC}


def noised(noise: object = NOISE, **relay: object) -> dict:
    return {
        **BASE,
        "questions": [*BASE["questions"], CHOICE],
        "relay": {**RELAY, **relay, "noise": noise},
    }


def test_relay_noise_is_parsed_kept_signed_and_verified():
    survey = Survey.from_dict(noised())
    noise = survey.relay.noise
    assert noise == RelayNoise(
        epsilon=3.0,
        delta=1e-4,
        law=GeometricDummies(**{k: v for k, v in GEOMETRIC.items() if k != "distribution"}),
    )
    assert survey.to_dict()["relay"]["noise"] == NOISE
    assert (  # RFC 8785: members sorted, 3.0 spelled 3, the ratios as exact fractions
        b'"noise":{"delta":0.0001,"epsilon":3,"law":{"distribution":"geometric",'
        b'"lower_ratio":"233969/1048576","shift":7,"top":14,"upper_ratio":"233969/1048576"}}'
    ) in survey.canonical_bytes()
    again = Survey.from_dict(survey.to_dict(), resolved=True)
    assert again == survey and again.canonical_bytes() == survey.canonical_bytes()
    noise.verify()  # the law's exact delta at epsilon 3 is about 3.5e-5 <= 1e-4
    binomial = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 148}}
    Survey.from_dict(noised(binomial)).relay.noise.verify()
    assert Survey.from_dict({**BASE, "relay": RELAY}).relay.noise is None


def test_a_law_that_misses_its_signed_delta_parses_but_does_not_verify():
    """Parsing is pure Python (devices parse surveys); verify() computes the exact delta."""
    weak = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 2}}
    noise = Survey.from_dict(noised(weak)).relay.noise
    with pytest.raises(InvalidSurvey, match="more than the signed"):
        noise.verify()
    # The calibrated binomial law one trial short misses too: verify() is exact, not loose.
    short = {"epsilon": 1.0, "delta": 1e-6, "law": {"distribution": "binomial", "trials": 147}}
    with pytest.raises(InvalidSurvey, match="more than the signed"):
        Survey.from_dict(noised(short)).relay.noise.verify()


@pytest.mark.parametrize(
    ("noise", "match"),
    [
        ({**NOISE, "delta": 0}, "delta = 0"),
        ({**NOISE, "delta": 0.0}, "delta = 0"),
        ({**NOISE, "delta": 0.01}, "delta"),
        ({**NOISE, "delta": True}, "delta"),
        ({**NOISE, "delta": "1e-6"}, "delta"),
        ({**NOISE, "epsilon": 0}, "epsilon"),
        ({**NOISE, "epsilon": 21}, "epsilon"),
        ({**NOISE, "epsilon": False}, "epsilon"),
        ({**NOISE, "law": {"distribution": "laplace", "scale": 1}}, "distribution"),
        ({**NOISE, "law": {"distribution": "binomial"}}, "fields"),
        ({**NOISE, "law": {"distribution": "binomial", "trials": 0}}, "trials"),
        ({**NOISE, "law": {**GEOMETRIC, "lower_ratio": "3/2"}}, "lower_ratio"),
        ({**NOISE, "law": {**GEOMETRIC, "shift": 15}}, "shift"),
        ({**NOISE, "extra": 1}, "unknown"),
        ({"epsilon": 1.0, "law": GEOMETRIC}, "missing"),
        ([], "object"),
    ],
)
def test_relay_noise_refused(noise, match):
    with pytest.raises(InvalidSurvey, match=match):
        Survey.from_dict(noised(noise))


def test_relay_noise_refuses_whole_submissions_and_mechanisms_without_output_values():
    with pytest.raises(InvalidSurvey, match="shuffle_unit 'question'"):
        Survey.from_dict(noised(shuffle_unit="submission"))
    hashed = {**CHOICE, "mechanism": "olh"}
    with pytest.raises(InvalidSurvey, match="one value of a small set"):
        Survey.from_dict({**noised(), "questions": [hashed]})
    # Binary RR, GRR, option sampling and Duchi name their output values: accepted.
    supported = [
        BASE["questions"][0],
        CHOICE,
        {
            "id": "pick",
            "type": "multiple_choice",
            "text": "Pick?",
            "epsilon": 1.0,
            "options": ["a", "b"],
            "mechanism": "option_sampling",
        },
        {
            "id": "age",
            "type": "numeric",
            "text": "Age?",
            "epsilon": 1.0,
            "lo": 0,
            "hi": 9,
            "mechanism": "duchi",
        },
    ]
    survey = Survey.from_dict({**noised(), "questions": supported})
    assert [len(q.oracle.output_reports()) for q in survey.questions] == [2, 3, 4, 2]
