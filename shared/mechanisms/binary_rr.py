"""Binary randomized response.

Warner, "Randomized Response: A Survey Technique for Eliminating Evasive
Answer Bias", JASA 1965; as presented in Fioretto et al., "Differential
Privacy in Artificial Intelligence", ch. 1 §1.7.

Answer truthfully with probability p = e^ε / (1 + e^ε), otherwise give the
other answer.  This is GRR with d = 2: p* = p, q* = 1 - p, and the estimator
(C_1/n - (1 - p)) / (2p - 1) is the unbiased form of the seed text's formula.
Values are 0/1 or ``False``/``True``; the wire is one byte, 00 or 01.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import InvalidValue
from ..lazy import np, numpy_type
from .grr import GRR

__all__ = ["BinaryRR"]


@dataclass(frozen=True, kw_only=True)
class BinaryRR(GRR):
    """Randomized response on one yes/no bit (``domain_size`` is always 2)."""

    name: ClassVar[str] = "binary_rr"
    display_name: ClassVar[str] = "binary randomized response"
    max_domain_size: ClassVar[int] = 2
    binary: ClassVar[bool] = True

    domain_size: int = 2

    def check_value(self, value: object) -> int:
        if value is True or value is False or numpy_type(value, "bool_"):
            return int(value)
        if (isinstance(value, int) or numpy_type(value, "integer")) and value in (0, 1):
            return int(value)
        raise InvalidValue(f"value must be True/False or 0/1, got {type(value).__name__} {value!r}")

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        array = np.asarray(values)
        if array.dtype == np.bool_:
            array = array.astype(np.int64)
        return super().randomize_many(array, rng)

    def parameters(self) -> dict[str, object]:
        return {"epsilon": self.epsilon}
