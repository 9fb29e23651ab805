"""Randomness for real reports, and how tests inject their own.

Real reports draw every random bit from the operating system's CSPRNG
(``os.urandom``, the source behind :mod:`secrets`).  Python's :mod:`random`
and :mod:`numpy.random` are never touched on that path; numpy generators are
only for simulation (``randomize_many``) and for deterministic tests, wrapped
in :class:`GeneratorSource` so both paths share one interface.  This module
does not import numpy (see :mod:`deniable.lazy`): only ``uniform53_array``
and a numpy Generator passed as ``rng`` need it.

Bytes are read from ``os.urandom`` in blocks of 4 KiB per thread because a
system call per report would cost more than the whole randomization.  The
buffer is thread-local (two threads never see the same bytes) and is dropped
in a forked child (a child never replays its parent's bytes).

Probabilities are realised exactly as ``threshold / 2**53``: a Bernoulli draw is
``uniform53() < threshold``.  Mechanisms compute their implemented ε from these
thresholds, so the ε they report is the ε of the code that runs.
"""

from __future__ import annotations

import io
import math
import os
import threading
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from .errors import InvalidParameter
from .lazy import np, numpy_type

if TYPE_CHECKING:
    from fractions import Fraction

RESOLUTION_BITS = 53
RESOLUTION = 1 << RESOLUTION_BITS
_BLOCK_BYTES = 4096

__all__ = [
    "RESOLUTION",
    "RESOLUTION_BITS",
    "ByteStreamSource",
    "GeneratorSource",
    "RngLike",
    "RandomSource",
    "SystemRandomSource",
    "as_source",
    "exact_exp",
    "threshold",
]


def exact_exp(epsilon: float) -> Fraction:
    """``math.exp(epsilon)`` as an exact fraction, for exact threshold arithmetic."""
    # fractions (and decimal, which it imports) load with the first mechanism, not with
    # ``import deniable.client``, whose HMAC stream subclasses ByteStreamSource.
    from fractions import Fraction

    return Fraction(math.exp(epsilon))


def threshold(probability: float | Fraction, *, round_up: bool = False) -> int:
    """``floor`` (or ``ceil``) of ``probability * 2**53``, kept in (0, 2**53).

    Mechanisms pass probabilities as exact fractions of ``exact_exp(ε)`` and
    round the larger probability of a likelihood ratio down (the default) and
    the smaller one up, so the implemented ε never exceeds
    ``log(math.exp(ε))``, the claimed ε to within one rounding of ``exp``.
    """
    scaled = probability * RESOLUTION  # exact for floats and fractions alike
    t = math.ceil(scaled) if round_up else math.floor(scaled)
    return min(max(t, 1), RESOLUTION - 1)


@runtime_checkable
class RandomSource(Protocol):
    """What a mechanism needs from a source of randomness."""

    secure: bool

    def token_bytes(self, count: int) -> bytes: ...

    def uniform53(self) -> int:
        """A uniform integer in ``[0, 2**53)``."""
        ...

    def randbelow(self, upper: int) -> int:
        """A uniform integer in ``[0, upper)``."""
        ...

    def uniform53_array(self, size: int) -> np.ndarray:
        """``size`` uniform integers in ``[0, 2**53)`` as ``uint64``."""
        ...


# Each thread reads its own block through ``_local.stream`` (an io.BytesIO: one
# C call per draw).  A forked child gets a fresh ``_local``, so no thread of the
# child can read a block its parent has already handed out.
_local = threading.local()


def _after_fork_in_child() -> None:
    global _local
    _local = threading.local()


os.register_at_fork(after_in_child=_after_fork_in_child)


class ByteStreamSource:
    """A RandomSource built on ``token_bytes``: every other draw is derived from bytes.

    Subclasses supply the byte stream (the OS CSPRNG here; an HMAC stream for
    the client's memoized permanent responses).
    """

    secure = True

    def token_bytes(self, count: int) -> bytes:
        raise NotImplementedError

    def uniform53(self) -> int:
        return int.from_bytes(self.token_bytes(7), "little") >> 3

    def randbelow(self, upper: int) -> int:
        if upper <= 1:
            if upper == 1:
                return 0
            raise InvalidParameter(f"randbelow needs upper >= 1, got {upper}")
        bits = (upper - 1).bit_length()
        size = (bits + 7) // 8
        mask = (1 << bits) - 1
        # Rejection sampling: each try succeeds with probability > 1/2, and the
        # number of tries does not depend on anything but `upper`.
        while True:
            candidate = int.from_bytes(self.token_bytes(size), "little") & mask
            if candidate < upper:
                return candidate

    def uniform53_array(self, size: int) -> np.ndarray:
        raw = np.frombuffer(self.token_bytes(8 * size), dtype="<u8")
        return raw >> np.uint64(64 - RESOLUTION_BITS)


class SystemRandomSource(ByteStreamSource):
    """The CSPRNG: ``os.urandom``, buffered per thread and per process."""

    def token_bytes(self, count: int) -> bytes:
        try:
            data = _local.stream.read(count)
        except AttributeError:  # this thread's first draw
            data = b""
        if len(data) == count:
            return data
        # The rest of the block is too short: it is dropped, never reused.
        if count > _BLOCK_BYTES:
            return os.urandom(count)
        stream = _local.stream = io.BytesIO(os.urandom(_BLOCK_BYTES))
        return stream.read(count)


class GeneratorSource:
    """A numpy ``Generator`` behind the same interface: simulation and tests only."""

    secure = False

    def __init__(self, generator: np.random.Generator) -> None:
        self.generator = generator

    def token_bytes(self, count: int) -> bytes:
        return self.generator.bytes(count)

    def uniform53(self) -> int:
        return int(self.generator.integers(0, RESOLUTION))

    def randbelow(self, upper: int) -> int:
        if upper < 1:
            raise InvalidParameter(f"randbelow needs upper >= 1, got {upper}")
        return int(self.generator.integers(0, upper))

    def uniform53_array(self, size: int) -> np.ndarray:
        return self.generator.integers(0, RESOLUTION, size=size, dtype=np.uint64)


SYSTEM = SystemRandomSource()

if TYPE_CHECKING:
    RngLike: TypeAlias = RandomSource | np.random.Generator | None
else:
    RngLike: TypeAlias = "RandomSource | np.random.Generator | None"


def as_source(rng: RngLike) -> RandomSource:
    """``None`` means the CSPRNG; a numpy Generator is wrapped for tests."""
    if rng is None:
        return SYSTEM
    if isinstance(rng, ByteStreamSource):  # the common case, before the slow Protocol check
        return rng
    if numpy_type(rng, "random.Generator"):
        return GeneratorSource(rng)
    if isinstance(rng, RandomSource):
        return rng
    raise InvalidParameter(
        "rng must be None (the CSPRNG), a numpy Generator or a RandomSource, "
        f"got {type(rng).__name__}"
    )
