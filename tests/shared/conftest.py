"""The one list of mechanisms the cross-mechanism tests run over.

It is built from the tables in :mod:`deniable.mechanisms` at collection time,
so a mechanism added to ``CATEGORICAL`` or ``NUMERIC`` is tested by every
test here without touching this file.  Categorical oracles are built with
:func:`make_mechanism`; combinations above a class's ``max_domain_size`` are
skipped.  Numeric mechanisms use the fixed range ``NUMERIC_RANGE``; keywords
that make a numeric mechanism small enough to enumerate its outputs live in
``SMALL_NUMERIC_OPTIONS``.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from deniable.mechanisms import CATEGORICAL, NUMERIC, FrequencyOracle, Mechanism, NumericMechanism

CATEGORICAL_NAMES: list[str] = sorted(CATEGORICAL)
NUMERIC_NAMES: list[str] = sorted(NUMERIC)
ALL_NAMES: list[str] = CATEGORICAL_NAMES + NUMERIC_NAMES

NUMERIC_RANGE = (-2.0, 6.0)

# Numeric mechanisms whose output space is large by default get a small variant
# for exact-distribution tests and audits.
SMALL_NUMERIC_OPTIONS: dict[str, dict[str, Any]] = {"discrete_laplace": {"grid_size": 4}}

# Seeds used for oracles whose report_distribution is per fixed public seed (OLH).
DISTRIBUTION_SEEDS = (0, 1, 2, 3, 7, 12345)


def supports(name: str, domain_size: int) -> bool:
    return domain_size <= CATEGORICAL[name].max_domain_size


def make_mechanism(name: str, epsilon: float, domain_size: int) -> FrequencyOracle:
    """A categorical oracle, or pytest.skip if the class does not support ``domain_size``."""
    cls = CATEGORICAL[name]
    if not supports(name, domain_size):
        pytest.skip(f"{name} supports domain sizes up to {cls.max_domain_size}")
    return cls(epsilon=epsilon, domain_size=domain_size)


def make_numeric(name: str, epsilon: float, *, small: bool = False) -> NumericMechanism:
    lo, hi = NUMERIC_RANGE
    options = SMALL_NUMERIC_OPTIONS.get(name, {}) if small else {}
    return NUMERIC[name](epsilon=epsilon, lo=lo, hi=hi, **options)


def make_any(name: str, epsilon: float = 1.0, domain_size: int = 4, **kw: Any) -> Mechanism:
    """Any mechanism by name: categorical at ``domain_size`` (capped at its maximum)."""
    if name in CATEGORICAL:
        size = min(domain_size, CATEGORICAL[name].max_domain_size)
        return CATEGORICAL[name](epsilon=epsilon, domain_size=size)
    return make_numeric(name, epsilon, **kw)


def sample_values(mechanism: Mechanism) -> list[Any]:
    """True values that span the mechanism's domain."""
    if isinstance(mechanism, FrequencyOracle):
        return list(range(mechanism.domain_size))
    lo, hi = mechanism.lo, mechanism.hi
    return [lo, hi, (lo + hi) / 2, lo + (hi - lo) / 3, lo + 0.123 * (hi - lo)]


def distribution_seeds(mechanism: Mechanism) -> list[dict[str, Any]]:
    """Keyword sets for report_distribution: one per seed if it takes ``seed=``."""
    if "seed" in inspect.signature(mechanism.report_distribution).parameters:
        return [{"seed": seed} for seed in DISTRIBUTION_SEEDS]
    return [{}]
