"""Rate limits on report submissions: per client address and per enrolment token.

The limiter's clock is swapped for a fake one, so "after waiting" costs no time.
"""

from __future__ import annotations

from typing import Any

import pytest

from deniable.aggregator import create_app
from deniable.aggregator.ratelimit import (
    EXTENSION,
    Rate,
    RateLimits,
    TokenBuckets,
    parse_networks,
    parse_proxies,
    parse_rate,
)
from deniable.aggregator.settings import SettingsError
from deniable.errors import RateLimited

from .conftest import assert_problem, demo_survey_dict, random_reports

CLIENT = "203.0.113.7"
OTHER = "198.51.100.9"
REPORTS = "/api/v1/surveys/demo/reports"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(app) -> FakeClock:
    fake = FakeClock()
    app.extensions[EXTENSION].clock = fake
    return fake


def limited(app_config: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return {**app_config, "RATE_LIMIT_EXEMPT": "", **settings}


def submit(client, seed: int, address: str = CLIENT, headers: dict[str, str] | None = None):
    body = {"reports": random_reports(demo_survey_dict(), 2, seed)}
    return client.post(
        REPORTS, json=body, headers=headers or {}, environ_base={"REMOTE_ADDR": address}
    )


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
    return limited(app_config, RATE_LIMIT_PER_ADDRESS="3/minute")


def test_429_after_the_bucket_empties_then_recovery(client, storage, created_survey, clock):
    for seed in range(3):
        assert submit(client, seed).status_code == 201
    refused = submit(client, 3)
    assert_problem(refused, 429, "rate-limited")
    assert refused.headers["Retry-After"] == "20"  # one request per 20 s at 3/minute
    assert storage.count_reports() == 6  # nothing refused is stored
    clock.advance(19)
    assert_problem(submit(client, 4), 429)
    assert submit(client, 4, address=OTHER).status_code == 201  # other addresses unaffected
    clock.advance(1)
    assert submit(client, 5).status_code == 201
    assert_problem(submit(client, 6), 429)
    clock.advance(60)  # a full minute refills the whole burst, and no more
    assert [submit(client, 10 + i).status_code for i in range(4)] == [201, 201, 201, 429]


def test_every_submission_counts_even_refused_ones(client, created_survey, clock):
    for _ in range(3):
        assert_problem(client.post(REPORTS, json={"reports": []},
                                   environ_base={"REMOTE_ADDR": CLIENT}), 422)  # fmt: skip
    assert_problem(submit(client, 0), 429)


def test_reads_are_not_limited(client, created_survey, clock):
    for _ in range(10):
        response = client.get("/api/v1/surveys/demo", environ_base={"REMOTE_ADDR": CLIENT})
        assert response.status_code == 200


def test_retry_after_is_a_whole_second_at_least(app_config, clock):
    limits = RateLimits(per_address=Rate(1000, 1.0), per_token=None, clock=clock)
    for _ in range(1000):
        limits.check_address(CLIENT)
    with pytest.raises(RateLimited) as refused:
        limits.check_address(CLIENT)
    assert 0 < refused.value.retry_after <= 0.001


def test_retry_after_header_rounds_up_to_one(client, app, created_survey, clock):
    app.extensions[EXTENSION] = RateLimits(per_address=Rate(1000, 1.0), per_token=None,
                                           clock=clock)  # fmt: skip
    for _ in range(1000):
        client.post(REPORTS, json={"reports": []}, environ_base={"REMOTE_ADDR": CLIENT})
    refused = submit(client, 0)
    assert_problem(refused, 429)
    assert refused.headers["Retry-After"] == "1"


@pytest.mark.parametrize("setting", ["0", "off"])
def test_zero_disables(app_config, setting, operator_token, tmp_path):
    app = create_app({**app_config, "RATE_LIMIT_PER_ADDRESS": setting})
    client = app.test_client()
    client.post("/api/v1/surveys", json={"definition": demo_survey_dict()},
                headers={"Authorization": f"Bearer {operator_token}"})  # fmt: skip
    assert all(submit(client, seed).status_code == 201 for seed in range(20))
    app.extensions["deniable.storage"].close()


def test_loopback_is_exempt_by_default(tmp_path):
    app = create_app({"DATABASE": str(tmp_path / "d.sqlite3"), "RATE_LIMIT_PER_ADDRESS": "1/hour",
                      "SIGNING_KEY_PATH": str(tmp_path / "k.pem")})  # fmt: skip
    limits = app.extensions[EXTENSION]
    for _ in range(5):
        limits.check_address("127.0.0.1")
        limits.check_address("::1")
    limits.check_address(CLIENT)
    with pytest.raises(RateLimited, match="too many"):
        limits.check_address(CLIENT)


def test_forwarded_for_is_ignored_unless_trusted(client, created_survey, clock):
    # Each request claims a new X-Forwarded-For; without TRUST_PROXY they share one bucket.
    statuses = [
        submit(client, seed, headers={"X-Forwarded-For": f"192.0.2.{seed}"}).status_code
        for seed in range(4)
    ]
    assert statuses == [201, 201, 201, 429]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_trusted_proxy_uses_the_forwarded_address(app_config, tmp_path, operator_token):
    app = create_app({**app_config, "TRUST_PROXY": 1, "RATE_LIMIT_PER_ADDRESS": "1/minute"})
    app.extensions[EXTENSION].clock = FakeClock()
    client = app.test_client()
    client.post("/api/v1/surveys", json={"definition": demo_survey_dict()},
                headers={"Authorization": f"Bearer {operator_token}"})  # fmt: skip
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
    app = create_app({**app_config, "RATE_LIMIT_PER_ADDRESS": 0,
                      "RATE_LIMIT_PER_TOKEN": "2/minute"})  # fmt: skip
    clock = FakeClock()
    app.extensions[EXTENSION].clock = clock
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
    assert refused.headers["Retry-After"] == "30"
    # Another token has its own bucket; the limited one recovers after waiting.
    other_body = {"reports": random_reports(demo_survey_dict(), 2, 1)}
    assert client.post(REPORTS, json=other_body,
                       headers={"X-Deniable-Enrolment": other}).status_code == 201  # fmt: skip
    clock.advance(30)
    assert client.post(REPORTS, json=body, headers=header).status_code == 201
    assert storage.count_reports() == 4
    storage.close()


# -- memory ----------------------------------------------------------------------------------------


def test_buckets_are_bounded():
    clock = FakeClock()
    buckets = TokenBuckets(Rate(1, 60.0), clock=clock, max_keys=100)
    for i in range(1000):
        assert buckets.take(f"k{i}") == 0.0
    assert len(buckets) == 100
    assert buckets.take("k999") == pytest.approx(60.0)  # recent keys are kept
    assert buckets.take("k0") == 0.0  # the oldest were dropped (and start full again)
