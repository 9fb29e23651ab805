"""deniable.origins: the one strict parser of origins and relay URLs (cors, survey, page).

The cross-language ``relay_urls`` vectors hold the browser client to the same answers
(client/browser/test/relay.test.js).
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from deniable.errors import InvalidParameter, InvalidSurvey
from deniable.origins import Origin, parse_origin, parse_url, serialize_origin
from deniable.survey import Relay

VECTORS = json.loads(
    resources.files("deniable").joinpath("vectors/protocol-vectors.json").read_text("utf-8")
)["relay_urls"]


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ("https://forms.example.org", "https://forms.example.org"),
        ("HTTPS://Forms.Example.ORG:443", "https://forms.example.org"),
        ("http://forms.example.org:80", "http://forms.example.org"),
        ("http://forms.example.org:443", "http://forms.example.org:443"),
        ("https://forms.example.org:80", "https://forms.example.org:80"),
        ("http://192.0.2.7:8080", "http://192.0.2.7:8080"),
        ("http://[2001:DB8:0:0:0:0:0:1]:80", "http://[2001:db8::1]"),
        ("https://[2001:db8::5]:8100", "https://[2001:db8::5]:8100"),
        ("https://[2001:0db8:0000:0000:0001:0000:0000:0001]", "https://[2001:db8::1:0:0:1]"),
        ("https://[1:0:0:2:0:0:0:3]", "https://[1:0:0:2::3]"),
        ("https://[1:2:3:4:5:6:7:0]", "https://[1:2:3:4:5:6:7:0]"),
        ("https://[0:0:0:0:0:0:0:0]", "https://[::]"),
        ("https://[::ffff:192.0.2.1]", "https://[::ffff:c000:201]"),
        ("https://[::1.2.3.4]", "https://[::102:304]"),
        ("http://[0:0:0:0:0:0:0:1]:08080", "http://[::1]:8080"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
    ],
)
def test_origins_are_serialized_as_browsers_send_them(text, origin):
    assert serialize_origin(text) == origin
    assert str(parse_origin(text)) == origin
    assert parse_url(text) == (parse_origin(text), "")


@pytest.mark.parametrize(
    "text",
    [
        "https://[fe80::1%25eth0]",
        "https://[fe80::1%eth0]",
        "https://user@a.example",
        "https://user:pw@a.example",
        "https://a.example/path",
        "https://a.example/",
        "https://a.example?q",
        "https://a.example#f",
        "https://0x7f.1",
        "https://1.2.3",
        "https://01.2.3.4",
        "https://a.example.",
        "https://bücher.example",
        "ftp://a.example",
        "https://a.example:0",
        "https://a.example:65536",
        7,
        None,
    ],
)
def test_what_is_not_an_origin_is_refused_with_a_typed_error(text):
    with pytest.raises(InvalidParameter, match="origin"):
        parse_origin(text)


def test_the_csp_source_names_the_origin_or_for_ipv6_its_scheme():
    assert parse_origin("HTTPS://Relay.Example:8443").csp_source == "https://relay.example:8443"
    assert parse_origin("https://192.0.2.7").csp_source == "https://192.0.2.7"
    assert parse_origin("https://[2001:db8::5]:8100").csp_source == "https:"
    assert parse_origin("http://[::1]:8100").csp_source == "http:"


def test_a_url_keeps_its_path_and_refuses_what_an_origin_refuses():
    origin, path = parse_url("HTTPS://[2001:DB8::5]:8100/relay/v1")
    assert origin == Origin(scheme="https", host="[2001:db8::5]", port=8100)
    assert path == "/relay/v1"
    for text in (
        "https://a.example/a/",
        "https://a.example/a/../b",
        "https://a.example/%2",
        "https://u@a.example/x",
        "https://a.example/x?y",
        "https://[::1%lo]/x",
    ):
        with pytest.raises(InvalidParameter, match="URL"):
            parse_url(text)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("http://localhost", True),
        ("http://127.0.0.1", True),
        ("http://127.200.0.9", True),
        ("http://[::1]", True),
        ("http://[0:0:0:0:0:0:0:1]", True),
        ("http://[::ffff:127.0.0.1]", False),
        ("http://128.0.0.1", False),
        ("http://localhost.example", False),
        ("http://1password.example", False),
    ],
)
def test_loopback(host, loopback):
    assert parse_origin(host).is_loopback is loopback


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["url"])
def test_the_relay_url_vectors(vector):
    member = {"url": vector["url"], "min_batch": 5, "shuffle_unit": "question"}
    if vector["origin"] is None:
        with pytest.raises(InvalidSurvey) as refused:
            Relay.from_dict(member)
        assert refused.value.reason == "relay"
    else:
        relay = Relay.from_dict(member)
        assert relay.url == vector["url"]  # signed bytes: kept as written
        assert str(relay.origin) == vector["origin"]
