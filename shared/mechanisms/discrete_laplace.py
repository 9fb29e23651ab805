"""The Laplace mechanism on an integer grid, sampled exactly.

Laplace mechanism: Dwork, McSherry, Nissim, Smith, "Calibrating Noise to
Sensitivity in Private Data Analysis" (TCC 2006).  Floating-point Laplace
noise leaks the input through its low-order bits (Mironov, "On Significance
of the Least Significant Bits for Differential Privacy", CCS 2012), so this
mechanism works on integers only, with the exact discrete Laplace sampler of
Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy"
(NeurIPS 2020), Algorithms 1 and 2.

Given ``grid_size`` G (an int in [1, 10**6], default 1000):

1. x in [lo, hi] is scaled to u = G (x - lo)/(hi - lo) in [0, G];
2. randomized rounding: k = floor(u) + 1 with probability u - floor(u), else
   floor(u), so E[k] = u (the probability is realised as an integer multiple
   of 2**-53 and compared with one CSPRNG ``uniform53`` draw, for every x);
3. the report is z = k + Z with P[Z = z] ∝ exp(-ε |z| / G).

Any two k, k' in [0, G] differ by at most G, so every conditional output
distribution is within a factor e^ε of every other, and so is every mixture
over k: the rounding step cannot cost privacy whatever probabilities it uses.
The noise is sampled with rational arithmetic only: ε is converted exactly with
``fractions.Fraction(epsilon)`` (a float is a dyadic rational), so the scale
G/ε = t/s with integers s, t is exactly the scale the float ε asks for; every
Bernoulli draw is ``randbelow(denominator) < numerator`` on the CSPRNG.  Hence
``epsilon_implemented == epsilon`` exactly: no probability is rounded.  (The
rejection loops take a random number of CSPRNG draws, but their distribution
depends only on ε and G, never on the value.)

The simulation path ``randomize_many`` uses numpy: Z is the difference of two
i.i.d. geometric variables with p = 1 - exp(-ε/G), which has exactly the
discrete Laplace distribution (the floats only enter through p).

Statistics are ``[sum of z]`` (int64); the mean estimate is
``lo + (hi - lo) (total/n) / G``.  The variance bound per report, in grid units,
is 1/4 (the rounding variance r(1 - r) <= 1/4; the answers themselves are fixed, as
the intervals cover the respondents' own answers) plus Var[Z] = 2a/(1 - a)² with
a = exp(-ε/G).

Wire: z as an 8-byte big-endian two's-complement integer.  Decoding is strict:
besides the length it rejects |z| that the mechanism produces with probability
below 2**-64, that is z outside [-T, G + T] with T = ceil(65 ln 2 · G/ε), since
P[|Z| > T] = 2a^(T+1)/(1 + a) < 2**-64.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import InvalidParameter, InvalidReport
from ..lazy import np
from ..parameters import check_int
from ..randomness import RESOLUTION, RandomSource, RngLike, as_source
from .base import NumericMechanism, check_numbers, probability_of

if TYPE_CHECKING:
    from ..intervals import ScoreModel

__all__ = ["DiscreteLaplace", "bernoulli_exp", "sample_discrete_laplace"]

MIN_GRID_SIZE = 1
MAX_GRID_SIZE = 10**6
DEFAULT_GRID_SIZE = 1000

# report_distribution enumerates the support until the noise tail is below this.
DISTRIBUTION_TAIL = 1e-15


def bernoulli_exp(source: RandomSource, numerator: int, denominator: int) -> bool:
    """Bernoulli(exp(-γ)) for rational γ = numerator/denominator in [0, 1].

    Canonne, Kamath, Steinke 2020, Algorithm 1: draw A_k ~ Bernoulli(γ/k) for
    k = 1, 2, ... until one is 0; the answer is whether that k is odd.
    """
    k = 1
    while source.randbelow(denominator * k) < numerator:
        k += 1
    return k % 2 == 1


def sample_discrete_laplace(source: RandomSource, s: int, t: int) -> int:
    """Z with P[Z = z] ∝ exp(-|z| s/t), for integers s, t >= 1 (CKS 2020, Algorithm 2)."""
    while True:
        u = source.randbelow(t)
        if not bernoulli_exp(source, u, t):
            continue
        v = 0
        while bernoulli_exp(source, 1, 1):
            v += 1
        # X = u + t v has P[X = x] ∝ exp(-x/t); Y = floor(X/s) has P ∝ exp(-y s/t).
        y = (u + t * v) // s
        negative = source.randbelow(2)
        if negative and y == 0:
            continue  # otherwise 0 would be counted twice
        return -y if negative else y


@dataclass(frozen=True, kw_only=True)
class DiscreteLaplace(NumericMechanism):
    """Randomized rounding to a grid of ``grid_size`` steps plus exact discrete Laplace noise."""

    name: ClassVar[str] = "discrete_laplace"
    display_name: ClassVar[str] = "discrete Laplace noise"
    browser_module: ClassVar[str] = "discrete_laplace.js"
    constructor_keywords: ClassVar[tuple[str, ...]] = ("grid_size",)

    grid_size: int = DEFAULT_GRID_SIZE

    _s: int = field(init=False, repr=False, compare=False, default=0)
    _t: int = field(init=False, repr=False, compare=False, default=0)
    _decay: float = field(init=False, repr=False, compare=False, default=0.0)
    _tail: int = field(init=False, repr=False, compare=False, default=0)

    def _prepare(self) -> None:
        self._set("grid_size", check_int("grid_size", self.grid_size, MIN_GRID_SIZE, MAX_GRID_SIZE))
        g = self.grid_size
        # exp(-ε|z|/G) = exp(-|z| s/t) with s/t = ε/G exactly.
        ratio = Fraction(self.epsilon) / g
        self._set("_s", ratio.numerator)
        self._set("_t", ratio.denominator)
        self._set("_decay", math.exp(-self.epsilon / g))
        self._set("_tail", math.ceil(65 * math.log(2) * g / self.epsilon) + 1)

    def resolved_parameters(self) -> dict[str, Any]:
        return {"grid_size": self.grid_size}

    # -- properties -------------------------------------------------------------
    @property
    def report_bytes(self) -> int:
        return 8

    @property
    def epsilon_implemented(self) -> float:
        # The noise is sampled exactly at scale G/ε (rational arithmetic only) and
        # the rounding step is a pre-processing of the value (see module docstring).
        return self.epsilon

    @property
    def plausible_range(self) -> tuple[int, int]:
        """Reports outside this range occur with probability < 2**-64 and fail decoding."""
        return -self._tail, self.grid_size + self._tail

    @property
    def noise_variance(self) -> float:
        """Var[Z] = 2a/(1 - a)² in grid units, a = exp(-ε/G)."""
        a = self._decay
        return 2 * a / (-math.expm1(-self.epsilon / self.grid_size)) ** 2

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "grid_size": self.grid_size}

    # -- randomization -----------------------------------------------------------
    def _grid(self, value: float) -> tuple[int, int]:
        """floor(u) and the threshold (out of 2**53) of rounding up."""
        g = self.grid_size
        u = min(float(g), max(0.0, g * ((value - self.lo) / (self.hi - self.lo))))
        k = math.floor(u)
        return k, round((u - k) * RESOLUTION)

    def randomize(self, value: object, rng: RngLike = None) -> int:
        """One report z = k + Z, from the CSPRNG unless ``rng`` is given."""
        k, up = self._grid(self.check_value(value))
        source = as_source(rng)
        k += source.uniform53() < up
        return k + sample_discrete_laplace(source, self._s, self._t)

    def encode(self, report: object) -> str:
        try:
            return operator.index(report).to_bytes(8, "big", signed=True).hex()
        except (TypeError, OverflowError):
            raise InvalidReport(
                f"discrete_laplace report must be a 64-bit int, got {report!r}"
            ) from None

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        x = check_numbers(values, self.lo, self.hi)
        g = self.grid_size
        u = np.clip(g * ((x - self.lo) / (self.hi - self.lo)), 0.0, float(g))
        k = np.floor(u)
        k = k.astype(np.int64) + (rng.random(x.size) < u - k)
        p = -math.expm1(-self.epsilon / g)
        noise = rng.geometric(p, x.size) - rng.geometric(p, x.size)
        return k + noise

    # -- estimation --------------------------------------------------------------
    def estimate(self, statistics: np.ndarray, n: int) -> np.ndarray:
        if n <= 0:
            raise InvalidParameter(f"n must be positive to estimate, got {n}")
        total = int(np.asarray(statistics, dtype=np.int64)[0])
        return np.array([self.lo + (self.hi - self.lo) * (total / n) / self.grid_size])

    def score_model(self) -> ScoreModel:
        from ..intervals import ScoreModel

        g = self.grid_size
        # Finite population: each k_i is a randomized rounding of a fixed value
        # (variance <= 1/4) plus independent noise; reports are unbounded.
        return ScoreModel(
            slope=1.0,
            c0=0.25 + self.noise_variance,
            deviation=None,
            low=0.0,
            high=g,
            origin=self.lo,
            scale=(self.hi - self.lo) / g,
        )

    def variance_bound(self, n: int) -> float:
        """Var of the mean estimate for every set of n answers: (step)² (1/4 + Var Z)/n.

        The intervals cover the respondents' own answers (docs/design.md): only the coins
        are random, so report i varies through its rounding, Bernoulli(r_i) with
        r_i (1 - r_i) <= 1/4 grid units², and its independent noise Z (CKS 2020, discrete
        Laplace variance 2a/(1 - a)²).  Equality at r_i = 1/2.  (A spread of the answers,
        (G/2)², would belong to sampling respondents from a larger population: formula
        sheet, "what the interval covers".)
        """
        g = self.grid_size
        return ((self.hi - self.lo) / g) ** 2 * (0.25 + self.noise_variance) / n

    def report_distribution(self, value: object) -> dict[str, float]:
        """P[z] over the support, until the noise tail left out is below 1e-15."""
        k, up = self._grid(self.check_value(value))
        r = probability_of(up)
        # P[|Z| > m] = 2 a^(m+1)/(1 + a) < DISTRIBUTION_TAIL
        m = math.ceil(math.log(DISTRIBUTION_TAIL / 2) / math.log(self._decay))
        g = self.grid_size
        self._check_enumerable(g + 2 * m + 1)
        z = np.arange(-m, g + m + 1, dtype=np.int64)
        c = math.tanh(self.epsilon / (2 * g))  # (1 - a)/(1 + a)
        low = c * np.exp(-self.epsilon * np.abs(z - k) / g)
        high = c * np.exp(-self.epsilon * np.abs(z - k - 1) / g)
        probabilities = (1 - r) * low + r * high
        return dict(zip(self.encode_many(z), probabilities.tolist(), strict=True))

    # -- wire -----------------------------------------------------------------------
    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        values = np.asarray(batch, dtype=np.int64).reshape(-1)
        return values.astype(">i8").view(np.uint8).reshape(-1, 8)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        values = np.ascontiguousarray(data).view(">i8").reshape(-1).astype(np.int64)
        low, high = self.plausible_range
        if values.size and (values.min() < low or values.max() > high):
            raise InvalidReport(
                f"discrete_laplace report outside the plausible range [{low}, {high}]"
            )
        return values
