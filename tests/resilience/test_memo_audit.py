"""Black-box privacy audit of the client's memoized (longitudinal) path.

Reports are sampled from ``deniable.client.randomized.randomize_answers`` itself (the
code ``SurveyClient.answer`` runs: the permanent response from the device
secret's HMAC stream, then a fresh instantaneous randomization from the OS
CSPRNG) for two true values x = "a", x' = "b" of a 3-option longitudinal GRR
question (permanent ε1 = 1, instantaneous ε2 = 2, so one report's ε is
``LongitudinalGRR.report_epsilon`` ≈ 0.687).  tests/shared/audit.py turns the
samples into a rigorous lower bound on ε: for an ε-DP channel it exceeds ε with
probability at most ``FALSE_ALARM`` = 1e-6.

1. A fixed device (fixed secret, so the permanent responses are fixed): given
   them, each report is only the instantaneous layer, so the audit must certify
   no more than ε2; for a secret whose permanent responses for x and x' coincide
   the reports are identically distributed and it must certify nothing (≤ 0).
2. Across devices (a fresh secret per report): the audit must certify no more
   than ``report_epsilon``.
3. A broken memo (permanent response = the true value) must be caught: the
   across-devices audit certifies more than ``report_epsilon``.

The "no more than" checks fail with probability ≤ 1e-6 each (the audit's
guarantee; the instantaneous noise comes from the CSPRNG, so there is no seed).
The power checks (1 with distinct permanent responses, 3, and the across-devices
bound reaching half of ``report_epsilon``) have margins of over ten standard
errors at these sample sizes, so they fail with far smaller probability.
"""

from __future__ import annotations

import secrets
import time

import pytest

import deniable.client.randomized as randomized_module
from deniable.client.memo import permanent_response
from deniable.client.randomized import randomize_answers
from deniable.mechanisms.longitudinal import LongitudinalGRR
from deniable.survey import Survey
from tests.shared.audit import epsilon_lower_bound, sample_reports

FALSE_ALARM = 1e-6
PERMANENT_EPSILON = 1.0
INSTANTANEOUS_EPSILON = 2.0
X, X_PRIME = "a", "b"
SAMPLES = 60_000  # per true value: 120,000 reports per audited channel
SMALL_SAMPLES = 30_000  # per true value, for the two checks with a large gap

DEFINITION = {
    "format": "deniable.survey/1",
    "id": "memo-audit",
    "title": "Memo audit",
    "questions": [
        {
            "id": "q",
            "type": "single_choice",
            "text": "?",
            "epsilon": PERMANENT_EPSILON,
            "mechanism": "grr",
            "options": ["a", "b", "c"],
            "longitudinal": {"key": "memo-audit", "instantaneous_epsilon": INSTANTANEOUS_EPSILON},
        },
    ],
}
SURVEY = Survey.from_dict(DEFINITION)
QUESTION = SURVEY.question("q")
ORACLE = QUESTION.oracle


def index(label: str) -> int:
    return QUESTION.check_answer(label)


def sampler(label: str, secret: bytes | None):
    """One report of the client's path; ``secret=None``: a fresh device every time."""
    checked = {"q": index(label)}

    def draw() -> str:
        device = secret if secret is not None else secrets.token_bytes(32)
        return randomize_answers(SURVEY, checked, device, {}).payloads["q"]

    return draw


def audit(secret: bytes | None, count: int) -> float:
    reports_x = sample_reports(sampler(X, secret), count)
    reports_y = sample_reports(sampler(X_PRIME, secret), count)
    return epsilon_lower_bound(reports_x, reports_y, false_alarm=FALSE_ALARM).epsilon_lower_bound


def device_secret(same_permanent_response: bool) -> bytes:
    """The first of a fixed list of secrets whose permanent responses for x, x' (in)equal."""
    for number in range(1000):
        secret = number.to_bytes(2, "big") * 16
        first = permanent_response(secret, QUESTION, index(X))
        second = permanent_response(secret, QUESTION, index(X_PRIME))
        if (first == second) == same_permanent_response:
            return secret
    raise AssertionError("no such secret among the first 1000")


def test_the_question_is_longitudinal_with_a_smaller_report_epsilon():
    assert isinstance(ORACLE, LongitudinalGRR)
    assert ORACLE.instantaneous_epsilon == INSTANTANEOUS_EPSILON
    assert 0.5 < ORACLE.report_epsilon < min(PERMANENT_EPSILON, INSTANTANEOUS_EPSILON)


def test_fixed_device_reports_reveal_at_most_the_instantaneous_epsilon():
    started = time.monotonic()
    distinct = audit(device_secret(same_permanent_response=False), SAMPLES)
    same = audit(device_secret(same_permanent_response=True), SMALL_SAMPLES)
    print(
        f"\n[memo audit] fixed device: certified ε ≥ {distinct:.3f} with distinct permanent "
        f"responses (claim ≤ ε2 = {INSTANTANEOUS_EPSILON}), ≥ {same:.3f} with equal ones "
        f"(claim ≤ 0); {time.monotonic() - started:.1f} s"
    )
    assert distinct <= INSTANTANEOUS_EPSILON
    assert same <= 0.0
    # Power: given its memo a device's reports are far more telling than across devices.
    assert distinct > ORACLE.report_epsilon


def test_across_devices_reports_reveal_at_most_the_report_epsilon():
    started = time.monotonic()
    bound = audit(None, SAMPLES)
    print(
        f"\n[memo audit] across devices: certified ε ≥ {bound:.3f} (claim ≤ report_epsilon "
        f"{ORACLE.report_epsilon:.3f}); {time.monotonic() - started:.1f} s"
    )
    assert bound <= ORACLE.report_epsilon
    assert bound >= ORACLE.report_epsilon / 2  # the audit is sharp enough to mean something


def test_a_memo_that_keeps_the_true_value_is_caught(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(
        randomized_module, "permanent_response", lambda secret, question, value: value
    )
    started = time.monotonic()
    bound = audit(None, SMALL_SAMPLES)
    seconds = time.monotonic() - started
    print(
        f"\n[memo audit] broken memo (permanent = true value): certified ε ≥ {bound:.3f} "
        f"(report_epsilon {ORACLE.report_epsilon:.3f}); {seconds:.1f} s"
    )
    assert bound > ORACLE.report_epsilon
