"""The set-valued option-sampling mechanism: exact privacy, wire, estimator.

Statistical checks use fixed seeds; tolerances are set so that a correct
mechanism fails a check with probability at most 1e-6 (stated at each check).
"""

from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from deniable.errors import InvalidParameter, InvalidReport, InvalidValue
from deniable.mechanisms import MECHANISMS, SET_VALUED
from deniable.mechanisms.option_sampling import OptionSampling
from deniable.randomness import GeneratorSource

from .test_mechanisms import worst_log_ratio

FALSE_ALARM = 1e-6


def all_sets(options: int) -> list[tuple[int, ...]]:
    return list(itertools.product((0, 1), repeat=options))


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("options", [2, 3, 4, 5])
def test_privacy_is_exactly_epsilon_over_all_pairs_of_sets(options, epsilon):
    mechanism = OptionSampling(epsilon=epsilon, options=options)
    distributions = [mechanism.report_distribution(bits) for bits in all_sets(options)]
    for distribution in distributions:
        assert sum(distribution.values()) == pytest.approx(1.0, abs=1e-12)
        assert all(len(y) == mechanism.report_length for y in distribution)
        assert len(distribution) == 2 * options
    # worst_log_ratio takes the max over every output and every pair of inputs.
    worst = worst_log_ratio(distributions)
    assert worst == pytest.approx(epsilon, abs=1e-9)
    assert worst == pytest.approx(mechanism.epsilon_implemented, abs=1e-12)
    assert mechanism.epsilon_implemented <= epsilon + 1e-12
    # Every pair of distinct sets is at distance exactly ε (tight for the whole set).
    for a, b in itertools.combinations(range(len(distributions)), 2):
        assert worst_log_ratio([distributions[a], distributions[b]]) == pytest.approx(
            mechanism.epsilon_implemented, abs=1e-12
        )


@pytest.mark.parametrize("options", [2, 3, 16, 300])
def test_wire_round_trip_and_fixed_size(options):
    mechanism = OptionSampling(epsilon=1.0, options=options)
    width = 1 if options <= 256 else 2
    assert mechanism.report_bytes == width + 1
    rng = np.random.default_rng(3)
    values = rng.integers(0, 2, size=(200, options))
    batch = mechanism.randomize_many(values, rng)
    encoded = mechanism.encode_many(batch)
    assert all(len(text) == 2 * (width + 1) for text in encoded)
    assert np.array_equal(mechanism.decode_many(encoded), batch)
    single = [mechanism.encode(report) for report in mechanism.unstack(batch)]
    assert single == encoded
    assert [mechanism.decode(text) for text in encoded] == mechanism.unstack(batch)
    assert mechanism.encode((options - 1, 1)) == (options - 1).to_bytes(width, "big").hex() + "01"


def test_bad_reports_and_values_are_rejected():
    mechanism = OptionSampling(epsilon=1.0, options=16)
    for text in ["1001", "0502", "05", "0G01", "0A01", 5]:
        with pytest.raises(InvalidReport):
            mechanism.decode(text)
        with pytest.raises(InvalidReport):
            mechanism.decode_many([text])
    for report in [(16, 0), (0, 2), (-1, 1), "x"]:
        with pytest.raises(InvalidReport):
            mechanism.encode(report)
    for value in [(1, 0), tuple([2] * 16), "abc", tuple([0.5] * 16)]:
        with pytest.raises(InvalidValue):
            mechanism.randomize(value)
    with pytest.raises(InvalidParameter):
        OptionSampling(epsilon=1.0, options=1)
    with pytest.raises(InvalidParameter):
        OptionSampling(epsilon=0.0, options=4)


def test_randomize_matches_the_exact_distribution():
    mechanism = OptionSampling(epsilon=1.0, options=5)
    value = (1, 0, 0, 1, 1)
    distribution = mechanism.report_distribution(value)
    source = GeneratorSource(np.random.default_rng(11))
    draws = 20_000
    seen: dict[str, int] = dict.fromkeys(distribution, 0)
    for _ in range(draws):
        seen[mechanism.encode(mechanism.randomize(value, source))] += 1
    observed = np.array([seen[y] for y in distribution])
    expected = np.array([distribution[y] for y in distribution]) * draws
    statistic = ((observed - expected) ** 2 / expected).sum()
    # Pearson's statistic is asymptotically chi-square(k - 1); false alarm 1e-6.
    assert statistic < stats.chi2.isf(FALSE_ALARM, len(distribution) - 1)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_estimates_are_unbiased_with_the_stated_variance(epsilon):
    options, n, repeats = 6, 2000, 400
    mechanism = OptionSampling(epsilon=epsilon, options=options)
    truth = np.array([0.0, 1.0, 0.5, 0.25, 0.9, 0.1])
    holders = np.round(truth * n).astype(int)
    values = np.zeros((n, options), dtype=np.int64)
    for option, count in enumerate(holders):
        values[:count, option] = 1
    frequencies = holders / n
    rng = np.random.default_rng(5)
    estimates = np.array(
        [
            mechanism.estimate(mechanism.statistics(mechanism.randomize_many(values, rng)), n)
            for _ in range(repeats)
        ]
    )
    variance = mechanism.variance_bound(n)
    # The mean of `repeats` estimates has variance variance/repeats: Chebyshev at
    # 1e-6 per option over 6 options.
    tolerance = math.sqrt(variance / repeats / (FALSE_ALARM / options))
    assert np.all(np.abs(estimates.mean(axis=0) - frequencies) < tolerance)
    # Sample variance within a chi-square band at false alarm 1e-6 per option.
    low = stats.chi2.ppf(FALSE_ALARM / (2 * options), repeats - 1) / (repeats - 1)
    high = stats.chi2.isf(FALSE_ALARM / (2 * options), repeats - 1) / (repeats - 1)
    ratio = estimates.var(axis=0, ddof=1) / variance
    assert np.all((low < ratio) & (ratio < high))


def test_listed_and_numpy_is_not_imported_at_module_level():
    assert SET_VALUED["option_sampling"] is OptionSampling
    assert MECHANISMS["option_sampling"] is OptionSampling
    source = Path(OptionSampling.__module__.replace("deniable", "shared").replace(".", "/") + ".py")
    tree = ast.parse((Path(__file__).parents[2] / source).read_text())
    top_level = [
        node
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any("numpy" in (alias.name or "") for alias in node.names)
        or isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("numpy")
    ]
    assert top_level == []
