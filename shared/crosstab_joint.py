"""The joint table of two categorical questions: every cell's share, and shares among those who
answered both.

A respondent randomizes every question with independent coins, so for two questions A
and B of one submission E[ê_A(x) ê_B(x')] = 1[a = x] 1[b = x'] (per-report estimates of
``deniable.crosstab_statistics``), and the joint share

    f(x, x') = (1/n) Σ_i ê_A,i(x) ê_B,i(x')
             = (M - o_B s_A(x) - o_A s_B(x') + n o_A o_B) / (n k_A k_B)

is unbiased, with M = Σ_i z_A,i z_B,iᵀ (the co-support count matrix), s_A, s_B the
marginal score sums, o the offsets and k the slopes (Wang, Blocki, Li, Jha, USENIX
Security 2017, for the pure oracles' ê).  Nothing new is sent or charged: the crosstab is
post-processing of reports already made (the two questions' ε add up, as they always did).

Variance (per respondent i, independent coins): Var[ê_A ê_B] = E[ê_A²] E[ê_B²] -
(1[a = x] 1[b = x'])², with E[ê²] = m1 for a holder of the category and m0 otherwise
(from the oracle's score model).  So Var f̂ = (θ v11 + α10 v10 + α01 v01 + α00 v00) / n
with θ the joint share and α the shares of the other three kinds of respondent
(:func:`exact_variance`), bounded for every truth by max(v..)/n (``variance_bound``).  For
the inverted families the bound θ v11 + (1 - θ) max(v10, v01, v00) is linear in θ, and
each summand is bounded, so ``deniable.estimation``'s three families apply unchanged,
per cell and simultaneously over the d_A × d_B cells (union bound).

**Among those who answered both** (:func:`estimate_answered`).  The extras of a question
(declined, not applicable: docs/protocol.md §5.5) are values of its domain, at most one
per respondent and never with an answer, so 1[answered A] = 1 - Σ_e 1[a = e] and
u_A = 1 - Σ_e ê_A(e) is unbiased for it.  With independent coins the share of the
respondents who answered both,

    D = (1/n) Σ_i 1[answered A] 1[answered B],   D̂ = (1/n) Σ_i u_A,i u_B,i,

is unbiased (D̂ expands into the cells and margins of the whole table), and a cell's
share among them is N/D with N = f(x, x') (x, x' answers, not extras).  Intervals, the
ratio construction of means by category (:func:`deniable.intervals.ratio_interval`): N
at β/2 (its cell's interval; all answer cells at once at β/(2 cells)) and D at β/2; on
the event that both cover, which has probability >= 1 - β by the union bound, and since
0 <= N <= D for the truth, the ratio's interval covers.  D's interval: each summand
u_A u_B is a product of independent bounded variables with mean in {0, 1}, so its
variance is at most E[u_A²] E[u_B²] <= (w_A²/4 + 1)(w_B²/4 + 1), w the width of u's
range (Popoviciu's inequality, 1935: a variable on an interval of width w has variance at
most w²/4), and |u_A u_B - E| is at most the largest product of the ranges' ends (or 1 minus
the smallest): Chebyshev's and Bernstein's inequalities apply (:func:`product_model`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .crosstab_statistics import Axis, CrosstabStatistics, linear_range
from .errors import InvalidParameter
from .estimation import (
    DEFAULT_BETA,
    Interval,
    ScoreModel,
    check_beta,
    interval_families,
    interval_summary,
    ratio_interval,
    tightest_family,
)

__all__ = [
    "AnsweredCrosstab",
    "CrosstabEstimate",
    "answered_line",
    "cell_model",
    "cell_variances",
    "estimate_answered",
    "estimate_crosstab",
    "exact_variance",
    "family_bounds",
    "joint_estimates",
    "line_moment",
    "marginal_estimates",
    "product_model",
]


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


# -- among those who answered both -----------------------------------------------------------


def answered_line(axis_: Axis, extras: int) -> tuple[np.ndarray, float]:
    """(w, c) with u = w·ê + c = 1 - Σ_e ê(e): the per-report estimate of 1[answered]
    (the extras are the axis's last ``extras`` columns)."""
    weights = np.zeros(axis_.size)
    if extras:
        weights[-extras:] = -1.0
    return weights, 1.0


def line_moment(
    axis_: Axis, weights: np.ndarray, constant: float, top: float
) -> tuple[tuple[float, float], float]:
    """(range, bound on E[L²]) of a per-report linear estimate L = w·ê + c whose mean lies in
    [0, ``top``]: E[L²] = Var L + (E L)² <= width²/4 + top² (Popoviciu's inequality)."""
    if not np.any(weights):
        return (constant, constant), constant * constant
    low, high = linear_range(axis_, weights)
    return (low + constant, high + constant), (high - low) ** 2 / 4 + top * top


def product_model(
    first: tuple[tuple[float, float], float],
    second: tuple[tuple[float, float], float],
    top: float,
) -> ScoreModel:
    """The score model of X·Y, X and Y independent, each given as (range, bound on E[·²]),
    with E[XY] in [0, top]: Var XY <= E[X²] E[Y²]; |XY - E XY| <= max(max ends, top - min
    ends) over the products of the ranges' ends (module docstring)."""
    (range_x, second_x), (range_y, second_y) = first, second
    ends = [x * y for x in range_x for y in range_y]
    return ScoreModel(
        slope=1.0,
        c0=second_x * second_y,
        deviation=max(max(ends), top - min(ends)),
        high=top,
    )


def family_bounds(
    estimates: np.ndarray, n: int, model: ScoreModel, level: float, categories: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """(lower, upper, simultaneous lower, simultaneous upper, family) of the tightest family at
    ``level`` (simultaneous: ``level``/``categories``); chosen from n, the model and the level
    only, never from the data."""
    bound = model.worst_variance / (n * model.slope**2)
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


@dataclass(frozen=True, kw_only=True)
class AnsweredCrosstab:
    """Shares among those who answered both questions: the answer cells over D (module doc).

    ``estimates`` and the bounds are (answers of A) × (answers of B) arrays; ``answered``
    is D̂ with its interval at β/2; ``row_shares``/``column_shares`` the margins among D.
    """

    n: int
    beta: float
    estimates: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    simultaneous_lower: np.ndarray
    simultaneous_upper: np.ndarray
    answered: float
    answered_lower: float
    answered_upper: float
    row_shares: np.ndarray
    column_shares: np.ndarray
    numerator_family: str
    denominator_family: str

    def to_dict(self, row_labels: list[str], column_labels: list[str]) -> dict[str, Any]:
        def number(value: float) -> float | None:
            return float(value) if np.isfinite(value) else None

        names = ("lower", "upper", "simultaneous_lower", "simultaneous_upper")
        cells = []
        for i, row in enumerate(row_labels):
            for j, column in enumerate(column_labels):
                estimate = number(self.estimates[i, j])
                cells.append(
                    {
                        "row": row,
                        "column": column,
                        "estimate": estimate,
                        "clipped": None if estimate is None else min(max(estimate, 0.0), 1.0),
                        **{name: float(getattr(self, name)[i, j]) for name in names},
                    }
                )
        cells_count = len(cells)
        return {
            "n": self.n,
            "beta": self.beta,
            "share_of": "answered",
            "tightest": "ratio",
            "simultaneous_tightest": "ratio",
            "method": (
                "ratio of unbiased estimates: each cell's share of all respondents (its "
                f"{self.numerator_family} interval at β/2) over the share who answered both "
                f"(its {self.denominator_family} interval at β/2), union bound"
            ),
            "guarantee": (
                f"each interval covers its cell's true share among those who answered both "
                f"with probability >= {100 * (1 - self.beta):g}%; the simultaneous ones cover "
                f"all {cells_count} at once; for every n, no normal approximation"
            ),
            "covers": "respondents",
            "answered": {
                "estimate": number(self.answered),
                "lower": float(self.answered_lower),
                "upper": float(self.answered_upper),
            },
            "cells": cells,
            "row_shares": {
                label: number(value)
                for label, value in zip(row_labels, self.row_shares, strict=True)
            },
            "column_shares": {
                label: number(value)
                for label, value in zip(column_labels, self.column_shares, strict=True)
            },
        }


def estimate_answered(
    rows: Axis,
    columns: Axis,
    statistics: CrosstabStatistics,
    *,
    row_extras: int,
    column_extras: int,
    beta: float = DEFAULT_BETA,
) -> AnsweredCrosstab:
    """Each answer cell's share among the respondents who answered both questions, with
    per-cell and simultaneous ratio intervals (module docstring); the extras are each axis's
    last ``row_extras``/``column_extras`` categories."""
    beta = check_beta(beta)
    if rows.numeric or columns.numeric:
        raise InvalidParameter("a joint table needs two categorical questions; see category_means")
    n = statistics.n
    a, b = rows.size - row_extras, columns.size - column_extras
    joint = joint_estimates(rows, columns, statistics)
    row_all = marginal_estimates(rows, statistics.rows, n)
    column_all = marginal_estimates(columns, statistics.columns, n)
    (wa, ca), (wb, cb) = answered_line(rows, row_extras), answered_line(columns, column_extras)
    # D̂ = (1/n) Σ (wa·ê_A + ca)(wb·ê_B + cb), expanded into the table and its margins
    answered = float(wa @ joint @ wb + cb * (wa @ row_all) + ca * (column_all @ wb) + ca * cb)
    # Each answer row's (column's) share among those who answered the other question, over D.
    row_answered = joint[:a] @ wb + cb * row_all[:a]
    column_answered = wa @ joint[:, :b] + ca * column_all[:b]
    model = cell_model(rows, columns)
    n_low, n_high, ns_low, ns_high, numerator = family_bounds(
        joint[:a, :b], n, model, beta / 2, a * b
    )
    d_model = product_model(line_moment(rows, wa, ca, 1.0), line_moment(columns, wb, cb, 1.0), 1.0)
    d_low, d_high, _, _, denominator = family_bounds(np.array([answered]), n, d_model, beta / 2, 1)
    d_low, d_high = float(d_low[0]), float(d_high[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(answered > 0, joint[:a, :b] / answered, np.nan)
        row_shares = np.where(answered > 0, row_answered / answered, np.nan)
        column_shares = np.where(answered > 0, column_answered / answered, np.nan)
        lower, upper = ratio_interval(n_low, n_high, d_low, d_high, 1.0)
        simultaneous_lower, simultaneous_upper = ratio_interval(ns_low, ns_high, d_low, d_high, 1.0)
    return AnsweredCrosstab(
        n=n,
        beta=beta,
        estimates=shares,
        lower=lower,
        upper=upper,
        simultaneous_lower=simultaneous_lower,
        simultaneous_upper=simultaneous_upper,
        answered=answered,
        answered_lower=d_low,
        answered_upper=d_high,
        row_shares=row_shares,
        column_shares=column_shares,
        numerator_family=numerator,
        denominator_family=denominator,
    )
