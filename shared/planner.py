"""Accuracy planner: respondents n <-> expected interval half-width, per mechanism and family.

For a question (type, number of options, ε) and a failure probability β, every
candidate mechanism is described by its per-category :class:`ScoreModel`
(``deniable.estimation``) and evaluated at a reference truth, the uniform
distribution (the rule ``recommend()`` uses): share 1/d for single choice,
1/2 for yes/no and for each option of a multiple-choice question (every set
equally likely), the middle of the range for a number.

*Expected half-width* of a family at n: half the length of its interval when
the estimate equals the reference truth, before intersecting with the range.
For the worst-case Chebyshev interval this is exactly its (fixed) half-width;
for the inverted families it is the typical width, which simulated half-widths
match to within a few percent once n is large enough that the interval is not
cut at 0 or 1.  The simultaneous columns cover all d categories at once (β/d
each).  Given a target half-width, the planner returns the smallest n whose
expected half-width is at most the target.

Every row also carries ``recommend()``'s two figures: the expected squared
error summed over categories at the uniform distribution and the worst-case
one, per respondent (divide by n).

The exact-tail family (``deniable.exact_tail``) is planned the same way: its
interval at the count the reference truth gives in expectation (for option
sampling: n/m reports of the option, half of them "yes").  It is computed,
not a formula, so the n for a half-width is searched to within 1% and only
up to ``EXACT_PLANNING_MAX_N`` respondents (beyond, its row says "-").

Optional and conditional questions (docs/protocol.md §5.5): every respondent sends a report,
but only the share s who answered (``applicable_share``) carries signal.  A share among those
who answered is f/s with f a frequency over all n reports, so its half-width is the
frequency's divided by s: to first order (the denominator's own error left out) the n for a
half-width h is the n for h·s, about 1/s² as many respondents, not 1/s.  Plan the question
with its extras counted in ``options`` when the domain grows.

A scale (5, 7 or 11 points, ``options``) is planned as a single choice of its points: the
shares of its points.  Its mean's interval is not planned here.

Crosstab cells are planned in :mod:`deniable.crosstab_plan`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from . import exact_tail, shuffle
from .errors import InvalidParameter
from .estimation import (
    EXACT_TAIL,
    FAMILIES,
    available_families,
    chebyshev_half_width,
    check_beta,
    family_interval,
    score_model,
    smallest_passing,
)
from .mechanisms import CATEGORICAL, DEFAULTS, NUMERIC, mechanism_class, recommend
from .parameters import check_domain_size, check_epsilon, check_int, check_range, check_real
from .questionnaire import SCALE_POINTS

__all__ = [
    "DEFAULT_RELAY_DELTA",
    "DEFAULT_RELAY_HALF_WIDTH",
    "MAX_RESPONDENTS",
    "Plan",
    "QUESTION_TYPES",
    "RelayPlan",
    "best_respondents",
    "expected_half_width",
    "format_number",
    "plan",
    "relay_plan",
    "relayed_local_epsilon",
    "respondents_for",
    "smallest_relayed_batch",
    "targets",
]

QUESTION_TYPES = ("yes_no", "single_choice", "multiple_choice", "numeric", "scale")
# The types whose ``options`` is a count: a scale's is its number of points.
COUNTED = ("single_choice", "multiple_choice", "scale")
MAX_RESPONDENTS = 10**12
# The exact tail's n is searched up to this many respondents (its widths are computed).
EXACT_PLANNING_MAX_N = 20_000
# A numeric range's ends: the variances square it, which overflows floating point past
# about 1e154 (OverflowError, not an answer); far beyond any real survey's answers.
MAX_MAGNITUDE = 1e150
# The smallest β planned: 1/sqrt(β) times such a range overflows past about 1e-16.
MIN_BETA = 1e-15


@dataclass(frozen=True, kw_only=True)
class Target:
    """One mechanism's per-category estimator as the planner sees it."""

    mechanism: str
    oracle: Any  # the per-category mechanism (binary RR at ε/m for the per-option split)
    categories: int
    reference: float  # θ at the uniform distribution, in the model's units
    report_bytes: int
    expected_squared_error: float | None
    worst_case_squared_error: float | None


@dataclass(frozen=True, kw_only=True)
class Row:
    mechanism: str
    family: str
    report_bytes: int
    n: int | None
    half_width: float | None
    simultaneous_half_width: float | None
    n_for_half_width: int | None
    n_for_simultaneous_half_width: int | None
    expected_squared_error: float | None
    worst_case_squared_error: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Plan:
    question_type: str
    options: int | None
    epsilon: float
    beta: float
    n: int | None
    target: float | None
    recommended: str
    rows: tuple[Row, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "question_type": self.question_type,
            "options": self.options,
            "epsilon": self.epsilon,
            "beta": self.beta,
            "n": self.n,
            "target_half_width": self.target,
            "recommended": self.recommended,
            "covers": "respondents",
            "rows": [row.to_dict() for row in self.rows],
        }


def targets(
    question_type: str,
    *,
    epsilon: float,
    options: int | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
) -> list[Target]:
    """The candidate mechanisms of a question type, each with its reference truth."""
    epsilon = check_epsilon(epsilon)
    if question_type not in QUESTION_TYPES:
        raise InvalidParameter(f"question type must be one of {', '.join(QUESTION_TYPES)}")
    if question_type == "yes_no":
        name = DEFAULTS[question_type]
        oracle = CATEGORICAL[name](epsilon=epsilon)
        return [_target(name, oracle, 2, 0.5, oracle.report_bytes, None)]
    if question_type == "numeric":
        lo, hi = check_range(lo, hi)
        if max(abs(lo), abs(hi)) > MAX_MAGNITUDE:
            raise InvalidParameter(
                f"lo and hi must be between -{MAX_MAGNITUDE:g} and "
                f"{MAX_MAGNITUDE:g} (the planner squares the range), "
                f"got lo={lo!r}, hi={hi!r}"
            )
        result = []
        for name, cls in NUMERIC.items():
            mechanism = cls(epsilon=epsilon, lo=lo, hi=hi)
            model = score_model(mechanism)
            middle = (model.low + model.high) / 2
            result.append(_target(name, mechanism, 1, middle, mechanism.report_bytes, None))
        return result
    if options is None:
        raise InvalidParameter(f"a {question_type} question needs its number of options")
    if question_type == "scale":
        # A scale's mechanism randomizes one of its points (docs/protocol.md §5.6): a
        # single choice of them.
        if isinstance(options, bool) or options not in SCALE_POINTS:
            raise InvalidParameter(f"a scale has 5, 7 or 11 points, got {options!r}")
    options = check_domain_size(options)
    multiple = question_type == "multiple_choice"
    figures = {c.mechanism: c for c in recommend(options, epsilon, multiple=multiple).candidates}
    result = []
    if multiple:
        for name, candidate in figures.items():
            # Each option's estimator: option sampling's own, or one binary RR at ε / options.
            mechanism = mechanism_class(question_type, name)(epsilon=epsilon, options=options)
            oracle = mechanism.per_category
            result.append(_target(name, oracle, options, 0.5, candidate.report_bytes, candidate))
        return result
    for name, candidate in figures.items():
        oracle = CATEGORICAL[name](epsilon=epsilon, domain_size=options)
        result.append(
            _target(name, oracle, options, 1.0 / options, candidate.report_bytes, candidate)
        )
    return result


def _target(
    name: str, oracle: Any, categories: int, reference: float, size: int, figures: Any
) -> Target:
    return Target(
        mechanism=name,
        oracle=oracle,
        categories=categories,
        reference=reference,
        report_bytes=size,
        expected_squared_error=figures.expected_squared_error if figures else None,
        worst_case_squared_error=figures.worst_case_squared_error if figures else None,
    )


def expected_half_width(target: Target, family: str, n: int, beta: float) -> float | None:
    """Half-width of ``family`` at n when the estimate is the reference truth (output units).

    None for the exact tail where it is not computed (``exact_tail.available``).
    """
    model = score_model(target.oracle)
    if family == EXACT_TAIL:
        return _exact_half_width(model, target, n, beta)
    if family == "chebyshev":
        return chebyshev_half_width(target.oracle.variance_bound(n), beta)
    low, high = family_interval(family, np.array([target.reference]), n, model, beta)
    return float(model.scale * (high[0] - low[0]) / 2)


def _exact_half_width(model: Any, target: Target, n: int, beta: float) -> float | None:
    tail = model.tail
    if tail is None or not exact_tail.available(tail, n, target.categories):
        return None
    if tail[0] == "pure":
        p, q = tail[1], tail[2]
        count = round(n * (q + (p - q) * target.reference))
        low, high = exact_tail.count_bounds(np.array([count]), n, p, q, beta)
        return float(high[0] - low[0]) / (2 * n)
    keep, options = tail[1], tail[2]
    sampled = max(1, n // options)
    yes = round(sampled * (keep * target.reference + (1 - keep) * (1 - target.reference)))
    low, high = exact_tail.sampled_bounds(yes, sampled, n, keep, beta)
    return (high - low) / (2 * n)


def _exact_respondents(target: Target, half_width: float, beta: float) -> int | None:
    """The exact tail's n (within 1%), searched below Bernstein's; None past the planning cap."""
    ceiling = respondents_for(target, "bernstein", half_width, beta)
    if ceiling > EXACT_PLANNING_MAX_N:
        return None

    def reaches(n: int) -> bool:
        width = expected_half_width(target, EXACT_TAIL, n, beta)
        return width is not None and width <= half_width

    if not reaches(ceiling):
        return None
    below, above = 0, ceiling
    while above - below > max(1, above // 100):
        middle = (below + above) // 2
        below, above = (below, middle) if reaches(middle) else (middle, above)
    return above


def respondents_for(target: Target, family: str, half_width: float, beta: float) -> int | None:
    """Smallest n whose expected half-width is at most ``half_width`` (exact tail: see above)."""
    if family == EXACT_TAIL:
        return _exact_respondents(target, half_width, beta)
    low, high = 1, 1
    while expected_half_width(target, family, high, beta) > half_width:
        low, high = high + 1, high * 2
        if high > MAX_RESPONDENTS:
            raise InvalidParameter(
                f"more than {MAX_RESPONDENTS:,} respondents would be needed for ±{half_width:g}"
            )
    return smallest_passing(
        lambda n: expected_half_width(target, family, n, beta) <= half_width, low, high
    )


def plan(
    question_type: str,
    *,
    epsilon: float,
    options: int | None = None,
    beta: float = 0.05,
    n: int | None = None,
    half_width: float | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
    applicable_share: float = 1.0,
) -> Plan:
    """Expected half-widths at ``n``, or the n needed for ``half_width``: one row per
    mechanism and interval family (see the module docstring).  ``applicable_share``: the
    share of respondents expected to answer the question (optional or conditional ones);
    half-widths are then those of the shares among them."""
    beta = check_beta(beta)
    share = check_real("applicable_share", applicable_share)
    if not 0 < share <= 1:
        raise InvalidParameter(f"applicable_share must be in (0, 1], got {applicable_share!r}")
    if beta < MIN_BETA:
        raise InvalidParameter(f"beta must be at least {MIN_BETA:g} to plan, got {beta!r}")
    if (n is None) == (half_width is None):
        raise InvalidParameter("give exactly one of n and half_width")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise InvalidParameter(f"n must be a positive int, got {n!r}")
    if half_width is not None:
        half_width = check_real("half_width", half_width)
        if not half_width > 0:
            raise InvalidParameter(f"half_width must be positive, got {half_width!r}")
    candidates = targets(question_type, epsilon=epsilon, options=options, lo=lo, hi=hi)
    rows = []
    for target in candidates:
        model = score_model(target.oracle)
        simultaneous = beta / target.categories if target.categories > 1 else None
        for family in (*FAMILIES, EXACT_TAIL):
            if family not in available_families(model) and not (
                family == EXACT_TAIL and model.tail is not None
            ):
                continue
            if n is not None:
                per, both = _among(expected_half_width(target, family, n, beta), share), None
                if simultaneous is not None:
                    both = _among(expected_half_width(target, family, n, simultaneous), share)
                needed = needed_both = None
            else:
                per = both = None
                needed = respondents_for(target, family, half_width * share, beta)
                needed_both = (
                    respondents_for(target, family, half_width * share, simultaneous)
                    if simultaneous is not None
                    else None
                )
            rows.append(
                Row(
                    mechanism=target.mechanism,
                    family=family,
                    report_bytes=target.report_bytes,
                    n=n,
                    half_width=per,
                    simultaneous_half_width=both,
                    n_for_half_width=needed,
                    n_for_simultaneous_half_width=needed_both,
                    expected_squared_error=target.expected_squared_error,
                    worst_case_squared_error=target.worst_case_squared_error,
                )
            )
    if question_type in COUNTED:
        recommended = recommend(
            options, epsilon, multiple=question_type == "multiple_choice"
        ).mechanism
    else:
        recommended = candidates[0].mechanism
    return Plan(
        question_type=question_type,
        options=options if question_type in COUNTED else None,
        epsilon=epsilon,
        beta=beta,
        n=n,
        target=half_width,
        recommended=recommended,
        rows=tuple(rows),
    )


def _among(half_width: float | None, share: float) -> float | None:
    """A frequency's half-width as that of the share among the ``share`` who answered."""
    return None if half_width is None else half_width / share


def format_number(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    if math.isinf(value):
        return "inf"
    return f"{value:.4g}"


# -- planning a relayed survey (the shuffle model) ------------------------------

DEFAULT_RELAY_DELTA = shuffle.DEFAULT_DELTA
DEFAULT_RELAY_HALF_WIDTH = 0.05


@dataclass(frozen=True, kw_only=True)
class RelayPlan:
    """The ε0 to set on each device for a central (ε, δ) through a shuffling relay, and
    what it buys in respondents (:mod:`deniable.shuffle` for the bound).

    ``local_epsilon`` holds for every mechanism (the generic bound, FMT23 / Wang et al.
    2024; :mod:`deniable.shuffle` says why no mechanism gets a sharper one).
    ``respondents`` is the
    recommended mechanism's n for the target half-width with its tightest interval
    (``respondents_for_precision``), and never less than one batch: nothing is
    published before a batch is forwarded.
    ``respondents_without_relay`` is the same figure with ε = the central target on
    the device and no relay.  ``smallest_batch`` is the fewest respondents that reach
    the target through the relay at all, in one batch with its own ε0
    (:func:`smallest_relayed_batch`)."""

    central_epsilon: float
    delta: float
    batch: int
    local_epsilon: float
    achieved_central_epsilon: float
    respondents_for_precision: int | None
    respondents: int | None
    respondents_without_relay: int | None
    smallest_batch: int | None
    smallest_batch_local_epsilon: float | None
    plan: Plan
    without_relay: Plan

    def to_dict(self) -> dict[str, Any]:
        return {
            "relay": {
                "central_epsilon": self.central_epsilon,
                "delta": self.delta,
                "batch": self.batch,
                "local_epsilon": self.local_epsilon,
                "achieved_central_epsilon": self.achieved_central_epsilon,
                "respondents_for_precision": self.respondents_for_precision,
                "respondents": self.respondents,
                "respondents_without_relay": self.respondents_without_relay,
                "smallest_batch": self.smallest_batch,
                "smallest_batch_local_epsilon": self.smallest_batch_local_epsilon,
            },
            **self.plan.to_dict(),
            "without_relay": self.without_relay.to_dict(),
        }


def best_respondents(result: Plan, mechanism: str | None = None) -> int | None:
    """The smallest n for the target over the interval families of ``mechanism``
    (default: the recommended one), or None when the plan is for a given n."""
    name = mechanism or result.recommended
    needed = [
        row.n_for_half_width
        for row in result.rows
        if row.mechanism == name and row.n_for_half_width is not None
    ]
    return min(needed) if needed else None


def relayed_local_epsilon(central_epsilon: float, batch: int, delta: float) -> float:
    """The largest ε0 (to 0.001) whose batches of ``batch`` are (central_epsilon, delta)-DP
    after shuffling: rounded down to what an operator writes in a definition (never
    up: that could break the central target)."""
    return math.floor(shuffle.local_epsilon_for(central_epsilon, batch, delta) * 1000) / 1000


def relay_plan(
    question_type: str,
    *,
    central_epsilon: float,
    batch: int,
    delta: float = DEFAULT_RELAY_DELTA,
    options: int | None = None,
    beta: float = 0.05,
    n: int | None = None,
    half_width: float | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
) -> RelayPlan:
    """Plan a relayed question: the largest ε0 whose batches of ``batch`` reports are
    (``central_epsilon``, ``delta``)-DP after shuffling, then :func:`plan` at that ε0
    (half-widths at ``n``, or the n for ``half_width``, default ±0.05), beside the
    same plan with no relay at ε = ``central_epsilon``."""
    target = check_epsilon(central_epsilon, "central_epsilon")
    batch = check_int("batch", batch, 1, shuffle.MAX_BATCH)
    if n is None and half_width is None:
        half_width = DEFAULT_RELAY_HALF_WIDTH
    if n is not None and isinstance(n, int) and not isinstance(n, bool) and n < batch:
        raise InvalidParameter(
            f"n = {n:,} is less than one batch ({batch:,}): nothing would be published"
        )
    local = relayed_local_epsilon(target, batch, delta)
    at_local = plan(
        question_type,
        epsilon=local,
        options=options,
        beta=beta,
        n=n,
        half_width=half_width,
        lo=lo,
        hi=hi,
    )
    direct = plan(
        question_type,
        epsilon=target,
        options=options,
        beta=beta,
        n=n,
        half_width=half_width,
        lo=lo,
        hi=hi,
    )
    needed = best_respondents(at_local)
    smallest = smallest_local = None
    if half_width is not None:
        smallest, smallest_local = smallest_relayed_batch(
            question_type,
            central_epsilon=target,
            half_width=half_width,
            delta=delta,
            options=options,
            beta=beta,
            lo=lo,
            hi=hi,
        )
    return RelayPlan(
        central_epsilon=target,
        delta=delta,
        batch=batch,
        local_epsilon=local,
        achieved_central_epsilon=shuffle.central_epsilon(local, batch, delta),
        respondents_for_precision=needed,
        respondents=None if needed is None else max(batch, needed),
        respondents_without_relay=best_respondents(direct),
        smallest_batch=smallest,
        smallest_batch_local_epsilon=smallest_local,
        plan=at_local,
        without_relay=direct,
    )


def smallest_relayed_batch(
    question_type: str,
    *,
    central_epsilon: float,
    half_width: float,
    delta: float = DEFAULT_RELAY_DELTA,
    options: int | None = None,
    beta: float = 0.05,
    lo: float = 0.0,
    hi: float = 1.0,
) -> tuple[int, float]:
    """The fewest respondents that reach ±``half_width`` at central
    (``central_epsilon``, ``delta``) through a relay, all in one batch, and the ε0
    to set: the smallest N whose ε0 for batches of N (:func:`relay_plan`'s rule)
    needs at most N respondents for the target.  More respondents only help: a
    larger batch allows a larger ε0, which needs fewer respondents."""
    target = check_epsilon(central_epsilon, "central_epsilon")

    def needed(epsilon: float) -> int:
        result = plan(
            question_type,
            epsilon=epsilon,
            options=options,
            beta=beta,
            half_width=half_width,
            lo=lo,
            hi=hi,
        )
        value = best_respondents(result)
        assert value is not None  # a half-width plan always has one
        return value

    def local(batch: int) -> float:
        return relayed_local_epsilon(target, batch, delta)

    # at N = needed(target), ε0 ≥ the target: N suffices
    low = smallest_passing(lambda batch: needed(local(batch)) <= batch, 1, needed(target))
    return low, local(low)
