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


# -- relay noise (deniable.relay_noise_plan) --------------------------------------------------


@pytest.fixture(scope="module")
def noised_yes_no():
    from deniable.relay_noise_plan import relay_noise_plan

    return relay_noise_plan("yes_no", central_epsilon=1, delta=1e-6, batch=100)


def test_relay_noise_answer_for_a_yes_no_question(noised_yes_no):
    """ε0 8 (the ceiling), 54 geometric dummies per batch (27 per value, docs/relay-epsilon.md),
    the published half-width of one batch of 100, and the fewest respondents for ±5 points."""
    from deniable.dummies import calibrate, epsilon_for
    from deniable.mechanisms import BinaryRR
    from deniable.relay_noise_plan import published_half_width

    result = noised_yes_no
    assert (result.mechanism, result.local_epsilon, result.n, result.batches) == (
        "binary_rr",
        8.0,
        100,
        1,
    )
    geometric = calibrate(1, 1e-6, "geometric").law
    assert result.chosen.family == "geometric" and result.chosen.law == geometric
    assert result.chosen.dummies_per_batch == 54 and result.chosen.output_values == 2
    assert epsilon_for(geometric, 1e-6) <= 1 and result.chosen.central_epsilon <= 1
    device = BinaryRR(epsilon=8)
    width = result.chosen.half_width
    assert width == published_half_width(device, 100, geometric, 1, 0.05)[0]
    # the binomial law is reported beside it, and is wider
    binomial = next(law for law in result.laws if law.family == "binomial")
    assert binomial.law == calibrate(1, 1e-6, "binomial").law and binomial.half_width > width

    def at(n: int) -> float:
        return published_half_width(device, n, geometric, max(1, n // 100), 0.05)[0]

    needed = result.chosen.respondents
    assert needed >= 100 and at(needed) <= 0.05 < at(needed - 1)
    # every n from there on meets ±5 points, including where a further batch begins
    for n in range(needed, needed + 401, 7):
        assert at(n) <= 0.05, n
    single = result.chosen.respondents_one_batch
    assert published_half_width(device, single, geometric, 1, 0.05)[0] <= 0.05
    assert published_half_width(device, single - 1, geometric, 1, 0.05)[0] > 0.05
    assert single <= needed
    document = result.to_dict()
    assert document["dummies_per_batch"] == 54 and document["half_width"] == width
    assert document["respondents"] == needed and document["local_epsilon"] == 8.0


def test_relay_noise_is_monotone_in_n():
    """More respondents never widen the interval at the points where the batches are full,
    nor within one batch; a wider target never needs more respondents."""
    from deniable.relay_noise_plan import relay_noise_plan

    widths = [
        relay_noise_plan("yes_no", central_epsilon=1, batch=100, n=n).chosen.half_width
        for n in (100, 150, 199, 200, 300, 500)
    ]
    assert widths[0] >= widths[1] >= widths[2]  # one batch
    assert widths[0] >= widths[3] >= widths[4] >= widths[5]  # full batches
    needed = [
        relay_noise_plan("yes_no", central_epsilon=1, batch=100, half_width=h).chosen
        for h in (0.03, 0.05, 0.1)
    ]
    assert needed[0].respondents >= needed[1].respondents >= needed[2].respondents
    assert (
        needed[0].respondents_one_batch
        >= needed[1].respondents_one_batch
        >= needed[2].respondents_one_batch
    )


def test_relay_noise_recommends_a_mechanism_that_supports_it_and_refuses_others():
    from deniable.relay_noise_plan import noise_mechanisms, relay_noise_plan

    assert noise_mechanisms("yes_no") == ("binary_rr",)
    assert noise_mechanisms("single_choice", 10) == ("grr",)
    assert noise_mechanisms("multiple_choice", 4) == ("option_sampling",)
    assert noise_mechanisms("numeric") == ("duchi",)
    # without relay noise, 10 options at ε = 1 recommend another oracle
    assert plan("single_choice", epsilon=1, options=10, n=100).recommended != "grr"
    result = relay_noise_plan("single_choice", central_epsilon=1, batch=100, options=10)
    assert result.mechanism == "grr"
    for question, name, options in (
        ("single_choice", "subset", 10),
        ("single_choice", "oue", 10),
        ("multiple_choice", "binary_rr", 4),  # one binary RR per option
        ("numeric", "discrete_laplace", None),
    ):
        with pytest.raises(InvalidParameter, match=f"{name} cannot carry relay noise"):
            relay_noise_plan(
                question, central_epsilon=1, batch=100, options=options, mechanism=name
            )
    with pytest.raises(InvalidParameter, match="less than one batch"):
        relay_noise_plan("yes_no", central_epsilon=1, batch=100, n=99)


def test_one_fake_report_moves_a_count_by_about_one_with_relay_noise():
    """GRR's count estimate moves by (1 - q*)/(p* - q*) per fake report: 6.24 at ε = 1 with
    10 options, about 1 at ε0 = 8."""
    from deniable.mechanisms import GRR
    from deniable.relay_noise_plan import fake_report_shift, relay_noise_plan

    local = GRR(epsilon=1, domain_size=10)
    assert fake_report_shift(local) == pytest.approx(6.24, abs=0.005)
    p, q = local.p_star, local.q_star
    assert fake_report_shift(local) == pytest.approx((1 - q) / (p - q), rel=1e-12)
    result = relay_noise_plan("single_choice", central_epsilon=1, batch=100, options=10)
    assert result.local_only_fake_report_shift == pytest.approx(6.24, abs=0.005)
    assert 1 <= result.fake_report_shift < 1.01


def test_the_local_epsilon_is_the_ceiling_given():
    from deniable.relay_noise_plan import relay_noise_plan

    result = relay_noise_plan("yes_no", central_epsilon=1, batch=100, max_local_epsilon=4)
    assert result.local_epsilon == 4
    assert result.chosen.dummies_per_batch == 54  # the dummies do not depend on ε0


def test_relay_noise_says_when_the_relay_alone_does_better():
    """Option sampling spreads each dummy over every option (and samples one option per
    respondent whatever ε0): at 100 respondents the relay alone is narrower."""
    from deniable.relay_noise_plan import relay_noise_plan

    result = relay_noise_plan("multiple_choice", options=5, central_epsilon=1, batch=100)
    assert result.mechanism == "option_sampling" and result.chosen.dummies_per_batch == 270
    assert not result.noise_helps and result.to_dict()["noise_helps"] is False
    assert result.chosen.half_width > result.relay_only_half_width
