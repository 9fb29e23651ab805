"""Confidence intervals for frequencies and means: every family, assembled into results.

The families themselves (score models, Chebyshev, exact-variance Chebyshev,
Bernstein, the choice of the tightest) live in :mod:`deniable.intervals`; their
names are re-exported here, where callers have always imported them.  The
exact tail (:mod:`deniable.exact_tail`) is added where it is published.

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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import exact_tail, noised, postprocess
from .errors import InvalidParameter
from .intervals import (  # noqa: F401  (re-exported: callers import these from here)
    DEFAULT_BETA,
    EXACT_TAIL,
    FAMILIES,
    METHODS,
    ScoreModel,
    available_families,
    bernstein_interval,
    bernstein_terms,
    chebyshev_exact_interval,
    chebyshev_half_width,
    check_beta,
    family_interval,
    nominal_half_width,
    ratio_interval,
    score_model,
    smallest_passing,
    tightest_family,
)
from .mechanisms.base import NumericMechanism
from .noised import DummyNoise

__all__ = [
    "EXACT_FIGURE_MAX_N",
    "FrequencyEstimate",
    "Interval",
    "MeanEstimate",
    "estimate_frequencies",
    "estimate_mean",
    "interval_families",
    "interval_summary",
    "primary_interval",
]

# Interval half-widths (in units of the estimand's range) at which results say so in words.
UNINFORMATIVE_HALF_WIDTH = 0.5
PRECISE_HALF_WIDTH = 0.1


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
    return smallest_passing(lambda n: width(n) <= target, low, high)


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

    # the tightest family is never wider than the closed forms, so ``closed`` passes
    return smallest_passing(reaches, 1, closed), "tightest"


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


def interval_summary(estimate: Any, categories: int) -> dict[str, Any]:
    """The members every estimate of ``categories`` shares (a question's, a crosstab's) leads with.

    ``estimate`` has ``n``, ``beta``, ``variance_bound``, the two Chebyshev
    half-widths, ``intervals`` and the two tightest families' names.
    """
    return {
        "n": estimate.n,
        "beta": estimate.beta,
        "variance_bound": estimate.variance_bound,
        "half_width": estimate.half_width,
        "simultaneous_half_width": estimate.simultaneous_half_width,
        "intervals": [
            interval.describe(estimate.beta, categories) for interval in estimate.intervals.values()
        ],
        "tightest": estimate.tightest,
        "simultaneous_tightest": estimate.simultaneous_tightest,
        "covers": "respondents",
    }


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
            **interval_summary(self, categories),
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
    noise: DummyNoise | None = None,
) -> FrequencyEstimate:
    """Raw unbiased estimates, every interval family, and post-processed estimates.

    ``oracle`` is a frequency oracle or :class:`OptionSampling` (``counts`` are its
    statistics).  ``categories`` is how many estimates the simultaneous guarantee
    covers (the domain size by default).  ``normalize`` adds the three
    consistency post-processings; they only make sense when the categories
    partition the population (single choice), not for independent yes/no options.
    For GRR (and binary RR) it adds the maximum-likelihood estimate ``ibu`` too.
    ``exact=False`` leaves out the exact-tail family (simulations of the others).

    ``noise``: the relay's dummies inside ``counts`` (``deniable.noised``); n is then the
    real reports only.  The estimates subtract the dummies' mean, every family adds their
    variance, and the exact tail convolves with their law.
    """
    beta = check_beta(beta)
    if n <= 0:
        raise InvalidParameter(f"n must be positive to estimate, got {n}")
    debiased = noised.debiased_statistics(oracle, counts, noise)
    estimates = oracle.estimate(debiased, n)
    bound = oracle.variance_bound(n)
    if noise is not None:
        bound += float(noised.added_variance(oracle, n, noise).max())
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
    if normalize and oracle.direct_encoding:
        # The maximum-likelihood estimate, where the likelihood depends on the counts only
        # (a report is one value: the counts are multinomial).
        # with dummies, of the debiased counts (clipped at 0 there): a post-processing
        processed["ibu"] = postprocess.iterative_bayesian_update(
            debiased, oracle.p_star, oracle.q_star
        )
    model = noised.noised_score_model(oracle, n, noise)
    if noise is None:
        needed, families = tightest_respondents_needed(model, beta, covered if exact else 0)
    else:
        needed = noised.respondents_needed(
            oracle, noise, beta, covered if exact else 0, PRECISE_HALF_WIDTH
        )
        families = "tightest"
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
    mechanism: NumericMechanism,
    statistics: np.ndarray,
    n: int,
    *,
    beta: float = DEFAULT_BETA,
    noise: DummyNoise | None = None,
) -> MeanEstimate:
    """The unbiased mean with every interval family valid for the mechanism (with the
    relay's dummies, ``noise``, subtracted and their variance added: ``deniable.noised``)."""
    beta = check_beta(beta)
    if n <= 0:
        raise InvalidParameter(f"n must be positive to estimate, got {n}")
    bound = mechanism.variance_bound(n)
    mean = float(mechanism.estimate(noised.debiased_statistics(mechanism, statistics, noise), n)[0])
    if noise is not None:
        bound += float(noised.added_variance(mechanism, n, noise).max())
    model = noised.noised_score_model(mechanism, n, noise)
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
        respondents_for_ten_points=(
            respondents_needed(model, beta)
            if noise is None
            else noised.respondents_needed(mechanism, noise, beta, 0, PRECISE_HALF_WIDTH)
        ),
    )


def primary_interval(item: dict[str, Any], family: str, simultaneous: str | None) -> dict[str, Any]:
    """``item`` (a category, or a mean) with ``lower``/``upper`` the ``family``'s bounds.

    The estimators' own ``lower``/``upper`` are Chebyshev's; they move to ``chebyshev_*``.
    """
    ends = ("lower", "upper") + (
        ("simultaneous_lower", "simultaneous_upper") if simultaneous is not None else ()
    )
    chebyshev = {f"chebyshev_{end}": item[end] for end in ends}
    published: dict[str, Any] = {}
    for key, value in item.items():
        published[key] = value
        if key == ends[-1]:
            published.update(chebyshev)  # the families' columns follow the primary ones
    for end in ends:
        chosen = family if not end.startswith("simultaneous_") else str(simultaneous)
        published[end] = published.get(f"{chosen}_{end}", item[end])
    return published
