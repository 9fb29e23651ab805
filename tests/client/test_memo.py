"""Memoization for longitudinal questions: determinism, the averaging attack, unbiasedness.

Statistical checks use Hoeffding's inequality, P(|mean - μ| ≥ t) ≤ 2 exp(-2 T t²),
with t chosen so that each check's false-alarm probability is at most 1e-6.
"""

from __future__ import annotations

import json
import math
import secrets
import uuid

import numpy as np
import pytest

from deniable.client import StateStore
from deniable.client.memo import HmacSource, family_tag, is_longitudinal, permanent_response
from deniable.client.randomized import randomize_answers
from deniable.randomness import RESOLUTION, RandomSource
from deniable.survey import Survey

from .conftest import GENEROUS, longitudinal_definition

FALSE_ALARM = 1e-6


def hoeffding(trials: int, false_alarm: float = FALSE_ALARM) -> float:
    """Half-width t with 2 exp(-2 T t²) = false_alarm (two-sided)."""
    return math.sqrt(math.log(2 / false_alarm) / (2 * trials))


def binomial_tail(n: int, p: float, at_least: int) -> float:
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(at_least, n + 1))


# -- the HMAC source ------------------------------------------------------------------
def test_hmac_source_is_a_deterministic_random_source() -> None:
    key = bytes(range(32))
    a, b = HmacSource(key, b"info"), HmacSource(key, b"info")
    assert isinstance(a, RandomSource) and a.secure
    assert a.token_bytes(100) == b.token_bytes(100)
    assert a.uniform53() == b.uniform53()
    assert HmacSource(key, b"other").token_bytes(32) != HmacSource(key, b"info").token_bytes(32)
    assert HmacSource(bytes(32), b"info").token_bytes(32) != HmacSource(key, b"info").token_bytes(
        32
    )
    # Chunking does not change the stream.
    c = HmacSource(key, b"info")
    joined = b"".join(c.token_bytes(n) for n in (1, 7, 31, 33, 64))
    assert joined == HmacSource(key, b"info").token_bytes(136)


def test_hmac_source_ranges_and_bit_balance() -> None:
    source = HmacSource(secrets.token_bytes(32), b"ranges")
    values = [source.uniform53() for _ in range(2000)]
    assert all(0 <= v < RESOLUTION for v in values)
    assert all(0 <= source.randbelow(3) < 3 for _ in range(500))
    assert source.randbelow(1) == 0
    array = source.uniform53_array(1000)
    assert array.dtype == np.uint64 and int(array.max()) < RESOLUTION
    bits = np.unpackbits(np.frombuffer(source.token_bytes(20_000), dtype=np.uint8))
    assert abs(bits.mean() - 0.5) <= hoeffding(bits.size)


def test_hmac_source_rejects_short_keys() -> None:
    from deniable.errors import InvalidParameter

    with pytest.raises(InvalidParameter):
        HmacSource(b"short", b"x")


# -- permanent responses ---------------------------------------------------------------------
def weekly(survey_id: str = "week1", **kw: float) -> Survey:
    return Survey.from_dict(longitudinal_definition(survey_id, **kw))


def test_permanent_response_is_memoized_per_device_and_value() -> None:
    survey = weekly()
    (question,) = survey.questions
    assert is_longitudinal(question)
    secret = secrets.token_bytes(32)
    for value in (0, 1):
        first = permanent_response(secret, question, value)
        assert all(permanent_response(secret, question, value) == first for _ in range(20))
        # Another survey reusing the key with the same parameters: the same memo.
        (again,) = weekly("week2").questions
        assert permanent_response(secret, again, value) == first
        assert family_tag(secret, again) == family_tag(secret, question)
    # Other parameters: another memo family (an independent permanent response).
    (other,) = weekly("week3", epsilon=2.0).questions
    assert family_tag(secret, other) != family_tag(secret, question)
    assert family_tag(secrets.token_bytes(32), question) != family_tag(secret, question)


def test_permanent_responses_across_devices_follow_the_permanent_layer() -> None:
    (question,) = weekly().questions
    devices = 4000
    kept = sum(
        permanent_response(secrets.token_bytes(32), question, 1) == 1 for _ in range(devices)
    )
    p1 = question.oracle.permanent.p_star
    assert abs(kept / devices - p1) <= hoeffding(devices)


# -- the averaging attack --------------------------------------------------------------------
def test_majority_of_50_reports_learns_no_more_than_one_permanent_report() -> None:
    """Ask the same yes/no question 50 times at ε = 1 (permanent 1, instantaneous 1).

    With memoization the majority recovers the truth only as often as the permanent
    response equals it (≈ 0.73); without memoization (both layers fresh per report)
    the majority would recover it ≈ 92% of the time.
    """
    survey = weekly()
    (question,) = survey.questions
    oracle = question.oracle
    reports_per_device, devices = 50, 1500
    truth = 1

    def majority(reports: list[str]) -> bool:
        return sum(r == "01" for r in reports) > reports_per_device // 2  # ties: not recovered

    memo_hits = fresh_hits = 0
    for _ in range(devices):
        secret, memo = secrets.token_bytes(32), {}
        reports = [
            randomize_answers(survey, {"ok": truth}, secret, memo).payloads["ok"]
            for _ in range(reports_per_device)
        ]
        memo_hits += majority(reports)
        fresh = [oracle.encode(oracle.randomize(truth)) for _ in range(reports_per_device)]
        fresh_hits += majority(fresh)

    p1 = oracle.permanent.p_star
    p2 = oracle._instantaneous.p_star
    keep_permanent = binomial_tail(reports_per_device, p2, reports_per_device // 2 + 1)
    expected_memo = p1 * keep_permanent + (1 - p1) * (1 - keep_permanent)
    expected_fresh = binomial_tail(reports_per_device, oracle.p_star, reports_per_device // 2 + 1)
    t = hoeffding(devices)
    assert expected_memo == pytest.approx(0.731, abs=0.002)
    assert expected_fresh > 0.9
    memo_rate, fresh_rate = memo_hits / devices, fresh_hits / devices
    assert abs(memo_rate - expected_memo) <= t, (memo_rate, expected_memo)
    assert memo_rate <= p1 + t  # no better than one permanent report
    assert fresh_rate >= expected_fresh - t, (fresh_rate, expected_fresh)
    assert fresh_rate > memo_rate + 0.1


# -- charging through the client --------------------------------------------------------------
def test_longitudinal_charges_do_not_depend_on_the_answers(
    aggregator, adapter, make_client, tmp_path
) -> None:
    """A yes/no memo family is charged for its first 2 answers, then never, whatever they are.

    Charging per *new value* (1, 0, 1, 0 for yes, yes, no, yes) would make the budget, and
    so the surveys a device later refuses, reveal whether its answers changed.
    """
    for week in range(1, 6):
        aggregator.create(longitudinal_definition(f"week{week}", epsilon=1.0, inst=1.0))
    runs = []
    for device, values in enumerate(((True,) * 5, (True, False, True, False, False))):
        client = make_client(policy=GENEROUS, state=StateStore(tmp_path / f"device{device}.bin"))
        runs.append(
            [
                client.answer(f"week{week}", {"ok": value}).epsilon_charged
                for week, value in enumerate(values, 1)
            ]
        )
        assert client.budget()["spent_total"] == pytest.approx(2.0)
        kinds = [e["kind"] for e in client.store.load().ledger]
        assert kinds == ["permanent", "permanent", "memoized", "memoized", "memoized"]
        # The state remembers one opaque family tag and a count, never a value.
        (entry,) = client.store.load().memo.values()
        assert set(entry) == {"key", "count", "at"} and entry["count"] == 2
    assert runs[0] == runs[1] == pytest.approx([1.0, 1.0, 0.0, 0.0, 0.0])


# -- unbiased end to end ----------------------------------------------------------------------
def test_aggregator_estimate_for_a_longitudinal_question_is_unbiased(
    aggregator, adapter, http, tmp_path
) -> None:
    """Devices randomize with the client's own code; the aggregator estimates the share."""
    from deniable.client import StateStore, SurveyClient

    from .conftest import BASE, STATE_KEY

    definition = longitudinal_definition("panel", epsilon=2.0, inst=2.0)
    aggregator.create(definition)
    survey = Survey.from_dict(definition)
    rng = np.random.default_rng(7)  # the TRUE answers only
    share, devices, full_clients = 0.3, 20_000, 20
    truths = rng.random(devices) < share
    # A few devices go all the way through SurveyClient (state file, ledger, HTTP) ...
    for index in range(full_clients):
        store = StateStore(tmp_path / f"d{index}" / "state.bin", key=STATE_KEY)
        client = SurveyClient(BASE, state=store, session=http)
        assert client.answer("panel", {"ok": bool(truths[index])}).delivered
    # ... the rest use the same randomization code and post in batches of 1000.
    items = []
    for truth in truths[full_clients:]:
        payload = randomize_answers(survey, {"ok": int(truth)}, secrets.token_bytes(32), {})
        items.append({"id": str(uuid.uuid4()), "question": "ok", "payload": payload.payloads["ok"]})
    with aggregator.app.test_client() as flask:
        for start in range(0, len(items), 1000):
            response = flask.post(
                "/api/v1/surveys/panel/reports/bulk",
                data=json.dumps({"reports": items[start : start + 1000]}),
                headers={"Authorization": f"Bearer {aggregator.token}"},
                content_type="application/json",
            )
            assert response.status_code == 201
    results = aggregator.results("panel")
    assert results["n_reports"] == devices
    (question,) = results["questions"]
    (yes,) = [c["estimate"] for c in question["categories"] if c["label"] == "yes"]
    oracle = survey.questions[0].oracle
    # The fraction of "yes" reports is a mean of independent bits; the estimate is affine in it.
    t = hoeffding(devices) / (oracle.p_star - oracle.q_star)
    assert abs(yes - truths.mean()) <= t, (yes, truths.mean(), t)
