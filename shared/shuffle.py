"""Privacy amplification by shuffling: the central (ε, δ) of a relayed batch.

A relay that hides who sent what and forwards a batch of n reports in a
uniformly random order turns n ε0-LDP reports into an (ε, δ)-DP release of
the batch, with ε far below ε0.  This module computes that ε.

**The bound.**  Feldman, McMillan and Talwar, "Stronger privacy amplification
by shuffling for Rényi and approximate differential privacy" (SODA 2023,
FMT23), Theorem 3.2, in the general *variation-ratio* form of Wang, Peng, Li,
Chen, Hu, Wang, "Privacy amplification via shuffling: unified, simplified,
and tightened" (VLDB 2024; reference code: github.com/wangsw/PrivacyAmplification).
An ε0-LDP randomizer with parameters (p, β, q) lets the two output
distributions of the one respondent who differs be written as mixtures

    P0 = p·α·Q0 + α·Q1 + γ·Q2,    P1 = α·Q0 + p·α·Q1 + γ·Q2,

with α = β/(p − 1) and γ = 1 − (1 + p)·α, while every other respondent's
report is a mixture r·Q0 + r·Q1 + (1 − 2r)·(its own rest) with r = α·p/q
("clones").  The shuffled batch is then a post-processing of the counts (A, B)
of reports that fell in Q0 and Q1, so the batch is (ε, δ(ε))-DP with

    δ(ε) = E[ max(0, c0·A + c1·B + c2·(n − A − B)) ] / n,
    c0 = α(p − e^ε)/r,  c1 = α(1 − p·e^ε)/r,  c2 = γ(1 − e^ε)/(1 − 2r),

the expectation over (A, B, n − A − B) ~ Multinomial(n; r, r, 1 − 2r).  (This
is the hockey-stick divergence of the two count distributions, written once
over the whole batch; with r0 = r1 the two directions are equal by symmetry.)
The sum is exact: rows A + B = s are weighted by Binomial(n, 2r), and within
a row A ~ Binomial(s, 1/2) has one threshold, so each row needs two binomial
tails, which are carried along the rows by the recurrence of a fair coin.
Rows beyond 10 standard deviations are charged their full mass, so the value
is an upper bound; ε is found by a bracketed search to 1e-7 (relative) and
rounded up.

*Generic ε0-LDP randomizer* (the issue's table, and what Deniable publishes
for every mechanism): p = q = e^ε0, β = (e^ε0 − 1)/(e^ε0 + 1), hence
α = r = 1/(e^ε0 + 1) and γ = 0: each other report is a clone of either input
with probability 1/(e^ε0 + 1) (FMT23).  Wang et al. and FMT23 show a matching
lower bound for this worst case.

*k-ary randomized response: not used.*  Wang et al. give k-RR the parameters
β = (e^ε0 − 1)/(e^ε0 + k − 1), q = e^ε0, hence α = r = 1/(e^ε0 + k − 1) and
γ = (k − 2)/(e^ε0 + k − 1) > 0, with γ inside the same comparison as above (as
their reference code computes it).  That is not an upper bound for every pair
of neighbouring batches: when everyone else holds the differing respondent's
first value, the exact ε of shuffled 3-RR at ε0 = 3, n = 200, δ = 1e-6 is 2.533,
above that form's 2.487 (and below the generic 2.983); a brute-force sum over
all 3^8 outputs at n = 8 shows the same (tests/shared/test_shuffle.py).  The
post-processing argument needs the other reports' rest to be distributed like
the respondent's own Q2, which k-RR's are not.  Keeping the respondent's Q2 part
out of the comparison is sound but looser than the generic bound, so every
mechanism, grr included, gets the generic bound.  (``_model(ε0, k)`` keeps the
k-RR form for the tests that show this.)

**Cross-check.**  Feldman, McMillan and Talwar, "Hiding among the clones: a
simple and nearly optimal analysis of privacy amplification by shuffling"
(FOCS 2021, FMT21), Theorem 3.1, in the form of its authors' code
(github.com/apple/ml-shuffling-amplification): valid only when
ε0 ≤ log(n / (16·log(4/δ))); :func:`fmt21_closed_form` returns None outside.

The aggregator publishes, per question, the central ε for the *smallest
batch forwarded*: each respondent is in exactly one batch, so the batch size,
not the total n, is what hides them.  The guarantee assumes the relay does not
collude with the aggregator and that n counts genuine respondents only (with
k injected reports, use n − k); the local ε0 holds for every report whatever
the relay does.

numpy is imported on first use (``deniable.lazy``), so importing this module
costs a device nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .errors import InvalidParameter
from .lazy import np
from .parameters import MAX_EPSILON, check_epsilon, check_int, check_real

__all__ = [
    "CONDITIONS",
    "DEFAULT_DELTA",
    "MAX_BATCH",
    "Amplification",
    "amplification",
    "central_epsilon",
    "delta_for",
    "fmt21_closed_form",
    "fmt21_valid",
    "local_epsilon_for",
]

MAX_BATCH = 10**7
# δ is the chance that the guarantee fails outright, so it must stay well below 1/n:
# 10^-6 is at most a tenth of 1/n for batches up to 10^5 (the table uses it).
DEFAULT_DELTA = 1e-6
_SIGMAS = 10.0  # rows beyond this many standard deviations hold < 1e-23 of the mass
_TOLERANCE = 1e-7  # relative bisection width on ε (the upper end is returned)


@dataclass(frozen=True)
class _Model:
    """The variation-ratio decomposition of one randomizer at ε0 (see module docstring)."""

    p: float  # e^ε0
    alpha: float
    r: float  # clone probability of each other respondent, per side
    gamma: float  # 1 − (1 + p)·α: the victim's mass outside the two clones


def _model(epsilon0: float, domain_size: int | None) -> _Model:
    p = math.exp(epsilon0)
    # α = β/(p − 1) with β = (p − 1)/(p + k − 1); generic is k = 2
    k = 2 if domain_size is None else domain_size
    alpha = 1.0 / (p + k - 1)
    return _Model(p=p, alpha=alpha, r=alpha, gamma=(k - 2) / (p + k - 1))


def _check(epsilon0: object, n: object, delta: object) -> tuple[float, int, float]:
    epsilon0 = check_epsilon(epsilon0, "epsilon0")
    n = check_int("n", n, 1, MAX_BATCH)
    delta = check_real("delta", delta)
    if not 0.0 < delta < 1.0:
        raise InvalidParameter(f"delta must be in (0, 1), got {delta!r}")
    return epsilon0, n, delta


# -- binomial probabilities on arrays (numpy has no lgamma; scipy is no dependency) -----
#
# Why not lgamma differences: log C(n, k) for n near 10^6 subtracts numbers near 10^7,
# leaving absolute errors near 1e-9 that a tail sum or a left-over mass then carries.
# Loader's saddle-point form (Loader 2000, "Fast and accurate computation of binomial
# probabilities", the method of R's dbinom) stays accurate to about 1e-14 relative.

_STIRLING_TABLE = 16


@functools.cache
def _small_stirling_errors() -> object:
    """stirlerr(k) = log(k!) − (k + ½)·log(k) + k − ½·log(2π) for k < 16 (0 at k = 0)."""
    values = [0.0] + [
        math.lgamma(k + 1) - (k + 0.5) * math.log(k) + k - 0.5 * math.log(2 * math.pi)
        for k in range(1, _STIRLING_TABLE)
    ]
    return np.array(values)


def _stirling_error(k: object) -> object:
    """stirlerr(k) for an int array k ≥ 0: a table below 16, the series above."""
    x = np.maximum(np.asarray(k, dtype=np.float64), float(_STIRLING_TABLE))
    inverse_square = 1.0 / (x * x)
    series = (
        1 / 12
        - (
            1 / 360
            - (1 / 1260 - (1 / 1680 - inverse_square / 1188) * inverse_square) * inverse_square
        )
        * inverse_square
    ) / x
    table = _small_stirling_errors()[np.minimum(np.asarray(k), _STIRLING_TABLE - 1)]
    return np.where(np.asarray(k) < _STIRLING_TABLE, table, series)


def _deviance(x: object, mean: object) -> object:
    """bd0(x, μ) = x·log(x/μ) + μ − x, by its series where x is near μ (x ≥ 1, μ > 0)."""
    x = np.asarray(x, dtype=np.float64)
    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64), x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = x * np.log(x / mean) + mean - x
    near = np.abs(x - mean) < 0.1 * (x + mean)
    if near.any():
        xn, mn = x[near], mean[near]
        v = (xn - mn) / (xn + mn)
        total = (xn - mn) * v
        term = 2 * xn * v
        square = v * v
        bound = float(square.max())  # < 0.01: each term is at most 1/100 of the last
        for j in range(1, 10):
            term = term * square
            total = total + term / (2 * j + 1)
            if bound**j < 1e-17:  # every remaining term is below rounding
                break
        result = np.where(near, 0.0, result)
        result[near] = total
    return result


def _binomial_pmf(k: object, m: object, prob: float) -> object:
    """P(Binomial(m, prob) = k) for int arrays, zero outside 0 ≤ k ≤ m (0 < prob < 1)."""
    k = np.asarray(k, dtype=np.int64)
    m = np.broadcast_to(np.asarray(m, dtype=np.int64), k.shape)
    inside = (k >= 0) & (k <= m)
    interior = inside & (k > 0) & (k < m)
    kk = np.where(interior, k, 1)
    mm = np.where(interior, m, 2)
    rest = mm - kk
    log = (
        _stirling_error(mm)
        - _stirling_error(kk)
        - _stirling_error(rest)
        - _deviance(kk, mm * prob)
        - _deviance(rest, mm * (1 - prob))
        + 0.5 * np.log(mm / (2 * math.pi * kk * rest))
    )
    ends = np.where(k == 0, m * math.log1p(-prob), m * math.log(prob))
    return np.where(interior, np.exp(log), np.where(inside, np.exp(ends), 0.0))


def _half_pmf(m: object, t: object) -> object:
    """P(Binomial(m, 1/2) = t), zero outside 0 ≤ t ≤ m (arrays)."""
    return _binomial_pmf(t, m, 0.5)


def _upper_tail(m: int, t: int) -> float:
    """P(Binomial(m, 1/2) ≥ t), summed directly from the smaller side."""
    if t <= 0:
        return 1.0
    if t > m:
        return 0.0
    reach = math.ceil(20 * math.sqrt(m)) + 1  # 40 standard deviations: pmf < 1e-300 beyond
    if 2 * t > m:
        k = np.arange(t, min(m, m // 2 + reach) + 1)
        return float(np.sum(_half_pmf(np.full(len(k), m), k)))
    k = np.arange(max(0, m // 2 - reach), t)
    return 1.0 - float(np.sum(_half_pmf(np.full(len(k), m), k)))


def _tails_along(m: object, t: object) -> object:
    """P(Binomial(m_i, 1/2) ≥ t_i) along a path with m_{i+1} = m_i + 1 and
    t_{i+1} − t_i ∈ {0, 1}, 0 ≤ t_i ≤ m_i + 1.

    Adding one fair coin: G(m + 1, t) = G(m, t) + pmf(m, t − 1)/2, and moving the
    threshold up: G(m + 1, t + 1) = G(m + 1, t) − pmf(m + 1, t).  The first value
    is summed directly; the rest is one cumulative sum.
    """
    m0 = int(m[0])
    first = _upper_tail(m0, int(t[0]))
    if len(m) == 1:
        return np.array([first])
    step = np.diff(t)
    increment = 0.5 * _half_pmf(m[:-1], t[:-1] - 1) - step * _half_pmf(m[1:], t[:-1])
    values = first + np.concatenate(([0.0], np.cumsum(increment)))
    return np.clip(values, 0.0, 1.0)


@functools.lru_cache(maxsize=64)
def _rows(n: int, r: float) -> tuple[object, object, float]:
    """The rows s = A + B kept, their Binomial(n, 2r) weights, and a bound on the mass
    left out (each side's tail is below its first term over 1 − the term ratio)."""
    clone = 2 * r
    mean = n * clone
    spread = math.sqrt(n * clone * (1 - clone))
    low = max(0, math.floor(mean - _SIGMAS * spread - _SIGMAS))
    high = min(n, math.ceil(mean + _SIGMAS * spread + _SIGMAS))
    s = np.arange(low, high + 1, dtype=np.int64)
    weight = _binomial_pmf(s, n, clone)
    odds = clone / (1 - clone)
    left_out = 0.0
    if high < n:  # above the mode: w(s + 1)/w(s) = (n − s)/(s + 1)·odds falls below 1
        ratio = (n - high - 1) / (high + 2) * odds
        left_out += float(_binomial_pmf(np.array([high + 1]), n, clone)[0]) / (1 - ratio)
    if low > 0:  # below the mode: w(s − 1)/w(s) = s/(n − s + 1)/odds falls below 1
        ratio = (low - 1) / (n - low + 2) / odds
        left_out += float(_binomial_pmf(np.array([low - 1]), n, clone)[0]) / (1 - ratio)
    return s, weight, left_out


def _delta(model: _Model, n: int, epsilon: float) -> float:
    """δ(ε) of the shuffled batch (module docstring), an upper bound."""
    e = math.exp(epsilon)
    c0 = model.alpha * (model.p - e) / model.r
    c1 = model.alpha * (1.0 - model.p * e) / model.r
    c2 = model.gamma * (1.0 - e) / (1.0 - 2 * model.r) if model.gamma else 0.0
    if c0 <= 0.0:
        return 0.0  # ε ≥ ε0: the local guarantee alone
    s, weight, left_out = _rows(n, model.r)
    offset = c1 * s + c2 * (n - s)  # h = (c0 − c1)·A + offset
    # h > 0 ⟺ A > −offset/(c0 − c1); the slope in s is in (0, 1), so t steps by 0 or 1
    t = np.floor(-offset / (c0 - c1)).astype(np.int64) + 1
    t = np.clip(t, 0, s + 1)
    # guard the path property (steps of 0 or 1) against rounding at an exact tie
    t = np.maximum.accumulate(t)
    index = np.arange(len(t))
    t = np.minimum(np.minimum.accumulate(t - index) + index, s + 1)
    tail = _tails_along(s, t)
    # E[A; A ≥ t] = (s/2)·P(Binomial(s − 1, 1/2) ≥ t − 1)
    shifted = np.where(s >= 1, _tails_along_shifted(s, t), 0.0)
    expectation = (c0 - c1) * 0.5 * s * shifted + offset * tail
    rows = float(np.sum(weight * np.maximum(expectation, 0.0)))
    # a row left out contributes at most max h/n ≤ max(c0, 0) per unit of mass
    return rows / n + left_out * c0


def _tails_along_shifted(s: object, t: object) -> object:
    """P(Binomial(s − 1, 1/2) ≥ t − 1) along the rows (s ≥ 1)."""
    start = int(np.argmax(s >= 1))
    m = s[start:] - 1
    u = np.clip(t[start:] - 1, 0, m + 1)
    values = np.zeros(len(s))
    values[start:] = _tails_along(m, u)
    return values


def delta_for(epsilon: float, epsilon0: float, n: int) -> float:
    """The δ at which a shuffled batch of n ε0-LDP reports is (ε, δ)-DP (module
    docstring): FMT23 Thm 3.2 / Wang et al. 2024, generic randomizer."""
    epsilon0, n, _ = _check(epsilon0, n, 0.5)
    epsilon = check_real("epsilon", epsilon)
    if epsilon < 0:
        raise InvalidParameter(f"epsilon must be non-negative, got {epsilon!r}")
    return _delta(_model(epsilon0, None), n, epsilon)


def central_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """The central ε at which a uniformly shuffled batch of ``n`` reports, each from an
    ``epsilon0``-LDP randomizer, is (ε, ``delta``)-DP.

    The tight numerical bound for a generic ε0-LDP randomizer (Feldman, McMillan,
    Talwar 2023, Thm 3.2, in the form of Wang et al., VLDB 2024), valid for every
    mechanism (see the module docstring on the k-RR form).  Never above
    ``epsilon0``.  Cached: a repeated call costs a dictionary look-up.
    """
    return _central_epsilon(*_check(epsilon0, n, delta))


@functools.lru_cache(maxsize=4096)
def _central_epsilon(
    epsilon0: float, n: int, delta: float, domain_size: int | None = None
) -> float:
    """central ε; ``domain_size`` only for the tests of the k-RR form (module docstring)."""
    model = _model(epsilon0, domain_size)
    if _delta(model, n, 0.0) <= delta:
        return 0.0
    # δ(ε) falls with ε and is 0 at ε0: the smallest ε with δ(ε) ≤ delta, rounded up
    return _boundary(lambda epsilon: _excess(_delta(model, n, epsilon), delta), 0.0, epsilon0)


def _excess(value: float, delta: float) -> float:
    """log(value/delta): the search runs on the log scale, where δ(ε) is nearly linear.
    A NaN counts as failing the target, so a numerical accident can only raise ε."""
    if math.isnan(value):
        return math.inf
    return math.log(value / delta) if value > 0 else -math.inf


def _boundary(
    excess: Callable[[float], float], bad: float, good: float, tolerance: float = _TOLERANCE
) -> float:
    """The end of ``[bad, good]`` (either order) where a monotone ``excess`` turns ≤ 0,
    to ``tolerance`` relative, on the side where it is ≤ 0.  Excess at ``bad`` is > 0,
    at ``good`` ≤ 0.  Regula falsi with the Illinois rule, halving whenever a step
    fails to halve the bracket (Dowell & Jarratt 1971)."""
    f_bad, f_good = math.inf, -math.inf
    last = None
    while abs(good - bad) > tolerance * max(abs(good), abs(bad)):
        width = abs(good - bad)
        if math.isfinite(f_bad) and math.isfinite(f_good):
            x = good - f_good * (good - bad) / (f_good - f_bad)
            # keep the step inside the bracket, a little away from its ends
            low, high = min(bad, good), max(bad, good)
            x = min(max(x, low + 0.01 * width), high - 0.01 * width)
        else:
            x = (bad + good) / 2
        f = excess(x)
        if f > 0:
            bad, f_bad = x, f
            if last == "bad" and math.isfinite(f_good):
                f_good /= 2
            last = "bad"
        else:
            good, f_good = x, f
            if last == "good" and math.isfinite(f_bad):
                f_bad /= 2
            last = "good"
        if abs(good - bad) > width / 2:  # the step did not halve: halve once
            middle = (bad + good) / 2
            f = excess(middle)
            if f > 0:
                bad, f_bad = middle, f
            else:
                good, f_good = middle, f
            last = None
    return good


def local_epsilon_for(central_epsilon: float, n: int, delta: float) -> float:
    """The largest ε0 (to 1e-7 relative, rounded down) whose shuffled batch of ``n`` reports is
    (``central_epsilon``, ``delta``)-DP by :func:`central_epsilon`: what to set on
    the device for a target central guarantee.  At least ``central_epsilon`` itself
    (shuffling never hurts); at most the largest ε the project accepts."""
    return _local_epsilon_for(*_check(central_epsilon, n, delta))


@functools.lru_cache(maxsize=1024)
def _local_epsilon_for(target: float, n: int, delta: float) -> float:
    # central_epsilon(ε0) ≤ target ⟺ δ_{ε0}(target) ≤ delta: one δ per step, no inner search
    def excess(epsilon0: float) -> float:
        if epsilon0 <= target:
            return -math.inf
        return _excess(_delta(_model(epsilon0, None), n, target), delta)

    if excess(MAX_EPSILON) <= 0:
        return MAX_EPSILON
    return _boundary(excess, MAX_EPSILON, target, tolerance=1e-7)


def fmt21_valid(epsilon0: float, n: int, delta: float) -> bool:
    """Whether FMT21's closed form applies: ε0 ≤ log(n / (16·log(4/δ)))."""
    epsilon0, n, delta = _check(epsilon0, n, delta)
    return n > 16 * math.log(4 / delta) and epsilon0 <= math.log(n / (16 * math.log(4 / delta)))


def fmt21_closed_form(epsilon0: float, n: int, delta: float) -> float | None:
    """FMT21's closed-form central ε (Feldman, McMillan, Talwar, "Hiding among the
    clones", FOCS 2021, Thm 3.1, as computed by the authors' code), or None
    outside its validity condition (:func:`fmt21_valid`).  Looser than
    :func:`central_epsilon`; kept as a cross-check."""
    if not fmt21_valid(epsilon0, n, delta):
        return None
    e0 = math.exp(epsilon0)
    a = 8 * math.sqrt(e0 * math.log(4 / delta) / n)
    c = 8 * e0 / n
    first = math.log(1 + a + c)
    b = 1 - math.exp(-epsilon0)
    d = 1 + math.exp(-epsilon0 - first)
    return math.log(1 + (b / d) * (a + c))


# What a published central ε assumes, in plain words (results, dashboard, docs).
CONDITIONS = (
    "The relay did not collude with the aggregator.",
    "The batch counts only genuine respondents: "
    "if k of its reports were injected, the figure is the one for n - k.",
)


@dataclass(frozen=True, kw_only=True)
class Amplification:
    """The central guarantee of one question's smallest forwarded batch.

    ``bound`` names the bound ("generic": FMT23 / Wang et al. 2024, valid for any
    ε0-LDP randomizer); ``conditions`` are what the figure assumes."""

    local_epsilon: float
    batch: int
    delta: float
    central_epsilon: float
    bound: str = "generic"
    conditions: tuple[str, ...] = CONDITIONS

    def to_dict(self) -> dict[str, Any]:
        result = asdict(self)
        result["conditions"] = list(self.conditions)
        return result


def amplification(
    epsilon0: float,
    n: int,
    delta: float,
    *,
    mechanism: str | None = None,
    domain_size: int | None = None,
) -> Amplification:
    """:func:`central_epsilon` with its context, for publishing.

    ``mechanism`` and ``domain_size`` are accepted so callers can pass what they
    know, but every mechanism gets the generic bound: the k-ary randomized response
    form of Wang et al. is not an upper bound for every neighbouring batch (module
    docstring).  For a whole submission, pass the survey's total ε as ``epsilon0``."""
    del mechanism, domain_size  # see the docstring: no mechanism-specific form is sound here
    return Amplification(
        local_epsilon=float(epsilon0),
        batch=int(n),
        delta=float(delta),
        central_epsilon=central_epsilon(epsilon0, n, delta),
    )
