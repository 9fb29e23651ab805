"""Survey definitions: questions, strict validation, canonical bytes.

A survey is a versioned JSON document (``"format": "deniable.survey/2"``; stored
``deniable.survey/1`` definitions keep working and keep their bytes).
Both the aggregator and the client rebuild every question's mechanism from
this one definition, so their parameters cannot drift; the aggregator signs
:meth:`Survey.canonical_bytes` and the client verifies the same bytes.

Question types and their true answers:

* ``yes_no``: ``True``/``False``; binary randomized response by default.
* ``single_choice``: one of ``options`` (the label); mechanism chosen by
  :func:`deniable.mechanisms.recommend` when omitted.
* ``multiple_choice``: a set of ``options`` labels; mechanism chosen by
  ``recommend(..., multiple=True)`` when omitted.  ``option_sampling``
  reports one option drawn uniformly at random with its membership bit at the
  full ``epsilon`` (``deniable.mechanisms.option_sampling``); ``binary_rr``
  gives every option its own binary randomized response with
  ``epsilon / len(options)``, so the question costs ``epsilon`` by sequential
  composition (Dwork & Roth 2014, Thm 3.14).
* ``numeric``: a number in ``[lo, hi]``; ``duchi`` by default.
* ``scale`` (/2): an ordered single choice of 5, 7 or 11 points; the answer is the point.

A /2 question may be ``optional`` (the respondent may decline), carry ``help`` text and
a ``show_if`` condition on earlier answers.  Declining and not being asked are values of
the question's domain, randomized like any answer, so every path sends one report per
question and costs every question's ε (:mod:`deniable.questionnaire`, docs/protocol.md §5.5).

A question may be ``longitudinal`` (yes/no and single choice with ``grr``):
the client memoizes a permanent randomized response per value and randomizes
it again for every report (RAPPOR; see ``deniable.mechanisms.longitudinal``).

The survey's total ε is the sum of its questions' ε (sequential composition).

Format /2 (docs/protocol.md) differs from /1 in two ways: every question's
``parameters`` carry the mechanism's resolved parameters, thresholds included
(:mod:`deniable.resolution`), and the canonical bytes are RFC 8785 JCS
(:mod:`deniable.canonical`).  New surveys are /2 (:meth:`Survey.upgraded`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

from .canonical import jcs, legacy_bytes
from .errors import InvalidParameter, InvalidSurvey, InvalidValue
from .lazy import np, numpy_type
from .mechanisms import (
    ALIASES,
    LONGITUDINAL,
    NUMERIC_WITH_EXTRAS,
    QUESTION_MECHANISMS,
    mechanism_class,
)
from .mechanisms.base import Mechanism
from .mechanisms.optionwise import OptionwiseRR  # noqa: F401  (re-exported)
from .parameters import check_epsilon
from .questionnaire import (
    SCALE_POINTS,
    Condition,
    NonResponse,
    base_answer,
    extension_members,
    extras_of,
    mechanism_refusal,
    mechanism_value,
    parse_extensions,
    path_answers,
)
from .randomness import RngLike
from .resolution import (
    INTEGER_KEYS,
    PROBABILITY_KEYS,
    adopt_probabilities,
    check_resolved,
    implied_epsilons,
    resolved_parameters,
)
from .survey_checks import (  # noqa: F401  (re-exported: callers import these from here)
    BLANK,
    CONTROL,
    IDENTIFIER,
    MAX_LABEL,
    MAX_TEXT,
    NEWLINE_CONTROL,
    SURROGATE,
    check_identifier,
    check_lo_hi,
    check_text,
    fail,
    require_keys,
    wrap_parameter,
)
from .survey_members import (  # noqa: F401  (re-exported)
    MAX_MULTIPLE_OPTIONS,
    MAX_OPTIONS,
    Longitudinal,
    check_longitudinal,
    check_options,
    default_mechanism,
)
from .survey_relay import MAX_MIN_BATCH, SHUFFLE_UNITS, Relay, noise_refusal  # noqa: F401  (re-exported)
from .translations import DEFAULT_LANGUAGE, Translation, language_members, translations_document

__all__ = [
    "FORMAT",
    "FORMATS",
    "FORMAT_V1",
    "MAX_MULTIPLE_OPTIONS",
    "MAX_OPTIONS",
    "MAX_QUESTIONS",
    "QUESTION_TYPES",
    "Question",
    "Survey",
]

FORMAT = "deniable.survey/2"
FORMAT_V1 = "deniable.survey/1"
FORMATS = (FORMAT_V1, FORMAT)
MAX_QUESTIONS = 100
# Tolerance of the implied-ε check (docs/protocol.md §2.3).
TOLERANCE = 1e-9

QUESTION_TYPES = (*QUESTION_MECHANISMS, *ALIASES)
LONGITUDINAL_MECHANISMS = tuple(LONGITUDINAL)


def _integral(key: str, value: object) -> object:
    """A JSON number's value, not its spelling: 5.0 is the integer 5 (docs/protocol.md §2.2).

    Why: a JavaScript parser cannot tell ``5`` from ``5.0``, and JCS writes both as ``5``, so
    every client must read them alike; 5.5 stays a float and is refused where an int is needed.
    """
    if key in INTEGER_KEYS and type(value) is float and value.is_integer():
        return int(value)
    return value


@dataclass(frozen=True, kw_only=True)
class Question:
    """One question of a survey, with the mechanism both sides rebuild from it."""

    id: str
    type: str
    text: str
    epsilon: float
    mechanism: str
    options: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    longitudinal: Longitudinal | None = None
    # /2: signed thresholds (and Duchi's slope) that differ from the ones this code derives from
    # ε; used as signed, within the declared ε (docs/protocol.md §2.3).  Usually empty.
    probabilities: Mapping[str, Any] = field(default_factory=dict)
    # /2 questionnaire members (docs/protocol.md §5.5-5.6, deniable.questionnaire).
    optional: bool = False
    help: str = ""
    show_if: Condition | None = None
    points: int | None = None
    anchors: tuple[str, str] | None = None

    FIELDS: ClassVar[set[str]] = {
        "id",
        "type",
        "text",
        "epsilon",
        "mechanism",
        "options",
        "lo",
        "hi",
        "parameters",
        "longitudinal",
        "optional",
        "help",
        "show_if",
        "points",
        "anchors",
    }

    # -- building -------------------------------------------------------------
    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        where: str = "question",
        format: str = FORMAT,
        earlier: Mapping[str, Question] | None = None,
    ) -> Question:
        require_keys(where, data, {"id", "type", "text", "epsilon"}, cls.FIELDS)
        qid = check_identifier(f"{where}.id", data["id"])
        where = f"question {qid!r}"
        kind = data["type"]
        if kind not in QUESTION_TYPES:
            raise fail(f"{where}.type", f"must be one of {', '.join(QUESTION_TYPES)}", "type")
        text = check_text(f"{where}.text", data["text"])
        try:
            epsilon = check_epsilon(data["epsilon"])
        except InvalidParameter as error:
            raise wrap_parameter(where, error) from None
        extra = data.get("parameters", {})
        if not isinstance(extra, Mapping):
            raise fail(f"{where}.parameters", "must be an object", "wrong-type")
        options: tuple[str, ...] = ()
        lo = hi = None
        if kind in ("single_choice", "multiple_choice"):
            options = check_options(where, data.get("options"), kind)
        elif "options" in data:
            raise fail(where, f"a {kind} question has no options", "unknown-member")
        if kind == "numeric":
            if "lo" not in data or "hi" not in data:
                raise fail(where, "a numeric question needs lo and hi", "missing-member")
            lo, hi = data["lo"], data["hi"]
            check_lo_hi(where, lo, hi)
        elif "lo" in data or "hi" in data:
            raise fail(where, f"a {kind} question has no lo/hi", "unknown-member")
        members = parse_extensions(where, data, kind, format, earlier or {})
        extras = extras_of(members.get("optional", False), "show_if" in members)
        size = len(options) or members.get("points") or 2
        mechanism = data.get("mechanism") or default_mechanism(kind, size + len(extras), epsilon)
        if not isinstance(mechanism, str):
            raise fail(f"{where}.mechanism", "must be a string", "wrong-type")
        named = mechanism_class(kind, mechanism)
        if named is None or (
            getattr(named, "binary", False) and kind in ("single_choice", "scale") and size != 2
        ):
            raise fail(
                f"{where}.mechanism", f"{mechanism!r} does not fit a {kind} question", "mechanism"
            )
        longitudinal = check_longitudinal(where, data.get("longitudinal"), kind, mechanism)
        refusal = mechanism_refusal(kind, named, extras, longitudinal is not None)
        if refusal is not None:
            raise fail(f"{where}.mechanism", refusal, "mechanism")
        signed: dict[str, Any] = {}
        probabilities: dict[str, Any] = {}
        if format == FORMAT:
            # /2: the constructor's keywords build the mechanism, the signed probabilities are
            # then used as signed (their implied ε is checked below), and the other resolved
            # parameters (structural) must equal what the mechanism derives.
            keywords = named.constructor_keywords
            signed = {k: _integral(k, v) for k, v in extra.items()}
            extra = {k: v for k, v in signed.items() if k in keywords}
            probabilities = {k: v for k, v in signed.items() if k in PROBABILITY_KEYS}
        question = cls(
            id=qid,
            type=kind,
            text=text,
            epsilon=epsilon,
            mechanism=mechanism,
            options=options,
            lo=lo,
            hi=hi,
            parameters=dict(extra),
            longitudinal=longitudinal,
            **members,
        )
        try:
            question.oracle  # noqa: B018 - builds and validates the mechanism once
            unknown = set(signed) - set(resolved_parameters(question.oracle)) if signed else ()
            if unknown:
                raise fail(
                    f"{where}.parameters",
                    f"unknown field(s) {', '.join(sorted(unknown))}",
                    "unknown-member",
                )
            # Only the signed probabilities that differ from this code's derivation are kept
            # (usually none): the same survey compares equal however it was written.
            derived = resolved_parameters(question.oracle) if probabilities else {}
            differing = {k: v for k, v in probabilities.items() if derived.get(k) != v}
            if differing:
                question = replace(question, probabilities=differing)
                question.oracle  # noqa: B018 - adopts and checks the signed probabilities
            if signed:
                check_resolved(question.oracle, signed)
        except (InvalidParameter, TypeError) as error:
            raise fail(where, f"invalid mechanism parameters: {error}", "parameter") from None
        for name, implied, declared in implied_epsilons(question.oracle):
            if implied > declared + TOLERANCE:
                raise fail(
                    where,
                    f"its parameters imply {name} = {implied!r}, more than the "
                    f"declared {declared!r}",
                    "implied-epsilon",
                )
        return question

    def to_dict(self, format: str = FORMAT) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "text": self.text,
            "epsilon": self.epsilon,
            "mechanism": self.mechanism,
        }
        if self.options:
            data["options"] = list(self.options)
        if self.type == "numeric":
            data["lo"], data["hi"] = self.oracle.lo, self.oracle.hi
        if format == FORMAT:
            data["parameters"] = resolved_parameters(self.oracle)
        elif self.parameters:
            data["parameters"] = dict(self.parameters)
        if self.longitudinal:
            data["longitudinal"] = self.longitudinal.to_dict()
        data.update(extension_members(self))
        return data

    # -- the mechanism ----------------------------------------------------------
    def _derived_oracle(self) -> Mechanism:
        """The mechanism as this code derives it from ε (before the signed probabilities)."""
        fitting = QUESTION_MECHANISMS.get(ALIASES.get(self.type, self.type), {})
        cls = mechanism_class(self.type, self.mechanism)
        if cls is None:
            raise InvalidParameter(
                f"mechanism must be one of {', '.join(fitting)} for {self.type} questions"
            )
        if self.type == "multiple_choice":
            bits = len(self.options) + len(self.extras)
            if self.extras and getattr(cls, "splits_epsilon", False):
                # All options against a non-response: m + 1 bits at most (§5.5).
                return cls(epsilon=self.epsilon, options=bits, distance=len(self.options) + 1)
            return cls(epsilon=self.epsilon, options=bits)
        if self.type == "numeric" and self.extras:
            status = NUMERIC_WITH_EXTRAS[self.mechanism]
            return status(epsilon=self.epsilon, lo=self.lo, hi=self.hi, extras=len(self.extras))
        if self.type == "numeric":
            return cls(epsilon=self.epsilon, lo=self.lo, hi=self.hi, **self.parameters)
        if self.longitudinal is not None:
            return LONGITUDINAL[self.mechanism](
                epsilon=self.epsilon,
                instantaneous_epsilon=self.longitudinal.instantaneous_epsilon,
                domain_size=self.domain_size,
            )
        keywords = dict(self.parameters)
        if not cls.binary:
            keywords["domain_size"] = self.domain_size
        elif self.domain_size != 2:
            raise InvalidParameter(f"{self.mechanism} needs exactly two categories")
        return cls(epsilon=self.epsilon, **keywords)

    @cached_property
    def oracle(self) -> Mechanism:
        """The mechanism whose reports the aggregator receives: signed probabilities adopted."""
        oracle = self._derived_oracle()
        adopt_probabilities(oracle, dict(self.probabilities))
        return oracle

    @property
    def extras(self) -> tuple[str, ...]:
        """The non-response values, in domain order: ``declined``, ``not_applicable`` (§5.5)."""
        return extras_of(self.optional, self.show_if is not None)

    @property
    def base_size(self) -> int:
        """The number of answer values, without the extras."""
        if self.type == "yes_no":
            return 2
        if self.type == "scale":
            return int(self.points or 0)
        return len(self.options)

    @property
    def domain_size(self) -> int:
        """The categorical domain the mechanism runs over: the answers, then the extras."""
        return self.base_size + len(self.extras)

    @property
    def base_labels(self) -> list[str]:
        """The answer values' names (no extras)."""
        if self.type == "yes_no":
            return ["no", "yes"]
        if self.type == "numeric":
            return ["mean"]
        if self.type == "scale":
            return [str(point) for point in SCALE_POINTS[int(self.points or 0)]]
        return list(self.options)

    @property
    def labels(self) -> list[str]:
        """Names of the estimated quantities, in statistics order (extras last)."""
        if self.type == "numeric":
            return ["mean", *self.extras]
        return [*self.base_labels, *self.extras]

    @property
    def statistics_size(self) -> int:
        """Length of the additive statistics (``Question.statistics``)."""
        return self.oracle.statistics_size

    # -- respondent side --------------------------------------------------------
    def check_answer(self, answer: object) -> Any:
        """The true answer (or DECLINED / NOT_APPLICABLE) in mechanism terms; InvalidValue if it
        does not fit."""
        if isinstance(answer, NonResponse):
            return mechanism_value(self, answer)
        return mechanism_value(self, self.check_base(answer))

    def check_base(self, answer: object) -> Any:
        """A true answer (no extras) as conditions compare it; InvalidValue if it does not fit."""
        where = f"question {self.id!r}"
        if self.type == "scale":
            return base_answer(self, answer)
        if self.type == "yes_no":
            if not (answer is True or answer is False or numpy_type(answer, "bool_")):
                raise InvalidValue(f"{where}: answer must be True or False, got {answer!r}")
            return int(answer)
        if self.type == "single_choice":
            if not isinstance(answer, str) or answer not in self.options:
                raise InvalidValue(f"{where}: answer must be one of {list(self.options)!r}")
            return self.options.index(answer)
        if self.type == "multiple_choice":
            if isinstance(answer, str) or not isinstance(answer, list | tuple | set | frozenset):
                raise InvalidValue(f"{where}: answer must be a list of option labels")
            chosen = set()
            for label in answer:
                if not isinstance(label, str) or label not in self.options:
                    raise InvalidValue(f"{where}: {label!r} is not one of {list(self.options)!r}")
                chosen.add(self.options.index(label))
            return tuple(int(i in chosen) for i in range(len(self.options)))
        try:  # a numeric question's number (an optional one's oracle also takes a status)
            return getattr(self.oracle, "sign_oracle", self.oracle).check_value(answer)
        except InvalidValue as error:
            raise InvalidValue(f"{where}: {error}") from None

    def randomize(self, answer: object, rng: RngLike = None) -> str:
        """The encoded noisy report for a true answer (CSPRNG unless ``rng``)."""
        return self.oracle.encode(self.oracle.randomize(self.check_answer(answer), rng))

    # -- aggregator side --------------------------------------------------------
    def statistics(self, payloads: list[str]) -> np.ndarray:
        """Additive statistics of encoded reports (decoded strictly)."""
        if not payloads:
            return np.zeros(self.statistics_size, dtype=np.int64)
        return np.asarray(self.oracle.wire_statistics(payloads), np.int64)


@dataclass(frozen=True, kw_only=True)
class Survey:
    """A validated survey definition."""

    id: str
    title: str
    description: str = ""
    questions: tuple[Question, ...]
    format: str = FORMAT
    relay: Relay | None = None
    # /2: the language of the texts above, and the same texts in other languages (§5.7).
    language: str = DEFAULT_LANGUAGE
    translations: Mapping[str, Translation] = field(default_factory=dict)

    FIELDS: ClassVar[set[str]] = {
        *("format", "id", "title", "description", "questions", "relay"),
        *("language", "translations"),
    }

    @classmethod
    def from_dict(cls, data: object, *, resolved: bool = False) -> Survey:
        """A validated survey; ``resolved=True`` (clients) also demands the resolved form.

        A signed definition is always resolved: re-resolving it changes nothing.  A
        client passes ``resolved=True`` so a /2 definition with a parameter missing
        is refused rather than filled in from this code's defaults.
        """
        require_keys("survey", data, {"format", "id", "title", "questions"}, cls.FIELDS)
        assert isinstance(data, Mapping)
        format = data["format"]
        if format not in FORMATS:
            raise fail(
                "survey.format", f"must be one of {', '.join(FORMATS)}, got {format!r}", "format"
            )
        sid = check_identifier("survey.id", data["id"])
        title = check_text("survey.title", data["title"], MAX_LABEL)
        if resolved and data.get("description") == "":
            # Why: the canonical form omits an empty description, so one given as "" could not
            # be the signed bytes of any survey (docs/protocol.md §2.2).
            raise fail(
                "survey.description", "must be omitted rather than empty", "description-empty"
            )
        description = check_text(
            "survey.description", data.get("description", ""), empty=True, newlines=True
        )
        raw = data["questions"]
        if not isinstance(raw, list):
            raise fail("survey.questions", "must be a list of questions", "wrong-type")
        if not 1 <= len(raw) <= MAX_QUESTIONS:
            raise fail(
                "survey.questions",
                f"must be a list of 1 to {MAX_QUESTIONS} questions",
                "questions-count",
            )
        built: dict[str, Question] = {}
        for i, q in enumerate(raw):
            question = Question.from_dict(q, f"survey.questions[{i}]", format, built)
            built.setdefault(question.id, question)
        questions = tuple(built.values()) if len(built) == len(raw) else ()
        if not questions:
            raise fail("survey.questions", "question ids must be distinct", "question-id-duplicate")
        keys = [q.longitudinal.key for q in questions if q.longitudinal]
        if len(set(keys)) != len(keys):
            raise fail(
                "survey.questions",
                "longitudinal keys must be distinct",
                "longitudinal-key-duplicate",
            )
        relay = None
        if "relay" in data:
            if format != FORMAT:
                raise fail("survey.relay", f"needs format {FORMAT}")
            relay = Relay.from_dict(data["relay"])
            if relay.noise is not None:
                for question in questions:
                    if (refusal := noise_refusal(question)) is not None:
                        raise fail(f"question {question.id!r}.mechanism", refusal, "relay")
        survey = cls(
            id=sid,
            title=title,
            description=description,
            questions=questions,
            format=format,
            relay=relay,
            **language_members(data, format, resolved, description, questions),
        )
        if resolved and survey.canonical_bytes() != survey._canonical(data):
            raise fail(
                "survey",
                "definition is not in resolved form (a parameter is missing)",
                "missing-member",
            )
        return survey

    def upgraded(self) -> Survey:
        """The same survey in the current format (what the aggregator stores for new surveys)."""
        return replace(self, format=FORMAT)

    @classmethod
    def from_json(cls, text: str | bytes) -> Survey:
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as error:
            raise InvalidSurvey(f"survey: not valid JSON ({error})") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": self.format, "id": self.id, "title": self.title}
        if self.description:
            data["description"] = self.description
        data["questions"] = [q.to_dict(self.format) for q in self.questions]
        if self.relay is not None:
            data["relay"] = self.relay.to_dict()
        if self.language != DEFAULT_LANGUAGE:
            data["language"] = self.language
        if self.translations:
            data["translations"] = translations_document(self.translations)
        return data

    def _canonical(self, document: Any) -> bytes:
        return jcs(document) if self.format == FORMAT else legacy_bytes(document)

    def canonical_bytes(self) -> bytes:
        """The bytes that are signed and verified: RFC 8785 JCS for /2, legacy bytes for /1."""
        return self._canonical(self.to_dict())

    @property
    def total_epsilon(self) -> float:
        return sum(q.epsilon for q in self.questions)

    @cached_property
    def _by_id(self) -> dict[str, Question]:
        return {q.id: q for q in self.questions}

    def question(self, question_id: str) -> Question:
        try:
            return self._by_id[question_id]
        except (KeyError, TypeError):
            raise InvalidValue(f"survey {self.id!r} has no question {question_id!r}") from None

    @property
    def question_ids(self) -> list[str]:
        return list(self._by_id)

    @cached_property
    def question_id_set(self) -> frozenset[str]:
        """The question ids, as a set (for checking many reports at once)."""
        return frozenset(self._by_id)

    def has_question(self, question_id: str) -> bool:
        return isinstance(question_id, str) and question_id in self._by_id

    def path_answers(self, answers: object) -> dict[str, Any]:
        """Every question's true answer in mechanism terms along the respondent's path: shown
        questions as answered (``None``/absent: declined, if optional), hidden ones
        ``not_applicable`` (``deniable.questionnaire.path_answers``)."""
        return path_answers(self, answers)
