"""Generalized randomized response (k-RR, direct encoding).

Kairouz, Oh, Viswanath, "Extremal Mechanisms for Local Differential Privacy"
(NeurIPS 2014); Wang, Blocki, Li, Jha (USENIX Security 2017), "DE".

Report the true value with probability p = e^ε / (e^ε + d - 1), otherwise a
value drawn uniformly from the d - 1 others.  S(y) = {y}, so p* = p and
q* = (1 - p) / (d - 1) = 1 / (e^ε + d - 1).  Wire: the reported value as a
big-endian unsigned integer of ``ceil(log2(d) / 8)`` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..errors import InvalidReport
from ..lazy import np
from ..randomness import RESOLUTION, RngLike, as_source, exact_exp, threshold
from .base import (
    FrequencyOracle,
    check_categories,
    log_ratio,
    pack_uints,
    probability_of,
    report_int,
    unpack_uints,
    width_bytes,
)

__all__ = ["GRR"]


@dataclass(frozen=True, kw_only=True)
class GRR(FrequencyOracle):
    """Generalized randomized response over ``domain_size`` values."""

    name: ClassVar[str] = "grr"
    display_name: ClassVar[str] = "generalized randomized response"
    browser_module: ClassVar[str] = "grr.js"
    direct_encoding: ClassVar[bool] = True

    _keep: int = field(init=False, repr=False, compare=False, default=0)
    _width: int = field(init=False, repr=False, compare=False, default=0)

    def _prepare(self) -> None:
        e = exact_exp(self.epsilon)
        self._set("_keep", threshold(e / (e + self.domain_size - 1)))
        self._set("_width", width_bytes(self.domain_size))

    @property
    def p_star(self) -> float:
        return probability_of(self._keep)

    @property
    def q_star(self) -> float:
        return (1.0 - self.p_star) / (self.domain_size - 1)

    @property
    def epsilon_implemented(self) -> float:
        return abs(log_ratio(self._keep * (self.domain_size - 1), RESOLUTION - self._keep))

    @property
    def report_bytes(self) -> int:
        return self._width

    def randomize(self, value: object, rng: RngLike = None) -> int:
        true = self.check_value(value)
        source = as_source(rng)
        # Both draws happen for every value, so the work done never depends on
        # whether the truth is kept.
        keep = source.uniform53() < self._keep
        other = source.randbelow(self.domain_size - 1)
        other += other >= true
        return true if keep else other

    def encode(self, report: object) -> str:
        value = report_int(report, self.domain_size, f"{self.name} report")
        return value.to_bytes(self._width, "big").hex()

    def output_reports(self) -> tuple[str, ...]:
        """The d values, 0 .. d - 1 (binary RR and the memoized GRR inherit this)."""
        return tuple(self.encode(y) for y in range(self.domain_size))

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        true = check_categories(values, self.domain_size)
        keep = rng.random(true.size) < self.p_star
        other = rng.integers(0, self.domain_size - 1, size=true.size)
        other += other >= true
        return np.where(keep, true, other)

    def support_counts(self, batch: np.ndarray) -> np.ndarray:
        return np.bincount(batch, minlength=self.domain_size).astype(np.int64)

    def support_rows(self, batch: np.ndarray) -> np.ndarray:
        # S(y) = {y}: one-hot rows.
        rows = np.zeros((len(batch), self.domain_size), dtype=np.int8)
        rows[np.arange(len(batch)), np.asarray(batch, dtype=np.int64)] = 1
        return rows

    def report_distribution(self, value: object) -> dict[str, float]:
        true = self.check_value(value)
        return {
            self.encode(y): self.p_star if y == true else self.q_star
            for y in range(self.domain_size)
        }

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        return pack_uints(batch, self._width)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        values = unpack_uints(data)
        if values.size and values.max() >= self.domain_size:
            raise InvalidReport(f"grr report outside [0, {self.domain_size})")
        return values
