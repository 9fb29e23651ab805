"""Shares among those who answered, the declined and not-applicable shares, the scale's mean
and net promoter score (deniable.nonresponse): unbiased parts, intervals that cover.

* Exact, by enumerating the law of the statistics at small n (a product of the reports'
  exact laws, folded respondent by respondent): the numerators and denominators are
  unbiased, and every published interval covers its truth with probability >= 1 - β.
* By simulation at n = 1,000 (100 trials) with the vectorized mechanisms: every row misses
  no more often than Binomial(trials, β) allows with false-alarm probability 1e-6, and the
  point estimates lie near the truth.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from deniable import noised as noised_module
from deniable.dummies import BinomialDummies, calibrate
from deniable.noised import DummyNoise
from deniable.questionnaire import DECLINED, NOT_APPLICABLE
from deniable.results import question_results
from deniable.survey import FORMAT, Survey

FALSE_ALARM = 1e-6


def question_of(definition: dict, *, optional: bool = True, conditional: bool = True):
    target = {**definition, "id": "q", "text": "Q?"}
    if optional:
        target["optional"] = True
    if conditional:
        target["show_if"] = {"question": "gate", "equals": True}
    gate = {"id": "gate", "type": "yes_no", "text": "Gate?", "epsilon": 1.0}
    survey = Survey.from_dict(
        {"format": FORMAT, "id": "s", "title": "S", "questions": [gate, target]}
    )
    return survey.question("q")


def truth(question, answers: list) -> dict[str, float]:
    """The rows' true values for the true answers (answers, DECLINED, NOT_APPLICABLE)."""
    n = len(answers)
    declined = sum(a is DECLINED for a in answers)
    absent = sum(a is NOT_APPLICABLE for a in answers)
    given = [a for a in answers if a not in (DECLINED, NOT_APPLICABLE)]
    rows: dict[str, float] = {}
    if question.extras and "declined" in question.extras:
        rows["declined"] = declined / (n - absent) if n > absent else math.nan
    if "not_applicable" in question.extras:
        rows["not_applicable"] = absent / n
    if not given:
        return rows
    if question.type == "numeric":
        rows["mean"] = float(np.mean(given))
    elif question.type == "multiple_choice":
        for label in question.options:
            rows[label] = sum(label in a for a in given) / len(given)
    else:
        indexes = [question.check_base(a) for a in given]
        for i, label in enumerate(question.base_labels):
            rows[label] = indexes.count(i) / len(given)
        if question.type == "scale":
            rows["mean"] = float(np.mean(given))
            if question.points == 11:
                rows["nps"] = (
                    100 * (sum(a >= 9 for a in given) - sum(a <= 6 for a in given)) / len(given)
                )
    return rows


def _fold(law: dict[tuple, float], step: dict[tuple, float]) -> dict[tuple, float]:
    folded: dict[tuple, float] = defaultdict(float)
    for total, p in law.items():
        for add, q in step.items():
            folded[tuple(a + b for a, b in zip(total, add, strict=True))] += p * q
    return dict(folded)


def with_dummies(question, law: dict[tuple, float], noise) -> dict[tuple, float]:
    """``law`` with the relay's dummies folded in: per batch and per output report y of the
    question's mechanism (the non-responses' included), D_y ~ noise.law copies of y."""
    pmf = noise.law.pmf()
    for _ in range(noise.batches):
        for y in question.oracle.output_reports():
            one = np.asarray(question.statistics([y]), dtype=np.int64)
            law = _fold(law, {tuple((count * one).tolist()): p for count, p in enumerate(pmf)})
    return law


def statistics_law(question, answers: list) -> dict[tuple, float]:
    """The exact law of the summed statistics, folded one respondent at a time."""
    law: dict[tuple, float] = {(0,) * question.statistics_size: 1.0}
    for answer in answers:
        value = question.check_answer(answer)
        if hasattr(question.oracle, "option_oracle"):  # one binary RR per bit
            reports = {(): 1.0}
            for bit in value:
                per = question.oracle.option_oracle.report_distribution(bit)
                reports = {
                    r + (int(y, 16),): p * q for r, p in reports.items() for y, q in per.items()
                }
            outputs = {bytes(r).hex(): p for r, p in reports.items()}
        else:
            outputs = question.oracle.report_distribution(value)
        step = {tuple(question.statistics([y]).tolist()): p for y, p in outputs.items()}
        law = _fold(law, step)
    return law


CASES = {
    "yes_no grr": (
        {"type": "yes_no", "epsilon": 4.0},
        [True, True, False, DECLINED, NOT_APPLICABLE],
    ),
    "single choice oue": (
        {"type": "single_choice", "epsilon": 4.0, "options": ["a", "b"], "mechanism": "oue"},
        ["a", "b", "b", DECLINED, NOT_APPLICABLE],
    ),
    "scale of 5": (
        {"type": "scale", "points": 5, "epsilon": 5.0, "mechanism": "grr"},
        [1, 5, 4, DECLINED],
    ),
    "nps": (
        {"type": "scale", "points": 11, "epsilon": 6.0, "mechanism": "grr"},
        [10, 6, NOT_APPLICABLE],
    ),
    # Everyone answered (A = 1): the shares with the direct families, as single choice.
    "required scale of 5": (
        {"type": "scale", "points": 5, "epsilon": 3.0, "mechanism": "grr"},
        [2, 5, 1],
    ),
    "multiple choice sampled": (
        {
            "type": "multiple_choice",
            "epsilon": 4.0,
            "options": ["x", "y"],
            "mechanism": "option_sampling",
        },
        [["x"], ["x", "y"], DECLINED, NOT_APPLICABLE],
    ),
    "multiple choice per option": (
        {
            "type": "multiple_choice",
            "epsilon": 4.0,
            "options": ["x", "y"],
            "mechanism": "binary_rr",
        },
        [["x"], [], DECLINED, NOT_APPLICABLE],
    ),
    "number": (
        {"type": "numeric", "epsilon": 5.0, "lo": 0, "hi": 10},
        [0.0, 10.0, 7.5, DECLINED, NOT_APPLICABLE],
    ),
}


def flags(answers: list) -> dict[str, bool]:
    return {"optional": DECLINED in answers, "conditional": NOT_APPLICABLE in answers}


@pytest.mark.parametrize("beta", [0.05, 0.3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_exact_coverage_and_unbiased_parts_by_enumeration(case: str, beta: float) -> None:
    definition, answers = CASES[case]
    question = question_of(definition, **flags(answers))
    check_exact_coverage(question, answers, beta, None)


# With the relay's dummies: every output value (declined and not applicable included) gets
# D ~ Bin(trials, 1/2) dummies per batch, few respondents: small enough to enumerate exactly.
NOISED_CASES = {
    "optional grr": ("yes_no grr", [True, False, DECLINED, NOT_APPLICABLE], 1, 1),
    "optional grr x2": ("yes_no grr", [True, DECLINED, NOT_APPLICABLE], 1, 2),
    "scale of 5": ("scale of 5", [1, 5, DECLINED], 1, 1),
    "required scale of 5": ("scale of 5", [2, 5], 1, 1),
    "number": ("number", [0.0, 10.0, DECLINED], 1, 1),
}


@pytest.mark.parametrize("case", sorted(NOISED_CASES))
def test_exact_coverage_and_unbiased_parts_with_relay_dummies(case: str) -> None:
    """The same exact enumeration with the relay's dummies inside the statistics: the
    estimates that subtract their mean are unbiased, and every published interval (the
    scale's Hoeffding one with the dummies' terms included) covers with probability
    >= 1 - β, per row and simultaneously."""
    name, answers, trials, batches = NOISED_CASES[case]
    question = question_of(CASES[name][0], **flags(answers))
    noise = DummyNoise(law=BinomialDummies(trials=trials), batches=batches)
    check_exact_coverage(question, answers, 0.05, noise)


def check_exact_coverage(question, answers, beta, noise) -> None:
    law = statistics_law(question, answers)
    if noise is not None:
        law = with_dummies(question, law, noise)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    n = len(answers)
    expected = truth(question, answers)
    covered: dict[str, float] = defaultdict(float)
    simultaneous = 0.0
    informative = 0.0
    mean_statistics = np.zeros(question.statistics_size)
    for total, p in law.items():
        mean_statistics += p * np.asarray(total, float)
        result = question_results(question, np.asarray(total), n, beta=beta, noise=noise)
        check_consistent(question, result)
        rows = {row["label"]: row for row in result["categories"]}
        assert set(rows) >= set(expected)
        every = True
        for label, value in expected.items():
            row = rows[label]
            inside = row["lower"] - 1e-9 <= value <= row["upper"] + 1e-9
            covered[label] += p * inside
            every &= row["simultaneous_lower"] - 1e-9 <= value <= row["simultaneous_upper"] + 1e-9
            if label not in ("mean", "nps"):
                informative += p * (row["upper"] - row["lower"] < 1 - 1e-9)
        simultaneous += p * every
    for label, probability in covered.items():
        assert probability >= 1 - beta - 1e-12, (label, probability)
    assert simultaneous >= 1 - beta - 1e-12
    assert informative > 0  # the intervals are not all [0, 1]
    # The parts are unbiased: the expected statistics give the true frequencies exactly.
    if noise is not None:
        mean_statistics = noised_module.debiased_statistics(question.oracle, mean_statistics, noise)
    check_unbiased_parts(question, answers, mean_statistics, n)


def check_consistent(question, result: dict) -> None:
    """The published points: each inside its own intervals; the shares among those who
    answered a distribution (single choice, yes/no, scale) and a scale's mean and NPS those
    of the published shares."""
    rows = result["categories"]
    for row in rows:
        if row["estimate"] is not None:
            assert row["lower"] <= row["estimate"] <= row["upper"], row
            assert row["simultaneous_lower"] <= row["estimate"] <= row["simultaneous_upper"], row
    if question.type in ("multiple_choice", "numeric"):
        return
    shares = {r["label"]: r["estimate"] for r in rows if r["label"] in question.base_labels}
    assert list(shares) == list(question.base_labels)
    scores = {r["label"]: r["estimate"] for r in rows if r["label"] in ("mean", "nps")}
    if None in shares.values():
        assert set(scores.values()) <= {None}
        return
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-12)
    assert min(shares.values()) >= 0.0
    if question.type == "scale":
        assert scores["mean"] == pytest.approx(sum(int(v) * x for v, x in shares.items()), abs=1e-9)
        if question.points == 11:
            promoters = shares["9"] + shares["10"]
            detractors = sum(shares[str(v)] for v in range(7))
            assert scores["nps"] == pytest.approx(100 * (promoters - detractors), abs=1e-7)


def check_unbiased_parts(question, answers, mean_statistics, n) -> None:
    oracle = question.oracle
    values = [question.check_answer(a) for a in answers]
    if question.type == "numeric":
        status = oracle.status_oracle.estimate(mean_statistics[1:], n)
        held = np.bincount([v[0] for v in values], minlength=oracle.statuses) / n
        assert status == pytest.approx(held, abs=1e-9)
        # B Σ sign / n is unbiased for Σ t over those who answered / n.
        t = [2 * (v[1] - oracle.lo) / (oracle.hi - oracle.lo) - 1 for v in values if v[0] == 0]
        assert oracle.sign_oracle.bound * mean_statistics[0] / n == pytest.approx(
            sum(t) / n, abs=1e-9
        )
        return
    if question.type == "multiple_choice":
        per = oracle.per_category
        estimates = per.estimate(mean_statistics, n) if hasattr(oracle, "option_oracle") else None
        if estimates is None:
            estimates = oracle.estimate(mean_statistics, n)
        held = np.mean(np.asarray(values, float), axis=0)
    else:
        estimates = oracle.estimate(mean_statistics, n)
        held = np.bincount(values, minlength=oracle.domain_size) / n
    assert estimates == pytest.approx(held, abs=1e-9)


# -- by simulation ----------------------------------------------------------------------------


def budget(trials: int, beta: float) -> int:
    """Misses allowed: P[Binomial(trials, β) > budget] <= 1e-6."""
    return int(stats.binom.isf(FALSE_ALARM, trials, beta))


def population(question, n: int, rng: np.random.Generator) -> list:
    answers: list = []
    for _ in range(n):
        u = rng.random()
        if "not_applicable" in question.extras and u < 0.3:
            answers.append(NOT_APPLICABLE)
        elif "declined" in question.extras and u < 0.4:
            answers.append(DECLINED)
        elif question.type == "numeric":
            answers.append(float(rng.beta(2, 5) * 40))
        elif question.type == "scale":
            answers.append(int(rng.choice([0, 3, 7, 9, 10], p=[0.2, 0.2, 0.2, 0.2, 0.2])))
        elif question.type == "multiple_choice":
            answers.append(
                [
                    o
                    for o, c in zip(question.options, (0.6, 0.2, 0.9), strict=True)
                    if rng.random() < c
                ]
            )
        else:
            answers.append(question.options[int(rng.random() < 0.7)])
    return answers


SIMULATED = {
    "single choice grr": {
        "type": "single_choice",
        "epsilon": 1.0,
        "options": ["a", "b", "c"],
        "mechanism": "grr",
    },
    "nps oue": {"type": "scale", "points": 11, "epsilon": 2.0, "mechanism": "oue"},
    # GRR: the mean's and NPS's published interval is Hoeffding's on the weighted sum.
    "nps grr": {"type": "scale", "points": 11, "epsilon": 2.0, "mechanism": "grr"},
    "multiple choice per option": {
        "type": "multiple_choice",
        "epsilon": 2.0,
        "options": ["x", "y", "z"],
        "mechanism": "binary_rr",
    },
    "number": {"type": "numeric", "epsilon": 1.0, "lo": 0, "hi": 40},
}


# With the relay's dummies (the law calibrated for central ε = 1, δ = 1e-6: 27 per output
# value on average, two noised batches): the same budget holds.
NOISED_SIMULATED = ("nps grr", "number")


@pytest.mark.parametrize(
    ("case", "noised"),
    [(case, False) for case in sorted(SIMULATED)] + [(case, True) for case in NOISED_SIMULATED],
)
def test_coverage_by_simulation(case: str, noised: bool) -> None:
    rng = np.random.default_rng(20261128)
    question = question_of(SIMULATED[case])
    noise = None
    if noised:
        noise = DummyNoise(law=calibrate(1.0, 1e-6).law, batches=2)
        outputs = noised_module.output_statistics(question.oracle)
    n, trials, beta = 1000, 100, 0.05
    answers = population(question, n, rng)
    expected = truth(question, answers)
    values = [question.check_answer(a) for a in answers]
    batch_values = np.array(
        [(v[0], v[1] if v[1] is not None else 0.0) for v in values]
        if question.type == "numeric"
        else values
    )
    misses: dict[str, int] = defaultdict(int)
    joint_misses = 0
    estimates: dict[str, list] = defaultdict(list)
    for _ in range(trials):
        batch = question.oracle.randomize_many(batch_values, rng)
        statistics = question.oracle.statistics(batch)
        if noise is not None:  # D_y per output value and batch, drawn from the law
            for _ in range(noise.batches):
                counts = noise.law.sample_values(len(outputs), rng)
                statistics = statistics + np.asarray(counts) @ outputs
        result = question_results(question, statistics, n, beta=beta, noise=noise)
        check_consistent(question, result)
        every = True
        for row in result["categories"]:
            value = expected[row["label"]]
            misses[row["label"]] += not row["lower"] <= value <= row["upper"]
            every &= row["simultaneous_lower"] <= value <= row["simultaneous_upper"]
            estimates[row["label"]].append(row["estimate"])
        joint_misses += not every
    if case == "nps grr" and not noised:  # the weighted-sum (Hoeffding) interval is published
        last = {row["label"]: row for row in result["categories"]}
        for label in ("mean", "nps"):
            row = last[label]
            width = row["upper"] - row["lower"]
            assert width < row["simultaneous_upper"] - row["simultaneous_lower"], label
    allowed = budget(trials, beta)
    assert max(misses.values()) <= allowed, dict(misses)
    assert joint_misses <= allowed
    for label, values_ in estimates.items():
        # Consistency: the average estimate is near the truth (ratios are not exactly unbiased).
        spread = 100 if label == "nps" else (40 if label == "mean" else 1)
        assert abs(np.mean(values_) - expected[label]) < 0.05 * spread, label


@pytest.mark.parametrize("trials", [None, 4, 40])
def test_the_weighted_sums_hoeffding_width_covers_exactly_with_dummies(trials) -> None:
    """Hoeffding's interval on a scale's weighted sum Σ w f (``_weighted_half_width``), with
    k batches of dummies on every output: the exact law of the integer score total (the
    respondents' scores, then k · m dummy terms w_y D) gives coverage >= 1 - level for every
    split of the respondents between the lowest and highest point.  (Leaving the dummies'
    terms out of the width drops that coverage to 0.24 here: the test can fail.)"""
    from deniable.nonresponse import _weighted_half_width

    question = question_of(CASES["scale of 5"][0], optional=False, conditional=False)
    oracle = question.oracle
    weights = np.arange(5, dtype=float)  # points - first point
    noise = None if trials is None else DummyNoise(law=BinomialDummies(trials=trials), batches=2)
    p, q = oracle.p_star, oracle.q_star
    level = 0.05
    for n in (2, 6):
        half = _weighted_half_width(oracle, weights, n, level, noise)
        for high in range(n + 1):
            answers = [4] * high + [0] * (n - high)
            law = np.ones(1)  # over the integer score total 0..
            for answer in answers:
                one = np.full(5, q)
                one[answer] = p
                law = np.convolve(law, np.bincount(weights.astype(int), weights=one))
            mean_dummies = 0.0
            if noise is not None:
                pmf = np.asarray(noise.law.pmf())
                for _ in range(noise.batches):
                    for w in weights.astype(int)[1:]:  # the lowest point weighs nothing
                        spread = np.zeros(w * (pmf.size - 1) + 1)
                        spread[::w] = pmf
                        law = np.convolve(law, spread)
                mean_dummies = noise.batches * noise.law.mean * weights.sum()
            totals = np.arange(law.size)
            estimate = (totals - mean_dummies - n * q * weights.sum()) / (n * (p - q))
            truth = 4 * high / n
            assert float(law @ estimate) == pytest.approx(truth, abs=1e-9)  # unbiased
            covered = law[np.abs(estimate - truth) <= half + 1e-12].sum()
            assert covered >= 1 - level, (n, high, covered)


def test_precision_describes_the_shares_among_those_who_answered() -> None:
    """A question that applies to few: the all-respondents estimates are precise, but the
    published shares among the few who answered are wide, and the result says so."""
    question = question_of({**SIMULATED["single choice grr"], "epsilon": 4.0}, optional=False)
    rng = np.random.default_rng(5)
    n = 20_000
    answers = [
        NOT_APPLICABLE if rng.random() < 0.98 else question.options[int(rng.random() < 0.7)]
        for _ in range(n)
    ]
    values = np.array([question.check_answer(a) for a in answers])
    statistics = question.oracle.statistics(question.oracle.randomize_many(values, rng))
    from deniable.estimation import estimate_frequencies

    overall = estimate_frequencies(question.oracle, statistics, n, beta=0.05)
    assert overall.precision == "ok"  # ±10 points or better over all respondents
    result = question_results(question, statistics, n, beta=0.05)
    shares = [row for row in result["categories"] if row["share_of"] == "answered"]
    assert max(row["upper"] - row["lower"] for row in shares) > 0.2
    assert result["precision"] in ("imprecise", "uninformative")
    wide = max(row["upper"] - row["lower"] for row in shares) / 2
    assert result["uninformative"] == (wide >= 0.5)


def test_a_required_scale_publishes_its_shares_as_single_choice_and_adds_to_one() -> None:
    """A scale everyone answered (no extras, A = 1): its shares carry the direct families'
    bounds, the tightest named, exactly as the same mechanism's single-choice question; the
    shares add to 100% even where raw estimates are negative (few respondents, ε = 1: the
    demo's case, which added to 118% when each share was clipped), and the mean and NPS are
    those of the shares, inside their own intervals."""
    scale = question_of(
        {"type": "scale", "points": 11, "epsilon": 1.0, "mechanism": "grr"},
        optional=False,
        conditional=False,
    )
    single = question_of(
        {
            "type": "single_choice",
            "epsilon": 1.0,
            "mechanism": "grr",
            "options": [str(v) for v in range(11)],
        },
        optional=False,
        conditional=False,
    )
    assert not scale.extras
    rng = np.random.default_rng(7)
    answers = rng.choice(11, size=60, p=[0.3] + [0.05] * 8 + [0.1, 0.2])
    statistics = scale.oracle.statistics(scale.oracle.randomize_many(answers, rng))
    n = len(answers)
    result = question_results(scale, statistics, n, beta=0.05)
    plain = question_results(single, statistics, n, beta=0.05)
    assert result["tightest"] == plain["tightest"] != "ratio"
    assert result["simultaneous_tightest"] == plain["simultaneous_tightest"]
    rows = result["categories"]
    assert [r["label"] for r in rows] == [*scale.base_labels, "mean", "nps"]
    raw = [c["estimate"] for c in plain["categories"]]
    assert min(raw) < 0  # the case the clipped shares added to more than 100%
    assert sum(min(max(x, 0.0), 1.0) for x in raw) > 1.05
    family = plain["tightest"]
    for row, category in zip(rows, plain["categories"], strict=False):
        assert row["share_of"] == "answered"
        for end in ("lower", "upper", "simultaneous_lower", "simultaneous_upper"):
            assert row[end] == category[end], end
        assert row[f"{family}_lower"] == category[f"{family}_lower"]
        assert "tightest" not in row  # the question's family, as for single choice
        assert row["raw"] == category["estimate"]  # the unbiased estimate, kept beside
    assert rows[-2]["tightest"] == rows[-1]["tightest"] == "ratio"
    assert result["answered"] == 1.0
    check_consistent(scale, result)
