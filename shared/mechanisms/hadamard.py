"""Hadamard randomized response (HRR).

Cormode, Kulkarni, Srivastava, "Marginal Release Under Local Differential
Privacy" (SIGMOD 2018); see also Acharya, Sun, Zhang, "Hadamard Response:
Estimating Distributions Privately, Efficiently, and with Little
Communication" (AISTATS 2019).

K is the smallest power of two >= d + 1 and H the K x K Sylvester-Hadamard
matrix, H[r][j] = (-1)^popcount(r & j).  The value x uses row r = x + 1 (row 0
is constant and carries nothing).  The respondent draws j uniformly from [K],
computes b = H[r][j], and reports (j, b) with b kept with probability
p = e^ε / (1 + e^ε), else flipped.  S(j, b) = {v : H[v+1][j] = b}, so p* = p
and, since two distinct rows agree on exactly half the columns, q* = 1/2.
The implemented ε is log(p / (1 - p)) of the realised p.

Aggregation: s_j = sum of the signs reported with index j, then one fast
Walsh-Hadamard transform T = H s gives sum_i b_i H[v+1][j_i] = T[v+1] for every
v in O(K log K), and C_v = (n + T[v+1]) / 2 exactly (integer arithmetic).

Batch: ``int64`` array (n, 2) of (j, sign) with sign +1 or -1.  Python-level
report: the tuple (j, sign).  Wire: j big-endian in ``width_bytes(K)`` bytes,
then one byte, 0x01 for +1 and 0x00 for -1.
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
    integer_rows,
    log_ratio,
    pack_uints,
    probability_of,
    report_int,
    unpack_uints,
    width_bytes,
)

__all__ = ["HRR", "fwht"]


def fwht(values: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform (Sylvester order, unnormalised) of a length-2^m vector.

    Returns T with T[r] = sum_j (-1)^popcount(r & j) values[j], in the input's dtype
    (exact for integers as long as sum |values| fits).
    """
    result = np.array(values, copy=True)
    size = result.size
    if size & (size - 1):
        raise ValueError(f"fwht needs a power-of-two length, got {size}")
    half = 1
    while half < size:
        pairs = result.reshape(-1, 2, half)
        left = pairs[:, 0, :].copy()
        right = pairs[:, 1, :]
        pairs[:, 0, :] += right
        np.subtract(left, right, out=pairs[:, 1, :])
        half *= 2
    return result


def _parity(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """popcount(rows & columns) mod 2, elementwise, as int64 (XOR folding; numpy >= 1.26)."""
    x = np.bitwise_and(rows, columns).astype(np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        x ^= x >> shift
    return x & 1


@dataclass(frozen=True, kw_only=True)
class HRR(FrequencyOracle):
    """Hadamard randomized response: (column index, one randomized sign)."""

    name: ClassVar[str] = "hrr"
    display_name: ClassVar[str] = "Hadamard randomized response"
    browser_module: ClassVar[str] = "hadamard.js"

    _keep: int = field(init=False, repr=False, compare=False, default=0)
    _order: int = field(init=False, repr=False, compare=False, default=0)
    _width: int = field(init=False, repr=False, compare=False, default=0)

    def _prepare(self) -> None:
        e = exact_exp(self.epsilon)
        self._set("_keep", threshold(e / (1 + e)))
        self._set("_order", 1 << self.domain_size.bit_length())  # smallest 2^m >= d + 1
        self._set("_width", width_bytes(self._order))

    @property
    def order(self) -> int:
        """K: the size of the Hadamard matrix."""
        return self._order

    @property
    def p_star(self) -> float:
        return probability_of(self._keep)

    @property
    def q_star(self) -> float:
        return 0.5

    @property
    def epsilon_implemented(self) -> float:
        return abs(log_ratio(self._keep, RESOLUTION - self._keep))

    @property
    def report_bytes(self) -> int:
        return self._width + 1

    def randomize(self, value: object, rng: RngLike = None) -> tuple[int, int]:
        true = self.check_value(value)
        source = as_source(rng)
        column = source.randbelow(self._order)
        keep = source.uniform53() < self._keep
        sign = -1 if ((true + 1) & column).bit_count() & 1 else 1
        return column, sign if keep else -sign

    def encode(self, report: object) -> str:
        if not isinstance(report, tuple | list) or len(report) != 2 or report[1] not in (1, -1):
            raise InvalidReport("hrr report must be an (index, sign) pair with sign +1 or -1")
        column = report_int(report[0], self._order, "hrr index")
        return ((column << 8) | (report[1] == 1)).to_bytes(self._width + 1, "big").hex()

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        true = check_categories(values, self.domain_size)
        columns = rng.integers(0, self._order, size=true.size)
        keep = rng.integers(0, RESOLUTION, size=true.size, dtype=np.uint64) < self._keep
        sign = 1 - 2 * _parity(true + 1, columns)
        return np.stack([columns, np.where(keep, sign, -sign)], axis=1)

    def support_counts(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        n = batch.shape[0]
        columns, signs = batch[:, 0], batch[:, 1]
        sums = np.bincount(columns[signs > 0], minlength=self._order) - np.bincount(
            columns[signs < 0], minlength=self._order
        )
        totals = fwht(sums.astype(np.int64))[1 : self.domain_size + 1]
        doubled = n + totals
        if np.any(doubled & 1):
            raise AssertionError("hrr support counts are not integers; the batch is corrupt")
        return doubled // 2

    def support_rows(self, batch: np.ndarray) -> np.ndarray:
        # S(j, b) = {v : H[v + 1][j] = b}, H[r][j] = (-1)^popcount(r & j)
        batch = np.asarray(batch, dtype=np.int64)
        rows = np.arange(1, self.domain_size + 1, dtype=np.int64)[None, :]
        signs = 1 - 2 * _parity(batch[:, :1], rows)
        return (signs == batch[:, 1:2]).astype(np.int8)

    def resolved_parameters(self) -> dict[str, object]:
        return {"order": self.order, **super().resolved_parameters()}

    def report_distribution(self, value: object) -> dict[str, float]:
        true = self.check_value(value)
        self._check_enumerable(2 * self._order)
        p = self.p_star
        share = 1.0 / self._order
        result = {}
        for column in range(self._order):
            sign = -1 if ((true + 1) & column).bit_count() & 1 else 1
            result[self.encode((column, sign))] = share * p
            result[self.encode((column, -sign))] = share * (1.0 - p)
        return result

    # -- batches and wire ------------------------------------------------------
    @property
    def batch_columns(self) -> int:
        return 2

    def _check_batch(self, batch: object) -> np.ndarray:
        array = integer_rows(batch, 2, "hrr reports must be (index, sign) integer pairs")
        if array.size and (
            array[:, 0].min() < 0
            or array[:, 0].max() >= self._order
            or not np.all(np.abs(array[:, 1]) == 1)
        ):
            raise InvalidReport(f"hrr reports need index in [0, {self._order}) and sign +1/-1")
        return array

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        return np.hstack(
            [pack_uints(batch[:, 0], self._width), (batch[:, 1:] > 0).astype(np.uint8)]
        )

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        columns = unpack_uints(data[:, : self._width])
        flags = data[:, self._width].astype(np.int64)
        if columns.size and (columns.max() >= self._order or flags.max() > 1):
            raise InvalidReport(
                f"hrr report needs index in [0, {self._order}) and sign byte 00 or 01"
            )
        return np.stack([columns, 2 * flags - 1], axis=1)
