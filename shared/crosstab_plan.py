"""Planning a crosstab: respondents for a ±h cell, or a cell's half-width at n.

The per-respondent cell estimate is the product Z = X·Y of the two questions'
per-report unbiased indicator estimates (``deniable.crosstab``),
independent given the answers.
For one respondent E[X] = θ = 1[a = x] in {0, 1} and Var X = v(θ)/slope²
(the per-category score model), so E[X²] = m(θ) = v(θ)/slope² + θ²; since
E[(XY)²] = E[X²] E[Y²] for independent X and Y,

    Var Z = m_A(θ_A) m_B(θ_B) - θ_A θ_B <= V = max over θ_A, θ_B in {0, 1},

a bound for every respondent and every truth.  With X in [x_lo, x_hi] (its
extreme values) and E Z in [0, 1], |Z - E Z| <= b = max(max XY, 1 - min XY)
over the ends.  Chebyshev gives ±sqrt(V/(n β)); Bernstein ±(sqrt(2 V L/n) +
b L/(3n)), L = ln(2/β); a whole d_A x d_B table at once uses β/(d_A d_B).
V and b come from ``deniable.crosstab`` (``cell_variances``, ``cell_model``),
the estimator the aggregator serves, so the plan and the result agree.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from . import crosstab
from .errors import InvalidParameter
from .estimation import check_beta
from .mechanisms import recommend
from .parameters import check_real
from .planner import targets

__all__ = ["CrosstabPlan", "cell_variance", "plan_crosstab"]


@dataclass(frozen=True, kw_only=True)
class CellRow:
    """One family's figures for one cell of a crosstab of two questions (see the module doc)."""

    family: str
    n: int | None
    half_width: float | None
    simultaneous_half_width: float | None
    n_for_half_width: int | None
    n_for_simultaneous_half_width: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class CrosstabPlan:
    rows_mechanism: str
    columns_mechanism: str
    cells: int
    variance: float  # V: bounds the per-respondent variance of a cell
    deviation: float  # b: bounds |Z - E Z| per respondent
    rows: tuple[CellRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows_mechanism": self.rows_mechanism,
            "columns_mechanism": self.columns_mechanism,
            "cells": self.cells,
            "variance": self.variance,
            "deviation": self.deviation,
            "rows": [row.to_dict() for row in self.rows],
        }


def cell_variance(first: Any, second: Any) -> tuple[float, float]:
    """(V, b): a cell's per-respondent variance bound and |Z - E Z| bound (module docstring).

    From ``deniable.crosstab`` (the served estimator), so plan and result agree:
    V is the largest of its four per-respondent variances (``cell_variances``),
    b the range bound of its cell score model (``cell_model``).
    """
    rows, columns = crosstab.axis(first), crosstab.axis(second)
    if rows.numeric or columns.numeric:
        raise InvalidParameter("crosstab cells need categorical or multiple-choice questions")
    variance = max(crosstab.cell_variances(rows, columns).values())
    return variance, float(crosstab.cell_model(rows, columns).deviation)


def cell_half_width(family: str, second: float, deviation: float, n: int, beta: float) -> float:
    """Worst-case half-width of one cell at n: Chebyshev or Bernstein (module docstring)."""
    if family == "chebyshev":
        return math.sqrt(second / (n * beta))
    log_term = math.log(2.0 / beta)
    return math.sqrt(2.0 * second * log_term / n) + deviation * log_term / (3.0 * n)


def cell_respondents(family: str, second: float, deviation: float, half: float, beta: float) -> int:
    """Smallest n with ``cell_half_width`` <= half (closed form, then checked upwards)."""
    if family == "chebyshev":
        n = math.ceil(second / (beta * half * half))
    else:
        # With t = 1/sqrt(n): (b L/3) t² + sqrt(2 M L) t - half = 0.
        log_term = math.log(2.0 / beta)
        a, b = deviation * log_term / 3.0, math.sqrt(2.0 * second * log_term)
        t = (-b + math.sqrt(b * b + 4.0 * a * half)) / (2.0 * a)
        n = max(1, math.floor(1.0 / (t * t)))
    while cell_half_width(family, second, deviation, n, beta) > half:
        n += 1
    while n > 1 and cell_half_width(family, second, deviation, n - 1, beta) <= half:
        n -= 1
    return n


def plan_crosstab(
    rows: tuple[str, int | None, float],
    columns: tuple[str, int | None, float],
    *,
    beta: float = 0.05,
    n: int | None = None,
    half_width: float | None = None,
) -> CrosstabPlan:
    """Per-cell (and whole-table) half-widths of a crosstab, or the n for a half-width.

    ``rows`` and ``columns`` are (question type, options, ε) of the two
    questions, each asked with its recommended mechanism.  Answers "how many
    respondents for a ±10-point crosstab cell" with ``half_width=0.1``.
    """
    beta = check_beta(beta)
    if (n is None) == (half_width is None):
        raise InvalidParameter("give exactly one of n and half_width")
    chosen = []
    for question_type, options, epsilon in (rows, columns):
        if question_type in ("numeric", "scale"):
            raise InvalidParameter(
                "a crosstab with a number or a scale is its mean for each answer to the other "
                "question, not a table of cells: plan each question's precision on its own"
            )
        if question_type not in ("yes_no", "single_choice", "multiple_choice"):
            raise InvalidParameter("crosstabs are of yes/no, single- and multiple-choice questions")
        candidates = targets(question_type, epsilon=epsilon, options=options)
        if question_type == "yes_no":
            chosen.append(candidates[0])
        else:
            best = recommend(options, epsilon, multiple=question_type == "multiple_choice")
            chosen.append(next(c for c in candidates if c.mechanism == best.mechanism))
    second, deviation = cell_variance(chosen[0].oracle, chosen[1].oracle)
    cells = chosen[0].categories * chosen[1].categories
    figures = []
    for family in ("chebyshev", "bernstein"):
        levels = (beta, beta / cells)
        if n is not None:
            per, both = (cell_half_width(family, second, deviation, n, b) for b in levels)
            needed = needed_both = None
        else:
            half = check_real("half_width", half_width)
            if not half > 0:
                raise InvalidParameter(f"half_width must be positive, got {half_width!r}")
            per = both = None
            needed, needed_both = (
                cell_respondents(family, second, deviation, half, b) for b in levels
            )
        figures.append(
            CellRow(
                family=family,
                n=n,
                half_width=per,
                simultaneous_half_width=both,
                n_for_half_width=needed,
                n_for_simultaneous_half_width=needed_both,
            )
        )
    return CrosstabPlan(
        rows_mechanism=chosen[0].mechanism,
        columns_mechanism=chosen[1].mechanism,
        cells=cells,
        variance=second,
        deviation=deviation,
        rows=tuple(figures),
    )
