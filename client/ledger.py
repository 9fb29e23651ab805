"""The privacy ledger: ε spent per survey, in total, and per rolling period.

Every answer is charged *before* any byte is sent (a charge whose reports
never arrive is kept: the ledger may over-count, never under-count).  Caps:

* lifetime: the sum of every charge ever made on this device;
* rolling period: the sum of the charges in the last ``period_days`` days.

A longitudinal question charges its permanent ε for the first d answers of its
memo family (longitudinal key, labels, both ε; d = its number of values) and 0
after: at most d permanent responses exist, each memoized, and later reports
are post-processing of them (``deniable.client.memo``).  Charging per *new
value* would be tighter but would depend on the true answers, and then so
would the budget's refusals, which the aggregator sees.  Every charge, and so
every decision, depends only on which surveys the device answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from deniable.errors import BudgetExceeded

from .policy import TOLERANCE, Policy
from .state import DeviceState

__all__ = ["Ledger"]


class Ledger:
    """A view of the ledger entries in a :class:`DeviceState`, with the policy's caps."""

    def __init__(
        self, state: DeviceState, policy: Policy, clock: Callable[[], float] = time.time
    ) -> None:
        self.state = state
        self.policy = policy
        self.clock = clock

    @property
    def entries(self) -> list[dict[str, Any]]:
        return self.state.ledger

    def total(self) -> float:
        return sum(float(e["epsilon"]) for e in self.entries)

    def in_period(self, now: float | None = None) -> float:
        now = self.clock() if now is None else now
        start = now - self.policy.period_seconds
        return sum(float(e["epsilon"]) for e in self.entries if float(e["at"]) > start)

    def for_survey(self, survey: str) -> float:
        return sum(float(e["epsilon"]) for e in self.entries if e.get("survey") == survey)

    def remaining(self, now: float | None = None) -> dict[str, float]:
        return {
            "lifetime": self.policy.lifetime_epsilon - self.total(),
            "period": self.policy.period_epsilon - self.in_period(now),
        }

    def check(self, amount: float, what: str, now: float | None = None) -> None:
        """BudgetExceeded if charging ``amount`` would break a cap."""
        total = self.total()
        if total + amount > self.policy.lifetime_epsilon + TOLERANCE:
            raise BudgetExceeded(
                f"{what} would cost ε = {amount:g}; this device has spent {total:g} of its "
                f"lifetime cap {self.policy.lifetime_epsilon:g}"
            )
        period = self.in_period(now)
        if period + amount > self.policy.period_epsilon + TOLERANCE:
            raise BudgetExceeded(
                f"{what} would cost ε = {amount:g}; this device has spent {period:g} of its "
                f"cap {self.policy.period_epsilon:g} for the last {self.policy.period_days:g} days"
            )

    def charge(self, survey: str, items: Iterable[tuple[str, str, float]]) -> float:
        """Record (question, kind, ε) charges for ``survey`` at one instant; the sum."""
        now = self.clock()
        total = 0.0
        for question, kind, epsilon in items:
            self.entries.append(
                {
                    "at": now,
                    "survey": survey,
                    "question": question,
                    "kind": kind,
                    "epsilon": float(epsilon),
                }
            )
            total += float(epsilon)
        return total
