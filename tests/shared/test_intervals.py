"""Every interval family: coverage, width against today's Chebyshev, and the planner.

Coverage: for every mechanism, every family, per category and simultaneously,
n in {50, 1,000, 100,000}, β in {0.05, 0.2}, with true shares that include 0
and 1, over 1,000 seeded collections sampled exactly (tests/shared/sampling.py).
The number of misses is Binomial(1000, at most β) for a valid interval; a
check fails only when it exceeds the (1 - 1e-6) quantile of Binomial(1000, β),
so each check has a false-alarm rate <= 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from deniable.estimation import (
    EXACT_TAIL,
    FAMILIES,
    estimate_frequencies,
    estimate_mean,
    family_interval,
    interval_families,
    score_model,
)
from deniable.mechanisms import CATEGORICAL, NUMERIC, OUE, BinaryRR, OptionSampling
from deniable.mechanisms.longitudinal import LongitudinalGRR
from deniable.planner import expected_half_width, plan, respondents_for, targets

from .sampling import option_sets, sample_statistics

COLLECTIONS = 1000
FALSE_ALARM = 1e-6
SIZES = (50, 1_000, 100_000)
BETAS = (0.05, 0.2)
DOMAIN = 4


def allowed_misses(beta: float) -> int:
    """Largest miss count a valid interval reaches with probability > 1e-6."""
    return int(stats.binom.isf(FALSE_ALARM, COLLECTIONS, beta))


def categorical(name: str):
    if name == "binary_rr":
        return BinaryRR(epsilon=1.0)
    if name == "grr_longitudinal":
        return LongitudinalGRR(epsilon=2.0, instantaneous_epsilon=1.0, domain_size=DOMAIN)
    return CATEGORICAL[name](epsilon=1.0, domain_size=DOMAIN)


FREQUENCY_CASES = [*sorted(CATEGORICAL), "grr_longitudinal", "option_sampling"]


def populations(mechanism, n: int) -> list[tuple[list, list[int], np.ndarray]]:
    """(values, counts, true shares) for populations whose shares include 0 and 1."""
    if isinstance(mechanism, OptionSampling):
        result = []
        for shares in ([1.0, 0.0, 0.5, 0.1], [0.0, 0.0, 1.0, 1.0]):
            values, counts = option_sets(4, shares, n)
            truth = (np.array(values).T @ np.array(counts)) / n
            result.append((values, counts, truth))
        return result
    d = mechanism.domain_size
    everyone = ([0], [n], np.eye(d)[0])  # shares 1, 0, 0, ...
    mixed = np.array([0.5, 0.3, 0.2, 0.0][:d]) if d > 2 else np.array([0.3, 0.7])
    counts = np.round(mixed * n).astype(int)
    counts[0] += n - counts.sum()
    return [everyone, (list(range(d)), counts.tolist(), counts / n)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", FREQUENCY_CASES)
def test_frequency_intervals_cover(name: str, n: int) -> None:
    mechanism = (
        OptionSampling(epsilon=1.0, options=4) if name == "option_sampling" else categorical(name)
    )
    rng = np.random.default_rng([n, len(name), 20261126])
    model = score_model(mechanism)
    checked = 0
    for values, counts, truth in populations(mechanism, n):
        statistics = sample_statistics(mechanism, values, counts, COLLECTIONS, rng)
        estimates = mechanism.estimate(statistics, n)
        categories = estimates.shape[1]
        for beta in BETAS:
            families = interval_families(
                estimates, n, model, beta, categories, mechanism.variance_bound(n)
            )
            assert set(families) == set(FAMILIES)
            limit = allowed_misses(beta)
            for family, interval in families.items():
                inside = (interval.lower <= truth + 1e-12) & (truth - 1e-12 <= interval.upper)
                misses = COLLECTIONS - inside.sum(axis=0)
                assert np.all(misses <= limit), (family, beta, misses, limit)
                together = (interval.simultaneous_lower <= truth + 1e-12) & (
                    truth - 1e-12 <= interval.simultaneous_upper
                )
                simultaneous_misses = COLLECTIONS - together.all(axis=1).sum()
                assert simultaneous_misses <= limit, (family, beta, simultaneous_misses)
                checked += 1
    assert checked == 2 * len(BETAS) * len(FAMILIES)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_mean_intervals_cover(name: str, n: int) -> None:
    lo, hi = -2.0, 6.0
    mechanism = NUMERIC[name](epsilon=1.0, lo=lo, hi=hi)
    rng = np.random.default_rng([n, len(name), 7])
    model = score_model(mechanism)
    families_seen = set()
    for values, counts in (
        ([lo], [n]),
        ([hi], [n]),
        ([lo, hi, 1.3], [n // 2, n // 4, n - n // 2 - n // 4]),
    ):
        truth = float(np.dot(values, counts) / n)
        statistics = sample_statistics(mechanism, values, counts, COLLECTIONS, rng)
        means = np.array([mechanism.estimate(row, n)[0] for row in statistics])
        for beta in BETAS:
            families = interval_families(means, n, model, beta, 1, mechanism.variance_bound(n))
            limit = allowed_misses(beta)
            for family, interval in families.items():
                inside = (interval.lower <= truth + 1e-9) & (truth - 1e-9 <= interval.upper)
                assert COLLECTIONS - inside.sum() <= limit, (family, beta, truth)
                families_seen.add(family)
    # Bernstein needs bounded reports: Duchi's are, discrete Laplace's are not.
    expected = set(FAMILIES) if name == "duchi" else {"chebyshev", "chebyshev_exact"}
    assert families_seen == expected


def test_the_public_result_holds_the_same_intervals() -> None:
    oracle = OUE(epsilon=1.0, domain_size=8)
    rng = np.random.default_rng(3)
    statistics = sample_statistics(oracle, list(range(8)), [10] * 8, 1, rng)[0]
    result = estimate_frequencies(oracle, statistics, 80)
    document = result.to_dict()
    assert [i["family"] for i in document["intervals"]] == [*FAMILIES, EXACT_TAIL]
    assert document["tightest"] == EXACT_TAIL and document["covers"] == "respondents"
    for i, category in enumerate(document["categories"]):
        assert category["lower"] == result.lower[i]  # today's Chebyshev, unchanged
        for family in ("chebyshev_exact", "bernstein", EXACT_TAIL):
            assert category[f"{family}_lower"] == result.intervals[family].lower[i]
            assert (
                category[f"{family}_simultaneous_upper"]
                == (result.intervals[family].simultaneous_upper[i])
            )
    assert np.array_equal(result.estimates, oracle.estimate(statistics, 80))  # raw, unaltered
    mean = estimate_mean(NUMERIC["duchi"](epsilon=1.0, lo=0.0, hi=10.0), np.array([3]), 5)
    assert mean.to_dict()["uninformative"] is True and mean.precision == "uninformative"


def test_exact_chebyshev_is_inside_todays_and_tightest_is_chosen_without_data() -> None:
    oracle = OUE(epsilon=4.0, domain_size=16)
    model = score_model(oracle)
    estimates = np.linspace(-0.2, 1.2, 57)
    families = interval_families(estimates, 500, model, 0.05, 16, oracle.variance_bound(500))
    assert np.all(families["chebyshev_exact"].lower >= families["chebyshev"].lower - 1e-12)
    assert np.all(families["chebyshev_exact"].upper <= families["chebyshev"].upper + 1e-12)
    first = estimate_frequencies(oracle, np.zeros(16), 500)
    second = estimate_frequencies(oracle, np.full(16, 500), 500)
    assert first.tightest == second.tightest  # depends on n, d, β, ε only


# -- width ----------------------------------------------------------------------------------


def mean_half_width(family: str, estimates: np.ndarray, n: int, model, beta: float) -> float:
    low, high = family_interval(family, estimates, n, model, beta)
    return float(np.mean((high - low) / 2))


def test_simultaneous_and_per_category_widths_at_1024_categories() -> None:
    """OUE, ε = 1, n = 100,000, d = 1,024, β = 0.05, the uniform distribution."""
    oracle = OUE(epsilon=1.0, domain_size=1024)
    n, d, beta = 100_000, 1024, 0.05
    rng = np.random.default_rng(11)
    holders = np.full(d, n // d)
    holders[: n - holders.sum()] += 1
    # OUE's bits are independent given the answer: exact binomial support counts.
    counts = rng.binomial(holders, oracle.p_star) + rng.binomial(n - holders, oracle.q_star)
    estimates = oracle.estimate(counts, n)
    model = score_model(oracle)
    today = math.sqrt(oracle.variance_bound(n) / (beta / d))
    simultaneous = mean_half_width("bernstein", estimates, n, model, beta / d)
    assert today >= 10 * simultaneous, (today, simultaneous)
    per_category = mean_half_width("bernstein", estimates, n, model, beta)
    assert math.sqrt(oracle.variance_bound(n) / beta) >= 1.5 * per_category
    cut = interval_families(estimates, n, model, beta, d, oracle.variance_bound(n))
    today_cut = np.mean(cut["chebyshev"].upper - cut["chebyshev"].lower)
    assert today_cut >= 1.5 * np.mean(cut["bernstein"].upper - cut["bernstein"].lower)
    # The same through the published result (intervals cut at 0 and 1 on both sides).
    result = estimate_frequencies(oracle, counts, n, beta=beta)
    assert result.simultaneous_tightest == "bernstein" and result.tightest == "bernstein"
    shown = result.intervals["bernstein"]
    cut_today = np.mean(result.simultaneous_upper - result.simultaneous_lower) / 2
    assert cut_today >= 10 * np.mean(shown.simultaneous_upper - shown.simultaneous_lower) / 2


def test_option_sampling_is_three_times_narrower_than_splitting_epsilon() -> None:
    """m = 16, ε = 1, n = 10,000: per option, same family, against binary RR at ε/m."""
    m, n = 16, 10_000
    sampling = OptionSampling(epsilon=1.0, options=m)
    split = BinaryRR(epsilon=1.0 / m)
    rng = np.random.default_rng(5)
    values, counts = option_sets(m, list(np.linspace(0.0, 1.0, m)), n)
    statistics = sample_statistics(sampling, values, counts, 50, rng)
    truth = (np.array(values).T @ np.array(counts)) / n
    split_counts = rng.binomial(np.round(truth * n).astype(int), split.p_star, size=(50, m))
    split_counts += rng.binomial(n - np.round(truth * n).astype(int), split.q_star, size=(50, m))
    for family in FAMILIES:
        ours = mean_half_width(
            family, sampling.estimate(statistics, n), n, score_model(sampling), 0.05
        )
        theirs = mean_half_width(
            family, split.estimate(split_counts, n), n, score_model(split), 0.05
        )
        assert theirs >= 3 * ours, (family, theirs, ours)


# -- the planner -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question_type", "options", "n"),
    [
        ("single_choice", 8, 100_000),
        ("single_choice", 4, 10_000),
        ("multiple_choice", 16, 10_000),
        ("yes_no", None, 2_000),
    ],
)
def test_planner_matches_simulated_half_widths_within_ten_percent(question_type, options, n):
    beta = 0.05
    rng = np.random.default_rng(17)
    result = plan(question_type, epsilon=1.0, options=options, n=n, beta=beta)
    by_key = {(r.mechanism, r.family): r for r in result.rows}
    for target in targets(question_type, epsilon=1.0, options=options):
        oracle, categories = target.oracle, target.categories
        if isinstance(oracle, OptionSampling):
            values, counts = option_sets(categories, [0.5] * categories, n)
        elif categories == 2 and question_type in ("yes_no", "multiple_choice"):
            values, counts = [0, 1], [n // 2, n - n // 2]
        else:
            counts = [n // categories] * categories
            counts[0] += n - sum(counts)
            values = list(range(categories))
        if question_type == "multiple_choice" and not isinstance(oracle, OptionSampling):
            values, counts = [0, 1], [n // 2, n - n // 2]  # one option of the split
        statistics = sample_statistics(oracle, values, counts, 200, rng)
        estimates = oracle.estimate(statistics, n)
        if estimates.shape[1] == 2 and question_type == "multiple_choice":
            estimates = estimates[:, 1:]
        model = score_model(oracle)
        for family in FAMILIES:
            row = by_key[(target.mechanism, family)]
            for level, predicted in (
                (beta, row.half_width),
                (beta / categories, row.simultaneous_half_width),
            ):
                if family == "chebyshev":
                    simulated = math.sqrt(oracle.variance_bound(n) / level)
                else:
                    simulated = model.scale * mean_half_width(family, estimates, n, model, level)
                assert predicted == pytest.approx(simulated, rel=0.10), (
                    target.mechanism,
                    family,
                    level,
                    predicted,
                    simulated,
                )


def test_planner_inverts_n_and_half_width() -> None:
    target = next(
        t for t in targets("single_choice", epsilon=1.0, options=16) if t.mechanism == "oue"
    )
    for family in FAMILIES:
        width = expected_half_width(target, family, 20_000, 0.05)
        needed = respondents_for(target, family, width, 0.05)
        assert needed <= 20_000
        assert expected_half_width(target, family, needed - 1, 0.05) > width
