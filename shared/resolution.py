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

``resolved_parameters`` is the one table; the names are the protocol's:

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
from .randomness import RESOLUTION

# Keywords a /2 definition may pass to a mechanism's constructor; every other
# resolved parameter is derived and must equal what the mechanism derives.
CONSTRUCTOR_KEYWORDS: dict[str, tuple[str, ...]] = {
    "olh": ("hash_range",),
    "subset": ("subset_size",),
    "discrete_laplace": ("grid_size",),
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


def threshold_of(probability: float) -> int:
    """The integer threshold behind a realised probability ``threshold / 2**53`` (exact)."""
    value = probability * RESOLUTION
    if value != int(value):  # pragma: no cover - a mechanism not built on thresholds
        raise InvalidParameter(f"probability {probability!r} is not a multiple of 2**-53")
    return int(value)


def resolved_parameters(oracle: Any) -> dict[str, Any]:
    """The signed parameters of a question's mechanism (see the module table)."""
    name = oracle.name
    if hasattr(oracle, "option_oracle"):  # multiple choice: binary RR per option
        option = oracle.option_oracle
        return {"option_epsilon": option.epsilon, "keep": threshold_of(option.p_star)}
    if hasattr(oracle, "instantaneous_epsilon"):  # longitudinal GRR: two layers
        return {
            "keep": oracle._keep,
            "instantaneous_keep": threshold_of(oracle._instantaneous.p_star),
        }
    if name == "option_sampling":  # multiple choice at the full ε, one option per report
        return {"keep": threshold_of(oracle.keep_probability)}
    if name in ("binary_rr", "grr"):
        return {"keep": threshold_of(oracle.p_star)}
    if name in ("sue", "oue"):
        return {
            "one_if_true": threshold_of(oracle.p_star),
            "one_if_other": threshold_of(oracle.q_star),
        }
    if name == "olh":
        return {"hash_range": oracle.hash_range, "keep": threshold_of(oracle.p_star)}
    if name == "hrr":
        return {"order": oracle.order, "keep": threshold_of(oracle.p_star)}
    if name == "subset":
        return {"subset_size": oracle.subset_size, "keep": threshold_of(oracle.p_star)}
    if name == "duchi":
        return {"low": oracle._low, "high": oracle._high, "slope": oracle._slope}
    if name == "discrete_laplace":
        return {"grid_size": oracle.grid_size}
    raise InvalidParameter(f"no resolved parameters defined for mechanism {name!r}")


def check_resolved(oracle: Any, given: dict[str, Any]) -> None:
    """InvalidParameter unless every given parameter equals the resolved one.

    Missing derived parameters are allowed here (an operator may omit them when
    creating a survey; the aggregator fills them in).  Clients verify the signed
    definition, which always carries them all.
    """
    resolved = resolved_parameters(oracle)
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


def adopt_probabilities(oracle: Any, signed: dict[str, Any]) -> None:
    """Set the signed thresholds (and Duchi's slope) on a freshly built mechanism.

    The mechanism was built from ε; the signed values replace what it derived, so the device
    randomizes and the aggregator estimates with exactly the signed probabilities (p*, q*,
    ``epsilon_implemented`` all read them).  Only keys of :data:`PROBABILITY_KEYS`.
    """
    given = {key: value for key, value in signed.items() if key in PROBABILITY_KEYS}
    if not given:
        return
    allowed = resolved_parameters(oracle).keys()
    for key in given:
        if key not in allowed:
            raise InvalidParameter(f"unknown parameter {key!r} for {oracle.name}")
    values = {k: v if k == "slope" else _threshold(k, v) for k, v in given.items()}
    target = oracle.option_oracle if hasattr(oracle, "option_oracle") else oracle
    if "instantaneous_keep" in values:
        oracle._instantaneous._set("_keep", values["instantaneous_keep"])
    if oracle.name == "duchi":
        low = values.get("low", oracle._low)
        high = values.get("high", oracle._high)
        slope = values.get("slope", oracle._slope)
        if high != RESOLUTION - low or not low < high:
            raise InvalidParameter("duchi thresholds must satisfy high = 2**53 - low > low")
        if isinstance(slope, bool) or type(slope) not in (int, float) or not 0 < slope <= 0.5:
            raise InvalidParameter(f"duchi slope must be a number in (0, 0.5], got {slope!r}")
        if slope != oracle._slope:
            # E[sign] = 2 t slope, so the unbiased report magnitude is 1/(2 slope).
            oracle._set("_bound", 1 / (2 * slope))
        oracle._set("_low", low)
        oracle._set("_high", high)
        oracle._set("_slope", float(slope))
    elif "one_if_true" in values or "one_if_other" in values:
        from .mechanisms.unary import _top_byte_table

        for key in ("one_if_true", "one_if_other"):
            if key in values:
                oracle._set(f"_{key}", values[key])
                oracle._set(
                    "_true_table" if key == "one_if_true" else "_other_table",
                    _top_byte_table(values[key]),
                )
    elif "keep" in values:
        target._set("_keep", values["keep"])


def implied_epsilons(oracle: Any) -> list[tuple[str, float, float]]:
    """(name, implied ε, declared ε) for every layer of a mechanism's signed probabilities."""
    if hasattr(oracle, "option_oracle"):
        option = oracle.option_oracle
        return [("epsilon", option.epsilon_implemented * oracle.options, oracle.epsilon)]
    layers = [("epsilon", oracle.epsilon_implemented, oracle.epsilon)]
    if hasattr(oracle, "instantaneous_epsilon"):
        instantaneous = oracle._instantaneous
        layers.append(
            (
                "instantaneous_epsilon",
                instantaneous.epsilon_implemented,
                oracle.instantaneous_epsilon,
            )
        )
    return layers
