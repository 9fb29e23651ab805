"""Resolved mechanism parameters: what a ``deniable.survey/2`` definition signs per question.

A /1 definition left defaults to the code (OLH's g, the subset size k, HRR's
K, the discrete-Laplace grid, ε / m per multiple-choice option), so every
client needed the same table of defaults and the same ``exp``.  A /2
definition carries each question's parameters *resolved*: the structural
integers (g, k, K, G) and every probability as the integer threshold out of
2**53 that the randomizer compares a uniform 53-bit draw with (see
:mod:`deniable.randomness`).  A client in any language then randomizes from
signed integers alone; it never evaluates ``exp`` and needs no defaults.  It
recomputes the ε those thresholds imply and refuses a survey that implies
more than it declares (docs/protocol.md §4).

Each mechanism class says its own (``Mechanism.resolved_parameters``,
``adopt_probabilities``, ``constructor_keywords``); this module checks them,
one rule for every mechanism.  The names are the protocol's:

| mechanism | parameters |
|---|---|
| binary_rr, grr | keep |
| sue, oue | one_if_true, one_if_other |
| olh | hash_range, keep |
| hrr | order, keep |
| subset | subset_size, keep |
| duchi | low, high, slope |
| discrete_laplace | grid_size |
| multiple choice (binary_rr per option) | option_epsilon, keep |
| multiple choice (option_sampling) | keep |
| longitudinal (grr, binary_rr) | keep, instantaneous_keep |
"""

from __future__ import annotations

from typing import Any

from .errors import InvalidParameter
from .mechanisms import MECHANISMS
from .mechanisms.base import Mechanism, threshold_of
from .randomness import RESOLUTION

# Keywords a /2 definition may pass to a mechanism's constructor; every other resolved
# parameter is derived and must equal what the mechanism derives.  From the classes.
CONSTRUCTOR_KEYWORDS: dict[str, tuple[str, ...]] = {
    name: cls.constructor_keywords for name, cls in MECHANISMS.items() if cls.constructor_keywords
}

# Resolved parameters that set probabilities: the signed value is used as signed, whatever
# this code would derive, as long as the ε it implies is within the declared one (one rule for
# both clients and the aggregator: docs/protocol.md §2.3).  Every other resolved parameter is
# structural and must equal what the mechanism derives.
PROBABILITY_KEYS = frozenset(
    {"keep", "one_if_true", "one_if_other", "instantaneous_keep", "low", "high", "slope"}
)
# Integer-valued resolved parameters: a JSON number's value counts, not its spelling (5.0 is 5).
INTEGER_KEYS = frozenset(
    {
        "keep",
        "one_if_true",
        "one_if_other",
        "instantaneous_keep",
        "low",
        "high",
        "hash_range",
        "order",
        "subset_size",
        "grid_size",
    }
)

__all__ = [
    "CONSTRUCTOR_KEYWORDS",
    "INTEGER_KEYS",
    "PROBABILITY_KEYS",
    "adopt_probabilities",
    "check_resolved",
    "implied_epsilons",
    "resolved_parameters",
    "threshold_of",
]


def resolved_parameters(oracle: Mechanism) -> dict[str, Any]:
    """The signed parameters of a question's mechanism (see the module table)."""
    return oracle.resolved_parameters()


def check_resolved(oracle: Mechanism, given: dict[str, Any]) -> None:
    """InvalidParameter unless every given parameter equals the resolved one.

    Missing derived parameters are allowed here (an operator may omit them when
    creating a survey; the aggregator fills them in).  Clients verify the signed
    definition, which always carries them all.
    """
    resolved = oracle.resolved_parameters()
    for key, value in given.items():
        if key not in resolved:
            raise InvalidParameter(f"unknown parameter {key!r} for {oracle.name}")
        expected = resolved[key]
        if isinstance(value, bool) or type(value) not in (int, float) or value != expected:
            raise InvalidParameter(
                f"parameter {key!r} must be {expected!r} for these settings, got {value!r}"
            )


def _threshold(key: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < RESOLUTION:
        raise InvalidParameter(f"{key} must be an integer in [1, 2**53 - 1], got {value!r}")
    return value


def adopt_probabilities(oracle: Mechanism, signed: dict[str, Any]) -> None:
    """Set the signed thresholds (and Duchi's slope) on a freshly built mechanism.

    The mechanism was built from ε; the signed values replace what it derived, so the device
    randomizes and the aggregator estimates with exactly the signed probabilities (p*, q*,
    ``epsilon_implemented`` all read them).  Only keys of :data:`PROBABILITY_KEYS`, each among
    the mechanism's resolved parameters; every threshold an integer in [1, 2**53 - 1].
    """
    given = {key: value for key, value in signed.items() if key in PROBABILITY_KEYS}
    if not given:
        return
    allowed = oracle.resolved_parameters().keys()
    for key in given:
        if key not in allowed:
            raise InvalidParameter(f"unknown parameter {key!r} for {oracle.name}")
    oracle.adopt_probabilities(
        {k: v if k == "slope" else _threshold(k, v) for k, v in given.items()}
    )


def implied_epsilons(oracle: Mechanism) -> list[tuple[str, float, float]]:
    """(name, implied ε, declared ε) for every layer of a mechanism's signed probabilities."""
    return oracle.implied_epsilons()
