"""A number's (or a scale's) mean for each answer to another question: ratios of unbiased
estimates.

For a group x of the categorical question G (per-report estimate ê_G(x), see
``deniable.crosstab_statistics``) and a measured question M, two per-respondent scores
built from independent coins,

    numerator   ê_G(x)·a,   a unbiased for 1[answered M]·(value - lo),
    denominator ê_G(x)·u,   u unbiased for 1[answered M],

average to N(x) and D(x), the group's total above lo and its share among those who
answered M; the mean is lo + N/D.  Their averages are linear in the crosstab's cells and
margins (``deniable.crosstab_joint``), so (n, Σ z_G, Σ z_M, Σ z_G z_Mᵀ) suffice:

* a number everyone answered (Duchi, discrete Laplace): a = the report's w = value - lo,
  u = 1, so D is the group's share (:func:`category_means`);
* a scale of points v_0 < ... (categorical over the points and its extras): a = Σ_v (v -
  v_0) ê(v), u = 1 - Σ_e ê(e) over its extras (1 when it has none);
* a number that may go unanswered (``DuchiStatus``): u = 1 - Σ_e ê_status(e), and
  a = step·sign + (span/2)·u, since the sign estimates value - midpoint when answered and
  0 otherwise (a fair coin).

Intervals (:func:`deniable.intervals.ratio_interval`, as for shares among those who
answered in ``deniable.nonresponse``): N at β/2 and D at β/2 per group (β/(2g) each for
all g shown groups at once); on the event that both cover, probability >= 1 - β by the
union bound, and since 0 <= N <= span·D for the truth,

    lo + max(N_low, 0)/D_high <= mean <= lo + N_high/D_low   (D_low > 0),

cut to [lo, hi] (the upper end is hi when D_low <= 0).  N's and D's intervals come from
Chebyshev's and Bernstein's inequalities for independent summands: Var[ê_G·a] <= E[ê_G²]
E[a²] (independent coins), E[a²] <= Var a + top² with Var a at most a quarter of its
range's width squared (Popoviciu 1935), or the number mechanism's own variance bound; each
summand's deviation from its mean is bounded by the products of the ranges' ends
(``deniable.crosstab_joint.product_model``).  The point estimate lo + N̂/D̂ is a ratio of
unbiased estimates (consistent, not unbiased).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .crosstab_joint import (
    answered_line,
    family_bounds,
    joint_estimates,
    line_moment,
    marginal_estimates,
    product_model,
)
from .crosstab_statistics import (
    Axis,
    CrosstabStatistics,
    StatusAxis,
    linear_range,
    numeric_extent,
)
from .errors import InvalidParameter
from .estimation import DEFAULT_BETA, ScoreModel, check_beta, ratio_interval

__all__ = ["CategoryMeans", "category_means", "scale_means", "status_means"]


@dataclass(frozen=True, kw_only=True)
class CategoryMeans:
    """Mean of a question among holders of each shown category of another (module docstring).

    ``share`` is each group's share of the respondents; ``answered`` (a measured question
    that may go unanswered) the share of the respondents in the group who answered it.
    """

    n: int
    beta: float
    lo: float
    hi: float
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    simultaneous_lower: np.ndarray
    simultaneous_upper: np.ndarray
    share: np.ndarray
    numerator_family: str
    denominator_family: str
    answered: np.ndarray | None = None

    def to_dict(self, labels: list[str]) -> dict[str, Any]:
        names = ["mean", "lower", "upper", "simultaneous_lower", "simultaneous_upper", "share"]
        if self.answered is not None:
            names.append("answered")
        columns = {name: np.asarray(getattr(self, name), float).tolist() for name in names}
        among = "" if self.answered is None else " among those who answered it"
        return {
            "n": self.n,
            "beta": self.beta,
            "lo": self.lo,
            "hi": self.hi,
            "method": (
                "ratio of unbiased estimates; interval from the numerator's "
                f"({self.numerator_family}) and the share's ({self.denominator_family}) "
                "intervals at β/2 each (union bound)"
            ),
            "guarantee": (
                f"each interval covers its category's true mean{among} with probability >= "
                f"{100 * (1 - self.beta):g}%; the simultaneous ones cover all {len(labels)} at once"
            ),
            "covers": "respondents",
            "categories": [
                {"label": label, **{name: column[i] for name, column in columns.items()}}
                for i, label in enumerate(labels)
            ],
        }


def _shown(groups: Axis, shown: Sequence[int] | None) -> np.ndarray:
    chosen = np.arange(groups.size) if shown is None else np.asarray(shown, dtype=np.int64)
    if chosen.size == 0 or chosen.min() < 0 or chosen.max() >= groups.size:
        raise InvalidParameter("the groups shown must be categories of the grouping question")
    return chosen


def _means(
    n: int,
    beta: float,
    lo: float,
    span: float,
    totals: tuple[np.ndarray, ScoreModel],
    shares: tuple[np.ndarray, ScoreModel],
    group_share: np.ndarray,
    answered: np.ndarray | None,
) -> CategoryMeans:
    """lo + N/D per group with the ratio intervals of the module docstring."""
    (total, total_model), (share, share_model) = totals, shares
    groups = len(total)
    n_low, n_high, ns_low, ns_high, total_family = family_bounds(
        total, n, total_model, beta / 2, groups
    )
    d_low, d_high, ds_low, ds_high, share_family = family_bounds(
        share, n, share_model, beta / 2, groups
    )
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        lower, upper = ratio_interval(n_low, n_high, d_low, d_high, span)
        simultaneous_lower, simultaneous_upper = ratio_interval(
            ns_low, ns_high, ds_low, ds_high, span
        )
        mean = lo + np.clip(np.where(share > 0, total / share, np.nan), 0.0, span)
        within = None
        if answered is not None:
            within = np.where(group_share > 0, np.clip(share / group_share, 0.0, 1.0), np.nan)
    return CategoryMeans(
        n=n,
        beta=beta,
        lo=lo,
        hi=lo + span,
        mean=mean,
        lower=lo + lower,
        upper=lo + upper,
        simultaneous_lower=lo + simultaneous_lower,
        simultaneous_upper=lo + simultaneous_upper,
        share=group_share,
        numerator_family=total_family,
        denominator_family=share_family,
        answered=within,
    )


def category_means(
    categories: Axis,
    numeric: Axis,
    statistics: CrosstabStatistics,
    *,
    beta: float = DEFAULT_BETA,
    shown: Sequence[int] | None = None,
) -> CategoryMeans:
    """Mean of a number everyone answered, by category, with conservative intervals (module
    docstring); ``statistics`` has the categorical question as rows and the numeric one as its
    single column, ``shown`` the categories published (default all)."""
    beta = check_beta(beta)
    if categories.numeric or not numeric.numeric or isinstance(numeric, StatusAxis):
        raise InvalidParameter("category_means needs a categorical and a numeric question")
    chosen = _shown(categories, shown)
    n, span = statistics.n, numeric.span
    totals = joint_estimates(categories, numeric, statistics)[:, 0]  # N̂: Σ ê_A(x) w / n
    shares = marginal_estimates(categories, statistics.rows, n)  # D̂
    second, w_low, w_high = numeric_extent(numeric)
    m0, m1 = categories.second_moments
    worst = max(m0, m1) * second  # E[ê_A²] E[w²] >= each respondent's variance
    deviation = None
    if w_low is not None:
        ends = [x * y for x in categories.range for y in (w_low, w_high)]
        deviation = max(max(ends), span - min(ends))
    total_model = ScoreModel(slope=1.0, c0=worst, deviation=deviation, high=span)
    return _means(
        n,
        beta,
        numeric.origin,
        span,
        (totals[chosen], total_model),
        (shares[chosen], categories.model),
        shares[chosen],
        None,
    )


def _line_means(
    groups: Axis,
    measure: Axis,
    statistics: CrosstabStatistics,
    numerator: tuple[np.ndarray, float],
    denominator: tuple[np.ndarray, float],
    lo: float,
    span: float,
    beta: float,
    shown: Sequence[int] | None,
    moment: float | None = None,
) -> CategoryMeans:
    """lo + N/D with a = numerator·ê + c and u = denominator·ê + c (module docstring);
    ``moment``: a tighter bound on E[a²] when the caller knows one."""
    beta = check_beta(beta)
    if groups.numeric:
        raise InvalidParameter("means by category need a categorical grouping question")
    chosen = _shown(groups, shown)
    n = statistics.n
    joint = joint_estimates(groups, measure, statistics)
    group_share = marginal_estimates(groups, statistics.rows, n)
    (wa, ca), (wu, cu) = numerator, denominator
    m0, m1 = groups.second_moments
    group = (groups.range, max(m0, m1))
    total = joint @ wa + ca * group_share
    a_range, a_moment = line_moment(measure, wa, ca, span)
    total_model = product_model(group, (a_range, min(a_moment, moment or a_moment)), span)
    if np.any(wu):
        share = joint @ wu + cu * group_share
        share_model = product_model(group, line_moment(measure, wu, cu, 1.0), 1.0)
        answered = group_share[chosen]
    else:  # everyone answered: D is the group's share, with its own (tighter) model
        share, share_model, answered = group_share, groups.model, None
    return _means(
        n,
        beta,
        lo,
        span,
        (total[chosen], total_model),
        (share[chosen], share_model),
        group_share[chosen],
        answered,
    )


def scale_means(
    groups: Axis,
    scale: Axis,
    statistics: CrosstabStatistics,
    *,
    points: Sequence[int],
    extras: int,
    beta: float = DEFAULT_BETA,
    shown: Sequence[int] | None = None,
) -> CategoryMeans:
    """Mean point of a scale (its ``points``, then ``extras`` non-response values) among those
    who answered it, by category of ``groups`` (module docstring)."""
    if scale.numeric or scale.size != len(points) + extras:
        raise InvalidParameter("scale_means needs a scale question's categorical reports")
    first = float(points[0])
    weights = np.array([float(p) - first for p in points] + [0.0] * extras)
    return _line_means(
        groups,
        scale,
        statistics,
        (weights, 0.0),
        answered_line(scale, extras),
        first,
        float(points[-1]) - first,
        beta,
        shown,
    )


def status_means(
    groups: Axis,
    number: StatusAxis,
    statistics: CrosstabStatistics,
    *,
    beta: float = DEFAULT_BETA,
    shown: Sequence[int] | None = None,
) -> CategoryMeans:
    """Mean of a number that may go unanswered, among those who answered it, by category of
    ``groups`` (module docstring: a = step·sign + (span/2)·u).

    The sign and the status are independent coins, so Var a = step² Var(sign) + (span/2)²
    Var u <= step² + (span/2)² w_u²/4 (w_u the width of u's range, Popoviciu) and
    E[a²] <= that + span².
    """
    if not isinstance(number, StatusAxis):
        raise InvalidParameter("status_means needs an optional or conditional number")
    extras = number.statuses - 1
    u_weights, u_constant = answered_line(number, extras)
    half = number.span / 2
    a_weights = half * u_weights
    a_weights[0] = 1.0
    step = 1.0 / float(number.slope[0])
    u_low, u_high = linear_range(number, u_weights)
    moment = step**2 + (half * (u_high - u_low)) ** 2 / 4 + number.span**2
    return _line_means(
        groups,
        number,
        statistics,
        (a_weights, half * u_constant),
        (u_weights, u_constant),
        number.origin,
        number.span,
        beta,
        shown,
        moment,
    )
