"""Exact-tail intervals: the count's exact distribution, inverted (a Clopper–Pearson construction).

What is covered is the respondents' own answers: they are fixed, only the
coins are random.  For a pure frequency oracle (formula sheet, "Pure frequency
oracles") and category v with k holders among n respondents, the support
count C_v is a sum of n independent indicators, Bernoulli(p*) for each holder
and Bernoulli(q*) for everyone else, so

    C_v ~ Bin(k, p*) + Bin(n - k, q*)        exactly, for every answer mix with k holders.

In general such a count is Poisson-binomial, and Hoeffding (1956, "On the
distribution of the number of successes in independent trials", Ann. Math.
Statist. 27, Thm 4) bounds its tails by the binomial's with the same mean,
but only beyond the mean (P(C <= c) for c <= nπ - 1, P(C >= c) for c >= nπ + 1).
Here only two success probabilities occur and the unknown is the single
integer k, so no comparison is needed: we invert the exact law itself (the
Neyman construction; Clopper & Pearson, Biometrika 1934; Casella & Berger,
"Statistical Inference", 2002, Thm 9.2.2).  The accepted set is

    {k : P_k(C >= c) > α/2  and  P_k(C <= c) > α/2},

which covers the true k with probability >= 1 - α for every k and every n.
Swapping one Bernoulli(q*) for a Bernoulli(p*) makes C stochastically larger
(p* > q*), so P_k(C <= c) falls and P_k(C >= c) rises with k: the set is an
interval [k_lo, k_hi], found by bisection, and it is never empty (C_{k+1} <=
C_k + 1 under the obvious coupling), except that a count below every k's
lower tail gives [0, 0] (above: [n, n]), a superset of the empty set.  It is
published as [k_lo/n, k_hi/n] and is tighter than the binomial (Hoeffding)
interval: the two-binomial count has variance at most the binomial's nπ(1-π).

Option sampling (``deniable.mechanisms.option_sampling``) scores reports
(v, 1) and (v, 0).  The number N_v of reports that sampled option v is
Bin(n, 1/m) whatever the answers, and given N_v the sampled respondents are a
uniformly random N_v-subset, so the count A_v of reports (v, 1) is, given N_v,

    A_v ~ sum over h of Hyp(h; n, k, N_v) [Bin(h, p) + Bin(N_v - h, 1 - p)],

again stochastically increasing in k.  Coverage conditional on every N_v
implies it unconditionally.

Numerics: binomial laws are evaluated on a window mode ± (9σ + 30), outside
of which Bernstein's inequality leaves mass below 1e-17, from exact
log-ratio recurrences renormalised to sum to one; hypergeometric laws the
same way.  Tail probabilities are thus accurate to far better than ``SLACK``,
and a k is rejected only when its computed tail is at most α/2 - SLACK, so
the computed set contains the exact one and keeps its coverage.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .errors import InvalidParameter

__all__ = [
    "MAX_N",
    "WIDEST_TOLERANCE",
    "available",
    "count_bounds",
    "interval",
    "lower_tail",
    "noise_law",
    "nominal_half_width",
    "pure_interval",
    "pure_widest_half_width",
    "sampled_bounds",
    "sampling_interval",
]

# A k is rejected only if its computed tail is <= α/2 - SLACK (computation errors are << SLACK).
SLACK = 1e-9
# Largest n the family is computed for (windows of a few thousand points; see ``available``).
MAX_N = 100_000
# Cells of one vectorized step (rows x window); rows are processed in chunks of this size.
_CELLS = 1 << 20
_GRID = 17  # counts the search for the widest interval starts from
# The published widest half-width is the maximum over every count, or a bound at most this much
# (relative) above it where the exact search would cost too much (``pure_widest_half_width``).
WIDEST_TOLERANCE = 0.02
# Counts searched before the search may stop at a bound within WIDEST_TOLERANCE of the maximum.
_WIDEST_EXACT_COUNTS = 512
# Counts searched at most: past them the largest bracket bound is published (still a bound).
_WIDEST_MAX_COUNTS = 1_024


def _half_window(trials: np.ndarray, rate: np.ndarray) -> np.ndarray:
    # Bernstein: P(|X - mr| >= t) <= 2 exp(-t² / (2(σ² + t/3))) <= 2e-18 at t = 9σ + 30.
    return np.ceil(9.0 * np.sqrt(trials * rate * (1.0 - rate)) + 30.0).astype(np.int64)


def _window_pmf(trials: np.ndarray, rate: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin(trials, rate) per row on ``width`` points from a per-row start: (start, pmf).

    pmf[j + 1] / pmf[j] = (m - j) / (j + 1) * rate / (1 - rate): cumulative sums of
    log-ratios (each of moderate size near the mode) are exact to ~1e-13, and the
    window holds all but 1e-17 of the mass, so renormalising fixes the constant.
    """
    start = np.clip(np.floor(trials * rate).astype(np.int64) - _half_window(trials, rate), 0, None)
    points = start[:, None] + np.arange(width, dtype=np.int64)[None, :]
    logs_of = _log_integers(1 << (int(trials.max(initial=0)) + width + 1).bit_length())
    steps = logs_of[np.maximum(trials[:, None] - points[:, :-1], 0)] - logs_of[points[:, :-1] + 1]
    steps += np.log(rate / (1.0 - rate))[:, None]
    with np.errstate(invalid="ignore"):
        logs = np.concatenate([np.zeros((len(trials), 1)), np.cumsum(steps, axis=1)], axis=1)
    logs[points > trials[:, None]] = -np.inf
    logs -= logs.max(axis=1, keepdims=True)
    pmf = np.exp(logs)
    pmf /= pmf.sum(axis=1, keepdims=True)
    return start, pmf


@lru_cache(maxsize=8)
def _log_integers(size: int) -> np.ndarray:
    """log(i) for i in [0, size), log(0) = -inf."""
    with np.errstate(divide="ignore"):
        return np.log(np.arange(size, dtype=np.float64))


def lower_tail(k, c, n: int, first, second, extra: np.ndarray | None = None) -> np.ndarray:
    """P(Bin(k, first) + Bin(n - k, second) [+ T] <= c), elementwise (rates scalar or per row).

    ``extra``: the law of an independent T >= 0 (index = value), the dummies a relay
    added to the count (``deniable.noised``); the second binomial's law is convolved
    with it before its cumulative sums are taken.
    """
    k = np.atleast_1d(np.asarray(k, dtype=np.int64))
    c = np.broadcast_to(np.asarray(c, dtype=np.int64), k.shape)
    first = np.broadcast_to(np.asarray(first, dtype=np.float64), k.shape)
    second = np.broadcast_to(np.asarray(second, dtype=np.float64), k.shape)
    width = int(min(n + 1, 2 * _half_window(np.array(n), np.array(0.5)) + 1))
    result = np.empty(k.shape, dtype=np.float64)
    rows = max(1, _CELLS // width)
    for begin in range(0, k.size, rows):
        part = slice(begin, begin + rows)
        start_a, pmf_a = _window_pmf(k[part], first[part], width)
        start_b, pmf_b = _window_pmf(n - k[part], second[part], width)
        if extra is not None:
            pmf_b = _convolve_rows(pmf_b, extra)
        cdf_b = np.minimum(np.cumsum(pmf_b, axis=1), 1.0)
        span = cdf_b.shape[1]
        # P(A + B <= c) = sum_j P(A = j) P(B <= c - j): index c - j into B's window.
        index = (c[part] - start_a - start_b)[:, None] - np.arange(width)[None, :]
        values = np.take_along_axis(cdf_b, np.clip(index, 0, span - 1), axis=1)
        values[index < 0] = 0.0
        values[index >= span] = 1.0
        result[part] = np.einsum("ij,ij->i", pmf_a, values)
    return result


def _convolve_rows(rows: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Each row convolved with ``kernel`` (FFT; round-off about 1e-16, negatives clipped)."""
    size = rows.shape[1] + kernel.size - 1
    if kernel.size <= 32:
        result = np.zeros((rows.shape[0], size))
        for shift, weight in enumerate(kernel):
            result[:, shift : shift + rows.shape[1]] += weight * rows
        return result
    length = 1 << (size - 1).bit_length()
    product = np.fft.rfft(rows, length, axis=1) * np.fft.rfft(kernel, length)[None, :]
    return np.maximum(np.fft.irfft(product, length, axis=1)[:, :size], 0.0)


@lru_cache(maxsize=256)
def noise_law(noise: tuple | None) -> np.ndarray | None:
    """The law of the dummies added to one count, from ``noise`` = (law, copies): the sum
    of ``copies`` independent draws (``deniable.dummies.dummy_total_law``); None for None."""
    if noise is None:
        return None
    from .dummies import dummy_total_law

    law = np.asarray(dummy_total_law(noise[0], noise[1]), dtype=np.float64)
    return law / law.sum()


def _count_range(n: int, noise: tuple | None) -> int:
    """The largest observed count: n plus the most dummies that can land on it."""
    extra = noise_law(noise)
    return n + (0 if extra is None else extra.size - 1)


def _last_true(predicate, rows: int, top: int, low=None, high=None) -> np.ndarray:
    """Per row, the largest k in [0, top] with the predicate true (it falls with k), else -1.

    ``low`` (a k known true, or -1) and ``high`` (a k known false, or top + 1) narrow the
    search per row where a bracket is known; by default the whole range.
    """
    low = np.full(rows, -1, dtype=np.int64) if low is None else np.array(low, dtype=np.int64)
    high = (
        np.full(rows, top + 1, dtype=np.int64) if high is None else np.array(high, dtype=np.int64)
    )
    while True:
        active = np.nonzero(high - low > 1)[0]
        if active.size == 0:
            return low
        middle = (low[active] + high[active]) // 2
        holds = predicate(active, middle)
        low[active[holds]] = middle[holds]
        high[active[~holds]] = middle[~holds]


def count_bounds(
    counts: np.ndarray,
    n: int,
    p: float,
    q: float,
    alpha: float | np.ndarray,
    noise: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(k_lo, k_hi) per count for C ~ Bin(k, p) + Bin(n - k, q), at level 1 - alpha.

    k_hi = max{k : P_k(C <= c) > α/2}, a search over k (the tail falls with k);
    k_lo = min{k : P_k(C >= c) > α/2}, the same search over j = n - k, since
    n - C ~ Bin(j, 1 - q) + Bin(n - j, 1 - p) and P_k(C >= c) = P(n - C <= n - c)
    falls with j.  ``alpha`` may differ per count; all searches run together.

    With ``noise`` = (law, copies), C' = C + T with T the independent dummies
    (:func:`noise_law`): P_k(C' <= c) still falls with k (T does not depend on k), and
    the mirror is M - C' = (n - C) + (T_max - T), M = n + T_max.
    """
    last = _searches(counts, n, p, q, alpha, noise=noise)
    return _published(last, n)


def _searches(counts, n: int, p: float, q: float, alpha, bracket=None, noise=None) -> np.ndarray:
    """The raw searches of :func:`count_bounds`: max k (first half), max j = n - k (second).

    ``bracket`` = (known true, known false) per row narrows each search.
    """
    counts = np.asarray(counts, dtype=np.int64).ravel()
    size = counts.size
    threshold = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (size,)) / 2 - SLACK
    targets = np.concatenate([counts, _count_range(n, noise) - counts])
    first = np.repeat([p, 1 - q], size)
    second = np.repeat([q, 1 - p], size)
    thresholds = np.concatenate([threshold, threshold])
    extra = noise_law(noise)

    def holds(rows, k):
        if extra is None:
            return lower_tail(k, targets[rows], n, first[rows], second[rows]) > thresholds[rows]
        result = np.empty(rows.size, dtype=bool)
        for half, law in ((rows < size, extra), (rows >= size, extra[::-1])):
            part = rows[half]
            tail = lower_tail(k[half], targets[part], n, first[part], second[part], law)
            result[half] = tail > thresholds[part]
        return result

    low, high = (None, None) if bracket is None else bracket
    return _last_true(holds, 2 * size, n, low, high)


def _published(last: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    size = last.size // 2
    low = np.clip(n - last[size:], 0, n)
    high = np.maximum(np.clip(last[:size], 0, n), low)
    return low, high


# -- option sampling -------------------------------------------------------------------------


def _hypergeometric(n: int, k: np.ndarray, sample: int) -> np.ndarray:
    """Hyp(h; n, k, sample) for h = 0..sample, one row per k.

    From the ratio pmf(h + 1)/pmf(h) = (k - h)(N - h) / ((h + 1)(n - k - N + h + 1)):
    cumulative sums of log-ratios of moderate size, renormalised to sum to one.
    """
    k = np.asarray(k, dtype=np.int64)[:, None]
    h = np.arange(sample + 1, dtype=np.int64)[None, :]
    valid = (h <= k) & (sample - h <= n - k)
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = (
            np.log(np.maximum(k - h[:, :-1], 0).astype(np.float64))
            + np.log(np.maximum(sample - h[:, :-1], 0).astype(np.float64))
            - np.log(h[:, :-1] + 1.0)
            - np.log(np.maximum(n - k - sample + h[:, :-1] + 1, 0).astype(np.float64))
        )
        # Start the recurrence at the first valid h: zero the steps before it.
        first = np.maximum(sample - (n - k), 0)
        steps = np.where(h[:, :-1] < first, 0.0, steps)
        logs = np.concatenate([np.zeros((k.shape[0], 1)), np.cumsum(steps, axis=1)], axis=1)
    logs = np.where(valid, logs, -np.inf)
    logs -= logs.max(axis=1, keepdims=True)
    pmf = np.exp(logs)
    return pmf / pmf.sum(axis=1, keepdims=True)


def sampled_bounds(
    yes: int, sampled: int, n: int, keep: float, alpha: float | tuple[float, ...]
) -> tuple[int, int] | list[tuple[int, int]]:
    """(k_lo, k_hi) for option sampling: ``yes`` reports (v, 1) among ``sampled`` with index v.

    One pair for one ``alpha``, a list of pairs for a tuple of levels (the
    conditional tails are computed once and shared).
    """
    alphas = alpha if isinstance(alpha, tuple) else (alpha,)
    holders = np.arange(sampled + 1)
    # Given h sampled holders: yes ~ Bin(h, keep) + Bin(N - h, 1 - keep), and
    # N - yes ~ Bin(N - h, keep) + Bin(h, 1 - keep).
    at_most = lower_tail(holders, yes, sampled, keep, 1 - keep)
    at_least = lower_tail(sampled - holders, sampled - yes, sampled, keep, 1 - keep)
    levels = len(alphas)
    thresholds = np.tile(np.asarray(alphas) / 2 - SLACK, 2)
    tails = np.stack([at_most] * levels + [at_least] * levels)

    def holds(rows, k):
        # Rows < levels search k (P_k(yes <= a) falls with k); the others j = n - k.
        holders_k = np.where(rows < levels, k, n - k)
        return (
            np.einsum("ij,ij->i", _hypergeometric(n, holders_k, sampled), tails[rows])
            > thresholds[rows]
        )

    last = _last_true(holds, 2 * levels, n)
    pairs = []
    for i in range(levels):
        low = min(max(n - int(last[levels + i]), 0), n)
        pairs.append((low, max(min(max(int(last[i]), 0), n), low)))
    return pairs if isinstance(alpha, tuple) else pairs[0]


# -- the family --------------------------------------------------------------------------------


def check_n(n: int) -> int:
    if not 0 < n <= MAX_N:
        raise InvalidParameter(f"exact-tail intervals are computed for 1 <= n <= {MAX_N:,}")
    return n


def pure_interval(
    counts: np.ndarray,
    n: int,
    p: float,
    q: float,
    alphas: tuple[float, ...],
    noise: tuple | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """[k_lo/n, k_hi/n] per support count (any shape) of a pure oracle, at each level
    (observed counts, dummies included, when ``noise`` is given)."""
    check_n(n)
    counts = np.asarray(counts)
    flat = np.rint(counts).astype(np.int64).ravel()
    most = _count_range(n, noise)
    if flat.size and (flat.min() < 0 or flat.max() > most):
        raise InvalidParameter(f"support counts must lie in [0, {most}]")
    levels = np.repeat(np.asarray(alphas, dtype=np.float64), flat.size)
    low, high = count_bounds(np.tile(flat, len(alphas)), n, p, q, levels, noise)
    return [
        (
            (low[i * flat.size : (i + 1) * flat.size] / n).reshape(counts.shape),
            (high[i * flat.size : (i + 1) * flat.size] / n).reshape(counts.shape),
        )
        for i in range(len(alphas))
    ]


def sampling_interval(
    statistics: np.ndarray, n: int, options: int, keep: float, alphas: tuple[float, ...]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per option (last axis of the 2m statistics: yes counts, then no counts), per level."""
    check_n(n)
    statistics = np.asarray(statistics, dtype=np.int64)
    yes, no = statistics[..., :options], statistics[..., options:]
    if yes.size and (min(yes.min(), no.min()) < 0 or (yes + no).max() > n):
        raise InvalidParameter(f"option sampling counts must be >= 0 and sum to <= n = {n}")
    ends = np.empty((len(alphas), 2, *yes.shape))
    for index in np.ndindex(yes.shape):
        pairs = sampled_bounds(int(yes[index]), int(yes[index] + no[index]), n, keep, alphas)
        for level, (low, high) in enumerate(pairs):
            ends[(level, 0, *index)] = low / n
            ends[(level, 1, *index)] = high / n
    return [(ends[level, 0], ends[level, 1]) for level in range(len(alphas))]


@lru_cache(maxsize=512)
def pure_widest_half_width(
    n: int, p: float, q: float, alpha: float, noise: tuple | None = None
) -> float:
    """The widest half-width (k_hi - k_lo)/(2n) over every count 0..n, or an upper bound on it.

    Data-free: the worst case over the true shares, published as the family's
    nominal width.

    A branch-and-bound search over the counts, which needs two facts about the
    exact interval ends (``count_bounds``'s searches):

    1. *Monotone in c.*  P_k(C <= c) rises and P_k(C >= c) falls with c, so
       k_hi(c) and k_lo(c) never decrease.  Hence for a < c < b,
       k_hi(c) - k_lo(c) <= k_hi(b) - k_lo(a).
    2. *At least one k per count.*  Under the coupling C_{k+1} <= C_k + 1,
       P_{k+1}(C <= c + 1) >= P_k(C <= c), so k_hi(c + 1) >= k_hi(c) + 1 while
       k_hi(c) lies in [0, n); mirrored, k_lo(c + 1) >= k_lo(c) + 1 while k_lo
       lies in [1, n).  Where both ends of a bracket are such intervals (and
       k_lo <= k_hi there), the bound tightens to k_hi(b) - k_lo(a) - (b - a).

    Both hold for the computed tails to rounding (far below ``SLACK``); the
    tests compare the search with every count.  The counts start on a grid of
    17 over 0..n, and a bracket (a, b) is split while its bound exceeds the
    widest interval found; each new count's searches start from the bracket
    fact 1 gives, so they cost a few tail evaluations instead of log2(n).  When
    no bracket can beat the widest found, that is the maximum over every count.
    Where the widths are nearly flat (binary randomized response: the count's
    variance n p*(1 - p*) does not depend on k) or n is large, the search
    splits, once ``_WIDEST_EXACT_COUNTS`` counts are searched, only the brackets
    whose bound exceeds the widest by more than ``WIDEST_TOLERANCE``, and stops
    when none is left or at ``_WIDEST_MAX_COUNTS`` counts; it then publishes the
    largest bound instead, an upper bound on every count's width (against the
    maximum over every count: +1.9% for binary RR at ε = 1 and +1.3% at ε = 4,
    n = 20,000; exact for GRR at ε = 1 and 5 options, n = 20,000).  The first
    call costs about 1 s at n = 20,000 and 2 to 6 s at n = 100,000; it is cached.

    With ``noise`` the counts run over 0..n + T_max; both facts still hold (T is
    independent of k, so the coupling C'_{k+1} <= C'_k + 1 keeps the same T).
    """
    check_n(n)
    counts = np.unique(np.linspace(0, _count_range(n, noise), _GRID).round().astype(np.int64))
    last = _searches(counts, n, p, q, alpha, noise=noise)
    while True:
        widest, bound = _brackets(counts, last, n)
        exact = counts.size < _WIDEST_EXACT_COUNTS
        open_ = bound > (widest if exact else widest * (1 + WIDEST_TOLERANCE))
        if not open_.any() or counts.size >= _WIDEST_MAX_COUNTS:
            return max(widest, int(bound.max())) / (2 * n)
        left = np.nonzero(open_)[0]
        middles = (counts[left] + counts[left + 1]) // 2
        size, added = counts.size, middles.size
        # Fact 1: k_hi(middle) lies in [k_hi(a), k_hi(b)], and j = n - k_lo in [j(b), j(a)];
        # fact 2, where its chain holds, narrows each by the steps from a and to b.
        top_a, top_b = last[left], last[left + 1]
        j_a, j_b = last[size + left], last[size + left + 1]
        after, before = middles - counts[left], counts[left + 1] - middles
        top_chain = (top_a >= 0) & (top_b < n)
        lo_chain = (n - j_a >= 1) & (n - j_b <= n)
        known_true = np.concatenate(
            [top_a + np.where(top_chain, after, 0), j_b + np.where(lo_chain, before, 0)]
        )
        known_false = (
            np.concatenate(
                [top_b - np.where(top_chain, before, 0), j_a - np.where(lo_chain, after, 0)]
            )
            + 1
        )
        found = _searches(middles, n, p, q, alpha, (known_true, known_false), noise)
        order = np.argsort(np.concatenate([counts, middles]), kind="stable")
        counts = np.concatenate([counts, middles])[order]
        last = np.concatenate(
            [
                np.concatenate([last[:size], found[:added]])[order],
                np.concatenate([last[size:], found[added:]])[order],
            ]
        )


def _brackets(counts: np.ndarray, last: np.ndarray, n: int) -> tuple[int, np.ndarray]:
    """(widest k_hi - k_lo at the counts searched, the bound per bracket still to split)."""
    low, high = _published(last, n)
    size = counts.size
    top, bottom = last[:size], n - last[size:]  # k_hi and k_lo before clipping
    # Fact 2 holds along (a, b) when both ends are intervals strictly inside [0, n].
    inside = (top >= 0) & (top < n) & (bottom >= 1) & (bottom <= top)
    gap = np.diff(counts)
    bound = (high[1:] - low[:-1]).astype(np.int64) - np.where(inside[:-1] & inside[1:], gap, 0)
    return int((high - low).max()), np.where(gap > 1, bound, -1)


@lru_cache(maxsize=512)
def sampling_typical_half_width(n: int, options: int, keep: float, alpha: float) -> float:
    """Half-width at the expected N = n/m reports per option and half of them (v, 1).

    Option sampling's variance does not depend on the truth, so this is the
    interval's width away from 0 and 1 (data-free).
    """
    check_n(n)
    sampled = max(1, n // options)
    widths = []
    for yes in (sampled // 2, (sampled + 1) // 2):
        low, high = sampled_bounds(yes, sampled, n, keep, alpha)
        widths.append((high - low) / (2 * n))
    return max(widths)


# -- the family's entry points (``deniable.estimation`` publishes it) ----------------------------

# Published when n <= MAX_N and categories * sqrt(n) <= WORK, and for option sampling also
# n sqrt(n / m) <= SAMPLING_WORK (its mixture costs about that many cells per option), so a
# question's intervals take well under a second; the rule depends on n, d and the mechanism
# only, never on the data.
WORK = 10_000
SAMPLING_WORK = 3_000_000


def available(tail: tuple, n: int, categories: int) -> bool:
    """Whether the family is computed for n respondents and ``categories`` estimates."""
    if not (0 < n <= MAX_N and 1 <= categories and categories * math.sqrt(n) <= WORK):
        return False
    return tail[0] == "pure" or n * math.sqrt(n / tail[2]) <= SAMPLING_WORK


def interval(
    tail: tuple, statistics: np.ndarray, n: int, alphas: tuple[float, ...]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(lower, upper) shares at each level, from a mechanism's statistics (``tail``: its model)."""
    if tail[0] == "pure":
        return pure_interval(statistics, n, tail[1], tail[2], alphas, _noise(tail))
    return sampling_interval(statistics, n, tail[2], tail[1], alphas)


def nominal_half_width(tail: tuple, n: int, alpha: float) -> float:
    """The data-free half-width used to pick the tightest family and to plan."""
    if tail[0] == "pure":
        return pure_widest_half_width(n, tail[1], tail[2], alpha, _noise(tail))
    return sampling_typical_half_width(n, tail[2], tail[1], alpha)


def _noise(tail: tuple) -> tuple | None:
    """A pure tail's dummies, (law, copies), when ``deniable.noised`` added them."""
    return tuple(tail[3:5]) if len(tail) > 3 else None
