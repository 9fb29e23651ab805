"""The relay's dummy reports inside a question's stored statistics (relay noise).

A relay that adds dummy reports (the survey's signed ``relay.noise``; Murakami, Sei and
Eriguchi, arXiv 2504.07362) sends each batch's real count, and the aggregator stores
it per batch (api/batches.py, storage/relay.py).  Every estimate of the question then
takes the dummies out (``deniable.noised``): each batch with a real count adds one draw
of the law per output report, and n is the real respondents, the stored reports less
the dummies the batches stored.
"""

from __future__ import annotations

from typing import Any

__all__ = ["question_noise", "real_counts", "real_reports", "stored_dummies"]


def question_noise(
    record: Any, question: Any, summary: dict[str, dict[str, int]] | None
) -> tuple[Any, int]:
    """(the question's :class:`deniable.noised.DummyNoise`, or None; the dummies stored),
    from the survey's relay terms and its per unit batch ``summary``.

    Every batch that says how many of its units are real carries dummies drawn from the
    law, so its dummies' mean is subtracted whether or not they were plausible:
    plausibility decides which privacy figure the batch earns, while the dummies it
    stored are in the statistics either way."""
    relay = getattr(record.survey, "relay", None)
    if relay is None or relay.noise is None or relay.shuffle_unit != "question":
        return None, 0
    unit = (summary or {}).get(question.id)
    if not unit or not unit.get("noised_batches"):
        return None, 0
    from deniable.noised import DummyNoise

    return DummyNoise(law=relay.noise.law, batches=unit["noised_batches"]), unit["dummies"]


def stored_dummies(record: Any, summary: dict[str, dict[str, int]] | None) -> int:
    """The dummies stored for all the survey's questions (0 for a survey without noise)."""
    return sum(question_noise(record, q, summary)[1] for q in record.survey.questions)


def real_counts(
    record: Any, statistics: dict[str, Any], summary: dict[str, dict[str, int]] | None
) -> dict[str, int]:
    """Each question's real reports: its stored ones less the dummies the relay added.

    The respondents of a survey are the most any one question has (storage/records.py
    ``respondents``); every list, page and document publishes this one number."""
    return {
        q.id: max(statistics[q.id].n - question_noise(record, q, summary)[1], 0)
        for q in record.survey.questions
    }


def real_reports(record: Any, summary: dict[str, dict[str, int]] | None) -> int | None:
    """The survey's real reports over all questions: its stored count (``record.n_reports``,
    None when not counted) less the dummies stored."""
    if record.n_reports is None:
        return None
    return max(record.n_reports - stored_dummies(record, summary), 0)
