"""A relayed survey's relay: where devices send sealed reports, and how they are shuffled."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .dummies import MAX_OUTPUT_VALUES, DummyLaw, law_from_dict
from .errors import InvalidParameter
from .origins import Origin, parse_url
from .survey_checks import CONTROL, MAX_LABEL, fail, require_keys

if TYPE_CHECKING:
    from .survey import Survey

__all__ = [
    "MAX_BATCH_UNITS",
    "MAX_MIN_BATCH",
    "MAX_NOISE_DELTA",
    "NOISE_TOLERANCE",
    "Relay",
    "RelayNoise",
    "SHUFFLE_UNITS",
    "noise_refusal",
]

SHUFFLE_UNITS = ("question", "submission")
# The most sealed units one forwarded batch holds (protocol §11.3): the aggregator refuses a
# larger batch, so a relay splits a bigger backlog, and no survey may ask for a min_batch
# that one batch could not carry.
MAX_BATCH_UNITS = 1_000_000
MAX_MIN_BATCH = MAX_BATCH_UNITS
# Relay noise may not claim a δ above this: beyond it "central DP" would mean little.
MAX_NOISE_DELTA = 1e-3
# Relative slack of the check that a signed law meets its signed (ε, δ): the exact δ is
# computed to about 1e-13 relative (deniable.dummies), so 1e-9 is far above round-off.
NOISE_TOLERANCE = 1e-9


def noise_refusal(question: Any) -> str | None:
    """Why relay noise cannot cover ``question``, in words, or None.

    The relay adds dummies of every report the question's mechanism can send, its
    non-response values' included (an optional or conditional question's ``declined`` and
    ``not_applicable`` outputs, a number's statuses under both signs), and the results take
    them out (``deniable.noised``, ``deniable.nonresponse``).  That needs a report that is
    one value of a small set (``Mechanism.output_reports``); one binary randomized response
    per option, a unary or hashed encoding, the discrete Laplace number are not.
    """
    outputs = question.oracle.output_reports()
    if outputs is not None and 0 < len(outputs) <= MAX_OUTPUT_VALUES:
        return None
    return (
        "relay noise needs a mechanism whose report is one value of a small set (binary "
        "randomized response, grr, option sampling, duchi); "
        f"{question.oracle.display_name} is not"
    )


@dataclass(frozen=True, kw_only=True)
class RelayNoise:
    """Dummy reports the relay adds to every batch (the augmented shuffle).

    ``law`` is the published law of the number of dummies per output value of a
    question's mechanism, per batch; ``epsilon`` and ``delta`` are the central
    (ε, δ) it is signed to give for substitution neighbours.  Murakami, Sei and
    Eriguchi, arXiv 2504.07362; the accounting is ``deniable.dummies``.

    Parsing checks the structure only (pure Python: the device parses surveys
    without numpy); :meth:`verify` computes the law's exact δ at ``epsilon`` and
    is what an aggregator creating the survey and a relay registering it call.
    """

    epsilon: float
    delta: float
    law: DummyLaw

    FIELDS: ClassVar[set[str]] = {"epsilon", "delta", "law"}

    @classmethod
    def from_dict(cls, data: object, where: str = "survey.relay.noise") -> RelayNoise:
        require_keys(where, data, cls.FIELDS, cls.FIELDS)
        assert isinstance(data, Mapping)
        epsilon, delta = data["epsilon"], data["delta"]
        if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
            raise fail(f"{where}.epsilon", "must be a number in (0, 20]", "relay")
        if not 0 < epsilon <= 20:
            raise fail(f"{where}.epsilon", "must be a number in (0, 20]", "relay")
        if isinstance(delta, bool) or not isinstance(delta, int | float):
            raise fail(f"{where}.delta", f"must be a number in (0, {MAX_NOISE_DELTA}]", "relay")
        if not 0 < delta <= MAX_NOISE_DELTA:
            raise fail(
                f"{where}.delta",
                f"must be in (0, {MAX_NOISE_DELTA}]: with dummies that are never negative no "
                "law gives delta = 0 for substitution neighbours (deniable.dummies)",
                "relay",
            )
        try:
            law = law_from_dict(data["law"])
        except (InvalidParameter, TypeError) as error:
            raise fail(f"{where}.law", str(error), "relay") from None
        return cls(epsilon=float(epsilon), delta=float(delta), law=law)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "law": self.law.to_dict()}

    def verify(self, where: str = "survey.relay.noise") -> None:
        """InvalidSurvey unless the law's exact δ at ``epsilon`` is at most ``delta``."""
        from .dummies import delta_for

        achieved = delta_for(self.law, self.epsilon)
        if achieved > self.delta * (1 + NOISE_TOLERANCE):
            raise fail(
                where,
                f"the law gives delta = {achieved:.3g} at epsilon = {self.epsilon}, more than "
                f"the signed {self.delta:.3g}",
                "relay",
            )


@dataclass(frozen=True, kw_only=True)
class Relay:
    """A relayed survey's relay (docs/protocol.md, "Sealing"; docs/relay.md).

    Devices seal every report to the aggregator's encryption key and post it to
    ``url`` only; the relay forwards batches of at least ``min_batch`` reports in
    random order.  ``shuffle_unit`` is ``"question"`` (each question's reports
    sealed and shuffled apart: answers cannot be linked, nor crosstabbed) or
    ``"submission"`` (a respondent's reports sealed together).
    """

    url: str
    min_batch: int
    shuffle_unit: str = "question"
    noise: RelayNoise | None = None

    FIELDS: ClassVar[set[str]] = {"url", "min_batch", "shuffle_unit", "noise"}

    @classmethod
    def from_dict(cls, data: object, where: str = "survey.relay") -> Relay:
        require_keys(where, data, {"url", "min_batch"}, cls.FIELDS)
        assert isinstance(data, Mapping)
        url = data["url"]
        if not isinstance(url, str) or not 0 < len(url) <= MAX_LABEL or CONTROL.search(url):
            raise fail(f"{where}.url", f"must be a URL of at most {MAX_LABEL} characters", "relay")
        try:
            origin, _ = parse_url(url)
        except InvalidParameter as error:
            raise fail(
                f"{where}.url",
                "must be https://host[:port][/path] without a trailing "
                f"slash, query, fragment or credentials: {error}",
                "relay",
            ) from None
        if origin.scheme == "http" and not origin.is_loopback:
            raise fail(f"{where}.url", "must use https (http only for a loopback host)", "relay")
        # 1000.0 is 1000, as in every client (docs/protocol.md §2.2)
        min_batch = data["min_batch"]
        if type(min_batch) is float and min_batch.is_integer():
            min_batch = int(min_batch)
        if (
            isinstance(min_batch, bool)
            or not isinstance(min_batch, int)
            or not (1 <= min_batch <= MAX_MIN_BATCH)
        ):
            raise fail(f"{where}.min_batch", f"must be an integer in [1, {MAX_MIN_BATCH}]", "relay")
        unit = data.get("shuffle_unit", "question")
        if unit not in SHUFFLE_UNITS:
            raise fail(
                f"{where}.shuffle_unit", f"must be one of {', '.join(SHUFFLE_UNITS)}", "relay"
            )
        noise = None
        if "noise" in data:
            if unit != "question":
                raise fail(
                    f"{where}.noise",
                    "relay noise needs shuffle_unit 'question': a whole submission is not one "
                    "output value, so dummies cannot be drawn per value for it",
                    "relay",
                )
            noise = RelayNoise.from_dict(data["noise"], f"{where}.noise")
        return cls(url=url, min_batch=min_batch, shuffle_unit=unit, noise=noise)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "url": self.url,
            "min_batch": self.min_batch,
            "shuffle_unit": self.shuffle_unit,
        }
        if self.noise is not None:
            data["noise"] = self.noise.to_dict()
        return data

    @property
    def origin(self) -> Origin:
        """The relay's origin (``str()``: serialized per RFC 6454, as ``Origin`` names it)."""
        return parse_url(self.url)[0]

    def sealed_url(self, survey_id: str) -> str:
        """Where devices post a survey's sealed units: ``{url}/api/v1/surveys/<id>/sealed``."""
        return f"{self.url}/api/v1/surveys/{survey_id}/sealed"

    def units(self, survey: Survey) -> list[str]:
        """The sealing units of ``survey``: its question ids, or ``[""]`` for submissions."""
        return [""] if self.shuffle_unit == "submission" else survey.question_ids
