"""Estimation with the relay's dummy reports (deniable.noised): proved exactly, then sampled.

Every mechanism that names its output reports (binary RR, GRR, option sampling,
Duchi) has an estimate affine in its statistics, and each report (real or dummy)
adds s(y) to them.  So for one category the estimate is unit · Z + constant with Z
an integer: Σ over respondents of z(report) plus Σ over batches and outputs of
D_y · z(y).  Its exact law is a convolution: each respondent's report law (the
mechanism's own ``report_distribution``), then every dummy count's law.  From it the
tests sum, exactly, the probability that each published interval family (Chebyshev,
exact-variance Chebyshev, Bernstein, and the exact tail where it is published) holds
the respondents' own answer, for every number of holders 0..n (shares 0 and 1
included), at β and at β/d (the simultaneous level).  The expectation of the
estimate is checked to equal the truth exactly, and its variance to be the
mechanism's plus the dummies' added variance.  Simulations at fixed seeds, with real
randomization and dummies drawn from the law, check the same at the targets' sizes
with a failure budget whose false alarm rate is at most 1e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from deniable import exact_tail, noised
from deniable.dummies import BinomialDummies, calibrate, dummy_total_law
from deniable.errors import InvalidParameter
from deniable.estimation import estimate_frequencies, estimate_mean, interval_families
from deniable.mechanisms import GRR, BinaryRR, Duchi, OptionSampling

FALSE_ALARM = 1e-6
TARGET_LAW = calibrate(1.0, 1e-6).law  # geometric, shift 27, top 54
SMALL_LAW = BinomialDummies(trials=6)
SLACK = 1e-9


def _linear(mechanism, n: int) -> tuple[np.ndarray, np.ndarray]:
    size = mechanism.statistics_size
    zero = np.asarray(mechanism.estimate(np.zeros(size), n), dtype=np.float64)
    columns = [
        np.asarray(mechanism.estimate(np.eye(size)[j], n), dtype=np.float64) - zero
        for j in range(size)
    ]
    return np.stack(columns, axis=1), zero


def _shifted(pmf: np.ndarray, step: int) -> tuple[int, np.ndarray]:
    """The law of step · X for X with law ``pmf`` on 0..: (offset, pmf on a unit lattice)."""
    if step == 0:
        return 0, np.array([pmf.sum()])
    spread = np.zeros(abs(step) * (pmf.size - 1) + 1)
    spread[:: abs(step)] = pmf
    if step > 0:
        return 0, spread
    return -(spread.size - 1), spread[::-1]


def _convolve(first, second):
    return first[0] + second[0], np.convolve(first[1], second[1])


def exact_estimate_law(mechanism, answers, v: int, noise, n: int):
    """(estimates, probabilities): the exact law of category v's estimate (output units)
    from ``answers`` (one per respondent) and the dummies of ``noise``; and the values Z of
    the integer statistic behind each estimate (the support count for a pure oracle)."""
    linear, zero = _linear(mechanism, n)
    outputs = mechanism.output_reports()
    per_output = noised.output_statistics(mechanism) @ linear[v]  # effect of one report
    unit = np.min(np.abs(per_output[np.abs(per_output) > 1e-15]))
    steps = np.rint(per_output / unit).astype(np.int64)
    assert np.allclose(steps * unit, per_output, rtol=1e-12, atol=1e-15)
    law = (0, np.ones(1))
    for answer in answers:
        distribution = mechanism.report_distribution(answer)
        low = int(min(steps))
        one = np.zeros(int(max(steps)) - low + 1)
        for y, step in zip(outputs, steps, strict=True):
            one[step - low] += distribution.get(y, 0.0)
        law = _convolve(law, (low, one))
    if noise is not None:
        pmf = np.asarray(noise.law.pmf(), dtype=np.float64)
        for _ in range(noise.batches):
            for step in steps:
                law = _convolve(law, _shifted(pmf, int(step)))
    offset, probabilities = law
    values = offset + np.arange(probabilities.size)
    constant = mechanism.estimate(
        -(noised.dummy_mean(mechanism, noise) if noise is not None else 0.0)
        * np.ones(mechanism.statistics_size),
        n,
    )[v]
    keep = probabilities > 0
    return unit * values[keep] + constant, probabilities[keep], values[keep]


def _covered(low, high, truth, probabilities) -> float:
    inside = (low <= truth + SLACK) & (truth - SLACK <= high)
    return float(probabilities[inside].sum())


def _families(mechanism, estimates, values, n: int, noise, beta: float, categories: int):
    """Every family's (lower, upper) per estimate, as deniable.estimation builds them."""
    model = noised.noised_score_model(mechanism, n, noise)
    bound = mechanism.variance_bound(n)
    if noise is not None:
        bound += float(noised.added_variance(mechanism, n, noise).max())
    families = interval_families(estimates, n, model, beta, categories, bound)
    result = {name: (i.lower, i.upper) for name, i in families.items()}
    if model.tail is not None:
        (low, high), _ = exact_tail.interval(model.tail, values, n, (beta, beta))
        result["exact_tail"] = (low, high)
    return result


def _check_coverage(mechanism, answers_of, truth_of, n, noise, categories, v=0):
    worst = {}
    for k in range(n + 1):
        answers = answers_of(k)
        estimates, probabilities, values = exact_estimate_law(mechanism, answers, v, noise, n)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-9)
        truth = truth_of(answers)
        # unbiased, exactly
        assert float(probabilities @ estimates) == pytest.approx(truth, abs=1e-9)
        for beta in (0.05, 0.05 / categories):
            for family, (low, high) in _families(
                mechanism, estimates, values, n, noise, beta, categories
            ).items():
                covered = _covered(low, high, truth, probabilities)
                assert covered >= 1 - beta - 1e-9, (family, n, k, beta, covered)
                worst[family] = min(worst.get(family, 1.0), covered - (1 - beta))
    return worst


NOISES = [
    pytest.param(SMALL_LAW, 1, id="binomial6"),
    pytest.param(SMALL_LAW, 3, id="binomial6x3"),
    pytest.param(TARGET_LAW, 1, id="geometric-eps1"),
    pytest.param(TARGET_LAW, 2, id="geometric-eps1x2"),
]


@pytest.mark.parametrize(("law", "batches"), NOISES)
@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_frequency_coverage_is_exact_for_every_family_and_holder_count(law, batches, epsilon):
    noise = noised.DummyNoise(law=law, batches=batches)
    for mechanism in (BinaryRR(epsilon=epsilon), GRR(epsilon=epsilon, domain_size=3)):
        d = mechanism.domain_size
        for n in (1, 4, 12):
            worst = _check_coverage(
                mechanism,
                lambda k, n=n: [0] * k + [1] * (n - k),
                lambda answers: float(np.mean(np.asarray(answers) == 0)),
                n,
                noise,
                d,
            )
            assert "exact_tail" in worst and "bernstein" in worst
        assert worst["exact_tail"] < 0.03  # not vacuous: the intervals are not [0, 1]


@pytest.mark.parametrize(("law", "batches"), NOISES[:3])
def test_option_sampling_coverage_is_exact(law, batches):
    noise = noised.DummyNoise(law=law, batches=batches)
    mechanism = OptionSampling(epsilon=2.0, options=3)
    assert noised.noised_score_model(mechanism, 5, noise).tail is None  # no exact tail
    for n in (1, 5, 9):
        _check_coverage(
            mechanism,
            lambda k, n=n: [(1, 1, 0)] * k + [(0, 1, 0)] * (n - k),
            lambda answers: float(np.mean([a[0] for a in answers])),
            n,
            noise,
            3,
        )


@pytest.mark.parametrize(("law", "batches"), NOISES[:3])
def test_duchi_mean_coverage_is_exact(law, batches):
    noise = noised.DummyNoise(law=law, batches=batches)
    mechanism = Duchi(epsilon=1.0, lo=-2.0, hi=6.0)
    for n in (1, 4, 10):
        # k answers at the top, the rest at the bottom: every mean on the grid, ends included
        _check_coverage(
            mechanism,
            lambda k, n=n: [6.0] * k + [-2.0] * (n - k),
            lambda answers: float(np.mean(answers)),
            n,
            noise,
            1,
        )
        _check_coverage(mechanism, lambda k, n=n: [2.0] * n, lambda a: 2.0, n, noise, 1)


def test_the_variance_is_the_mechanisms_plus_the_dummies() -> None:
    noise = noised.DummyNoise(law=TARGET_LAW, batches=2)
    for mechanism, answers_of in (
        (GRR(epsilon=2.0, domain_size=3), lambda n: [0] * (n // 3) + [2] * (n - n // 3)),
        (BinaryRR(epsilon=8.0), lambda n: [0] * (n // 2) + [1] * (n - n // 2)),
        (
            OptionSampling(epsilon=2.0, options=3),
            lambda n: [(1, 0, 0)] * (n // 3) + [(0, 1, 0)] * 7,
        ),
    ):
        n = len(answers_of(20))
        answers = answers_of(20)
        estimates, probabilities, _ = exact_estimate_law(mechanism, answers, 0, noise, n)
        mean = probabilities @ estimates
        variance = probabilities @ (estimates - mean) ** 2
        if isinstance(mechanism, OptionSampling):
            truth = np.array([np.mean([a[j] for a in answers]) for j in range(3)])
        else:
            truth = np.bincount(answers, minlength=mechanism.domain_size) / n
        own = mechanism.variance(truth, n)[0]
        added = noised.added_variance(mechanism, n, noise)[0]
        assert variance == pytest.approx(own + added, rel=1e-9)
        assert added == pytest.approx(
            2
            * TARGET_LAW.variance
            * float(
                (noised.output_statistics(mechanism) @ _linear(mechanism, n)[0][0]) ** 2
                @ np.ones(len(mechanism.output_reports()))
            ),
            rel=1e-12,
        )


@pytest.mark.parametrize(
    ("mechanism", "n", "copies"),
    [
        (BinaryRR(epsilon=8.0), 30, 1),
        (BinaryRR(epsilon=1.0), 60, 1),
        (GRR(epsilon=2.0, domain_size=5), 40, 2),
        (GRR(epsilon=8.0, domain_size=5), 100, 1),
    ],
)
def test_the_published_width_is_the_widest_over_every_observed_count(mechanism, n, copies):
    """The branch and bound's width with dummies is the maximum over every count 0..n + T_max."""
    p, q = mechanism.p_star, mechanism.q_star
    noise = (TARGET_LAW, copies)
    most = n + dummy_total_law(TARGET_LAW, copies).size - 1
    for alpha in (0.05, 0.01):
        low, high = exact_tail.count_bounds(np.arange(most + 1), n, p, q, alpha, noise)
        assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) >= 0)
        widest = int((high - low).max()) / (2 * n)
        assert exact_tail.pure_widest_half_width(n, p, q, alpha, noise) == widest


def test_the_noised_tails_match_an_exact_convolution() -> None:
    n, p, q = 25, 0.8, 0.2
    extra = np.asarray(dummy_total_law(TARGET_LAW, 1))
    for k in (0, 7, 25):
        real = np.convolve(
            stats.binom.pmf(np.arange(k + 1), k, p), stats.binom.pmf(np.arange(n - k + 1), n - k, q)
        )
        exact = np.cumsum(np.convolve(real, extra / extra.sum()))
        counts = np.arange(exact.size)
        computed = exact_tail.lower_tail(np.full(counts.size, k), counts, n, p, q, extra)
        assert np.max(np.abs(computed - exact)) < 1e-12


def test_the_targets_are_met_by_the_narrowest_published_interval() -> None:
    """Central ε = 1 at δ = 1e-6 (geometric dummies), ε0 = 8, β = 0.05, worst case over the
    true shares: the exact tail on the convolved law reaches the targets."""
    law = calibrate(1.0, 1e-6).law
    figures = {
        "yes/no n=100": (BinaryRR(epsilon=8.0), 100, 0.07),
        "yes/no n=500": (BinaryRR(epsilon=8.0), 500, 0.016),
        "5 options n=100": (GRR(epsilon=8.0, domain_size=5), 100, 0.08),
    }
    for name, (mechanism, n, target) in figures.items():
        width, family = noised.noised_half_width(mechanism, n, law)
        widths = noised.noised_half_widths(mechanism, n, law)
        assert family == "exact_tail" and width <= target, (name, widths)
        assert widths["chebyshev"] == pytest.approx(
            math.sqrt(
                (
                    mechanism.variance_bound(n)
                    + noised.added_variance(
                        mechanism, n, noised.DummyNoise(law=law, batches=1)
                    ).max()
                )
                / 0.05
            )
        )
    assert noised.noised_half_width(BinaryRR(epsilon=8.0), 100, law)[0] == pytest.approx(0.06)
    assert noised.noised_half_width(BinaryRR(epsilon=8.0), 500, law)[0] == pytest.approx(0.012)


def _budget(trials: int, beta: float) -> int:
    """Misses allowed in ``trials`` independent checks: exceeded with probability <= 1e-6."""
    return int(stats.binom.isf(FALSE_ALARM, trials, beta)) + 1


def _dummies(rng, law, shape) -> np.ndarray:
    pmf = np.asarray(law.pmf(), dtype=np.float64)
    return rng.choice(pmf.size, size=shape, p=pmf / pmf.sum())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["binary_rr", "grr", "option_sampling", "duchi"])
def test_coverage_by_simulation_at_the_targets_sizes(name: str) -> None:
    """Real randomization plus dummies drawn from the law, through estimate_frequencies /
    estimate_mean: every published family, per category and simultaneously, shares 0 and 1."""
    rng = np.random.default_rng(20261128)
    beta, collections, batches = 0.05, 150, 2
    noise = noised.DummyNoise(law=TARGET_LAW, batches=batches)
    n = 500 if name == "binary_rr" else 100
    if name == "binary_rr":
        mechanism = BinaryRR(epsilon=8.0)
        answers = np.zeros(n, dtype=np.int64)  # everyone says yes: shares 1 and 0
    elif name == "grr":
        mechanism = GRR(epsilon=8.0, domain_size=5)
        answers = np.repeat([0, 1, 2], [60, 40, 0])  # a share of 0 too
    elif name == "option_sampling":
        mechanism = OptionSampling(epsilon=4.0, options=3)
        answers = np.zeros((n, 3), dtype=np.int64)
        answers[:, 0] = 1
        answers[: n // 4, 1] = 1
    else:
        mechanism = Duchi(epsilon=2.0, lo=0.0, hi=10.0)
        answers = np.where(np.arange(n) < 30, 10.0, 0.0)
    output_statistics = noised.output_statistics(mechanism)
    m = output_statistics.shape[0]
    if name == "duchi":
        truth = np.array([answers.mean()])
    elif answers.ndim == 2:
        truth = answers.mean(axis=0)
    else:
        truth = np.bincount(answers, minlength=mechanism.domain_size) / n
    d = truth.size
    misses: dict[str, np.ndarray] = {}
    together: dict[str, int] = {}
    for _ in range(collections):
        real = mechanism.statistics(mechanism.randomize_many(answers, rng))
        drawn = _dummies(rng, TARGET_LAW, (batches, m)).sum(axis=0)
        observed = real + drawn @ output_statistics
        if name == "duchi":
            result = estimate_mean(mechanism, observed, n, beta=beta, noise=noise)
            families = {
                k: (v.lower, v.upper, v.lower, v.upper) for k, v in result.intervals.items()
            }
        else:
            result = estimate_frequencies(
                mechanism, observed, n, beta=beta, noise=noise, normalize=name == "grr"
            )
            families = {
                k: (v.lower, v.upper, v.simultaneous_lower, v.simultaneous_upper)
                for k, v in result.intervals.items()
            }
        for family, (low, high, both_low, both_high) in families.items():
            inside = (low <= truth + SLACK) & (truth - SLACK <= high)
            misses[family] = misses.get(family, np.zeros(d, dtype=np.int64)) + ~inside
            all_in = np.all((both_low <= truth + SLACK) & (truth - SLACK <= both_high))
            together[family] = together.get(family, 0) + (not all_in)
    expected = {"chebyshev", "chebyshev_exact", "bernstein"}
    if name in ("binary_rr", "grr"):
        expected.add("exact_tail")
    assert set(misses) == expected
    for family in misses:
        assert misses[family].max() <= _budget(collections, beta), (family, misses[family])
        assert together[family] <= _budget(collections, beta), family


def test_estimates_subtract_the_dummies_expectation() -> None:
    """A recount: the published estimate is the mechanism's estimator on the observed
    statistics minus k · E[D] · Σ_y s(y), with n the real count."""
    mechanism = GRR(epsilon=2.0, domain_size=4)
    noise = noised.DummyNoise(law=TARGET_LAW, batches=3)
    observed = np.array([130, 95, 88, 101])
    result = estimate_frequencies(mechanism, observed, 40, noise=noise)
    recount = (observed - 3 * TARGET_LAW.mean) / 40
    expected = (recount - mechanism.q_star) / (mechanism.p_star - mechanism.q_star)
    assert np.allclose(result.estimates, expected, rtol=0, atol=1e-12)
    assert np.allclose(noised.dummy_mean(mechanism, noise), 3 * 27.0)
    plain = estimate_frequencies(mechanism, observed - 81, 40, exact=False)
    assert np.allclose(plain.estimates, result.estimates)
    assert result.variance_bound > plain.variance_bound
    assert result.intervals["exact_tail"].nominal_half_width > 0


def test_mechanisms_without_output_reports_are_refused() -> None:
    from deniable.errors import InvalidParameter
    from deniable.mechanisms import OUE

    with pytest.raises(InvalidParameter, match="output reports"):
        noised.output_statistics(OUE(epsilon=1.0, domain_size=4))


def test_comparisons_between_waves_take_each_sides_dummies_out() -> None:
    from deniable.comparison import compare_question
    from deniable.survey import Survey

    survey = Survey.from_dict(
        {
            "format": "deniable.survey/1",
            "id": "w",
            "title": "W",
            "questions": [{"id": "a", "type": "yes_no", "text": "A?", "epsilon": 8.0}],
        }
    )
    question = survey.questions[0]
    oracle = question.oracle
    first = noised.DummyNoise(law=TARGET_LAW, batches=1)
    second = noised.DummyNoise(law=TARGET_LAW, batches=3)
    before, after = np.array([60 + 27, 40 + 27]), np.array([150 + 81, 150 + 81])
    body = compare_question(question, before, 100, question, after, 300, noises=(first, second))
    rows = body["comparisons"]
    expected = oracle.estimate(after - 81, 300) - oracle.estimate(before - 27, 100)
    assert np.allclose([row["difference"] for row in rows], expected, atol=1e-12)
    bound = (
        oracle.variance_bound(100)
        + noised.added_variance(oracle, 100, first).max()
        + oracle.variance_bound(300)
        + noised.added_variance(oracle, 300, second).max()
    )
    assert rows[0]["variance_bound"] == pytest.approx(bound, rel=1e-12)
    assert rows[0]["half_widths"]["chebyshev"] == pytest.approx(math.sqrt(bound / 0.05))


def test_question_results_of_every_noisable_type() -> None:
    """A survey's published results with dummies, for a yes/no, a multiple-choice question by
    option sampling and a numeric one: unbiased recounts, the noise member, real n."""
    from deniable.results import question_results
    from deniable.survey import Survey

    survey = Survey.from_dict(
        {
            "format": "deniable.survey/1",
            "id": "t",
            "title": "T",
            "questions": [
                {"id": "a", "type": "yes_no", "text": "A?", "epsilon": 8.0},
                {
                    "id": "m",
                    "type": "multiple_choice",
                    "text": "M?",
                    "options": ["x", "y", "z"],
                    "mechanism": "option_sampling",
                    "epsilon": 4.0,
                },
                {"id": "v", "type": "numeric", "text": "V?", "lo": 0, "hi": 10, "epsilon": 2.0},
            ],
        }
    )
    rng = np.random.default_rng(3)
    noise = noised.DummyNoise(law=TARGET_LAW, batches=2)
    for question in survey.questions:
        oracle = question.oracle
        outputs = noised.output_statistics(oracle)
        observed = rng.integers(0, 40, oracle.statistics_size)
        observed = observed + (2 * 27 * outputs.sum(axis=0)).astype(np.int64)
        result = question_results(question, observed, 60, noise=noise)
        assert result["n"] == 60 and result["noise"]["batches"] == 2
        assert result["noise"]["expected_dummies"] == pytest.approx(2 * 27 * len(outputs))
        recount = oracle.estimate(observed - noised.dummy_mean(oracle, noise), 60)
        if question.type == "numeric":
            assert result["mean"] == pytest.approx(float(recount[0]), abs=1e-12)
            assert result["tightest"] in ("chebyshev_exact", "bernstein")
        else:
            estimates = [c["estimate"] for c in result["categories"]]
            assert np.allclose(estimates, recount, atol=1e-12)
            assert (result["tightest"] == "exact_tail") == (question.type == "yes_no")


def test_relay_noise_covers_optional_conditional_and_scale_questions() -> None:
    """The parser, the relay's check and the vectors agree: optional, conditional and scale
    questions of a mechanism that names its outputs are noised, with the non-responses'
    outputs among the dummies'; a multiple-choice question by one binary RR per option, or a
    scale by a unary encoding, is refused in words."""
    import json
    from importlib import resources

    from deniable.errors import InvalidSurvey
    from deniable.relay.noise import check_terms
    from deniable.survey import Survey

    vectors = json.loads(
        resources.files("deniable").joinpath("vectors/sealing-vectors.json").read_text("utf-8")
    )["relay_noise"]["extended"]
    survey = Survey.from_dict(vectors["survey"], resolved=True)
    outputs = {q.id: list(q.oracle.output_reports()) for q in survey.questions}
    assert outputs == vectors["output_reports"]
    # 3 options + declined + not applicable; 5 points + declined; (3 statuses) x (2 signs)
    assert [len(outputs[q]) for q in ("brand", "mood", "count")] == [5, 6, 6]
    check_terms(survey)  # the relay adds them: no refusal
    definition = vectors["survey"]
    for refused in (
        {
            "id": "pick",
            "type": "multiple_choice",
            "text": "Pick?",
            "epsilon": 2.0,
            "options": ["x", "y"],
            "mechanism": "binary_rr",
            "optional": True,
        },
        {"id": "pick", "type": "scale", "text": "S?", "epsilon": 2.0, "points": 5},
    ):
        refused["mechanism"] = refused.get("mechanism", "oue")
        with pytest.raises(InvalidSurvey, match="one value of a small set"):
            Survey.from_dict({**definition, "questions": [*definition["questions"], refused]})


def test_a_numbers_status_and_sign_see_the_dummies_of_every_joint_output() -> None:
    """DummyNoise.repeated: a number's report is (status, sign), and the relay's dummies are
    drawn per joint output.  What they add to the status counts and to the sign total, in mean
    and variance, is that of ``repeated(2)`` on the status and ``repeated(k)`` on the sign."""
    from deniable.mechanisms import DuchiStatus

    mechanism = DuchiStatus(epsilon=2.0, lo=0.0, hi=9.0, extras=2)
    noise = noised.DummyNoise(law=TARGET_LAW, batches=3)
    joint = noised.output_statistics(mechanism)  # (6, [sign, C_0, C_1, C_2])
    assert joint.shape == (6, 4)
    mean = noised.dummy_mean(mechanism, noise)
    status = noised.dummy_mean(mechanism.status_oracle, noise.repeated(2))
    sign = noised.dummy_mean(mechanism.sign_oracle, noise.repeated(3))
    assert np.allclose(mean, np.concatenate([sign, status]))
    # Var: k Var[D] Σ_y s(y)², per statistic, from the joint outputs
    variance = noise.batches * TARGET_LAW.variance * (joint * joint).sum(axis=0)
    parts = noise.repeated(2).batches * TARGET_LAW.variance * np.ones(3)
    assert np.allclose(variance[1:], parts)
    assert variance[0] == pytest.approx(noise.repeated(3).batches * TARGET_LAW.variance * 2)


def test_the_cached_score_map_is_the_per_n_map_and_keyed_by_the_signed_probabilities() -> None:
    """The output-to-estimate map is computed once per mechanism (A(n) = A(1)/n, checked) and
    gives what the map computed at each n gives; two mechanisms equal as dataclasses but with
    different signed probabilities do not share it."""
    noise = noised.DummyNoise(law=TARGET_LAW, batches=2)
    for mechanism in (
        GRR(epsilon=1.0, domain_size=5),
        OptionSampling(epsilon=2.0, options=3),
        Duchi(epsilon=1.0, lo=-2.0, hi=6.0),
    ):
        for n in (1, 3, 1000):
            linear, _ = _linear(mechanism, n)
            shifts = noised.output_statistics(mechanism) @ linear.T
            direct = 2 * TARGET_LAW.variance * (shifts * shifts).sum(axis=0)
            assert np.allclose(noised.added_variance(mechanism, n, noise), direct, rtol=1e-12)
    signed = GRR(epsilon=1.0, domain_size=5)
    signed.adopt_probabilities({"keep": signed.resolved_parameters()["keep"] // 2})
    derived = GRR(epsilon=1.0, domain_size=5)
    assert signed == derived and noised.mechanism_key(signed) != noised.mechanism_key(derived)
    assert not np.allclose(
        noised.added_variance(signed, 10, noise), noised.added_variance(derived, 10, noise)
    )


def test_the_planner_counts_the_non_responses_dummies_and_plans_among_the_applicable() -> None:
    """``relay_noise_plan`` with extras: the mechanism runs over the answers and the extras
    (a yes/no question by GRR over 4 values; a number by Duchi with 3 statuses), the dummies
    per batch count every one of those outputs, and the half-width is the published one of
    that mechanism (a number's: its sign's, with the dummies of every status) over the
    share expected to answer."""
    from deniable.mechanisms import DuchiStatus
    from deniable.relay_noise_plan import relay_noise_plan

    yes_no = relay_noise_plan(
        "yes_no", central_epsilon=1.0, batch=300, extras=2, applicable_share=0.5
    )
    assert yes_no.mechanism == "grr" and yes_no.chosen.output_values == 4
    assert yes_no.chosen.dummies_per_batch == pytest.approx(4 * yes_no.chosen.law.mean)
    grr = GRR(epsilon=yes_no.local_epsilon, domain_size=4)
    width, _ = noised.noised_half_width(grr, 300, yes_no.chosen.law, 1, 0.05)
    assert yes_no.chosen.half_width == pytest.approx(width / 0.5, rel=1e-12)
    plain = relay_noise_plan("yes_no", central_epsilon=1.0, batch=300)
    assert plain.mechanism == "binary_rr" and plain.chosen.output_values == 2
    assert yes_no.to_dict()["extras"] == 2 and yes_no.to_dict()["applicable_share"] == 0.5

    number = relay_noise_plan("numeric", central_epsilon=1.0, batch=300, lo=0.0, hi=10.0, extras=2)
    assert number.chosen.output_values == 6 and number.fake_report_shift is None
    status = DuchiStatus(epsilon=number.local_epsilon, lo=0.0, hi=10.0, extras=2)
    width, _ = noised.noised_half_width(status.sign_oracle, 300, number.chosen.law, 3, 0.05)
    assert number.chosen.half_width == pytest.approx(width, rel=1e-12)
    with pytest.raises(InvalidParameter, match="binary_rr cannot carry this question.s non-resp"):
        relay_noise_plan("yes_no", central_epsilon=1.0, batch=300, extras=1, mechanism="binary_rr")
