"""Poisoning: what the plausibility guard rejects, and what fake reports can still do.

Cao, Jia, Gong, "Data Poisoning Attacks to Local Differential Privacy
Protocols" (USENIX Security 2021); Cheu, Smith, Ullman, "Manipulation Attacks
in Local Differential Privacy" (S&P 2021).
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from scipy import stats

from deniable.errors import InvalidReport
from deniable.mechanisms import CATEGORICAL, GRR, OUE, SUE
from deniable.mechanisms.base import FALSE_REJECTION
from deniable.survey import FORMAT, Survey
from deniable.wire import parse_report

UNARY = [OUE, SUE]


@pytest.mark.parametrize("cls", UNARY)
@pytest.mark.parametrize("domain_size", [16, 64, 1024, 4096])
def test_the_window_rejects_honest_reports_with_probability_at_most_1e_9(cls, domain_size):
    oracle = cls(epsilon=1.0, domain_size=domain_size)
    low, high = oracle.plausible_ones
    p, q = oracle.p_star, oracle.q_star
    # Independent computation with scipy: P[K outside] for K = Bern(p) + Bin(d - 1, q).
    others = stats.binom(domain_size - 1, q)
    below = (1 - p) * others.cdf(low - 1) + p * others.cdf(low - 2)
    above = (1 - p) * others.sf(high) + p * others.sf(high - 1)
    assert below + above <= FALSE_REJECTION * (1 + 1e-6)
    # ...and the window is not wider than it needs to be on either side.
    assert (1 - p) * others.cdf(low) + p * others.cdf(low - 1) > FALSE_REJECTION / 2
    assert (1 - p) * others.sf(high - 1) + p * others.sf(high - 2) > FALSE_REJECTION / 2


@pytest.mark.parametrize("cls", UNARY)
def test_honest_reports_pass_and_crafted_ones_are_caught(cls) -> None:
    oracle = cls(epsilon=1.0, domain_size=1024)
    rng = np.random.default_rng(3)
    honest = oracle.randomize_many(rng.integers(0, 1024, size=100_000), rng)
    assert not oracle.implausible(honest).any()
    all_ones = np.ones((1, 1024), dtype=np.uint8)
    only_target = np.zeros((1, 1024), dtype=np.uint8)
    only_target[0, 7] = 1
    assert oracle.implausible(all_ones).all()
    assert oracle.implausible(only_target).all()


def test_other_mechanisms_accept_every_decodable_report() -> None:
    rng = np.random.default_rng(5)
    for name, cls in CATEGORICAL.items():
        if cls in UNARY:
            continue
        oracle = cls(epsilon=1.0) if name == "binary_rr" else cls(epsilon=1.0, domain_size=8)
        batch = oracle.randomize_many(rng.integers(0, 2 if name == "binary_rr" else 8, 50), rng)
        assert not oracle.implausible(batch).any(), name


def test_the_aggregator_decoder_rejects_implausible_reports() -> None:
    survey = Survey.from_dict(
        {
            "format": FORMAT,
            "id": "p",
            "title": "P",
            "questions": [
                {
                    "id": "pick",
                    "type": "single_choice",
                    "text": "Pick",
                    "epsilon": 1,
                    "mechanism": "oue",
                    "options": [str(i) for i in range(64)],
                }
            ],
        }
    )
    oracle = survey.question("pick").oracle
    crafted = oracle.encode(tuple([1] * 64))
    with pytest.raises(InvalidReport, match="implausible"):
        parse_report({"id": str(uuid.uuid4()), "question": "pick", "payload": crafted}, survey)


def test_fake_grr_reports_move_an_estimate_by_at_most_the_bound() -> None:
    """k fake reports for a target move its estimate by at most k (1 - q*) / ((p* - q*) n).

    This is the guard's blind spot: a fake GRR report is an ordinary report,
    so only Sybil control (enrolment tokens) limits k.
    """
    oracle = GRR(epsilon=1.0, domain_size=32)
    rng = np.random.default_rng(11)
    honest = oracle.randomize_many(rng.integers(0, 32, size=10_000), rng)
    target = 5
    p, q = oracle.p_star, oracle.q_star
    for fakes in (1, 10, 100, 1000):
        poisoned = np.concatenate([honest, np.full(fakes, target)])
        n = poisoned.size
        before = oracle.estimate(oracle.support_counts(honest), honest.size)[target]
        after = oracle.estimate(oracle.support_counts(poisoned), n)[target]
        bound = fakes * (1 - q) / ((p - q) * n)
        assert 0 < after - before <= bound
        # The attack achieves most of the bound: the guard cannot help here.
        assert after - before >= 0.9 * bound
