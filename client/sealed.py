"""A relayed survey's submission: every unit sealed to the aggregator, for the relay only.

docs/protocol.md, "Sealing": each report (``shuffle_unit`` "question") or the whole
submission ("submission") is sealed with :func:`deniable.sealing.seal` to the
aggregator's encryption key, which :meth:`KeyPinning.verified_encryption_key`
checked against the pinned signing key, padded to the unit's fixed size, so the
body has one length whatever the answers.  The body posted to
``{relay}/api/v1/surveys/<survey id>/sealed`` is a
:class:`deniable.wire.SealedSubmission` (``deniable.sealed/1``)::

    {"format": "deniable.sealed/1", "key_id": "<encryption key id>",
     "units": [{"unit": "<question id, or ''>", "sealed": "<unpadded base64url>"}, ...],
     "enrolment_token": "..."}        (only with a token)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from deniable.errors import SignatureError

if TYPE_CHECKING:
    from deniable.survey import Survey
    from deniable.wire import SealedUnit

    from .session import VerifiedSurvey

# deniable.wire (every mechanism) and cryptography are imported at the first seal.

__all__ = ["relay_body", "resealed_body", "seal_units", "sealed_body", "with_token"]


def relay_body(key_id: str, units: tuple[SealedUnit, ...], token: str | None) -> str:
    """The JSON text posted to the relay (members in this order, no spaces)."""
    from deniable.wire import SealedSubmission

    submission = SealedSubmission(key_id=key_id, units=units, enrolment_token=token)
    return submission.encode().decode("ascii")


def with_token(body: str, token: str | None) -> str:
    """``body`` (a queued relay body) with another enrolment token; the units are kept."""
    from deniable.wire import SealedSubmission, strict_json

    submission = SealedSubmission.parse(strict_json.loads(body, "queued body"))
    return submission.with_token(token).encode().decode("ascii")


def sealed_body(survey: VerifiedSurvey, reports: list[dict[str, str]], token: str | None) -> str:
    """Every unit of ``survey`` sealed to its verified encryption key, as :func:`relay_body`."""
    from deniable import keychain

    relay = survey.survey.relay
    if relay is None or survey.encryption is None:
        raise SignatureError(
            f"survey {survey.id!r} is relayed but no encryption key was "
            "verified for it; fetch() it again"
        )
    # Checked again here: a VerifiedSurvey built by hand cannot bring its own key.
    public = keychain.verify_encryption_key(
        {"encryption_key": survey.encryption}, survey.public_key
    )
    return relay_body(
        survey.encryption["key_id"], seal_units(survey.survey, public, reports), token
    )


def seal_units(
    survey: Survey, public: bytes, reports: list[dict[str, str]]
) -> tuple[SealedUnit, ...]:
    """The ``units`` member: ``reports`` grouped by the survey's relay unit, each sealed to
    ``public`` (an encryption key already verified) and padded to the unit's fixed size."""
    from deniable import sealing
    from deniable.wire import SealedUnit

    assert survey.relay is not None
    units = []
    for unit in survey.relay.units(survey):
        chosen = [r for r in reports if r["question"] == unit] if unit else reports
        blob = sealing.seal(
            public,
            survey_id=survey.id,
            unit=unit,
            plaintext=sealing.unit_body(chosen, unit),
            size=sealing.unit_size(survey, unit),
        )
        units.append(SealedUnit(unit=unit, sealed=blob))
    return tuple(units)


def resealed_body(
    body: str, reseal: dict[str, Any], encryption: dict[str, Any], public: bytes
) -> str:
    """``body`` (a queued relay body) with the SAME randomized reports sealed again to a
    newer verified encryption key; the enrolment token, if any, is kept.

    Why the same reports: their noise was already charged to the ledger; fresh
    randomization would spend ε again and let two draws be compared."""
    from deniable import survey as definitions
    from deniable.wire import SealedSubmission, strict_json

    survey = definitions.Survey.from_dict(reseal["survey"], resolved=True)
    token = SealedSubmission.parse(strict_json.loads(body, "queued body")).enrolment_token
    return relay_body(encryption["key_id"], seal_units(survey, public, reseal["reports"]), token)
