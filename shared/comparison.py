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

**Questions with non-response, and scales** (:func:`compare_answered`).  Their published
figures are ratios of unbiased estimates (``deniable.nonresponse``: each share among those
who answered, the declined share among those asked, the not-applicable share, a scale's
mean and NPS, a number's mean among those who answered), whose intervals come from the
union bound (:func:`deniable.intervals.ratio_interval`), not from a variance.  Each wave's
figure θ_w is published with an interval [L_w, U_w] that covers it with probability
>= 1 - β/2; on the event that both cover, probability >= 1 - β by the union bound,

    θ₂ - θ₁ ∈ [L₂ - U₁, U₂ - L₁],

whatever the dependence between the waves (the union bound needs none).  The
simultaneous columns take each wave's simultaneous intervals at β/2, which cover every
figure of that wave at once, so every difference's simultaneous interval covers at once
with probability >= 1 - β.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameter
from .estimation import DEFAULT_BETA, check_beta

__all__ = [
    "Figure",
    "cell_figure",
    "comparable",
    "compare_answered",
    "compare_question",
    "difference",
    "frequency_figures",
    "interval_sentence",
]

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


def comparable(first: Any, second: Any) -> bool:
    """Whether :func:`compare_question` compares these two questions: the same type and
    options (a number: the same range)."""
    if first.type != second.type or first.base_labels != second.base_labels:
        return False
    return first.type != "numeric" or (first.lo, first.hi) == (second.lo, second.hi)


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
    if first.type != second.type or first.base_labels != second.base_labels:
        raise InvalidParameter(
            f"questions {first.id!r} and {second.id!r} differ in type or options"
        )
    if not comparable(first, second):
        raise InvalidParameter("numeric questions must share their range to be compared")
    memoized = (
        first.longitudinal is not None
        and second.longitudinal is not None
        and first.longitudinal.key == second.longitudinal.key
    )
    dependence = "nonnegative" if memoized else "independent"
    if first_n == 0 or second_n == 0:
        return {"dependence": dependence, "comparisons": None}
    if first.extras or second.extras or first.type == "scale":
        rows = compare_answered(
            first,
            first_statistics,
            first_n,
            second,
            second_statistics,
            second_n,
            beta=beta,
            noises=noises,
        )
        return {"dependence": dependence, "method": "union", "comparisons": rows}
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


# -- questions with non-response and scales: the union of two published intervals ---------------


def interval_sentence(
    value: float,
    lower: float,
    upper: float,
    *,
    unit: str = "points",
    scale: float = 100.0,
    digits: int = 0,
) -> str:
    """'changed by +6 points (from +1 to +12)', and says so when the interval holds 0."""

    def signed(number: float) -> str:
        text = f"{number * scale:+.{digits}f}"
        return f"{0:.{digits}f}" if float(text) == 0 else text  # no "-0"

    words = f" {unit}" if unit else ""
    change = f"changed by {signed(value)}{words} (from {signed(lower)} to {signed(upper)})"
    if lower <= 0.0 <= upper:
        return change + ", not distinguishable from no change"
    return change


def _published_rows(
    question: Any, statistics: Any, n: int, level: float, noise: Any = None
) -> dict[str, dict]:
    """Each published figure of one wave at ``level``: label -> the nonresponse row (``noise``:
    the relay's dummies in ``statistics``, taken out as the published results take them)."""
    from .estimation import estimate_mean
    from .nonresponse import nonresponse_results

    if question.type == "numeric" and not question.extras:
        mean = estimate_mean(question.oracle, statistics, n, beta=level, noise=noise)
        chosen = mean.intervals[mean.tightest]  # one figure: its own interval is simultaneous
        row = {
            "label": "mean",
            "share_of": "answered",
            "estimate": float(mean.mean),
            "lower": float(chosen.lower[0]),
            "upper": float(chosen.upper[0]),
            "simultaneous_lower": float(chosen.lower[0]),
            "simultaneous_upper": float(chosen.upper[0]),
        }
        return {"mean": row}
    result = nonresponse_results(question, statistics, n, level, noise)
    return {row["label"]: row for row in result["categories"]}


def compare_answered(
    first: Any,
    first_statistics: Any,
    first_n: int,
    second: Any,
    second_statistics: Any,
    second_n: int,
    *,
    beta: float = DEFAULT_BETA,
    noises: tuple[Any, Any] = (None, None),
) -> list[dict[str, Any]]:
    """Each published figure of ``second`` minus ``first`` (module docstring: each wave's
    interval at β/2, the union bound); the figures both waves publish, in ``second``'s order.
    A figure that one wave could not estimate (nobody answered) has no difference (None).
    ``noises``: each wave's relay dummies (taken out by the published rows themselves)."""
    beta = check_beta(beta)
    before = _published_rows(first, first_statistics, first_n, beta / 2, noises[0])
    after = _published_rows(second, second_statistics, second_n, beta / 2, noises[1])
    rows = []
    for label, new in after.items():
        old = before.get(label)
        if old is None:
            continue
        point = label == "mean" or label == "nps"
        unit = "points" if label == "nps" or not point else ""
        scale, digits = (1.0, 0) if label == "nps" else (1.0, 2) if point else (100.0, 0)
        span = {"nps": 200.0}.get(label, 1.0)
        if label == "mean":
            span = (
                float(second.hi - second.lo)
                if second.type == "numeric"
                else float(len(second.base_labels) - 1)
            )
        row: dict[str, Any] = {
            "label": label,
            "share_of": new.get("share_of", "answered"),
            "first": old["estimate"],
            "second": new["estimate"],
            "tightest": "ratio",
            "beta": beta,
            "claims": 1,
            "half_width": None,
        }
        if old["estimate"] is None or new["estimate"] is None:
            nothing = ("difference", "lower", "upper", "simultaneous_lower", "simultaneous_upper")
            rows.append(
                {
                    **row,
                    **dict.fromkeys(nothing),
                    "significant": False,
                    "sentence": "no estimate in one of the surveys (too few answered)",
                }
            )
            continue
        value = new["estimate"] - old["estimate"]
        lower = max(new["lower"] - old["upper"], -span)
        upper = min(new["upper"] - old["lower"], span)
        s_lower = max(new["simultaneous_lower"] - old["simultaneous_upper"], -span)
        s_upper = min(new["simultaneous_upper"] - old["simultaneous_lower"], span)
        rows.append(
            {
                **row,
                "difference": value,
                "lower": lower,
                "upper": upper,
                "simultaneous_lower": s_lower,
                "simultaneous_upper": s_upper,
                "significant": not (lower <= 0.0 <= upper),
                "guarantee": (
                    f"covers the true difference with probability >= {100 * (1 - beta):g}% "
                    "(each wave's interval at half the error probability, union bound); for "
                    "every n, no normal approximation"
                ),
                "sentence": interval_sentence(
                    value, lower, upper, unit=unit, scale=scale, digits=digits
                ),
            }
        )
    return rows
