"""Memoized randomized response for questions asked again and again.

Erlingsson, Pihur, Korolova, "RAPPOR: Randomized Aggregatable
Privacy-Preserving Ordinal Response", CCS 2014, §3: a *permanent* randomized
response is drawn once per (question, true value) and remembered, so asking
the same question many times cannot average the noise away; every report then
randomizes the permanent response again (*instantaneous* response), so the
memoized answer does not become a fingerprint of the device.

Both layers are GRR over the same d values (binary RR when d = 2):

* permanent: keep with p1 = e^ε1 / (e^ε1 + d - 1), ε1 = ``epsilon``;
* instantaneous: keep with p2 = e^ε2 / (e^ε2 + d - 1), ε2 = ``instantaneous_epsilon``.

Guarantees: however many reports a device sends about one value, together
they reveal at most ε1 about it (they are post-processing of the permanent
response); a single report reveals at most ``report_epsilon`` =
ln(p*/q*) < min(ε1, ε2).  The composed channel is again GRR-shaped, so the
aggregator's estimator stays unbiased with

    p* = p1 p2 + (1 - p1) (1 - p2) / (d - 1),    q* = (1 - p*) / (d - 1).

The client supplies the permanent response (derived from its device secret);
without one, ``randomize`` draws both layers afresh, which has the same
single-report distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

from ..lazy import np
from ..parameters import check_epsilon
from ..randomness import RngLike
from .base import threshold_of
from .grr import GRR

__all__ = ["LongitudinalGRR"]


@dataclass(frozen=True, kw_only=True)
class LongitudinalGRR(GRR):
    """Permanent GRR at ``epsilon`` followed by instantaneous GRR at ``instantaneous_epsilon``."""

    name: ClassVar[str] = "grr"
    browser_module: ClassVar[str] = "longitudinal.js"
    browser_imports: ClassVar[tuple[str, ...]] = ("grr.js",)

    instantaneous_epsilon: float
    _instantaneous: GRR = field(init=False, repr=False, compare=False, default=None)

    def _prepare(self) -> None:
        super()._prepare()
        epsilon = check_epsilon(self.instantaneous_epsilon, "instantaneous_epsilon")
        self._set("instantaneous_epsilon", epsilon)
        self._set("_instantaneous", GRR(epsilon=epsilon, domain_size=self.domain_size))

    @property
    def permanent(self) -> GRR:
        """The permanent layer alone (what the device memoizes), with this layer's threshold."""
        layer = GRR(epsilon=self.epsilon, domain_size=self.domain_size)
        layer._set("_keep", self._keep)  # a signed one (docs/protocol.md §2.3)
        return layer

    @property
    def p_star(self) -> float:
        p1 = super().p_star
        p2 = self._instantaneous.p_star
        return p1 * p2 + (1.0 - p1) * (1.0 - p2) / (self.domain_size - 1)

    @property
    def epsilon_implemented(self) -> float:
        """ε of the permanent layer: the bound per value over all reports."""
        return super().epsilon_implemented

    def implied_epsilons(self) -> list[tuple[str, float, float]]:
        instantaneous = self._instantaneous
        return [
            *super().implied_epsilons(),
            (
                "instantaneous_epsilon",
                instantaneous.epsilon_implemented,
                self.instantaneous_epsilon,
            ),
        ]

    def resolved_parameters(self) -> dict[str, object]:
        return {
            "keep": self._keep,
            "instantaneous_keep": threshold_of(self._instantaneous.p_star),
        }

    def adopt_probabilities(self, values: dict[str, object]) -> None:
        if "instantaneous_keep" in values:
            self._instantaneous._set("_keep", values["instantaneous_keep"])
        super().adopt_probabilities(values)

    @property
    def report_epsilon(self) -> float:
        """ε of one report, both layers composed."""
        return math.log(self.p_star / self.q_star)

    def permanent_response(self, value: object, rng: RngLike = None) -> int:
        return super().randomize(value, rng)

    def randomize(self, value: object, rng: RngLike = None, *, permanent: int | None = None) -> int:
        if permanent is None:
            permanent = self.permanent_response(value, rng)
        else:
            self.check_value(value)
        return self._instantaneous.randomize(permanent, rng)

    def randomize_many(self, values: object, rng: np.random.Generator) -> np.ndarray:
        # The permanent layer keeps the truth with p1 (its own ε), not with the
        # composite p* of both layers that this class's p_star reports.
        first = self.permanent.randomize_many(values, rng)
        return self._instantaneous.randomize_many(first, rng)

    def parameters(self) -> dict[str, object]:
        return {
            "epsilon": self.epsilon,
            "instantaneous_epsilon": self.instantaneous_epsilon,
            "domain_size": self.domain_size,
        }
