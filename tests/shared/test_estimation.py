"""Chebyshev intervals: the formula, parameter checks, and coverage in simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deniable.errors import InvalidParameter
from deniable.estimation import (
    chebyshev_half_width,
    estimate_frequencies,
    estimate_mean,
)
from deniable.mechanisms import CATEGORICAL, GRR, NUMERIC

COLLECTIONS = 1000
RESPONDENTS = 400


def test_half_width_is_sqrt_of_bound_over_beta() -> None:
    assert chebyshev_half_width(0.01, 0.05) == pytest.approx(math.sqrt(0.01 / 0.05))


@pytest.mark.parametrize("beta", [0, 1, -0.1, 1.5, float("nan"), "0.05", True])
def test_beta_outside_the_open_unit_interval_is_rejected(beta) -> None:
    oracle = GRR(epsilon=1.0, domain_size=3)
    with pytest.raises(InvalidParameter, match="beta"):
        estimate_frequencies(oracle, np.array([1, 2, 3]), 6, beta=beta)


def test_simultaneous_intervals_use_beta_over_categories() -> None:
    oracle = GRR(epsilon=1.0, domain_size=8)
    result = estimate_frequencies(oracle, np.full(8, 100), 800, beta=0.05)
    bound = oracle.variance_bound(800)
    assert result.variance_bound == bound
    assert result.half_width == pytest.approx(math.sqrt(bound / 0.05))
    assert result.simultaneous_half_width == pytest.approx(math.sqrt(bound / (0.05 / 8)))
    assert np.all(result.lower >= 0) and np.all(result.upper <= 1)


def test_raw_estimates_stay_beside_post_processed_ones() -> None:
    oracle = GRR(epsilon=0.5, domain_size=4)
    counts = np.array([10, 0, 0, 90])
    result = estimate_frequencies(oracle, counts, 100)
    assert np.array_equal(result.estimates, oracle.estimate(counts, 100))
    assert result.estimates.min() < 0  # the raw estimate is unbiased, hence can be negative
    for processed in result.postprocessed.values():
        assert processed.min() >= 0


def _oracle(name: str):
    cls = CATEGORICAL[name]
    if name == "binary_rr":
        return cls(epsilon=1.0)
    return cls(epsilon=1.0, domain_size=4)


@pytest.mark.parametrize("name", sorted(CATEGORICAL))
def test_95_percent_intervals_cover_at_least_95_percent(name: str) -> None:
    """Over 1,000 seeded collections the coverage is at least the promised 95%.

    Chebyshev's bound is conservative, so the expected coverage is far above
    95%; with a fixed seed the outcome is deterministic.
    """
    oracle = _oracle(name)
    rng = np.random.default_rng(20261125)
    truth = np.linspace(1, 2, oracle.domain_size)
    truth /= truth.sum()
    covered = np.zeros(oracle.domain_size)
    covered_all = 0
    for _ in range(COLLECTIONS):
        values = rng.choice(oracle.domain_size, size=RESPONDENTS, p=truth)
        actual = np.bincount(values, minlength=oracle.domain_size) / RESPONDENTS
        batch = oracle.randomize_many(values, rng)
        # Today's Chebyshev only; the exact tail's coverage: tests/shared/test_exact_tail.py.
        counts = oracle.support_counts(batch)
        result = estimate_frequencies(oracle, counts, RESPONDENTS, exact=False)
        inside = (result.lower <= actual) & (actual <= result.upper)
        covered += inside
        simultaneous = (result.simultaneous_lower <= actual) & (actual <= result.simultaneous_upper)
        covered_all += bool(simultaneous.all())
    assert np.all(covered / COLLECTIONS >= 0.95), covered / COLLECTIONS
    assert covered_all / COLLECTIONS >= 0.95


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_mean_intervals_cover_at_least_95_percent(name: str) -> None:
    mechanism = NUMERIC[name](epsilon=1.0, lo=-5.0, hi=15.0)
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(COLLECTIONS):
        values = rng.uniform(-5.0, 15.0, size=RESPONDENTS)  # a population in [lo, hi]
        batch = mechanism.randomize_many(values, rng)
        result = estimate_mean(mechanism, mechanism.statistics(batch), RESPONDENTS)
        covered += result.lower <= values.mean() <= result.upper
    assert covered / COLLECTIONS >= 0.95


@pytest.mark.parametrize("name", ["option_sampling", "grr"])
def test_respondents_for_ten_points_is_the_published_familys_n(name: str) -> None:
    """The 'about n needed for ±10 points' figure is the n at which the family the result
    publishes as tightest (here the exact tail) reaches ±10 points: one fewer is still
    'imprecise', that n is 'ok' (a contradiction for an analyst otherwise)."""
    from deniable.estimation import estimate_frequencies
    from deniable.mechanisms import OptionSampling

    # Option sampling at ε 3 over 4 options: ±11.5% at n = 300 (the exact tail), "782 needed"
    # by the closed forms before; the exact tail reaches ±10 points near 400.
    mechanism = (
        OptionSampling(epsilon=3.0, options=4)
        if name == "option_sampling"
        else GRR(epsilon=1.0, domain_size=4)
    )
    width = 8 if name == "option_sampling" else 4

    def at(n: int):
        return estimate_frequencies(mechanism, np.full(width, n // width), n)

    small = at(300)
    assert small.precision == "imprecise" and small.tightest == "exact_tail"
    needed = small.respondents_for_ten_points
    assert at(needed).precision == "ok"
    assert at(needed - 1).precision == "imprecise"
    assert small.to_dict()["respondents_for_ten_points_families"] == "tightest"


def test_where_the_exact_search_would_be_slow_the_figure_says_it_is_the_closed_forms() -> None:
    from deniable.aggregator.dashboard.present import precision_sentence
    from deniable.estimation import EXACT_FIGURE_MAX_N, estimate_frequencies
    from deniable.mechanisms import OptionSampling

    result = estimate_frequencies(OptionSampling(epsilon=1.0, options=20), np.full(40, 10), 400)
    shown = result.to_dict()
    assert shown["respondents_for_ten_points"] > EXACT_FIGURE_MAX_N
    assert shown["respondents_for_ten_points_families"] == "closed_form"
    assert "by the closed-form bounds" in precision_sentence(shown)
