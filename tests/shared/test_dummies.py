"""The relay's dummy laws: every privacy claim computed exactly, the sampler audited.

The δ of a law is checked against an independent brute-force sum over every
output of the two cells a substitution touches (exact fractions), and over every
output of a three-cell histogram (the untouched cell cancels).  Calibrations are
checked to meet (ε, δ) and to be tight (one parameter less fails).  The sampler
is checked against the law exactly (the map from its fair bits to counts) and
statistically (chi-square at fixed seeds, false alarm <= 1e-6), and it reads the
same number of bytes whatever it draws.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from deniable import dummies, shuffle
from deniable.dummies import (
    BinomialDummies,
    GeometricDummies,
    calibrate,
    delta_for,
    epsilon_for,
    law_from_dict,
    noised_central_epsilon,
    plausibility_threshold,
    plausible,
)
from deniable.errors import InvalidParameter
from deniable.randomness import SYSTEM, ByteStreamSource, GeneratorSource

from .conftest import DISTRIBUTION_SEEDS

FALSE_ALARM = 1e-6
GRID = [(0.5, 1e-6), (1.0, 1e-6), (2.0, 1e-6), (1.0, 1e-9), (1.0, 1e-3), (4.0, 1e-8)]
FAMILIES = ("binomial", "geometric")


def _brute_force_delta(law, epsilon: float, real=(3, 1), moved=(2, 2)) -> Fraction:
    """Σ over every output (c_a, c_b) of max(0, P - e^ε P'), P from counts ``real``,
    P' from ``moved`` (one report moved from a to b), in exact fractions."""
    f = law.pmf(exact=True)
    e = Fraction(math.exp(epsilon))

    def probability(counts, outputs):
        p = Fraction(1)
        for count, output in zip(counts, outputs, strict=True):
            z = output - count
            p *= f[z] if 0 <= z < len(f) else 0
        return p

    top = max(real + moved) + len(f)
    total = Fraction(0)
    for outputs in itertools.product(range(top), repeat=2):
        p, q = probability(real, outputs), probability(moved, outputs)
        total += max(Fraction(0), p - e * q)
    return total


def _smaller(law):
    if isinstance(law, BinomialDummies):
        return BinomialDummies(trials=law.trials - 1)
    return GeometricDummies(
        shift=law.shift - 1,
        top=law.top - 2,
        lower_ratio=law.lower_ratio,
        upper_ratio=law.upper_ratio,
    )


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_the_calibrated_law_meets_epsilon_delta_and_is_tight(family, epsilon, delta) -> None:
    calibration = calibrate(epsilon, delta, family)
    law = calibration.law
    assert delta_for(law, epsilon) == calibration.achieved_delta <= delta
    assert delta_for(_smaller(law), epsilon) > delta
    assert epsilon_for(law, delta) <= epsilon
    assert calibration.dummies_per_value == law.mean


@pytest.mark.parametrize(
    "law",
    [
        calibrate(1.0, 1e-6, "geometric").law,
        calibrate(2.0, 1e-6, "binomial").law,
        BinomialDummies(trials=9),
        GeometricDummies(shift=3, top=11, lower_ratio=Fraction(1, 4), upper_ratio=Fraction(2, 3)),
        GeometricDummies(shift=0, top=6, lower_ratio=Fraction(1, 2), upper_ratio=Fraction(1, 2)),
    ],
    ids=repr,
)
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 2.5])
def test_delta_agrees_with_a_brute_force_sum_over_every_output(law, epsilon) -> None:
    forward = _brute_force_delta(law, epsilon)
    backward = _brute_force_delta(law, epsilon, real=(2, 2), moved=(3, 1))
    assert delta_for(law, epsilon) == pytest.approx(float(max(forward, backward)), abs=1e-12)


@pytest.mark.parametrize(
    "law",
    [
        BinomialDummies(trials=5),
        GeometricDummies(shift=2, top=5, lower_ratio=Fraction(1, 3), upper_ratio=Fraction(1, 2)),
    ],
    ids=repr,
)
def test_the_untouched_cells_cancel_over_a_whole_histogram(law) -> None:
    """m = 3 values, every output of all three cells: the same δ as the two-cell sum."""
    f = law.pmf(exact=True)
    e = Fraction(math.exp(0.7))
    real, moved = (2, 0, 4), (1, 1, 4)
    total = Fraction(0)
    for outputs in itertools.product(range(len(f) + 4), repeat=3):

        def probability(counts, outputs=outputs):
            p = Fraction(1)
            for count, output in zip(counts, outputs, strict=True):
                z = output - count
                p *= f[z] if 0 <= z < len(f) else 0
            return p

        total += max(Fraction(0), probability(real) - e * probability(moved))
    assert delta_for(law, 0.7) == pytest.approx(float(total), abs=1e-12)


def test_no_dummy_law_is_pure() -> None:
    """δ >= P(D = min D) at every ε: the count below the fewest dummies is one-sided."""
    for law in (calibrate(1.0, 1e-6).law, BinomialDummies(trials=40)):
        assert delta_for(law, 40.0) >= law.pmf()[law.low]
        assert epsilon_for(law, law.pmf()[law.low] / 2) == math.inf
    with pytest.raises(InvalidParameter, match="delta = 0"):
        calibrate(1.0, 0.0)


@pytest.mark.parametrize("delta", [1e-6, 1e-4])
def test_epsilon_for_is_the_smallest_epsilon(delta) -> None:
    law = GeometricDummies(shift=30, top=90, lower_ratio=Fraction(1, 2), upper_ratio=Fraction(3, 4))
    epsilon = epsilon_for(law, delta)
    assert delta_for(law, epsilon) <= delta < delta_for(law, epsilon - 1e-6)


# -- the laws --------------------------------------------------------------------------------

LAWS = [
    BinomialDummies(trials=1),
    BinomialDummies(trials=37),
    calibrate(1.0, 1e-6, "binomial").law,
    calibrate(1.0, 1e-6, "geometric").law,
    GeometricDummies(shift=4, top=30, lower_ratio=Fraction(1, 5), upper_ratio=Fraction(7, 8)),
]


@pytest.mark.parametrize("law", LAWS, ids=repr)
def test_mean_and_variance_are_those_of_the_pmf(law) -> None:
    f = law.pmf(exact=True)
    assert sum(f) == 1 and sum(law.weights) == 1 << law.bits
    mean = sum(z * p for z, p in enumerate(f))
    assert law.exact_mean == mean
    assert law.exact_variance == sum((z - mean) ** 2 * p for z, p in enumerate(f))
    assert law.mean == float(mean) and law.variance == float(law.exact_variance)
    assert f[law.low] > 0 and f[law.high] > 0 and sum(f[law.low : law.high + 1]) == 1
    if isinstance(law, BinomialDummies):
        assert (law.exact_mean, law.exact_variance) == (
            Fraction(law.trials, 2),
            Fraction(law.trials, 4),
        )


def test_geometric_weights_follow_the_ratios() -> None:
    law = GeometricDummies(shift=5, top=12, lower_ratio=Fraction(1, 3), upper_ratio=Fraction(1, 2))
    w = law.weights
    for z in range(1, 6):
        assert w[z - 1] / w[z] == pytest.approx(1 / 3, rel=1e-12)
    for z in range(6, 13):
        assert w[z] / w[z - 1] == pytest.approx(1 / 2, rel=1e-12)


class _Counting(ByteStreamSource):
    """Bytes from a numpy generator, counting every read."""

    def __init__(self, seed: int) -> None:
        self.inner = GeneratorSource(np.random.default_rng(seed))
        self.reads: list[int] = []

    def token_bytes(self, count: int) -> bytes:
        self.reads.append(count)
        return self.inner.token_bytes(count)


class _Fixed(ByteStreamSource):
    """The given integers, one per read, as little-endian bytes."""

    def __init__(self, values) -> None:
        self.values = iter(values)

    def token_bytes(self, count: int) -> bytes:
        return next(self.values).to_bytes(count, "little")


@pytest.mark.parametrize("law", LAWS, ids=repr)
def test_the_sampler_reads_the_same_bytes_whatever_it_draws(law) -> None:
    size = (law.bits + 7) // 8
    for seed in DISTRIBUTION_SEEDS:
        source = _Counting(seed)
        draws = law.sample_values(50, source)
        assert source.reads == [size] * 50
        assert all(0 <= d <= law.high for d in draws)


@pytest.mark.parametrize("law", LAWS[3:], ids=repr)
def test_the_sampler_maps_bits_to_counts_exactly(law) -> None:
    """Count z gets exactly weights[z] of the 2^64 bit patterns: check every boundary."""
    ends = list(itertools.accumulate(law.weights))
    starts = [0, *ends[:-1]]
    for z, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if end > start:
            assert law.sample(_Fixed([start])) == z
            assert law.sample(_Fixed([end - 1])) == z


def test_the_binomial_sampler_counts_the_coins() -> None:
    law = BinomialDummies(trials=13)
    for bits in (0, 1, 0b1011, (1 << 13) - 1, (1 << 16) - 1):
        assert law.sample(_Fixed([bits])) == (bits & ((1 << 13) - 1)).bit_count()


@pytest.mark.parametrize("law", LAWS[1:], ids=repr)
def test_the_sampler_draws_the_law(law) -> None:
    """Chi-square over cells pooled to an expected count >= 5, false alarm 1e-6 per seed."""
    draws = 60_000
    f = np.array(law.pmf())
    for seed in DISTRIBUTION_SEEDS[:3]:
        rng = np.random.default_rng(seed)
        samples = [law.sample(rng) for _ in range(draws)]
        observed = np.bincount(samples, minlength=f.size).astype(float)
        expected = f * draws
        cells, o_cells, e_cells = [], 0.0, 0.0
        for o, e in zip(observed, expected, strict=True):
            o_cells, e_cells = o_cells + o, e_cells + e
            if e_cells >= 5:
                cells.append((o_cells, e_cells))
                o_cells, e_cells = 0.0, 0.0
        if cells:
            cells[-1] = (cells[-1][0] + o_cells, cells[-1][1] + e_cells)
        o_arr, e_arr = np.array(cells).T
        statistic = float(((o_arr - e_arr) ** 2 / e_arr).sum())
        assert stats.chi2.sf(statistic, len(cells) - 1) > FALSE_ALARM


def test_the_default_source_is_the_csprng() -> None:
    law = calibrate(1.0, 1e-6).law
    assert 0 <= law.sample() <= law.high
    assert SYSTEM.secure


# -- the signed form ---------------------------------------------------------------------------


def test_laws_round_trip_through_their_signed_form() -> None:
    for law in LAWS:
        assert law_from_dict(law.to_dict()) == law
    document = {"distribution": "geometric", "shift": 3, "top": 8}
    with pytest.raises(InvalidParameter):
        law_from_dict({**document, "lower_ratio": "1/2"})
    with pytest.raises(InvalidParameter):
        law_from_dict({**document, "lower_ratio": "3/2", "upper_ratio": "1/2"})
    with pytest.raises(InvalidParameter):
        law_from_dict({"distribution": "binomial", "trials": 0})
    with pytest.raises(InvalidParameter):
        law_from_dict({"distribution": "laplace", "scale": 1})


# -- central ε of a noised batch ---------------------------------------------------------------


def test_the_noised_batch_publishes_the_better_of_the_two_bounds() -> None:
    law = calibrate(1.0, 1e-6).law
    # A small batch at a large ε0: the dummies decide.
    assert noised_central_epsilon(law, 8.0, 100, 1e-6) == epsilon_for(law, 1e-6) <= 1.0
    # A large batch at a small ε0: the shuffle bound decides.
    shuffled = shuffle.central_epsilon(1.0, 100_000, 1e-6)
    assert noised_central_epsilon(law, 1.0, 100_000, 1e-6) == shuffled < 0.02
    # No (plausible) dummies: the shuffle bound alone.
    assert noised_central_epsilon(None, 8.0, 100, 1e-6) == shuffle.central_epsilon(8.0, 100, 1e-6)


# -- estimation ------------------------------------------------------------------------------


def test_debiasing_and_the_observed_law() -> None:
    law = calibrate(1.0, 1e-6).law
    counts = np.array([40, 75, 27])
    assert np.allclose(dummies.debiased_counts(counts, law), counts - law.mean)
    assert dummies.added_variance(law) == law.variance
    n, p = 30, 0.4
    real = stats.binom.pmf(np.arange(n + 1), n, p)
    observed = dummies.observed_count_law(real, law)
    support = np.arange(observed.size)
    assert observed.sum() == pytest.approx(1.0, abs=1e-12)
    assert support @ observed == pytest.approx(n * p + law.mean, rel=1e-12)
    variance = (support - n * p - law.mean) ** 2 @ observed
    assert variance == pytest.approx(n * p * (1 - p) + law.variance, rel=1e-10)
    # P(c = j) = Σ_r P(R = r) P(D = j - r), term by term
    f = law.pmf()
    j = 45
    assert observed[j] == pytest.approx(
        sum(real[r] * f[j - r] for r in range(n + 1) if 0 <= j - r < len(f)), rel=1e-12
    )


# -- plausibility ------------------------------------------------------------------------------


def _exact_total(law, values: int) -> list[Fraction]:
    total = [Fraction(1)]
    f = law.pmf(exact=True)
    for _ in range(values):
        new = [Fraction(0)] * (len(total) + len(f) - 1)
        for i, a in enumerate(total):
            if a:
                for j, b in enumerate(f):
                    new[i + j] += a * b
        total = new
    return total


@pytest.mark.parametrize(
    ("law", "values"),
    [
        (BinomialDummies(trials=148), 2),
        (BinomialDummies(trials=45), 5),
        (calibrate(2.0, 1e-6).law, 5),
        (calibrate(1.0, 1e-6).law, 2),
    ],
    ids=repr,
)
def test_the_plausibility_check_false_alarm_rate_is_exact(law, values) -> None:
    threshold, rate = plausibility_threshold(law, values, FALSE_ALARM)
    exact = _exact_total(law, values)
    below = sum(exact[:threshold], Fraction(0))
    assert float(below) == pytest.approx(rate, rel=1e-9, abs=1e-15)
    assert below <= FALSE_ALARM < below + exact[threshold]  # the largest such threshold
    real = 100
    assert plausible(real + threshold, real, values, law)
    assert not plausible(real + threshold - 1, real, values, law)
    assert plausible(real + values * law.high, real, values, law)
    assert not plausible(real + values * law.high + 1, real, values, law)
    assert not plausible(real, real, values, law)  # no dummies: shuffle only


def test_the_total_law_of_many_values_sums_to_one() -> None:
    law = calibrate(0.5, 1e-6).law
    total = dummies.dummy_total_law(law, 1024)
    assert total.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.arange(total.size) @ total == pytest.approx(1024 * law.mean, rel=1e-9)


# -- the documentation's figures -----------------------------------------------------------------


def test_the_docs_calibration_table_and_thresholds() -> None:
    """docs/relay-epsilon.md, "Calibrated laws at δ = 10⁻⁶" and "Plausibility"."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "relay-epsilon.md").read_text("utf-8")
    lines = text[text.index("| central ε | geometric:") :].splitlines()[2:5]
    for line in lines:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        epsilon = float(cells[0])
        geometric = calibrate(epsilon, 1e-6, "geometric").law
        binomial = calibrate(epsilon, 1e-6, "binomial").law
        assert cells[1].startswith(
            f"{geometric.shift} ({geometric.top}), {geometric.lower_ratio} ≈ "
            f"{float(geometric.lower_ratio):.4f}"
        )
        assert float(cells[2]) == geometric.mean
        assert float(cells[3]) == float(f"{geometric.variance:.3g}")
        assert int(cells[4]) == binomial.trials
        assert float(cells[5]) == binomial.mean and float(cells[6]) == binomial.variance
    law = calibrate(1.0, 1e-6).law
    thresholds = [plausibility_threshold(law, m)[0] for m in (2, 5, 1024)]
    assert thresholds == [24, 96, 27_221]
    assert "24 dummies for\nm = 2" in text and "96 for m = 5" in text and "27,221" in text


@pytest.mark.parametrize("law", LAWS[2:], ids=repr)
def test_the_privacy_loss_distribution_gives_the_same_delta(law) -> None:
    for step in (1, -1):
        losses, probabilities = dummies.privacy_loss_distribution(law, step)
        assert probabilities.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(np.diff(losses[np.isfinite(losses)]) >= 0)
        for epsilon in (0.5, 1.0, 2.0):
            with np.errstate(over="ignore"):
                hockey = probabilities * np.maximum(-np.expm1(epsilon - losses), 0.0)
            assert float(hockey.sum()) == pytest.approx(
                delta_for(law, epsilon), rel=1e-9, abs=1e-15
            )


def test_the_relay_samples_without_numpy() -> None:
    """Building a signed law and drawing from it is pure Python on the CSPRNG."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from deniable.dummies import law_from_dict\n"
        "law = law_from_dict({'distribution': 'geometric', 'shift': 27, 'top': 54,\n"
        "    'lower_ratio': '317997/524288', 'upper_ratio': '317997/524288'})\n"
        "draws = law.sample_values(5) + [law_from_dict({'distribution': 'binomial',\n"
        "    'trials': 148}).sample()]\n"
        "assert 'numpy' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _histogram_privacy_loss(law, real: tuple[int, ...], moved: tuple[int, ...]):
    """The exact privacy-loss distribution of a whole noised histogram: every output
    (c_1, ..., c_d) with its probability P (real counts ``real``) and P' (``moved``: one
    report moved between two cells), independent dummies per cell.  (losses, P)."""
    f = np.asarray(law.pmf(), dtype=np.float64)
    return _cells_privacy_loss([f] * len(real), real, moved)


def _cells_privacy_loss(pmfs, real: tuple[int, ...], moved: tuple[int, ...]):
    """As :func:`_histogram_privacy_loss`, with each cell's own dummy law ``pmfs[i]`` (a
    point mass at 0 for a cell the relay adds no dummies to)."""
    pmfs = [np.asarray(f, dtype=np.float64) for f in pmfs]
    top = max(real + moved) + max(len(f) for f in pmfs)
    grids = np.meshgrid(*[np.arange(top)] * len(real), indexing="ij")

    def probability(counts):
        result = np.ones_like(grids[0], dtype=np.float64)
        for grid, count, f in zip(grids, counts, pmfs, strict=True):
            z = grid - count
            result *= np.where((z >= 0) & (z < f.size), f[np.clip(z, 0, f.size - 1)], 0.0)
        return result

    p, q = probability(real).ravel(), probability(moved).ravel()
    keep = p > 0
    with np.errstate(divide="ignore"):
        losses = np.where(
            q[keep] > 0, np.log(p[keep]) - np.log(np.maximum(q[keep], 1e-300)), np.inf
        )
    return losses, p[keep]


def _noised_question(definition: dict, epsilon: float, conditional: bool):
    from deniable.survey import FORMAT, Survey

    law = calibrate(epsilon, 1e-6).law
    gate = {"id": "gate", "type": "yes_no", "text": "Gate?", "epsilon": 1.0}
    target = {**definition, "id": "q", "text": "Q?", "optional": True}
    if conditional:
        target["show_if"] = {"question": "gate", "equals": True}
    survey = Survey.from_dict(
        {
            "format": FORMAT,
            "id": "s",
            "title": "S",
            "questions": [gate, target],
            "relay": {
                "url": "https://relay.example",
                "min_batch": 2,
                "shuffle_unit": "question",
                "noise": {"epsilon": epsilon, "delta": 1e-6, "law": law.to_dict()},
            },
        }
    )
    return survey.question("q"), law


@pytest.mark.parametrize(
    ("definition", "epsilon", "conditional"),
    [
        # yes/no by GRR over (no, yes, declined, not applicable)
        ({"type": "yes_no", "epsilon": 2.0}, 2.0, True),
        # a number, optional: (status, sign) over (answered, declined) x (-, +)
        ({"type": "numeric", "epsilon": 2.0, "lo": 0, "hi": 10}, 4.0, False),
    ],
    ids=["optional conditional grr", "optional number"],
)
def test_an_extended_domain_gets_the_signed_delta_only_with_dummies_on_every_output(
    definition, epsilon, conditional
) -> None:
    """An optional or conditional question's outputs include its non-response values' (the
    last two here).  With D ~ law dummies on every output, as the relay adds them
    (``output_reports``), the exact privacy-loss distribution of the whole noised histogram,
    for one report moved between an answer's output and a non-response's (either way),
    gives δ(ε) = ``delta_for`` <= the signed δ.  Had the relay left the non-responses'
    outputs without dummies, the same move would be seen for certain (δ = 1)."""
    question, law = _noised_question(definition, epsilon, conditional)
    outputs = question.oracle.output_reports()
    assert len(outputs) == 4 and len(set(outputs)) == 4
    f = np.asarray(law.pmf(), dtype=np.float64)
    real = (1, 0, 2, 1)
    for a, b in itertools.product((0, 1), (2, 3)):
        for source, target in ((a, b), (b, a)):
            moved = list(real)
            moved[source] -= 1 if real[source] else 0
            moved[target] += 1 if real[source] else 0
            if moved == list(real):  # nothing to move out of an empty cell: move the other way
                continue
            for pmfs, expected in (
                ([f] * 4, delta_for(law, epsilon)),
                ([f, f, np.ones(1), np.ones(1)], 1.0),
            ):
                losses, probabilities = _cells_privacy_loss(pmfs, real, tuple(moved))
                with np.errstate(over="ignore", invalid="ignore"):
                    hockey = probabilities * np.maximum(-np.expm1(epsilon - losses), 0.0)
                assert float(np.nansum(hockey)) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert delta_for(law, epsilon) <= 1e-6 * (1 + 1e-9)
