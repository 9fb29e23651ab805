"""The respondent's policy: what a survey may ask of this device.

A :class:`Policy` is checked against every survey after its signature is
verified and before anything is randomized or sent.  Caps are in ε (natural
log units); a question's cost is its ε by sequential composition, and a
longitudinal question costs its *permanent* ε (the bound over all its reports
about one value, see docs/longitudinal.md).

It lives in the core because the survey planner of ``deniable-aggregator`` reads the
same defaults as the device; the device imports it as ``deniable.client.Policy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from deniable.errors import InvalidParameter, PolicyViolation
from deniable.parameters import check_real

if TYPE_CHECKING:
    from deniable.survey import Question, Survey

# Slack for comparisons against caps: the implemented ε of a mechanism can
# exceed its nominal ε by a rounding error of about 1e-15.
TOLERANCE = 1e-9
DAY = 86_400.0


def question_cost(question: Question) -> float:
    """ε charged for one answer: the larger of nominal and implemented ε."""
    return max(question.epsilon, float(question.oracle.epsilon_implemented))


def every_mechanism() -> frozenset[str]:
    """Every mechanism's name: the default allowlist.

    The mechanism table is imported here, not with the module: ``import
    deniable.client`` stays free of every mechanism module.
    """
    from deniable.mechanisms import MECHANISMS

    return frozenset(MECHANISMS)


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Caps and allowlist; defaults suit occasional surveys of a few questions."""

    max_question_epsilon: float = 4.0
    max_survey_epsilon: float = 10.0
    lifetime_epsilon: float = 100.0
    period_epsilon: float = 25.0
    period_days: float = 30.0
    allowed_mechanisms: frozenset[str] = field(default_factory=every_mechanism)
    allow_longitudinal: bool = True

    def __post_init__(self) -> None:
        for name in (
            "max_question_epsilon",
            "max_survey_epsilon",
            "lifetime_epsilon",
            "period_epsilon",
            "period_days",
        ):
            value = check_real(name, getattr(self, name))
            if value <= 0:
                raise InvalidParameter(f"{name} must be positive, got {value!r}")
            object.__setattr__(self, name, value)
        mechanisms = self.allowed_mechanisms
        if isinstance(mechanisms, str) or not all(isinstance(m, str) for m in mechanisms):
            raise InvalidParameter("allowed_mechanisms must be a collection of mechanism names")
        object.__setattr__(self, "allowed_mechanisms", frozenset(mechanisms))

    @property
    def period_seconds(self) -> float:
        return self.period_days * DAY

    def check(self, survey: Survey) -> None:
        """PolicyViolation naming the first thing this survey asks that is not allowed."""
        for question in survey.questions:
            where = f"survey {survey.id!r}, question {question.id!r}"
            if question.mechanism not in self.allowed_mechanisms:
                raise PolicyViolation(
                    f"{where}: mechanism {question.mechanism!r} is not on the allowlist "
                    f"({', '.join(sorted(self.allowed_mechanisms))})"
                )
            if question.longitudinal is not None and not self.allow_longitudinal:
                raise PolicyViolation(f"{where}: longitudinal questions are not allowed")
            cost = question_cost(question)
            if cost > self.max_question_epsilon + TOLERANCE:
                raise PolicyViolation(
                    f"{where}: asks ε = {cost:g}, over the cap of {self.max_question_epsilon:g} "
                    "per question"
                )
        total = sum(question_cost(q) for q in survey.questions)
        if total > self.max_survey_epsilon + TOLERANCE:
            raise PolicyViolation(
                f"survey {survey.id!r}: asks ε = {total:g} in total, over the cap of "
                f"{self.max_survey_epsilon:g} per survey"
            )


__all__ = ["DAY", "TOLERANCE", "Policy", "every_mechanism", "question_cost"]
