"""Dummy reports the relay adds to a noised survey's batches (the augmented shuffle).

A survey whose signed definition carries ``relay.noise`` (:class:`deniable.survey_relay.
RelayNoise`) asks its relay, for every batch of one question, to draw D_y dummies for each
output report y of the question's mechanism (``Mechanism.output_reports()``), independently
from the signed law, with the operating system's CSPRNG (``DummyLaw.sample_values`` with no
generator), and to send each dummy as a unit a device would have sent: the report
``{"id": <uuid4>, "question": <question id>, "payload": y}`` as canonical JSON
(:func:`deniable.sealing.unit_body`), padded to the unit's fixed size
(:func:`deniable.sealing.unit_size`) and sealed (:func:`deniable.sealing.seal`) to the
encryption key the batch's real units were sealed to.  So no byte, length, id form or key
tells a dummy from a real unit; the batch says how many units are real (``real_units``),
never which.  The dummy law and its exact privacy accounting are :mod:`deniable.dummies`;
Murakami, Sei and Eriguchi (arXiv 2504.07362), Wang et al. (arXiv 1908.11515), Balcer and
Cheu (arXiv 1911.06879).

The dummies of a batch are drawn once, when the batch is formed, and stored with it
(:meth:`~.storage.batches.BatchStore.form_batches`): a batch sent again after a crash
carries the same dummies, so a resend neither draws fresh noise (which two copies would
let the aggregator average away) nor changes the batch's content under its id.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from deniable.errors import InvalidSurvey
from deniable.survey_relay import noise_refusal

if TYPE_CHECKING:
    from deniable.dummies import DummyLaw
    from deniable.survey import Survey

__all__ = ["Dummies", "check_terms", "dummies_of"]


def check_terms(survey: Survey) -> None:
    """InvalidSurvey unless this relay can add the noise ``survey``'s signed definition
    asks for: per-question shuffle units, a mechanism that names its output reports
    (binary RR, GRR, option sampling, Duchi; with an optional or conditional question's
    non-response values, which get dummies like any other output) for every question, and
    a law whose exact δ at the signed ε is at most the signed δ (:meth:`RelayNoise.verify`,
    numpy).

    The survey parser refuses the first two already; checked again here because the relay
    must not add noise it cannot account for, whatever parsed the definition."""
    relay = survey.relay
    if relay is None or relay.noise is None:
        return
    if relay.shuffle_unit != "question":
        raise InvalidSurvey(
            "relay noise needs shuffle_unit 'question': a whole submission is not one output "
            "value, so dummies cannot be drawn per value for it"
        )
    for question in survey.questions:
        if (refusal := noise_refusal(question)) is not None:
            raise InvalidSurvey(f"question {question.id!r}: {refusal}")
    relay.noise.verify()


@dataclass(frozen=True, kw_only=True)
class Dummies:
    """What the relay adds to one noised survey's batches: per question, ``law``'s draws
    over the question's output reports, sealed as a device seals its unit."""

    survey: Survey
    law: DummyLaw

    def outputs(self, unit: str) -> tuple[str, ...]:
        """The encoded output reports of the question ``unit``, in the mechanism's order."""
        outputs = self.survey.question(unit).oracle.output_reports()
        assert outputs is not None  # check_terms() refused the survey otherwise
        return outputs

    def most(self, unit: str) -> int:
        """The most dummies one batch of ``unit`` can carry (every value at the law's top)."""
        return len(self.outputs(unit)) * self.law.high

    def draw(self, unit: str, public_key: bytes) -> list[bytes]:
        """One batch's dummies of question ``unit``: D_y ~ law for every output report y
        (OS CSPRNG), each sealed to ``public_key`` like a device's unit, in value order
        (the forwarder shuffles them with the real units)."""
        from deniable import sealing

        outputs = self.outputs(unit)
        counts = self.law.sample_values(len(outputs))  # no rng: the OS CSPRNG
        size = sealing.unit_size(self.survey, unit)
        blobs = []
        for payload, count in zip(outputs, counts, strict=True):
            for _ in range(count):
                # The report id as every client makes it: uuid4 (os.urandom), its 36-character
                # form; member order and spacing are unit_body's, the one a device uses.
                report = {"id": str(uuid.uuid4()), "question": unit, "payload": payload}
                blobs.append(
                    sealing.seal(
                        public_key,
                        survey_id=self.survey.id,
                        unit=unit,
                        plaintext=sealing.unit_body([report], unit),
                        size=size,
                    )
                )
        return blobs


def dummies_of(survey: Survey) -> Dummies | None:
    """The dummies ``survey``'s signed definition asks for, or None (no relay noise)."""
    relay = survey.relay
    if relay is None or relay.noise is None:
        return None
    return Dummies(survey=survey, law=relay.noise.law)
