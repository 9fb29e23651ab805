"""Unary encoding: symmetric (SUE, basic one-time RAPPOR) and optimized (OUE).

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency
Estimation" (USENIX Security 2017), §4.3; SUE is the one-time randomization of
Erlingsson, Pihur, Korolova, "RAPPOR" (CCS 2014).

The true value x becomes the one-hot vector e_x of d bits and every bit is
randomized independently: the bit at x is 1 with probability p, every other
bit is 1 with probability q.  S(y) = {v : y_v = 1}, so p* = p and q* = q.

* SUE: p = e^{ε/2} / (e^{ε/2} + 1), q = 1 - p.
* OUE: p = 1/2, q = 1 / (e^ε + 1).

Both probabilities are realised as thresholds over 2**53 (deniable.randomness);
the implemented ε is log(p (1 - q) / (q (1 - p))) of the realised p and q.

Draws (docs/protocol.md §4): the uniform u in [0, 2**53) behind bit v is read
top byte first.  d bytes give the top 8 bits of every u (one byte per bit,
bit v from byte v); only a byte equal to the top byte of its threshold t (a
tie, probability 1/256 whatever t is) needs the low 45 bits, read then as
``uniform45`` (6 bytes, little-endian, shifted right by 3), ties in order of v.
So bit v = [u < t] exactly, P = t / 2**53, from about d + 6 d / 256 bytes
instead of 8 d; the number of ties is Binomial(d, 1/256) whatever the true
value, so neither the bytes read nor the work depend on it.

Batch: ``uint8`` array of shape (n, d) holding 0/1.  Python-level report: a
tuple of d ints 0/1.  Wire: the d bits packed least-significant-bit first
(``numpy.packbits(bitorder="little")``: bit v is bit ``v % 8`` of byte
``v // 8``) into ceil(d / 8) bytes; the padding bits of the last byte must be
zero.  ``max_domain_size`` is 4096 (a 512-byte report, 1024 hex characters):
beyond that, OLH or HRR give the same variance bound with reports of a few
bytes.
"""

from __future__ import annotations

import itertools
import math
import struct
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

from ..errors import InvalidReport
from ..lazy import np, numpy_type
from ..randomness import (
    RESOLUTION,
    RESOLUTION_BITS,
    ByteStreamSource,
    RngLike,
    as_source,
    exact_exp,
    threshold,
)
from .base import FALSE_REJECTION, FrequencyOracle, check_categories, log_ratio, probability_of

__all__ = ["OUE", "SUE", "UnaryEncoding"]


def gammaln(x: np.ndarray | int) -> np.ndarray:
    """log Γ(x) elementwise (math.lgamma; scipy is not a runtime dependency)."""
    return np.vectorize(math.lgamma, otypes=[np.float64])(x)


# Simulation (``randomize_many``) and the device path both draw one random byte
# per bit and compare it with the top byte of the threshold; only equal bytes
# (1 in 256) need the remaining 45 bits.  This realises exactly
# Bernoulli(threshold / 2**53).
_LOW_BITS = RESOLUTION_BITS - 8
_LOW_MASK = (1 << _LOW_BITS) - 1
_LOW_BYTES = 6  # uniform45: 6 bytes little-endian, shifted right by 3
_LOW_SHIFT = 8 * _LOW_BYTES - _LOW_BITS
_CHUNK_ROWS = 256  # 256 KiB of bytes per chunk stays in cache: ~5x faster than 4096
_LANE_ROWS = 255  # rows of bits summed in uint64 words before a byte lane could overflow
_TIE = 2  # in a byte table: the top bytes are equal, the low 45 bits decide


def _top_byte_table(limit: int) -> bytes:
    """For each top byte b of a uniform: 1 if it is below the top byte of ``limit``, 0 above,
    ``_TIE`` if equal."""
    high = limit >> _LOW_BITS
    return bytes(1 if b < high else _TIE if b == high else 0 for b in range(256))


def _bernoulli_rows(rng: np.random.Generator, out: np.ndarray, limit: int) -> None:
    """Fill the uint8 matrix ``out`` with independent Bernoulli(limit / 2**53) bits."""
    high, low = limit >> _LOW_BITS, limit & _LOW_MASK
    top = rng.integers(0, 256, size=out.shape, dtype=np.uint8)
    np.less(top, high, out=out.view(np.bool_))
    ties = np.flatnonzero(top == high)
    if ties.size:
        rest = rng.integers(0, 1 << _LOW_BITS, size=ties.size, dtype=np.uint64)
        out.reshape(-1)[ties] = rest < low


class UnaryReport(tuple):
    """A unary report as ``randomize`` returns it: a tuple of d ints 0/1 that
    also keeps those bits as bytes (read-only), so ``encode`` need not convert
    the tuple back; the tuple is immutable, so the two always agree."""

    bits: bytes

    def __new__(cls, values: tuple[int, ...], bits: bytes | None = None) -> UnaryReport:
        report = super().__new__(cls, values)
        report.bits = bytes(report) if bits is None else bits
        return report

    def __reduce__(self) -> tuple[type, tuple[tuple[int, ...]]]:
        return UnaryReport, (tuple(self),)


@dataclass(frozen=True, kw_only=True)
class UnaryEncoding(FrequencyOracle):
    """d independently randomized bits; subclasses choose the two thresholds."""

    max_domain_size: ClassVar[int] = 4096
    browser_module: ClassVar[str] = "unary.js"

    _one_if_true: int = field(init=False, repr=False, compare=False, default=0)
    _one_if_other: int = field(init=False, repr=False, compare=False, default=0)
    _bytes: int = field(init=False, repr=False, compare=False, default=0)
    _true_table: bytes = field(init=False, repr=False, compare=False, default=b"")
    _other_table: bytes = field(init=False, repr=False, compare=False, default=b"")
    _unpack_bits: struct.Struct | None = field(init=False, repr=False, compare=False, default=None)
    _padding: bytes = field(init=False, repr=False, compare=False, default=b"")
    _fold_masks: tuple[int, ...] = field(init=False, repr=False, compare=False, default=())

    def _thresholds(self) -> tuple[int, int]:
        """(threshold for the true bit, threshold for every other bit)."""
        raise NotImplementedError

    def _prepare(self) -> None:
        one_if_true, one_if_other = self._thresholds()
        self._set("_one_if_true", one_if_true)
        self._set("_one_if_other", one_if_other)
        self._set("_bytes", (self.domain_size + 7) // 8)
        self._set("_true_table", _top_byte_table(one_if_true))
        self._set("_other_table", _top_byte_table(one_if_other))
        self._set("_unpack_bits", struct.Struct(f"{self.domain_size}B"))
        lanes = 8 * self._bytes  # bits padded to whole bytes, one byte per bit
        self._set("_padding", bytes(lanes - self.domain_size))
        self._set(
            "_fold_masks",
            tuple(
                int.from_bytes(mask * (lanes // len(mask)), "little")
                for mask in (b"\x03\x00", b"\x0f\x00\x00\x00", b"\xff" + bytes(7))
            ),
        )

    def resolved_parameters(self) -> dict[str, int]:
        return {"one_if_true": self._one_if_true, "one_if_other": self._one_if_other}

    def adopt_probabilities(self, values: dict[str, int]) -> None:
        for key, table in (("one_if_true", "_true_table"), ("one_if_other", "_other_table")):
            if key in values:
                self._set(f"_{key}", values[key])
                self._set(table, _top_byte_table(values[key]))

    @property
    def p_star(self) -> float:
        return probability_of(self._one_if_true)

    @property
    def q_star(self) -> float:
        return probability_of(self._one_if_other)

    @property
    def epsilon_implemented(self) -> float:
        # Exact integer ratio of the realised probabilities, then one log.
        p, q = self._one_if_true, self._one_if_other
        return abs(log_ratio(p * (RESOLUTION - q), q * (RESOLUTION - p)))

    @property
    def report_bytes(self) -> int:
        return self._bytes

    def randomize(self, value: object, rng: RngLike = None) -> tuple[int, ...]:
        true = self.check_value(value)
        source = as_source(rng)
        d = self.domain_size
        # d uniforms are drawn and compared whatever the value.
        if not isinstance(source, ByteStreamSource):  # a numpy Generator (tests, simulation)
            limits = np.full(d, self._one_if_other, dtype=np.uint64)
            limits[true] = self._one_if_true
            bits = source.uniform53_array(d) < limits
            return tuple(bits.astype(np.uint8).tolist())
        # The device path, in pure Python (see the module docstring): byte v is the
        # top byte of uniform v; a byte table maps it to 1, 0 or a tie.  The ties'
        # low bits (6 bytes each, in order of v) are the next bytes of the stream,
        # read at once: the same bytes as one read per tie.
        top = source.token_bytes(d)
        bits = bytearray(top.translate(self._other_table))
        bits[true] = self._true_table[top[true]]
        ties = bits.count(_TIE)
        if ties:
            low = source.token_bytes(_LOW_BYTES * ties)
            tie = -1
            for start in range(0, _LOW_BYTES * ties, _LOW_BYTES):
                tie = bits.find(_TIE, tie + 1)
                limit = (self._one_if_true if tie == true else self._one_if_other) & _LOW_MASK
                uniform = int.from_bytes(low[start : start + _LOW_BYTES], "little") >> _LOW_SHIFT
                bits[tie] = uniform < limit
        return UnaryReport(self._unpack_bits.unpack(bits), bytes(bits))

    def encode(self, report: object) -> str:
        # Packing in three big-integer steps: read the bits as bytes of a
        # little-endian integer (bit v at 8 v), then fold 2, 4 and 8 neighbours
        # into the low bits of 16-, 32- and 64-bit lanes; the low byte of each
        # 64-bit lane is then one packed byte, least significant bit first.
        bits = report.bits if type(report) is UnaryReport else self._report_bits(report)
        bits += self._padding
        x = int.from_bytes(bits, "little")
        x = (x | x >> 7) & self._fold_masks[0]
        x = (x | x >> 14) & self._fold_masks[1]
        x = (x | x >> 28) & self._fold_masks[2]
        return x.to_bytes(len(bits), "little")[::8].hex()

    def _report_bits(self, report: object) -> bytes:
        """A Python-level report (d values 0/1) as d bytes 0/1, or InvalidReport."""
        if numpy_type(report, "ndarray"):
            report = report.tolist()  # type: ignore[union-attr]
        try:
            if not isinstance(report, tuple | list):
                raise TypeError
            bits = bytes(report)
        except (TypeError, ValueError):
            raise InvalidReport(
                f"{self.name} report must be a tuple of {self.domain_size} bits 0/1"
            ) from None
        if len(bits) != self.domain_size or bits.translate(None, b"\x00\x01"):
            raise InvalidReport(f"{self.name} report must be {self.domain_size} bits 0/1")
        return bits

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        true = check_categories(values, self.domain_size)
        n, d = true.size, self.domain_size
        batch = np.empty((n, d), dtype=np.uint8)
        for start in range(0, n, _CHUNK_ROWS):
            stop = min(n, start + _CHUNK_ROWS)
            _bernoulli_rows(rng, batch[start:stop], self._one_if_other)
        # The true column is drawn afresh: its bit is Bernoulli(p), independent of the rest.
        keep = rng.integers(0, RESOLUTION, size=n, dtype=np.uint64) < self._one_if_true
        batch[np.arange(n), true] = keep
        return batch

    @cached_property
    def plausible_ones(self) -> tuple[int, int]:
        """The range of the number of ones outside which an honest report lies
        with probability at most FALSE_REJECTION, whatever the true value.

        An honest report has Bernoulli(p) + Binomial(d - 1, q) ones; the window
        cuts FALSE_REJECTION / 2 from each tail of that exact distribution.
        """
        d, p, q = self.domain_size, self.p_star, self.q_star
        k = np.arange(d)
        log_binomial = (
            gammaln(d)
            - gammaln(k + 1)
            - gammaln(d - k)
            + k * math.log(q)
            + (d - 1 - k) * math.log1p(-q)
        )
        others = np.exp(log_binomial)
        ones = np.zeros(d + 1)
        ones[:-1] += (1 - p) * others
        ones[1:] += p * others
        tail = FALSE_REJECTION / 2
        below = np.cumsum(ones)
        above = np.cumsum(ones[::-1])[::-1]
        low = int(np.searchsorted(below, tail, side="right"))  # P[K < low] <= tail
        high = int(d - np.searchsorted(above[::-1], tail, side="right"))  # P[K > high] <= tail
        return low, high

    def implausible(self, batch: np.ndarray) -> np.ndarray:
        ones = self._check_batch(batch).sum(axis=1, dtype=np.int64)
        low, high = self.plausible_ones
        return (ones < low) | (ones > high)

    def support_counts(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        return batch.sum(axis=0, dtype=np.int64)

    def support_rows(self, batch: np.ndarray) -> np.ndarray:
        # S(y) = the set bits
        return np.asarray(batch, dtype=np.int8).reshape(len(batch), self.domain_size)

    def report_distribution(self, value: object) -> dict[str, float]:
        true = self.check_value(value)
        d = self.domain_size
        self._check_enumerable(1 << d)
        p, q = self.p_star, self.q_star
        one = np.full(d, q)
        one[true] = p
        result = {}
        for bits in itertools.product((0, 1), repeat=d):
            y = np.array(bits)
            probability = float(np.prod(np.where(y == 1, one, 1.0 - one)))
            result[self.encode(tuple(bits))] = probability
        return result

    # -- batches and wire ------------------------------------------------------
    batch_dtype: ClassVar[str] = "uint8"

    @property
    def batch_columns(self) -> int:
        return self.domain_size

    def _check_batch(self, batch: object) -> np.ndarray:
        """A batch as a (n, d) uint8 array of 0/1, or InvalidReport."""
        array = np.asarray(batch)
        if array.dtype == bool:
            array = array.view(np.uint8)
        if (
            array.ndim != 2
            or array.shape[1] != self.domain_size
            or not np.issubdtype(array.dtype, np.integer)
        ):
            raise InvalidReport(
                f"{self.name} reports must be 0/1 rows of {self.domain_size} bits, "
                f"got {array.dtype} {array.shape}"
            )
        if array.size and (array.min() < 0 or array.max() > 1):
            raise InvalidReport(f"{self.name} report bits must be 0 or 1")
        return array.astype(np.uint8, copy=False)

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        return np.packbits(self._check_batch(batch), axis=1, bitorder="little")

    def _check_padding(self, data: np.ndarray) -> None:
        spare = 8 * self._bytes - self.domain_size
        if spare and data.shape[0] and np.any(data[:, -1] >> (8 - spare)):
            raise InvalidReport(f"{self.name} report has nonzero padding bits")

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        self._check_padding(data)
        return np.unpackbits(data, axis=1, count=self.domain_size, bitorder="little")

    def _rows_statistics(self, data: np.ndarray) -> np.ndarray:
        """Support counts straight from packed rows, 255 rows at a time.

        The unpacked bits of up to 255 rows are summed as uint64 words, eight
        byte lanes each: no lane can exceed 255, so no carry crosses lanes and
        the sum's bytes are the per-bit counts (whatever the byte order).
        """
        self._check_padding(data)
        counts = np.zeros(8 * self._bytes, dtype=np.int64)
        for start in range(0, data.shape[0], _LANE_ROWS):
            bits = np.unpackbits(data[start : start + _LANE_ROWS], axis=1, bitorder="little")
            counts += bits.view(np.uint64).sum(axis=0, dtype=np.uint64).view(np.uint8)
        return counts[: self.domain_size]


@dataclass(frozen=True, kw_only=True)
class SUE(UnaryEncoding):
    """Symmetric unary encoding (basic one-time RAPPOR): each bit kept w.p. e^{ε/2}/(e^{ε/2}+1)."""

    name: ClassVar[str] = "sue"
    display_name: ClassVar[str] = "symmetric unary encoding"

    def _thresholds(self) -> tuple[int, int]:
        half = exact_exp(self.epsilon / 2)
        keep = threshold(half / (half + 1))
        # q = 1 - p exactly in the realised probabilities.
        return keep, RESOLUTION - keep


@dataclass(frozen=True, kw_only=True)
class OUE(UnaryEncoding):
    """Optimized unary encoding: true bit 1 w.p. 1/2, other bits 1 w.p. 1/(e^ε+1)."""

    name: ClassVar[str] = "oue"
    display_name: ClassVar[str] = "optimized unary encoding"

    def _thresholds(self) -> tuple[int, int]:
        return RESOLUTION // 2, threshold(1 / (exact_exp(self.epsilon) + 1), round_up=True)
