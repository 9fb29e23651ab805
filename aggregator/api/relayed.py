"""What the results of a relayed survey add: the central (ε, δ) of its smallest batch.

Each respondent is in exactly one batch, so what hides them is the size of
their batch, not the total n: the results publish, per question, the central
ε (:func:`deniable.shuffle.amplification`) for the *smallest* batch forwarded
of that question's shuffle unit, at δ = :data:`DELTA`, beside the local ε.
A batch's size here is what the aggregator can vouch for: the blobs that
opened to new valid reports (dropped and duplicate blobs do not count).  A batch
that stored nobody hides no one and is not a batch here (``empty_batches``
counts it), so a replay, a batch of garbage or a resend after a crash never
erases the figure the other batches earned.
Per question shuffling: ε0 is the question's ε; whole submissions: ε0 is the
survey's total ε.  The figure holds under :data:`deniable.shuffle.CONDITIONS`
(the relay did not collude; n counts genuine respondents, n − k with k
injected), stated in plain words beside it.

A survey whose relay adds dummy reports (signed ``relay.noise``) publishes three
figures with their conditions (:func:`deniable.results.privacy_figures`): the local ε,
the central ε of shuffling alone, and the central ε with the dummies.  A batch with
``real_units`` and plausible dummies gets the dummies' bound; any other batch the
shuffle bound alone, and the results say how many.  Estimation (:func:`noise_of`)
takes the dummies out: n is the real count (the stored reports minus the dummies the
batches stored), and every batch with ``real_units`` adds one draw of the law per
output report.
"""

from __future__ import annotations

from typing import Any

from deniable.survey import Question

from ..relay_noise import question_noise
from ..storage import SurveyRecord, current_storage

__all__ = ["batch_summary", "central", "header", "noise_of", "relay_terms"]

DELTA = 1e-6
SUMMARY = "The relay hid who sent each report and forwarded batches in a random order."
NOISE_SUMMARY = (
    "The relay also added dummy reports to each batch, drawn from the signed law; the "
    "estimates subtract their expected number and every interval includes their spread."
)


def relay_terms(record: SurveyRecord) -> Any:
    """The survey's signed relay terms, or None for a survey that is not relayed."""
    return getattr(record.survey, "relay", None)


def batch_summary(record: SurveyRecord) -> dict[str, dict[str, int]] | None:
    """Per unit batch figures of a relayed survey (None for a survey that is not relayed)."""
    if relay_terms(record) is None:
        return None
    return current_storage().relay.batch_summary(record.id)


def header(record: SurveyRecord, summary: dict[str, dict[str, int]] | None) -> dict[str, Any]:
    """The ``relay`` member of a relayed survey's results document."""
    from deniable.shuffle import CONDITIONS

    relay = relay_terms(record)
    summary = summary or {}
    smallest = [unit["smallest_batch"] for unit in summary.values() if unit["batches"]]
    noise = {}
    if relay.noise is not None:
        noise = {
            "noise": {
                **relay.noise.to_dict(),
                "noised_batches": sum(u.get("noised_batches", 0) for u in summary.values()),
                "plausible_batches": sum(u.get("plausible_batches", 0) for u in summary.values()),
                "summary": NOISE_SUMMARY,
            }
        }
    return {
        "url": relay.url,
        "min_batch": relay.min_batch,
        "shuffle_unit": relay.shuffle_unit,
        "batches": sum(unit["batches"] for unit in summary.values()),
        "smallest_batch": min(smallest) if smallest else None,
        "empty_batches": sum(unit["empty_batches"] for unit in summary.values()),
        "dropped": sum(unit["dropped"] for unit in summary.values()),
        "delta": DELTA,
        "summary": SUMMARY,
        "conditions": list(CONDITIONS),
        **noise,
    }


def central(
    record: SurveyRecord, question: Question, summary: dict[str, dict[str, int]] | None
) -> dict[str, Any]:
    """The question's ``central`` member: its amplification, or why there is none yet."""
    from deniable.shuffle import amplification

    relay = relay_terms(record)
    whole = relay.shuffle_unit == "submission"
    unit = (summary or {}).get("" if whole else question.id)
    if not unit or unit["smallest_batch"] < 1:
        return {
            "central_epsilon": None,
            "delta": DELTA,
            "batch": None,
            "local_epsilon": record.survey.total_epsilon if whole else question.epsilon,
            # Why two notes: batches that stored nobody (replays, garbage) are no batch
            # of respondents, and the reader should not think none arrived.
            "note": "no batch forwarded yet"
            if not unit
            else "no forwarded batch has stored a respondent yet",
        }
    if whole:
        result = amplification(record.survey.total_epsilon, unit["smallest_batch"], DELTA)
    elif relay.noise is not None:
        return _noised_central(question, relay.noise, unit)
    else:
        longitudinal = getattr(question, "longitudinal", None) is not None
        mechanism = None if longitudinal else question.mechanism
        domain_size = question.domain_size if question.oracle.direct_encoding else None
        result = amplification(
            question.epsilon,
            unit["smallest_batch"],
            DELTA,
            mechanism=mechanism,
            domain_size=domain_size,
        )
    return result.to_dict()


def _noised_central(question: Question, noise: Any, unit: dict[str, int]) -> dict[str, Any]:
    """A noised question's ``central`` member: the three figures, and the figure the result
    stands on as ``central_epsilon``/``delta`` (the with-noise one)."""
    from deniable.results import privacy_figures
    from deniable.shuffle import CONDITIONS

    figures = privacy_figures(
        local_epsilon=question.epsilon,
        delta=DELTA,
        smallest_batch=unit["smallest_batch"],
        noise=noise,
        batches=unit["batches"],
        plausible_batches=unit.get("plausible_batches", 0),
        noised_batches=unit.get("noised_batches", 0),
        smallest_plausible=unit.get("smallest_plausible", 0),
        smallest_shuffle_only=unit.get("smallest_shuffle_only", 0),
    )
    return {
        "local_epsilon": question.epsilon,
        "batch": unit["smallest_batch"],
        "delta": figures["central_delta"],
        "conditions": [*CONDITIONS, "The relay added the dummy reports its signed terms describe."],
        **figures,
    }


def noise_of(
    record: SurveyRecord, question: Question, summary: dict[str, dict[str, int]] | None
) -> tuple[Any, int]:
    """(the question's dummies, the dummies stored): :func:`..relay_noise.question_noise`."""
    return question_noise(record, question, summary)
