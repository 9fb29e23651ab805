"""The privacy ledger: totals, caps, the rolling period, and value-independent refusals."""

from __future__ import annotations

import pytest

from deniable.client import BudgetExceeded, DeviceState, Ledger, Policy

from .conftest import GENEROUS, longitudinal_definition

DAY = 86_400.0


def ledger(policy: Policy, now: list[float]) -> Ledger:
    return Ledger(DeviceState.fresh(), policy, clock=lambda: now[0])


def test_totals_per_survey_and_period() -> None:
    now = [100 * DAY]
    book = ledger(Policy(period_days=30), now)
    book.charge("a", [("q1", "report", 1.0), ("q2", "report", 0.5)])
    now[0] += 20 * DAY
    book.charge("b", [("q1", "report", 2.0)])
    assert book.total() == pytest.approx(3.5)
    assert book.for_survey("a") == pytest.approx(1.5)
    assert book.in_period() == pytest.approx(3.5)
    now[0] += 15 * DAY  # "a" is now 35 days old
    assert book.in_period() == pytest.approx(2.0)
    assert book.remaining()["lifetime"] == pytest.approx(100 - 3.5)


def test_caps_refuse_beyond_and_allow_up_to_the_cap() -> None:
    now = [0.0]
    book = ledger(Policy(lifetime_epsilon=5.0, period_epsilon=3.0, period_days=7), now)
    book.check(3.0, "x")  # exactly at the period cap is allowed
    book.charge("a", [("q", "report", 3.0)])
    with pytest.raises(BudgetExceeded, match="last 7 days"):
        book.check(0.01, "x")
    now[0] += 8 * DAY
    book.check(2.0, "x")
    book.charge("b", [("q", "report", 2.0)])
    with pytest.raises(BudgetExceeded, match="lifetime"):
        book.check(0.01, "x")


def test_refusal_uses_the_worst_case_not_the_true_value(aggregator, adapter, make_client) -> None:
    """Whether a device answers must not depend on its answer (a refusal is observable)."""
    for week in (1, 2):
        aggregator.create(longitudinal_definition(f"week{week}", epsilon=1.0, inst=1.0))
    # After week 1 only 0.5 remains: a repeated value would cost 0, a new one 1.
    policy = Policy(lifetime_epsilon=1.5, period_epsilon=1.5, max_survey_epsilon=5)
    client = make_client(policy=policy)
    client.answer("week1", {"ok": True})
    sent = len(adapter.report_posts())
    for value in (True, False):
        with pytest.raises(BudgetExceeded):
            client.answer("week2", {"ok": value})
    assert len(adapter.report_posts()) == sent


def test_charge_is_recorded_even_if_delivery_fails(aggregator, adapter, make_client) -> None:
    aggregator.create(longitudinal_definition("week1"))
    client = make_client(policy=GENEROUS, retries=0)
    verified = client.fetch("week1")
    adapter.offline = True
    receipt = client.answer(verified, {"ok": False})
    assert not receipt.delivered
    assert client.budget()["spent_total"] == pytest.approx(1.0)
