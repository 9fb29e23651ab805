"""The exact-tail family: its numerics, its coverage proved by exact computation, and its widths.

Coverage is proved, not sampled, for small n: for every mechanism the
per-respondent support probabilities are read off the mechanism's own exact
report distribution (not from p*, q*), the count's law for every answer mix
(every composition of n respondents over d = 3 values, so every true share
from 0 to 1) is the exact convolution of those Bernoullis, and the probability
that the published interval holds the true share is summed exactly.  Larger n
is checked by simulation at fixed seeds, with a failure budget whose false
alarm rate is at most 1e-6 if the coverage were exactly 1 - β.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from deniable import exact_tail
from deniable.errors import InvalidParameter
from deniable.estimation import (
    EXACT_TAIL,
    estimate_frequencies,
    nominal_half_width,
    score_model,
    tightest_family,
)
from deniable.mechanisms import CATEGORICAL, GRR, OLH, BinaryRR, OptionSampling

from .conftest import DISTRIBUTION_SEEDS

FALSE_ALARM = 1e-6
NAMES = sorted(CATEGORICAL)


def _oracle(name: str, epsilon: float, d: int = 3):
    return (
        BinaryRR(epsilon=epsilon)
        if name == "binary_rr"
        else CATEGORICAL[name](epsilon=epsilon, domain_size=d)
    )


def _support_probabilities(oracle, seed: int | None = None) -> np.ndarray:
    """P[v in S(y) | x] for every answer x (rows) and category v, from the exact distribution."""
    d = oracle.domain_size
    table = np.zeros((d, d))
    for x in range(d):
        law = (
            oracle.report_distribution(x, seed=seed)
            if seed is not None
            else oracle.report_distribution(x)
        )
        outputs = list(law)
        supports = np.array([oracle.support_counts(oracle.decode_many([y])) for y in outputs])
        table[x] = np.array([law[y] for y in outputs]) @ supports
    return table


def _binomial(m: int, r: float) -> np.ndarray:
    return np.array([math.comb(m, j) * r**j * (1 - r) ** (m - j) for j in range(m + 1)])


def _poisson_binomial(rates) -> np.ndarray:
    law = np.ones(1)
    for r in rates:
        law = np.convolve(law, [1 - r, r])
    return law


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_each_support_indicator_is_bernoulli_p_star_or_q_star(name: str, epsilon: float) -> None:
    """What makes the count's law two binomials: holders Bern(p*), everyone else Bern(q*)."""
    oracle = _oracle(name, epsilon)
    if isinstance(oracle, OLH):
        # Per fixed public seed the report is GRR over the buckets: a holder's indicator is
        # Bern(p*) exactly; a non-holder's averages to q* = 1/g over seeds (the estimator's
        # own assumption, docs/design.md), which no enumeration of 2**32 seeds can show.
        for seed in DISTRIBUTION_SEEDS:
            table = _support_probabilities(oracle, seed)
            assert np.allclose(np.diag(table), oracle.p_star, rtol=0, atol=1e-12)
        return
    table = _support_probabilities(oracle)
    expected = np.where(np.eye(oracle.domain_size, dtype=bool), oracle.p_star, oracle.q_star)
    assert np.allclose(table, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "olh"])
def test_coverage_is_at_least_one_minus_beta_for_every_answer_mix(name: str) -> None:
    """Exact: every composition of n respondents over the values, every category, two levels."""
    for epsilon, n in ((0.5, 9), (2.0, 9), (1.0, 16)):
        oracle = _oracle(name, epsilon)
        d = oracle.domain_size
        table = _support_probabilities(oracle)
        for beta in (0.05, 0.3):
            low, high = exact_tail.count_bounds(
                np.arange(n + 1), n, oracle.p_star, oracle.q_star, beta
            )
            for mix in itertools.product(range(n + 1), repeat=d - 1):
                if sum(mix) > n:
                    continue
                holders = (*mix, n - sum(mix))
                for v in range(d):
                    rates = np.repeat(table[:, v], holders)
                    law = _poisson_binomial(rates)
                    covered = law[(low <= holders[v]) & (holders[v] <= high)].sum()
                    assert covered >= 1 - beta - 1e-12, (epsilon, n, beta, holders, v)


@pytest.mark.parametrize("name", NAMES)
def test_coverage_over_every_true_count_up_to_n_60(name: str) -> None:
    """Exact, by the number of holders k = 0..n (the law depends on k only, as shown above)."""
    oracle = _oracle(name, 1.0, 5 if name != "binary_rr" else 2)
    p, q = oracle.p_star, oracle.q_star
    worst = 1.0
    for n in (1, 2, 5, 20, 60):
        for beta in (0.05, 0.05 / oracle.domain_size):
            low, high = exact_tail.count_bounds(np.arange(n + 1), n, p, q, beta)
            for k in range(n + 1):
                law = np.convolve(_binomial(k, p), _binomial(n - k, q))
                covered = law[(low <= k) & (k <= high)].sum()
                worst = min(worst, covered - (1 - beta))
                assert covered >= 1 - beta - 1e-12, (n, beta, k, covered)
    assert worst < 0.05  # not vacuous: the intervals are not [0, 1]


def _sampling_law(n: int, k: int, m: int, keep: float) -> np.ndarray:
    """Exact joint law of (reports (v, 1), reports (v, 0)) for one option held by k of n."""
    holder = {(1, 0): keep / m, (0, 1): (1 - keep) / m, (0, 0): 1 - 1 / m}
    other = {(1, 0): (1 - keep) / m, (0, 1): keep / m, (0, 0): 1 - 1 / m}
    law = np.zeros((n + 1, n + 1))
    law[0, 0] = 1.0
    for i in range(n):
        step = np.zeros_like(law)
        for (da, db), weight in (holder if i < k else other).items():
            step[da:, db:] += weight * law[: n + 1 - da, : n + 1 - db]
        law = step
    return law


@pytest.mark.parametrize(("n", "options", "epsilon"), [(5, 2, 1.0), (10, 3, 0.5), (10, 2, 3.0)])
def test_option_sampling_coverage_exact(n: int, options: int, epsilon: float) -> None:
    mechanism = OptionSampling(epsilon=epsilon, options=options)
    keep = mechanism.keep_probability
    # The mechanism's own distribution gives the per-report probabilities used above.
    law = mechanism.report_distribution(tuple([1] + [0] * (options - 1)))
    reports = mechanism.decode_many(list(law))
    said_yes = sum(
        w for (j, b), w in zip(reports.tolist(), law.values(), strict=True) if j == 0 and b
    )
    assert said_yes == pytest.approx(keep / options, abs=1e-15)
    for beta in (0.05, 0.3):
        bounds = {
            (a, b): exact_tail.sampled_bounds(a, a + b, n, keep, beta)
            for a in range(n + 1)
            for b in range(n + 1 - a)
        }
        for k in range(n + 1):
            joint = _sampling_law(n, k, options, keep)
            covered = sum(joint[a, b] for (a, b), (lo, hi) in bounds.items() if lo <= k <= hi)
            assert covered >= 1 - beta - 1e-12, (beta, k, covered)


def test_tails_match_exact_convolution() -> None:
    for n, p, q in ((1, 0.7, 0.3), (40, 0.4, 0.15), (150, 0.5, 0.27), (300, 0.9, 0.5)):
        for k in (0, n // 3, n):
            exact = np.cumsum(np.convolve(_binomial(k, p), _binomial(n - k, q)))
            computed = exact_tail.lower_tail(np.full(n + 1, k), np.arange(n + 1), n, p, q)
            assert np.max(np.abs(computed - exact)) < 1e-12


def _budget(trials: int, beta: float) -> int:
    """Misses allowed in ``trials`` independent checks: exceeded with probability <= 1e-6."""
    return int(stats.binom.isf(FALSE_ALARM, trials, beta)) + 1


@pytest.mark.slow
@pytest.mark.parametrize("name", [*NAMES, "option_sampling"])
def test_coverage_by_simulation_at_n_2000(name: str) -> None:
    """Real randomization, per category and all at once, at two truths.

    Mixed: one value held by 90%, one by 10%, the others by no one (options:
    held by everyone, by a quarter, by no one); unanimous: one value held by
    everyone (shares 1 and 0).  Option sampling at n = 400 and 100 collections
    (its intervals cost more: a hypergeometric mixture).
    """
    rng = np.random.default_rng(20261126)
    n, collections, beta = 2000, 120, 0.05
    if name == "option_sampling":
        n, collections = 400, 100
        mechanism = OptionSampling(epsilon=1.0, options=3)
        mixed = np.zeros((n, 3), dtype=np.int64)
        mixed[:, 0] = 1
        mixed[: n // 4, 1] = 1
        unanimous = np.ones((n, 3), dtype=np.int64)
        unanimous[:, 2] = 0
        truths = [mixed, unanimous]
    else:
        mechanism = _oracle(name, 1.0, 4 if name != "binary_rr" else 2)
        d = mechanism.domain_size
        mixed = np.zeros(n, dtype=np.int64)
        mixed[: n // 10] = d - 1
        truths = [mixed, np.zeros(n, dtype=np.int64)]
    for answers in truths:
        truth = (
            answers.mean(axis=0)
            if answers.ndim == 2
            else np.bincount(answers, minlength=mechanism.domain_size) / n
        )
        statistics = np.array(
            [
                mechanism.statistics(mechanism.randomize_many(answers, rng))
                for _ in range(collections)
            ]
        )
        d = truth.size
        (low, high), (both_low, both_high) = exact_tail.interval(
            score_model(mechanism).tail, statistics, n, (beta, beta / d)
        )
        inside = (low <= truth + 1e-12) & (truth - 1e-12 <= high)
        together = ((both_low <= truth + 1e-12) & (truth - 1e-12 <= both_high)).all(axis=1)
        for v in range(d):
            assert collections - inside[:, v].sum() <= _budget(collections, beta)
        assert collections - together.sum() <= _budget(collections, beta)
        assert np.mean(high - low) / 2 < 0.15  # informative at this n


@pytest.mark.parametrize(
    ("oracle", "n", "ratio"),
    [
        (BinaryRR(epsilon=1.0), 100, 1.2),
        (BinaryRR(epsilon=1.0), 500, 1.2),
        (GRR(epsilon=1.0, domain_size=5), 100, 1.35),
        (GRR(epsilon=1.0, domain_size=5), 500, 1.35),
    ],
)
def test_issue_targets_against_bernstein(oracle, n: int, ratio: float) -> None:
    """Issue 20: the worst-case half-width at β = 0.05, ε = 1 beats Bernstein's by the targets."""
    model = score_model(oracle)
    bernstein = nominal_half_width("bernstein", n, model, 0.05)
    exact = nominal_half_width(EXACT_TAIL, n, model, 0.05)
    assert bernstein / exact >= ratio, (bernstein, exact)
    assert tightest_family(n, model, 0.05, oracle.domain_size) == EXACT_TAIL


def test_the_family_is_published_from_n_and_d_only() -> None:
    oracle = GRR(epsilon=1.0, domain_size=4)
    counts = np.array([30, 20, 25, 25])
    result = estimate_frequencies(oracle, counts, 100)
    assert EXACT_TAIL in result.intervals and result.tightest == EXACT_TAIL
    interval = result.intervals[EXACT_TAIL]
    assert np.all(interval.simultaneous_lower <= interval.lower)
    assert np.all(interval.upper <= interval.simultaneous_upper)
    assert np.all((interval.lower <= result.estimates) | (result.estimates < 0))
    # Past the work limit (d sqrt(n) > WORK) the family is absent, whatever the counts.
    wide = OLH(epsilon=1.0, domain_size=1024)
    n = 200
    assert not exact_tail.available(score_model(wide).tail, n, 1024)
    result = estimate_frequencies(wide, np.full(1024, 40), n)
    assert EXACT_TAIL not in result.intervals and result.tightest != EXACT_TAIL
    document = result.to_dict()
    assert "exact_tail_lower" not in document["categories"][0]


def test_bad_n_is_refused() -> None:
    with pytest.raises(InvalidParameter, match="exact-tail"):
        exact_tail.pure_interval(np.array([1]), exact_tail.MAX_N + 1, 0.7, 0.3, (0.05,))


def test_the_planner_lists_the_exact_tail_where_it_is_tightest() -> None:
    from deniable.planner import expected_half_width, plan, targets

    result = plan("single_choice", epsilon=1.0, options=5, half_width=0.1)
    needed = {(r.mechanism, r.family): r.n_for_half_width for r in result.rows}
    target = next(
        t for t in targets("single_choice", epsilon=1.0, options=5) if t.mechanism == "grr"
    )
    n = needed[("grr", EXACT_TAIL)]
    assert n < needed[("grr", "bernstein")]
    assert expected_half_width(target, EXACT_TAIL, n, 0.05) <= 0.1
    # Past the planning cap the exact tail is not planned ("-"), the others are.
    wide = plan("single_choice", epsilon=0.5, options=20, half_width=0.02)
    assert all(r.n_for_half_width is None for r in wide.rows if r.family == EXACT_TAIL)


def _product_variance(first, second, a: int, b: int) -> float:
    """Exact Var(X Y) for one respondent answering a, b, cell (0, 0), from the report laws."""
    moments = []
    for oracle, value in ((first, a), (second, b)):
        law = oracle.report_distribution(value)
        outputs = list(law)
        support = np.array([oracle.support_counts(oracle.decode_many([y]))[0] for y in outputs])
        x = (support - oracle.q_star) / (oracle.p_star - oracle.q_star)
        weights = np.array([law[y] for y in outputs])
        moments.append((weights @ x, weights @ x**2))
    (mean_a, square_a), (mean_b, square_b) = moments
    return square_a * square_b - (mean_a * mean_b) ** 2


def test_the_crosstab_cell_variance_bound_is_the_worst_exact_variance() -> None:
    from deniable.crosstab_plan import cell_variance

    for first, second in (
        (GRR(epsilon=1.0, domain_size=3), BinaryRR(epsilon=2.0)),
        (CATEGORICAL["oue"](epsilon=0.5, domain_size=3), GRR(epsilon=4.0, domain_size=4)),
    ):
        bound, _ = cell_variance(first, second)
        exact = [
            _product_variance(first, second, a, b)
            for a in range(first.domain_size)
            for b in range(second.domain_size)
        ]
        assert max(exact) <= bound * (1 + 1e-12)
        assert max(exact) == pytest.approx(bound, rel=1e-9)  # attained: the bound is tight


def test_a_planned_crosstab_cell_covers_by_simulation() -> None:
    """Binary RR x binary RR at the planned n for ±0.1 (Bernstein): the cell's interval covers."""
    from deniable.crosstab_plan import plan_crosstab

    epsilon, beta, collections = 1.0, 0.05, 400
    planned = plan_crosstab(("yes_no", None, epsilon), ("yes_no", None, epsilon), half_width=0.1)
    n = next(r for r in planned.rows if r.family == "bernstein").n_for_half_width
    oracle = BinaryRR(epsilon=epsilon)
    rng = np.random.default_rng(11)
    a = (np.arange(n) < n // 2).astype(np.int64)
    b = (np.arange(n) % 3 == 0).astype(np.int64)
    truth = np.mean(a * b)
    misses = 0
    for _ in range(collections):
        x = (oracle.randomize_many(a, rng) - oracle.q_star) / (oracle.p_star - oracle.q_star)
        y = (oracle.randomize_many(b, rng) - oracle.q_star) / (oracle.p_star - oracle.q_star)
        misses += abs(np.mean(x * y) - truth) > 0.1
    assert misses <= _budget(collections, beta)


def test_counts_outside_0_to_n_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="support counts"):
        exact_tail.pure_interval(np.array([0, 11]), 10, 0.7, 0.3, (0.05,))
    with pytest.raises(InvalidParameter, match="option sampling"):
        exact_tail.sampling_interval(np.array([6, 0, 5, 0]), 10, 2, 0.7, (0.05,))


# -- the published worst-case width: the maximum over every count ------------------------------


def _widest_by_brute_force(n: int, p: float, q: float, alpha: float) -> float:
    low, high = exact_tail.count_bounds(np.arange(n + 1), n, p, q, alpha)
    return float((high - low).max()) / (2 * n)


def test_the_published_width_is_the_widest_over_every_count() -> None:
    """GRR, 5 options, ε = 1, n = 100: count 30 gives ±0.355; a grid of counts said ±0.350."""
    oracle = GRR(epsilon=1.0, domain_size=5)
    p, q = oracle.p_star, oracle.q_star
    low, high = exact_tail.count_bounds(np.array([30]), 100, p, q, 0.05)
    assert (high[0] - low[0]) / 200 == pytest.approx(0.355)
    assert exact_tail.pure_widest_half_width(100, p, q, 0.05) == pytest.approx(0.355)
    assert nominal_half_width(EXACT_TAIL, 100, score_model(oracle), 0.05) == pytest.approx(0.355)


@pytest.mark.parametrize(
    ("oracle", "n"),
    [
        (GRR(epsilon=1.0, domain_size=5), 100),
        (GRR(epsilon=1.0, domain_size=5), 1_000),
        (GRR(epsilon=0.5, domain_size=10), 700),
        (GRR(epsilon=3.0, domain_size=30), 400),
        (BinaryRR(epsilon=1.0), 60),
        (BinaryRR(epsilon=1.0), 1_500),
        (BinaryRR(epsilon=4.0), 900),
        (BinaryRR(epsilon=0.1), 2_000),
    ],
)
@pytest.mark.parametrize("alpha", [0.05, 0.01 / 5])
def test_the_search_finds_the_brute_force_maximum(oracle, n: int, alpha: float) -> None:
    """Up to n = 2,000 the branch-and-bound search is exact: it equals the maximum over 0..n."""
    p, q = oracle.p_star, oracle.q_star
    expected = _widest_by_brute_force(n, p, q, alpha)
    assert exact_tail.pure_widest_half_width(n, p, q, alpha) == expected


def test_past_the_exact_search_the_width_is_a_close_upper_bound() -> None:
    """Where the search stops early it publishes its bound: never below the true maximum.

    Binary RR at ε = 1 and n = 3,000: every count is nearly widest (the count's
    variance does not depend on the truth), so the search stops at its tolerance.
    """
    p, q = BinaryRR(epsilon=1.0).p_star, BinaryRR(epsilon=1.0).q_star
    expected = _widest_by_brute_force(3_000, p, q, 0.05)
    published = exact_tail.pure_widest_half_width(3_000, p, q, 0.05)
    assert expected < published <= expected * (1 + exact_tail.WIDEST_TOLERANCE)
