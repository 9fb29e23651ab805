"""Duchi's one-bit mechanism for a number in a range.

Duchi, Jordan, Wainwright, "Local Privacy and Statistical Minimax Rates"
(FOCS 2013) and "Minimax Optimal Procedures for Locally Private Estimation"
(JASA 2018).

The value x in [lo, hi] is scaled to t = 2((x - lo)/(hi - lo)) - 1 in [-1, 1]
(the fraction first, so that no intermediate overflows: docs/protocol.md §4).
With B = (e^ε + 1)/(e^ε - 1) the report is +B with probability

    p(t) = 1/2 + t (e^ε - 1) / (2 (e^ε + 1))

and -B otherwise, so E[report] = t and Var[report] = B² - t² <= B².  Only the
sign travels: a batch is an int8 array of ±1, ``statistics`` is ``[sum of
signs]`` (exact int64), and the mean is ``(lo + hi)/2 + (B total/n)(hi - lo)/2``.

Sampling: p(t) is computed in floating point from the real t and realised
as ``threshold(p(t)) / 2**53`` (see :mod:`deniable.randomness`); one CSPRNG
``uniform53`` draw is compared with it, for every value alike.  The threshold
is clamped to the thresholds of the extremes t = -1 and t = +1, so every
realised probability lies between those two, and ``epsilon_implemented`` is
the worst log-ratio between the extremes' realised distributions.  The output
takes only two values, so floating-point arithmetic leaks nothing beyond the
realised probabilities (no Mironov-style attack).

Wire: one byte, ``00`` for -B and ``01`` for +B; anything else is rejected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from ..errors import InvalidParameter, InvalidReport
from ..lazy import np
from ..randomness import RESOLUTION, RngLike, as_source, exact_exp, threshold
from .base import NumericMechanism, check_numbers, log_ratio, probability_of

if TYPE_CHECKING:
    from ..intervals import ScoreModel

__all__ = ["Duchi"]


@dataclass(frozen=True, kw_only=True)
class Duchi(NumericMechanism):
    """Duchi et al.'s unbiased one-bit mechanism on ``[lo, hi]``."""

    name: ClassVar[str] = "duchi"
    display_name: ClassVar[str] = "Duchi et al. one-bit mechanism"
    browser_module: ClassVar[str] = "duchi.js"
    bounded_reports: ClassVar[bool] = True

    _bound: float = field(init=False, repr=False, compare=False, default=0.0)
    _slope: float = field(init=False, repr=False, compare=False, default=0.0)
    _low: int = field(init=False, repr=False, compare=False, default=0)
    _high: int = field(init=False, repr=False, compare=False, default=0)

    def _prepare(self) -> None:
        e = math.exp(self.epsilon)
        self._set("_bound", (e + 1) / (e - 1))
        self._set("_slope", (e - 1) / (2 * (e + 1)))
        # Thresholds of P[+B] at t = -1 and t = +1: every other t lies between.
        self._set("_low", threshold(1 / (exact_exp(self.epsilon) + 1), round_up=True))
        self._set("_high", RESOLUTION - self._low)

    @property
    def bound(self) -> float:
        """B = (e^ε + 1)/(e^ε - 1), the magnitude of a report."""
        return self._bound

    @property
    def report_bytes(self) -> int:
        return 1

    def resolved_parameters(self) -> dict[str, object]:
        return {"low": self._low, "high": self._high, "slope": self._slope}

    def adopt_probabilities(self, values: dict[str, object]) -> None:
        low = values.get("low", self._low)
        high = values.get("high", self._high)
        slope = values.get("slope", self._slope)
        if high != RESOLUTION - low or not low < high:
            raise InvalidParameter("duchi thresholds must satisfy high = 2**53 - low > low")
        if isinstance(slope, bool) or type(slope) not in (int, float) or not 0 < slope <= 0.5:
            raise InvalidParameter(f"duchi slope must be a number in (0, 0.5], got {slope!r}")
        if slope != self._slope:
            # E[sign] = 2 t slope, so the unbiased report magnitude is 1/(2 slope).
            self._set("_bound", 1 / (2 * slope))
        self._set("_low", low)
        self._set("_high", high)
        self._set("_slope", float(slope))

    @property
    def epsilon_implemented(self) -> float:
        plus = log_ratio(self._high, self._low)
        minus = log_ratio(RESOLUTION - self._low, RESOLUTION - self._high)
        return max(plus, minus)

    def _scaled(self, value: float) -> float:
        # The fraction first: 2 * (x - lo) overflows when x - lo > 2**1023 although
        # hi - lo is finite (lo = -5e307, hi = 5e307); x - lo <= hi - lo keeps it finite.
        t = 2 * ((value - self.lo) / (self.hi - self.lo)) - 1
        return min(1.0, max(-1.0, t))

    def _threshold(self, value: float) -> int:
        p = 0.5 + self._scaled(value) * self._slope
        return min(self._high, max(self._low, threshold(p)))

    def randomize(self, value: object, rng: RngLike = None) -> int:
        """+1 (report +B) or -1 (report -B), from the CSPRNG unless ``rng`` is given."""
        limit = self._threshold(self.check_value(value))
        return 1 if as_source(rng).uniform53() < limit else -1

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        x = check_numbers(values, self.lo, self.hi)
        t = np.clip(2 * ((x - self.lo) / (self.hi - self.lo)) - 1, -1.0, 1.0)
        plus = rng.random(x.size) < 0.5 + t * self._slope
        return np.where(plus, 1, -1).astype(np.int8)

    batch_dtype: ClassVar[str] = "int8"

    def encode(self, report: object) -> str:
        if report == 1:
            return "01"
        if report == -1:
            return "00"
        raise InvalidReport(f"duchi reports are signs, +1 or -1, got {report!r}")

    def output_reports(self) -> tuple[str, ...]:
        """The two signs, -B then +B."""
        return (self.encode(-1), self.encode(1))

    def estimate(self, statistics: np.ndarray, n: int) -> np.ndarray:
        if n <= 0:
            raise InvalidParameter(f"n must be positive to estimate, got {n}")
        total = float(np.asarray(statistics, dtype=np.int64)[0])
        t_hat = self._bound * total / n
        # The midpoint plus t_hat half-ranges: (t_hat + 1) * (hi - lo) would overflow
        # on ranges near the largest double although the mean itself is finite.
        middle, half = self.lo / 2 + self.hi / 2, self.hi / 2 - self.lo / 2
        return np.array([middle + t_hat * half])

    def score_model(self) -> ScoreModel:
        from ..intervals import ScoreModel

        bound = self.bound
        # Reports ±B with mean t_i: Σ Var = Σ (B² - t_i²) <= n (B² - t̄²).
        return ScoreModel(
            slope=1.0,
            c0=bound * bound,
            c2=-1.0,
            deviation=bound + 1.0,
            low=-1.0,
            high=1.0,
            origin=(self.lo + self.hi) / 2,
            scale=(self.hi - self.lo) / 2,
        )

    def variance_bound(self, n: int) -> float:
        return self._bound**2 * ((self.hi - self.lo) / 2) ** 2 / n

    def report_distribution(self, value: object) -> dict[str, float]:
        plus = probability_of(self._threshold(self.check_value(value)))
        return {"00": 1.0 - plus, "01": plus}

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        signs = np.asarray(batch).reshape(-1)
        if signs.size and not np.all((signs == 1) | (signs == -1)):
            raise InvalidReport("duchi reports are signs, +1 or -1")
        return (signs > 0).astype(np.uint8).reshape(-1, 1)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        bits = data[:, 0]
        if bits.size and bits.max() > 1:
            raise InvalidReport("duchi report must be the byte 00 or 01")
        return (2 * bits.astype(np.int8) - 1).astype(np.int8)
