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
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

from .canonical import jcs, legacy_bytes
from .errors import InvalidParameter, InvalidReport, InvalidSurvey, InvalidValue
from .lazy import np, numpy_type
from .mechanisms import CATEGORICAL, NUMERIC, recommend
from .mechanisms.base import Mechanism, NumericMechanism
from .mechanisms.binary_rr import BinaryRR
from .mechanisms.longitudinal import LongitudinalGRR
from .mechanisms.option_sampling import OptionSampling
from .parameters import check_epsilon
from .randomness import RngLike
from .resolution import (
    CONSTRUCTOR_KEYWORDS,
    INTEGER_KEYS,
    PROBABILITY_KEYS,
    adopt_probabilities,
    check_resolved,
    implied_epsilons,
    resolved_parameters,
)

FORMAT = "deniable.survey/2"
FORMAT_V1 = "deniable.survey/1"
FORMATS = (FORMAT_V1, FORMAT)
IDENTIFIER = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
MAX_QUESTIONS = 100
MAX_OPTIONS = 1024
MAX_MULTIPLE_OPTIONS = 64
MAX_TEXT = 2000
MAX_LABEL = 200
# C0 and C1 control characters and DEL; descriptions may keep line feeds.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
NEWLINE_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
# "Not blank" (docs/protocol.md §2.2): some code point outside Unicode's White_Space and
# Default_Ignorable_Code_Point properties (fixed lists, the same in client/browser/survey.js), so
# a title of U+200B or U+FEFF is blank in every client whatever its trim() strips.
BLANK = re.compile(
    "[\t-\r \x85\xa0\xad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f"
    "\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]*"
)
# A JSON text may escape half of a UTF-16 pair ("\ud800"); JCS cannot encode it.
SURROGATE = re.compile("[\ud800-\udfff]")
# Tolerance of the implied-ε check (docs/protocol.md §2.3).
TOLERANCE = 1e-9

QUESTION_TYPES = ("yes_no", "single_choice", "multiple_choice", "numeric")
LONGITUDINAL_MECHANISMS = ("binary_rr", "grr")


def _fail(where: str, message: str, reason: str = "invalid") -> InvalidSurvey:
    """An InvalidSurvey with its reason code (docs/protocol.md §7, "Reason codes")."""
    return InvalidSurvey(f"{where}: {message}", reason=reason)


def _require_keys(where: str, data: Mapping[str, Any], required: set[str], allowed: set[str]):
    if not isinstance(data, Mapping):
        raise _fail(where, f"must be an object, got {type(data).__name__}", "wrong-type")
    missing = required - data.keys()
    if missing:
        raise _fail(where, f"missing field(s) {', '.join(sorted(missing))}", "missing-member")
    extra = data.keys() - allowed
    if extra:
        raise _fail(
            where, f"unknown field(s) {', '.join(sorted(map(str, extra)))}", "unknown-member"
        )


def _text(
    where: str, value: object, limit: int = MAX_TEXT, *, empty: bool = False, newlines: bool = False
) -> str:
    """Survey text: no C0/C1 control characters (``newlines``: ``\\n`` allowed).

    Why: labels and titles reach CSV files, terminals and logs; a ``\\r`` split a
    CSV row and planted a formula cell (issue 8.4), an ESC would drive a terminal.
    """
    if not isinstance(value, str) or SURROGATE.search(value):
        raise _fail(where, "must be a string of whole characters (no unpaired surrogate), got "
                    f"{type(value).__name__}", "wrong-type")  # fmt: skip
    if len(value) > limit:
        raise _fail(where, f"must be at most {limit} characters", "text-length")
    if not empty and BLANK.fullmatch(value):
        raise _fail(where, "must not be blank (white space or invisible characters only)",
                    "text-blank")  # fmt: skip
    control = (NEWLINE_CONTROL if newlines else CONTROL).search(value)
    if control is not None:
        raise _fail(where, f"must not contain control character U+{ord(control.group()):04X}",
                    "text-control")  # fmt: skip
    return value


def _identifier(where: str, value: object) -> str:
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value):
        raise _fail(where, f"must match {IDENTIFIER.pattern}, got {value!r}", "identifier")
    return value


def _wrap_parameter(where: str, error: InvalidParameter, reason: str = "epsilon") -> InvalidSurvey:
    return _fail(where, str(error), reason)


_MECHANISMS = {
    "yes_no": tuple(CATEGORICAL),
    "single_choice": tuple(CATEGORICAL),
    "multiple_choice": (BinaryRR.name, OptionSampling.name),
    "numeric": tuple(NUMERIC),
}


def _integral(key: str, value: object) -> object:
    """A JSON number's value, not its spelling: 5.0 is the integer 5 (docs/protocol.md §2.2).

    Why: a JavaScript parser cannot tell ``5`` from ``5.0``, and JCS writes both as ``5``, so
    every client must read them alike; 5.5 stays a float and is refused where an int is needed.
    """
    if key in INTEGER_KEYS and type(value) is float and value.is_integer():
        return int(value)
    return value


def _check_range(where: str, lo: object, hi: object) -> None:
    """lo and hi: finite numbers with lo < hi and hi - lo finite (reason ``range``)."""
    numbers = all(type(v) in (int, float) for v in (lo, hi))
    try:
        fine = numbers and all(map(math.isfinite, (float(lo), float(hi), float(hi) - float(lo))))  # type: ignore[arg-type]
    except OverflowError:
        fine = False
    if not fine or not lo < hi:  # type: ignore[operator]
        raise _fail(where, f"lo and hi must be finite numbers with lo < hi, got [{lo!r}, {hi!r}]",
                    "range")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Longitudinal:
    """A memoized question: ``key`` names it across surveys; two ε layers."""

    key: str
    instantaneous_epsilon: float

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "instantaneous_epsilon": self.instantaneous_epsilon}


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

    FIELDS: ClassVar[set[str]] = {
        "id", "type", "text", "epsilon", "mechanism", "options", "lo", "hi",
        "parameters", "longitudinal",
    }  # fmt: skip

    # -- building -------------------------------------------------------------
    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], where: str = "question", format: str = FORMAT
    ) -> Question:
        _require_keys(where, data, {"id", "type", "text", "epsilon"}, cls.FIELDS)
        qid = _identifier(f"{where}.id", data["id"])
        where = f"question {qid!r}"
        kind = data["type"]
        if kind not in QUESTION_TYPES:
            raise _fail(f"{where}.type", f"must be one of {', '.join(QUESTION_TYPES)}", "type")
        text = _text(f"{where}.text", data["text"])
        try:
            epsilon = check_epsilon(data["epsilon"])
        except InvalidParameter as error:
            raise _wrap_parameter(where, error) from None
        extra = data.get("parameters", {})
        if not isinstance(extra, Mapping):
            raise _fail(f"{where}.parameters", "must be an object", "wrong-type")
        options: tuple[str, ...] = ()
        lo = hi = None
        if kind in ("single_choice", "multiple_choice"):
            options = cls._options(where, data.get("options"), kind)
        elif "options" in data:
            raise _fail(where, f"a {kind} question has no options", "unknown-member")
        if kind == "numeric":
            if "lo" not in data or "hi" not in data:
                raise _fail(where, "a numeric question needs lo and hi", "missing-member")
            lo, hi = data["lo"], data["hi"]
            _check_range(where, lo, hi)
        elif "lo" in data or "hi" in data:
            raise _fail(where, f"a {kind} question has no lo/hi", "unknown-member")
        mechanism = data.get("mechanism") or cls._default_mechanism(kind, options, epsilon)
        if not isinstance(mechanism, str):
            raise _fail(f"{where}.mechanism", "must be a string", "wrong-type")
        if mechanism not in _MECHANISMS[kind] or (
            mechanism == BinaryRR.name and kind == "single_choice" and len(options) != 2
        ):
            raise _fail(f"{where}.mechanism", f"{mechanism!r} does not fit a {kind} question",
                        "mechanism")  # fmt: skip
        longitudinal = cls._longitudinal(where, data.get("longitudinal"), kind, mechanism)
        signed: dict[str, Any] = {}
        probabilities: dict[str, Any] = {}
        if format == FORMAT:
            # /2: the constructor's keywords build the mechanism, the signed probabilities are
            # then used as signed (their implied ε is checked below), and the other resolved
            # parameters (structural) must equal what the mechanism derives.
            keywords = CONSTRUCTOR_KEYWORDS.get(mechanism, ()) if kind != "multiple_choice" else ()
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
        )
        try:
            question.oracle  # noqa: B018 - builds and validates the mechanism once
            unknown = set(signed) - set(resolved_parameters(question.oracle)) if signed else ()
            if unknown:
                raise _fail(f"{where}.parameters", f"unknown field(s) {', '.join(sorted(unknown))}",
                            "unknown-member")  # fmt: skip
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
            raise _fail(where, f"invalid mechanism parameters: {error}", "parameter") from None
        for name, implied, declared in implied_epsilons(question.oracle):
            if implied > declared + TOLERANCE:
                raise _fail(where, f"its parameters imply {name} = {implied!r}, more than the "
                            f"declared {declared!r}", "implied-epsilon")  # fmt: skip
        return question

    @staticmethod
    def _options(where: str, options: object, kind: str) -> tuple[str, ...]:
        limit = MAX_MULTIPLE_OPTIONS if kind == "multiple_choice" else MAX_OPTIONS
        if not isinstance(options, list):
            raise _fail(f"{where}.options", "must be a list of labels", "wrong-type")
        if not 2 <= len(options) <= limit:
            raise _fail(f"{where}.options", f"must be a list of 2 to {limit} labels",
                        "options-count")  # fmt: skip
        labels = tuple(_text(f"{where}.options", o, MAX_LABEL) for o in options)
        if len(set(labels)) != len(labels):
            raise _fail(f"{where}.options", "labels must be distinct", "options-duplicate")
        return labels

    @staticmethod
    def _default_mechanism(kind: str, options: tuple[str, ...], epsilon: float) -> str:
        if kind == "yes_no":
            return BinaryRR.name
        if kind == "multiple_choice":
            return recommend(domain_size=len(options), epsilon=epsilon, multiple=True).mechanism
        if kind == "numeric":
            return "duchi"
        return recommend(domain_size=len(options), epsilon=epsilon).mechanism

    @staticmethod
    def _longitudinal(where: str, data: object, kind: str, mechanism: str) -> Longitudinal | None:
        if data is None:
            return None
        if kind not in ("yes_no", "single_choice") or mechanism not in LONGITUDINAL_MECHANISMS:
            raise _fail(
                f"{where}.longitudinal",
                "only yes_no and single_choice questions with grr or binary_rr can be longitudinal",
                "mechanism",
            )
        _require_keys(f"{where}.longitudinal", data, {"key", "instantaneous_epsilon"},
                      {"key", "instantaneous_epsilon"})  # fmt: skip
        try:
            instantaneous = check_epsilon(data["instantaneous_epsilon"], "instantaneous_epsilon")
        except InvalidParameter as error:
            raise _wrap_parameter(where, error) from None
        return Longitudinal(
            key=_identifier(f"{where}.longitudinal.key", data["key"]),
            instantaneous_epsilon=instantaneous,
        )

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
        return data

    # -- the mechanism ----------------------------------------------------------
    def _derived_oracle(self) -> Mechanism:
        """The mechanism as this code derives it from ε (before the signed probabilities)."""
        if self.type == "multiple_choice":
            if self.mechanism == OptionSampling.name:
                return OptionSampling(epsilon=self.epsilon, options=len(self.options))
            if self.mechanism != BinaryRR.name:
                raise InvalidParameter(
                    "multiple_choice questions use option_sampling or binary_rr per option"
                )
            return OptionwiseRR(epsilon=self.epsilon, options=len(self.options))
        if self.type == "numeric":
            if self.mechanism not in NUMERIC:
                raise InvalidParameter(
                    f"mechanism must be one of {', '.join(NUMERIC)} for numeric questions"
                )
            return NUMERIC[self.mechanism](
                epsilon=self.epsilon, lo=self.lo, hi=self.hi, **self.parameters
            )
        if self.mechanism not in CATEGORICAL:
            raise InvalidParameter(f"mechanism must be one of {', '.join(CATEGORICAL)}")
        if self.longitudinal is not None:
            return LongitudinalGRR(
                epsilon=self.epsilon,
                instantaneous_epsilon=self.longitudinal.instantaneous_epsilon,
                domain_size=self.domain_size,
            )
        keywords = dict(self.parameters)
        if self.mechanism != BinaryRR.name:
            keywords["domain_size"] = self.domain_size
        elif self.domain_size != 2:
            raise InvalidParameter("binary_rr needs exactly two categories")
        return CATEGORICAL[self.mechanism](epsilon=self.epsilon, **keywords)

    @cached_property
    def oracle(self) -> Mechanism:
        """The mechanism whose reports the aggregator receives: signed probabilities adopted."""
        oracle = self._derived_oracle()
        adopt_probabilities(oracle, dict(self.probabilities))
        return oracle

    @property
    def domain_size(self) -> int:
        return 2 if self.type == "yes_no" else len(self.options)

    @property
    def labels(self) -> list[str]:
        """Names of the estimated quantities, in statistics order."""
        if self.type == "yes_no":
            return ["no", "yes"]
        if self.type == "numeric":
            return ["mean"]
        return list(self.options)

    @property
    def statistics_size(self) -> int:
        if self.type == "numeric":
            return 1
        if self.mechanism == OptionSampling.name:
            return 2 * len(self.options)  # reports (v, 1), then reports (v, 0)
        return len(self.labels)

    # -- respondent side --------------------------------------------------------
    def check_answer(self, answer: object) -> Any:
        """The true answer in mechanism terms; InvalidValue if it does not fit."""
        where = f"question {self.id!r}"
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
        try:
            return self.oracle.check_value(answer)
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

    def results(
        self, statistics: np.ndarray, n: int, *, beta: float | None = None
    ) -> dict[str, Any]:
        """The published result for this question: estimates and every interval family."""
        # Imported here: the device never estimates, and estimation needs numpy.
        from .estimation import DEFAULT_BETA, estimate_frequencies, estimate_mean

        if beta is None:
            beta = DEFAULT_BETA
        summary: dict[str, Any] = {
            "question": self.id,
            "type": self.type,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "n": n,
        }
        if n == 0:
            return {**summary, "beta": beta, "estimate": None}
        oracle = self.oracle
        if isinstance(oracle, NumericMechanism):
            return {**summary, **estimate_mean(oracle, statistics, n, beta=beta).to_dict()}
        if isinstance(oracle, OptionwiseRR | OptionSampling):
            per_option = oracle.option_oracle if isinstance(oracle, OptionwiseRR) else oracle
            result = estimate_frequencies(
                per_option, statistics, n, beta=beta,
                categories=len(self.options), normalize=False,
            )  # fmt: skip
        else:
            result = estimate_frequencies(oracle, statistics, n, beta=beta)
        return {**summary, **result.to_dict(self.labels)}


@dataclass(frozen=True, kw_only=True)
class OptionwiseRR(Mechanism):
    """Multiple choice: one binary randomized response per option at ε / options.

    The report is ``options`` bytes (00/01); statistics are the number of
    reports saying "yes" to each option, and each option is estimated as a
    yes/no frequency with the binary RR estimator.
    """

    epsilon: float
    options: int

    name: ClassVar[str] = "binary_rr"
    kind: ClassVar[str] = "multiple"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @cached_property
    def option_oracle(self) -> BinaryRR:
        return BinaryRR(epsilon=self.epsilon / self.options)

    @property
    def report_bytes(self) -> int:
        return self.options

    @property
    def epsilon_implemented(self) -> float:
        return self.option_oracle.epsilon_implemented * self.options

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "options": self.options}

    def check_value(self, value: object) -> tuple[int, ...]:
        if not isinstance(value, tuple) or len(value) != self.options:
            raise InvalidValue(f"value must be a tuple of {self.options} bits")
        return tuple(self.option_oracle.check_value(bit) for bit in value)

    def randomize(self, value: Any, rng: RngLike = None) -> tuple[int, ...]:
        bits = self.check_value(value)
        return tuple(self.option_oracle.randomize(bit, rng) for bit in bits)

    def randomize_many(self, values: Any, rng: np.random.Generator) -> np.ndarray:
        array = np.asarray(values, dtype=np.int64)
        flat = self.option_oracle.randomize_many(array.reshape(-1), rng)
        return flat.reshape(array.shape)

    def statistics(self, batch: np.ndarray) -> np.ndarray:
        return np.asarray(batch, dtype=np.int64).sum(axis=0)

    def report_distribution(self, value: Any) -> dict[str, float]:
        raise InvalidParameter("multiple choice distributions are per option (binary_rr)")

    def encode(self, report: Any) -> str:
        if not isinstance(report, tuple | list) or len(report) != self.options:
            raise InvalidReport(f"multiple choice report must be a tuple of {self.options} bits")
        try:
            data = bytes(report)
        except (TypeError, ValueError):
            data = b"\x02"
        if data.translate(None, b"\x00\x01"):
            raise InvalidReport("multiple choice report bits must be 0 or 1")
        return data.hex()

    def _pack_many(self, batch: np.ndarray) -> np.ndarray:
        return np.asarray(batch, dtype=np.uint8).reshape(-1, self.options)

    def _unpack_many(self, data: np.ndarray) -> np.ndarray:
        if data.size and data.max() > 1:
            raise InvalidReport("multiple choice report bytes must be 00 or 01")
        return data.astype(np.int64)


SHUFFLE_UNITS = ("question", "submission")
MAX_MIN_BATCH = 10_000_000
_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


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

    FIELDS: ClassVar[set[str]] = {"url", "min_batch", "shuffle_unit"}

    @classmethod
    def from_dict(cls, data: object, where: str = "survey.relay") -> Relay:
        _require_keys(where, data, {"url", "min_batch"}, cls.FIELDS)
        assert isinstance(data, Mapping)
        url = data["url"]
        if not isinstance(url, str) or not 0 < len(url) <= MAX_LABEL or CONTROL.search(url):
            raise _fail(f"{where}.url", f"must be a URL of at most {MAX_LABEL} characters", "relay")
        scheme, _, rest = url.partition("://")
        host = rest.split("/", 1)[0]
        hostname = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if (scheme not in ("https", "http") or not host or any(c in url for c in "?#@ \\")
                or url.endswith("/")):  # fmt: skip
            raise _fail(f"{where}.url", "must be https://host[:port][/path] without a trailing "
                        f"slash, query, fragment or credentials, got {url!r}", "relay")  # fmt: skip
        if scheme == "http" and hostname not in _LOOPBACK_HOSTS:
            raise _fail(f"{where}.url", "must use https (http only for a loopback host)",
                        "relay")  # fmt: skip
        # 1000.0 is 1000, as in every client (docs/protocol.md §2.2)
        min_batch = data["min_batch"]
        if type(min_batch) is float and min_batch.is_integer():
            min_batch = int(min_batch)
        if isinstance(min_batch, bool) or not isinstance(min_batch, int) or not (
            1 <= min_batch <= MAX_MIN_BATCH
        ):
            raise _fail(f"{where}.min_batch", f"must be an integer in [1, {MAX_MIN_BATCH}]",
                        "relay")  # fmt: skip
        unit = data.get("shuffle_unit", "question")
        if unit not in SHUFFLE_UNITS:
            raise _fail(f"{where}.shuffle_unit", f"must be one of {', '.join(SHUFFLE_UNITS)}",
                        "relay")  # fmt: skip
        return cls(url=url, min_batch=min_batch, shuffle_unit=unit)

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "min_batch": self.min_batch, "shuffle_unit": self.shuffle_unit}

    def sealed_url(self, survey_id: str) -> str:
        """Where devices post a survey's sealed units: ``{url}/api/v1/surveys/<id>/sealed``."""
        return f"{self.url}/api/v1/surveys/{survey_id}/sealed"

    def units(self, survey: Survey) -> list[str]:
        """The sealing units of ``survey``: its question ids, or ``[""]`` for submissions."""
        return [""] if self.shuffle_unit == "submission" else survey.question_ids


@dataclass(frozen=True, kw_only=True)
class Survey:
    """A validated survey definition."""

    id: str
    title: str
    description: str = ""
    questions: tuple[Question, ...]
    format: str = FORMAT
    relay: Relay | None = None

    FIELDS: ClassVar[set[str]] = {"format", "id", "title", "description", "questions", "relay"}

    @classmethod
    def from_dict(cls, data: object, *, resolved: bool = False) -> Survey:
        """A validated survey; ``resolved=True`` (clients) also demands the resolved form.

        A signed definition is always resolved: re-resolving it changes nothing.  A
        client passes ``resolved=True`` so a /2 definition with a parameter missing
        is refused rather than filled in from this code's defaults.
        """
        _require_keys("survey", data, {"format", "id", "title", "questions"}, cls.FIELDS)
        assert isinstance(data, Mapping)
        format = data["format"]
        if format not in FORMATS:
            raise _fail("survey.format", f"must be one of {', '.join(FORMATS)}, got {format!r}",
                        "format")  # fmt: skip
        sid = _identifier("survey.id", data["id"])
        title = _text("survey.title", data["title"], MAX_LABEL)
        if resolved and data.get("description") == "":
            # Why: the canonical form omits an empty description, so one given as "" could not
            # be the signed bytes of any survey (docs/protocol.md §2.2).
            raise _fail("survey.description", "must be omitted rather than empty",
                        "description-empty")  # fmt: skip
        description = _text(
            "survey.description", data.get("description", ""), empty=True, newlines=True
        )
        raw = data["questions"]
        if not isinstance(raw, list):
            raise _fail("survey.questions", "must be a list of questions", "wrong-type")
        if not 1 <= len(raw) <= MAX_QUESTIONS:
            raise _fail("survey.questions", f"must be a list of 1 to {MAX_QUESTIONS} questions",
                        "questions-count")  # fmt: skip
        questions = tuple(
            Question.from_dict(q, f"survey.questions[{i}]", format) for i, q in enumerate(raw)
        )
        ids = [q.id for q in questions]
        if len(set(ids)) != len(ids):
            raise _fail(
                "survey.questions", "question ids must be distinct", "question-id-duplicate"
            )
        keys = [q.longitudinal.key for q in questions if q.longitudinal]
        if len(set(keys)) != len(keys):
            raise _fail("survey.questions", "longitudinal keys must be distinct",
                        "longitudinal-key-duplicate")  # fmt: skip
        relay = None
        if "relay" in data:
            if format != FORMAT:
                raise _fail("survey.relay", f"needs format {FORMAT}")
            relay = Relay.from_dict(data["relay"])
        survey = cls(
            id=sid, title=title, description=description, questions=questions, format=format,
            relay=relay,
        )
        if resolved and survey.canonical_bytes() != survey._canonical(data):
            raise _fail("survey", "definition is not in resolved form (a parameter is missing)",
                        "missing-member")  # fmt: skip
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
