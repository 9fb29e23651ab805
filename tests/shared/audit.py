"""A black-box privacy audit: a rigorous lower bound on ε from samples.

Given reports sampled under two inputs x and x' (any hashable keys: encoded
reports, or any post-processing of them, which costs no privacy), the audit

1. splits each sample: the first ``selection_fraction`` chooses candidate
   output events, the rest only evaluates them, so the events are independent
   of the evaluation samples;
2. for each direction (x over x', x' over x) and each log-threshold τ, takes
   E_τ = {keys seen under the favoured input in the selection half whose
   smoothed empirical ratio (c + 1/2)/n over (c' + 1/2)/n' is at least e^τ};
3. on the evaluation half bounds P[E|favoured] from below and P[E|other]
   from above with exact one-sided Clopper–Pearson bounds;
4. reports the largest log(lower/upper) over the events.

Every one of the 2·(2·len(thresholds)) one-sided bounds has level
``false_alarm / (4 len(thresholds))``, so by the union bound all hold at once
with probability at least 1 - ``false_alarm``; whenever they hold, the
mechanism is no better than ``epsilon_lower_bound``-DP on this pair, since for
an ε-DP mechanism P[E|x] <= e^ε P[E|x'] for every event E.  Hence an ε-DP
mechanism yields ``epsilon_lower_bound > ε`` with probability at most
``false_alarm``.

The sampling itself is the caller's: :func:`sample_reports` loops over any
zero-argument sampler (a mechanism's CSPRNG ``randomize``, a client's
memoized path, ...) and returns encoded reports.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from scipy import stats

DEFAULT_LOG_THRESHOLDS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


@dataclass(frozen=True)
class AuditResult:
    epsilon_lower_bound: float
    direction: str  # "x" if the best event favours x, "x'" otherwise
    log_threshold: float
    event_size: int
    lower: float  # lower bound on P[E | favoured input]
    upper: float  # upper bound on P[E | other input]
    events_tried: int
    false_alarm: float


def clopper_pearson_lower(successes: int, trials: int, alpha: float) -> float:
    """One-sided exact lower bound: P[p < bound] <= alpha."""
    if successes == 0:
        return 0.0
    return float(stats.beta.ppf(alpha, successes, trials - successes + 1))


def clopper_pearson_upper(successes: int, trials: int, alpha: float) -> float:
    """One-sided exact upper bound: P[p > bound] <= alpha."""
    if successes == trials:
        return 1.0
    return float(stats.beta.isf(alpha, successes + 1, trials - successes))


def sample_reports(sampler: Callable[[], str], count: int) -> list[str]:
    """``count`` keys from a zero-argument sampler."""
    return [sampler() for _ in range(count)]


def _events(
    favoured: Counter, other: Counter, n_favoured: int, n_other: int, log_threshold: float
) -> set[Hashable]:
    factor = math.exp(log_threshold)
    return {
        key
        for key, count in favoured.items()
        if (count + 0.5) / n_favoured >= factor * (other.get(key, 0) + 0.5) / n_other
    }


def epsilon_lower_bound(
    reports_x: Sequence[Hashable],
    reports_y: Sequence[Hashable],
    *,
    false_alarm: float = 1e-6,
    selection_fraction: float = 0.25,
    log_thresholds: Sequence[float] = DEFAULT_LOG_THRESHOLDS,
) -> AuditResult:
    """The largest certified log-ratio of an event between the two samples (see module doc)."""
    split_x = int(len(reports_x) * selection_fraction)
    split_y = int(len(reports_y) * selection_fraction)
    if min(split_x, split_y) < 1 or split_x == len(reports_x) or split_y == len(reports_y):
        raise ValueError("need samples on both sides of the split")
    select = {"x": Counter(reports_x[:split_x]), "x'": Counter(reports_y[:split_y])}
    held = {"x": Counter(reports_x[split_x:]), "x'": Counter(reports_y[split_y:])}
    sizes = {"x": split_x, "x'": split_y}
    n_held = {"x": len(reports_x) - split_x, "x'": len(reports_y) - split_y}

    events_tried = 2 * len(log_thresholds)
    alpha = false_alarm / (2 * events_tried)
    best = AuditResult(-math.inf, "x", math.nan, 0, 0.0, 1.0, events_tried, false_alarm)
    for favoured, other in (("x", "x'"), ("x'", "x")):
        for tau in log_thresholds:
            event = _events(select[favoured], select[other], sizes[favoured], sizes[other], tau)
            hits_favoured = sum(held[favoured].get(key, 0) for key in event)
            hits_other = sum(held[other].get(key, 0) for key in event)
            lower = clopper_pearson_lower(hits_favoured, n_held[favoured], alpha)
            upper = clopper_pearson_upper(hits_other, n_held[other], alpha)
            if lower <= 0.0:
                continue
            bound = math.log(lower / upper)
            if bound > best.epsilon_lower_bound:
                best = AuditResult(
                    bound, favoured, tau, len(event), lower, upper, events_tried, false_alarm
                )
    return best
