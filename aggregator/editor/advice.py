"""The planner's advice beside a question's ε: its mechanism and the respondents it needs.

For a validated question, :func:`question_advice` gives the mechanism the question will
use and the respondents needed for an interval of ±5 and ±10 points (percentage points of
a share; for a number, of its range) at 95% confidence (β = 0.05), computed by
:func:`..advice.respondents_needed`, the function ``create-survey --dry-run`` uses: for
option sampling past :data:`SAMPLED_SEARCH_MAX_N` respondents the exact-tail search is left
out and the figure is marked as an upper bound.  Each figure is shown with the interval
family it assumes: the two of one question may differ (an exact tail searched for ±10 points
but not for ±5), and their ratio is then not the 4 that halving the width alone would give.
Through a relay the estimates are the same (shuffling changes who sent a report, not the
report), so the respondents needed are the same but never fewer than one batch: nothing is
published before ``min_batch`` reports are forwarded; and the shuffled batch is also
(ε_c, δ)-DP centrally for the ε_c of :func:`deniable.shuffle.central_epsilon` (Feldman,
McMillan & Talwar 2023, Thm 3.2).

With relay noise the batch's central ε is the better of that bound and the dummies' own
(:func:`deniable.dummies.noised_central_epsilon`; Murakami, Sei & Eriguchi, arXiv
2504.07362), and the dummies widen the published interval: the respondents needed then are
those of :func:`deniable.relay_noise_plan.noised_respondents` for the question's mechanism
at its ε and the signed law, in batches of ``min_batch`` (every n from there on).  That
search takes up to seconds for a question of tens of answer values, so it runs on a worker
thread (:func:`noised_figures`): a page waits at most :data:`NOISE_WAIT_SECONDS`, says the
figures are being worked out otherwise, and each result is kept; a mechanism of more than
:data:`NOISE_MAX_OUTPUT_VALUES` report values is not planned on a page at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deniable.dummies import noised_central_epsilon
from deniable.errors import InvalidParameter
from deniable.mechanisms import display_name
from deniable.shuffle import DEFAULT_DELTA, central_epsilon
from deniable.survey import Question, Relay

# the figures create-survey --dry-run prints, by the same function
from ..advice import BETA, HALF_WIDTHS, planner_question, respondents_needed
from ..background import BackgroundResults

__all__ = ["FAMILY_WORDS", "Advice", "as_view", "noised_figures", "question_advice"]

# The interval family a figure assumes, as the advice names it beside the figure.
FAMILY_WORDS = {
    "chebyshev": "Chebyshev interval",
    "chebyshev_exact": "exact-variance Chebyshev interval",
    "bernstein": "Bernstein interval",
    "exact_tail": "exact-tail interval",
}

# Why: the exact-tail n of a sampled mechanism (option sampling) is searched, and the
# search takes seconds past a few thousand respondents, too slow for a page; beyond this
# many the advice gives the closed-form families' n, marked as an upper bound.
SAMPLED_SEARCH_MAX_N = 2_000
# Longest a page waits for the relay-noise figures (the search goes on in the background).
NOISE_WAIT_SECONDS = 1.0
# Most report values a noised question's mechanism may have to be planned on a page: the
# search convolves the dummies' law per value (about 10 s of a core for 40 options).
NOISE_MAX_OUTPUT_VALUES = 48
# Most searches waiting at once (more: "being worked out" until one is done).
NOISE_MAX_PENDING = 8

_noised = BackgroundResults(
    name="deniable-noise-advice", workers=1, capacity=512, max_pending=NOISE_MAX_PENDING
)


@dataclass(frozen=True, kw_only=True)
class Advice:
    """What the planner says about one question at its ε (respondents: None = beyond reach)."""

    mechanism: str
    local: tuple[int | None, ...]
    upper: tuple[bool, ...] = ()  # per figure: an upper bound only (SAMPLED_SEARCH_MAX_N)
    families: tuple[str | None, ...] = ()  # per figure: the interval family it assumes
    relayed: tuple[int | None, ...] | None = None
    min_batch: int | None = None
    central_epsilon: float | None = None
    delta: float = DEFAULT_DELTA
    # With relay noise: the batch's central ε at the noise's δ, and the dummies per value.
    noised_central_epsilon: float | None = None
    noise_delta: float | None = None
    dummies: float | None = None
    # With relay noise: the respondents needed with the dummies (noised_figures), or why not:
    # "ready", "pending" (being worked out), "unsupported" or "too-large".
    noised: tuple[int | None, ...] | None = None
    noised_state: str | None = None


def _planned(question: Question) -> tuple[tuple[int | None, bool, str | None], ...]:
    """Per half-width of :data:`HALF_WIDTHS`, (respondents, upper bound only, family)."""
    return tuple(
        respondents_needed(question, half_width, search_max_n=SAMPLED_SEARCH_MAX_N)
        for half_width in HALF_WIDTHS
    )


def _noised_search(mechanism: Any, law: Any, batch: int) -> tuple[int | None, ...]:
    """Respondents per half-width with the dummies (None each where the search fails)."""
    from deniable.relay_noise_plan import noised_respondents

    try:
        return tuple(
            noised_respondents(mechanism, law, batch=batch, half_width=half_width, beta=BETA)[0]
            for half_width in HALF_WIDTHS
        )
    except (InvalidParameter, ValueError, ArithmeticError):
        return (None,) * len(HALF_WIDTHS)


def noised_figures(question: Question, relay: Relay) -> tuple[str, tuple[int | None, ...] | None]:
    """(state, respondents per half-width) with the signed relay noise: ``("ready",
    figures)``, ``("pending", None)`` while the search runs (at most
    :data:`NOISE_WAIT_SECONDS` waited for), ``("unsupported", None)`` for a mechanism that
    cannot carry relay noise, ``("too-large", None)`` past :data:`NOISE_MAX_OUTPUT_VALUES`."""
    from deniable.relay_noise_plan import noise_mechanism

    assert relay.noise is not None
    kind, options = planner_question(question)
    try:
        mechanism = noise_mechanism(
            kind, question.mechanism, epsilon=question.epsilon, options=options
        )
    except (InvalidParameter, ValueError):
        return "unsupported", None
    outputs = mechanism.output_reports()
    if outputs is None:
        return "unsupported", None
    if len(outputs) > NOISE_MAX_OUTPUT_VALUES:
        return "too-large", None
    law = relay.noise.law
    key = (
        kind,
        options,
        question.mechanism,
        question.epsilon,
        repr(law.to_dict()),
        relay.min_batch,
    )
    ready, figures = _noised.get(
        key, _noised_search, mechanism, law, relay.min_batch, wait=NOISE_WAIT_SECONDS
    )
    return ("ready", figures) if ready else ("pending", None)


def question_advice(question: Question, relay: Relay | None) -> Advice | None:
    """The advice for ``question`` (None if the planner cannot plan it)."""
    try:
        planned = _planned(question)
    except (InvalidParameter, ValueError, ArithmeticError):
        return None
    local = tuple(n for n, _, _ in planned)
    upper = tuple(bound for _, bound, _ in planned)
    families = tuple(family for _, _, family in planned)
    if relay is None:
        return Advice(mechanism=question.mechanism, local=local, upper=upper, families=families)
    try:
        central = central_epsilon(question.epsilon, relay.min_batch, DEFAULT_DELTA)
    except (InvalidParameter, ValueError, ArithmeticError):
        central = None
    noised = noise_delta = dummies = noised_needed = noised_state = None
    if relay.noise is not None:
        noised_state, noised_needed = noised_figures(question, relay)
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
        families=families,
        noised_central_epsilon=noised,
        noise_delta=noise_delta,
        dummies=dummies,
        relayed=tuple(None if n is None else max(n, relay.min_batch) for n in local),
        min_batch=relay.min_batch,
        central_epsilon=central,
        noised=noised_needed,
        noised_state=noised_state,
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

    families = advice.families or (None,) * len(advice.local)
    return {
        "mechanism": display_name(advice.mechanism),
        "local": words(advice.local),
        # Per figure, the interval it assumes (a question's two may differ: say which).
        "families": [FAMILY_WORDS.get(f, "") if f else "" for f in families],
        "one_family": len(set(families)) == 1,
        "relayed": None if advice.relayed is None else words(advice.relayed),
        "min_batch": advice.min_batch,
        "central_epsilon": advice.central_epsilon,
        "delta": advice.delta,
        "noised_central_epsilon": advice.noised_central_epsilon,
        "noise_delta": advice.noise_delta,
        "dummies": advice.dummies,
        "noised": None
        if advice.noised is None
        else ["beyond reach" if n is None else f"{n:,}" for n in advice.noised],
        "noised_state": advice.noised_state,
    }
