"""The simulation path (``randomize_many``) has the device path's exact distribution.

For every mechanism in ``deniable.mechanisms.MECHANISMS`` plus the longitudinal
and per-option multiple-choice variants, N reports of one true value drawn
with ``randomize_many`` are encoded and compared, by Pearson's chi-square test,
with ``report_distribution`` (the exact distribution of what a device sends,
checked against the CSPRNG path in test_mechanisms.py and test_audit.py).
Outputs whose expected count is below 5 are pooled into one cell, together
with any output outside the distribution's support.  Each test has a fixed
seed and a false-alarm rate <= 1e-6 (the chi-square tail; N is large enough for
the asymptotics at 5 expected per cell).

This catches a simulator that keeps the truth with the wrong probability: the
bug once in ``LongitudinalGRR.randomize_many`` (z = -45 at this N).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from scipy import stats

from deniable.mechanisms import CATEGORICAL, NUMERIC, SET_VALUED, OptionwiseRR
from deniable.mechanisms.local_hashing import OLH, buckets
from deniable.mechanisms.longitudinal import LongitudinalGRR

from .conftest import make_numeric

FALSE_ALARM = 1e-6
DRAWS = 40_000


def chi_square_p_value(observed: Counter, expected: dict[str, float], draws: int) -> float:
    """P-value of Pearson's statistic, with cells below 5 expected pooled (plus strays)."""
    cells, pooled_expected, pooled_observed = [], 0.0, 0
    for output, probability in expected.items():
        if probability * draws >= 5:
            cells.append((observed.get(output, 0), probability * draws))
        else:
            pooled_expected += probability * draws
            pooled_observed += observed.get(output, 0)
    strays = sum(count for output, count in observed.items() if output not in expected)
    pooled_observed += strays
    pooled_expected += max(0.0, draws - sum(expected.values()) * draws)
    if pooled_expected > 0 or pooled_observed > 0:
        if pooled_expected < 5:
            # Too small a cell for the asymptotics: any stray at all is a failure
            # only if it is implausible (expected < 1e-6 events).
            assert pooled_expected > 1e-6 or pooled_observed == 0, "impossible output simulated"
        else:
            cells.append((pooled_observed, pooled_expected))
    observed_counts = np.array([c[0] for c in cells], dtype=float)
    expected_counts = np.array([c[1] for c in cells])
    statistic = float(((observed_counts - expected_counts) ** 2 / expected_counts).sum())
    return float(stats.chi2.sf(statistic, len(cells) - 1))


def cases() -> list[tuple[str, Any, list[Any]]]:
    result: list[tuple[str, Any, list[Any]]] = []
    for name, cls in sorted(CATEGORICAL.items()):
        for size in (2, 5):
            if size > cls.max_domain_size:
                continue
            mechanism = (
                cls(epsilon=1.0) if name == "binary_rr" else cls(epsilon=1.0, domain_size=size)
            )
            result.append((f"{name}-d{size}", mechanism, [0, size - 1]))
    for name in sorted(NUMERIC):
        mechanism = make_numeric(name, 1.0, small=True)
        result.append((name, mechanism, [mechanism.lo, mechanism.hi, 0.3]))
    for name, cls in sorted(SET_VALUED.items()):
        result.append((name, cls(epsilon=1.0, options=4), [(1, 0, 1, 1), (0, 0, 0, 0)]))
    result.append(
        (
            "grr-longitudinal",
            LongitudinalGRR(epsilon=2.0, instantaneous_epsilon=1.0, domain_size=4),
            [0, 3],
        )
    )
    return result


CASES = cases()


def test_every_listed_mechanism_has_a_case():
    names = {case[0].split("-d")[0] for case in CASES}
    assert set(CATEGORICAL) | set(NUMERIC) | set(SET_VALUED) <= names


@pytest.mark.parametrize(("label", "mechanism", "values"), CASES, ids=[c[0] for c in CASES])
def test_simulation_matches_the_exact_device_distribution(label, mechanism, values):
    rng = np.random.default_rng(20261126)
    for value in values:
        if isinstance(mechanism, OLH):
            p_value = _olh_p_value(mechanism, value, rng)
        else:
            batch = mechanism.randomize_many(np.asarray([value] * DRAWS), rng)
            observed = Counter(mechanism.encode_many(batch))
            p_value = chi_square_p_value(observed, mechanism.report_distribution(value), DRAWS)
        assert p_value > FALSE_ALARM / len(values), (label, value, p_value)


def _olh_p_value(mechanism: OLH, value: int, rng: np.random.Generator) -> float:
    """OLH: seeds are uniform, and given its seed a report is GRR over [g] of H_seed(value).

    Both are checked at once on the cells (top 3 bits of the seed, offset of y
    from H_seed(value) mod g), whose exact probabilities are 1/8 × (p, or
    (1 - p)/(g - 1) for each non-zero offset).
    """
    g = mechanism.hash_range
    batch = mechanism.randomize_many(np.full(DRAWS, value), rng)
    seeds, ys = batch[:, 0], batch[:, 1]
    hashed = buckets(seeds, np.array([value]), g).reshape(-1).astype(np.int64)
    cells = Counter(zip((seeds >> 29).tolist(), ((ys - hashed) % g).tolist(), strict=True))
    p = mechanism.p_star
    expected = {
        (top, offset): (p if offset == 0 else (1 - p) / (g - 1)) / 8
        for top in range(8)
        for offset in range(g)
    }
    return chi_square_p_value(
        Counter({str(k): v for k, v in cells.items()}),
        {str(k): v for k, v in expected.items()},
        DRAWS,
    )


def test_longitudinal_keeps_the_truth_with_the_composite_probability():
    """The fixed bug, directly: P[report = truth] = p1 p2 + (1 - p1)(1 - p2)/(d - 1)."""
    mechanism = LongitudinalGRR(epsilon=1.0, instantaneous_epsilon=1.0, domain_size=8)
    rng = np.random.default_rng(9)
    reports = mechanism.randomize_many(np.zeros(DRAWS, dtype=np.int64), rng)
    kept = int((reports == 0).sum())
    # Binomial two-sided tail at 1e-6.
    low, high = stats.binom.interval(1 - FALSE_ALARM, DRAWS, mechanism.p_star)
    assert low <= kept <= high


def test_per_option_split_matches_its_product_distribution():
    """Multiple choice split into binary RR at ε/m: each option's bit is binary RR."""
    mechanism = OptionwiseRR(epsilon=1.0, options=3)
    rng = np.random.default_rng(4)
    value = (1, 0, 1)
    batch = mechanism.randomize_many(np.asarray([value] * DRAWS), rng)
    p = mechanism.option_oracle.p_star
    expected = {}
    for row in range(8):
        bits = tuple((row >> (2 - i)) & 1 for i in range(3))
        probability = 1.0
        for bit, truth in zip(bits, value, strict=True):
            probability *= p if bit == truth else 1 - p
        expected[str(bits)] = probability
    observed = Counter(str(tuple(int(b) for b in row)) for row in batch)
    assert chi_square_p_value(observed, expected, DRAWS) > FALSE_ALARM
