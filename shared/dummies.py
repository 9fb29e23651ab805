"""Dummy reports added by the relay (the augmented shuffle): their laws, their exact
privacy accounting, and what the estimators subtract and add.

**The mechanism.**  A report is one of m output values y (binary RR: m = 2; GRR:
the d values; option sampling: the 2m pairs (index, bit); Duchi: the two signs; an
optional or conditional question's domain includes its non-response values, and a number
with a status has the 2k pairs (status, sign): every one of them is an output value).
Before it shuffles a batch of n real reports, the relay draws D_y >= 0 dummies for
each value y, independently from one published law, and seals each like a real
report.  The aggregator sees c_y = R_y + D_y for every y, and the real count n,
never which reports are dummies.  Murakami, Sei and Eriguchi, "Augmented Shuffle
Protocols for Accurate and Robust Frequency Estimation under Differential
Privacy" (arXiv 2504.07362): binomial dummies and asymmetric two-sided geometric
dummies; Wang et al., arXiv 1908.11515 (fake reports added by the shuffler);
Balcer and Cheu, arXiv 1911.06879 (a shuffled histogram protected by noise on every
bin).

**Neighbours.**  Substitution: one report moves from value a to value b, so R_a
falls by one and R_b rises by one, and n is the same on both sides (publishing it
costs nothing).  The other cells are identical, and the dummies are independent
per cell, so the two views differ only in (c_a, c_b):

    P(c_a = R_a + t, c_b = R_b + s)  = f(t) f(s),
    P'(c_a = R_a + t, c_b = R_b + s) = f(t + 1) f(s - 1),

with f the dummy law.  The privacy loss is the sum of two independent cell losses,
log f(t)/f(t + 1) and log f(s)/f(s - 1), and

    δ(ε) = Σ_{t, s} max(0, f(t) f(s) - e^ε f(t + 1) f(s - 1)),

summed exactly over the law's whole (finite) support; the reverse direction is the
same sum with the cells swapped, and both are computed.  Outputs that only one side
can produce (t = top, or s = 0 with f(-1) = 0) have infinite loss and count fully.
This holds whatever the devices did: the dummy mechanism is (ε, δ)-DP on the
histogram of *reports*, so by post-processing on the answers behind them.

**No pure variant.**  With D >= 0 no dummy law is ε-DP (δ = 0) for substitution
neighbours: c_a = R_a - 1 + min D is possible only on the side where R_a fell, so
δ >= P(D = min D) > 0 for every ε.  (A pure case exists for other neighbour notions,
where only one cell changes in one direction; not for the one the shuffle bound
and this module use.)  δ = 0 is refused.

**The laws** (each exact: probabilities are integer weights over 2^bits, which the
sampler realises with ``bits`` fair bits from the CSPRNG and nothing else, so the
accounted law is the sampled law; Mironov, CCS 2012, on why no floating-point
inverse CDF is used):

* :class:`BinomialDummies`: D ~ Bin(N, 1/2), the number of ones in N fair bits.
  Mean N/2, variance N/4 (Murakami et al.'s first protocol).
* :class:`GeometricDummies`: a two-sided geometric law centred at ``shift``,
  truncated to [0, ``top``] and renormalised: weight ``lower_ratio``^(shift - z)
  below the centre, ``upper_ratio``^(z - shift) above, quantised to 64-bit
  weights (floor off the centre, the rest on it).  With ratios e^-λ1 and e^-λ2 the
  loss of an interior pair is at most λ1 + λ2 (one cell moves up, the other down);
  the truncation at 0 and at ``top`` is what δ pays for, exactly.  Murakami et
  al.'s second protocol (asymmetric decays) is the case λ1 != λ2; under
  substitution asymmetry buys fewer dummies, not less interior loss.

The accounting numbers (``delta_for``, ``epsilon_for``, ``calibrate``) are computed
from the weights themselves in log space, to about 1e-13 relative.  numpy is
imported on first use (``deniable.lazy``): sampling is pure Python, so the relay's
sampling path does not load it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

from .errors import InvalidParameter
from .lazy import np
from .parameters import check_int, check_real
from .randomness import RngLike, as_source

__all__ = [
    "DISTRIBUTIONS",
    "MAX_OUTPUT_VALUES",
    "BinomialDummies",
    "Calibration",
    "DummyLaw",
    "GeometricDummies",
    "added_variance",
    "calibrate",
    "debiased_counts",
    "delta_for",
    "dummy_total_law",
    "epsilon_for",
    "geometric_ratio",
    "law_from_dict",
    "noised_central_epsilon",
    "observed_count_law",
    "plausibility_threshold",
    "plausible",
    "privacy_loss_distribution",
]

MAX_TRIALS = 1 << 14  # binomial dummies per value, at most
MAX_TOP = 1 << 11  # geometric dummies per value, at most
MAX_RATIO_DENOMINATOR = 1 << 20
MAX_OUTPUT_VALUES = 1 << 12  # option sampling: 2 x 1,024 (index, bit) pairs
WEIGHT_BITS = 64  # the geometric law's probabilities are multiples of 2^-64
_ROWS = 1 << 20  # cells of one vectorized step of the δ sum


class DummyLaw:
    """What every dummy law offers, from its integer weights (subclasses set them)."""

    name: ClassVar[str]
    _weights: tuple[int, ...]
    _bits: int

    @property
    def weights(self) -> tuple[int, ...]:
        """Integer weight of each count from 0 (zeros possible at either end); they sum
        to 2**bits."""
        return self._weights

    @property
    def bits(self) -> int:
        return self._bits

    @property
    def low(self) -> int:
        """The smallest count drawn with positive probability."""
        return next(z for z, w in enumerate(self._weights) if w)

    @property
    def high(self) -> int:
        """The largest count drawn with positive probability."""
        return max(z for z, w in enumerate(self._weights) if w)

    def pmf(self, *, exact: bool = False) -> list[float] | list[Fraction]:
        """P(D = z) for z = 0..high, as floats (correctly rounded) or exact fractions."""
        total = 1 << self._bits
        if exact:
            return [Fraction(w, total) for w in self._weights]
        return [w / total for w in self._weights]

    @property
    def exact_mean(self) -> Fraction:
        return Fraction(sum(z * w for z, w in enumerate(self._weights)), 1 << self._bits)

    @property
    def exact_variance(self) -> Fraction:
        second = Fraction(sum(z * z * w for z, w in enumerate(self._weights)), 1 << self._bits)
        return second - self.exact_mean**2

    @property
    def mean(self) -> float:
        """E[D]: the dummies per output value, on average."""
        return float(self.exact_mean)

    @property
    def variance(self) -> float:
        """Var[D]: what the dummies add to each count's variance."""
        return float(self.exact_variance)

    def sample(self, rng: RngLike = None) -> int:
        """One draw of D: exactly ``bits`` fair bits from the CSPRNG (one read, whatever
        they are), mapped to a count by the cumulative weights.  No floating point."""
        source = as_source(rng)
        bits = int.from_bytes(source.token_bytes((self._bits + 7) // 8), "little")
        return self._count_of(bits & ((1 << self._bits) - 1))

    def sample_values(self, values: int, rng: RngLike = None) -> list[int]:
        """Independent draws for ``values`` output values (the relay's D_y, y = 0..m-1)."""
        values = check_int("values", values, 1, MAX_OUTPUT_VALUES)
        source = as_source(rng)
        return [self.sample(source) for _ in range(values)]

    def _count_of(self, uniform: int) -> int:
        import bisect

        return bisect.bisect_right(self._cumulative, uniform)

    @functools.cached_property
    def _cumulative(self) -> tuple[int, ...]:
        running, ends = 0, []
        for w in self._weights:
            running += w
            ends.append(running)
        return tuple(ends)

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


def _set(instance: object, name: str, value: object) -> None:
    object.__setattr__(instance, name, value)


@dataclass(frozen=True, kw_only=True)
class BinomialDummies(DummyLaw):
    """D ~ Bin(``trials``, 1/2): the number of ones among ``trials`` fair bits.

    Murakami, Sei, Eriguchi (arXiv 2504.07362), the binomial dummy protocol.
    P(D = z) = C(N, z) / 2^N exactly; mean N/2, variance N/4.  Its (ε, δ) for
    substitution neighbours is computed exactly by :func:`delta_for`.
    """

    name: ClassVar[str] = "binomial"
    trials: int
    _weights: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())
    _bits: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        trials = check_int("trials", self.trials, 1, MAX_TRIALS)
        _set(self, "_weights", tuple(math.comb(trials, z) for z in range(trials + 1)))
        _set(self, "_bits", trials)

    def _count_of(self, uniform: int) -> int:
        # The N bits are the N coins: counting ones is the law itself.
        return uniform.bit_count()

    def to_dict(self) -> dict[str, Any]:
        return {"distribution": self.name, "trials": self.trials}


def _ratio(name: str, value: object) -> Fraction:
    try:
        ratio = Fraction(value) if isinstance(value, (str, int, Fraction)) else None
    except (ValueError, ZeroDivisionError):
        ratio = None
    if ratio is None or not 0 < ratio < 1 or ratio.denominator > MAX_RATIO_DENOMINATOR:
        raise InvalidParameter(
            f"{name} must be a fraction in (0, 1) with a denominator of at most 2^20, "
            f"such as '3/5', got {value!r}"
        )
    return ratio


@dataclass(frozen=True, kw_only=True)
class GeometricDummies(DummyLaw):
    """A two-sided geometric law on [0, ``top``], centred at ``shift``, renormalised.

    Weight ``lower_ratio``^(shift - z) for z <= shift and ``upper_ratio``^(z - shift)
    for z >= shift, divided by their sum and quantised to 64-bit weights: each count
    off the centre gets floor(2^64 · its probability), the centre the rest.  The
    ratios are exact fractions (e^-λ1, e^-λ2 rounded to a fraction), so every
    party recomputes the same weights from the signed parameters.  Murakami, Sei,
    Eriguchi (arXiv 2504.07362), the asymmetric two-sided geometric protocol, with
    the truncation at 0 (and at ``top``) charged to δ exactly by :func:`delta_for`.
    """

    name: ClassVar[str] = "geometric"
    shift: int
    top: int
    lower_ratio: Fraction
    upper_ratio: Fraction
    _weights: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())
    _bits: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        top = check_int("top", self.top, 0, MAX_TOP)
        shift = check_int("shift", self.shift, 0, top)
        lower = _ratio("lower_ratio", self.lower_ratio)
        upper = _ratio("upper_ratio", self.upper_ratio)
        _set(self, "lower_ratio", lower)
        _set(self, "upper_ratio", upper)
        _set(self, "_weights", _geometric_weights(shift, top, lower, upper))
        _set(self, "_bits", WEIGHT_BITS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "distribution": self.name,
            "shift": self.shift,
            "top": self.top,
            "lower_ratio": str(self.lower_ratio),
            "upper_ratio": str(self.upper_ratio),
        }


@functools.lru_cache(maxsize=256)
def _geometric_weights(shift: int, top: int, lower: Fraction, upper: Fraction) -> tuple[int, ...]:
    # Scaled by M = b1^shift b2^(top - shift), every shape value is an integer:
    # below, a1^(shift - z) b1^z b2^(top - shift); above, a2^(z - shift) b2^(top - z) b1^shift.
    a1, b1 = lower.numerator, lower.denominator
    a2, b2 = upper.numerator, upper.denominator
    below, above = shift, top - shift
    pa1, pb1 = _powers(a1, below), _powers(b1, below)
    pa2, pb2 = _powers(a2, above), _powers(b2, above)
    shape = [pa1[shift - z] * pb1[z] * pb2[above] for z in range(shift + 1)]
    shape += [pa2[z - shift] * pb2[top - z] * pb1[below] for z in range(shift + 1, top + 1)]
    total = sum(shape)
    weights = [(value << WEIGHT_BITS) // total for value in shape]
    weights[shift] += (1 << WEIGHT_BITS) - sum(weights)
    return tuple(weights)


def _powers(base: int, largest: int) -> list[int]:
    """base^0 .. base^largest, each from the last (one small multiplication apiece)."""
    powers = [1]
    for _ in range(largest):
        powers.append(powers[-1] * base)
    return powers


DISTRIBUTIONS = {law.name: law for law in (BinomialDummies, GeometricDummies)}


_FIELDS = {
    BinomialDummies.name: ("trials",),
    GeometricDummies.name: ("shift", "top", "lower_ratio", "upper_ratio"),
}


def law_from_dict(document: dict[str, Any]) -> DummyLaw:
    """The law a survey definition signs (``to_dict``'s form); strict."""
    if not isinstance(document, dict) or document.get("distribution") not in DISTRIBUTIONS:
        raise InvalidParameter(f"distribution must be one of {sorted(DISTRIBUTIONS)}")
    name = document["distribution"]
    fields = _FIELDS[name]
    if set(document) != {"distribution", *fields}:
        raise InvalidParameter(f"a {name} law has exactly the fields {sorted(fields)}")
    return DISTRIBUTIONS[name](**{field_name: document[field_name] for field_name in fields})


# -- exact privacy accounting (substitution neighbours) -------------------------------------


def _log_pmf(law: DummyLaw) -> np.ndarray:
    with np.errstate(divide="ignore"):
        logs = np.array([math.log(w) if w else -math.inf for w in law.weights])
    return logs - law.bits * math.log(2)


def _hockey_stick(logs: np.ndarray, epsilon: float, step: int) -> float:
    """Σ_{t,s} max(0, f(t) f(s) - e^ε f(t + step) f(s - step)) over the support."""
    inside = np.isfinite(logs)
    padded = np.concatenate([[-np.inf], logs, [-np.inf]])
    index = np.nonzero(inside)[0]
    # cell losses log f(t + step) - log f(t) and log f(s - step) - log f(s)
    up = padded[index + 1 + step] - logs[index]
    down = padded[index + 1 - step] - logs[index]
    mass = np.exp(logs[index])
    total = 0.0
    rows = max(1, _ROWS // index.size)
    for begin in range(0, index.size, rows):
        block = slice(begin, begin + rows)
        exponent = epsilon + up[block, None] + down[None, :]
        # 1 - e^(ε - L), which is 1 where the other side cannot produce the output
        loss = np.maximum(-np.expm1(exponent), 0.0)
        total += float(np.einsum("i,ij,j->", mass[block], loss, mass))
    return total


def privacy_loss_distribution(law: DummyLaw, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(losses, probabilities): the law of log P/P' under P, for one report moved out
    of cell a (``step`` = 1; -1 for the reverse direction), sorted by loss.

    The convolution of the two cells' loss laws: log f(t)/f(t + step) with
    probability f(t) and log f(s)/f(s - step) with probability f(s).  A loss of
    +inf is an output the other side cannot produce.
    """
    if step not in (1, -1):
        raise InvalidParameter(f"step must be 1 or -1, got {step!r}")
    logs = _log_pmf(law)
    index = np.nonzero(np.isfinite(logs))[0]
    padded = np.concatenate([[-np.inf], logs, [-np.inf]])
    first = logs[index] - padded[index + 1 + step]
    second = logs[index] - padded[index + 1 - step]
    mass = np.exp(logs[index])
    losses = (first[:, None] + second[None, :]).ravel()
    probabilities = (mass[:, None] * mass[None, :]).ravel()
    order = np.argsort(losses, kind="stable")
    return losses[order], probabilities[order]


def delta_for(law: DummyLaw, epsilon: float) -> float:
    """The exact δ at which the dummies make a histogram (ε, δ)-DP for substitution
    neighbours (module docstring), the larger of the two directions."""
    epsilon = check_real("epsilon", epsilon)
    if epsilon < 0:
        raise InvalidParameter(f"epsilon must be non-negative, got {epsilon!r}")
    return _delta(law, epsilon)


@functools.lru_cache(maxsize=4096)
def _delta(law: DummyLaw, epsilon: float) -> float:
    logs = _log_pmf(law)
    return max(_hockey_stick(logs, epsilon, 1), _hockey_stick(logs, epsilon, -1))


def _check_delta(delta: object) -> float:
    delta = check_real("delta", delta)
    if delta == 0:
        raise InvalidParameter(
            "dummies cannot give delta = 0 for substitution neighbours: the count just "
            "below every real count plus the fewest dummies is possible on one side only"
        )
    if not 0 <= delta < 1:
        raise InvalidParameter(f"delta must be in (0, 1), got {delta!r}")
    return delta


def epsilon_for(law: DummyLaw, delta: float) -> float:
    """The smallest ε with ``delta_for(law, ε) <= delta`` (bisection to 1e-9, rounded
    up); ``math.inf`` when the outputs only one side can produce weigh more than δ."""
    delta = _check_delta(delta)
    return _epsilon(law, delta)


@functools.lru_cache(maxsize=4096)
def _epsilon(law: DummyLaw, delta: float) -> float:
    if _delta(law, 0.0) <= delta:
        return 0.0
    high = 1.0
    while _delta(law, high) > delta:
        high *= 2
        if high > 64:  # e^64 beyond any finite ratio of 64-bit weights: only ∞ is left
            return math.inf
    low = 0.0 if high == 1.0 else high / 2
    while high - low > 1e-9 * max(1.0, high):
        middle = (low + high) / 2
        low, high = (low, middle) if _delta(law, middle) <= delta else (middle, high)
    return high


@dataclass(frozen=True, kw_only=True)
class Calibration:
    """The smallest law of a family meeting (ε, δ), and what it costs per output value."""

    law: DummyLaw
    epsilon: float
    delta: float
    achieved_delta: float  # delta_for(law, epsilon), <= delta

    @property
    def dummies_per_value(self) -> float:
        return self.law.mean

    def to_dict(self) -> dict[str, Any]:
        return {
            "law": self.law.to_dict(),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "achieved_delta": self.achieved_delta,
            "dummies_per_value": self.dummies_per_value,
            "variance_per_value": self.law.variance,
        }


def geometric_ratio(decay: float) -> Fraction:
    """e^-decay rounded *up* to a multiple of 2^-20: a slightly slower decay, so
    each cell's interior loss stays at most ``decay``."""
    return Fraction(math.ceil(math.exp(-decay) * (1 << 20)), 1 << 20)


def _geometric(shift: int, ratio: Fraction) -> GeometricDummies:
    return GeometricDummies(shift=shift, top=2 * shift, lower_ratio=ratio, upper_ratio=ratio)


def calibrate(epsilon: float, delta: float, family: str = "geometric") -> Calibration:
    """The smallest law of ``family`` whose exact δ at ``epsilon`` is at most ``delta``.

    ``binomial``: the smallest N for Bin(N, 1/2).  ``geometric``: decays of ε/2 on
    both sides (interior pairs then lose at most ε; :func:`geometric_ratio`) and the
    smallest shift, with ``top`` = 2 · shift.  δ falls as the parameter grows, so the
    search doubles and then bisects; the parameter one below fails (tests check it).
    """
    epsilon = check_real("epsilon", epsilon)
    if not 0 < epsilon <= 20:
        raise InvalidParameter(f"epsilon must be in (0, 20], got {epsilon!r}")
    delta = _check_delta(delta)
    if family == "binomial":
        make, limit = (lambda size: BinomialDummies(trials=size)), MAX_TRIALS
    elif family == "geometric":
        ratio = geometric_ratio(epsilon / 2)
        make, limit = (lambda size: _geometric(size, ratio)), MAX_TOP // 2
    else:
        raise InvalidParameter(f"family must be one of {sorted(DISTRIBUTIONS)}, got {family!r}")

    def meets(size: int) -> bool:
        return _delta(make(size), epsilon) <= delta

    low, high = 0, 1  # meets(low) is False (or low = 0, never tried)
    while not meets(high):
        low, high = high, 2 * high
        if high > limit:
            if not meets(limit):
                raise InvalidParameter(
                    f"no {family} law up to {limit} meets epsilon={epsilon}, delta={delta}"
                )
            high = limit
            break
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if meets(middle) else (middle, high)
    law = make(high)
    return Calibration(law=law, epsilon=epsilon, delta=delta, achieved_delta=_delta(law, epsilon))


def noised_central_epsilon(law: DummyLaw | None, epsilon0: float, n: int, delta: float) -> float:
    """The central ε of a noised batch at ``delta``: the better of two bounds, each
    valid at the same δ on its own.

    (a) The dummies alone, :func:`epsilon_for`: sound whatever the local randomizer
        did, since it holds for any histogram of reports (post-processing).
    (b) The shuffle bound, ``deniable.shuffle.central_epsilon(epsilon0, n, delta)``:
        the dummies are drawn independently of the reports, so the noised batch is
        a post-processing of the shuffled real reports.

    A release that is (ε_a, δ)-DP and (ε_b, δ)-DP is (min(ε_a, ε_b), δ)-DP: both are
    statements about the same pair of distributions, so nothing of δ is split.
    ``law`` None (no dummies, or too few to be plausible) gives (b) alone.
    """
    from .shuffle import central_epsilon

    shuffled = central_epsilon(epsilon0, n, delta)
    if law is None:
        return shuffled
    return min(epsilon_for(law, delta), shuffled)


# -- estimation ------------------------------------------------------------------------------


def debiased_counts(counts: Any, law: DummyLaw) -> np.ndarray:
    """c_y - E[D] per value: an unbiased estimate of the real count R_y."""
    return np.asarray(counts, dtype=np.float64) - law.mean


def added_variance(law: DummyLaw) -> float:
    """Var[D]: added to every count's variance (the dummies are independent of R_y)."""
    return law.variance


def observed_count_law(real_pmf: Any, law: DummyLaw) -> np.ndarray:
    """P(c = R + D = j), j = 0.., from the real count's law (index = count; a binomial,
    two binomials, or a Poisson-binomial) convolved with the dummy law, D independent
    of R.  The exact-tail family inverts this law as it does the real count's."""
    real = np.asarray(real_pmf, dtype=np.float64)
    return np.convolve(real, np.asarray(law.pmf(), dtype=np.float64))


@functools.lru_cache(maxsize=256)
def dummy_total_law(law: DummyLaw, values: int) -> np.ndarray:
    """P(Σ_y D_y = t), t = 0..values·high, for ``values`` independent draws.

    Binomial dummies: Bin(values·N, 1/2), from log-binomial coefficients.  Other
    laws: repeated squaring of the convolution, by FFT with negative round-off
    clipped (absolute error about 1e-15 per point).
    """
    values = check_int("values", values, 1, MAX_OUTPUT_VALUES)
    if isinstance(law, BinomialDummies):
        trials = values * law.trials
        t = np.arange(trials + 1)
        logs = (
            math.lgamma(trials + 1)
            - np.array([math.lgamma(k + 1) + math.lgamma(trials - k + 1) for k in t])
            - trials * math.log(2)
        )
        return np.exp(logs)
    single = np.asarray(law.pmf(), dtype=np.float64)
    result, power, remaining = np.ones(1), single, values
    while remaining:
        if remaining & 1:
            result = _convolve(result, power)
        remaining >>= 1
        if remaining:
            power = _convolve(power, power)
    return result


def _convolve(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    size = first.size + second.size - 1
    if min(first.size, second.size) <= 64:
        return np.convolve(first, second)
    length = 1 << (size - 1).bit_length()
    product = np.fft.irfft(np.fft.rfft(first, length) * np.fft.rfft(second, length), length)
    return np.maximum(product[:size], 0.0)


def plausibility_threshold(
    law: DummyLaw, values: int, false_alarm: float = 1e-6
) -> tuple[int, float]:
    """(t*, rate): totals of dummies below t* are declared implausible, and
    rate = P(Σ D_y < t*) <= ``false_alarm`` is how often an honest relay's batch is."""
    false_alarm = check_real("false_alarm", false_alarm)
    if not 0 < false_alarm < 1:
        raise InvalidParameter(f"false_alarm must be in (0, 1), got {false_alarm!r}")
    below = np.cumsum(dummy_total_law(law, values))  # below[t] = P(total <= t)
    threshold = int(np.searchsorted(below, false_alarm, side="right"))
    return threshold, float(below[threshold - 1]) if threshold else 0.0


def plausible(
    counts_total: int, real_count: int, values: int, law: DummyLaw, false_alarm: float = 1e-6
) -> bool:
    """Whether a batch's dummies (``counts_total`` - ``real_count``, over ``values``
    output values) are consistent with ``law``: at least the threshold of
    :func:`plausibility_threshold` and at most values · high.  A batch that is not is
    published with the shuffle bound only."""
    counts_total = check_int("counts_total", counts_total, 0, 1 << 62)
    real_count = check_int("real_count", real_count, 0, counts_total)
    dummies = counts_total - real_count
    threshold, _ = plausibility_threshold(law, values, false_alarm)
    return threshold <= dummies <= values * law.high
