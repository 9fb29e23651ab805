"""Exact, fast sampling of whole collections' statistics for coverage and width tests.

A collection is n independent reports from fixed true answers (the finite
population of ``deniable.estimation``).  Statistics are additive, so a
collection's statistics are sum over outputs y of (number of reports equal to
y) x (statistics of the single report y), and, for each group of respondents
sharing one true answer, the numbers of reports per output are multinomial
with the device path's exact ``report_distribution``.  Sampling those counts
is exactly equivalent to running the mechanism n times, and takes time
independent of n.

Exceptions, each exact in its own way:

* unary encodings (SUE, OUE: 2^d outputs): the d bits of a report are
  independent given the answer, so C_v = Bin(n_v, p*) + Bin(n - n_v, q*),
  independent over v.

* OLH (outputs include a 32-bit seed): the real vectorized simulation for
  n <= 1,000; for larger n the ideal-hash model under which its p* and q* are
  stated (given the report, each non-true value's bucket is uniform and
  independent, so C_v = Bin(n_v, p*) + Bin(n - n_v, 1/g), independent over v).
* discrete Laplace (unbounded outputs): the sum of n randomized roundings is a
  sum of binomials per group, and the sum of n noises, each the difference of
  two Geometric(p) (trials), is the difference of two NegativeBinomial(n, p)
  (failures) counts: exactly the distribution ``randomize_many`` samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from deniable.mechanisms.discrete_laplace import DiscreteLaplace
from deniable.mechanisms.local_hashing import OLH
from deniable.mechanisms.option_sampling import OptionSampling
from deniable.mechanisms.unary import OUE, SUE

REAL_SIMULATION_LIMIT = 1_000


def output_table(mechanism: Any, values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(P[value index, output], statistics of each single output) over the union of supports."""
    distributions = [mechanism.report_distribution(value) for value in values]
    outputs = sorted(set().union(*distributions))
    probabilities = np.array([[d.get(y, 0.0) for y in outputs] for d in distributions])
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    batch = mechanism.decode_many(outputs)
    rows = [
        np.asarray(mechanism.statistics(batch[i : i + 1]), dtype=np.int64)
        for i in range(len(outputs))
    ]
    return probabilities, np.vstack(rows)


def sample_statistics(
    mechanism: Any,
    values: list[Any],
    counts: list[int],
    collections: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Statistics of ``collections`` collections: ``counts[i]`` respondents answer ``values[i]``."""
    n = sum(counts)
    if isinstance(mechanism, DiscreteLaplace):
        return _discrete_laplace(mechanism, values, counts, collections, rng)
    if isinstance(mechanism, OLH):
        if n <= REAL_SIMULATION_LIMIT:
            truth = np.repeat(np.asarray(values), counts)
            return np.vstack(
                [
                    mechanism.support_counts(mechanism.randomize_many(truth, rng))
                    for _ in range(collections)
                ]
            )
        return _olh_ideal(mechanism, values, counts, collections, rng)
    if isinstance(mechanism, OUE | SUE):
        return _independent_bits(mechanism, values, counts, collections, rng)
    probabilities, statistics = output_table(mechanism, values)
    totals = np.zeros((collections, probabilities.shape[1]), dtype=np.int64)
    for row, count in zip(probabilities, counts, strict=True):
        if count:
            totals += rng.multinomial(count, row, size=collections)
    return totals @ statistics


def _holders(mechanism, values, counts) -> np.ndarray:
    holders = np.zeros(mechanism.domain_size, dtype=np.int64)
    for value, count in zip(values, counts, strict=True):
        holders[value] += count
    return holders


def _independent_bits(mechanism, values, counts, collections, rng) -> np.ndarray:
    holders = _holders(mechanism, values, counts)
    shape = (collections, mechanism.domain_size)
    kept = rng.binomial(holders, mechanism.p_star, size=shape)
    return kept + rng.binomial(holders.sum() - holders, mechanism.q_star, size=shape)


def _olh_ideal(mechanism, values, counts, collections, rng) -> np.ndarray:
    holders = _holders(mechanism, values, counts)
    shape = (collections, mechanism.domain_size)
    kept = rng.binomial(holders, mechanism.p_star, size=shape)
    return kept + rng.binomial(holders.sum() - holders, 1.0 / mechanism.hash_range, size=shape)


def _discrete_laplace(mechanism, values, counts, collections, rng) -> np.ndarray:
    g = mechanism.grid_size
    n = sum(counts)
    total = np.zeros(collections, dtype=np.int64)
    for value, count in zip(values, counts, strict=True):
        u = min(float(g), max(0.0, g * ((value - mechanism.lo) / (mechanism.hi - mechanism.lo))))
        k = np.floor(u)
        total += int(k) * count + rng.binomial(count, u - k, size=collections)
    p = -np.expm1(-mechanism.epsilon / g)
    noise = rng.negative_binomial(n, p, size=collections) - rng.negative_binomial(
        n, p, size=collections
    )
    return (total + noise)[:, None]


def option_sets(options: int, shares: list[float], n: int) -> tuple[list[tuple], list[int]]:
    """Distinct answer sets and their counts: option j held by round(shares[j] n) respondents.

    Respondent i holds option j iff i < round(shares[j] n): a nested family of sets.
    """
    cut = sorted({0, n, *(round(s * n) for s in shares)})
    values, counts = [], []
    for start, stop in zip(cut, cut[1:], strict=False):
        if stop > start:
            values.append(tuple(int(start < round(s * n)) for s in shares))
            counts.append(stop - start)
    assert len(shares) == options
    return values, counts


def is_option_sampling(mechanism: Any) -> bool:
    return isinstance(mechanism, OptionSampling)
