"""The respondent's side of Deniable: what a survey app embeds on the device.

Typical use::

    from deniable.client import Policy, StateStore, SurveyClient

    with SurveyClient("https://surveys.example.org", state=StateStore("state.bin"),
                      policy=Policy(max_survey_epsilon=5)) as client:
        survey = client.fetch("workplace-2024")        # signature, policy, budget checked
        receipt = client.answer(survey, {"burnout": True, "commute": "Bicycle"})
        if not receipt.delivered:
            client.flush()                               # later, when back online

Base install only (requests, cryptography); never Flask, and never numpy: the
device path is pure Python (``deniable simulate`` needs ``deniable[sim]``).
"""

from deniable.errors import (
    AlreadyAnswered,
    BudgetExceeded,
    ClientError,
    DeniableError,
    InvalidParameter,
    InvalidValue,
    PolicyViolation,
    SignatureError,
    StateError,
    TransportError,
)
from deniable.policy import Policy

from .ledger import Ledger
from .session import (
    AnswerDeclined,
    EnrolmentTokenRequired,
    FlushResult,
    Receipt,
    SurveyClient,
    SurveyClosed,
    VerifiedSurvey,
)
from .state import DeviceState, StateStore

__all__ = [
    "AlreadyAnswered",
    "AnswerDeclined",
    "BudgetExceeded",
    "ClientError",
    "DeniableError",
    "DeviceState",
    "EnrolmentTokenRequired",
    "FlushResult",
    "InvalidParameter",
    "InvalidValue",
    "Ledger",
    "Policy",
    "PolicyViolation",
    "Receipt",
    "SignatureError",
    "StateError",
    "StateStore",
    "SurveyClient",
    "SurveyClosed",
    "TransportError",
    "VerifiedSurvey",
]
