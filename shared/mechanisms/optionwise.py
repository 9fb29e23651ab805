"""Multiple choice by one binary randomized response per option (``binary_rr``).

Each option gets its own binary randomized response at ε / options, so the
question costs ε by sequential composition (Dwork & Roth 2014, Thm 3.14).
The registry (``deniable.mechanisms``) maps a multiple-choice ``binary_rr`` to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from ..errors import InvalidParameter, InvalidReport, InvalidValue
from ..lazy import np
from ..parameters import check_epsilon
from ..randomness import RngLike
from .base import Mechanism, threshold_of
from .binary_rr import BinaryRR

__all__ = ["OptionwiseRR"]


@dataclass(frozen=True, kw_only=True)
class OptionwiseRR(Mechanism):
    """Multiple choice: one binary randomized response per option at ε / options.

    The report is ``options`` bytes (00/01); statistics are the number of
    reports saying "yes" to each option, and each option is estimated as a
    yes/no frequency with the binary RR estimator.

    ``distance`` is the most bits two true answers can differ in (``options`` by
    default); each bit runs at ε / distance.  An optional or conditional question has
    extra non-response bits, and a non-response has no option bit set, so two answers
    differ in at most m + 1 bits (all m options against a non-response): ε / (m + 1)
    per bit keeps the whole answer at exactly ε (docs/protocol.md §5.5).
    """

    epsilon: float
    options: int
    distance: int | None = None

    # Runs every bit at ε / distance (deniable.survey passes the distance of a question
    # with non-response bits).
    splits_epsilon: ClassVar[bool] = True

    name: ClassVar[str] = BinaryRR.name
    display_name: ClassVar[str] = BinaryRR.display_name
    browser_module: ClassVar[str] = "optionwise.js"
    browser_imports: ClassVar[tuple[str, ...]] = ("grr.js",)
    kind: ClassVar[str] = "multiple"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        distance = self.options if self.distance is None else self.distance
        if type(distance) is not int or not 1 <= distance <= self.options:
            raise InvalidParameter(f"distance must be an int in [1, {self.options}]")
        object.__setattr__(self, "distance", distance)

    @cached_property
    def option_oracle(self) -> BinaryRR:
        return BinaryRR(epsilon=self.epsilon / self.distance)

    @property
    def report_bytes(self) -> int:
        return self.options

    @property
    def epsilon_implemented(self) -> float:
        return self.option_oracle.epsilon_implemented * self.distance

    def parameters(self) -> dict[str, Any]:
        distance = {} if self.distance == self.options else {"distance": self.distance}
        return {"epsilon": self.epsilon, "options": self.options, **distance}

    # -- signed parameters --------------------------------------------------------
    def resolved_parameters(self) -> dict[str, Any]:
        option = self.option_oracle
        return {"option_epsilon": option.epsilon, "keep": threshold_of(option.p_star)}

    def adopt_probabilities(self, values: dict[str, Any]) -> None:
        self.option_oracle.adopt_probabilities(values)

    def implied_epsilons(self) -> list[tuple[str, float, float]]:
        return [("epsilon", self.option_oracle.epsilon_implemented * self.distance, self.epsilon)]

    # -- crosstabs: one yes/no bit per option -------------------------------------
    @property
    def per_category(self) -> BinaryRR:
        return self.option_oracle

    @property
    def categories(self) -> int:
        return self.options

    @property
    def statistics_size(self) -> int:
        return self.options

    @property
    def score_line(self) -> tuple[float, float, float, float]:
        return self.option_oracle.score_line

    def report_scores(self, batch: np.ndarray) -> np.ndarray:
        return np.asarray(batch, dtype=np.int8).reshape(len(batch), self.options)

    def check_value(self, value: object) -> tuple[int, ...]:
        if not isinstance(value, tuple) or len(value) != self.options:
            raise InvalidValue(f"value must be a tuple of {self.options} bits")
        return tuple(self.option_oracle.check_value(bit) for bit in value)

    def randomize(self, value: Any, rng: RngLike = None) -> tuple[int, ...]:
        bits = self.check_value(value)
        return tuple(self.option_oracle.randomize(bit, rng) for bit in bits)

    def randomize_many(self, values: Any, rng: np.random.Generator) -> np.ndarray:
        array = np.asarray(values, dtype=np.int64)
        flat = self.option_oracle.randomize_many(array.reshape(-1), rng)
        return flat.reshape(array.shape)

    def statistics(self, batch: np.ndarray) -> np.ndarray:
        return np.asarray(batch, dtype=np.int64).sum(axis=0)

    def report_distribution(self, value: Any) -> dict[str, float]:
        raise InvalidParameter("multiple choice distributions are per option (binary_rr)")

    def encode(self, report: Any) -> str:
        if not isinstance(report, tuple | list) or len(report) != self.options:
            raise InvalidReport(f"multiple choice report must be a tuple of {self.options} bits")
        try:
            data = bytes(report)
        except (TypeError, ValueError):
            data = b"\x02"
        if data.translate(None, b"\x00\x01"):
            raise InvalidReport("multiple choice report bits must be 0 or 1")
        return data.hex()

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        return np.asarray(batch, dtype=np.uint8).reshape(-1, self.options)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        if data.size and data.max() > 1:
            raise InvalidReport("multiple choice report bytes must be 00 or 01")
        return data.astype(np.int64)
