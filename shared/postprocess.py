"""Consistency post-processing of frequency estimates.

Wang, Lopuhaä-Zwakenberg, Li, Skoric, Li, "Locally Differentially Private
Frequency Estimation with Consistency", NDSS 2020.  Each function returns a
new array that is non-negative and sums to one; none of them changes its
input.  They trade unbiasedness for lower error and cost no privacy
(post-processing, Dwork & Roth 2014 Prop. 2.1), so results always show them
beside the raw unbiased estimates, never instead of them.  The one exception,
:func:`norm_sub_within` (Norm-Sub inside given intervals), chooses the point
published inside an interval built from the unbiased estimates, which are kept
beside it as ``raw`` (``deniable.nonresponse``).
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = [
    "clip_and_renormalize",
    "iterative_bayesian_update",
    "norm_sub",
    "norm_sub_within",
    "project_to_simplex",
]


def _uniform(size: int) -> np.ndarray:
    return np.full(size, 1.0 / size)


def clip_and_renormalize(estimates: np.ndarray) -> np.ndarray:
    """Set negatives to zero, then scale to sum to one (uniform if nothing is left)."""
    clipped = np.clip(np.asarray(estimates, dtype=np.float64), 0.0, None)
    total = clipped.sum()
    return clipped / total if total > 0 else _uniform(clipped.size)


def norm_sub(estimates: np.ndarray) -> np.ndarray:
    """Norm-Sub: find δ with sum(max(f - δ, 0)) = 1 and return max(f - δ, 0)."""
    values = np.asarray(estimates, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    if np.clip(values, 0.0, None).sum() <= 1.0:
        # Only adding mass is possible: share the deficit among the positive
        # entries, which is the δ < 0 branch of the same rule.
        return _shift_to_unit_sum(values, positive_only=True)
    return _shift_to_unit_sum(values, positive_only=False)


def _shift_to_unit_sum(values: np.ndarray, *, positive_only: bool) -> np.ndarray:
    order = np.sort(values)[::-1]
    cumulative = np.cumsum(order)
    ranks = np.arange(1, values.size + 1)
    candidates = (cumulative - 1.0) / ranks
    # The largest k whose k-th value stays positive after the shift.
    valid = order - candidates > 0
    if positive_only:
        valid &= order > 0
    if not valid.any():
        return _uniform(values.size)
    k = int(np.nonzero(valid)[0].max())
    shift = candidates[k]
    result = np.clip(values - shift, 0.0, None)
    if positive_only:
        result[values <= 0] = 0.0
    total = result.sum()
    return result / total if total > 0 else _uniform(values.size)


def project_to_simplex(estimates: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (Duchi et al., ICML 2008)."""
    values = np.asarray(estimates, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    return _shift_to_unit_sum(values, positive_only=False)


# -- maximum likelihood ------------------------------------------------------------------------


def iterative_bayesian_update(counts: np.ndarray, p: float, q: float) -> np.ndarray:
    """The maximum-likelihood distribution for generalized randomized response (GRR).

    The iterative Bayesian update (Agrawal & Aggarwal, "On the Design and
    Quantification of Privacy Preserving Data Mining Algorithms", PODS 2001; for
    LDP oracles as multi-freq-ldpy's IBU, Arcolezi et al.) is an EM algorithm
    whose fixed point is the maximum-likelihood estimate; for GRR that fixed
    point has a closed form, computed here exactly instead of iterated.
    ``counts[y]`` reports of value y; each report is its true value with
    probability p and each other value with probability q < p.  The
    log-likelihood sum_y C_y log(q + (p - q) f_y) depends on the reports only
    through these counts and is concave and separable, so on the simplex its
    maximum satisfies (KKT) f_y = max(0, C_y / λ - q / (p - q)) with λ such that
    the shares sum to one: water-filling over the counts, largest first.

    The result is non-negative and sums to one.  Only for oracles whose report
    is one value (GRR, binary RR, memoized GRR): for the others the likelihood
    depends on each report, not on the support counts.
    """
    counts = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    if counts.size == 0 or counts.sum() <= 0:
        return _uniform(counts.size) if counts.size else counts.copy()
    offset = q / (p - q)
    order = np.sort(counts)[::-1]
    ranks = np.arange(1, counts.size + 1)
    scales = np.cumsum(order) / (1.0 + ranks * offset)  # λ if the top k shares are positive
    k = int(np.nonzero(order / scales > offset)[0].max())
    shares = np.clip(counts / scales[k] - offset, 0.0, None)
    return shares / shares.sum()


# -- within intervals --------------------------------------------------------------------------


def _project_with_equalities(
    values: np.ndarray, lower: np.ndarray, upper: np.ndarray, rows: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, bool]:
    """The Euclidean projection of ``values`` onto {lower <= x <= upper, rows @ x = targets}
    and whether it was found (False: the set looks empty).

    The alternating direction method of multipliers (Boyd, Parikh, Chu, Peleato, Eckstein
    2011, §5.2: x on the affine set, z in the box, x = z), polished every 20 steps as OSQP
    does (Stellato et al. 2020, §5) on the active set found so far: the entries at a bound
    held there, the others x = values - rowsᵀ λ solved exactly, kept when that meets the
    optimality conditions.
    """
    size = values.size
    inverse = np.linalg.pinv(rows @ rows.T)

    def affine(point: np.ndarray) -> np.ndarray:
        return point - rows.T @ (inverse @ (rows @ point - targets))

    z = np.clip(values, lower, upper)
    u = np.zeros(size)
    rho = 1.0
    checked, last_primal, last_rho = z, np.inf, rho
    for iteration in range(1, 5001):
        x = affine((values + rho * (z - u)) / (1 + rho))
        previous = z
        z = np.clip(x + u, lower, upper)
        u = u + x - z
        if np.abs(u).max() * rho > 1e6:  # the multipliers grow without bound: the set is empty
            return z, False
        if iteration % 20 == 0:
            polished = _polish(values, lower, upper, rows, targets, z)
            if polished is not None:
                return polished, True
            primal, dual = np.abs(x - z).max(), rho * np.abs(z - previous).max()
            settled = np.abs(z - checked).max() <= 1e-12 and primal >= 0.999 * last_primal
            if primal > 1e-9 and settled and rho == last_rho:
                return z, False  # settled apart from the affine set: the set is empty
            checked, last_primal, last_rho = z, primal, rho
            if primal > 10 * dual:  # residual balancing (Boyd et al. 2011, §3.4.1)
                rho, u = 2 * rho, u / 2
            elif dual > 10 * primal:
                rho, u = rho / 2, u * 2
    return z, False


def _polish(values, lower, upper, rows, targets, z) -> np.ndarray | None:
    """The exact projection if ``z``'s entries at a bound are the optimum's: those held, the
    others values - rowsᵀ λ meeting the equalities; None unless it is in the box, meets them
    and the held entries lean against their bound (the optimality conditions)."""
    at_lower, at_upper = np.abs(z - lower) <= 1e-9, np.abs(z - upper) <= 1e-9
    fixed = at_lower | at_upper
    polished = np.where(at_lower, lower, np.where(at_upper, upper, z))
    free = ~fixed
    rest = targets - rows[:, fixed] @ polished[fixed]
    multipliers = np.linalg.pinv(rows[:, free] @ rows[:, free].T) @ (
        rows[:, free] @ values[free] - rest
    )
    polished[free] = values[free] - rows[:, free].T @ multipliers
    pushed = values - rows.T @ multipliers
    if not ((polished >= lower).all() and (polished <= upper).all()):
        return None
    if np.abs(rows @ polished - targets).max() > 1e-12:
        return None
    lean = (pushed[at_lower & ~at_upper] <= lower[at_lower & ~at_upper] + 1e-9).all() and (
        pushed[at_upper & ~at_lower] >= upper[at_upper & ~at_lower] - 1e-9
    ).all()
    return polished if lean else None


def _shift_into_box(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The projection onto {lower <= x <= upper, Σ x = 1} (Σ lower <= 1 <= Σ upper): x =
    clip(values - δ, lower, upper), Norm-Sub's rule with the box for [0, ∞).  The sum falls
    piecewise linearly in δ, bending at values - upper and values - lower: the segment holding
    1 is found by bisection over those breakpoints, and δ on it exactly."""
    points = np.sort(np.concatenate([values - upper, values - lower]))

    def total(shift: float) -> float:
        return float(np.clip(values - shift, lower, upper).sum())

    low, high = 0, points.size - 1  # total(points[low]) >= 1 >= total(points[high])
    while high - low > 1:
        middle = (low + high) // 2
        if total(points[middle]) >= 1.0:
            low = middle
        else:
            high = middle
    left, right = points[low], points[high]
    at_left, at_right = total(left), total(right)
    shift = (
        left
        if at_left == at_right
        else left + (at_left - 1.0) / (at_left - at_right) * (right - left)
    )
    return np.clip(values - shift, lower, upper)


def _unit_sum(shares: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """The last rounding error of Σ shares = 1 onto the entries strictly inside the box."""
    free = (shares > lower) & (shares < upper)
    if free.any():
        shares = shares.copy()
        shares[free] = np.clip(
            shares[free] + (1.0 - shares.sum()) / free.sum(), lower[free], upper[free]
        )
    return shares


def norm_sub_within(
    estimates: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    equalities: tuple[tuple[np.ndarray, float], ...] = (),
    slabs: tuple[tuple[np.ndarray, float, float], ...] = (),
) -> tuple[np.ndarray, bool]:
    """A distribution near ``estimates`` inside the intervals [lower, upper], with w · x = t
    for each of ``equalities`` (else, if given, low <= w · x <= high for each of ``slabs``),
    and whether the intervals allowed one.

    Norm-Sub (Wang et al. NDSS 2020, above) with the clip at 0 replaced by the estimates' own
    intervals: the Euclidean projection onto {lower <= x <= upper, Σ x = 1} and the
    equalities (:func:`_project_with_equalities`).  Where the equalities cannot be met, the
    nearest point of the projections onto the box and the sum with the fewest slabs held at
    one of their ends that meets every slab (to 1e-12; the caller checks), or, if none does,
    the projection onto the box and the sum alone.  x is non-negative, sums to one and lies in
    every interval.  When Σ lower > 1 or Σ upper < 1 no distribution lies in every interval
    (some interval missed): the bounds [0, 1] are used instead and the second value is False.
    """
    values = np.asarray(estimates, dtype=np.float64)
    lower = np.clip(np.asarray(lower, dtype=np.float64), 0.0, 1.0)
    upper = np.clip(np.asarray(upper, dtype=np.float64), 0.0, 1.0)
    inside = bool(lower.sum() <= 1.0 <= upper.sum() and (lower <= upper).all())
    if not inside:
        lower, upper = np.zeros_like(values), np.ones_like(values)
    if values.size == 0:
        return values.copy(), inside
    ones = np.ones((1, values.size))

    def box_and_sum(x):
        return _unit_sum(_shift_into_box(x, lower, upper), lower, upper)

    if equalities:
        rows = np.vstack([ones, *[w[None, :] for w, _ in equalities]])
        targets = np.array([1.0, *[t for _, t in equalities]])
        shares, found = _project_with_equalities(values, lower, upper, rows, targets)
        if found:
            return _unit_sum(shares, lower, upper), inside
    if not slabs:
        return box_and_sum(values), inside
    # The slabs: the projection with no slab if it meets them all, else the nearest of the
    # projections with one slab held at one of its ends, else with two (the optimum holds
    # the fewest it must).
    best, distance, level = None, np.inf, 0
    # Fewest slabs held first; the first level with a point that meets every slab gives it.
    choices = sorted(itertools.product(*[(0, 1, 2) for _ in slabs]), key=np.count_nonzero)
    for held in choices:
        if best is not None and np.count_nonzero(held) > level:
            break
        level = np.count_nonzero(held)
        chosen = [(slab[0], slab[end]) for slab, end in zip(slabs, held, strict=True) if end]
        rows = np.vstack([ones, *[w[None, :] for w, _ in chosen]])
        targets = np.array([1.0, *[t for _, t in chosen]])
        shares, found = _project_with_equalities(values, lower, upper, rows, targets)
        shares = _unit_sum(shares, lower, upper)
        met = all(low - 1e-12 <= w @ shares <= high + 1e-12 for w, low, high in slabs)
        if found and met and float((shares - values) @ (shares - values)) < distance:
            best, distance = shares, float((shares - values) @ (shares - values))
    return (box_and_sum(values) if best is None else best), inside
