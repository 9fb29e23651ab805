"""Interval families: score models, half-widths, and the choice of the tightest.

What is covered: the respondents' own answers (a finite population).  Their
answers are fixed; only the mechanisms' coins are random, so each report's
score for a category is an independent bounded variable whose mean and
variance are known functions of the respondent's answer.  For category v with
true share θ (a frequency, or the mean of a numeric answer in the mechanism's
units) and estimate θ̂ = (S/n - offset)/slope, S the sum of the n scores:

    E S = n (offset + slope θ),    Var S = n v(θ) with v(θ) = c0 + c1 θ + c2 θ²

exactly for frequencies (c2 = 0, v linear in θ: formula sheet, "Pure frequency
oracles") and as an upper bound for Duchi's mechanism (Σ (B² - t_i²) <=
n (B² - t̄²) by Jensen).  Each family is one function below:

* ``chebyshev`` (:func:`chebyshev_half_width`): θ̂ ± sqrt(V/β) with the variance
  bound V = max over θ of Var θ̂ (today's interval; the mission names it).
* ``chebyshev_exact`` (:func:`chebyshev_exact_interval`): Chebyshev's inequality
  with the variance as a function of θ, inverted: {θ : (θ̂ - θ)² <= Var(θ)/β}.
* ``bernstein`` (:func:`bernstein_interval`): Bernstein's inequality for the sum
  of independent bounded scores, inverted over θ the same way.  Its tail is
  exponential, so the simultaneous version pays ln(2d/β) instead of d/β.
* ``exact_tail`` (:mod:`deniable.exact_tail`): the support count's exact law
  (two binomials given the number of holders), inverted (Clopper–Pearson
  style); for every pure frequency oracle and option sampling, n <= 100,000.

The *tightest* family is chosen from the public parameters only (n, d, β, ε:
the half-width at the worst-case variance), never from the data, so the shown
interval keeps its own guarantee.  ``deniable.estimation`` assembles these
into published estimates (and re-exports every name here).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import exact_tail
from .errors import InvalidParameter
from .parameters import check_real

__all__ = [
    "DEFAULT_BETA",
    "EXACT_TAIL",
    "FAMILIES",
    "METHODS",
    "ScoreModel",
    "available_families",
    "bernstein_interval",
    "bernstein_terms",
    "chebyshev_exact_interval",
    "chebyshev_half_width",
    "check_beta",
    "family_interval",
    "nominal_half_width",
    "ratio_interval",
    "score_model",
    "smallest_passing",
    "tightest_family",
]

DEFAULT_BETA = 0.05
FAMILIES = ("chebyshev", "chebyshev_exact", "bernstein")
EXACT_TAIL = "exact_tail"  # published beside FAMILIES where exact_tail.available(...)

METHODS = {
    "chebyshev": "Chebyshev's inequality with the worst-case variance bound",
    "chebyshev_exact": "Chebyshev's inequality with the exact variance, inverted over the truth",
    "bernstein": "Bernstein's inequality for independent bounded reports, inverted over the truth",
    EXACT_TAIL: "the support count's exact distribution (two binomials), inverted over the truth",
}


def check_beta(beta: object) -> float:
    """β, the allowed failure probability: a real in (0, 1)."""
    value = check_real("beta", beta)
    if not 0.0 < value < 1.0:
        raise InvalidParameter(f"beta must be in (0, 1), got {beta!r}")
    return value


# -- what a mechanism's reports look like, per category --------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScoreModel:
    """One report's score for one category, as a function of the estimand θ.

    ``slope``: E[S]/n = offset + slope θ.  ``c0 + c1 θ + c2 θ²`` bounds the mean
    per-report variance (exact for frequencies); ``deviation`` bounds
    |score - E score| (None when reports are unbounded: no Bernstein).  θ lies in
    [``low``, ``high``]; published values are ``origin + scale θ``.
    """

    slope: float
    c0: float
    c1: float = 0.0
    c2: float = 0.0
    deviation: float | None
    low: float = 0.0
    high: float = 1.0
    origin: float = 0.0
    scale: float = 1.0
    # ("pure", p*, q*) or ("sampling", keep probability, options): the count's exact law.
    tail: tuple | None = None

    def variance(self, theta: np.ndarray | float) -> np.ndarray:
        """Mean per-report variance of the score when the truth is θ."""
        theta = np.asarray(theta, dtype=np.float64)
        return self.c0 + self.c1 * theta + self.c2 * theta * theta

    @property
    def worst_variance(self) -> float:
        """max over θ in [low, high] of the per-report variance."""
        points = [self.low, self.high]
        if self.c2 < 0:
            vertex = -self.c1 / (2 * self.c2)
            if self.low < vertex < self.high:
                points.append(vertex)
        return float(max(self.variance(points)))


def score_model(mechanism: Any) -> ScoreModel:
    """The :class:`ScoreModel` of a mechanism's per-category estimator (the mechanism's own
    :meth:`~deniable.mechanisms.Mechanism.score_model`)."""
    model = getattr(mechanism, "score_model", None)
    if model is None:
        raise InvalidParameter(f"no interval model for {type(mechanism).__name__}")
    return model()


# -- the three families ------------------------------------------------------------------------


def chebyshev_half_width(variance_bound: float, beta: float) -> float:
    """Half-width t with P(|estimate - truth| >= t) <= β when Var <= variance_bound.

    Chebyshev's inequality P(|X - E X| >= t) <= Var X / t² (formula sheet,
    "Chebyshev intervals"); V a bound valid for every truth.
    """
    # Why two roots: V / β overflows to inf for a wide numeric range at a small β (a range
    # of 3e146 at β = 1e-15) where sqrt(V) / sqrt(β) is a finite number.
    return math.sqrt(variance_bound) / math.sqrt(check_beta(beta))


def _invert(
    estimates: np.ndarray, model: ScoreModel, a: float, c: float
) -> tuple[np.ndarray, np.ndarray]:
    """The hull of {θ : |θ̂ - θ| <= a sqrt(v(θ)) + c}, before intersecting with the range.

    Beyond θ̂ ± c the condition squares to a quadratic in θ (leading coefficient
    1 - a² c2 > 0 since c2 <= 0), whose larger (smaller) root ends the set.  The
    hull is also cut to θ̂ ± (a sqrt(max v) + c): inside the range v(θ) <= max v,
    so this removes only points outside the range, where the quadratic
    extension of v means nothing (it keeps unclipped widths comparable).
    """
    theta = np.asarray(estimates, dtype=np.float64)
    lead = 1.0 - a * a * model.c2
    ends = []
    for sign in (1.0, -1.0):
        m = theta + sign * c
        linear = 2 * m + a * a * model.c1
        constant = m * m - a * a * model.c0
        disc = linear * linear - 4 * lead * constant
        root = (linear + sign * np.sqrt(np.maximum(disc, 0.0))) / (2 * lead)
        reach = np.where(disc >= 0, root, m)
        ends.append(np.maximum(reach, m) if sign > 0 else np.minimum(reach, m))
    upper, lower = ends
    widest = a * math.sqrt(model.worst_variance) + c
    return np.maximum(lower, theta - widest), np.minimum(upper, theta + widest)


def chebyshev_exact_interval(
    estimates: np.ndarray, n: int, model: ScoreModel, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """{θ : (θ̂ - θ)² <= Var_θ(θ̂)/β}, with Var_θ(θ̂) = v(θ)/(n slope²) the exact variance.

    Chebyshev's inequality at the true θ gives P(|θ̂ - θ|² > Var_θ/β) <= β, so the
    set of θ passing the test covers with probability >= 1 - β for every θ and
    every n, no normal approximation (formula sheet, "Tighter finite-sample
    intervals"; test inversion, e.g. Casella & Berger, "Statistical Inference",
    2002, Thm 9.2.2).  With v linear (or concave quadratic) the condition is a
    quadratic inequality in θ; its solution is an interval.
    """
    a = 1.0 / (model.slope * math.sqrt(n * check_beta(beta)))
    return _invert(estimates, model, a, 0.0)


def bernstein_terms(n: int, model: ScoreModel, beta: float) -> tuple[float, float]:
    """(a, c) with |θ̂ - θ| <= a sqrt(v(θ)) + c except with probability <= β.

    Bernstein's inequality (Bernstein 1927; Boucheron, Lugosi, Massart,
    "Concentration Inequalities", 2013, Thm 2.10 and Cor. 2.11, two-sided): for
    independent X_i with |X_i - E X_i| <= b and Σ Var X_i <= V,
    P(|Σ (X_i - E X_i)| >= sqrt(2 V L) + b L / 3) <= β with L = ln(2/β).
    Divided by n·slope with V = n v(θ).
    """
    if model.deviation is None:
        raise InvalidParameter("Bernstein's inequality needs bounded reports")
    log_term = math.log(2.0 / check_beta(beta))
    a = math.sqrt(2.0 * log_term / n) / model.slope
    c = model.deviation * log_term / (3.0 * n * model.slope)
    return a, c


def bernstein_interval(
    estimates: np.ndarray, n: int, model: ScoreModel, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """{θ : |θ̂ - θ| <= sqrt(2 v(θ) L / n)/slope + b L/(3 n slope)}, L = ln(2/β).

    Bernstein's inequality (see :func:`bernstein_terms`) at the true θ, with the
    exact variance sum n v(θ), inverted over θ: coverage >= 1 - β for every θ and
    every n.  Only for bounded reports (every frequency oracle, option sampling,
    Duchi); the discrete Laplace mechanism's reports are unbounded.
    """
    a, c = bernstein_terms(n, model, beta)
    return _invert(estimates, model, a, c)


def nominal_half_width(family: str, n: int, model: ScoreModel, beta: float) -> float:
    """Half-width of a family at the worst-case variance: data-free, used to pick the tightest."""
    if family == EXACT_TAIL:
        return exact_tail.nominal_half_width(model.tail, n, check_beta(beta))
    worst = model.worst_variance
    if family == "bernstein":
        a, c = bernstein_terms(n, model, beta)
        return a * math.sqrt(worst) + c
    return math.sqrt(worst / (n * check_beta(beta))) / model.slope


def family_interval(
    family: str, estimates: np.ndarray, n: int, model: ScoreModel, beta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Unclipped (lower, upper) of one family, in θ units."""
    theta = np.asarray(estimates, dtype=np.float64)
    if family == "chebyshev":
        half = nominal_half_width("chebyshev", n, model, beta)
        return theta - half, theta + half
    if family == "chebyshev_exact":
        return chebyshev_exact_interval(theta, n, model, beta)
    if family == "bernstein":
        return bernstein_interval(theta, n, model, beta)
    raise InvalidParameter(f"unknown interval family {family!r}")


def available_families(model: ScoreModel) -> tuple[str, ...]:
    return FAMILIES if model.deviation is not None else FAMILIES[:2]


def tightest_family(n: int, model: ScoreModel, beta: float, categories: int = 0) -> str:
    """The family with the smallest worst-case half-width (ties: the simpler one).

    Chebyshev with the exact variance is contained in the worst-case Chebyshev
    interval for every estimate, so it is preferred to it.  The exact tail is a
    candidate where it is published (``exact_tail.available``) for ``categories``
    estimates; with the default 0 it is not (callers that publish it pass d).
    All of it depends on n, d, β and the mechanism only, never on the data.
    """
    best = "chebyshev_exact"
    if model.deviation is not None and nominal_half_width(
        "bernstein", n, model, beta
    ) < nominal_half_width("chebyshev_exact", n, model, beta):
        best = "bernstein"
    if (
        model.tail is not None
        and exact_tail.available(model.tail, n, categories)
        and nominal_half_width(EXACT_TAIL, n, model, beta)
        < nominal_half_width(best, n, model, beta)
    ):
        best = EXACT_TAIL
    return best


def smallest_passing(passes: Callable[[int], bool], low: int, high: int) -> int:
    """The smallest integer in [low, high] for which ``passes`` holds, by bisection.

    ``passes`` must be monotone (false, then true) on the range and true at ``high``.
    """
    while low < high:
        middle = (low + high) // 2
        if passes(middle):
            high = middle
        else:
            low = middle + 1
    return low


# -- a ratio of two estimates, each with its interval ------------------------------------------


def ratio_interval(
    low_total: np.ndarray,
    high_total: np.ndarray,
    low_share: np.ndarray,
    high_share: np.ndarray,
    span: float,
) -> tuple[np.ndarray, np.ndarray]:
    """[lower, upper] within [0, span] that holds N/D whenever N lies in [low_total, high_total],
    D in [low_share, high_share], and 0 <= N <= span D with D > 0.

    Why it covers: on that event N >= max(low_total, 0) and 0 < D <= high_share give
    N/D >= max(low_total, 0)/high_share, and N <= high_total with D >= low_share > 0 give
    N/D <= high_total/low_share; N/D lies in [0, span] in any case.  So if the two intervals
    cover with probability >= 1 - β/2 each, the ratio's covers with probability >= 1 - β
    (union bound).  Used for means by category (``deniable.crosstab``) and for shares among
    those who answered (``deniable.nonresponse``).
    """
    tiny = np.finfo(float).tiny
    low_total, high_total = np.asarray(low_total, float), np.asarray(high_total, float)
    low_share, high_share = np.asarray(low_share, float), np.asarray(high_share, float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        lower = np.maximum(low_total, 0.0) / np.maximum(high_share, tiny)
        lower = np.where(high_share > 0, lower, 0.0)
        upper = np.where(low_share > 0, high_total / np.maximum(low_share, tiny), span)
    return np.clip(lower, 0.0, span), np.clip(upper, 0.0, span)
