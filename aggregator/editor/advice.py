"""The planner's advice beside a question's ε: its mechanism and the respondents it needs.

For a validated question, :func:`question_advice` gives the mechanism the question will
use and the respondents needed for an interval of ±5 and ±10 points (percentage points of
a share; for a number, of its range) at 95% confidence (β = 0.05), with the tightest
interval family of that mechanism, as ``deniable-aggregator plan`` finds it
(:func:`deniable.planner.respondents_for`); for option sampling past
:data:`SAMPLED_SEARCH_MAX_N` respondents the exact-tail search is left out and the figure
is marked as an upper bound.  Through a relay the estimates are the same (shuffling
changes who sent a report, not the report), so the respondents needed are the same but
never fewer than one batch: nothing is published before ``min_batch`` reports are
forwarded; and the shuffled batch is also (ε_c, δ)-DP centrally for the ε_c of
:func:`deniable.shuffle.central_epsilon` (Feldman, McMillan & Talwar 2023, Thm 3.2).
With relay noise the batch's central ε is the better of that bound and the dummies' own
(:func:`deniable.dummies.noised_central_epsilon`; Murakami, Sei & Eriguchi, arXiv
2504.07362); the respondents the dummies' extra variance calls for are not planned here
yet (the page says so where they will go).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deniable.dummies import noised_central_epsilon
from deniable.errors import InvalidParameter
from deniable.estimation import EXACT_TAIL, FAMILIES, available_families, score_model
from deniable.mechanisms import display_name
from deniable.planner import respondents_for, targets
from deniable.shuffle import DEFAULT_DELTA, central_epsilon
from deniable.survey import Question, Relay

from ..advice import BETA, HALF_WIDTHS  # the figures create-survey --dry-run prints

__all__ = ["Advice", "as_view", "question_advice"]

# Why: the exact-tail n of a sampled mechanism (option sampling) is searched, and the
# search takes seconds past a few thousand respondents, too slow for a page; beyond this
# many the advice gives the closed-form families' n, marked as an upper bound.
SAMPLED_SEARCH_MAX_N = 2_000


@dataclass(frozen=True, kw_only=True)
class Advice:
    """What the planner says about one question at its ε (respondents: None = beyond reach)."""

    mechanism: str
    local: tuple[int | None, ...]
    upper: tuple[bool, ...] = ()  # per figure: an upper bound only (SAMPLED_SEARCH_MAX_N)
    relayed: tuple[int | None, ...] | None = None
    min_batch: int | None = None
    central_epsilon: float | None = None
    delta: float = DEFAULT_DELTA
    # With relay noise: the batch's central ε at the noise's δ, and the dummies per value.
    noised_central_epsilon: float | None = None
    noise_delta: float | None = None
    dummies: float | None = None


def _target_of(question: Question) -> tuple[str, int | None]:
    """The planner's question type and number of categories for ``question``."""
    if question.type == "numeric":
        return "numeric", None
    if question.type == "multiple_choice":
        return "multiple_choice", len(question.options)
    if question.type == "yes_no" and question.domain_size == 2:
        return "yes_no", None
    # A scale, or a question with non-response values: a single choice over its whole
    # domain (what its mechanism randomizes over).
    return "single_choice", question.domain_size


def _needed(target: Any, half_width: float) -> tuple[int | None, bool]:
    """(n, whether it is an upper bound only) for one target and half-width.

    The figures of :func:`..advice.question_advice` (``create-survey --dry-run``), except
    that a page cannot wait for option sampling's exact-tail search (seconds per question)."""
    model = score_model(target.oracle)
    closed = [
        respondents_for(target, family, half_width, BETA)
        for family in FAMILIES
        if family in available_families(model)
    ]
    closed = [n for n in closed if n is not None]
    best = min(closed) if closed else None
    if model.tail is None:
        return best, False
    if model.tail[0] != "pure" and (best is None or best > SAMPLED_SEARCH_MAX_N):
        return best, best is not None
    exact = respondents_for(target, EXACT_TAIL, half_width, BETA)
    return (best, False) if exact is None else (min(exact, best or exact), False)


def _planned(question: Question) -> tuple[tuple[int | None, bool], ...]:
    """Per half-width of :data:`HALF_WIDTHS`, (respondents, upper bound only): the question's
    mechanism (the best candidate if the planner has no model of it) with its tightest
    interval family, as ``deniable-aggregator plan`` finds it."""
    kind, options = _target_of(question)
    candidates = targets(kind, epsilon=question.epsilon, options=options, lo=0.0, hi=1.0)
    mine = [t for t in candidates if t.mechanism == question.mechanism] or candidates
    result = []
    for half_width in HALF_WIDTHS:
        found = [_needed(target, half_width) for target in mine]
        found = [f for f in found if f[0] is not None]
        result.append(min(found) if found else (None, False))
    return tuple(result)


def question_advice(question: Question, relay: Relay | None) -> Advice | None:
    """The advice for ``question`` (None if the planner cannot plan it)."""
    try:
        planned = _planned(question)
    except (InvalidParameter, ValueError, ArithmeticError):
        return None
    local = tuple(n for n, _ in planned)
    upper = tuple(bound for _, bound in planned)
    if relay is None:
        return Advice(mechanism=question.mechanism, local=local, upper=upper)
    try:
        central = central_epsilon(question.epsilon, relay.min_batch, DEFAULT_DELTA)
    except (InvalidParameter, ValueError, ArithmeticError):
        central = None
    noised = noise_delta = dummies = None
    if relay.noise is not None:
        noise_delta, dummies = relay.noise.delta, relay.noise.law.mean
        try:
            noised = noised_central_epsilon(
                relay.noise.law, question.epsilon, relay.min_batch, noise_delta
            )
        except (InvalidParameter, ValueError, ArithmeticError):
            noised = None
    return Advice(
        mechanism=question.mechanism,
        local=local,
        upper=upper,
        noised_central_epsilon=noised,
        noise_delta=noise_delta,
        dummies=dummies,
        relayed=tuple(None if n is None else max(n, relay.min_batch) for n in local),
        min_batch=relay.min_batch,
        central_epsilon=central,
    )


def as_view(advice: Advice | None) -> dict[str, Any] | None:
    """The advice as a template shows it."""
    if advice is None:
        return None

    def words(figures: tuple[int | None, ...]) -> list[str]:
        return [
            "beyond reach" if n is None else f"at most {n:,}" if bound else f"{n:,}"
            for n, bound in zip(figures, advice.upper or (False,) * len(figures), strict=True)
        ]

    return {
        "mechanism": display_name(advice.mechanism),
        "local": words(advice.local),
        "relayed": None if advice.relayed is None else words(advice.relayed),
        "min_batch": advice.min_batch,
        "central_epsilon": advice.central_epsilon,
        "delta": advice.delta,
        "noised_central_epsilon": advice.noised_central_epsilon,
        "noise_delta": advice.noise_delta,
        "dummies": advice.dummies,
    }
