"""What the relay-noise planner answers (:mod:`deniable.relay_noise_plan`): one calibrated
dummy law's figures, and the plan of one question beside the relay alone and no relay."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import dummies

__all__ = ["LawChoice", "RelayNoisePlan"]


@dataclass(frozen=True, kw_only=True)
class LawChoice:
    """One calibrated dummy law and what it gives the question."""

    family: str
    law: dummies.DummyLaw
    output_values: int
    central_epsilon: float  # of one batch: min(the dummies', the shuffle bound's)
    half_width: float
    interval: str  # the family that gives it
    respondents: int | None
    respondents_one_batch: int | None

    @property
    def dummies_per_value(self) -> float:
        return self.law.mean

    @property
    def dummies_per_batch(self) -> float:
        return self.output_values * self.law.mean

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "law": self.law.to_dict(),
            "dummies_per_value": self.dummies_per_value,
            "dummies_per_batch": self.dummies_per_batch,
            "variance_per_value": self.law.variance,
            "central_epsilon": self.central_epsilon,
            "half_width": self.half_width,
            "interval": self.interval,
            "respondents": self.respondents,
            "respondents_one_batch": self.respondents_one_batch,
        }


@dataclass(frozen=True, kw_only=True)
class RelayNoisePlan:
    """The relay-noise answer for one question, beside the relay alone and no relay at the
    same central ε (module docstring)."""

    question_type: str
    options: int | None
    mechanism: str
    central_epsilon: float
    delta: float
    batch: int
    beta: float
    n: int
    target: float
    local_epsilon: float
    batches: int
    laws: tuple[LawChoice, ...]
    chosen: LawChoice
    fake_report_shift: float | None
    relay_only_local_epsilon: float
    relay_only_half_width: float | None
    relay_only_respondents: int | None
    local_only_half_width: float | None
    local_only_respondents: int | None
    local_only_fake_report_shift: float | None
    extras: int = 0
    applicable_share: float = 1.0

    @property
    def noise_helps(self) -> bool:
        """Whether the dummies give a narrower interval than the relay alone at the same
        central ε (they may not: option sampling's estimate spreads each dummy over m)."""
        relay = self.relay_only_half_width
        return relay is None or self.chosen.half_width < relay

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_type": self.question_type,
            "options": self.options,
            "mechanism": self.mechanism,
            "central_epsilon": self.central_epsilon,
            "delta": self.delta,
            "batch": self.batch,
            "beta": self.beta,
            "n": self.n,
            "batches": self.batches,
            "target_half_width": self.target,
            "extras": self.extras,
            "applicable_share": self.applicable_share,
            "local_epsilon": self.local_epsilon,
            "law": self.chosen.family,
            "dummies_per_batch": self.chosen.dummies_per_batch,
            "half_width": self.chosen.half_width,
            "respondents": self.chosen.respondents,
            "respondents_one_batch": self.chosen.respondents_one_batch,
            "interval": self.chosen.interval,
            "noise_helps": self.noise_helps,
            "laws": [law.to_dict() for law in self.laws],
            "fake_report_shift": self.fake_report_shift,
            "relay_only": {
                "local_epsilon": self.relay_only_local_epsilon,
                "half_width": self.relay_only_half_width,
                "respondents": self.relay_only_respondents,
            },
            "local_only": {
                "epsilon": self.central_epsilon,
                "half_width": self.local_only_half_width,
                "respondents": self.local_only_respondents,
                "fake_report_shift": self.local_only_fake_report_shift,
            },
        }
