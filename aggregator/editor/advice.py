"""The planner's advice beside a question's ε: its mechanism and the respondents it needs.

For a validated question, :func:`question_advice` gives the mechanism the question will
use and the respondents needed for an interval of ±5 and ±10 points (percentage points of
a share; for a number, of its range) at 95% confidence (β = 0.05), with the tightest
interval family of that mechanism (:func:`deniable.planner.best_respondents`, the planner
of ``deniable-aggregator plan``).  Through a relay the estimates are the same (shuffling
changes who sent a report, not the report), so the respondents needed are the same but
never fewer than one batch: nothing is published before ``min_batch`` reports are
forwarded; and the shuffled batch is also (ε_c, δ)-DP centrally for the ε_c of
:func:`deniable.shuffle.central_epsilon` (Feldman, McMillan & Talwar 2023, Thm 3.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deniable.errors import InvalidParameter
from deniable.mechanisms import display_name
from deniable.planner import best_respondents, plan
from deniable.shuffle import DEFAULT_DELTA, central_epsilon
from deniable.survey import Question, Relay

__all__ = ["HALF_WIDTHS", "Advice", "question_advice"]

# ±5 and ±10 points.
HALF_WIDTHS = (0.05, 0.10)
BETA = 0.05


@dataclass(frozen=True, kw_only=True)
class Advice:
    """What the planner says about one question at its ε (respondents: None = beyond reach)."""

    mechanism: str
    local: tuple[int | None, ...]
    relayed: tuple[int | None, ...] | None = None
    min_batch: int | None = None
    central_epsilon: float | None = None
    delta: float = DEFAULT_DELTA


def _planned(question: Question, half_width: float) -> int | None:
    kind, options = question.type, None
    if kind == "numeric":
        result = plan("numeric", epsilon=question.epsilon, half_width=half_width, lo=0.0, hi=1.0)
    else:
        if kind == "yes_no" and question.domain_size == 2:
            result = plan("yes_no", epsilon=question.epsilon, half_width=half_width)
        else:
            # A scale, or a question with non-response values: a single choice over its
            # whole domain (what its mechanism randomizes over).
            multiple = kind == "multiple_choice"
            options = len(question.options) if multiple else question.domain_size
            result = plan(
                "multiple_choice" if multiple else "single_choice",
                epsilon=question.epsilon,
                options=options,
                half_width=half_width,
            )
    mechanisms = {row.mechanism for row in result.rows}
    return best_respondents(
        result, question.mechanism if question.mechanism in mechanisms else None
    )


def question_advice(question: Question, relay: Relay | None) -> Advice | None:
    """The advice for ``question`` (None if the planner cannot plan it)."""
    try:
        local = tuple(_planned(question, h) for h in HALF_WIDTHS)
    except (InvalidParameter, ValueError, ArithmeticError):
        return None
    if relay is None:
        return Advice(mechanism=question.mechanism, local=local)
    try:
        central = central_epsilon(question.epsilon, relay.min_batch, DEFAULT_DELTA)
    except (InvalidParameter, ValueError, ArithmeticError):
        central = None
    return Advice(
        mechanism=question.mechanism,
        local=local,
        relayed=tuple(None if n is None else max(n, relay.min_batch) for n in local),
        min_batch=relay.min_batch,
        central_epsilon=central,
    )


def as_view(advice: Advice | None) -> dict[str, Any] | None:
    """The advice as a template shows it."""
    if advice is None:
        return None
    return {
        "mechanism": display_name(advice.mechanism),
        "local": advice.local,
        "relayed": advice.relayed,
        "min_batch": advice.min_batch,
        "central_epsilon": advice.central_epsilon,
        "delta": advice.delta,
    }
