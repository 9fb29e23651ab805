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

Point estimates are ratios of unbiased estimates (consistent, not unbiased); intervals
come from :func:`deniable.intervals.ratio_interval`, the construction of means by
category (``deniable.crosstab``):

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

from .estimation import estimate_frequencies, estimate_mean, precision
from .intervals import ratio_interval

if TYPE_CHECKING:
    from .noised import DummyNoise
    from .survey import Question

__all__ = ["METHOD", "SHARE_OF", "nonresponse_results"]

SHARE_OF = {"declined": "applicable", "not_applicable": "all"}
METHOD = (
    "ratio of unbiased estimates; its interval from the numerator's and the denominator's "
    "intervals (union bound): covers with probability >= 1 - beta"
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


def _ratio(n_hat, d_hat, span):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d_hat > 0, np.clip(n_hat / d_hat, 0.0, span), np.nan)


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
    half = _bounds(_frequencies(question, statistics, n, beta / 2, noise))
    split = _bounds(_frequencies(question, statistics, n, beta / (2 * e), noise)) if e else full
    base = len(full["estimate"]) - e  # answer values (a number: the one status "answered")
    where = {label: base + i for i, label in enumerate(extras)}
    every = slice(base, base + e)

    def answered(source):  # [low, high] of A = 1 - Σ f_extra, from the extras' intervals
        return 1 - source["upper"][every].sum(), 1 - source["lower"][every].sum()

    a_hat = 1 - full["estimate"][every].sum()
    a_low, a_high = answered(split)  # A at β/2, split among the extras
    # The simultaneous event: every category covered at once, with probability >= 1 - β (a
    # number: every status at β/2, its sign's total at β/2).
    numeric = question.type == "numeric"
    simultaneous = half if numeric else full
    s_low, s_high = simultaneous["simultaneous_lower"], simultaneous["simultaneous_upper"]
    sa_low, sa_high = 1 - s_high[every].sum(), 1 - s_low[every].sum()
    if question.type != "multiple_choice":  # the answer values partition those who answered
        sa_low, sa_high = max(sa_low, s_low[:base].sum()), min(sa_high, s_high[:base].sum())
    if not e:  # everyone answered: A = 1 exactly
        a_hat = sa_low = sa_high = 1.0
    rows = []
    if not e:  # a scale everyone answered: the shares are the frequencies themselves
        for i, label in enumerate(question.base_labels):
            bounds = (full["lower"][i], full["upper"][i])
            both = (s_low[i], s_high[i])
            rows.append(_row(label, "answered", np.clip(full["estimate"][i], 0, 1), bounds, both))
    elif numeric:
        answered_bounds = ((half["lower"][0], half["upper"][0]), (sa_low, sa_high))
        rows.append(_number_row(question, statistics, n, beta, a_hat, answered_bounds, noise))
    else:
        shares = _ratio(full["estimate"][:base], a_hat, 1.0)
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
            d_hat = 1 - full["estimate"][j]
            share = _ratio(full["estimate"][i], d_hat, 1.0)
            bounds = ratio_interval(
                half["lower"][i], half["upper"][i], 1 - half["upper"][j], 1 - half["lower"][j], 1
            )
            both = ratio_interval(s_low[i], s_high[i], 1 - s_high[j], 1 - s_low[j], 1)
        else:
            share = np.clip(full["estimate"][i], 0.0, 1.0)
            bounds = (full["lower"][i], full["upper"][i])
            both = (s_low[i], s_high[i])
        rows.append(_row(label, SHARE_OF[label], share, bounds, both))
    if question.type == "scale":
        answered = (a_low, a_high) if e else (1.0, 1.0)
        rows += _scale_rows(
            question, full, frequencies, n, beta, a_hat, answered, (sa_low, sa_high), noise
        )
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
        return _ratio(np.asarray(total), np.asarray(a_hat), span), single, both

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
    value = float(_ratio(np.asarray(t_hat + a_hat), np.asarray(a_hat), 2.0))
    return _row("mean", "answered", sign.lo + scale * value, ends[0], ends[1])
