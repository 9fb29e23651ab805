"""Consistency post-processing of frequency estimates.

Wang, Lopuhaä-Zwakenberg, Li, Skoric, Li, "Locally Differentially Private
Frequency Estimation with Consistency", NDSS 2020.  Each function returns a
new array that is non-negative and sums to one; none of them changes its
input.  They trade unbiasedness for lower error and cost no privacy
(post-processing, Dwork & Roth 2014 Prop. 2.1), so results always show them
beside the raw unbiased estimates, never instead of them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["clip_and_renormalize", "iterative_bayesian_update", "norm_sub", "project_to_simplex"]


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
