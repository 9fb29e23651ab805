"""Subset selection (k-subset mechanism).

Ye & Barg, "Optimal Schemes for Discrete Distribution Estimation Under Locally
Differential Privacy" (IEEE Trans. Inf. Theory 2018); Wang, Wu, Hu, "Mutual
Information Optimally Local Private Discrete Distribution Estimation" (2016).

The report is a set of k distinct values, k = max(1, round(d / (e^ε + 1)))
unless ``subset_size`` overrides it (1 <= k < d).  With probability
p = k e^ε / (k e^ε + d - k) it is the true value plus k - 1 values drawn
uniformly from the d - 1 others, otherwise k values drawn uniformly from the
d - 1 others.  S(y) = y, so p* = p and
q* = p (k - 1) / (d - 1) + (1 - p) k / (d - 1).

A subset containing x has probability p / C(d-1, k-1), one without it
(1 - p) / C(d-1, k); the implemented ε is log(p (d - k) / ((1 - p) k)) of the
realised p.  With k = 1 this is GRR.

Batch: ``int64`` array (n, k), each row strictly increasing.  Python-level
report: a tuple of k increasing ints.  Wire: the k values in increasing order,
each big-endian in ``width_bytes(d)`` bytes; strict decoding rejects values out
of range and rows that are not strictly increasing (duplicates, wrong order).
``max_domain_size`` is 4096: at small ε the report holds about d/2 values
(4 KiB at d = 4096), where OLH or HRR reach a similar variance bound in a few
bytes.
"""

from __future__ import annotations

import itertools
import math
import operator
import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import InvalidReport
from ..lazy import np, numpy_type
from ..parameters import check_int
from ..randomness import RESOLUTION, RngLike, as_source, exact_exp, threshold
from .base import (
    FrequencyOracle,
    check_categories,
    integer_rows,
    log_ratio,
    pack_uints,
    probability_of,
    unpack_uints,
    width_bytes,
)

__all__ = ["SubsetSelection"]

_CHUNK_ROWS = 4096


@dataclass(frozen=True, kw_only=True)
class SubsetSelection(FrequencyOracle):
    """k-subset selection; ``subset_size`` overrides the default k."""

    name: ClassVar[str] = "subset"
    display_name: ClassVar[str] = "subset selection"
    browser_module: ClassVar[str] = "subset.js"
    constructor_keywords: ClassVar[tuple[str, ...]] = ("subset_size",)
    max_domain_size: ClassVar[int] = 4096

    subset_size: int | None = None

    _keep: int = field(init=False, repr=False, compare=False, default=0)
    _width: int = field(init=False, repr=False, compare=False, default=0)
    _format: str = field(init=False, repr=False, compare=False, default="")

    def _prepare(self) -> None:
        d = self.domain_size
        e = math.exp(self.epsilon)
        if self.subset_size is None:
            k = min(max(1, round(d / (e + 1))), d - 1)
        else:
            k = check_int("subset_size", self.subset_size, 1, d - 1)
        self._set("subset_size", k)
        exact = exact_exp(self.epsilon)
        self._set("_keep", threshold(k * exact / (k * exact + d - k)))
        self._set("_width", width_bytes(d))
        self._set("_format", f">{k}{'B' if self._width == 1 else 'H'}")

    @property
    def p_star(self) -> float:
        return probability_of(self._keep)

    @property
    def q_star(self) -> float:
        p, k, d = self.p_star, self.subset_size, self.domain_size
        return (p * (k - 1) + (1 - p) * k) / (d - 1)

    @property
    def epsilon_implemented(self) -> float:
        k, d = self.subset_size, self.domain_size
        return abs(log_ratio(self._keep * (d - k), (RESOLUTION - self._keep) * k))

    @property
    def report_bytes(self) -> int:
        return self.subset_size * self._width

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "subset_size": self.subset_size}

    def resolved_parameters(self) -> dict[str, Any]:
        return {"subset_size": self.subset_size, **super().resolved_parameters()}

    def randomize(self, value: object, rng: RngLike = None) -> tuple[int, ...]:
        true = self.check_value(value)
        source = as_source(rng)
        k, others = self.subset_size, self.domain_size - 1
        keep = source.uniform53() < self._keep
        # Partial Fisher-Yates over the d - 1 other values (a sparse array kept in
        # a dict): always k draws, whatever the value and whether it is kept.
        swapped: dict[int, int] = {}
        chosen = []
        for i in range(k):
            j = i + source.randbelow(others - i)
            picked = swapped.get(j, j)
            swapped[j] = swapped.get(i, i)
            chosen.append(picked + (picked >= true))
        if keep:
            chosen[-1] = true
        return tuple(sorted(chosen))

    def encode(self, report: object) -> str:
        k, d = self.subset_size, self.domain_size
        if numpy_type(report, "ndarray"):
            report = report.tolist()  # type: ignore[union-attr]
        try:
            if not isinstance(report, tuple | list) or len(report) != k:
                raise TypeError
            values = [operator.index(v) for v in report]
        except TypeError:
            raise InvalidReport(f"subset report must be a tuple of {k} ints") from None
        increasing = all(a < b for a, b in zip(values, values[1:], strict=False))
        if values[0] < 0 or values[-1] >= d or not increasing:
            raise InvalidReport(f"subset report must be {k} strictly increasing values in [0, {d})")
        return struct.pack(self._format, *values).hex()

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        true = check_categories(values, self.domain_size)
        n, k, others = true.size, self.subset_size, self.domain_size - 1
        keep = rng.integers(0, RESOLUTION, size=n, dtype=np.uint64) < self._keep
        batch = np.empty((n, k), dtype=np.int64)
        for start in range(0, n, _CHUNK_ROWS):
            stop = min(n, start + _CHUNK_ROWS)
            rows = np.arange(stop - start)
            # Vectorized partial Fisher-Yates, one row per report.
            pool = np.broadcast_to(np.arange(others, dtype=np.int32), (rows.size, others)).copy()
            for i in range(k):
                j = i + rng.integers(0, others - i, size=rows.size)
                picked = pool[rows, j]
                pool[rows, j] = pool[rows, i]
                pool[rows, i] = picked
            chosen = pool[:, :k].astype(np.int64)
            chosen += chosen >= true[start:stop, None]
            chosen[:, -1] = np.where(keep[start:stop], true[start:stop], chosen[:, -1])
            chosen.sort(axis=1)
            batch[start:stop] = chosen
        return batch

    def support_counts(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        return np.bincount(batch.ravel(), minlength=self.domain_size).astype(np.int64)

    def support_rows(self, batch: np.ndarray) -> np.ndarray:
        # S(y) = the reported subset
        rows = np.zeros((len(batch), self.domain_size), dtype=np.int8)
        rows[np.arange(len(batch))[:, None], np.asarray(batch, dtype=np.int64)] = 1
        return rows

    def report_distribution(self, value: object) -> dict[str, float]:
        true = self.check_value(value)
        d, k = self.domain_size, self.subset_size
        self._check_enumerable(math.comb(d, k))
        p = self.p_star
        with_true = p / math.comb(d - 1, k - 1)
        without = (1.0 - p) / math.comb(d - 1, k)
        return {
            self.encode(subset): with_true if true in subset else without
            for subset in itertools.combinations(range(d), k)
        }

    # -- batches and wire ------------------------------------------------------
    @property
    def batch_columns(self) -> int:
        return self.subset_size

    def _check_batch(self, batch: object) -> np.ndarray:
        k = self.subset_size
        array = integer_rows(batch, k, f"subset reports must be rows of {k} integers")
        self._check_rows(array)
        return array

    def _check_rows(self, array: np.ndarray) -> None:
        if array.size and (
            array.min() < 0
            or array.max() >= self.domain_size
            or np.any(np.diff(array, axis=1) <= 0)
        ):
            raise InvalidReport(
                f"subset reports must be strictly increasing values in [0, {self.domain_size})"
            )

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        n, k = batch.shape
        return pack_uints(batch.ravel(), self._width).reshape(n, k * self._width)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        n, k = data.shape[0], self.subset_size
        values = unpack_uints(data.reshape(n * k, self._width)).reshape(n, k)
        self._check_rows(values)
        return values

    def _rows_statistics(self, data: np.ndarray) -> np.ndarray:
        """Support counts from packed rows, checked as strictly, in the wire's own width."""
        n, k = data.shape[0], self.subset_size
        values = np.ascontiguousarray(data).view(f">u{self._width}").reshape(n, k)
        values = values.astype(values.dtype.newbyteorder("="))
        if n and (
            values[:, -1].max() >= self.domain_size or not np.all(values[:, 1:] > values[:, :-1])
        ):
            raise InvalidReport(
                f"subset reports must be strictly increasing values in [0, {self.domain_size})"
            )
        return np.bincount(values.ravel(), minlength=self.domain_size).astype(np.int64)
