"""Validation of mechanism parameters, done once when an object is built.

Documented ranges:

* ``epsilon``: a finite real number with ``MIN_EPSILON <= epsilon <= MAX_EPSILON``.
  Below 0.001 the estimators' variance is astronomically large; above 20 the
  probability ``1 / (1 + e^epsilon)`` drops under 2e-9 and at about 37 it
  rounds to zero in double precision, so the mechanism would silently stop
  being randomized.  Booleans and strings are rejected, not coerced.
* ``domain_size``: an ``int`` (not ``bool``) with ``2 <= domain_size <= MAX_DOMAIN_SIZE``.
* numeric ranges: finite reals with ``lo < hi``.
"""

from __future__ import annotations

import math
import numbers

from .errors import InvalidParameter

__all__ = [
    "MAX_DOMAIN_SIZE",
    "MAX_EPSILON",
    "check_domain_size",
    "check_epsilon",
    "check_int",
    "check_range",
    "check_real",
]

MIN_EPSILON = 0.001
MAX_EPSILON = 20.0
MIN_DOMAIN_SIZE = 2
MAX_DOMAIN_SIZE = 1 << 16


def check_real(name: str, value: object) -> float:
    """``value`` as a finite float, or :class:`InvalidParameter` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(
            f"{name} must be a real number, got {type(value).__name__} {value!r}"
        )
    result = float(value)
    if not math.isfinite(result):
        raise InvalidParameter(f"{name} must be finite, got {value!r}")
    return result


def check_epsilon(value: object, name: str = "epsilon") -> float:
    result = check_real(name, value)
    if not MIN_EPSILON <= result <= MAX_EPSILON:
        raise InvalidParameter(f"{name} must be in [{MIN_EPSILON}, {MAX_EPSILON}], got {value!r}")
    return result


def check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameter(f"{name} must be an int in [{low}, {high}], got {value!r}")
    result = int(value)
    if not low <= result <= high:
        raise InvalidParameter(f"{name} must be an int in [{low}, {high}], got {value!r}")
    return result


def check_domain_size(value: object, high: int = MAX_DOMAIN_SIZE) -> int:
    return check_int("domain_size", value, MIN_DOMAIN_SIZE, high)


def check_range(lo: object, hi: object) -> tuple[float, float]:
    low = check_real("lo", lo)
    high = check_real("hi", hi)
    if not low < high:
        raise InvalidParameter(f"lo must be less than hi, got lo={lo!r}, hi={hi!r}")
    if not math.isfinite(high - low):
        raise InvalidParameter(f"hi - lo must be finite, got lo={lo!r}, hi={hi!r}")
    return low, high
