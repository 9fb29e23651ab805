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

__all__ = ["question_noise"]


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
