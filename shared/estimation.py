"""Confidence intervals for frequencies and means: three families, all finite-sample valid.

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

Simultaneous intervals cover all d categories at once with probability at
least 1 - β by the union bound (β/d per category).  Every interval is
intersected with the range of θ ([0, 1] for frequencies, [lo, hi] for means);
the intersection covers whenever the interval does.  The *tightest* family is
chosen from the public parameters only (n, d, β, ε: the half-width at the
worst-case variance), never from the data, so the shown interval keeps its own
guarantee.  Raw unbiased estimates are never altered; post-processed ones
(``deniable.postprocess``) are returned beside them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import exact_tail, postprocess
from .errors import InvalidParameter
from .mechanisms.base import FrequencyOracle, NumericMechanism
from .mechanisms.discrete_laplace import DiscreteLaplace
from .mechanisms.duchi import Duchi
from .mechanisms.grr import GRR
from .mechanisms.option_sampling import OptionSampling
from .parameters import check_real

DEFAULT_BETA = 0.05
FAMILIES = ("chebyshev", "chebyshev_exact", "bernstein")
EXACT_TAIL = "exact_tail"  # published beside FAMILIES where exact_tail.available(...)
# Interval half-widths (in units of the estimand's range) at which results say so in words.
UNINFORMATIVE_HALF_WIDTH = 0.5
PRECISE_HALF_WIDTH = 0.1

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
    """The :class:`ScoreModel` of a mechanism's per-category estimator."""
    if isinstance(mechanism, OptionSampling):
        gap = (2 * mechanism.keep_probability - 1) / mechanism.options
        # s = +1 for (v, 1), -1 for (v, 0), else 0: E s = -gap + 2 gap x, E s² = 1/m.
        return ScoreModel(
            slope=2 * gap, c0=1 / mechanism.options - gap * gap, deviation=1 + gap,
            tail=("sampling", mechanism.keep_probability, mechanism.options),
        )  # fmt: skip
    if isinstance(mechanism, FrequencyOracle):
        p, q = mechanism.p_star, mechanism.q_star
        # The support indicator is Bernoulli(p*) for holders of v, Bernoulli(q*) otherwise.
        return ScoreModel(
            slope=p - q,
            c0=q * (1 - q),
            c1=p * (1 - p) - q * (1 - q),
            deviation=max(p, 1 - p, q, 1 - q),
            tail=("pure", p, q),
        )
    if isinstance(mechanism, Duchi):
        bound = mechanism.bound
        # Reports ±B with mean t_i: Σ Var = Σ (B² - t_i²) <= n (B² - t̄²).
        return ScoreModel(
            slope=1.0, c0=bound * bound, c2=-1.0, deviation=bound + 1.0, low=-1.0, high=1.0,
            origin=(mechanism.lo + mechanism.hi) / 2, scale=(mechanism.hi - mechanism.lo) / 2,
        )  # fmt: skip
    if isinstance(mechanism, DiscreteLaplace):
        g = mechanism.grid_size
        # Finite population: each k_i is a randomized rounding of a fixed value
        # (variance <= 1/4) plus independent noise; reports are unbounded.
        return ScoreModel(
            slope=1.0, c0=0.25 + mechanism.noise_variance, deviation=None, low=0.0, high=g,
            origin=mechanism.lo, scale=(mechanism.hi - mechanism.lo) / g,
        )  # fmt: skip
    if isinstance(mechanism, NumericMechanism):
        spread = mechanism.hi - mechanism.lo
        return ScoreModel(
            slope=1.0, c0=mechanism.variance_bound(1) / spread**2, deviation=None,
            origin=mechanism.lo, scale=spread,
        )  # fmt: skip
    raise InvalidParameter(f"no interval model for {type(mechanism).__name__}")


# -- the three families ------------------------------------------------------------------------


def chebyshev_half_width(variance_bound: float, beta: float) -> float:
    """Half-width t with P(|estimate - truth| >= t) <= β when Var <= variance_bound.

    Chebyshev's inequality P(|X - E X| >= t) <= Var X / t² (formula sheet,
    "Chebyshev intervals"); V a bound valid for every truth.
    """
    return math.sqrt(variance_bound / check_beta(beta))


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


def guarantee(family: str, beta: float, categories: int | None) -> str:
    level = f"{100 * (1 - beta):g}%"
    if categories is None:
        return f"covers the respondents' true mean with probability >= {level}, for every n"
    return (
        f"each interval covers its category's true share with probability >= {level}; "
        f"the simultaneous ones cover all {categories} at once with probability >= {level} "
        "(union bound); for every n, no normal approximation"
    )


def precision(half_width: float) -> str:
    """'uninformative' (>= 0.5 of the range), 'imprecise' (> 0.1) or 'ok', from a half-width."""
    if half_width >= UNINFORMATIVE_HALF_WIDTH:
        return "uninformative"
    if half_width > PRECISE_HALF_WIDTH:
        return "imprecise"
    return "ok"


@functools.lru_cache(maxsize=256)
def respondents_needed(model: ScoreModel, beta: float, target: float = PRECISE_HALF_WIDTH) -> int:
    """Smallest n whose tightest closed-form worst-case half-width (range units) is <= target.

    The closed-form families only (categories=0 leaves the exact tail out): this
    figure is published with every result and must stay cheap.  The exact tail
    usually needs fewer respondents; ``deniable.planner.plan`` lists its n.
    """
    span = model.high - model.low

    def width(n: int) -> float:
        return nominal_half_width(tightest_family(n, model, beta, 0), n, model, beta) / span

    low, high = 1, 2
    while width(high) > target:
        low, high = high, high * 2
        if high > 1 << 62:
            return high
    while low < high:
        middle = (low + high) // 2
        if width(middle) <= target:
            high = middle
        else:
            low = middle + 1
    return low


# The exact tail's respondents for ±10 points are searched only below this closed-form n: its
# widths are computed (about 0.5 s for a first search at this size, cached after), not formulas.
EXACT_FIGURE_MAX_N = 5_000


@functools.lru_cache(maxsize=256)
def tightest_respondents_needed(
    model: ScoreModel, beta: float, categories: int, target: float = PRECISE_HALF_WIDTH
) -> tuple[int, str]:
    """(n, families) for the figure published beside a result: the smallest n at which the
    family the result would publish as tightest (the exact tail included where it is
    computed for ``categories`` estimates, as :func:`tightest_family`) reaches ``target``.

    ``families`` is "tightest" when the exact tail was searched (or is never available),
    "closed_form" when the search would cost too much (closed-form n above
    :data:`EXACT_FIGURE_MAX_N`) and the figure is :func:`respondents_needed`'s.
    Why: a result whose interval is the exact tail must not quote the n of a wider family.
    Cached: a first call costs up to about half a second, later ones nothing.
    """
    closed = respondents_needed(model, beta, target)
    if model.tail is None or categories < 1:
        return closed, "tightest"
    if closed > EXACT_FIGURE_MAX_N:
        return closed, "closed_form"
    span = model.high - model.low

    def reaches(n: int) -> bool:
        family = tightest_family(n, model, beta, categories)
        return nominal_half_width(family, n, model, beta) / span <= target

    low, high = 1, closed  # the tightest family is never wider than the closed forms
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle + 1, high)
    return high, "tightest"


# -- result objects ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Interval:
    """One family's intervals (clipped to the range) and its data-free worst-case half-widths."""

    family: str
    lower: np.ndarray
    upper: np.ndarray
    simultaneous_lower: np.ndarray
    simultaneous_upper: np.ndarray
    nominal_half_width: float
    simultaneous_nominal_half_width: float

    def describe(self, beta: float, categories: int | None) -> dict[str, Any]:
        return {
            "family": self.family,
            "method": METHODS[self.family],
            "guarantee": guarantee(self.family, beta, categories),
            "nominal_half_width": self.nominal_half_width,
            "simultaneous_nominal_half_width": self.simultaneous_nominal_half_width,
        }


def interval_families(
    estimates: np.ndarray,
    n: int,
    model: ScoreModel,
    beta: float,
    categories: int,
    bound: float,
    statistics: np.ndarray | None = None,
) -> dict[str, Interval]:
    """Every family at β and β/categories; ``bound`` is today's variance bound (output units).

    ``estimates`` may have any shape (e.g. collections x categories in simulations).
    With the mechanism's ``statistics`` (same leading shape) the exact tail is
    added where it is published.
    """
    theta = (np.asarray(estimates, dtype=np.float64) - model.origin) / model.scale
    result = {}
    for family in available_families(model):
        bounds, halves = [], []
        for level in (beta, beta / categories):
            if family == "chebyshev":
                half = chebyshev_half_width(bound, level) / model.scale
                low, high = theta - half, theta + half
            else:
                low, high = family_interval(family, theta, n, model, level)
                half = nominal_half_width(family, n, model, level)
            low = np.clip(low, model.low, model.high)
            high = np.clip(high, model.low, model.high)
            bounds += [model.origin + model.scale * low, model.origin + model.scale * high]
            halves.append(model.scale * half)
        result[family] = Interval(
            family=family,
            lower=bounds[0],
            upper=bounds[1],
            simultaneous_lower=bounds[2],
            simultaneous_upper=bounds[3],
            nominal_half_width=halves[0],
            simultaneous_nominal_half_width=halves[1],
        )
    if (
        statistics is not None
        and model.tail is not None
        and exact_tail.available(model.tail, n, categories)
    ):
        (low, high), (both_low, both_high) = exact_tail.interval(
            model.tail, statistics, n, (beta, beta / categories)
        )
        result[EXACT_TAIL] = Interval(
            family=EXACT_TAIL,
            lower=low,
            upper=high,
            simultaneous_lower=both_low,
            simultaneous_upper=both_high,
            nominal_half_width=nominal_half_width(EXACT_TAIL, n, model, beta),
            simultaneous_nominal_half_width=nominal_half_width(
                EXACT_TAIL, n, model, beta / categories
            ),
        )
    return result


@dataclass(frozen=True, kw_only=True)
class FrequencyEstimate:
    """Frequencies of every category with per-category and simultaneous intervals.

    ``lower``/``upper``/``half_width`` (and the simultaneous ones) are today's
    worst-case Chebyshev intervals; ``intervals`` holds every family.
    """

    n: int
    beta: float
    estimates: np.ndarray
    variance_bound: float
    half_width: float
    simultaneous_half_width: float
    postprocessed: dict[str, np.ndarray] = field(default_factory=dict)
    intervals: dict[str, Interval] = field(default_factory=dict)
    tightest: str = "chebyshev"
    simultaneous_tightest: str = "chebyshev"
    respondents_for_ten_points: int | None = None
    # "tightest": the n at which the published (tightest) family reaches ±10 points;
    # "closed_form": the closed-form families' n (see tightest_respondents_needed).
    respondents_for_ten_points_families: str = "tightest"

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

    @property
    def precision(self) -> str:
        """In words: is the tightest per-category interval any use (see :func:`precision`)?"""
        if not self.intervals:
            return precision(self.half_width)
        return precision(self.intervals[self.tightest].nominal_half_width)

    def to_dict(self, labels: list[str] | None = None) -> dict[str, Any]:
        labels = labels or [str(i) for i in range(len(self.estimates))]
        categories = len(self.estimates)
        extra = [family for family in self.intervals if family != "chebyshev"]
        # Why: each column computed once, as Python floats (per-category numpy indexing of
        # recomputed properties made a d = 1,024 question cost a quarter of a second).
        columns = {
            "estimate": self.estimates,
            "lower": self.lower,
            "upper": self.upper,
            "simultaneous_lower": self.simultaneous_lower,
            "simultaneous_upper": self.simultaneous_upper,
            **{
                f"{family}_{end}": getattr(self.intervals[family], end)
                for family in extra
                for end in ("lower", "upper", "simultaneous_lower", "simultaneous_upper")
            },
            **dict(sorted(self.postprocessed.items())),
        }
        values = {name: np.asarray(col, dtype=float).tolist() for name, col in columns.items()}
        return {
            "n": self.n,
            "beta": self.beta,
            "variance_bound": self.variance_bound,
            "half_width": self.half_width,
            "simultaneous_half_width": self.simultaneous_half_width,
            "intervals": [
                interval.describe(self.beta, categories) for interval in self.intervals.values()
            ],
            "tightest": self.tightest,
            "simultaneous_tightest": self.simultaneous_tightest,
            "covers": "respondents",
            "precision": self.precision,
            "uninformative": self.precision == "uninformative",
            "respondents_for_ten_points": self.respondents_for_ten_points,
            "respondents_for_ten_points_families": self.respondents_for_ten_points_families,
            "categories": [
                {"label": label, **{name: column[i] for name, column in values.items()}}
                for i, label in enumerate(labels)
            ],
        }


def estimate_frequencies(
    oracle: Any,
    counts: np.ndarray,
    n: int,
    *,
    beta: float = DEFAULT_BETA,
    categories: int | None = None,
    normalize: bool = True,
    exact: bool = True,
) -> FrequencyEstimate:
    """Raw unbiased estimates, every interval family, and post-processed estimates.

    ``oracle`` is a frequency oracle or :class:`OptionSampling` (``counts`` are its
    statistics).  ``categories`` is how many estimates the simultaneous guarantee
    covers (the domain size by default).  ``normalize`` adds the three
    consistency post-processings; they only make sense when the categories
    partition the population (single choice), not for independent yes/no options.
    For GRR (and binary RR) it adds the maximum-likelihood estimate ``ibu`` too.
    ``exact=False`` leaves out the exact-tail family (simulations of the others).
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
    if normalize and isinstance(oracle, GRR):
        # The maximum-likelihood estimate, where the likelihood depends on the counts only.
        processed["ibu"] = postprocess.iterative_bayesian_update(
            counts, oracle.p_star, oracle.q_star
        )
    model = score_model(oracle)
    needed, families = tightest_respondents_needed(model, beta, covered if exact else 0)
    return FrequencyEstimate(
        n=n,
        beta=beta,
        estimates=estimates,
        variance_bound=bound,
        half_width=chebyshev_half_width(bound, beta),
        simultaneous_half_width=chebyshev_half_width(bound, beta / covered),
        postprocessed=processed,
        intervals=interval_families(
            estimates, n, model, beta, covered, bound, counts if exact else None
        ),
        tightest=tightest_family(n, model, beta, covered if exact else 0),
        simultaneous_tightest=tightest_family(n, model, beta / covered, covered if exact else 0),
        respondents_for_ten_points=needed,
        respondents_for_ten_points_families=families,
    )


@dataclass(frozen=True, kw_only=True)
class MeanEstimate:
    """An unbiased mean with its intervals, intersected with [lo, hi]."""

    n: int
    beta: float
    mean: float
    variance_bound: float
    half_width: float
    lo: float
    hi: float
    intervals: dict[str, Interval] = field(default_factory=dict)
    tightest: str = "chebyshev"
    respondents_for_ten_points: int | None = None

    @property
    def lower(self) -> float:
        return min(max(self.mean - self.half_width, self.lo), self.hi)

    @property
    def upper(self) -> float:
        return min(max(self.mean + self.half_width, self.lo), self.hi)

    @property
    def clipped(self) -> float:
        return min(max(self.mean, self.lo), self.hi)

    @property
    def precision(self) -> str:
        half = (
            self.intervals[self.tightest].nominal_half_width if self.intervals else self.half_width
        )
        return precision(half / (self.hi - self.lo))

    def to_dict(self) -> dict[str, Any]:
        extra = [family for family in self.intervals if family != "chebyshev"]
        return {
            "n": self.n,
            "beta": self.beta,
            "mean": self.mean,
            "lower": self.lower,
            "upper": self.upper,
            "variance_bound": self.variance_bound,
            "half_width": self.half_width,
            "clipped": self.clipped,
            "lo": self.lo,
            "hi": self.hi,
            "intervals": [
                interval.describe(self.beta, None) for interval in self.intervals.values()
            ],
            "tightest": self.tightest,
            "covers": "respondents",
            "precision": self.precision,
            "uninformative": self.precision == "uninformative",
            "respondents_for_ten_points": self.respondents_for_ten_points,
            **{
                f"{family}_{end}": float(getattr(self.intervals[family], end)[0])
                for family in extra
                for end in ("lower", "upper")
            },
        }


def estimate_mean(
    mechanism: NumericMechanism, statistics: np.ndarray, n: int, *, beta: float = DEFAULT_BETA
) -> MeanEstimate:
    """The unbiased mean with every interval family valid for the mechanism."""
    beta = check_beta(beta)
    if n <= 0:
        raise InvalidParameter(f"n must be positive to estimate, got {n}")
    bound = mechanism.variance_bound(n)
    mean = float(mechanism.estimate(statistics, n)[0])
    model = score_model(mechanism)
    return MeanEstimate(
        n=n,
        beta=beta,
        mean=mean,
        variance_bound=bound,
        half_width=chebyshev_half_width(bound, beta),
        lo=mechanism.lo,
        hi=mechanism.hi,
        intervals=interval_families(np.array([mean]), n, model, beta, 1, bound),
        tightest=tightest_family(n, model, beta),
        respondents_for_ten_points=respondents_needed(model, beta),
    )
