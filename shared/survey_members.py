"""A question's structural members: options, the longitudinal member, the default mechanism.

Split from :mod:`deniable.survey` (which re-exports these names), each check raising
:class:`~deniable.errors.InvalidSurvey` with its reason code (docs/protocol.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameter
from .mechanisms import DEFAULTS, EXTRAS_DEFAULTS, mechanism_class, recommend
from .parameters import check_epsilon
from .survey_checks import (
    MAX_LABEL,
    check_identifier,
    check_text,
    fail,
    require_keys,
    wrap_parameter,
)

__all__ = [
    "MAX_MULTIPLE_OPTIONS",
    "MAX_OPTIONS",
    "Longitudinal",
    "check_longitudinal",
    "check_options",
    "default_mechanism",
]

MAX_OPTIONS = 1024
MAX_MULTIPLE_OPTIONS = 64


@dataclass(frozen=True, kw_only=True)
class Longitudinal:
    """A memoized question: ``key`` names it across surveys; two ε layers."""

    key: str
    instantaneous_epsilon: float

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "instantaneous_epsilon": self.instantaneous_epsilon}


def check_options(where: str, options: object, kind: str) -> tuple[str, ...]:
    limit = MAX_MULTIPLE_OPTIONS if kind == "multiple_choice" else MAX_OPTIONS
    if not isinstance(options, list):
        raise fail(f"{where}.options", "must be a list of labels", "wrong-type")
    if not 2 <= len(options) <= limit:
        raise fail(f"{where}.options", f"must be a list of 2 to {limit} labels", "options-count")
    labels = tuple(check_text(f"{where}.options", o, MAX_LABEL) for o in options)
    if len(set(labels)) != len(labels):
        raise fail(f"{where}.options", "labels must be distinct", "options-duplicate")
    return labels


def default_mechanism(kind: str, size: int, epsilon: float) -> str:
    """The mechanism when none is named; ``size`` counts the values with the extras."""
    if kind in EXTRAS_DEFAULTS and size > 2:
        return EXTRAS_DEFAULTS[kind]  # binary RR has no room for non-response values
    if kind in DEFAULTS:
        return DEFAULTS[kind]
    multiple = kind == "multiple_choice"
    return recommend(domain_size=size, epsilon=epsilon, multiple=multiple).mechanism


def check_longitudinal(where: str, data: object, kind: str, mechanism: str) -> Longitudinal | None:
    if data is None:
        return None
    if mechanism_class(kind, mechanism, longitudinal=True) is None:
        raise fail(
            f"{where}.longitudinal",
            "only yes_no and single_choice questions with grr or binary_rr can be longitudinal",
            "mechanism",
        )
    require_keys(
        f"{where}.longitudinal",
        data,
        {"key", "instantaneous_epsilon"},
        {"key", "instantaneous_epsilon"},
    )
    try:
        instantaneous = check_epsilon(data["instantaneous_epsilon"], "instantaneous_epsilon")
    except InvalidParameter as error:
        raise wrap_parameter(where, error) from None
    return Longitudinal(
        key=check_identifier(f"{where}.longitudinal.key", data["key"]),
        instantaneous_epsilon=instantaneous,
    )
