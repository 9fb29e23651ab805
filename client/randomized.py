"""One survey's answers randomized on the device, and what answering it charges.

:func:`randomize_answers` is the step ``SurveyClient.answer`` takes between checking
the true answers and queueing the reports (:mod:`deniable.client.session`, step 2);
:func:`survey_charges` is the budget's view of the same survey, which ``fetch`` also
checks before anything is answered.  The charges depend on nothing but the survey, the
device secret and the memo, never on the true answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deniable.errors import InvalidParameter

from .memo import family_tag, is_longitudinal, permanent_response
from .policy import question_cost

if TYPE_CHECKING:
    from deniable.survey import Survey

__all__ = ["Randomized", "randomize_answers", "survey_charges"]


@dataclass(frozen=True)
class Randomized:
    """The randomized payloads of one survey answer, and what the ledger must charge."""

    payloads: dict[str, str]
    charges: list[tuple[str, str, float]]
    # Memo family tag -> (longitudinal key, answers counted in the family, at most d).
    families: dict[str, tuple[str, int]]


def survey_charges(
    survey: Survey, device_secret: bytes, memo: Mapping[str, Any]
) -> tuple[list[tuple[str, str, float]], dict[str, tuple[str, int]]]:
    """What answering ``survey`` charges per question, and the memo families' new counts.

    A plain question costs its ε.  A longitudinal one costs its permanent ε for
    the first d answers of its memo family (d = its number of values) and 0
    after: at most d permanent responses exist, each memoized.  Nothing here
    depends on the true answers, so neither does any refusal the budget makes.
    """
    charges: list[tuple[str, str, float]] = []
    families: dict[str, tuple[str, int]] = {}
    for question in survey.questions:
        cost = question_cost(question)
        if not is_longitudinal(question):
            charges.append((question.id, "report", cost))
            continue
        family = family_tag(device_secret, question)
        entry = memo.get(family)
        count = int(entry.get("count", 0)) if isinstance(entry, dict) else 0
        d = question.domain_size
        charges.append(
            (question.id, "permanent", cost) if count < d else (question.id, "memoized", 0.0)
        )
        families[family] = (question.longitudinal.key, min(d, count + 1))  # type: ignore[union-attr]
    return charges, families


def randomize_answers(
    survey: Survey, checked: Mapping[str, Any], device_secret: bytes, memo: Mapping[str, Any]
) -> Randomized:
    """Randomize checked true answers exactly as :meth:`SurveyClient.answer` does.

    Plain questions: the question's mechanism with the OS CSPRNG.  Longitudinal
    questions: the permanent response derived from ``device_secret`` (HMAC
    stream), then a fresh instantaneous randomization with the CSPRNG.  The
    charges are :func:`survey_charges`'.  Payload lengths depend only on the
    question, never on the answer.
    """
    payloads: dict[str, str] = {}
    for question in survey.questions:
        value = checked[question.id]
        oracle = question.oracle
        if is_longitudinal(question):
            permanent = permanent_response(device_secret, question, value)
            report = oracle.randomize(value, permanent=permanent)  # type: ignore[call-arg]
        else:
            report = oracle.randomize(value)  # rng=None: the OS CSPRNG
        payload = oracle.encode(report)
        if len(payload) != oracle.report_length:  # pragma: no cover - a mechanism bug
            raise InvalidParameter(f"question {question.id!r}: payload length varies")
        payloads[question.id] = payload
    charges, families = survey_charges(survey, device_secret, memo)
    return Randomized(payloads=payloads, charges=charges, families=families)
