"""deniable.planner called directly (not through the CLI, which bounds its arguments)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deniable.errors import InvalidParameter
from deniable.planner import plan

finite = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    ends=st.tuples(finite, finite).filter(lambda e: e[0] != e[1]).map(sorted),
    n=st.one_of(st.none(), st.integers(1, 10**9)),
    half_width=st.floats(min_value=1e-300, max_value=1e300),
    beta=st.sampled_from([0.05, 0.001, 1e-15, 1e-16, 1e-300]),
)
def test_any_numeric_range_is_planned_or_refused_with_a_typed_error(ends, n, half_width, beta):
    """Never OverflowError or an infinite width: a range too wide for floating point (its
    square overflows past about 1e154), or a β below 1e-15, is InvalidParameter, naming the
    bound."""
    lo, hi = ends
    try:
        result = plan(
            "numeric",
            epsilon=1.0,
            lo=lo,
            hi=hi,
            beta=beta,
            n=n,
            half_width=None if n is not None else half_width,
        )
    except InvalidParameter as error:
        assert str(error)
        return
    for row in result.rows:
        for value in (row.half_width, row.n_for_half_width):
            assert value is None or math.isfinite(value)


def test_a_wide_range_at_the_smallest_beta_plans_finite_widths():
    """Regression: Chebyshev's V / β overflowed to inf for discrete Laplace (found by the
    property test above)."""
    result = plan("numeric", epsilon=1.0, lo=0.0, hi=2.998076933601297e146, beta=1e-15, n=1)
    assert all(math.isfinite(row.half_width) for row in result.rows)


def test_a_range_wider_than_floating_point_can_square_is_refused():
    with pytest.raises(InvalidParameter, match=r"lo and hi must be between -1e\+150 and 1e\+150"):
        plan("numeric", epsilon=1.0, lo=-1e160, hi=1e160, n=100)
    assert plan("numeric", epsilon=1.0, lo=-1e150, hi=1e150, n=100).rows
    with pytest.raises(InvalidParameter, match="beta must be at least 1e-15"):
        plan("numeric", epsilon=1.0, lo=-1e150, hi=1e150, n=100, beta=1e-300)


def test_an_applicable_share_plans_the_shares_among_those_who_answered() -> None:
    """Everyone reports but only the share s who answered carries signal: a share among them
    has the frequency's half-width divided by s, so about 1/s² as many respondents."""
    from deniable.planner import plan as plan_question

    whole = plan_question("single_choice", epsilon=1.0, options=3, n=4000)
    half = plan_question("single_choice", epsilon=1.0, options=3, n=4000, applicable_share=0.5)
    for full_row, half_row in zip(whole.rows, half.rows, strict=True):
        assert half_row.half_width == pytest.approx(2 * full_row.half_width)
    needed = plan_question("single_choice", epsilon=1.0, options=3, half_width=0.1)
    fewer = plan_question(
        "single_choice", epsilon=1.0, options=3, half_width=0.1, applicable_share=0.5
    )
    chebyshev = [r for r in zip(needed.rows, fewer.rows, strict=True) if r[0].family == "chebyshev"]
    for full_row, half_row in chebyshev:
        assert half_row.n_for_half_width == pytest.approx(4 * full_row.n_for_half_width, rel=0.01)
    with pytest.raises(InvalidParameter, match="applicable_share"):
        plan_question("yes_no", epsilon=1.0, n=10, applicable_share=0.0)
