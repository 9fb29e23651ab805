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
    estimate_answered,
    estimate_crosstab,
    exact_variance,
    joint_estimates,
    question_crosstab,
    scale_means,
    status_means,
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
from deniable.survey import Survey

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


# -- non-response: shares among those who answered, scales and optional numbers by group -------

QUESTIONNAIRE = {
    "format": "deniable.survey/2",
    "id": "nonresponse",
    "title": "Non-response",
    "questions": [
        {"id": "smoke", "type": "yes_no", "text": "Smoke?", "epsilon": 5, "optional": True},
        {
            "id": "much",
            "type": "numeric",
            "text": "How many?",
            "epsilon": 5,
            "lo": 0,
            "hi": 40,
            "optional": True,
            "show_if": {"question": "smoke", "equals": True},
        },
        {
            "id": "nps",
            "type": "scale",
            "points": 5,
            "text": "Recommend?",
            "epsilon": 5,
            "optional": True,
            "mechanism": "grr",
        },
        {
            "id": "why",
            "type": "multiple_choice",
            "options": ["a", "b", "c"],
            "text": "Why?",
            "epsilon": 5,
            "optional": True,
        },
        {
            "id": "fav",
            "type": "single_choice",
            "options": ["x", "y", "z"],
            "text": "Favourite?",
            "epsilon": 5,
            "show_if": {"question": "smoke", "equals": False},
            "mechanism": "oue",
        },
        {
            "id": "rate",
            "type": "scale",
            "points": 11,
            "text": "How likely?",
            "epsilon": 5,
            "mechanism": "grr",
        },
    ],
}


def questionnaire_answers(
    survey, n: int, rng: np.random.Generator, later: bool = False
) -> dict[str, list]:
    """n respondents' true answers along their paths, in mechanism terms (some decline);
    ``later``: a second wave, with fewer smokers who smoke less and rate higher."""
    columns: dict[str, list] = {q.id: [] for q in survey.questions}
    smokers = [0.2, 0.6, 0.2] if later else [0.35, 0.5, 0.15]
    for _ in range(n):
        smoke = rng.choice([True, False, None], p=smokers)
        answers = {"smoke": None if smoke is None else bool(smoke)}
        if smoke is True and rng.random() < 0.85:
            answers["much"] = float(np.clip(rng.normal(6 if later else 12, 6), 0, 40))
        if rng.random() < 0.8:
            answers["nps"] = int(rng.choice(5, p=[0.1, 0.1, 0.2, 0.3, 0.3])) + 1
        if rng.random() < 0.9:
            answers["why"] = [o for o in "abc" if rng.random() < 0.4]
        if smoke is False:
            answers["fav"] = str(rng.choice(["x", "y", "z"], p=[0.2, 0.3, 0.5]))
        answers["rate"] = int(min(10, rng.binomial(10, 0.8 if later else 0.6)))
        for question, value in survey.path_answers(answers).items():
            columns[question].append(value)
    return columns


def indicators(question, values: list) -> np.ndarray:
    """(n, categories) true indicators of each value of the question's whole domain."""
    if question.type == "multiple_choice":
        return np.array(values, dtype=np.int64)
    return np.eye(question.domain_size, dtype=np.int64)[np.array(values)]


def batch(question, values: list, rng: np.random.Generator) -> np.ndarray:
    if question.type == "numeric":
        rows = [(status, 0.0 if number is None else number) for status, number in values]
        return question.oracle.randomize_many(np.array(rows, float), rng)
    return question.oracle.randomize_many(np.array(values), rng)


def expected_scores(question, value) -> np.ndarray:
    """E[scores] of one respondent's report, from the mechanism's exact report law."""
    oracle, ax = question.oracle, axis(question.oracle)
    if isinstance(oracle, OptionwiseRR):  # one binary RR per option, independent
        bit = oracle.option_oracle
        laws = [bit.report_distribution(b) for b in value]
        return np.array(
            [sum(p * int(bit.decode_many([y])[0]) for y, p in law.items()) for law in laws]
        )
    if question.type == "numeric":
        law = {k: float(v) for k, v in oracle.exact_distribution(value).items()}
    else:
        law = oracle.report_distribution(tuple(value) if np.ndim(value) else value)
    outputs = list(law)
    scores = ax.scores(oracle.decode_many(outputs)).astype(float)
    return np.array([law[y] for y in outputs]) @ scores


def true_figures(survey, columns: dict[str, list]) -> dict[str, np.ndarray]:
    """The estimands the new estimators target, from the true answers."""
    smoke, fav = survey.question("smoke"), survey.question("fav")
    s, f = indicators(smoke, columns["smoke"]), indicators(fav, columns["fav"])
    both = (s[:, :2].sum(1) == 1) & (f[:, :3].sum(1) == 1)
    joint = s[both][:, :2].T @ f[both][:, :3] / both.sum()
    nps = np.array([v if v < 5 else -1 for v in columns["nps"]])  # index, -1 declined
    points = nps + 1.0
    by_smoke = np.array([points[(nps >= 0) & (s[:, k] == 1)].mean() for k in range(3)])
    why = np.array(columns["why"])
    by_why = np.array([points[(nps >= 0) & (why[:, k] == 1)].mean() for k in range(4)])
    much = np.array([number if status == 0 else np.nan for status, number in columns["much"]])
    by_smoke_much = np.array(
        [
            np.nanmean(much[s[:, k] == 1]) if np.any(~np.isnan(much[s[:, k] == 1])) else np.nan
            for k in range(3)
        ]
    )
    return {"joint": joint, "by_smoke": by_smoke, "by_why": by_why, "much": by_smoke_much}


def new_estimates(survey, batches: dict[str, np.ndarray], beta: float) -> dict[str, object]:
    q = survey.question
    axes = {name: axis(q(name).oracle) for name in batches}

    def statistics(first: str, second: str) -> CrosstabStatistics:
        return crosstab_statistics(axes[first], axes[second], batches[first], batches[second])

    return {
        "joint": estimate_answered(
            axes["smoke"],
            axes["fav"],
            statistics("smoke", "fav"),
            row_extras=1,
            column_extras=1,
            beta=beta,
        ),
        "by_smoke": scale_means(
            axes["smoke"],
            axes["nps"],
            statistics("smoke", "nps"),
            points=range(1, 6),
            extras=1,
            beta=beta,
        ),
        "by_why": scale_means(
            axes["why"],
            axes["nps"],
            statistics("why", "nps"),
            points=range(1, 6),
            extras=1,
            beta=beta,
        ),
        "much": status_means(axes["smoke"], axes["much"], statistics("smoke", "much"), beta=beta),
    }


def test_ratio_estimators_are_exact_on_expected_statistics() -> None:
    """E[statistics] from the exact report laws: the ratios' numerators and denominators are
    linear in them, so every estimate equals its true value exactly (up to rounding)."""
    survey = Survey.from_dict(QUESTIONNAIRE)
    rng = np.random.default_rng(8)
    columns = questionnaire_answers(survey, 120, rng)
    truth = true_figures(survey, columns)
    expected = {}
    for name in ("smoke", "fav", "nps", "why", "much"):
        question = survey.question(name)
        cache: dict = {}
        rows = []
        for value in columns[name]:
            key = repr(value)
            if key not in cache:
                cache[key] = expected_scores(question, value)
            rows.append(cache[key])
        expected[name] = np.array(rows)

    def statistics(first: str, second: str) -> CrosstabStatistics:
        za, zb = expected[first], expected[second]
        return CrosstabStatistics(n=len(za), rows=za.sum(0), columns=zb.sum(0), joint=za.T @ zb)

    q = survey.question
    answered = estimate_answered(
        axis(q("smoke").oracle),
        axis(q("fav").oracle),
        statistics("smoke", "fav"),
        row_extras=1,
        column_extras=1,
    )
    assert np.allclose(answered.estimates, truth["joint"], atol=1e-9)
    smoke_axis, nps_axis = axis(q("smoke").oracle), axis(q("nps").oracle)
    means = scale_means(
        smoke_axis, nps_axis, statistics("smoke", "nps"), points=range(1, 6), extras=1
    )
    assert np.allclose(means.mean, np.clip(truth["by_smoke"], 1, 5), atol=1e-9)
    much = status_means(smoke_axis, axis(q("much").oracle), statistics("smoke", "much"))
    known = ~np.isnan(truth["much"])
    assert known.sum() == 1 and np.allclose(much.mean[known], truth["much"][known], atol=1e-9)


def test_ratio_intervals_cover_per_cell_and_simultaneously() -> None:
    """Seeded simulation: each published interval's misses stay within the binomial bound at
    false alarm 1e-6 (union bound over every interval checked)."""
    survey = Survey.from_dict(QUESTIONNAIRE)
    n, trials, beta = 3000, 150, 0.2
    rng = np.random.default_rng(31)
    columns = questionnaire_answers(survey, n, rng)
    truth = true_figures(survey, columns)
    misses = {name: np.zeros(np.shape(value), int) for name, value in truth.items()}
    together = dict.fromkeys(truth, 0)
    for _ in range(trials):
        batches = {name: batch(survey.question(name), columns[name], rng) for name in columns}
        found = new_estimates(survey, batches, beta)
        for name, estimate in found.items():
            known = ~np.isnan(truth[name])
            value = np.where(known, truth[name], 0.0)
            lower = np.where(known, estimate.lower, -np.inf)
            upper = np.where(known, estimate.upper, np.inf)
            misses[name] += (value < lower - 1e-12) | (value > upper + 1e-12)
            outside = (value < np.where(known, estimate.simultaneous_lower, -np.inf) - 1e-12) | (
                value > np.where(known, estimate.simultaneous_upper, np.inf) + 1e-12
            )
            together[name] += bool(np.any(outside))
            assert np.all(estimate.simultaneous_lower <= estimate.lower + 1e-12)
        # Informative, so that a miss could happen: the answered cells, the non-smokers' mean
        # point (half its range) and the smokers' mean number (three quarters).
        assert np.all(found["joint"].upper[0] - found["joint"].lower[0] < 0.5)
        assert found["by_smoke"].upper[0] - found["by_smoke"].lower[0] < 2
        assert found["much"].upper[1] - found["much"].lower[1] < 30
    tests = sum(np.size(value) for value in truth.values()) + len(truth)
    limit = allowed_failures(trials, beta, tests)
    for name in truth:
        assert misses[name].max() <= limit, (name, misses[name])
        assert together[name] <= limit, (name, together[name])


def test_question_crosstab_shows_or_hides_non_response() -> None:
    survey = Survey.from_dict(QUESTIONNAIRE)
    rng = np.random.default_rng(3)
    columns = questionnaire_answers(survey, 300, rng)
    batches = {name: batch(survey.question(name), columns[name], rng) for name in columns}
    q = survey.question

    def document(rows: str, cols: str, nonresponse: str) -> dict:
        statistics = crosstab_statistics(
            axis(q(rows).oracle), axis(q(cols).oracle), batches[rows], batches[cols]
        )
        return question_crosstab(q(rows), q(cols), statistics, nonresponse=nonresponse)

    shown = document("smoke", "fav", "show")
    assert shown["kind"] == "joint" and shown["share_of"] == "all"
    assert shown["rows"]["labels"] == ["no", "yes", "declined"]
    assert shown["columns"]["labels"] == ["x", "y", "z", "not_applicable"]
    assert len(shown["cells"]) == 12
    hidden = document("smoke", "fav", "hide")
    assert hidden["share_of"] == "answered" and hidden["tightest"] == "ratio"
    assert hidden["rows"]["labels"] == ["no", "yes"] and len(hidden["cells"]) == 6
    assert hidden["rows"]["extras"] == ["declined"]
    assert 0 <= hidden["answered"]["lower"] <= hidden["answered"]["upper"] <= 1
    for cell in hidden["cells"]:
        assert 0 <= cell["simultaneous_lower"] <= cell["lower"] <= cell["upper"] <= 1
    # A scale is a mean by group; hiding drops the by-question's non-response groups.
    means = document("nps", "smoke", "show")
    assert (means["kind"], means["by"], means["of"], means["among"]) == (
        "means",
        "smoke",
        "nps",
        "answered",
    )
    assert [c["label"] for c in means["categories"]] == ["no", "yes", "declined"]
    assert [c["label"] for c in document("nps", "smoke", "hide")["categories"]] == ["no", "yes"]
    assert all(1 <= c["lower"] <= c["upper"] <= 5 for c in means["categories"])
    # An optional number by a scale's points: its mean among those who answered it.
    number = document("nps", "much", "show")
    assert number["of"] == "much" and "answered" in number["categories"][0]
    assert [c["label"] for c in number["categories"]][-1] == "declined"
    with pytest.raises(InvalidParameter, match="show or hide"):
        document("smoke", "fav", "maybe")
    # Planning: a scale's crosstab is a mean by group, not cells; said in words.
    from deniable.crosstab_plan import plan_crosstab

    with pytest.raises(InvalidParameter, match="mean for each answer"):
        plan_crosstab(("scale", 11, 1.0), ("yes_no", None, 1.0), n=100)
