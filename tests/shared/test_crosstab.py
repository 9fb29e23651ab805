"""deniable.crosstab and deniable.comparison: exactness, unbiasedness, coverage.

Statistical checks use fixed seeds, and each threshold has a false-alarm rate
<= 1e-6 under the claim it tests (binomial tails from scipy; Bernstein's
inequality for means), split over the cells by the union bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from deniable import comparison
from deniable.crosstab import (
    CrosstabStatistics,
    axis,
    category_means,
    cell_model,
    cell_variances,
    crosstab_statistics,
    estimate_crosstab,
    exact_variance,
    joint_estimates,
    support_rows,
)
from deniable.errors import InvalidParameter
from deniable.mechanisms import (
    CATEGORICAL,
    GRR,
    HRR,
    OLH,
    OUE,
    SUE,
    BinaryRR,
    DiscreteLaplace,
    Duchi,
    OptionSampling,
    OptionwiseRR,
    SubsetSelection,
)
from deniable.mechanisms.longitudinal import LongitudinalGRR

FALSE_ALARM = 1e-6
FAMILIES = ("chebyshev", "chebyshev_exact", "bernstein")


def allowed_failures(trials: int, beta: float, tests: int) -> int:
    """Largest failure count consistent with coverage >= 1 - β at FALSE_ALARM over ``tests``."""
    return int(binom.isf(FALSE_ALARM / tests, trials, beta))


def categorical(name: str, d: int, epsilon: float = 2.0):
    if name == "option_sampling":
        return OptionSampling(epsilon=epsilon, options=d)
    if name == "optionwise":
        return OptionwiseRR(epsilon=epsilon, options=d)
    if name == "longitudinal":
        return LongitudinalGRR(epsilon=epsilon, instantaneous_epsilon=epsilon + 1, domain_size=d)
    if name == "binary_rr":
        return BinaryRR(epsilon=epsilon)
    return CATEGORICAL[name](epsilon=epsilon, domain_size=d)


def truths(mechanism, n: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(values for randomize_many, (n, d) indicators of each category), with empty categories."""
    if isinstance(mechanism, OptionSampling | OptionwiseRR):
        sets = (rng.random((n, d)) < np.linspace(0.0, 0.9, d)).astype(np.int64)
        return sets, sets
    values = rng.choice(d, size=n, p=np.r_[0.0, np.full(d - 1, 1.0 / (d - 1))])
    return values, np.eye(d, dtype=np.int64)[values]


@pytest.mark.parametrize("name", [*sorted(CATEGORICAL), "longitudinal"])
@pytest.mark.parametrize("d", [2, 5, 16])
def test_support_rows_sum_to_support_counts(name: str, d: int) -> None:
    oracle = categorical(name, d) if name != "binary_rr" else BinaryRR(epsilon=1.0)
    d = oracle.domain_size
    rng = np.random.default_rng(d)
    batch = oracle.randomize_many(rng.integers(0, d, 500), rng)
    rows = support_rows(oracle, batch)
    assert rows.shape == (500, d)
    assert np.array_equal(rows.sum(axis=0), oracle.support_counts(batch))
    one = [oracle.support_counts(batch[i : i + 1]) for i in range(0, 500, 37)]
    assert np.array_equal(rows[::37], np.vstack(one))


ENUMERABLE = ["binary_rr", "grr", "sue", "oue", "hrr", "subset", "option_sampling"]


@pytest.mark.parametrize("first", ENUMERABLE)
@pytest.mark.parametrize("second", ENUMERABLE)
def test_expected_scores_give_exact_unbiasedness(first: str, second: str) -> None:
    """E[statistics] from the exact report distributions: the estimator returns the truth.

    Every pair of mechanisms with enumerable outputs, as rows and as columns.
    """
    sides = []
    rng = np.random.default_rng(5)
    for name, epsilon in ((first, 1.3), (second, 0.7)):
        d = 2 if name == "binary_rr" else 3
        mechanism = categorical(name, d, epsilon=epsilon)
        values, indicators = truths(mechanism, 30, d, rng)
        ax = axis(mechanism)
        answers = [tuple(v) if np.ndim(v) else int(v) for v in values]
        expected = {}
        for answer in set(answers):
            distribution = mechanism.report_distribution(answer)
            outputs = list(distribution)
            scores = ax.scores(mechanism.decode_many(outputs)).astype(float)
            expected[answer] = np.array([distribution[y] for y in outputs]) @ scores
        sides.append((ax, np.array([expected[a] for a in answers]), indicators))
    (row_axis, za, a_ind), (column_axis, zb, b_ind) = sides
    # Independent coins: E[z_A z_Bᵀ] = E[z_A] E[z_B]ᵀ per respondent.
    expected = CrosstabStatistics(n=30, rows=za.sum(0), columns=zb.sum(0), joint=za.T @ zb)
    estimate = joint_estimates(row_axis, column_axis, expected)
    assert np.allclose(estimate, a_ind.T @ b_ind / 30, atol=1e-9)


PAIRS = [
    ("grr", 3, "oue", 4),
    ("binary_rr", 2, "olh", 3),
    ("hrr", 3, "subset", 4),
    ("sue", 3, "longitudinal", 2),
    ("option_sampling", 3, "grr", 3),
    ("optionwise", 3, "binary_rr", 2),
]


@pytest.mark.parametrize(("first", "d_first", "second", "d_second"), PAIRS)
def test_unbiased_and_covering_per_cell_and_simultaneously(first, d_first, second, d_second):
    n, trials, beta = 400, 300, 0.2
    a_mech, b_mech = categorical(first, d_first), categorical(second, d_second)
    d_first, d_second = axis(a_mech).size, axis(b_mech).size
    rng = np.random.default_rng(2024)
    a_values, a_ind = truths(a_mech, n, d_first, rng)
    b_values, b_ind = truths(b_mech, n, d_second, rng)
    truth = a_ind.T @ b_ind / n
    row_axis, column_axis = axis(a_mech), axis(b_mech)
    cells = truth.size
    misses = {f: np.zeros(truth.shape, int) for f in FAMILIES}
    joint_misses = dict.fromkeys(FAMILIES, 0)
    total = np.zeros(truth.shape)
    for _ in range(trials):
        reports = a_mech.randomize_many(a_values, rng), b_mech.randomize_many(b_values, rng)
        statistics = crosstab_statistics(row_axis, column_axis, *reports)
        estimate = estimate_crosstab(row_axis, column_axis, statistics, beta=beta)
        total += estimate.estimates
        for family, interval in estimate.intervals.items():
            misses[family] += (truth < interval.lower) | (truth > interval.upper)
            outside = (truth < interval.simultaneous_lower) | (truth > interval.simultaneous_upper)
            joint_misses[family] += bool(np.any(outside))
    limit = allowed_failures(trials, beta, cells * len(FAMILIES))
    for family in FAMILIES:
        assert misses[family].max() <= limit, (family, misses[family])
        assert joint_misses[family] <= allowed_failures(trials, beta, len(FAMILIES)), family
    # Unbiased: the mean of trials x n independent product scores, by Bernstein.
    model = cell_model(row_axis, column_axis)
    log_term = math.log(2 * cells / FALSE_ALARM)
    count = trials * n
    slack = math.sqrt(2 * model.worst_variance * log_term / count) + (
        model.deviation * log_term / (3 * count)
    )
    assert np.abs(total / trials - truth).max() <= slack


def test_exact_variance_matches_simulation_and_is_bounded() -> None:
    a_mech, b_mech = GRR(epsilon=1.5, domain_size=3), OUE(epsilon=1.0, domain_size=2)
    row_axis, column_axis = axis(a_mech), axis(b_mech)
    rng = np.random.default_rng(11)
    a = np.repeat([0, 1, 2], [50, 30, 20])
    b = rng.integers(0, 2, 100)
    estimates = np.array(
        [
            estimate_crosstab(
                row_axis,
                column_axis,
                crosstab_statistics(
                    row_axis,
                    column_axis,
                    a_mech.randomize_many(a, rng),
                    b_mech.randomize_many(b, rng),
                ),
            ).estimates
            for _ in range(2000)
        ]
    )
    joint = np.eye(3)[a].T @ np.eye(2)[b] / 100
    exact = exact_variance(
        row_axis, column_axis, joint, joint.sum(1, keepdims=True), joint.sum(0, keepdims=True), 100
    )
    # 2,000 draws: the sample variance is within 20% (about 6 standard errors here).
    assert np.allclose(estimates.var(axis=0), exact, rtol=0.2)
    assert exact.max() <= max(cell_variances(row_axis, column_axis).values()) / 100


@pytest.mark.parametrize(
    "numeric", [Duchi(epsilon=2.0, lo=0.0, hi=10.0), DiscreteLaplace(epsilon=2.0, lo=0.0, hi=10.0)]
)
def test_category_means_cover(numeric) -> None:
    n, trials, beta = 600, 200, 0.2
    category = GRR(epsilon=2.0, domain_size=3)
    rng = np.random.default_rng(7)
    a = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    x = np.clip(2.0 + 3.0 * a + rng.normal(0, 1, n), 0, 10)
    truth = np.array([x[a == k].mean() for k in range(3)])
    cat_axis, num_axis = axis(category), axis(numeric)
    misses, joint_misses = np.zeros(3, int), 0
    for _ in range(trials):
        statistics = crosstab_statistics(
            cat_axis, num_axis, category.randomize_many(a, rng), numeric.randomize_many(x, rng)
        )
        means = category_means(cat_axis, num_axis, statistics, beta=beta)
        misses += (truth < means.lower) | (truth > means.upper)
        joint_misses += bool(
            np.any((truth < means.simultaneous_lower) | (truth > means.simultaneous_upper))
        )
        assert np.all(means.simultaneous_lower <= means.lower)
    assert misses.max() <= allowed_failures(trials, beta, 3)
    assert joint_misses <= allowed_failures(trials, beta, 1)


def test_numeric_pairs_and_bad_input_are_refused() -> None:
    duchi = axis(Duchi(epsilon=1.0, lo=0.0, hi=1.0))
    grr = axis(GRR(epsilon=1.0, domain_size=3))
    statistics = CrosstabStatistics.zeros(3, 1)
    with pytest.raises(InvalidParameter):
        estimate_crosstab(grr, duchi, statistics)
    with pytest.raises(InvalidParameter):
        category_means(grr, duchi, statistics)  # no respondents
    with pytest.raises(InvalidParameter):
        crosstab_statistics(grr, grr, np.zeros(3, np.int64), np.zeros(2, np.int64))
    statistics = CrosstabStatistics(
        n=2, rows=np.array([1, 2]), columns=np.array([3]), joint=np.array([[4], [5]])
    )
    assert CrosstabStatistics.from_dict(statistics.to_dict()).to_dict() == statistics.to_dict()
    assert (statistics + statistics).n == 4


@pytest.mark.parametrize("dependence", ["independent", "nonnegative", "any"])
def test_difference_covers(dependence: str) -> None:
    """Two estimates of one oracle; 'any': two cells of one crosstab of the same respondents."""
    n, trials, beta = 300, 400, 0.1
    rng = np.random.default_rng(3)
    misses = dict.fromkeys(("chebyshev", "bernstein"), 0)
    if dependence == "any":
        a_mech, b_mech = GRR(epsilon=2.0, domain_size=2), GRR(epsilon=2.0, domain_size=2)
        ra, rb = axis(a_mech), axis(b_mech)
        a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
        truth = np.mean((a == 0) & (b == 1)) - np.mean((a == 1) & (b == 1))
        deviation = cell_model(ra, rb).deviation
        for _ in range(trials):
            estimate = estimate_crosstab(
                ra,
                rb,
                crosstab_statistics(
                    ra, rb, a_mech.randomize_many(a, rng), b_mech.randomize_many(b, rng)
                ),
            )
            first = comparison.cell_figure(estimate, 0, 1, deviation)
            second = comparison.cell_figure(estimate, 1, 1, deviation)
            result = comparison.difference(first, second, dependence="any", beta=beta)
            for family, half in result.half_widths.items():
                misses[family] += abs(result.value - truth) > half
    else:
        oracle = GRR(epsilon=1.0, domain_size=3)
        first_values = rng.integers(0, 3, n)
        second_values = np.where(rng.random(n) < 0.7, first_values, rng.integers(0, 3, n))
        truth = np.mean(first_values == 0) - np.mean(second_values == 0)
        for _ in range(trials):
            counts = [
                oracle.support_counts(oracle.randomize_many(v, rng))
                for v in (first_values, second_values)
            ]
            figures = [comparison.frequency_figures(oracle, c, n)[0] for c in counts]
            result = comparison.difference(*figures, dependence=dependence, beta=beta)
            for family, half in result.half_widths.items():
                misses[family] += abs(result.value - truth) > half
    for family, count in misses.items():
        assert count <= allowed_failures(trials, beta, 2), family


def test_difference_sentence_and_claims() -> None:
    first = comparison.Figure(value=0.46, variance_bound=0.0004, deviation=0.001)
    second = comparison.Figure(value=0.40, variance_bound=0.0004, deviation=0.001)
    result = comparison.difference(first, second, beta=0.05)
    assert result.sentence().startswith("changed by +6 points (±")
    several = comparison.difference(first, second, beta=0.05, claims=4)
    assert several.half_width > result.half_width
    assert result.to_dict()["tightest"] in ("chebyshev", "bernstein")
    with pytest.raises(InvalidParameter):
        comparison.difference(first, second, dependence="sometimes")
    unbounded = comparison.Figure(value=1.0, variance_bound=0.1, deviation=None)
    assert set(comparison.difference(unbounded, unbounded).half_widths) == {"chebyshev"}


def test_every_crosstab_mechanism_has_an_axis() -> None:
    for mechanism in (
        GRR(epsilon=1, domain_size=3),
        OUE(epsilon=1, domain_size=3),
        SUE(epsilon=1, domain_size=3),
        OLH(epsilon=1, domain_size=3),
        HRR(epsilon=1, domain_size=3),
        SubsetSelection(epsilon=1, domain_size=5),
        BinaryRR(epsilon=1),
        OptionSampling(epsilon=1, options=3),
        OptionwiseRR(epsilon=1, options=3),
    ):
        ax = axis(mechanism)
        m0, m1 = ax.second_moments
        assert 0 < m0 <= m1 and ax.slope > 0  # equal for HRR (q* = 1/2)
    with pytest.raises(InvalidParameter):
        axis(object())
