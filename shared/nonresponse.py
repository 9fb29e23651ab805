"""Results of optional and conditional questions: shares among those who answered, and who did not.

A question with extras (``declined``, ``not_applicable``: docs/protocol.md §5.5) is
estimated over its whole domain, extras included, with the mechanism's own unbiased
estimator (Wang, Blocki, Li, Jha 2017 for the frequency oracles; Duchi, Jordan,
Wainwright 2013 for numbers).  What is published, one row each (``label``, ``share_of``):

* every answer value v, ``share_of`` "answered": f_v / A, the share among those who
  answered, A = 1 - Σ f_extra (for multiple choice each option's share among them);
* ``declined``, ``share_of`` "applicable": f_declined / (1 - f_not_applicable);
* ``not_applicable``, ``share_of`` "all": f_not_applicable;
* a scale: ``mean`` (mean point among those who answered); 11 points: ``nps``, the net
  promoter score 100 (f_9 + f_10 - Σ_{v<=6} f_v) / A in points;
* a number: ``mean`` among those who answered.

A scale everyone answers (no extras: A = 1 exactly) publishes its shares as a single-choice
question's frequencies, with every family's bounds and the tightest named
(:func:`_required_scale`), and its mean and NPS with the construction below.

The intervals are built from ratios of unbiased estimates (consistent, not unbiased), with
:func:`deniable.intervals.ratio_interval`, the construction of means by category
(``deniable.crosstab``); the point published beside each is then chosen inside it
(:func:`consistent_points`): the shares among those who answered are a distribution (they
add to one), and a scale's mean and NPS are those of the published shares.  Choosing a point
is post-processing: no interval's coverage changes.  The intervals:

* a share among those who answered, or who declined among those asked: the numerator's
  interval at β/2 and the denominator's at β/2 (split evenly among the extras it
  subtracts); both cover with probability >= 1 - β (union bound), and then the ratio's
  interval covers;
* a scale's mean and NPS: the narrower (by its data-free half-width) of the simultaneous
  construction below and Hoeffding's interval on the weighted sum at β/2 with A at β/2;
* the simultaneous intervals (and the scale's rows otherwise): the frequencies' simultaneous
  intervals at β cover every category at once with probability >= 1 - β; on that event
  every linear numerator Σ w_v f_v (w >= 0) lies in [Σ w_v L_v, Σ w_v U_v], every
  denominator likewise, so every ratio interval of the question covers at once;
* a number: B Σ sign / n estimates (1/n) Σ_answered t with the non-answers' coins counted
  as the midpoint (the Duchi mean's interval, at β/2), the status share A at β/2;
  N = T + A lies in [0, 2A], and the mean is lo + (hi - lo)/2 · N/A.

With relay noise (``noise``: the relay's dummies, ``deniable.noised``) every estimate above
takes them out and every interval takes in their spread, so each part keeps its own
coverage and the union bounds hold as before.  The dummies cover every output value of the
question's mechanism, the non-responses' included (docs/relay.md, "Optional, conditional
and scale questions"): the frequencies at β, β/2 and β/2e get the question's noise as it
is; a number's status and sign are parts of one report (status, sign), so each status value
sees two draws per batch (one per sign) and each sign k (one per status),
:meth:`~deniable.noised.DummyNoise.repeated`.  Hoeffding's interval on a scale's weighted
sum adds the dummies' terms, each an independent bounded summand
(:func:`_weighted_half_width`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .estimation import estimate_frequencies, estimate_mean, precision, primary_interval
from .intervals import ratio_interval
from .postprocess import norm_sub_within

if TYPE_CHECKING:
    from .noised import DummyNoise
    from .survey import Question

__all__ = ["METHOD", "SCALE_METHOD", "SHARE_OF", "consistent_points", "nonresponse_results"]

SHARE_OF = {"declined": "applicable", "not_applicable": "all"}
METHOD = (
    "ratio of unbiased estimates; its interval from the numerator's and the denominator's "
    "intervals (union bound): covers with probability >= 1 - beta"
)
SCALE_METHOD = (
    "shares: the tightest family; mean and net promoter score: the narrower (data-free) of "
    "Hoeffding's bound on the weighted sum and the shares' simultaneous intervals: covers with "
    "probability >= 1 - beta"
)


def _bounds(estimate: Any) -> dict[str, np.ndarray]:
    """The estimates and the published (tightest) family's per-category and simultaneous bounds."""
    chosen = estimate.intervals[estimate.tightest]
    both = estimate.intervals[estimate.simultaneous_tightest]
    return {
        "estimate": np.asarray(estimate.estimates, float),
        "lower": np.asarray(chosen.lower, float),
        "upper": np.asarray(chosen.upper, float),
        "simultaneous_lower": np.asarray(both.simultaneous_lower, float),
        "simultaneous_upper": np.asarray(both.simultaneous_upper, float),
    }


def _frequencies(
    question: Question, statistics: np.ndarray, n: int, beta: float, noise: DummyNoise | None
):
    oracle = question.oracle
    if oracle.kind == "multiple":
        return estimate_frequencies(
            oracle.per_category,
            statistics,
            n,
            beta=beta,
            categories=oracle.categories,
            normalize=False,
            noise=noise,
        )
    if oracle.kind == "numeric_status":
        status_noise = None if noise is None else noise.repeated(2)  # one per sign
        return estimate_frequencies(
            oracle.status_oracle, statistics[1:], n, beta=beta, noise=status_noise
        )
    return estimate_frequencies(oracle, statistics, n, beta=beta, noise=noise)


def _sign_noise(question: Question, noise: DummyNoise | None) -> DummyNoise | None:
    """The dummies a number's sign total holds: one draw per status for each sign."""
    return None if noise is None else noise.repeated(question.oracle.statuses)


def _row(label: str, share_of: str, estimate: float, bounds, simultaneous, **more) -> dict:
    value = None if not np.isfinite(estimate) else float(estimate)
    return {
        "label": label,
        "share_of": share_of,
        "estimate": value,
        "lower": float(bounds[0]),
        "upper": float(bounds[1]),
        "tightest": "ratio",
        "simultaneous_lower": float(simultaneous[0]),
        "simultaneous_upper": float(simultaneous[1]),
        "simultaneous_tightest": "ratio",
        **more,
    }


def _ratio(n_hat, d_hat):
    """The ratio of unbiased estimates, unclipped (NaN when d_hat <= 0); the published point is
    chosen from it by :func:`consistent_points`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d_hat > 0, n_hat / d_hat, np.nan)


def nonresponse_results(
    question: Question,
    statistics: np.ndarray,
    n: int,
    beta: float,
    noise: DummyNoise | None = None,
) -> dict[str, Any]:
    """The published rows of a question with extras, or a scale (see the module docstring);
    ``noise``: the relay's dummies inside ``statistics``, n the real respondents."""
    statistics = np.asarray(statistics, dtype=np.int64)
    extras = question.extras
    e = len(extras)
    frequencies = _frequencies(question, statistics, n, beta, noise)
    full = _bounds(frequencies)
    if not e:  # a scale everyone answered: A = 1 exactly, its shares the frequencies
        return _required_scale(question, frequencies, full, n, beta, noise)
    half = _bounds(_frequencies(question, statistics, n, beta / 2, noise))
    split = _bounds(_frequencies(question, statistics, n, beta / (2 * e), noise))
    base = len(full["estimate"]) - e  # answer values (a number: the one status "answered")
    where = {label: base + i for i, label in enumerate(extras)}
    every = slice(base, base + e)

    a_hat = 1 - full["estimate"][every].sum()
    a_low, a_high = 1 - split["upper"][every].sum(), 1 - split["lower"][every].sum()  # β/2
    # The simultaneous event: every category covered at once, with probability >= 1 - β (a
    # number: every status at β/2, its sign's total at β/2).
    numeric = question.type == "numeric"
    simultaneous = half if numeric else full
    s_low, s_high = simultaneous["simultaneous_lower"], simultaneous["simultaneous_upper"]
    sa_low, sa_high = 1 - s_high[every].sum(), 1 - s_low[every].sum()
    if question.type != "multiple_choice":  # the answer values partition those who answered
        sa_low, sa_high = max(sa_low, s_low[:base].sum()), min(sa_high, s_high[:base].sum())
    rows = []
    if numeric:
        answered_bounds = ((half["lower"][0], half["upper"][0]), (sa_low, sa_high))
        rows.append(_number_row(question, statistics, n, beta, a_hat, answered_bounds, noise))
    else:
        shares = _ratio(full["estimate"][:base], a_hat)  # raw: the point is chosen below
        low, high = ratio_interval(half["lower"][:base], half["upper"][:base], a_low, a_high, 1)
        both = ratio_interval(s_low[:base], s_high[:base], sa_low, sa_high, 1)
        for i, label in enumerate(question.base_labels):
            rows.append(
                _row(label, "answered", shares[i], (low[i], high[i]), (both[0][i], both[1][i]))
            )
    for label in extras:
        i = where[label]
        if label == "declined" and "not_applicable" in where:
            j = where["not_applicable"]
            share = _ratio(full["estimate"][i], 1 - full["estimate"][j])
            bounds = ratio_interval(
                half["lower"][i], half["upper"][i], 1 - half["upper"][j], 1 - half["lower"][j], 1
            )
            both = ratio_interval(s_low[i], s_high[i], 1 - s_high[j], 1 - s_low[j], 1)
        else:
            share = full["estimate"][i]
            bounds = (full["lower"][i], full["upper"][i])
            both = (s_low[i], s_high[i])
        rows.append(_row(label, SHARE_OF[label], share, bounds, both))
    if question.type == "scale":
        rows += _scale_rows(
            question, full, frequencies, n, beta, a_hat, (a_low, a_high), (sa_low, sa_high), noise
        )
    rows = consistent_points(question, rows)
    families = _families(question, frequencies, statistics, n, beta, noise)
    return {
        **families,
        **_answered_precision(question, rows, families.get("precision")),
        "beta": beta,
        "tightest": "ratio",
        "simultaneous_tightest": "ratio",
        "method": METHOD,
        "covers": "respondents",
        "answered": float(np.clip(a_hat, 0.0, 1.0)) if np.isfinite(a_hat) else None,
        "categories": rows,
    }


def _required_scale(question: Question, frequencies, full, n: int, beta: float, noise) -> dict:
    """A scale everyone answered (no extras, A = 1): its shares are published as a single-choice
    question's frequencies (every family, the tightest named; :func:`primary_interval`),
    its mean and NPS with their own construction (:func:`_scale_rows`, A = 1 exactly)."""
    published = frequencies.to_dict(list(question.base_labels))
    family, simultaneous = published["tightest"], published["simultaneous_tightest"]
    rows = [
        {**primary_interval(category, family, simultaneous), "share_of": "answered"}
        for category in published.pop("categories")
    ]
    rows += _scale_rows(question, full, frequencies, n, beta, 1.0, (1.0, 1.0), (1.0, 1.0), noise)
    rows = consistent_points(question, rows)
    return {
        **published,
        **_answered_precision(question, rows, published.get("precision")),
        "method": SCALE_METHOD,
        "covers": "respondents",
        "answered": 1.0,
        "categories": rows,
    }


_POINT_ROWS = ("mean", "nps")


def consistent_points(question: Question, rows: list[dict]) -> list[dict]:
    """Every row's published point, chosen inside its own interval, the answer values' shares
    a distribution (single choice, yes/no, scale) and a scale's mean and NPS those of it.

    The intervals are built from the unbiased estimates (ratios of them) and cover as the
    module docstring proves; which point is published beside an interval is post-processing
    and changes no interval's coverage (Dwork and Roth 2014, Prop. 2.1: it costs no privacy
    either).  The shares among those who answered are the ratios f_v / A projected with
    Norm-Sub within their intervals (:func:`deniable.postprocess.norm_sub_within`; Wang,
    Lopuhaä-Zwakenberg, Li, Skoric, Li, NDSS 2020): non-negative, summing to one, each in its
    per-row and simultaneous interval, and for a scale with mean Σ v x_v and NPS
    100 (x_9 + x_10 - Σ_{v<=6} x_v) inside theirs.  The mean and NPS published are those of
    the published shares.  Where the intervals admit no such distribution (then some interval
    missed; or a scale's mean or NPS is off its interval by the projection's rounding), the
    interval is widened to take in its point: a superset of a covering interval covers, so
    every interval still covers with probability >= 1 - β.  Multiple choice options (each its
    own yes/no share), the declined and not-applicable shares and a number's mean take their
    estimate moved into their interval (clipped).  Each row keeps that estimate as ``raw``
    (the ratio, unclipped; a required scale's shares: the unbiased frequency).
    """
    for row in rows:  # the estimate the interval is built around, kept beside the point
        row["raw"] = row["estimate"]
    shares = [r for r in rows if r["share_of"] == "answered" and r["label"] not in _POINT_ROWS]
    points = {r["label"]: r for r in rows if r["label"] in _POINT_ROWS}
    raw = np.array([np.nan if r["estimate"] is None else r["estimate"] for r in shares], float)
    if question.type in ("multiple_choice", "numeric") or not np.isfinite(raw).all():
        for row in rows:  # a number's mean included; a scale's only when it has no shares
            if row["estimate"] is not None:
                row["estimate"] = min(max(row["estimate"], row["lower"]), row["upper"])
        if question.type == "scale":
            for row in points.values():
                row["estimate"] = None
        return [_hull(row) for row in rows]
    distribution = {id(row) for row in shares}
    for row in rows:  # the declined and not-applicable shares
        if (
            row["estimate"] is not None
            and id(row) not in distribution
            and row["label"] not in _POINT_ROWS
        ):
            row["estimate"] = min(max(row["estimate"], row["lower"]), row["upper"])
    low = np.array([max(r["lower"], r["simultaneous_lower"]) for r in shares])
    high = np.array([min(r["upper"], r["simultaneous_upper"]) for r in shares])
    weights = {}
    if question.type == "scale":
        values = np.array([int(r["label"]) for r in shares], float)
        weights["mean"] = (values - values[0], values[0], 1.0)
        if len(shares) == 11:
            weights["nps"] = (np.array([-1.0] * 7 + [0.0, 0.0, 1.0, 1.0]), 0.0, 100.0)
    slabs, targets = [], []
    for label, (w, offset, unit) in weights.items():
        row = points[label]
        bottom = max(row["lower"], row["simultaneous_lower"])
        top = min(row["upper"], row["simultaneous_upper"])
        if bottom <= top and row["estimate"] is not None:
            slabs.append((w, (bottom - offset) / unit, (top - offset) / unit))
            target = (min(max(row["estimate"], bottom), top) - offset) / unit
            targets.append((w, target))
    # The mean and NPS kept at their ratio estimates where the intervals allow it (a shift of
    # the shares alone would move them: Norm-Sub is biased near 0), else kept inside theirs.
    chosen, _ = norm_sub_within(raw, low, high, tuple(targets), tuple(slabs))
    for row, value in zip(shares, chosen, strict=True):
        row["estimate"] = float(value)
    for label, (w, offset, unit) in weights.items():
        points[label]["estimate"] = float(offset + unit * (w @ chosen))
    return [_hull(row) for row in rows]


def _hull(row: dict) -> dict:
    """The row with each interval widened, if need be, to take in its point."""
    point = row["estimate"]
    if point is None:
        return row
    for low, high in (("lower", "upper"), ("simultaneous_lower", "simultaneous_upper")):
        row[low], row[high] = min(row[low], point), max(row[high], point)
    return row


# What a result says of its interval families and precision, as other questions' results do.
_FAMILY_KEYS = (
    "variance_bound",
    "half_width",
    "simultaneous_half_width",
    "intervals",
    "precision",
    "uninformative",
    "respondents_for_ten_points",
    "respondents_for_ten_points_families",
)


_PRECISION_ORDER = ("ok", "imprecise", "uninformative")


def _answered_precision(question: Question, rows: list[dict], overall: str | None) -> dict:
    """The precision of what is published: the worse of the all-respondents estimates' and
    the widest row among those who answered (its interval's half-width over its range: a
    share's 1, a mean's answer range, the NPS's 200 points).  A question asked of few
    respondents has wide shares among them even when the all-respondents ones are narrow."""
    if overall is None:
        return {}
    if question.type == "numeric":
        spans = {"mean": float(question.hi - question.lo)}
    else:
        spans = {"nps": 200.0}
        if question.type == "scale":
            spans["mean"] = float(int(question.base_labels[-1]) - int(question.base_labels[0]))
    widest = max(
        (
            (row["upper"] - row["lower"]) / 2 / spans.get(row["label"], 1.0)
            for row in rows
            if row["share_of"] == "answered"
        ),
        default=0.0,
    )
    worse = max(overall, precision(widest), key=_PRECISION_ORDER.index)
    return {"precision": worse, "uninformative": worse == "uninformative"}


def _families(question: Question, frequencies, statistics, n: int, beta: float, noise) -> dict:
    """The interval families, precision and respondents for ±10 points of the estimates over
    all respondents (the frequencies; a number's mean with non-answers at the midpoint): a
    share among the fraction A who answered is about 1/A as wide."""
    if question.type == "numeric":
        sign = question.oracle.sign_oracle
        noise = _sign_noise(question, noise)
        described = estimate_mean(sign, statistics[:1], n, beta=beta, noise=noise).to_dict()
    else:
        described = frequencies.to_dict()
    return {key: described[key] for key in _FAMILY_KEYS if key in described}


def _scale_rows(
    question: Question,
    full,
    frequencies,
    n: int,
    beta: float,
    a_hat,
    answered,
    simultaneous,
    noise: DummyNoise | None,
) -> list[dict[str, Any]]:
    """The mean point and (11 points) the NPS among those who answered (module docstring).

    The simultaneous columns come from the frequencies' simultaneous event.  The published
    interval is the narrower, by its data-free half-width, of that one and Hoeffding's on the
    weighted sum (:func:`_weighted_half_width`) at β/2 with the answered share at β/2.
    """
    points = np.array([int(label) for label in question.base_labels], float)
    base = len(points)
    low, high = full["simultaneous_lower"][:base], full["simultaneous_upper"][:base]
    estimates = full["estimate"][:base]
    chosen = frequencies.intervals[frequencies.simultaneous_tightest]
    nominal = float(chosen.simultaneous_nominal_half_width)

    def weighted(weights: np.ndarray, span: float):
        total = float(weights @ estimates)
        both = ratio_interval(weights @ low, weights @ high, *simultaneous, span)
        single = both
        half = _weighted_half_width(question.oracle, weights, n, beta / 2, noise)
        if half is not None and half < nominal * float(weights.sum()):
            single = ratio_interval(total - half, total + half, *answered, span)
        return _ratio(np.asarray(total), np.asarray(a_hat)), single, both

    weights = points - points[0]  # >= 0
    value, single, both = weighted(weights, float(weights[-1]))
    rows = [
        _row(
            "mean",
            "answered",
            points[0] + value,
            (points[0] + single[0], points[0] + single[1]),
            (points[0] + both[0], points[0] + both[1]),
        )
    ]
    if base == 11:
        # NPS + 1 = (2 f_9 + 2 f_10 + f_7 + f_8) / A, in [0, 2].
        value, single, both = weighted(np.array([0] * 7 + [1, 1, 2, 2], float), 2.0)
        rows.append(
            _row(
                "nps",
                "answered",
                100 * (value - 1),
                (100 * (single[0] - 1), 100 * (single[1] - 1)),
                (100 * (both[0] - 1), 100 * (both[1] - 1)),
            )
        )
    return rows


def _weighted_half_width(
    oracle: Any, weights: np.ndarray, n: int, level: float, noise: DummyNoise | None = None
) -> float | None:
    """Hoeffding's half-width for Σ_v w_v f_v (w >= 0 over the answer values) at ``level``.

    For a pure frequency oracle the report's score s = Σ_v w_v 1[v ∈ S(y)] has mean
    q* W + (p* - q*) w_x (W = Σ w) and lies in [0, R], R = max w for a one-value support
    (direct encoding) and Σ w otherwise; the n scores are independent, so (Hoeffding 1963)
    |Σ w f̂ - Σ w f| <= R/(p* - q*) sqrt(ln(2/level)/(2n)) with probability >= 1 - level.

    With the relay's dummies (``noise``: k batches, D ~ law on [low, high] per output y)
    the observed score total adds Σ_{batches} Σ_y s(y) D_{b,y}, s(y) the score of output y
    alone; the estimate subtracts its mean.  Each of those k·m terms is independent of the
    reports and of each other and lies in an interval of length s(y) (high - low), so
    Hoeffding's inequality over all n + k·m summands gives

        |Σ w f̂ - Σ w f| <= sqrt((n R² + k (high - low)² Σ_y s(y)²) ln(2/level) / 2)
                           / (n (p* - q*)).

    None for an oracle without p*, q*.
    """
    p, q = getattr(oracle, "p_star", None), getattr(oracle, "q_star", None)
    if p is None or q is None or p == q:
        return None
    reach = float(weights.max() if oracle.direct_encoding else weights.sum())
    spread = n * reach * reach
    if noise is not None:
        from .noised import output_statistics

        outputs = output_statistics(oracle)  # (m, domain): support of each output alone
        scores = outputs[:, : weights.size] @ weights  # the extras weigh nothing
        law = noise.law
        spread += noise.batches * (law.high - law.low) ** 2 * float(scores @ scores)
    return math.sqrt(spread * math.log(2 / level) / 2) / (n * abs(p - q))


def _number_row(question: Question, statistics, n, beta, a_hat, answered_bounds, noise):
    """The mean among those who answered a number (see the module docstring): the signs'
    total at β/2 with the answered share's interval at β/2 (per row) or its simultaneous
    one at β/2 (the simultaneous columns)."""
    oracle = question.oracle
    sign = oracle.sign_oracle
    middle, scale = (sign.lo + sign.hi) / 2, (sign.hi - sign.lo) / 2
    mean = estimate_mean(sign, statistics[:1], n, beta=beta / 2, noise=_sign_noise(question, noise))
    chosen = mean.intervals[mean.tightest]
    t_hat = (mean.mean - middle) / scale
    t_low = (float(chosen.lower[0]) - middle) / scale
    t_high = (float(chosen.upper[0]) - middle) / scale
    ends = []
    for a_low, a_high in answered_bounds:
        low, high = ratio_interval(t_low + a_low, t_high + a_high, a_low, a_high, 2.0)
        ends.append((sign.lo + scale * float(low), sign.lo + scale * float(high)))
    value = float(_ratio(np.asarray(t_hat + a_hat), np.asarray(a_hat)))
    return _row("mean", "answered", sign.lo + scale * value, ends[0], ends[1])
