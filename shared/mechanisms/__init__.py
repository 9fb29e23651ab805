"""Mechanisms: one module each, and the one registry, written out by hand.

A mechanism class owns all that it is: its wire name (``name``), its plain-words
``display_name``, its browser twin (``browser_module``), the parameters a signed
definition carries (``resolved_parameters``, ``adopt_probabilities``,
``constructor_keywords``), and what a crosstab needs (``report_scores``,
``score_line``).  Everything else (resolution, crosstabs, recommendation, the
dashboard, the respond page, the tests) asks the class found here; nothing
outside a mechanism's module branches on its name.

``CATEGORICAL`` holds the pure frequency oracles, ``NUMERIC`` the mechanisms for
a number in a range, ``SET_VALUED`` the mechanisms for a set of options;
``MECHANISMS`` is all three, by wire name.  Two question forms build another
class than the one named: a multiple-choice ``binary_rr`` asks every option
(``PER_OPTION``), and a longitudinal question memoizes (``LONGITUDINAL``).
:func:`mechanism_class` applies the tables to a question's type and mechanism.
A new mechanism is one line here (docs/design.md, "Adding a mechanism").
client/browser/survey.js mirrors these tables (its ORACLES).
"""

from __future__ import annotations

from .base import FrequencyOracle, Mechanism, NumericMechanism
from .binary_rr import BinaryRR
from .discrete_laplace import DiscreteLaplace
from .duchi import Duchi
from .duchi_status import DuchiStatus
from .grr import GRR
from .hadamard import HRR
from .local_hashing import OLH
from .longitudinal import LongitudinalGRR
from .option_sampling import OptionSampling
from .optionwise import OptionwiseRR
from .recommend import Recommendation, recommend
from .subset import SubsetSelection
from .unary import OUE, SUE

CATEGORICAL: dict[str, type[FrequencyOracle]] = {
    BinaryRR.name: BinaryRR,
    GRR.name: GRR,
    SUE.name: SUE,
    OUE.name: OUE,
    OLH.name: OLH,
    HRR.name: HRR,
    SubsetSelection.name: SubsetSelection,
}

NUMERIC: dict[str, type[NumericMechanism]] = {
    Duchi.name: Duchi,
    DiscreteLaplace.name: DiscreteLaplace,
}

SET_VALUED: dict[str, type[Mechanism]] = {
    OptionSampling.name: OptionSampling,
}

MECHANISMS: dict[str, type[Mechanism]] = {**CATEGORICAL, **NUMERIC, **SET_VALUED}

# Multiple choice by one binary randomized response per option (at ε / options).
PER_OPTION: dict[str, type[Mechanism]] = {OptionwiseRR.name: OptionwiseRR}

# A longitudinal (memoized) question: RAPPOR's two layers over the named oracle.
LONGITUDINAL: dict[str, type[FrequencyOracle]] = {
    BinaryRR.name: LongitudinalGRR,
    GRR.name: LongitudinalGRR,
}

# The mechanisms each question type may name, in table order.
QUESTION_MECHANISMS: dict[str, dict[str, type[Mechanism]]] = {
    "yes_no": CATEGORICAL,
    "single_choice": CATEGORICAL,
    "multiple_choice": {**PER_OPTION, **SET_VALUED},
    "numeric": NUMERIC,
}
# A scale (docs/protocol.md §5.6) is an ordered single choice: it names what single choice may.
ALIASES: dict[str, str] = {"scale": "single_choice"}

# A question's mechanism when its definition names none (single and multiple choice: the
# recommendation, deniable.mechanisms.recommend).
DEFAULTS: dict[str, str] = {"yes_no": BinaryRR.name, "numeric": Duchi.name}

# A question with non-response values (docs/protocol.md §5.5): yes/no then defaults to GRR
# (binary RR has no room for them), and a numeric one builds Duchi's sign with a GRR status.
EXTRAS_DEFAULTS: dict[str, str] = {"yes_no": GRR.name}
NUMERIC_WITH_EXTRAS: dict[str, type[Mechanism]] = {Duchi.name: DuchiStatus}

# Every class a question may build: the browser modules a page may need come from these.
CLASSES: tuple[type[Mechanism], ...] = (
    *MECHANISMS.values(),
    *PER_OPTION.values(),
    *dict.fromkeys(LONGITUDINAL.values()),
)


def mechanism_class(
    question_type: str, mechanism: str, *, longitudinal: bool = False
) -> type[Mechanism] | None:
    """The class a question of ``question_type`` naming ``mechanism`` builds, or None if the
    mechanism does not fit the type (or cannot be longitudinal)."""
    question_type = ALIASES.get(question_type, question_type)
    fitting = QUESTION_MECHANISMS.get(question_type, {})
    if mechanism not in fitting:
        return None
    if longitudinal:
        return LONGITUDINAL.get(mechanism) if question_type != "multiple_choice" else None
    return fitting[mechanism]


def display_name(mechanism: str) -> str:
    """The plain words for a wire name (the wire name itself if no mechanism has it)."""
    cls = MECHANISMS.get(mechanism)
    return cls.display_name if cls is not None else mechanism


__all__ = [
    "ALIASES",
    "CATEGORICAL",
    "CLASSES",
    "DEFAULTS",
    "EXTRAS_DEFAULTS",
    "GRR",
    "HRR",
    "LONGITUDINAL",
    "MECHANISMS",
    "NUMERIC",
    "NUMERIC_WITH_EXTRAS",
    "OLH",
    "OUE",
    "PER_OPTION",
    "QUESTION_MECHANISMS",
    "SET_VALUED",
    "SUE",
    "BinaryRR",
    "DiscreteLaplace",
    "Duchi",
    "DuchiStatus",
    "FrequencyOracle",
    "LongitudinalGRR",
    "Mechanism",
    "NumericMechanism",
    "OptionSampling",
    "OptionwiseRR",
    "Recommendation",
    "SubsetSelection",
    "display_name",
    "mechanism_class",
    "recommend",
]
