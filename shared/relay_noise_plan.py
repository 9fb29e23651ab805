"""Planning relay noise (the augmented shuffle): the ε0 to set, the dummy law, and what the
published interval is worth, for a central (ε, δ) on every batch.

The relay adds dummy reports, D_y per output value y of a question's mechanism, before it
shuffles a batch (Murakami, Sei and Eriguchi, "Augmented Shuffle Protocols for Accurate and
Robust Frequency Estimation under Differential Privacy", arXiv 2504.07362; the accounting is
:mod:`deniable.dummies`).  The dummies alone make every batch (ε, δ)-DP for substitution
neighbours whatever the devices did, so the central ε no longer asks for a small ε0: the device
may randomize with a large ε0, its local noise is then tiny, and the published interval is
about as wide as the dummies' own spread.  This module answers, for one question:

* **ε0.**  The largest ε0 up to ``max_local_epsilon`` (8) whose published half-width is the
  smallest.  A larger ε0 only shrinks the local variance of binary RR, GRR, option sampling
  and Duchi, so it is the ceiling; the candidates are searched anyway, so the claim is
  checked rather than assumed.  ε0 is what still holds if the relay colludes with the
  aggregator: 8 is weak on its own (docs/choosing-epsilon.md).
* **The law.**  :func:`deniable.dummies.calibrate` for each family (two-sided geometric and
  binomial): the smallest law meeting (ε, δ).  The one with the narrower published interval
  is chosen; both are reported.
* **The published half-width** at n respondents, worst case over the true shares.  With a
  ``batch`` (the relay's ``min_batch``) n respondents may reach the aggregator in up to
  n // batch batches, each with its own dummies, so each adds its variance; the planner
  quotes that worst case.  Nothing is published below one batch.
* **The fewest respondents** for a target half-width (±5 points by default): the smallest N
  from which *every* n >= N meets it in batches of ``batch`` (the half-width jumps up where
  n reaches a further batch, and those peaks fall with n; between them it falls with n,
  which the tests check over a range), and the fewest all in one batch (``min_batch`` = N).
* **Robustness**: how far one fake report (a device that sends a chosen report) moves a
  category's estimated count, (n + 1) θ̂' - n θ̂.  For GRR it is (1 - q*)/(p* - q*): 6.24 at
  ε = 1 with 10 options, about 1 at ε0 = 8: the smaller the local noise, the less a fake
  report is amplified by the debiasing (Murakami et al., on robustness; Cheu, Smith and
  Ullman, "Manipulation attacks in local differential privacy", arXiv 1909.09630).

Only mechanisms whose reports are values of a small set (``Mechanism.output_reports``) can be
noised this way: binary RR, GRR, option sampling and Duchi.  Others are refused.

**Optional and conditional questions** (``extras``: 1 or 2 non-response values, docs/protocol.md
§5.5) run their mechanism over the answers and the extras (a yes/no one by GRR; a number by
Duchi with a status), and the relay adds dummies of every one of those outputs, so the
dummies per batch grow with the domain.  Only the share s of respondents expected to answer
(``applicable_share``) carries signal: a share among them is f/s, and, as the plain planner
(:mod:`deniable.planner`) does to first order, its half-width is the frequency's divided by
s.  A number's mean among those who answered is planned from its sign's interval (the sign
sees the dummies of every status, ``DummyNoise.repeated``).  A scale is planned as the
single choice of its points.

The half-width is :func:`published_half_width`: the aggregator's own published interval
with dummies (:mod:`deniable.noised`), so the plan quotes what results will show.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import dummies, shuffle
from .errors import InvalidParameter
from .estimation import check_beta
from .mechanisms import NUMERIC_WITH_EXTRAS, QUESTION_MECHANISMS, mechanism_class
from .mechanisms.base import Mechanism
from .noised import mechanism_key, noised_half_width
from .parameters import check_epsilon, check_int, check_real
from .planner import (
    DEFAULT_RELAY_DELTA,
    DEFAULT_RELAY_HALF_WIDTH,
    MAX_RESPONDENTS,
    QUESTION_TYPES,
    best_respondents,
    plan,
    relayed_local_epsilon,
)
from .relay_noise_figures import LawChoice, RelayNoisePlan

__all__ = [
    "LAW_FAMILIES",
    "MAX_LOCAL_EPSILON",
    "LawChoice",
    "RelayNoisePlan",
    "fake_report_shift",
    "noise_mechanism",
    "noise_mechanisms",
    "noised_respondents",
    "published_half_width",
    "relay_noise_plan",
    "smallest_noised_batch",
]

MAX_LOCAL_EPSILON = 8.0
LAW_FAMILIES = ("geometric", "binomial")
# The ε0 tried below the ceiling (the ceiling itself is always tried).
LOCAL_EPSILON_STEPS = (2.0, 4.0, 6.0)


def _build(
    question_type: str,
    name: str,
    epsilon: float,
    options: int | None,
    lo: float,
    hi: float,
    extras: int = 0,
) -> Mechanism:
    """The mechanism ``name`` of a question of ``question_type`` at ``epsilon``, over its
    answers and ``extras`` non-response values."""
    cls = mechanism_class(question_type, name)
    if cls is None:
        raise InvalidParameter(f"{name} is not a mechanism of a {question_type} question")
    if extras and getattr(cls, "binary", False):
        raise InvalidParameter(f"{name} has two values only: no room for non-responses")
    if question_type == "numeric":
        if extras:
            return NUMERIC_WITH_EXTRAS[name](epsilon=epsilon, lo=lo, hi=hi, extras=extras)
        return cls(epsilon=epsilon, lo=lo, hi=hi)
    if question_type == "multiple_choice":
        return cls(epsilon=epsilon, options=options + extras)
    answers = 2 if question_type == "yes_no" else options
    return cls(epsilon=epsilon, domain_size=answers + extras)


def _estimated(mechanism: Mechanism) -> tuple[Mechanism, int]:
    """(the mechanism whose estimate is planned, how many outputs carry each of its values):
    a number with a status is planned by its sign, which every status carries."""
    if mechanism.kind == "numeric_status":
        return mechanism.sign_oracle, mechanism.statuses
    return mechanism, 1


def noise_mechanisms(
    question_type: str,
    options: int | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
    extras: int = 0,
) -> tuple[str, ...]:
    """The mechanisms of ``question_type`` (with ``extras`` non-response values) that can carry
    relay noise (they name their output reports), in table order."""
    if question_type not in QUESTION_TYPES:
        raise InvalidParameter(f"question type must be one of {', '.join(QUESTION_TYPES)}")
    if question_type in ("single_choice", "multiple_choice") and options is None:
        raise InvalidParameter(f"a {question_type} question needs its number of options")
    names = []
    for name, cls in QUESTION_MECHANISMS[question_type].items():
        binary = getattr(cls, "binary", False)
        if extras and (binary or question_type == "numeric" and name not in NUMERIC_WITH_EXTRAS):
            continue  # no room for the non-responses
        if (
            not extras
            and (question_type == "yes_no") != binary
            and (question_type, options) != ("single_choice", 2)
        ):
            continue  # a yes/no question is binary RR; binary RR is grr's two-option case
        try:
            mechanism = _build(question_type, name, 1.0, options, lo, hi, extras)
        except InvalidParameter:  # e.g. a domain too large for this oracle
            continue
        outputs = mechanism.output_reports()
        if outputs is not None and len(outputs) <= dummies.MAX_OUTPUT_VALUES:
            names.append(name)
    return tuple(names)


def noise_mechanism(
    question_type: str,
    name: str,
    *,
    epsilon: float,
    options: int | None = None,
    lo: float = 0.0,
    hi: float = 1.0,
    extras: int = 0,
) -> Mechanism:
    """The question's mechanism at ε0, refused (InvalidParameter) unless it can carry relay
    noise."""
    supported = noise_mechanisms(question_type, options, lo, hi, extras)
    if not supported:
        raise InvalidParameter(
            f"relay noise is not available for a {question_type} question with {options:,} "
            f"options: the relay draws dummies for every possible report, at most "
            f"{dummies.MAX_OUTPUT_VALUES:,}"
        )
    if name not in supported and name not in QUESTION_MECHANISMS[question_type]:
        raise InvalidParameter(
            f"{name} is not a mechanism of a {question_type} question; with relay noise use "
            f"{' or '.join(supported)}"
        )
    plain = noise_mechanisms(question_type, options, lo, hi) if extras else ()
    if name not in supported and name in plain:
        raise InvalidParameter(
            f"{name} cannot carry this question's non-response values (optional or "
            f"conditional); use {' or '.join(supported)}"
        )
    if name not in supported:
        raise InvalidParameter(
            f"{name} cannot carry relay noise: the relay draws dummies per output value, and "
            f"only mechanisms whose reports are values of a small set have them; for a "
            f"{question_type} question use {' or '.join(supported)}"
        )
    return _build(question_type, name, epsilon, options, lo, hi, extras)


def published_half_width(
    mechanism: Mechanism, n: int, law: dummies.DummyLaw, batches: int, beta: float
) -> tuple[float, str]:
    """(half-width, family): the narrowest interval the aggregator publishes for one
    estimate of a noised question with n real reports in ``batches`` noised batches, worst
    case over the true shares (output units: a share for frequencies), from
    :func:`deniable.noised.noised_half_width` (the exact tail convolved with the dummies'
    law where it is published, else the closed-form families with the dummies' variance)."""
    return _published_half_width(mechanism_key(mechanism), mechanism, n, law, batches, beta)


@functools.lru_cache(maxsize=65536)
def _published_half_width(
    key: tuple, mechanism: Mechanism, n: int, law: dummies.DummyLaw, batches: int, beta: float
) -> tuple[float, str]:
    # ``key`` (deniable.noised.mechanism_key) tells apart mechanisms the dataclass calls equal
    return noised_half_width(mechanism, n, law, batches, beta)


def fake_report_shift(mechanism: Mechanism) -> float | None:
    """How far one fake report moves a category's estimated count, (n + 1) θ̂' - n θ̂ at
    the worst report and category; None for a numeric question (no count).  The count
    estimate n θ̂ is affine in the statistics and n, so this is the same at every n."""
    if mechanism.kind in ("numeric", "numeric_status"):
        return None
    outputs = mechanism.output_reports()
    if outputs is None:
        return None
    batch = mechanism.decode_many(list(outputs))
    base = mechanism.estimate(np.zeros(mechanism.statistics(batch[:1]).size), 1)
    shifts = [
        2 * mechanism.estimate(mechanism.statistics(batch[y : y + 1]), 2) - base
        for y in range(len(outputs))
    ]
    return float(np.max(shifts))


def _batches(n: int, batch: int) -> int:
    return max(1, n // batch)


def _respondents(
    width, batch: int, target: float, in_batches: bool = True
) -> tuple[int | None, int | None]:
    """(fewest N with every n >= N within ``target`` in batches of ``batch``, fewest all in
    one batch), from ``width(n, batches)``; None past MAX_RESPONDENTS (the first also None
    unless ``in_batches``)."""
    from .intervals import smallest_passing

    one_high = 1
    while width(one_high, 1) > target:
        one_high *= 2
        if one_high > MAX_RESPONDENTS:
            return None, None
    single = smallest_passing(lambda n: width(n, 1) <= target, max(1, one_high // 2), one_high)
    if not in_batches:
        return None, single

    def peak(k: int) -> bool:  # n = k·batch, the widest point with k batches
        return width(k * batch, k) <= target

    high = 1
    while not peak(high):
        high *= 2
        if high * batch > MAX_RESPONDENTS:
            return None, single
    k = smallest_passing(peak, max(1, high // 2), high)
    if k == 1:
        guaranteed = batch
    else:
        # n in [(k-1)·batch, k·batch) has k - 1 batches, and k·batch passes
        start, end = (k - 1) * batch, k * batch
        guaranteed = smallest_passing(lambda n: n == end or width(n, k - 1) <= target, start, end)
    return guaranteed, single


def _question(
    options: int | None, lo: float, hi: float, extras: int, applicable_share: float
) -> dict[str, Any]:
    """The question's shape as the planners take it, checked."""
    extras = check_int("extras", extras, 0, 2)
    share = check_real("applicable_share", applicable_share)
    if not 0 < share <= 1:
        raise InvalidParameter(f"applicable_share must be in (0, 1], got {applicable_share!r}")
    return {"options": options, "lo": lo, "hi": hi, "extras": extras, "applicable_share": share}


def noised_respondents(
    mechanism: Mechanism,
    law: dummies.DummyLaw,
    *,
    batch: int,
    half_width: float,
    beta: float = 0.05,
) -> tuple[int | None, int | None]:
    """For a question already set (its mechanism at its ε0, the dummy law a survey signs):
    (the fewest N from which every n >= N reaches ±``half_width`` in noised batches of
    ``batch``, the fewest all in one batch), as :func:`relay_noise_plan` finds them for the
    law it calibrates (module docstring); None past MAX_RESPONDENTS."""
    batch = check_int("batch", batch, 1, shuffle.MAX_BATCH)
    target = check_real("half_width", half_width)
    beta = check_beta(beta)

    def width(count: int, k: int) -> float:
        return published_half_width(mechanism, count, law, k, beta)[0]

    return _respondents(width, batch, target)


def _plan_or_none(question_type: str, **arguments: Any) -> Any:
    """:func:`deniable.planner.plan`, or None where some mechanism would need more than
    MAX_RESPONDENTS (the comparison figures are then "-")."""
    try:
        return plan(question_type, **arguments)
    except InvalidParameter:
        return None


def _best_half_width(result: Any) -> float | None:
    if result is None:
        return None
    widths = [
        row.half_width
        for row in result.rows
        if row.mechanism == result.recommended and row.half_width is not None
    ]
    return min(widths) if widths else None


def _noised_laws(
    question_type: str,
    central_epsilon: float,
    delta: float,
    batch: int,
    n: int,
    target: float,
    beta: float,
    ceiling: float,
    mechanism: str | None,
    question: dict[str, Any],
    in_batches: bool = True,
) -> tuple[str, Mechanism, float, list[LawChoice]]:
    """(mechanism name, the mechanism at ε0, ε0, each calibrated law's figures): the core of
    :func:`relay_noise_plan` (arguments checked there)."""
    options, lo, hi = question["options"], question["lo"], question["hi"]
    extras, share = question["extras"], question["applicable_share"]
    supported = noise_mechanisms(question_type, options, lo, hi, extras)
    names = supported if mechanism is None else (mechanism,)
    if not names:
        noise_mechanism(
            question_type, "", epsilon=1.0, options=options, lo=lo, hi=hi, extras=extras
        )
    calibrated = {
        family: dummies.calibrate(central_epsilon, delta, family).law for family in LAW_FAMILIES
    }
    batches = _batches(n, batch)
    candidates = sorted({ceiling, *(e for e in LOCAL_EPSILON_STEPS if e < ceiling)}, reverse=True)
    best = None  # (half-width, -ε0, name, family, the mechanism at ε0)
    for name in names:
        for epsilon0 in candidates:
            built = noise_mechanism(
                question_type, name, epsilon=epsilon0, options=options, lo=lo, hi=hi, extras=extras
            )
            part, copies = _estimated(built)
            for law in calibrated.values():
                width, _ = published_half_width(part, n, law, batches * copies, beta)
                key = (width, -epsilon0)
                if best is None or key < best[0]:
                    best = (key, name, built)
    assert best is not None
    (_, negative), name, chosen_mechanism = best
    local = -negative
    values = len(chosen_mechanism.output_reports())
    part, copies = _estimated(chosen_mechanism)
    laws = []
    for family, law in calibrated.items():

        def width(count: int, k: int, law: dummies.DummyLaw = law) -> float:
            # a share among the applicable: the frequency's half-width over s (first order)
            return published_half_width(part, count, law, k * copies, beta)[0] / share

        respondents, one_batch = _respondents(width, batch, target, in_batches)
        laws.append(
            LawChoice(
                family=family,
                law=law,
                output_values=values,
                central_epsilon=dummies.noised_central_epsilon(law, local, batch, delta),
                half_width=width(n, batches),
                interval=published_half_width(part, n, law, batches * copies, beta)[1],
                respondents=respondents,
                respondents_one_batch=one_batch,
            )
        )
    return name, chosen_mechanism, local, laws


def relay_noise_plan(
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
    mechanism: str | None = None,
    max_local_epsilon: float = MAX_LOCAL_EPSILON,
    extras: int = 0,
    applicable_share: float = 1.0,
) -> RelayNoisePlan:
    """Plan a question whose batches the relay noises (module docstring): the half-width
    at ``n`` (default: one batch) and the respondents for ``half_width`` (default ±0.05);
    ``extras`` non-response values (optional: 1, conditional: 1, both: 2) and the share of
    respondents expected to answer, ``applicable_share``."""
    question = _question(options, lo, hi, extras, applicable_share)
    target_epsilon = check_epsilon(central_epsilon, "central_epsilon")
    batch = check_int("batch", batch, 1, shuffle.MAX_BATCH)
    delta = check_real("delta", delta)
    if not 0 < delta < 1:
        raise InvalidParameter(f"delta must be in (0, 1), got {delta!r}")
    beta = check_beta(beta)
    ceiling = check_epsilon(max_local_epsilon, "max_local_epsilon")
    n = batch if n is None else check_int("n", n, 1, MAX_RESPONDENTS)
    if n < batch:
        raise InvalidParameter(
            f"n = {n:,} is less than one batch ({batch:,}): nothing would be published"
        )
    target = DEFAULT_RELAY_HALF_WIDTH
    if half_width is not None:
        target = check_real("half_width", half_width)
    if not target > 0:
        raise InvalidParameter(f"half_width must be positive, got {target!r}")
    name, chosen_mechanism, local, laws = _noised_laws(
        question_type,
        target_epsilon,
        delta,
        batch,
        n,
        target,
        beta,
        ceiling,
        mechanism,
        question,
    )
    chosen = min(laws, key=lambda choice: (choice.half_width, choice.dummies_per_batch))
    relay_local = relayed_local_epsilon(target_epsilon, batch, delta)
    # the same question without relay noise: its domain with the extras, as the plain planner
    # asks (a yes/no one with extras is a single choice by then), among the applicable
    plain_type = question_type
    plain_options = options if options is None else options + extras
    if extras and question_type == "yes_no":
        plain_type, plain_options = "single_choice", 2 + extras
    goal = {
        "options": plain_options,
        "beta": beta,
        "lo": lo,
        "hi": hi,
        "applicable_share": question["applicable_share"],
    }
    relay_at_n = _plan_or_none(plain_type, epsilon=relay_local, n=n, **goal)
    relay_for = _plan_or_none(plain_type, epsilon=relay_local, half_width=target, **goal)
    local_at_n = _plan_or_none(plain_type, epsilon=target_epsilon, n=n, **goal)
    local_for = _plan_or_none(plain_type, epsilon=target_epsilon, half_width=target, **goal)
    relay_needed = relay_for and best_respondents(relay_for)
    local_mechanism = None
    if name in QUESTION_MECHANISMS[question_type]:
        local_mechanism = _build(question_type, name, target_epsilon, options, lo, hi, extras)
    return RelayNoisePlan(
        question_type=question_type,
        options=options if question_type in ("single_choice", "multiple_choice") else None,
        mechanism=name,
        central_epsilon=target_epsilon,
        delta=delta,
        batch=batch,
        beta=beta,
        n=n,
        target=target,
        local_epsilon=local,
        batches=_batches(n, batch),
        laws=tuple(laws),
        chosen=chosen,
        fake_report_shift=fake_report_shift(chosen_mechanism),
        relay_only_local_epsilon=relay_local,
        relay_only_half_width=_best_half_width(relay_at_n),
        relay_only_respondents=None if relay_needed is None else max(batch, relay_needed),
        local_only_half_width=_best_half_width(local_at_n),
        local_only_respondents=local_for and best_respondents(local_for),
        local_only_fake_report_shift=(
            fake_report_shift(local_mechanism) if local_mechanism is not None else None
        ),
        extras=question["extras"],
        applicable_share=question["applicable_share"],
    )


def smallest_noised_batch(
    question_type: str,
    *,
    central_epsilon: float,
    half_width: float = DEFAULT_RELAY_HALF_WIDTH,
    delta: float = DEFAULT_RELAY_DELTA,
    options: int | None = None,
    beta: float = 0.05,
    lo: float = 0.0,
    hi: float = 1.0,
    max_local_epsilon: float = MAX_LOCAL_EPSILON,
    extras: int = 0,
    applicable_share: float = 1.0,
) -> tuple[int, LawChoice]:
    """The fewest respondents that reach ±``half_width`` at central (``central_epsilon``,
    ``delta``) with relay noise, all in one batch (``min_batch`` = that number), and the law
    that does it: :func:`relay_noise_plan` with a batch of that size.  (The relay alone's
    figure is :func:`deniable.planner.smallest_relayed_batch`.)"""
    central_epsilon = check_epsilon(central_epsilon, "central_epsilon")
    half_width = check_real("half_width", half_width)
    *_, laws = _noised_laws(
        question_type,
        central_epsilon,
        check_real("delta", delta),
        1,
        1,
        half_width,
        check_beta(beta),
        check_epsilon(max_local_epsilon, "max_local_epsilon"),
        None,
        _question(options, lo, hi, extras, applicable_share),
        in_batches=False,
    )
    best = min(
        (law for law in laws if law.respondents_one_batch is not None),
        key=lambda law: law.respondents_one_batch,
    )
    return best.respondents_one_batch, best
