"""Differences of two published estimates, with intervals that keep their guarantee.

An estimate here is a :class:`Figure`: the value, a bound V on its variance
valid for every truth, and b, a bound on how far one independent summand
(one respondent's contribution) can move it from its mean.  For the
difference D = θ̂₁ - θ̂₂ of two such estimates:

* ``independent`` (two surveys with the same question, or two different
  respondent sets): Var D = V₁ + V₂, and D is a sum of independent summands
  each bounded by max(b₁, b₂).
* ``nonnegative`` (two waves of a memoized longitudinal question): a device's
  two reports share its permanent randomized response (RAPPOR, Erlingsson et
  al. 2014) and are otherwise independent, so for one category both are the
  same function of it and their covariance is Var E[· | permanent] >= 0;
  Var D <= V₁ + V₂, and a device's summand is bounded by b₁ + b₂.
* ``any`` (two cells of one crosstab, same respondents): Var D <= (√V₁ + √V₂)²
  (Cauchy–Schwarz), summands bounded by b₁ + b₂.

Families (formula sheet; Bernstein 1927, Boucheron–Lugosi–Massart 2013,
Thm 2.10): ``chebyshev`` D ± sqrt(V/β); ``bernstein`` D ± (sqrt(2 V L) + b L/3)
with L = ln(2/β).  Claims made together (k differences) use β/k each (union
bound).  Both are valid for every n and every truth; the published one
(``tightest``) is chosen from V, b and β only, never from the data.

A question whose relay added dummy reports (``deniable.noised``) enters with the
dummies' mean subtracted, their variance added to V, and b the largest of a
respondent's and a dummy count's deviation (each dummy count is one more
independent summand), n its real respondents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameter
from .estimation import DEFAULT_BETA, check_beta

__all__ = ["Figure", "cell_figure", "compare_question", "difference", "frequency_figures"]

DEPENDENCE = ("independent", "nonnegative", "any")


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One estimate: value, variance bound (every truth), summand bound (None: unbounded)."""

    value: float
    variance_bound: float
    deviation: float | None
    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True, kw_only=True)
class Difference:
    """θ̂₁ - θ̂₂ with its half-widths at β (per claim, after the union bound over ``claims``)."""

    value: float
    beta: float
    claims: int
    dependence: str
    variance_bound: float
    half_widths: dict[str, float]
    tightest: str
    span: float

    @property
    def half_width(self) -> float:
        return self.half_widths[self.tightest]

    @property
    def lower(self) -> float:
        return max(self.value - self.half_width, -self.span)

    @property
    def upper(self) -> float:
        return min(self.value + self.half_width, self.span)

    def sentence(
        self, unit: str = "points", scale: float = 100.0, digits: int = 0, verb: str = "changed"
    ) -> str:
        """'changed by +6 points (±4)', and says so when the interval holds 0."""
        value = f"{self.value * scale:+.{digits}f}"
        if float(value) == 0:  # no "-0": a change that rounds to nothing has no sign
            value = f"{0:.{digits}f}"
        value += f" {unit}" if unit else ""
        change = f"{verb} by {value} (±{self.half_width * scale:.{digits}f})"
        if self.lower <= 0.0 <= self.upper:
            return (
                change
                + ", not distinguishable from no "
                + ("change" if verb == "changed" else "difference")
            )
        return change

    def to_dict(self) -> dict[str, Any]:
        return {
            "difference": self.value,
            "lower": self.lower,
            "upper": self.upper,
            "half_width": self.half_width,
            "half_widths": dict(self.half_widths),
            "tightest": self.tightest,
            "beta": self.beta,
            "claims": self.claims,
            "dependence": self.dependence,
            "variance_bound": self.variance_bound,
            "significant": not (self.lower <= 0.0 <= self.upper),
            "guarantee": (
                f"covers the true difference with probability >= {100 * (1 - self.beta):g}%"
                + (f", all {self.claims} claims at once (union bound)" if self.claims > 1 else "")
                + "; for every n, no normal approximation"
            ),
        }


def difference(
    first: Figure,
    second: Figure,
    *,
    dependence: str = "independent",
    beta: float = DEFAULT_BETA,
    claims: int = 1,
) -> Difference:
    """The difference first - second with Chebyshev and Bernstein half-widths (module docstring)."""
    beta = check_beta(beta)
    if dependence not in DEPENDENCE:
        raise InvalidParameter(f"dependence must be one of {', '.join(DEPENDENCE)}")
    if claims < 1:
        raise InvalidParameter(f"claims must be at least 1, got {claims}")
    level = beta / claims
    v1, v2 = first.variance_bound, second.variance_bound
    variance = (math.sqrt(v1) + math.sqrt(v2)) ** 2 if dependence == "any" else v1 + v2
    widths = {"chebyshev": math.sqrt(variance / level)}
    if first.deviation is not None and second.deviation is not None:
        b = (
            max(first.deviation, second.deviation)
            if dependence == "independent"
            else first.deviation + second.deviation
        )
        log_term = math.log(2.0 / level)
        widths["bernstein"] = math.sqrt(2.0 * variance * log_term) + b * log_term / 3.0
    tightest = min(widths, key=lambda family: (widths[family], family != "chebyshev"))
    span = max(first.high - second.low, second.high - first.low)
    return Difference(
        value=first.value - second.value,
        beta=beta,
        claims=claims,
        dependence=dependence,
        variance_bound=variance,
        half_widths=widths,
        tightest=tightest,
        span=span,
    )


def frequency_figures(oracle: Any, counts: Any, n: int, noise: Any = None) -> list[Figure]:
    """A :class:`Figure` per category of one question's results (any categorical oracle;
    ``noise``: the relay's dummies in ``counts``, a :class:`deniable.noised.DummyNoise`)."""
    from .noised import added_variance, debiased_statistics, noised_score_model

    model = noised_score_model(oracle, n, noise)
    estimates = oracle.estimate(debiased_statistics(oracle, counts, noise), n)
    bound = oracle.variance_bound(n)
    if noise is not None:
        bound += float(added_variance(oracle, n, noise).max())
    deviation = None if model.deviation is None else model.deviation / (n * model.slope)
    return [Figure(value=float(v), variance_bound=bound, deviation=deviation) for v in estimates]


def mean_figure(mechanism: Any, statistics: Any, n: int, noise: Any = None) -> Figure:
    """The :class:`Figure` of one numeric question's mean (in its units)."""
    from .noised import added_variance, debiased_statistics, noised_score_model

    model = noised_score_model(mechanism, n, noise)
    mean = float(mechanism.estimate(debiased_statistics(mechanism, statistics, noise), n)[0])
    bound = mechanism.variance_bound(n)
    if noise is not None:
        bound += float(added_variance(mechanism, n, noise).max())
    deviation = None
    if model.deviation is not None:
        deviation = model.scale * model.deviation / (n * model.slope)
    return Figure(
        value=mean,
        variance_bound=bound,
        deviation=deviation,
        low=mechanism.lo,
        high=mechanism.hi,
    )


def cell_figure(estimate: Any, row: int, column: int, deviation: float) -> Figure:
    """A crosstab cell as a :class:`Figure` (``deviation``: the cell model's, in score units)."""
    return Figure(
        value=float(estimate.estimates[row, column]),
        variance_bound=estimate.variance_bound,
        deviation=deviation / estimate.n,
    )


def question_figures(question: Any, statistics: Any, n: int, noise: Any = None) -> list[Figure]:
    """One :class:`Figure` per published estimate of a survey question."""
    oracle = question.oracle
    if question.type == "numeric":
        return [mean_figure(oracle, statistics, n, noise)]
    return frequency_figures(getattr(oracle, "option_oracle", oracle), statistics, n, noise)


def compare_question(
    first: Any,
    first_statistics: Any,
    first_n: int,
    second: Any,
    second_statistics: Any,
    second_n: int,
    *,
    beta: float = DEFAULT_BETA,
    noises: tuple[Any, Any] = (None, None),
) -> dict[str, Any]:
    """Each estimate of ``second`` minus ``first`` (two waves, or two surveys), with intervals.

    ``noises``: each side's relay dummies (:class:`deniable.noised.DummyNoise` or None),
    with ``first_n``/``second_n`` the real respondents.

    Two waves of one memoized longitudinal question (the same key) are
    ``nonnegative``ly dependent; any other pair ``independent``.  ``comparisons``
    is None while either has no reports; per category ``simultaneous_*`` holds
    for every category at once (union bound).
    """
    beta = check_beta(beta)
    if first.type != second.type or first.labels != second.labels:
        raise InvalidParameter(
            f"questions {first.id!r} and {second.id!r} differ in type or options"
        )
    if first.type == "numeric" and (first.lo, first.hi) != (second.lo, second.hi):
        raise InvalidParameter("numeric questions must share their range to be compared")
    memoized = (
        first.longitudinal is not None
        and second.longitudinal is not None
        and first.longitudinal.key == second.longitudinal.key
    )
    dependence = "nonnegative" if memoized else "independent"
    if first_n == 0 or second_n == 0:
        return {"dependence": dependence, "comparisons": None}
    before = question_figures(first, first_statistics, first_n, noises[0])
    after = question_figures(second, second_statistics, second_n, noises[1])
    numeric = first.type == "numeric"
    rows = []
    for label, old, new in zip(first.labels, before, after, strict=True):
        single = difference(new, old, dependence=dependence, beta=beta)
        together = difference(new, old, dependence=dependence, beta=beta, claims=len(before))
        sentence = single.sentence(unit="", scale=1.0, digits=2) if numeric else single.sentence()
        rows.append(
            {
                "label": label,
                "first": old.value,
                "second": new.value,
                **single.to_dict(),
                "simultaneous_lower": together.lower,
                "simultaneous_upper": together.upper,
                "sentence": sentence,
            }
        )
    return {"dependence": dependence, "comparisons": rows}
