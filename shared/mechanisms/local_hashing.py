"""Optimized local hashing (OLH) and binary local hashing (BLH, ``hash_range=2``).

Wang, Blocki, Li, Jha, "Locally Differentially Private Protocols for Frequency
Estimation" (USENIX Security 2017), §4.4; BLH is Bassily & Smith, "Local,
Private, Efficient Protocols for Succinct Histograms" (STOC 2015) as recast there.

Each respondent draws a fresh 32-bit seed from the CSPRNG, hashes the true
value x into g buckets with the hash function that seed selects, and reports
the seed together with GRR over [g] of the bucket: the true bucket with
probability p = e^ε / (e^ε + g - 1), otherwise one of the g - 1 other buckets
uniformly.  S(seed, y) = {v : H_seed(v) = y}, so p* = p and, for a hash
family with P_seed[H(v) = H(x)] = 1/g, q* = p/g + (1 - p)/g = 1/g.
g defaults to round(e^ε) + 1 (Wang et al.'s optimum), capped at 65536.

The hash (reproduce exactly in any client; every operation is on unsigned
32-bit integers, i.e. modulo 2**32; in JavaScript use ``Math.imul`` and ``>>> 0``)::

    a      = (v * 0x9E3779B1) mod 2**32             v: the value, 0 <= v < d
    x      = seed XOR a                             seed: the report's 32-bit seed
    x      = x XOR (x >> 16)                        (MurmurHash3 fmix32 finalizer)
    x      = (x * 0x85EBCA6B) mod 2**32
    x      = x XOR (x >> 13)
    x      = (x * 0xC2B2AE35) mod 2**32
    x      = x XOR (x >> 16)
    bucket = x mod g

For example, seed 0 and value 1 give a = 0x9E3779B1 and, with g = 4, bucket 3
(see ``tests/shared/test_categorical.py`` for more test vectors).

Privacy never depends on the quality of the hash: for each fixed seed the
report is GRR over [g], and the seed is independent of x.  Unbiasedness does:
q* = 1/g assumes collisions at rate exactly 1/g; fmix32 is a bijection, and
``x mod g`` adds a bias below g / 2**32 (none when g is a power of two).
Measured collision rates match 1/g within sampling error.

Batch: ``int64`` array (n, 2) of (seed, y).  Python-level report: the tuple
(seed, y).  Wire: the seed as 4 big-endian bytes, then y big-endian in
``width_bytes(g)`` bytes.  ``report_distribution(value, seed=...)`` is the
exact distribution of y for one fixed seed (there are 2**32 seeds).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from ..errors import InvalidReport
from ..lazy import np
from ..parameters import check_int
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

__all__ = ["OLH", "bucket", "buckets", "fmix32"]

MULTIPLIER = 0x9E3779B1
FMIX_1 = 0x85EBCA6B
FMIX_2 = 0xC2B2AE35
MAX_HASH_RANGE = 1 << 16
SEED_BYTES = 4
_MASK32 = 0xFFFFFFFF

# Aggregation works on (rows x d) uint32 blocks small enough to stay in cache
# (64 x 1,024 x 4 B = 256 KiB per block: measured faster than 32 or 128 rows).
_CHUNK_ROWS = 64
# Hits are tallied per cell in uint8 and summed over rows every 255 chunks,
# before a tally can overflow: cheaper than a reduction per chunk.
_TALLY_CHUNKS = 255
# numpy's ufunc buffer, in elements, while counting.  With the default (8192)
# numpy buffers the broadcasts (seeds[:, None] against values, the block against
# ys[:, None]) when a row is shorter than the buffer: at d = 1,024 they ran
# 2.6x and 1.8x slower.  A buffer shorter than a row leaves them unbuffered.
# (numpy 2.4 measured; the size must be a multiple of 16.)
_BUFFER_ELEMENTS = 256
_PARALLEL_MIN_CELLS = 1 << 21
_MAX_WORKERS = 4


def fmix32(x: int) -> int:
    """MurmurHash3's 32-bit finalizer (a bijection on [0, 2**32))."""
    x ^= x >> 16
    x = (x * FMIX_1) & _MASK32
    x ^= x >> 13
    x = (x * FMIX_2) & _MASK32
    x ^= x >> 16
    return x


def bucket(seed: int, value: int, hash_range: int) -> int:
    """H_seed(value) in [0, hash_range): the reference definition (see module docstring)."""
    return fmix32((seed ^ (value * MULTIPLIER)) & _MASK32) % hash_range


def _xorshift16(x: np.ndarray) -> np.ndarray:
    """x XOR (x >> 16): fmix32's first step, which distributes over XOR."""
    return np.bitwise_xor(x, np.right_shift(x, 16))


def _fmix32_inplace(x: np.ndarray, scratch: np.ndarray) -> None:
    np.right_shift(x, 16, out=scratch)
    np.bitwise_xor(x, scratch, out=x)
    np.multiply(x, np.uint32(FMIX_1), out=x)
    np.right_shift(x, 13, out=scratch)
    np.bitwise_xor(x, scratch, out=x)
    np.multiply(x, np.uint32(FMIX_2), out=x)
    np.right_shift(x, 16, out=scratch)
    np.bitwise_xor(x, scratch, out=x)


def _reduce_inplace(x: np.ndarray, hash_range: int) -> None:
    if hash_range & (hash_range - 1) == 0:
        np.bitwise_and(x, np.uint32(hash_range - 1), out=x)
    else:
        np.remainder(x, np.uint32(hash_range), out=x)


def _multiplied(values: np.ndarray) -> np.ndarray:
    """(v * MULTIPLIER) mod 2**32 as uint32, for 0 <= v < 2**32."""
    return (np.asarray(values, dtype=np.uint64) * np.uint64(MULTIPLIER)).astype(np.uint32)


def buckets(seeds: np.ndarray, values: np.ndarray, hash_range: int) -> np.ndarray:
    """Vectorized :func:`bucket` (broadcasting seeds against values), as uint32."""
    x = np.bitwise_xor(np.asarray(seeds, dtype=np.uint32), _multiplied(values))
    _fmix32_inplace(x, np.empty_like(x))
    _reduce_inplace(x, hash_range)
    return x


def _count_rows(
    shifted_seeds: np.ndarray, ys: np.ndarray, shifted_multiplied: np.ndarray, hash_range: int
) -> np.ndarray:
    """For every v, how many of these (seed, y) reports have H_seed(v) == y.

    Takes s ^ (s >> 16) per seed and a ^ (a >> 16) per value (a = v * MULTIPLIER):
    a right shift distributes over XOR, so their XOR is fmix32's first step
    applied to seed XOR a, and each cell starts one XOR into the hash.
    """
    n, d = shifted_seeds.size, shifted_multiplied.size
    rows = min(_CHUNK_ROWS, max(1, n))
    block = np.empty((rows, d), dtype=np.uint32)
    scratch = np.empty_like(block)
    hits = np.empty((rows, d), dtype=np.bool_)
    tally = np.zeros((rows, d), dtype=np.uint8)
    counts = np.zeros(d, dtype=np.int64)
    # A chunk is ten ufunc calls of a few microseconds, so per-call overhead shows:
    # operands, constants and ufuncs are bound once, outputs passed positionally.
    seed_column, y_column = shifted_seeds[:, None], ys[:, None]
    value_row = shifted_multiplied[None, :]
    fmix_1, fmix_2 = np.uint32(FMIX_1), np.uint32(FMIX_2)
    by_13, by_16 = np.uint32(13), np.uint32(16)
    if hash_range & (hash_range - 1) == 0:
        reduce, modulus = np.bitwise_and, np.uint32(hash_range - 1)
    else:
        reduce, modulus = np.remainder, np.uint32(hash_range)
    xor, multiply, shift, equal, add = np.bitwise_xor, np.multiply, np.right_shift, np.equal, np.add
    pending = 0
    previous = np.setbufsize(_BUFFER_ELEMENTS)  # per thread; restored below
    try:
        for start in range(0, n, rows):
            stop = start + rows
            x, s, h, t = block, scratch, hits, tally
            if stop > n:  # the last, shorter chunk
                stop = n
                x, s, h, t = x[: n - start], s[: n - start], h[: n - start], t[: n - start]
            xor(seed_column[start:stop], value_row, x)  # fmix32 after its first step, inlined
            multiply(x, fmix_1, x)
            shift(x, by_13, s)
            xor(x, s, x)
            multiply(x, fmix_2, x)
            shift(x, by_16, s)
            xor(x, s, x)
            reduce(x, modulus, x)
            equal(x, y_column[start:stop], h)
            add(t, h.view(np.uint8), t)
            pending += 1
            if pending == _TALLY_CHUNKS:
                counts += np.add.reduce(tally, axis=0, dtype=np.int64)
                tally.fill(0)
                pending = 0
    finally:
        np.setbufsize(previous)
    if pending:
        counts += np.add.reduce(tally, axis=0, dtype=np.int64)
    return counts


@dataclass(frozen=True, kw_only=True)
class OLH(FrequencyOracle):
    """Optimized local hashing; ``hash_range`` (g >= 2) overrides g, 2 gives BLH."""

    name: ClassVar[str] = "olh"
    display_name: ClassVar[str] = "optimized local hashing"
    browser_module: ClassVar[str] = "local_hashing.js"
    constructor_keywords: ClassVar[tuple[str, ...]] = ("hash_range",)

    hash_range: int | None = None

    _keep: int = field(init=False, repr=False, compare=False, default=0)
    _width: int = field(init=False, repr=False, compare=False, default=0)

    def _prepare(self) -> None:
        e = math.exp(self.epsilon)
        if self.hash_range is None:
            g = min(round(e) + 1, MAX_HASH_RANGE)
        else:
            g = check_int("hash_range", self.hash_range, 2, MAX_HASH_RANGE)
        self._set("hash_range", g)
        exact = exact_exp(self.epsilon)
        self._set("_keep", threshold(exact / (exact + g - 1)))
        self._set("_width", width_bytes(g))

    @cached_property
    def _shifted_multiplied(self) -> np.ndarray:
        """a ^ (a >> 16), a = (v * MULTIPLIER) mod 2**32, for every value v: aggregation only."""
        return _xorshift16(_multiplied(np.arange(self.domain_size)))

    @property
    def p_star(self) -> float:
        return probability_of(self._keep)

    @property
    def q_star(self) -> float:
        return 1.0 / self.hash_range

    @property
    def epsilon_implemented(self) -> float:
        # Fixed seed: GRR over [g] with realised p and (1 - p) / (g - 1).
        return abs(log_ratio(self._keep * (self.hash_range - 1), RESOLUTION - self._keep))

    @property
    def report_bytes(self) -> int:
        return SEED_BYTES + self._width

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "hash_range": self.hash_range}

    def resolved_parameters(self) -> dict[str, Any]:
        return {"hash_range": self.hash_range, **super().resolved_parameters()}

    def support_rows(self, batch: np.ndarray) -> np.ndarray:
        # S(seed, y) = {v : H_seed(v) = y}
        batch = np.asarray(batch, dtype=np.int64)
        hashed = buckets(
            batch[:, :1].astype(np.uint32), np.arange(self.domain_size), self.hash_range
        )
        return (hashed == batch[:, 1:2].astype(np.uint32)).astype(np.int8)

    def randomize(self, value: object, rng: RngLike = None) -> tuple[int, int]:
        true = self.check_value(value)
        source = as_source(rng)
        g = self.hash_range
        # Every draw happens for every value; only the final choice differs.
        seed = int.from_bytes(source.token_bytes(SEED_BYTES), "big")
        keep = source.uniform53() < self._keep
        other = source.randbelow(g - 1)
        hashed = bucket(seed, true, g)
        other += other >= hashed
        return seed, hashed if keep else other

    def encode(self, report: object) -> str:
        if not isinstance(report, tuple | list) or len(report) != 2:
            raise InvalidReport("olh report must be a (seed, y) pair")
        seed, y = report
        plain = type(seed) is int and type(y) is int  # what randomize returns: no conversion
        if not (plain and 0 <= seed <= _MASK32 and 0 <= y < self.hash_range):
            seed = report_int(seed, 1 << 32, "olh seed")
            y = report_int(y, self.hash_range, "olh bucket")
        return ((seed << (8 * self._width)) | y).to_bytes(SEED_BYTES + self._width, "big").hex()

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        true = check_categories(values, self.domain_size)
        g = self.hash_range
        seeds = rng.integers(0, 1 << 32, size=true.size, dtype=np.uint64)
        keep = rng.integers(0, RESOLUTION, size=true.size, dtype=np.uint64) < self._keep
        other = rng.integers(0, g - 1, size=true.size)
        hashed = buckets(seeds, true, g).astype(np.int64)
        other += other >= hashed
        return np.stack([seeds.astype(np.int64), np.where(keep, hashed, other)], axis=1)

    def support_counts(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        seeds = _xorshift16(batch[:, 0].astype(np.uint32))
        ys = batch[:, 1].astype(np.uint32)
        n, d = seeds.size, self.domain_size
        values = self._shifted_multiplied
        workers = min(_MAX_WORKERS, os.cpu_count() or 1)
        if workers < 2 or n * d < _PARALLEL_MIN_CELLS:
            return _count_rows(seeds, ys, values, self.hash_range)
        # numpy releases the GIL inside these ufunc loops, so threads run in parallel.
        from concurrent.futures import ThreadPoolExecutor

        bounds = np.linspace(0, n, workers + 1).astype(int)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = pool.map(
                lambda lo_hi: _count_rows(
                    seeds[lo_hi[0] : lo_hi[1]], ys[lo_hi[0] : lo_hi[1]], values, self.hash_range
                ),
                zip(bounds[:-1], bounds[1:], strict=True),
            )
            return np.sum(list(parts), axis=0, dtype=np.int64)

    def report_distribution(self, value: object, *, seed: int) -> dict[str, float]:
        """Exact distribution of the report for one fixed seed (seed in [0, 2**32))."""
        true = self.check_value(value)
        seed = check_int("seed", seed, 0, _MASK32)
        g = self.hash_range
        self._check_enumerable(g)
        hashed = bucket(seed, true, g)
        p = self.p_star
        other = (1.0 - p) / (g - 1)
        return {self.encode((seed, y)): p if y == hashed else other for y in range(g)}

    # -- batches and wire ------------------------------------------------------
    @property
    def batch_columns(self) -> int:
        return 2

    def _check_batch(self, batch: object) -> np.ndarray:
        array = integer_rows(batch, 2, "olh reports must be (seed, y) integer pairs")
        if array.size and (
            array.min() < 0 or array[:, 0].max() > _MASK32 or array[:, 1].max() >= self.hash_range
        ):
            raise InvalidReport(
                f"olh reports need seed in [0, 2**32) and y in [0, {self.hash_range})"
            )
        return array

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        batch = self._check_batch(batch)
        return np.hstack(
            [pack_uints(batch[:, 0], SEED_BYTES), pack_uints(batch[:, 1], self._width)]
        )

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        seeds = unpack_uints(data[:, :SEED_BYTES])
        ys = unpack_uints(data[:, SEED_BYTES:])
        if ys.size and ys.max() >= self.hash_range:
            raise InvalidReport(f"olh report bucket outside [0, {self.hash_range})")
        return np.stack([seeds, ys], axis=1)
