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
