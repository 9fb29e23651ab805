"""Consistency post-processing: valid distributions, inputs untouched, known optima."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from deniable import postprocess

METHODS = [
    postprocess.clip_and_renormalize,
    postprocess.norm_sub,
    postprocess.project_to_simplex,
]
estimates = arrays(
    np.float64, st.integers(1, 40), elements=st.floats(-3, 3, allow_nan=False, width=64)
)


@pytest.mark.parametrize("method", METHODS)
@given(values=estimates)
@settings(max_examples=200, deadline=None)
def test_result_is_a_distribution_and_input_is_untouched(method, values) -> None:
    before = values.copy()
    result = method(values)
    assert np.array_equal(values, before)
    assert result.shape == values.shape
    assert np.all(result >= 0)
    assert result.sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_a_distribution_is_left_as_it_is(method) -> None:
    values = np.array([0.1, 0.2, 0.3, 0.4])
    assert np.allclose(method(values), values)


@given(values=estimates)
@settings(max_examples=200, deadline=None)
def test_projection_is_the_nearest_point_of_the_simplex(values) -> None:
    projected = postprocess.project_to_simplex(values)
    # Optimality (KKT): every coordinate kept positive is shifted by the same
    # constant, and every zeroed coordinate lies at or below that shift.
    positive = projected > 1e-12
    shifts = values[positive] - projected[positive]
    assert np.ptp(shifts) < 1e-9
    assert np.all(values[~positive] <= shifts[0] + 1e-9)


def test_norm_sub_adds_a_deficit_only_to_positive_estimates() -> None:
    result = postprocess.norm_sub(np.array([0.5, 0.2, -0.1, -0.05]))
    # The deficit 0.3 is shared equally by the two positive entries.
    assert np.allclose(result, [0.65, 0.35, 0.0, 0.0])


def test_norm_sub_subtracts_a_surplus_and_clips() -> None:
    result = postprocess.norm_sub(np.array([0.9, 0.5, 0.05, -0.2]))
    assert np.allclose(result, [0.7, 0.3, 0.0, 0.0])


def test_clip_and_renormalize_scales_positive_part() -> None:
    assert np.allclose(
        postprocess.clip_and_renormalize(np.array([0.6, 0.6, -0.4])), [0.5, 0.5, 0.0]
    )
    assert np.allclose(postprocess.clip_and_renormalize(np.array([-1.0, -2.0])), [0.5, 0.5])


# -- the maximum-likelihood estimate (IBU's fixed point) ---------------------------------------


def _ibu_iterations(counts, p, q, rounds):
    """Agrawal & Aggarwal's iterative Bayesian update, iterated plainly (the reference)."""
    counts = np.asarray(counts, dtype=np.float64)
    shares = np.full(counts.size, 1.0 / counts.size)
    for _ in range(rounds):
        weights = counts / counts.sum() / (q + (p - q) * shares)
        shares = shares * (q * weights.sum() + (p - q) * weights)
        shares /= shares.sum()
    return shares


@given(
    counts=arrays(np.int64, st.integers(2, 12), elements=st.integers(0, 60)),
    epsilon=st.floats(0.2, 4.0),
)
@settings(max_examples=60, deadline=None)
def test_ibu_is_the_em_fixed_point_and_the_likelihood_maximum(counts, epsilon) -> None:
    from deniable.mechanisms import GRR

    if counts.sum() == 0:
        counts = counts + 1
    oracle = GRR(epsilon=epsilon, domain_size=counts.size)
    p, q = oracle.p_star, oracle.q_star
    shares = postprocess.iterative_bayesian_update(counts, p, q)
    assert np.all(shares >= 0) and shares.sum() == pytest.approx(1.0, abs=1e-12)
    # KKT conditions of max sum C_y log(q + (p - q) f_y) on the simplex: the gradient is one
    # value λ on the support and at most λ off it.
    gradient = counts * (p - q) / (q + (p - q) * shares)
    positive = shares > 1e-12
    level = gradient[positive].mean()
    assert np.allclose(gradient[positive], level, rtol=1e-9)
    assert np.all(gradient[~positive] <= level * (1 + 1e-9))
    # And it is IBU's fixed point: one more update leaves it where it is.
    weights = counts / counts.sum() / (q + (p - q) * shares)
    again = shares * (q * weights.sum() + (p - q) * weights)
    assert np.allclose(again / again.sum(), shares, rtol=0, atol=1e-9)


def test_plain_ibu_iterations_go_to_the_closed_form() -> None:
    from deniable.mechanisms import GRR

    oracle = GRR(epsilon=2.0, domain_size=5)
    counts = np.array([40, 3, 0, 17, 40])
    shares = postprocess.iterative_bayesian_update(counts, oracle.p_star, oracle.q_star)
    iterated = _ibu_iterations(counts, oracle.p_star, oracle.q_star, 20_000)
    assert np.allclose(iterated, shares, atol=1e-4)
    assert shares[2] == 0.0 and shares[1] < 0.05  # on the boundary where the raw is negative


def test_ibu_is_published_for_grr_and_binary_rr_only() -> None:
    from deniable.estimation import estimate_frequencies
    from deniable.mechanisms import CATEGORICAL, BinaryRR

    for name, cls in sorted(CATEGORICAL.items()):
        oracle = BinaryRR(epsilon=1.0) if name == "binary_rr" else cls(epsilon=1.0, domain_size=4)
        d = oracle.domain_size
        counts = np.arange(1, d + 1) * 5
        result = estimate_frequencies(oracle, counts, int(counts.sum()), exact=False)
        assert ("ibu" in result.postprocessed) == (name in ("grr", "binary_rr")), name
        if "ibu" in result.postprocessed:
            assert np.array_equal(result.estimates, oracle.estimate(counts, int(counts.sum())))
            assert "ibu" in result.to_dict()["categories"][0]


# -- Norm-Sub within the intervals (deniable.nonresponse's published shares) -----------------


def _kkt_residual(values, shares, lower, upper, rows) -> float:
    """How far ``shares`` is from the projection onto {lower <= x <= upper, rows @ x = t}: at
    the optimum, values - shares on the entries strictly inside the box lies in the span of
    the rows (x = clip(values - rowsᵀ λ, lower, upper)), and the clipped entries lean the
    right way."""
    free = (shares > lower + 1e-12) & (shares < upper - 1e-12)
    gap = values - shares
    if not free.any():
        return 0.0
    lam = np.linalg.lstsq(rows[:, free].T, gap[free], rcond=None)[0]
    residual = float(np.abs(rows[:, free].T @ lam - gap[free]).max())
    pushed = values - rows.T @ lam
    at_low, at_high = shares <= lower + 1e-12, shares >= upper - 1e-12
    residual = max(
        residual,
        float(np.clip(pushed[at_low & ~free] - lower[at_low & ~free], 0, None).max(initial=0)),
    )
    return max(
        residual,
        float(np.clip(upper[at_high & ~free] - pushed[at_high & ~free], 0, None).max(initial=0)),
    )


@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(2, 12),
)
@settings(max_examples=200, deadline=None)
def test_norm_sub_within_is_the_nearest_distribution_inside_the_intervals(seed, size) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.dirichlet(np.ones(size))
    values = truth + rng.normal(0, 0.1, size)
    half = rng.uniform(0.0, 0.3, size)
    lower, upper = np.clip(truth - half, 0, 1), np.clip(truth + half, 0, 1)  # truth inside
    kept = values.copy()
    shares, inside = postprocess.norm_sub_within(values, lower, upper)
    assert inside and np.array_equal(values, kept)
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)
    assert (lower <= shares).all() and (shares <= upper).all()
    assert _kkt_residual(values, shares, lower, upper, np.ones((1, size))) < 1e-9
    # With the weighted sums held where the truth has them (a point that meets them exists).
    weights = np.arange(size, dtype=float)
    signs = np.where(np.arange(size) < size // 2, -1.0, 1.0)
    held = ((weights, float(weights @ truth)), (signs, float(signs @ truth)))
    shares, _ = postprocess.norm_sub_within(values, lower, upper, held)
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)
    assert (lower <= shares).all() and (shares <= upper).all()
    for w, t in held:
        assert float(w @ shares) == pytest.approx(t, abs=1e-9)
    rows = np.vstack([np.ones(size), weights, signs])
    assert _kkt_residual(values, shares, lower, upper, rows) < 1e-7


def test_norm_sub_within_meets_the_slabs_when_the_equalities_cannot_be_met() -> None:
    values = np.array([0.5, -0.1, 0.3, 0.4])
    lower, upper = np.array([0.2, 0.0, 0.1, 0.1]), np.array([0.6, 0.1, 0.5, 0.5])
    weights = np.array([0.0, 1.0, 2.0, 3.0])
    # 9 is out of reach (at most 0.1 + 2·0.5 + 3·0.5 = 2.6 with the sum one): the slab holds.
    shares, inside = postprocess.norm_sub_within(
        values, lower, upper, ((weights, 9.0),), ((weights, 1.2, 1.4),)
    )
    assert inside
    assert shares.sum() == pytest.approx(1.0, abs=1e-12)
    assert (lower <= shares).all() and (shares <= upper).all()
    assert 1.2 - 1e-12 <= weights @ shares <= 1.4 + 1e-12


def test_norm_sub_within_says_when_no_distribution_fits_the_intervals() -> None:
    """Σ upper < 1: some interval missed; the bounds [0, 1] are used instead (Norm-Sub)."""
    values = np.array([0.2, 0.1, 0.3])
    shares, inside = postprocess.norm_sub_within(values, np.zeros(3), np.full(3, 0.3))
    assert not inside
    assert shares.sum() == pytest.approx(1.0, abs=1e-12) and (shares >= 0).all()
    assert shares == pytest.approx(postprocess.project_to_simplex(values), abs=1e-12)
