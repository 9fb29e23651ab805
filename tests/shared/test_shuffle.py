"""deniable.shuffle: amplification by shuffling, checked against the published
figures and against a direct enumeration of the shuffled counts."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np
import pytest

from deniable.errors import InvalidParameter
from deniable.shuffle import (
    _binomial_pmf,
    _central_epsilon,
    _delta,
    _model,
    amplification,
    central_epsilon,
    delta_for,
    fmt21_closed_form,
    fmt21_valid,
    local_epsilon_for,
)

# Issue 18's table: generic ε0-LDP randomizer, δ = 1e-6 (FMT23 / Wang et al. 2024)
TABLE = {
    (1, 1_000): "0.149",
    (1, 10_000): "0.043",
    (1, 100_000): "0.012",
    (2, 1_000): "0.397",
    (2, 10_000): "0.114",
    (2, 100_000): "0.033",
    (4, 1_000): "1.85",
    (4, 10_000): "0.411",
    (4, 100_000): "0.118",
}


def rounded_like(value: float, published: str) -> str:
    """``value`` printed with as many decimals as the published figure."""
    decimals = len(published.split(".")[1])
    return f"{value:.{decimals}f}"


@pytest.mark.parametrize(("epsilon0", "n"), sorted(TABLE))
def test_issue_table(epsilon0: int, n: int) -> None:
    assert (
        rounded_like(central_epsilon(epsilon0, n, 1e-6), TABLE[epsilon0, n]) == TABLE[epsilon0, n]
    )


def test_apple_readme_figures() -> None:
    # apple/ml-shuffling-amplification README: ε0 = 4, n = 100,000, δ = 1e-6
    assert fmt21_closed_form(4, 100_000, 1e-6) == pytest.approx(0.5378040242374512, rel=1e-9)
    tight = central_epsilon(4, 100_000, 1e-6)
    assert f"{tight:.3f}" == "0.118"
    # below FMT21's own numerical range (0.1675 to 0.1728)
    assert tight < 0.1675


def test_fmt21_validity_condition() -> None:
    n, delta = 100_000, 1e-6
    edge = math.log(n / (16 * math.log(4 / delta)))  # 6.02
    assert fmt21_valid(edge, n, delta)
    assert fmt21_closed_form(edge, n, delta) is not None
    assert not fmt21_valid(edge + 1e-6, n, delta)
    assert fmt21_closed_form(edge + 1e-6, n, delta) is None
    # ε0 = 4 needs n ≥ 16·e^4·log(4/δ) ≈ 13,300
    assert fmt21_closed_form(4, 1_000, delta) is None
    assert fmt21_closed_form(4, 13_000, delta) is None
    assert fmt21_closed_form(4, 13_400, delta) is not None
    # too few reports for any ε0: log(n/(16 log(4/δ))) ≤ 0
    assert not fmt21_valid(0.001, 200, delta)


@pytest.mark.parametrize(
    ("epsilon0", "n"),
    [(e, n) for e in (0.5, 1, 2, 4) for n in (20_000, 100_000)] + [(8, 1_000_000), (6, 200_000)],
)
def test_tight_bound_below_fmt21(epsilon0: float, n: int) -> None:
    closed = fmt21_closed_form(epsilon0, n, 1e-6)
    assert closed is not None
    assert central_epsilon(epsilon0, n, 1e-6) < closed


def test_binomial_probabilities_are_exact_to_1e_13() -> None:
    # lgamma differences lose ~1e-9 at n = 10^6 (~1e-11 here); the saddle-point form must not
    for m, k, num, den in [(10, 3, 1, 2), (40_000, 20_071, 1, 2), (300_000, 290, 1, 1024)]:
        getcontext().prec = 50
        share = Decimal(num) / Decimal(den)
        exact = Decimal(math.comb(m, k)) * share**k * (1 - share) ** (m - k)
        ours = Decimal(float(_binomial_pmf(np.array([k]), m, num / den)[0]))
        assert abs(ours / exact - 1) < Decimal("1e-13")


def enumerated_delta(epsilon: float, epsilon0: float, n: int, k: int = 2) -> float:
    """The hockey-stick divergence of the shuffled clone counts, summed cell by cell.

    FMT23 / Wang et al.: the victim's report is Q0 w.p. pα, Q1 w.p. α, else Q2
    (swapped on the neighbouring input); each of the n − 1 others is Q0 or Q1
    w.p. r each; the batch reveals the counts (a, b)."""
    p = math.exp(epsilon0)
    alpha = r = 1 / (p + k - 1)
    gamma = 1 - (1 + p) * alpha
    others = n - 1

    def f(a: int, b: int) -> float:
        if a < 0 or b < 0 or a + b > others:
            return 0.0
        ways = math.comb(others, a) * math.comb(others - a, b)
        return ways * r ** (a + b) * (1 - 2 * r) ** (others - a - b)

    e = math.exp(epsilon)
    forward = backward = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            p0 = p * alpha * f(a - 1, b) + alpha * f(a, b - 1) + gamma * f(a, b)
            p1 = alpha * f(a - 1, b) + p * alpha * f(a, b - 1) + gamma * f(a, b)
            forward += max(0.0, p0 - e * p1)
            backward += max(0.0, p1 - e * p0)
    return max(forward, backward)


@pytest.mark.parametrize(("epsilon0", "n", "k"), [(1, 40, 2), (3, 60, 2), (2, 50, 6), (0.3, 25, 3)])
@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.7])
def test_delta_equals_enumeration(epsilon0: float, n: int, k: int, fraction: float) -> None:
    epsilon = fraction * epsilon0
    exact = enumerated_delta(epsilon, epsilon0, n, k)
    # k > 2: Wang et al.'s k-RR form, kept privately to show it is not a bound (below)
    model = _model(epsilon0, None if k == 2 else k)
    computed = delta_for(epsilon, epsilon0, n) if k == 2 else _delta(model, n, epsilon)
    assert computed == pytest.approx(exact, rel=1e-9, abs=1e-15)


def test_never_above_local_epsilon() -> None:
    for epsilon0 in (0.01, 0.5, 2, 8, 20):
        for n in (1, 2, 10, 1_000):
            assert 0 <= central_epsilon(epsilon0, n, 1e-6) <= epsilon0
    # alone, nothing to hide among: only δ itself buys anything (δ(ε) = (p − e^ε)/(p + 1))
    assert central_epsilon(3, 1, 1e-6) == pytest.approx(3 - 1e-6 * (1 + math.exp(-3)), abs=1e-6)
    assert central_epsilon(3, 1, 1e-6) < 3
    assert delta_for(2.0, 2.0, 1_000) == 0.0


def test_monotone() -> None:
    by_n = [central_epsilon(2, n, 1e-6) for n in (10, 100, 1_000, 10_000, 100_000)]
    assert by_n == sorted(by_n, reverse=True) and len(set(by_n)) == len(by_n)
    by_n = [central_epsilon(8, n, 1e-6) for n in (10_000, 100_000, 300_000, 1_000_000)]
    assert by_n == sorted(by_n, reverse=True) and len(set(by_n)) == len(by_n)
    by_epsilon0 = [central_epsilon(e, 5_000, 1e-6) for e in (0.1, 0.5, 1, 2, 4, 8)]
    assert by_epsilon0 == sorted(by_epsilon0) and len(set(by_epsilon0)) == len(by_epsilon0)
    by_delta = [central_epsilon(2, 5_000, d) for d in (1e-9, 1e-6, 1e-3)]
    assert by_delta == sorted(by_delta, reverse=True)
    by_epsilon = [delta_for(e, 2, 5_000) for e in (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)]
    assert by_epsilon == sorted(by_epsilon, reverse=True)


@pytest.mark.parametrize(("target", "n"), [(0.5, 10_000), (0.1, 100_000), (0.3, 5_000)])
def test_local_epsilon_for_inverts(target: float, n: int) -> None:
    epsilon0 = local_epsilon_for(target, n, 1e-6)
    assert epsilon0 > target
    assert central_epsilon(epsilon0, n, 1e-6) <= target + 1e-8
    assert central_epsilon(epsilon0 + 1e-4, n, 1e-6) > target


def test_local_epsilon_for_reads_the_table() -> None:
    # the table read backwards: central 0.411 at n = 10,000 needs about ε0 = 4
    assert local_epsilon_for(0.411, 10_000, 1e-6) == pytest.approx(4, abs=0.01)
    # a batch of one hides nothing: ε0 is the target itself
    assert local_epsilon_for(0.5, 1, 1e-6) == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize(
    ("arguments", "keywords"),
    [
        ((0, 1_000, 1e-6), {}),
        ((1, 0, 1e-6), {}),
        ((1, 1_000, 0.0), {}),
        ((1, 1_000, 1.0), {}),
        ((1, 1.5, 1e-6), {}),
        ((math.nan, 1_000, 1e-6), {}),
        ((1, 10**9, 1e-6), {}),
    ],
)
def test_bad_input(arguments: tuple, keywords: dict) -> None:
    with pytest.raises(InvalidParameter):
        central_epsilon(*arguments, **keywords)


def test_import_does_not_load_numpy() -> None:
    code = "import sys, deniable.shuffle; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_amplification_for_publishing() -> None:
    generic = amplification(4, 10_000, 1e-6, mechanism="oue", domain_size=5)
    assert generic.bound == "generic"
    assert generic.central_epsilon == central_epsilon(4, 10_000, 1e-6)
    # grr gets the generic bound too: the k-RR form is not an upper bound (below)
    grr = amplification(4, 10_000, 1e-6, mechanism="grr", domain_size=5)
    assert grr == generic
    document = grr.to_dict()
    assert document["local_epsilon"] == 4 and document["batch"] == 10_000
    assert any("collude" in line for line in document["conditions"])
    assert any("n - k" in line for line in document["conditions"])


def markdown_table(text: str, header_start: str) -> list[list[str]]:
    lines = text[text.index(header_start) :].splitlines()
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_docs_tables_match() -> None:
    """docs/relay-epsilon.md's two tables, batches up to 100,000 (10^6 is slow to test)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "relay-epsilon.md").read_text("utf-8")
    batches = (1_000, 10_000, 100_000)
    for row in markdown_table(text, "| ε0 | batch n = 1,000"):
        epsilon0 = float(row[0])
        for n, cell in zip(batches, row[1:4], strict=True):
            value = central_epsilon(epsilon0, n, 1e-6)
            if "no gain" in cell:
                assert value > epsilon0 - 1e-4
            else:
                assert float(f"{value:.3g}") == float(cell), (epsilon0, n)
    for row in markdown_table(text, "| central ε | n = 1,000"):
        target = float(row[0])
        for n, cell in zip(batches, row[1:4], strict=True):
            assert math.floor(local_epsilon_for(target, n, 1e-6) * 1000) / 1000 == float(cell)


def shuffled_binary_rr_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """The exact ε of one neighbouring pair for shuffled binary randomized response:
    n − 1 respondents answer "no", one answers "no" or "yes"; the aggregator sees
    the number of "yes" reports.  A lower bound on the true central ε."""
    q = 1 / (math.exp(epsilon0) + 1)
    others = np.array([math.comb(n - 1, k) * q**k * (1 - q) ** (n - 1 - k) for k in range(n)])
    no, yes = np.convolve(others, [1 - q, q]), np.convolve(others, [q, 1 - q])

    def divergence(epsilon: float) -> float:
        e = math.exp(epsilon)
        return max(np.maximum(no - e * yes, 0).sum(), np.maximum(yes - e * no, 0).sum())

    low, high = 0.0, epsilon0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if divergence(middle) <= delta else (middle, high)
    return low


@pytest.mark.parametrize(("epsilon0", "n"), [(1, 1_000), (4, 1_000), (2, 600)])
def test_bound_is_never_below_a_real_mechanism(epsilon0: float, n: int) -> None:
    """Soundness: the bound covers shuffled binary RR (and is within 30% of it here)."""
    exact = shuffled_binary_rr_epsilon(epsilon0, n, 1e-6)
    bound = central_epsilon(epsilon0, n, 1e-6)
    assert exact <= bound <= 1.3 * exact


def shuffled_three_rr_epsilon(epsilon0: float, n: int, delta: float, others: int) -> float:
    """The exact ε of one neighbouring pair for shuffled 3-ary randomized response:
    the n − 1 others all hold value ``others``, the one who differs holds 0 or 1; the
    aggregator sees the histogram of the n reports (summed cell by cell)."""
    p = math.exp(epsilon0)
    keep, other = p / (p + 2), 1 / (p + 2)
    shares = [other, other, other]
    shares[others] = keep
    m = n - 1
    ones, twos = np.arange(m + 1)[:, None], np.arange(m + 1)[None, :]
    inside = ones + twos <= m
    log_factorial = np.array([math.lgamma(i + 1) for i in range(m + 1)])
    rest = np.where(inside, m - ones - twos, 0)
    log_mass = (
        log_factorial[m]
        - log_factorial[ones]
        - log_factorial[twos]
        - log_factorial[rest]
        + ones * math.log(shares[1])
        + twos * math.log(shares[2])
        + rest * math.log(shares[0])
    )
    mass = np.where(inside, np.exp(log_mass), 0.0)

    def shifted(one: int, two: int) -> np.ndarray:
        grid = np.zeros((m + 2, m + 2))
        grid[one : one + m + 1, two : two + m + 1] = mass
        return grid

    zero_report, one_report, two_report = shifted(0, 0), shifted(1, 0), shifted(0, 1)
    holds_zero = keep * zero_report + other * one_report + other * two_report
    holds_one = other * zero_report + keep * one_report + other * two_report

    def divergence(epsilon: float) -> float:
        e = math.exp(epsilon)
        return max(
            np.maximum(holds_zero - e * holds_one, 0).sum(),
            np.maximum(holds_one - e * holds_zero, 0).sum(),
        )

    low, high = 0.0, epsilon0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if divergence(middle) <= delta else (middle, high)
    return high


def wang_k_ary_epsilon(epsilon0: float, n: int, delta: float, k: int) -> float:
    """Wang et al.'s k-RR form (their reference code's computation), kept private."""
    return _central_epsilon(epsilon0, n, delta, k)


@pytest.mark.parametrize(("epsilon0", "n"), [(3, 200), (4, 400)])
def test_k_ary_form_is_not_an_upper_bound(epsilon0: float, n: int) -> None:
    """Why grr gets the generic bound: when everyone else holds the differing
    respondent's first value, shuffled 3-RR's exact ε exceeds Wang et al.'s k-RR
    form (it stays below the generic bound).  When they hold a third value, it
    equals the form: the form is that configuration's figure, not the worst case."""
    wang = wang_k_ary_epsilon(epsilon0, n, 1e-6, 3)
    generic = central_epsilon(epsilon0, n, 1e-6)
    same = shuffled_three_rr_epsilon(epsilon0, n, 1e-6, others=0)
    assert wang + 0.03 < same <= generic
    third = shuffled_three_rr_epsilon(epsilon0, n, 1e-6, others=2)
    assert third == pytest.approx(wang, rel=1e-6)


def test_k_ary_form_fails_by_brute_force() -> None:
    """The same, summed over all 3^8 output vectors of a batch of 8 (no shortcuts)."""
    epsilon0, n, epsilon = 3.0, 8, 2.8
    zero = histogram_law(epsilon0, 3, (0,) * n)
    one = histogram_law(epsilon0, 3, (1,) + (0,) * (n - 1))
    e = math.exp(epsilon)
    exact = max(
        sum(max(0.0, zero[h] - e * one[h]) for h in zero),
        sum(max(0.0, one[h] - e * zero[h]) for h in zero),
    )
    assert exact > 0.08  # the pair's δ at ε = 2.8
    assert _delta(_model(epsilon0, 3), n, epsilon) < 0.02  # what the k-RR form claims
    assert delta_for(epsilon, epsilon0, n) >= exact  # the generic bound holds


def histogram_law(epsilon0: float, k: int, inputs: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    """The law of the shuffled k-RR histogram of ``inputs``, summed over every output vector."""
    p = math.exp(epsilon0)
    law: dict[tuple[int, ...], float] = {}
    for outputs in itertools.product(range(k), repeat=len(inputs)):
        chance = math.prod(
            (p if o == x else 1.0) / (p + k - 1) for o, x in zip(outputs, inputs, strict=True)
        )
        key = tuple(outputs.count(value) for value in range(k))
        law[key] = law.get(key, 0.0) + chance
    return law


@pytest.mark.parametrize(
    ("epsilon0", "k", "others"),
    [
        (1, 2, (0, 0, 1, 1, 0, 1)),
        (3, 3, (0, 0, 0, 0, 0, 0)),
        (2, 3, (2, 1, 0, 2, 2, 1)),
        (4, 4, (3, 3, 0, 2)),
        (0.5, 3, (1, 1, 1, 1, 1, 1)),
    ],
)
def test_generic_bound_holds_by_brute_force(epsilon0: float, k: int, others: tuple) -> None:
    """Soundness for mixed batches: shuffled k-RR, the differing respondent holding 0 or 1
    and the others as given, every output vector summed; δ never exceeds the bound's."""
    zero = histogram_law(epsilon0, k, (0, *others))
    one = histogram_law(epsilon0, k, (1, *others))
    for fraction in (0.25, 0.5, 0.8, 0.95):
        e = math.exp(fraction * epsilon0)
        exact = max(
            sum(max(0.0, zero[h] - e * one[h]) for h in zero),
            sum(max(0.0, one[h] - e * zero[h]) for h in zero),
        )
        assert exact <= delta_for(fraction * epsilon0, epsilon0, len(others) + 1) * (1 + 1e-12)
