"""Chebyshev confidence intervals for frequencies and means.

Chebyshev's inequality P(|X - E X| >= t) <= Var X / t^2 with a variance bound V
that holds for every true distribution gives the interval estimate ± sqrt(V/β)
with coverage at least 1 - β for every n, with no normality assumption
(formula sheet, "Chebyshev intervals").  For all d categories at once the
union bound gives simultaneous coverage 1 - β with β/d per category.

The true frequency lies in [0, 1] and the true mean in [lo, hi], so bounds are
intersected with those ranges: the intersection covers whenever the raw
interval does.  Raw unbiased estimates are never altered; post-processed ones
(``deniable.postprocess``) are returned beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import postprocess
from .errors import InvalidParameter
from .mechanisms.base import FrequencyOracle, NumericMechanism
from .parameters import check_real

DEFAULT_BETA = 0.05


def check_beta(beta: object) -> float:
    """β, the allowed failure probability: a real in (0, 1)."""
    value = check_real("beta", beta)
    if not 0.0 < value < 1.0:
        raise InvalidParameter(f"beta must be in (0, 1), got {beta!r}")
    return value


def chebyshev_half_width(variance_bound: float, beta: float) -> float:
    """Half-width t with P(|estimate - truth| >= t) <= β when Var <= variance_bound."""
    return math.sqrt(variance_bound / check_beta(beta))


@dataclass(frozen=True, kw_only=True)
class FrequencyEstimate:
    """Frequencies of every category with per-category and simultaneous intervals."""

    n: int
    beta: float
    estimates: np.ndarray
    variance_bound: float
    half_width: float
    simultaneous_half_width: float
    postprocessed: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def lower(self) -> np.ndarray:
        return np.clip(self.estimates - self.half_width, 0.0, 1.0)

    @property
    def upper(self) -> np.ndarray:
        return np.clip(self.estimates + self.half_width, 0.0, 1.0)

    @property
    def simultaneous_lower(self) -> np.ndarray:
        return np.clip(self.estimates - self.simultaneous_half_width, 0.0, 1.0)

    @property
    def simultaneous_upper(self) -> np.ndarray:
        return np.clip(self.estimates + self.simultaneous_half_width, 0.0, 1.0)

    def to_dict(self, labels: list[str] | None = None) -> dict[str, Any]:
        labels = labels or [str(i) for i in range(len(self.estimates))]
        return {
            "n": self.n,
            "beta": self.beta,
            "variance_bound": self.variance_bound,
            "half_width": self.half_width,
            "simultaneous_half_width": self.simultaneous_half_width,
            "categories": [
                {
                    "label": label,
                    "estimate": float(self.estimates[i]),
                    "lower": float(self.lower[i]),
                    "upper": float(self.upper[i]),
                    "simultaneous_lower": float(self.simultaneous_lower[i]),
                    "simultaneous_upper": float(self.simultaneous_upper[i]),
                    **{
                        name: float(values[i])
                        for name, values in sorted(self.postprocessed.items())
                    },
                }
                for i, label in enumerate(labels)
            ],
        }


def estimate_frequencies(
    oracle: FrequencyOracle,
    counts: np.ndarray,
    n: int,
    *,
    beta: float = DEFAULT_BETA,
    categories: int | None = None,
    normalize: bool = True,
) -> FrequencyEstimate:
    """Raw unbiased estimates, Chebyshev intervals and post-processed estimates.

    ``categories`` is how many estimates the simultaneous guarantee covers (the
    domain size by default).  ``normalize`` adds the three consistency
    post-processings; they only make sense when the categories partition the
    population (single choice), not for independent yes/no options.
    """
    beta = check_beta(beta)
    if n <= 0:
        raise InvalidParameter(f"n must be positive to estimate, got {n}")
    estimates = oracle.estimate(counts, n)
    bound = oracle.variance_bound(n)
    covered = categories or len(estimates)
    processed = (
        {
            "clipped": postprocess.clip_and_renormalize(estimates),
            "norm_sub": postprocess.norm_sub(estimates),
            "projected": postprocess.project_to_simplex(estimates),
        }
        if normalize
        else {"clipped": np.clip(estimates, 0.0, 1.0)}
    )
    return FrequencyEstimate(
        n=n,
        beta=beta,
        estimates=estimates,
        variance_bound=bound,
        half_width=chebyshev_half_width(bound, beta),
        simultaneous_half_width=chebyshev_half_width(bound, beta / covered),
        postprocessed=processed,
    )


@dataclass(frozen=True, kw_only=True)
class MeanEstimate:
    """An unbiased mean with its Chebyshev interval, intersected with [lo, hi]."""

    n: int
    beta: float
    mean: float
    variance_bound: float
    half_width: float
    lo: float
    hi: float

    @property
    def lower(self) -> float:
        return min(max(self.mean - self.half_width, self.lo), self.hi)

    @property
    def upper(self) -> float:
        return min(max(self.mean + self.half_width, self.lo), self.hi)

    @property
    def clipped(self) -> float:
        return min(max(self.mean, self.lo), self.hi)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "beta": self.beta,
            "mean": self.mean,
            "lower": self.lower,
            "upper": self.upper,
            "variance_bound": self.variance_bound,
            "half_width": self.half_width,
            "clipped": self.clipped,
        }


def estimate_mean(
    mechanism: NumericMechanism, statistics: np.ndarray, n: int, *, beta: float = DEFAULT_BETA
) -> MeanEstimate:
    beta = check_beta(beta)
    if n <= 0:
        raise InvalidParameter(f"n must be positive to estimate, got {n}")
    bound = mechanism.variance_bound(n)
    return MeanEstimate(
        n=n,
        beta=beta,
        mean=float(mechanism.estimate(statistics, n)[0]),
        variance_bound=bound,
        half_width=chebyshev_half_width(bound, beta),
        lo=mechanism.lo,
        hi=mechanism.hi,
    )
