"""Rate limits on report submissions: per client address and per enrolment token.

Counting is real (the ``limits`` moving window, real time): limits are per day, so a
test never sees a window slide, except the one recovery test, which waits about a
second.  The Redis tests run against the real server named by DENIABLE_TEST_REDIS_URL
(skipped with the reason shown when it is unset or unreachable, failing instead when
DENIABLE_REQUIRE_REDIS=1); each uses its own key prefix, so tests never share counts.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import pytest
import requests

from deniable.aggregator import create_app
from deniable.aggregator.demo import free_port, start_server, stop_server
from deniable.aggregator.settings import SettingsError
from deniable.errors import RateLimited
from deniable.service.limits import (
    EXTENSION,
    Rate,
    RateLimits,
    parse_networks,
    parse_proxies,
    parse_rate,
)

from .conftest import assert_problem, demo_survey_dict, random_reports

CLIENT = "203.0.113.7"
OTHER = "198.51.100.9"
REPORTS = "/api/v1/surveys/demo/reports"
REDIS_URL = os.environ.get("DENIABLE_TEST_REDIS_URL", "")
REQUIRE_REDIS = os.environ.get("DENIABLE_REQUIRE_REDIS") == "1"


def limited(app_config: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {**app_config, "RATE_LIMIT_EXEMPT": "", **settings}


def submit(client, seed: int, address: str = CLIENT, headers: dict[str, str] | None = None):
    body = {"reports": random_reports(demo_survey_dict(), 2, seed)}
    return client.post(
        REPORTS, json=body, headers=headers or {}, environ_base={"REMOTE_ADDR": address}
    )


def redis_url() -> str:
    """The test Redis URL, after a PING (skip, or fail when required, if there is none)."""
    import redis

    if not REDIS_URL:
        reason = "DENIABLE_TEST_REDIS_URL is unset: Redis rate-limit tests skipped"
    else:
        try:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
            return REDIS_URL
        except redis.RedisError as error:
            reason = f"Redis at {REDIS_URL} unreachable ({type(error).__name__})"
    if REQUIRE_REDIS:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def redis_prefix() -> str:
    """A key prefix no other test uses."""
    return f"deniable-test-{uuid.uuid4().hex}"


# -- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("600/minute", Rate(600, 60.0)),
        ("5/s", Rate(5, 1.0)),
        (" 3 / hours ", Rate(3, 3600.0)),
        ("1/day", Rate(1, 86_400.0)),
        ("0", None),
        (0, None),
        ("off", None),
    ],
)
def test_rates_parse(text, rate):
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["600", "x/minute", "-1/minute", "5/fortnight", "1.5/s", True])
def test_bad_rates_stop_the_server_from_starting(tmp_path, text):
    with pytest.raises(SettingsError, match="RATE_LIMIT_PER_ADDRESS"):
        create_app({"DATABASE": str(tmp_path / "x.sqlite3"), "RATE_LIMIT_PER_ADDRESS": text})


def test_proxy_and_exempt_settings_parse():
    assert parse_proxies("0") == 0 and parse_proxies("true") == 1 and parse_proxies(2) == 2
    with pytest.raises(ValueError):
        parse_proxies("many")
    assert [str(n) for n in parse_networks("10.0.0.0/8, ::1")] == ["10.0.0.0/8", "::1/128"]
    assert parse_networks("") == ()
    with pytest.raises(ValueError):
        parse_networks("10.0.0.0/33")


# -- per address ---------------------------------------------------------------------------------


@pytest.fixture
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    return limited(app_config, RATE_LIMIT_PER_ADDRESS="3/day")


def test_429_once_the_window_is_full(client, storage, created_survey):
    for seed in range(3):
        assert submit(client, seed).status_code == 201
    refused = submit(client, 3)
    body = assert_problem(refused, 429, "rate-limited")
    assert "3/day" in body["detail"]
    # The oldest counted request leaves the window a day after it arrived.
    assert 86_000 <= int(refused.headers["Retry-After"]) <= 86_400
    assert storage.count_reports() == 6  # nothing refused is stored
    assert submit(client, 4, address=OTHER).status_code == 201  # other addresses unaffected


def test_every_submission_counts_even_refused_ones(client, created_survey):
    for _ in range(3):
        assert_problem(
            client.post(REPORTS, json={"reports": []}, environ_base={"REMOTE_ADDR": CLIENT}), 422
        )
    assert_problem(submit(client, 0), 429)


def test_reads_are_not_limited(client, created_survey):
    for _ in range(10):
        response = client.get("/api/v1/surveys/demo", environ_base={"REMOTE_ADDR": CLIENT})
        assert response.status_code == 200


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_window_moves_on_and_retry_after_is_a_whole_second(app_config, operator_token):
    app = create_app({**app_config, "RATE_LIMIT_PER_ADDRESS": "2/second"})
    client = app.test_client()
    client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict()},
        headers={"Authorization": f"Bearer {operator_token}"},
    )
    assert [submit(client, seed).status_code for seed in range(2)] == [201, 201]
    refused = submit(client, 2)
    assert_problem(refused, 429)
    assert refused.headers["Retry-After"] == "1"  # under a second, rounded up to one
    time.sleep(1.1)
    assert [submit(client, 3 + seed).status_code for seed in range(3)] == [201, 201, 429]
    app.extensions["deniable.storage"].close()


def test_retry_after_is_never_zero():
    limits = RateLimits(per_address=Rate(1000, 1.0), per_token=None)
    for _ in range(1000):
        limits.check_address(CLIENT)
    with pytest.raises(RateLimited) as refused:
        limits.check_address(CLIENT)
    assert 0 < refused.value.retry_after <= 1.0


@pytest.mark.parametrize("setting", ["0", "off"])
def test_zero_disables(app_config, setting, operator_token, tmp_path):
    app = create_app({**app_config, "RATE_LIMIT_PER_ADDRESS": setting})
    client = app.test_client()
    client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict()},
        headers={"Authorization": f"Bearer {operator_token}"},
    )
    assert all(submit(client, seed).status_code == 201 for seed in range(20))
    app.extensions["deniable.storage"].close()


def test_loopback_is_exempt_by_default(tmp_path):
    app = create_app(
        {
            "DATABASE": str(tmp_path / "d.sqlite3"),
            "RATE_LIMIT_PER_ADDRESS": "1/hour",
            "SIGNING_KEY_PATH": str(tmp_path / "k.pem"),
        }
    )
    limits = app.extensions[EXTENSION]
    for _ in range(5):
        limits.check_address("127.0.0.1")
        limits.check_address("::1")
    limits.check_address(CLIENT)
    with pytest.raises(RateLimited, match="too many"):
        limits.check_address(CLIENT)


def test_forwarded_for_is_ignored_unless_trusted(client, created_survey):
    # Each request claims a new X-Forwarded-For; without TRUST_PROXY they share one count.
    statuses = [
        submit(client, seed, headers={"X-Forwarded-For": f"192.0.2.{seed}"}).status_code
        for seed in range(4)
    ]
    assert statuses == [201, 201, 201, 429]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_trusted_proxy_uses_the_forwarded_address(app_config, tmp_path, operator_token):
    app = create_app({**app_config, "TRUST_PROXY": 1, "RATE_LIMIT_PER_ADDRESS": "1/day"})
    client = app.test_client()
    client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict()},
        headers={"Authorization": f"Bearer {operator_token}"},
    )
    proxy = "10.0.0.1"  # every request arrives from the proxy
    # The client may prepend anything; only the entry the trusted proxy appended counts.
    first = {"X-Forwarded-For": f"6.6.6.6, {CLIENT}"}
    second = {"X-Forwarded-For": f"7.7.7.7, {CLIENT}"}
    assert submit(client, 0, proxy, first).status_code == 201
    assert_problem(submit(client, 1, proxy, second), 429)
    assert submit(client, 2, proxy, {"X-Forwarded-For": OTHER}).status_code == 201
    app.extensions["deniable.storage"].close()


def test_client_address_selection():
    limits = RateLimits(per_address=None, per_token=None, trust_proxy=2)
    assert limits.client_address("10.0.0.2", "1.1.1.1, 2.2.2.2, 10.0.0.1") == "2.2.2.2"
    assert limits.client_address("10.0.0.2", "2.2.2.2") == "10.0.0.2"  # too few hops: the peer
    assert limits.client_address("10.0.0.2", None) == "10.0.0.2"
    assert RateLimits(per_address=None, per_token=None).client_address("10.0.0.2", "1.1.1.1") == (
        "10.0.0.2"
    )


# -- per enrolment token ---------------------------------------------------------------------------


def test_per_token_limit_bounds_retries(app_config, tmp_path, operator_token):
    app = create_app({**app_config, "RATE_LIMIT_PER_ADDRESS": 0, "RATE_LIMIT_PER_TOKEN": "2/day"})
    client = app.test_client()
    response = client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict(), "require_enrolment": True},
        headers={"Authorization": f"Bearer {operator_token}"},
    )
    assert response.status_code == 201
    storage = app.extensions["deniable.storage"]
    token, other = storage.issue_enrolment_tokens("demo", 2)
    header = {"X-Deniable-Enrolment": token}
    body = {"reports": random_reports(demo_survey_dict(), 2, 0)}
    assert client.post(REPORTS, json=body, headers=header).status_code == 201
    assert client.post(REPORTS, json=body, headers=header).status_code == 201  # idempotent retry
    refused = client.post(REPORTS, json=body, headers=header)
    assert_problem(refused, 429, "rate-limited")
    assert int(refused.headers["Retry-After"]) > 86_000
    # Another token has its own count.
    other_body = {"reports": random_reports(demo_survey_dict(), 2, 1)}
    assert (
        client.post(REPORTS, json=other_body, headers={"X-Deniable-Enrolment": other}).status_code
        == 201
    )
    assert storage.count_reports() == 4
    storage.close()


# -- the store -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "uri", ["mysql://x", "redis", "memcached://127.0.0.1:11211", "", "file:///tmp/x"]
)
def test_unknown_storage_stops_the_server_from_starting(tmp_path, uri):
    with pytest.raises(SettingsError, match="RATE_LIMIT_STORAGE"):
        create_app(
            {
                "DATABASE": str(tmp_path / "x.sqlite3"),
                "RATE_LIMIT_STORAGE": uri,
                "SIGNING_KEY_PATH": str(tmp_path / "k.pem"),
            }
        )


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_an_unreachable_redis_never_refuses_a_submission(app_config, operator_token, caplog):
    # Nothing listens on port 1: every process counts in memory, and says so in the log.
    app = create_app(
        {
            **app_config,
            "RATE_LIMIT_PER_ADDRESS": "2/day",
            "RATE_LIMIT_STORAGE": "redis://127.0.0.1:1/0",
        }
    )
    client = app.test_client()
    client.post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict()},
        headers={"Authorization": f"Bearer {operator_token}"},
    )
    assert [submit(client, seed).status_code for seed in range(3)] == [201, 201, 429]
    assert "counting in this process's memory" in caplog.text
    app.extensions["deniable.storage"].close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_two_apps_on_one_redis_share_the_limit(app_config, operator_token, redis_prefix):
    shared = {
        "RATE_LIMIT_PER_ADDRESS": "3/day",
        "RATE_LIMIT_STORAGE": redis_url(),
        "RATE_LIMIT_KEY_PREFIX": redis_prefix,
    }
    first = create_app({**app_config, **shared})
    second = create_app({**app_config, **shared})
    clients = [first.test_client(), second.test_client()]
    clients[0].post(
        "/api/v1/surveys",
        json={"definition": demo_survey_dict()},
        headers={"Authorization": f"Bearer {operator_token}"},
    )
    statuses = [submit(clients[seed % 2], seed).status_code for seed in range(4)]
    assert statuses == [201, 201, 201, 429]
    # Another prefix is another count.
    third = create_app({**app_config, **shared, "RATE_LIMIT_KEY_PREFIX": redis_prefix + "-x"})
    assert submit(third.test_client(), 9).status_code == 201
    for app in (first, second, third):
        app.extensions["deniable.storage"].close()


@pytest.mark.slow
def test_two_server_processes_share_one_limit_through_redis(tmp_path, redis_prefix):
    """Two gunicorn servers (separate processes, separate ports) count one client together."""
    from deniable.aggregator.storage import open_storage

    url = redis_url()
    config = {
        "DATABASE": str(tmp_path / "shared.sqlite3"),
        "SIGNING_KEY_PATH": str(tmp_path / "signing_key.pem"),
    }
    storage = open_storage(config)
    storage.migrate()
    from deniable.survey import Survey

    storage.create_survey(Survey.from_dict(demo_survey_dict()), results_public=True)
    storage.close()
    # TRUST_PROXY lets the test name the client address; loopback stays exempt otherwise.
    environment = {
        "DENIABLE_RATE_LIMIT_STORAGE": url,
        "DENIABLE_RATE_LIMIT_KEY_PREFIX": redis_prefix,
        "DENIABLE_RATE_LIMIT_PER_ADDRESS": "4/day",
        "DENIABLE_TRUST_PROXY": "1",
    }
    servers = []
    try:
        for _ in range(2):
            port = free_port()
            servers.append(
                (
                    start_server(config, port, workers=1, environment=environment),
                    f"http://127.0.0.1:{port}",
                )
            )
        statuses = []
        for seed in range(6):
            _, base = servers[seed % 2]
            body = {"reports": random_reports(demo_survey_dict(), 1, seed)}
            response = requests.post(
                f"{base}{REPORTS}", json=body, timeout=10, headers={"X-Forwarded-For": CLIENT}
            )
            statuses.append(response.status_code)
            if response.status_code == 429:
                assert int(response.headers["Retry-After"]) > 86_000
        assert statuses == [201, 201, 201, 201, 429, 429]
        other = requests.post(
            f"{servers[1][1]}{REPORTS}",
            timeout=10,
            json={"reports": random_reports(demo_survey_dict(), 1, 99)},
            headers={"X-Forwarded-For": OTHER},
        )
        assert other.status_code == 201
    finally:
        for server, _ in servers:
            stop_server(server)


# -- one client, one key, however its address is spelled (hardening) ------------------

SPELLINGS = {
    "192.0.2.1": [
        "192.0.2.1",
        " 192.0.2.1 ",
        "192.0.2.1:5555",
        "::ffff:192.0.2.1",
        "[::ffff:192.0.2.1]:80",
        "::ffff:c000:201",
        "[::FFFF:C000:0201]",
        # every other spelling a proxy can write, or inet_aton reads, of the same address
        "0300.0000.0002.0001",  # octal
        "0300.0.2.1",
        "0xc0.0x0.0x2.0x1",  # hexadecimal
        "0XC0000201",
        "3221225985",  # one integer
        "192.0.513",  # fewer parts
        "192.513",
        "192.0.2.1%eth0",  # a zone index
        "::ffff:192.0.2.1%eth0",
        "[::ffff:192.0.2.1%25eth0]:80",
        "::ffff:0300.0.2.1",
        "::ffff:192.0.2.1:5555",  # a port without brackets
        "0:0:0:0:0:ffff:192.0.2.1",
        "::192.0.2.1",  # IPv4-compatible (deprecated)
        "::c000:201",
        "::ffff:0:192.0.2.1",  # IPv4-translated
        '"192.0.2.1"',  # quoted, as in RFC 7239's Forwarded
        '"[::ffff:192.0.2.1]:80"',
    ],
    "2001:db8:1:2::/64": [
        "2001:db8:1:2::1",
        "2001:DB8:1:2:0:0:0:1",
        "2001:0db8:0001:0002::0001",
        "[2001:db8:1:2::1]:443",
        "[2001:db8:1:2::1]",
        "2001:db8:1:2:ffff::9",
        "2001:db8:1:2:aaaa:bbbb:cccc:dddd",
        "2001:db8:1:2::1%eth0",
    ],
}


@pytest.mark.parametrize("key", sorted(SPELLINGS))
def test_every_spelling_of_an_address_is_one_rate_limit_key(key):
    limits = RateLimits(per_address=Rate(3, 86_400.0), per_token=None, trust_proxy=1)
    for spelling in SPELLINGS[key]:
        address = limits.client_address("10.0.0.1", f"6.6.6.6, {spelling}")
        assert limits.limit_key(address) == key, spelling
        assert limits.client_address(spelling, None) == address  # the peer, normalized alike
    limits.check_address(limits.client_address("10.0.0.1", SPELLINGS[key][0]))
    limits.check_address(limits.client_address("10.0.0.1", SPELLINGS[key][1]))
    limits.check_address(limits.client_address("10.0.0.1", SPELLINGS[key][2]))
    for spelling in SPELLINGS[key][3:]:
        with pytest.raises(RateLimited):
            limits.check_address(limits.client_address("10.0.0.1", spelling))
    limits.check_address(limits.client_address("10.0.0.1", "2001:db8:1:3::1"))  # another /64
    limits.check_address(limits.client_address("10.0.0.1", "192.0.2.2"))
    # Exemptions match the address itself, whatever its spelling.
    exempt = RateLimits(
        per_address=Rate(1, 86_400.0), per_token=None, exempt=parse_networks("192.0.2.0/24")
    )
    for _ in range(3):
        exempt.check_address(exempt.client_address("[::ffff:192.0.2.9]:1234", None))


def test_behind_a_proxy_no_spelling_of_one_ipv4_address_gets_another_bucket(
    app_config, operator_token
):
    """Five submissions a day from 192.0.2.1 however the trusted proxy spells it: the sixth
    is refused, whichever spellings the six used."""
    spellings = SPELLINGS["192.0.2.1"]
    for start in range(0, len(spellings), 6):
        # a fresh app for each six: its counts start at zero (memory storage)
        settings = {"TRUST_PROXY": 1, "RATE_LIMIT_PER_ADDRESS": "5/day"}
        app = create_app(limited(app_config, **settings))
        client = app.test_client()
        client.post(
            "/api/v1/surveys",
            json={"definition": demo_survey_dict()},
            headers={"Authorization": f"Bearer {operator_token}"},
        )
        chosen = (spellings[start:] + spellings)[:6]
        answers = [
            submit(client, start + i, "10.0.0.1", {"X-Forwarded-For": f"6.6.6.6, {spelling}"})
            for i, spelling in enumerate(chosen)
        ]
        assert [a.status_code for a in answers] == [201] * 5 + [429], chosen
        app.extensions["deniable.storage"].close()
