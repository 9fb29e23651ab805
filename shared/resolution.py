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

__all__ = ["CONSTRUCTOR_KEYWORDS", "check_resolved", "resolved_parameters", "threshold_of"]


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
            "keep": threshold_of(oracle.permanent.p_star),
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
