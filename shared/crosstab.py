"""Crosstabs of two questions, written once on the oracle layer.

Every mechanism a crosstab can use gives each report a row of integer
*scores* z (one per category) from which the per-report estimate

    ê(x) = (z_x - offset) / slope

is unbiased for the respondent's indicator 1[answer = x] (formula sheet,
"Joint answers"; Wang, Blocki, Li, Jha, USENIX Security 2017, for pure
oracles):

* a pure frequency oracle: z_x = 1[x ∈ S(y)], offset q*, slope p* - q*;
* option sampling: z_x = +1 for the report (x, 1), -1 for (x, 0), else 0,
  offset -(2p-1)/m, slope 2(2p-1)/m (``deniable.mechanisms.option_sampling``);
* one binary RR per option (multiple choice): z_x = the option's bit;
* a numeric mechanism (one column): the report's integer z, whose affine image
  ``estimate([z], 1)`` is unbiased for the respondent's number.

A respondent randomizes every question with independent coins, so for two
questions A and B of one submission E[ê_A(x) ê_B(x')] = 1[a = x] 1[b = x'],
and the joint share

    f(x, x') = (1/n) Σ_i ê_A,i(x) ê_B,i(x')
             = (M - o_B s_A(x) - o_A s_B(x') + n o_A o_B) / (n k_A k_B)

is unbiased, with M = Σ_i z_A,i z_B,iᵀ (the co-support count matrix), s_A, s_B
the marginal score sums, o the offsets and k the slopes.  (n, s_A, s_B, M) are
integers and additive over respondents: :class:`CrosstabStatistics` folds
incrementally like the per-question statistics.  Nothing new is sent or
charged: the crosstab is post-processing of reports already made (the two
questions' ε add up, as they always did).

Variance (per respondent i, independent coins):
Var[ê_A ê_B] = E[ê_A²] E[ê_B²] - (1[a = x] 1[b = x'])², with E[ê²] = m1 for a
holder of the category and m0 otherwise (from the oracle's score model).  So
Var f̂ = (θ v11 + α10 v10 + α01 v01 + α00 v00) / n with θ the joint share and
α the shares of the other three kinds of respondent (:func:`exact_variance`),
bounded for every truth by max(v..)/n (``variance_bound``).  For the inverted
families the bound θ v11 + (1 - θ) max(v10, v01, v00) is linear in θ, and
each summand is bounded, so ``deniable.estimation``'s three families apply
unchanged, per cell and simultaneously over the d_A × d_B cells (union bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InvalidParameter
from .estimation import (
    DEFAULT_BETA,
    Interval,
    ScoreModel,
    check_beta,
    interval_families,
    interval_summary,
    ratio_interval,
    score_model,
    tightest_family,
)
from .mechanisms.base import FrequencyOracle, Mechanism

__all__ = [
    "Axis",
    "CrosstabStatistics",
    "axis",
    "category_means",
    "cell_model",
    "cell_variances",
    "check_pair",
    "crosstab_statistics",
    "decode_stored",
    "estimate_crosstab",
    "exact_variance",
    "join_submissions",
    "joint_estimates",
    "question_crosstab",
    "support_rows",
]

# Reports turned into score rows at a time (bounds the n x d scratch arrays).
CHUNK = 1 << 16


# -- scores: what one report says about each category -------------------------------------------


def support_rows(oracle: FrequencyOracle, batch: np.ndarray) -> np.ndarray:
    """1[x ∈ S(y_i)] for every report i and value x: an (n, d) int8 array.

    Each oracle knows its support set (``FrequencyOracle.support_rows``); summed over
    reports it is ``oracle.support_counts(batch)`` (a test checks it for every oracle).
    """
    return oracle.support_rows(batch)


@dataclass(frozen=True, kw_only=True)
class Axis:
    """One question's per-report estimates as (score - offset) / slope; see the module docstring.

    ``model`` is the per-category score model of ``deniable.estimation`` (its
    variance gives E[ê²]); ``low``/``high`` bound a score.  A numeric axis has
    one column and estimates the respondent's number minus ``origin``.
    """

    mechanism: Any
    size: int
    offset: float
    slope: float
    low: float
    high: float
    numeric: bool = False
    origin: float = 0.0
    span: float = 1.0
    model: ScoreModel | None = None

    def scores(self, batch: np.ndarray) -> np.ndarray:
        """(n, size) scores of a decoded batch (the mechanism's ``report_scores``)."""
        return self.mechanism.report_scores(batch)

    @property
    def second_moments(self) -> tuple[float, float]:
        """(m0, m1): E[ê(x)²] for a respondent without, and with, category x."""
        model = self.model
        m0 = model.c0 / model.slope**2
        m1 = (model.c0 + model.c1) / model.slope**2 + 1.0
        return m0, m1

    @property
    def range(self) -> tuple[float, float]:
        """Smallest and largest value a per-report estimate ê can take."""
        return (self.low - self.offset) / self.slope, (self.high - self.offset) / self.slope


def axis(mechanism: Mechanism) -> Axis:
    """The :class:`Axis` of a question's mechanism (``Question.oracle``), or InvalidParameter."""
    if not isinstance(mechanism, Mechanism):
        raise InvalidParameter(f"no crosstab for {type(mechanism).__name__} reports")
    if mechanism.kind == "numeric":
        origin = float(mechanism.estimate(np.array([0]), 1)[0])
        step = float(mechanism.estimate(np.array([1]), 1)[0]) - origin
        # value - lo = (origin - lo) + step z = (z - offset) / slope
        bounded = mechanism.bounded_reports  # Duchi: ±1; additive noise is unbounded
        return Axis(
            mechanism=mechanism,
            size=1,
            offset=-(origin - mechanism.lo) / step,
            slope=1.0 / step,
            low=-1 if bounded else -np.inf,
            high=1 if bounded else np.inf,
            numeric=True,
            origin=mechanism.lo,
            span=mechanism.hi - mechanism.lo,
        )
    offset, slope, low, high = mechanism.score_line  # InvalidParameter: no crosstab
    return Axis(
        mechanism=mechanism,
        size=mechanism.categories,
        offset=offset,
        slope=slope,
        low=low,
        high=high,
        model=score_model(mechanism.per_category),
    )


def numeric_extent(numeric: Axis) -> tuple[float, float | None, float | None]:
    """(bound on E[w²], smallest w, largest w) of a numeric axis's w = value - lo.

    E[w²] = Var w + (E w)² <= variance_bound(1) + span²; the range is None when
    reports are unbounded (discrete Laplace: no Bernstein).
    """
    second = numeric.mechanism.variance_bound(1) + numeric.span**2
    low, high = numeric.range
    if not (np.isfinite(low) and np.isfinite(high)):
        return second, None, None
    return second, min(low, high), max(low, high)


# -- sufficient statistics -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CrosstabStatistics:
    """n respondents, their score sums per row and column category, and the co-score matrix."""

    n: int
    rows: np.ndarray
    columns: np.ndarray
    joint: np.ndarray

    @classmethod
    def zeros(cls, rows: int, columns: int) -> CrosstabStatistics:
        return cls(
            n=0,
            rows=np.zeros(rows, np.int64),
            columns=np.zeros(columns, np.int64),
            joint=np.zeros((rows, columns), np.int64),
        )

    def __add__(self, other: CrosstabStatistics) -> CrosstabStatistics:
        return CrosstabStatistics(
            n=self.n + other.n,
            rows=self.rows + other.rows,
            columns=self.columns + other.columns,
            joint=self.joint + other.joint,
        )

    def transposed(self) -> CrosstabStatistics:
        """The same statistics with rows and columns swapped."""
        return CrosstabStatistics(
            n=self.n, rows=self.columns, columns=self.rows, joint=self.joint.T.copy()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "rows": self.rows.tolist(),
            "columns": self.columns.tolist(),
            "joint": self.joint.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrosstabStatistics:
        rows = np.asarray(data["rows"], dtype=np.int64)
        columns = np.asarray(data["columns"], dtype=np.int64)
        joint = np.asarray(data["joint"], dtype=np.int64).reshape(rows.size, columns.size)
        return cls(n=int(data["n"]), rows=rows, columns=columns, joint=joint)


def crosstab_statistics(
    rows: Axis, columns: Axis, row_batch: np.ndarray, column_batch: np.ndarray
) -> CrosstabStatistics:
    """Statistics of aligned decoded batches (row i of both is one respondent)."""
    n = len(row_batch)
    if len(column_batch) != n:
        raise InvalidParameter("a crosstab needs both questions' reports of the same respondents")
    total = CrosstabStatistics.zeros(rows.size, columns.size)
    for start in range(0, n, CHUNK):
        a = rows.scores(row_batch[start : start + CHUNK])
        b = columns.scores(column_batch[start : start + CHUNK])
        if rows.mechanism.direct_encoding and columns.mechanism.direct_encoding:
            # one-hot rows: the co-support matrix is a 2-d histogram
            cells = np.asarray(row_batch[start : start + CHUNK], np.int64) * columns.size
            cells += np.asarray(column_batch[start : start + CHUNK], np.int64)
            joint = np.bincount(cells, minlength=rows.size * columns.size)
            joint = joint.reshape(rows.size, columns.size)
        elif rows.numeric or columns.numeric:  # integer sums that may exceed float precision
            joint = a.astype(np.int64).T @ b.astype(np.int64)
        else:  # exact: every entry is an integer below 2**53
            joint = np.rint(a.astype(np.float64).T @ b.astype(np.float64)).astype(np.int64)
        total = total + CrosstabStatistics(
            n=len(a),
            rows=a.sum(axis=0, dtype=np.int64),
            columns=b.sum(axis=0, dtype=np.int64),
            joint=joint.astype(np.int64),
        )
    return total


def wire_crosstab_statistics(
    rows: Axis, columns: Axis, row_payloads: list[str], column_payloads: list[str]
) -> CrosstabStatistics:
    """Statistics from aligned encoded reports, decoded strictly."""
    if not row_payloads:
        return CrosstabStatistics.zeros(rows.size, columns.size)
    return crosstab_statistics(
        rows,
        columns,
        rows.mechanism.decode_many(row_payloads),
        columns.mechanism.decode_many(column_payloads),
    )


def decode_stored(mechanism: Any, text: str) -> np.ndarray:
    """Stored reports concatenated into one hex text (each ``report_length`` long), decoded.

    The aggregator's fast path for reports it validated at ingest: one
    ``bytes.fromhex`` and the mechanism's strict unpacking (out-of-domain values
    still raise InvalidReport), no Python work per report.
    """
    width = mechanism.report_length
    if len(text) % width:
        raise InvalidParameter(f"stored reports are not {width}-character hex texts")
    data = np.frombuffer(bytes.fromhex(text), dtype=np.uint8)
    return mechanism._unpack_many(data.reshape(len(text) // width, mechanism.report_bytes))


# -- the estimator, its variance and intervals ------------------------------------------------


def joint_estimates(rows: Axis, columns: Axis, statistics: CrosstabStatistics) -> np.ndarray:
    """f(x, x') for every cell (module docstring); numeric columns give Σ ê_A(x) w / n."""
    n = statistics.n
    if n <= 0:
        raise InvalidParameter("a crosstab needs at least one respondent who answered both")
    oa, ob = rows.offset, columns.offset
    joint = statistics.joint.astype(np.float64)
    joint -= ob * statistics.rows[:, None] + oa * statistics.columns[None, :]
    joint += n * oa * ob
    return joint / (n * rows.slope * columns.slope)


def marginal_estimates(axis_: Axis, sums: np.ndarray, n: int) -> np.ndarray:
    """Each category's share among the crosstab's respondents (the mean ê)."""
    return (np.asarray(sums, np.float64) / n - axis_.offset) / axis_.slope


def cell_variances(rows: Axis, columns: Axis) -> dict[str, float]:
    """Per-respondent Var[ê_A(x) ê_B(x')] for the four kinds (holds x?, holds x'?)."""
    a0, a1 = rows.second_moments
    b0, b1 = columns.second_moments
    return {"11": a1 * b1 - 1.0, "10": a1 * b0, "01": a0 * b1, "00": a0 * b0}


def exact_variance(
    rows: Axis, columns: Axis, joint: Any, row_share: Any, column_share: Any, n: int
) -> np.ndarray:
    """Exact Var f̂(x, x') given the true joint and marginal shares of the n respondents."""
    v = cell_variances(rows, columns)
    joint = np.asarray(joint, np.float64)
    only_row = np.asarray(row_share, np.float64) - joint
    only_column = np.asarray(column_share, np.float64) - joint
    neither = 1.0 - joint - only_row - only_column
    return (joint * v["11"] + only_row * v["10"] + only_column * v["01"] + neither * v["00"]) / n


def cell_model(rows: Axis, columns: Axis) -> ScoreModel:
    """The score model of one cell: score ê_A ê_B, mean θ (the joint share), slope 1.

    Variance θ v11 + (1 - θ) max(v10, v01, v00) >= the exact mean variance for
    every table with joint share θ; |score - θ_i| <= max(P_max, 1 - P_min), P the
    products of the two estimates' extreme values.
    """
    v = cell_variances(rows, columns)
    rest = max(v["10"], v["01"], v["00"])
    ends = [x * y for x in rows.range for y in columns.range]
    return ScoreModel(
        slope=1.0, c0=rest, c1=v["11"] - rest, deviation=max(max(ends), 1.0 - min(ends))
    )


@dataclass(frozen=True, kw_only=True)
class CrosstabEstimate:
    """Joint shares of a d_A × d_B table with per-cell and simultaneous intervals of every family.

    ``intervals[family]`` holds (d_A, d_B) arrays; ``lower``/``upper`` are the
    worst-case Chebyshev ones (``half_width``), like one question's results.
    """

    n: int
    beta: float
    estimates: np.ndarray
    row_shares: np.ndarray
    column_shares: np.ndarray
    variance_bound: float
    half_width: float
    simultaneous_half_width: float
    intervals: dict[str, Interval] = field(default_factory=dict)
    tightest: str = "chebyshev"
    simultaneous_tightest: str = "chebyshev"

    @property
    def cells(self) -> int:
        return int(self.estimates.size)

    def to_dict(self, row_labels: list[str], column_labels: list[str]) -> dict[str, Any]:
        columns = {"estimate": self.estimates, "clipped": np.clip(self.estimates, 0.0, 1.0)}
        for family, interval in self.intervals.items():
            prefix = "" if family == "chebyshev" else f"{family}_"
            for end in ("lower", "upper", "simultaneous_lower", "simultaneous_upper"):
                columns[prefix + end] = getattr(interval, end)
        values = {name: np.asarray(col, float).tolist() for name, col in columns.items()}
        cells = [
            {"row": row, "column": column, **{name: values[name][i][j] for name in values}}
            for i, row in enumerate(row_labels)
            for j, column in enumerate(column_labels)
        ]
        return {
            **interval_summary(self, self.cells),
            "cells": cells,
            "row_shares": dict(zip(row_labels, self.row_shares.tolist(), strict=True)),
            "column_shares": dict(zip(column_labels, self.column_shares.tolist(), strict=True)),
        }


def estimate_crosstab(
    rows: Axis, columns: Axis, statistics: CrosstabStatistics, *, beta: float = DEFAULT_BETA
) -> CrosstabEstimate:
    """Unbiased joint shares of two categorical questions with every interval family."""
    beta = check_beta(beta)
    if rows.numeric or columns.numeric:
        raise InvalidParameter("a joint table needs two categorical questions; see category_means")
    n = statistics.n
    estimates = joint_estimates(rows, columns, statistics)
    model = cell_model(rows, columns)
    bound = max(cell_variances(rows, columns).values()) / n
    cells = estimates.size
    return CrosstabEstimate(
        n=n,
        beta=beta,
        estimates=estimates,
        row_shares=marginal_estimates(rows, statistics.rows, n),
        column_shares=marginal_estimates(columns, statistics.columns, n),
        variance_bound=bound,
        half_width=float(np.sqrt(bound / beta)),
        simultaneous_half_width=float(np.sqrt(bound * cells / beta)),
        intervals=interval_families(estimates, n, model, beta, cells, bound),
        tightest=tightest_family(n, model, beta, 0),
        simultaneous_tightest=tightest_family(n, model, beta / cells, 0),
    )


# -- a number by category: a ratio of two unbiased estimates ------------------------------------


@dataclass(frozen=True, kw_only=True)
class CategoryMeans:
    """Mean of a numeric question among holders of each category of a categorical one.

    For category x, N = (1/n) Σ ê_A(x) (value - lo) and D = (1/n) Σ ê_A(x) are
    unbiased for the holders' total (above lo) and share; the mean is lo + N/D.
    Intervals: N and D each get an interval at level β/2 (per category) or
    β/(2 d) (simultaneous); on the event that both cover (probability >= 1 - β
    by the union bound), and since 0 <= N <= span·D for the truth,

        lo + max(N_low, 0)/D_high <= mean <= lo + N_high/D_low   (D_low > 0),

    cut to [lo, hi] (the upper end is hi when D_low <= 0).  The point estimate
    lo + N̂/D̂ is a ratio of unbiased estimates (consistent, not unbiased).
    """

    n: int
    beta: float
    lo: float
    hi: float
    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    simultaneous_lower: np.ndarray
    simultaneous_upper: np.ndarray
    share: np.ndarray
    numerator_family: str
    denominator_family: str

    def to_dict(self, labels: list[str]) -> dict[str, Any]:
        names = ("mean", "lower", "upper", "simultaneous_lower", "simultaneous_upper", "share")
        columns = {name: np.asarray(getattr(self, name), float).tolist() for name in names}
        return {
            "n": self.n,
            "beta": self.beta,
            "lo": self.lo,
            "hi": self.hi,
            "method": (
                "ratio of unbiased estimates; interval from the numerator's "
                f"({self.numerator_family}) and the share's ({self.denominator_family}) "
                "intervals at β/2 each (union bound)"
            ),
            "guarantee": (
                f"each interval covers its category's true mean with probability >= "
                f"{100 * (1 - self.beta):g}%; the simultaneous ones cover all {len(labels)} at once"
            ),
            "covers": "respondents",
            "categories": [
                {"label": label, **{name: column[i] for name, column in columns.items()}}
                for i, label in enumerate(labels)
            ],
        }


def _family_bounds(
    estimates: np.ndarray, n: int, model: ScoreModel, level: float, categories: int, bound: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """(lower, upper, simultaneous lower, simultaneous upper, family) of the tightest family.

    The family is chosen from n, the model and the level only (never the data).
    """
    families = interval_families(estimates, n, model, level, categories, bound)
    # categories=0: among the families computed here (the exact tail is a per-question one).
    family = tightest_family(n, model, level, 0)
    chosen = families[family]
    simultaneous = families[tightest_family(n, model, level / categories, 0)]
    return (
        chosen.lower,
        chosen.upper,
        simultaneous.simultaneous_lower,
        simultaneous.simultaneous_upper,
        family,
    )


def category_means(
    categories: Axis, numeric: Axis, statistics: CrosstabStatistics, *, beta: float = DEFAULT_BETA
) -> CategoryMeans:
    """Mean of the numeric question by category, with conservative intervals (see CategoryMeans).

    ``statistics`` has the categorical question as rows and the numeric one as
    its single column.
    """
    beta = check_beta(beta)
    if categories.numeric or not numeric.numeric:
        raise InvalidParameter("category_means needs a categorical and a numeric question")
    n, d, span = statistics.n, categories.size, numeric.span
    totals = joint_estimates(categories, numeric, statistics)[:, 0]  # N̂: Σ ê_A(x) w / n
    shares = marginal_estimates(categories, statistics.rows, n)  # D̂
    second, w_low, w_high = numeric_extent(numeric)
    m0, m1 = categories.second_moments
    worst = max(m0, m1) * second  # E[ê_A²] E[w²] >= each respondent's variance
    deviation = None
    if w_low is not None:
        ends = [x * y for x in categories.range for y in (w_low, w_high)]
        deviation = max(max(ends), span - min(ends))
    total_model = ScoreModel(slope=1.0, c0=worst, deviation=deviation, high=span)
    n_low, n_high, ns_low, ns_high, total_family = _family_bounds(
        totals, n, total_model, beta / 2, d, worst / n
    )
    share_model = categories.model
    share_bound = share_model.worst_variance / (n * share_model.slope**2)
    d_low, d_high, ds_low, ds_high, share_family = _family_bounds(
        shares, n, share_model, beta / 2, d, share_bound
    )

    def ratio(low_total, high_total, low_share, high_share):
        lower, upper = ratio_interval(low_total, high_total, low_share, high_share, span)
        return numeric.origin + lower, numeric.origin + upper

    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        lower, upper = ratio(n_low, n_high, d_low, d_high)
        simultaneous_lower, simultaneous_upper = ratio(ns_low, ns_high, ds_low, ds_high)
        mean = numeric.origin + np.clip(np.where(shares > 0, totals / shares, np.nan), 0.0, span)
    return CategoryMeans(
        n=n,
        beta=beta,
        lo=numeric.origin,
        hi=numeric.origin + span,
        mean=mean,
        lower=lower,
        upper=upper,
        simultaneous_lower=simultaneous_lower,
        simultaneous_upper=simultaneous_upper,
        share=shares,
        numerator_family=total_family,
        denominator_family=share_family,
    )


# -- two questions of a survey ------------------------------------------------------------------

PRIVACY = (
    "No extra privacy cost: a crosstab is computed from the reports the respondents already "
    "sent, whose privacy loss is the sum of the questions' epsilon (sequential composition); "
    "linking them is post-processing."
)


def join_submissions(
    first: Axis,
    second: Axis,
    first_keys: np.ndarray,
    first_batch: np.ndarray,
    second_keys: np.ndarray,
    second_batch: np.ndarray,
) -> CrosstabStatistics:
    """Statistics of the submissions present on both sides (keys: one per report, unique)."""
    _, left, right = np.intersect1d(
        np.asarray(first_keys, np.int64),
        np.asarray(second_keys, np.int64),
        assume_unique=True,
        return_indices=True,
    )
    return crosstab_statistics(first, second, first_batch[left], second_batch[right])


def check_pair(rows: Any, columns: Any) -> None:
    """InvalidParameter unless two questions can be crosstabbed (``deniable.survey.Question``)."""
    if rows.id == columns.id:
        raise InvalidParameter("rows and columns must be two different questions")
    if rows.type == "numeric" and columns.type == "numeric":
        raise InvalidParameter("a crosstab needs at least one question that is not numeric")


def describe(question: Any) -> dict[str, Any]:
    return {
        "question": question.id,
        "text": question.text,
        "type": question.type,
        "mechanism": question.mechanism,
        "epsilon": question.epsilon,
        "labels": question.labels,
    }


def question_crosstab(
    rows: Any, columns: Any, statistics: CrosstabStatistics, *, beta: float = DEFAULT_BETA
) -> dict[str, Any]:
    """The published crosstab of two questions of a survey, from their joined statistics.

    ``kind`` is ``joint`` (:func:`estimate_crosstab`), ``means`` (one question
    numeric: :func:`category_means`) or ``empty`` (nobody answered both).
    """
    check_pair(rows, columns)
    beta = check_beta(beta)
    head = {
        "rows": describe(rows),
        "columns": describe(columns),
        "beta": beta,
        "epsilon": rows.epsilon + columns.epsilon,
        "privacy": PRIVACY,
    }
    if statistics.n == 0:
        return {**head, "kind": "empty", "n": 0, "estimate": None}
    if "numeric" in (rows.type, columns.type):
        categorical, numeric = (rows, columns) if columns.type == "numeric" else (columns, rows)
        if categorical is columns:
            statistics = statistics.transposed()
        means = category_means(
            axis(categorical.oracle), axis(numeric.oracle), statistics, beta=beta
        )
        return {
            **head,
            "kind": "means",
            "by": categorical.id,
            "of": numeric.id,
            **means.to_dict(categorical.labels),
        }
    estimate = estimate_crosstab(axis(rows.oracle), axis(columns.oracle), statistics, beta=beta)
    return {**head, "kind": "joint", **estimate.to_dict(rows.labels, columns.labels)}
